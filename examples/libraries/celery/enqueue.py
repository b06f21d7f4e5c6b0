"""Enqueue the lab's jobs with Celery's own client API: `work.apply_async((key, ms, fail),
task_id=key, queue=queue, countdown=options.countdown)`."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from app import work  # noqa: E402

for job in json.loads(os.environ["ORDLAB_JOBS"]):
    options = job.get("options") or {}
    result = work.apply_async(
        (job["key"], job["ms"], job.get("fail", 0)),
        task_id=job["key"],
        queue=job["queue"],
        countdown=options.get("countdown"),
        retries=0,
    )
    print(f"enqueued {result.id} on {job['queue']}")
