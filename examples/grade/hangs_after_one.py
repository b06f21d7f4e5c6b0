"""Reads one entry and then hangs in its job (a call that never returns): ordlab waits one
patience for it, not one per entry, and says which entry it was stuck on."""

import os
import time

import redis

r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
stream, group, me = os.environ["ORDLAB_STREAM"], os.environ["ORDLAB_GROUP"], os.environ["ORDLAB_CONSUMER"]
r.xreadgroup(group, me, {stream: ">"}, count=1, block=0)
while True:
    time.sleep(60)
