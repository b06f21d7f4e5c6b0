"""The Celery app under test: Redis as broker (kombu's Redis transport) and as result backend,
`acks_late` with `task_reject_on_worker_lost`, one task at a time per worker (`-P solo`,
prefetch 1), as the libraries' leads and Celery's docs on at-least-once describe it.

The lab's settings come as `ORDLAB_OPTIONS` (JSON): `visibility_timeout` (s; kombu's default
is 3600), `unacked_restore_interval` (s between kombu's sweeps for messages to restore; 10 by
default, with `unacked_restore_throttle` 10 scanning every 100 s), `brpop_timeout` (s).

The task tells ordlab's side-effect partner when it starts and ends (`ORDLAB_SINK_URL`).
"""

import json
import os
import time
import urllib.request

from celery import Celery

options = json.loads(os.environ.get("ORDLAB_OPTIONS") or "{}")
url = os.environ["ORDLAB_REDIS_URL"]
app = Celery("ordlab", broker=url, backend=url)
transport = {
    "visibility_timeout": options.get("visibility_timeout", 3600),
    "unacked_restore_interval": options.get("unacked_restore_interval", 10),
    "unacked_restore_throttle": options.get("unacked_restore_throttle", 10),
}
if "brpop_timeout" in options:
    transport["brpop_timeout"] = options["brpop_timeout"]
app.conf.update(
    broker_transport_options=transport,
    result_backend_transport_options=transport,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_track_started=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


def tell(what: str, key: str, attempt: int) -> None:
    body = json.dumps({"job": key, "from": os.environ["ORDLAB_WORKER"], "delivery": attempt}).encode()
    request = urllib.request.Request(
        f"{os.environ['ORDLAB_SINK_URL']}/{what}", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()


@app.task(bind=True, name="ordlab.work")
def work(self, key: str, ms: float, fail: int = 0) -> str:
    attempt = self.request.retries + 1
    tell("start", key, attempt)
    time.sleep(ms / 1000.0)
    if attempt <= fail:
        tell("fail", key, attempt)
        raise self.retry(countdown=0, exc=RuntimeError(f"{key}: planned failure"))
    tell("end", key, attempt)
    return key
