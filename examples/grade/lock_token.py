"""A per-order lock released by its token: SET lock NX PX ttl with a random token (uuid4),
retried until it is ours; the job; the plain UPDATE; then delete the lock only if it still
holds our token (DELEX key IFEQ token on Redis 8.4+, else the Lua compare-and-delete).

If the job outlived the TTL, the key is another holder's by then, and the release deletes
nothing: that holder keeps its lock."""

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
by_delex = os.environ.get("ORDLAB_LOCK_RELEASE") == "DELEX"
claim_min_idle = os.environ.get("ORDLAB_CLAIM_MIN_IDLE_MS")
claim_poll_s = float(os.environ.get("ORDLAB_CLAIM_POLL_MS", "50")) / 1000
COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"


def handle(entry_id, fields):
    key = f"{lock_prefix}{fields['order']}"
    token = str(uuid.uuid4())
    while not r.set(key, token, nx=True, px=ttl_ms):
        time.sleep(retry_s)
    time.sleep(cost_ms.get(fields["type"], 0) / 1000)
    db.execute(f"UPDATE {table} SET status = %s, version = %s WHERE id = %s",
               (fields["type"], int(fields["version"]), int(fields["order"])))
    if by_delex:
        r.execute_command("DELEX", key, "IFEQ", token)
    else:
        r.eval(COMPARE_AND_DELETE, 1, key, token)
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
