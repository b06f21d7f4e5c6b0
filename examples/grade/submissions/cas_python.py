"""Student B: compare-and-set. A write only goes through if the event is newer than the row
(UPDATE ... WHERE version < $v), so an old event that arrives late changes nothing."""

import json
import os
import time

import psycopg
import redis

r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
db = psycopg.connect(os.environ["ORDLAB_PG_URL"], autocommit=True)
stream, group, me = os.environ["ORDLAB_STREAM"], os.environ["ORDLAB_GROUP"], os.environ["ORDLAB_CONSUMER"]
table = os.environ["ORDLAB_ORDERS_TABLE"]
cost_ms = json.loads(os.environ.get("ORDLAB_COST_MS", "{}"))
claim_min_idle = os.environ.get("ORDLAB_CLAIM_MIN_IDLE_MS")
claim_poll_s = float(os.environ.get("ORDLAB_CLAIM_POLL_MS", "50")) / 1000


def handle(entry_id, fields):
    order, version = int(fields["order"]), int(fields["version"])
    time.sleep(cost_ms.get(fields["type"], 0) / 1000)
    db.execute(f"UPDATE {table} SET status = %s, version = %s WHERE id = %s AND version < %s",
               (fields["type"], version, order, version))
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
