"""The job function RQ's worker runs: it tells ordlab's side-effect partner when it starts and
when it ends, and works for the lab's handler time in between.

`POST $ORDLAB_SINK_URL/start` and `/end` with `{"job": <key>, "from": "W1", "delivery": n}`:
the attempt is RQ's own count of the job's retries plus one. On its first `fail` attempts it
tells `/fail` and raises instead (a planned failure RQ's Retry is meant to retry).
"""

import json
import os
import time
import urllib.request

from rq import get_current_job


def tell(what: str, key: str, attempt: int) -> None:
    body = json.dumps({"job": key, "from": os.environ["ORDLAB_WORKER"], "delivery": attempt}).encode()
    request = urllib.request.Request(
        f"{os.environ['ORDLAB_SINK_URL']}/{what}", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()


def work(key: str, ms: float, fail: int = 0) -> str:
    job = get_current_job()
    attempt = (job.number_of_retries or 0) + 1 if job else 1
    tell("start", key, attempt)
    time.sleep(ms / 1000.0)
    if attempt <= fail:
        tell("fail", key, attempt)
        raise RuntimeError(f"{key}: planned failure on attempt {attempt}")
    tell("end", key, attempt)
    return key
