"""What RQ believes of each job, through its own API, as JSON on stdout.

`{"jobs": {"job-1": {"status": "queued", "places": ["queue:default"]}}}`: `status` is
`Job.get_status()` (`missing` when RQ has no such job), `places` every queue, intermediate
queue and registry that holds the job id (empty: no worker and no cleanup will ever look at it).
"""

import json
import os

from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job

connection = Redis.from_url(os.environ["ORDLAB_REDIS_URL"])
keys = [job["key"] for job in json.loads(os.environ["ORDLAB_JOBS"])]
queues = sorted({job["queue"] for job in json.loads(os.environ["ORDLAB_JOBS"])})
out = {}
for key in keys:
    try:
        status = Job.fetch(key, connection=connection).get_status(refresh=True)
        status = getattr(status, "value", status)
    except NoSuchJobError:
        status = "missing"
    places = []
    for name in queues:
        q = Queue(name, connection=connection)
        if key in q.get_job_ids():
            places.append(f"queue:{name}")
        intermediate = [i.decode() for i in connection.lrange(f"{q.key}:intermediate", 0, -1)]
        if key in intermediate:
            places.append(f"intermediate:{name}")
        for registry, label in [
            (q.started_job_registry, "started"),
            (q.finished_job_registry, "finished"),
            (q.failed_job_registry, "failed"),
            (q.deferred_job_registry, "deferred"),
            (q.scheduled_job_registry, "scheduled"),
        ]:
            # cleanup=False: look, do not run RQ's own cleanup (that would change what is seen).
            if key in registry.get_job_ids(cleanup=False):
                places.append(f"{label}:{name}")
    out[key] = {"status": str(status), "places": places}
print(json.dumps({"jobs": out}))
