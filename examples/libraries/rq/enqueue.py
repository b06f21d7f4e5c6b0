"""Enqueue the lab's jobs with RQ's own client API.

`ORDLAB_JOBS` is a JSON list of `{"key": "job-1", "queue": "default", "ms": 200, "retry": 1}`;
each becomes `Queue(queue).enqueue("jobs.work", key, ms, job_id=key, retry=Retry(max=retry))`.
Prints one line per job; exits non-zero with the reason if RQ refuses.
"""

import json
import os

from redis import Redis
from rq import Queue, Retry

connection = Redis.from_url(os.environ["ORDLAB_REDIS_URL"])
for job in json.loads(os.environ["ORDLAB_JOBS"]):
    retry = Retry(max=job["retry"]) if job.get("retry") else None
    queued = Queue(job["queue"], connection=connection).enqueue(
        "jobs.work", job["key"], job["ms"], job_id=job["key"], retry=retry
    )
    print(f"enqueued {queued.id} on {job['queue']}")
