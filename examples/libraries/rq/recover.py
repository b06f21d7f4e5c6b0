"""RQ's own recovery of abandoned jobs, run once now as a worker's maintenance runs it
`ORDLAB_RECOVER_AFTER_S` seconds later: `StartedJobRegistry.cleanup(timestamp=now + after)` on
each of the lab's queues (RQ expires a started job 60 s after its last heartbeat, a constant of
its own). A job found abandoned is failed, or retried when it has a Retry left.
"""

import json
import os
import time

from redis import Redis
from rq import Queue

connection = Redis.from_url(os.environ["ORDLAB_REDIS_URL"])
after = float(os.environ["ORDLAB_RECOVER_AFTER_S"])
for name in sorted({job["queue"] for job in json.loads(os.environ["ORDLAB_JOBS"])}):
    registry = Queue(name, connection=connection).started_job_registry
    expired = registry.get_expired_job_ids(time.time() + after)
    registry.cleanup(timestamp=time.time() + after)
    print(f"{name}: cleanup as of now + {after} s found {expired or 'nothing'} abandoned")
