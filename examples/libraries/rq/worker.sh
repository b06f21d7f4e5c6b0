#!/bin/sh
# RQ's worker as its users start it: `rq worker <queues>`, on the interposed Redis, named so
# ordlab finds it in CLIENT LIST, importing the job function from this folder.
exec rq worker --url "$ORDLAB_REDIS_URL" --name "$ORDLAB_WORKER_NAME" --path examples/libraries/rq $ORDLAB_QUEUES
