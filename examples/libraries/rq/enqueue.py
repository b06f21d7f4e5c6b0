"""Enqueue the lab's jobs with RQ's own client API.

`ORDLAB_JOBS` is a JSON list of `{"key": "job-1", "queue": "default", "ms": 200, "retry": 1,
"fail": 0, "options": {"depends_on": "job-0"}}`; each becomes `Queue(queue).enqueue("jobs.work",
key, ms, fail, job_id=key, retry=Retry(max=retry), depends_on=…)`. Prints one line per job;
exits non-zero with the reason if RQ refuses.
"""

import json
import os

from redis import Redis
from rq import Queue, Retry

connection = Redis.from_url(os.environ["ORDLAB_REDIS_URL"])
for job in json.loads(os.environ["ORDLAB_JOBS"]):
    retry = Retry(max=job["retry"]) if job.get("retry") else None
    options = job.get("options") or {}
    queued = Queue(job["queue"], connection=connection).enqueue(
        "jobs.work",
        job["key"],
        job["ms"],
        job.get("fail", 0),
        job_id=job["key"],
        retry=retry,
        depends_on=options.get("depends_on"),
    )
    print(f"enqueued {queued.id} on {job['queue']} ({queued.get_status()})")
