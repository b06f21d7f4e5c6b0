"""A job worker as seed 000 writes it, in Python (redis-py, psycopg 3): read a job from the
consumer group, run it, XACK; a job that fails is left pending for the retry (XAUTOCLAIM).

    python3 examples/python/jobs_worker.py wrapper     # the seed's idempotent() context manager
    python3 examples/python/jobs_worker.py multistep   # the seed's complete_order_job
    python3 examples/python/jobs_worker.py multistep --seed-db          # the seed's database lines as written
    python3 examples/python/jobs_worker.py multistep --literal-cursor   # the seed's `rows = db.execute(...)`

The example deviates from the seed in two lines to make the job do what the seed says it does,
and each has a flag that puts the seed's line back, as written, so a lab shows what it does
with today's libraries (psycopg 3.3, redis-py 8.1):

- The seed never shows its `db`, and never commits. psycopg 3's `connect()` opens a transaction
  at the first statement and keeps it until `commit()`: the job's UPDATE is never committed
  (rolled back when the connection closes), and its row lock is held meanwhile. The example
  connects with `autocommit=True`; `--seed-db` connects with psycopg's default.
- `rows = db.execute(...)` is a psycopg 3 Cursor, which is always truthy: the seed's guard
  `if not rows: return` never fires. The example adds `.fetchall()` (the rows RETURNING gave
  back, empty when the order was completed before); `--literal-cursor` keeps the cursor.

ordlab starts it with its environment (examples/README.md, the jobs kind): the servers
(through ordlab's interposer, which records every command and statement), the stream, group
and consumer name, the side-effect partner's URL (each e-mail or partner call is a POST to
it), the orders table. With ORDLAB_CLAIM_MIN_IDLE_MS it is the claimer: it takes jobs idle
that long with XAUTOCLAIM (the retry) instead of reading new ones. It runs until it is killed.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import psycopg
import redis

MODE = sys.argv[1] if len(sys.argv) > 1 else "wrapper"
FLAGS = set(sys.argv[2:])
if MODE not in ("wrapper", "multistep") or not FLAGS <= {"--seed-db", "--literal-cursor"}:
    sys.exit(f"jobs_worker.py: usage: wrapper | multistep [--seed-db] [--literal-cursor], not {sys.argv[1:]}")
SEED_DB = "--seed-db" in FLAGS
LITERAL_CURSOR = "--literal-cursor" in FLAGS

# redis-py 8.1 reads with a 5 s socket timeout unless told otherwise, which would end a wait
# in XREADGROUP … BLOCK 0 longer than that with TimeoutError.
r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
if SEED_DB:
    # psycopg 3's default, as the seed's code has it: a transaction until commit(), which the
    # seed never calls.
    db = psycopg.connect(os.environ["ORDLAB_PG_URL"])
else:
    db = psycopg.connect(os.environ["ORDLAB_PG_URL"], autocommit=True)
STREAM = os.environ["ORDLAB_STREAM"]
GROUP = os.environ["ORDLAB_GROUP"]
CONSUMER = os.environ["ORDLAB_CONSUMER"]
PREFIX = os.environ["ORDLAB_KEY_PREFIX"]  # every key of the run starts with it
ORDERS = os.environ["ORDLAB_ORDERS_TABLE"]
SINK = os.environ["ORDLAB_SINK_URL"]
EFFECT = os.environ.get("ORDLAB_EFFECT", "email")
ME = os.environ["ORDLAB_WORKER"]
CLAIM_MIN_IDLE_MS = os.environ.get("ORDLAB_CLAIM_MIN_IDLE_MS")
CLAIM_POLL_S = float(os.environ.get("ORDLAB_CLAIM_POLL_MS", "50")) / 1000


class PartnerError(Exception):
    """The partner refused the request, or its reply never came: the job failed."""


def call_partner(effect: str, job_id: str) -> None:
    """The side effect: POST <sink>/<effect> (an e-mail, the partner's inventory API)."""
    body = json.dumps({"job": job_id, "from": ME}).encode()
    req = urllib.request.Request(f"{SINK}/{effect}", data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req) as reply:
            reply.read()
    except (urllib.error.URLError, ConnectionError, OSError) as e:  # a 503, a dropped reply
        raise PartnerError(f"{effect} for {job_id}: {e}") from e


# --- the seed's idempotent wrapper (mục 13) ---------------------------------------------


class AlreadyProcessed(Exception):
    pass


@contextmanager
def idempotent(key: str, ttl: int = 86400):
    """Run the block once per key: SET NX EX before it; DELETE the key if it raises."""
    full_key = f"{PREFIX}idem:{key}"
    claimed = r.set(full_key, "1", nx=True, ex=ttl)
    if not claimed:
        raise AlreadyProcessed(f"Already processed: {key}")
    try:
        yield
    except Exception:
        # The job failed: delete the key so the retry can run it again.
        r.delete(full_key)
        raise
    # Success: the key stays, a duplicate is blocked.


def wrapper_job(job_id: str, payload: dict) -> None:
    with idempotent(job_id):
        call_partner(EFFECT, job_id)


# --- the seed's multi-step job (complete_order_job) -------------------------------------


def complete_order_job(job_id: str, payload: dict) -> None:
    order_id = payload["order"]
    # Step 1: the database first, idempotent by its WHERE.
    cursor = db.execute(
        f"UPDATE {ORDERS} SET status='completed' WHERE id = %s AND status != 'completed' RETURNING id",
        [order_id],
    )
    # The seed's line is `rows = db.execute(...)`: with --literal-cursor, rows is the cursor.
    rows = cursor if LITERAL_CURSOR else cursor.fetchall()
    if not rows:
        # Completed before: skip everything.
        return
    # Step 2: the e-mail, behind its own key.
    if r.set(f"{PREFIX}email:order_complete:{order_id}", "1", nx=True, ex=86400):
        call_partner("email", job_id)
    # Step 3: the partner's API, behind its own key.
    if r.set(f"{PREFIX}api:inventory:{order_id}", "1", nx=True, ex=86400):
        call_partner("partner_api", job_id)


JOB = wrapper_job if MODE == "wrapper" else complete_order_job


def handle_message(msg_id: str, fields: dict) -> None:
    job_id = fields["job"]
    payload = json.loads(fields["payload"])
    try:
        JOB(job_id, payload)
        r.xack(STREAM, GROUP, msg_id)  # ack after success
    except AlreadyProcessed:
        r.xack(STREAM, GROUP, msg_id)  # a duplicate: ack, skip
    except PartnerError:
        # Retryable: no ack; the claimer's XAUTOCLAIM hands it back (the seed's schedule_retry).
        pass


def read_new():
    reply = r.xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=1, block=0)
    return [entry for _stream, entries in reply for entry in entries]


def claim_idle():
    _next, claimed, _deleted = r.xautoclaim(STREAM, GROUP, CONSUMER, int(CLAIM_MIN_IDLE_MS), "0-0", count=1)
    if not claimed:
        time.sleep(CLAIM_POLL_S)
    return claimed


while True:
    for msg_id, fields in claim_idle() if CLAIM_MIN_IDLE_MS else read_new():
        handle_message(msg_id, fields)
