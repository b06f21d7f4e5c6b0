"""A stream consumer as seed 001 writes it, in Python (redis-py, psycopg 3): wait in
XREADGROUP ... COUNT 1 BLOCK, do the job's work, write the order's status, XACK.

    python3 examples/python/consumer.py            # plain UPDATE: the last writer wins
    python3 examples/python/consumer.py --cas      # UPDATE ... WHERE version < $v

ordlab starts it with its environment (examples/README.md): the servers (through ordlab's
interposer, which records every command and statement), the stream, group and consumer
name, the orders table and each event type's work in ms. It runs until it is killed.
"""

import json
import os
import sys
import time

import psycopg
import redis

CAS = "--cas" in sys.argv[1:]

r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True)
db = psycopg.connect(os.environ["ORDLAB_PG_URL"], autocommit=True)
stream = os.environ["ORDLAB_STREAM"]
group = os.environ["ORDLAB_GROUP"]
me = os.environ["ORDLAB_CONSUMER"]
table = os.environ["ORDLAB_ORDERS_TABLE"]
cost_ms = json.loads(os.environ.get("ORDLAB_COST_MS", "{}"))

if CAS:
    # A stale event (an older version than the row's) changes nothing: UPDATE 0.
    write = f"UPDATE {table} SET status = %s, version = %s WHERE id = %s AND version < %s"
else:
    write = f"UPDATE {table} SET status = %s, version = %s WHERE id = %s"

while True:
    reply = r.xreadgroup(group, me, {stream: ">"}, count=1, block=0)
    for _stream, entries in reply:
        for entry_id, fields in entries:
            order, event_type, version = int(fields["order"]), fields["type"], int(fields["version"])
            time.sleep(cost_ms.get(event_type, 0) / 1000)  # the job's work: an API call, a DB write
            params = (event_type, version, order, version) if CAS else (event_type, version, order)
            db.execute(write, params)
            r.xack(stream, group, entry_id)
