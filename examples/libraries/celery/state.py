"""What Celery believes of each task, through its own API, as JSON on stdout.

`status` is `AsyncResult(key).state` from the result backend (PENDING for a task it has no
record of); `places` every place kombu's Redis transport holds the message: its queue list
(`queue:<name>`), its unacked hash (`unacked`: delivered to a worker and not acked, restored
to the queue after `visibility_timeout`).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from app import app  # noqa: E402

jobs = json.loads(os.environ["ORDLAB_JOBS"])
client = app.connection().channel().client
held = {}
for name in sorted({job["queue"] for job in jobs}):
    for raw in client.lrange(name, 0, -1):
        held.setdefault(json.loads(raw)["headers"]["id"], []).append(f"queue:{name}")
for _tag, raw in client.hgetall("unacked").items():
    message = json.loads(raw)[0]
    held.setdefault(message["headers"]["id"], []).append("unacked")
out = {}
for job in jobs:
    key = job["key"]
    out[key] = {"status": app.AsyncResult(key).state, "places": held.get(key, [])}
print(json.dumps({"jobs": out}))
