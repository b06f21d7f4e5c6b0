"""Seed 000's priority workers in Python (redis-py): one stream per priority in one group,
polled strictly (critical first, back to it after any entries; low last, with BLOCK 5000)
or weighted (each round at most 10 critical, 5 normal, 1 low, each read BLOCK 100).

    python3 examples/python/priority_worker.py strict      # the seed's worker_loop
    python3 examples/python/priority_worker.py weighted    # the seed's weighted_worker
    python3 examples/python/priority_worker.py strict --client seed       # r = redis.Redis(), as the seed writes it
    python3 examples/python/priority_worker.py strict --client from-url   # r = redis.Redis.from_url(url), no options

The example deviates from the seed in one line to make its loop run: the seed constructs its
client with `redis.Redis()`, whose redis-py 8.1 defaults read with a 5 s socket timeout and
retry a timed-out command 10 times (exponential backoff with jitter); `Redis.from_url(url)`
has the same timeout and no retry. Either cuts the seed's own `XREADGROUP low … BLOCK 5000`
just before the server's empty reply comes. `--client seed` and `--client from-url` run the
seed's line as written (pointed at the run's server: the seed's `Redis()` means localhost:6379),
so a lab shows what it does with today's library.

ordlab starts it with its environment (examples/README.md): its interposed Redis, the three
streams highest first, the group and consumer name, each priority's work in ms and the time
scale (its own BLOCKs are multiplied by it). Each job is its work, then XACK. It runs until
it is killed.
"""

import json
import math
import os
import sys
import time
from urllib.parse import urlparse

import redis

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
CLIENT = sys.argv[3] if sys.argv[2:3] == ["--client"] and len(sys.argv) > 3 else "example"
if MODE not in ("strict", "weighted") or CLIENT not in ("example", "seed", "from-url"):
    sys.exit(f"priority_worker.py: usage: strict|weighted [--client seed|from-url], not {sys.argv[1:]}")

URL = os.environ["ORDLAB_REDIS_URL"]
if CLIENT == "seed":
    # The seed's `r = redis.Redis()`: every default (socket_timeout=5, Retry of 10 with
    # exponential backoff on TimeoutError), only the host, port and database are the run's.
    u = urlparse(URL)
    r = redis.Redis(host=u.hostname, port=u.port, db=int(u.path.lstrip("/") or 0))
elif CLIENT == "from-url":
    # The same defaults through from_url: socket_timeout=5, no retry.
    r = redis.Redis.from_url(URL)
else:
    # redis-py 8.1 reads with a 5 s socket timeout unless told otherwise: the seed's BLOCK 5000
    # on low would end in TimeoutError just before the server's empty reply comes.
    r = redis.Redis.from_url(URL, decode_responses=True, socket_timeout=None)
GROUP = os.environ["ORDLAB_GROUP"]
CONSUMER = os.environ["ORDLAB_CONSUMER"]
CRITICAL, NORMAL, LOW = os.environ["ORDLAB_STREAMS"].split()
PRIORITY = {CRITICAL: "critical", NORMAL: "normal", LOW: "low"}


def text(s):
    """A name as text: the seed's client (no decode_responses) returns bytes."""
    return s.decode() if isinstance(s, bytes) else s

cost_ms = json.loads(os.environ.get("ORDLAB_COST_MS", "{}"))
scale = float(os.environ.get("ORDLAB_TIME_SCALE", "1"))


def block(ms):
    """The seed's BLOCK at the lab's time scale (never 0, which would mean forever)."""
    return max(1, math.ceil(ms * scale))


def process(msgs):
    """Each entry in turn: its work, then XACK."""
    for stream, entries in msgs.items() if isinstance(msgs, dict) else msgs:
        if entries and isinstance(entries[0], list) and entries[0] and isinstance(entries[0][0], (list, tuple)):
            entries = entries[0]  # RESP3: {stream: [[entry, …]]}
        for entry_id, _fields in entries:
            time.sleep(cost_ms.get(PRIORITY[text(stream)], 0) / 1000)
            r.xack(stream, GROUP, entry_id)


def worker_loop():
    """Strict (seed 000, "multiple streams"): never reads low while critical has messages."""
    while True:
        # Critical first, a short block so as not to delay new messages.
        msgs = r.xreadgroup(GROUP, CONSUMER, {CRITICAL: ">"}, count=10, block=block(100))
        if msgs:
            process(msgs)
            continue
        msgs = r.xreadgroup(GROUP, CONSUMER, {NORMAL: ">"}, count=10, block=block(100))
        if msgs:
            process(msgs)
            continue
        # Low last: a longer block, it is less urgent.
        msgs = r.xreadgroup(GROUP, CONSUMER, {LOW: ">"}, count=10, block=block(5000))
        if msgs:
            process(msgs)


def weighted_worker():
    """Weighted polling (seed 000): at most 10 critical, 5 normal, 1 low per round."""
    weights = [(CRITICAL, 10), (NORMAL, 5), (LOW, 1)]
    while True:
        for stream, weight in weights:
            msgs = r.xreadgroup(GROUP, CONSUMER, {stream: ">"}, count=weight, block=block(100))
            if msgs:
                process(msgs)


{"strict": worker_loop, "weighted": weighted_worker}[MODE]()
