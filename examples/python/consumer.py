"""A stream consumer as seed 001 writes it, in Python (redis-py, psycopg 3): wait in
XREADGROUP ... COUNT 1 BLOCK, do the job's work, write the order's status, XACK.

    python3 examples/python/consumer.py            # plain UPDATE: the last writer wins
    python3 examples/python/consumer.py --cas      # UPDATE ... WHERE version < $v
    python3 examples/python/consumer.py --lock     # S4: SET lock NX PX ttl around the plain UPDATE

ordlab starts it with its environment (examples/README.md): the servers (through ordlab's
interposer, which records every command and statement), the stream, group and consumer
name, the orders table and each event type's work in ms; with --lock, the lock's key prefix,
TTL, retry pause and release. With ORDLAB_CLAIM_MIN_IDLE_MS it is the claimer: it takes over
entries a dead consumer left pending that long (XAUTOCLAIM) instead of reading new ones. It
runs until it is killed.
"""

import json
import os
import random
import sys
import time

import psycopg
import redis

CAS = "--cas" in sys.argv[1:]
LOCK = "--lock" in sys.argv[1:]

# redis-py 8.1 reads with a 5 s socket timeout unless told otherwise, which would end a wait
# in XREADGROUP … BLOCK 0 longer than that with TimeoutError.
r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
db = psycopg.connect(os.environ["ORDLAB_PG_URL"], autocommit=True)
stream = os.environ["ORDLAB_STREAM"]
group = os.environ["ORDLAB_GROUP"]
me = os.environ["ORDLAB_CONSUMER"]
table = os.environ["ORDLAB_ORDERS_TABLE"]
cost_ms = json.loads(os.environ.get("ORDLAB_COST_MS", "{}"))
claim_min_idle = os.environ.get("ORDLAB_CLAIM_MIN_IDLE_MS")
claim_poll_s = float(os.environ.get("ORDLAB_CLAIM_POLL_MS", "50")) / 1000

if CAS:
    # A stale event (an older version than the row's) changes nothing: UPDATE 0.
    write = f"UPDATE {table} SET status = %s, version = %s WHERE id = %s AND version < %s"
else:
    write = f"UPDATE {table} SET status = %s, version = %s WHERE id = %s"

# The compare-and-delete every Redis before 8.4 needs: delete only if the value is our token.
COMPARE_AND_DELETE = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"
)

if LOCK:
    lock_prefix = os.environ["ORDLAB_LOCK_PREFIX"]  # the order id goes after it
    ttl_ms = int(os.environ["ORDLAB_LOCK_TTL_MS"])
    retry_s = float(os.environ["ORDLAB_LOCK_RETRY_MS"]) / 1000
    prework_max_ms = float(os.environ.get("ORDLAB_LOCK_PREWORK_MAX_MS", "0"))
    release_by_delex = os.environ.get("ORDLAB_LOCK_RELEASE") == "DELEX"
    rng = random.Random(os.environ.get("ORDLAB_SEED", "0"))


def lock(order, entry_id):
    """S4 (seed 001, 08c): take the order's lock, retrying until it is ours; our token."""
    if prework_max_ms > 0:
        time.sleep(rng.uniform(0, prework_max_ms) / 1000)  # reading the DB, validating …
    key, token = f"{lock_prefix}{order}", f"{me}:{entry_id}"  # a value only this holder has
    while not r.set(key, token, nx=True, px=ttl_ms):  # someone holds it: wait, try again
        time.sleep(retry_s)
    return key, token


def unlock(key, token):
    """Delete the lock only if it is still ours (its TTL may have run out meanwhile)."""
    if release_by_delex:
        r.execute_command("DELEX", key, "IFEQ", token)  # Redis 8.4+
    else:
        r.eval(COMPARE_AND_DELETE, 1, key, token)


def handle(entry_id, fields):
    order, event_type, version = int(fields["order"]), fields["type"], int(fields["version"])
    held = lock(order, entry_id) if LOCK else None
    time.sleep(cost_ms.get(event_type, 0) / 1000)  # the job's work: an API call, a DB write
    params = (event_type, version, order, version) if CAS else (event_type, version, order)
    db.execute(write, params)
    if held:
        unlock(*held)
    r.xack(stream, group, entry_id)


while True:
    if claim_min_idle:  # the claimer: what a dead consumer left pending, idle that long
        _, claimed, _ = r.xautoclaim(stream, group, me, int(claim_min_idle), "0-0", count=1)
        for entry_id, fields in claimed:
            handle(entry_id, fields)
        if not claimed:
            time.sleep(claim_poll_s)
        continue
    reply = r.xreadgroup(group, me, {stream: ">"}, count=1, block=0)
    for _stream, entries in reply:
        for entry_id, fields in entries:
            handle(entry_id, fields)
