"""A job worker as seed 000 writes it, in Python (redis-py, psycopg 3): read a job from the
consumer group, run it, XACK; a job that fails is left pending for the retry (XAUTOCLAIM).

    python3 examples/python/jobs_worker.py wrapper     # the seed's idempotent() context manager
    python3 examples/python/jobs_worker.py multistep   # the seed's complete_order_job

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
if MODE not in ("wrapper", "multistep"):
    sys.exit(f"jobs_worker.py: unknown mode {MODE!r}: use wrapper or multistep")

# redis-py 8.1 reads with a 5 s socket timeout unless told otherwise, which would end a wait
# in XREADGROUP … BLOCK 0 longer than that with TimeoutError.
r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"], decode_responses=True, socket_timeout=None)
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
    rows = db.execute(
        f"UPDATE {ORDERS} SET status='completed' WHERE id = %s AND status != 'completed' RETURNING id",
        [order_id],
    ).fetchall()
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
