"""Student D: a per-order lock around the write. SET lock NX PX ttl with a random token,
retried until it is ours; the job; the plain UPDATE; then DEL the lock.

The DEL does not look at whose lock it is: if the job outlived the TTL, another consumer holds
the key by then, and this DEL deletes that one's lock."""

import json
import os
import time
import uuid

import psycopg
import redis

r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
db = psycopg.connect(os.environ["ORDLAB_PG_URL"], autocommit=True)
stream, group, me = os.environ["ORDLAB_STREAM"], os.environ["ORDLAB_GROUP"], os.environ["ORDLAB_CONSUMER"]
table = os.environ["ORDLAB_ORDERS_TABLE"]
cost_ms = json.loads(os.environ.get("ORDLAB_COST_MS", "{}"))
lock_prefix = os.environ.get("ORDLAB_LOCK_PREFIX", os.environ["ORDLAB_KEY_PREFIX"] + "lock:order:")
ttl_ms = int(os.environ.get("ORDLAB_LOCK_TTL_MS", "5000"))
retry_s = float(os.environ.get("ORDLAB_LOCK_RETRY_MS", "20")) / 1000
claim_min_idle = os.environ.get("ORDLAB_CLAIM_MIN_IDLE_MS")
claim_poll_s = float(os.environ.get("ORDLAB_CLAIM_POLL_MS", "50")) / 1000


def handle(entry_id, fields):
    key = f"{lock_prefix}{fields['order']}"
    token = str(uuid.uuid4())
    while not r.set(key, token, nx=True, px=ttl_ms):
        time.sleep(retry_s)
    time.sleep(cost_ms.get(fields["type"], 0) / 1000)
    db.execute(f"UPDATE {table} SET status = %s, version = %s WHERE id = %s",
               (fields["type"], int(fields["version"]), int(fields["order"])))
    r.delete(key)
    r.xack(stream, group, entry_id)


while True:
    if claim_min_idle:
        _, claimed, _ = r.xautoclaim(stream, group, me, int(claim_min_idle), "0-0", count=1)
        for entry_id, fields in claimed:
            handle(entry_id, fields)
        if not claimed:
            time.sleep(claim_poll_s)
        continue
    for _, entries in r.xreadgroup(group, me, {stream: ">"}, count=1, block=0):
        for entry_id, fields in entries:
            handle(entry_id, fields)
