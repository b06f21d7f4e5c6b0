#!/bin/sh
# Sidekiq's worker as its users start it: `sidekiq -r <jobs>`, one thread, on the lab's queues,
# with the shutdown timeout the lab gives (ORDLAB_OPTIONS "timeout", 25 s by default).
timeout=$(ruby -rjson -e 'puts((JSON.parse(ENV["ORDLAB_OPTIONS"] || "{}")["timeout"] || 25))')
queues=""
for q in $ORDLAB_QUEUES; do queues="$queues -q $q"; done
exec sidekiq -r ./examples/libraries/sidekiq/jobs.rb -c 1 -t "$timeout" -e production $queues
