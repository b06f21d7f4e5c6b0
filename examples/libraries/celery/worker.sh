#!/bin/sh
# Celery's worker as its users start it: `celery -A app worker`, one task at a time (solo
# pool), on the lab's queues, named so ordlab finds it in CLIENT LIST (kombu names its
# connections nothing: the interposer names them).
cd "$(dirname "$0")" || exit 2
queues=$(echo "$ORDLAB_QUEUES" | tr ' ' ',')
exec celery -A app worker -P solo -c 1 -Q "$queues" -n "$ORDLAB_WORKER@ordlab" \
  --without-gossip --without-mingle --loglevel INFO
