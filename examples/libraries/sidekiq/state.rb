# What Sidekiq believes of each job, through its own API, as JSON on stdout: `enqueued` (in its
# queue), `scheduled`, `retry`, `dead`, `busy` (a process reports it in progress) or `missing`
# (Sidekiq OSS keeps no record of a completed job: the ledger says whether it ran); `places`
# where it was found.
require_relative "jobs"
require "sidekiq/api"

jobs = JSON.parse(ENV.fetch("ORDLAB_JOBS"))
# Sidekiq::Workers is what each process wrote at its last heartbeat (every 5 s: 6.4's
# Launcher::BEAT_PAUSE) and keeps for 60 s after the process is gone: a job finished after
# the last beat still reads as busy. The library-sidekiq labs' patience (7 s) outlasts a beat,
# so a live worker has beaten since its last job ended when this runs.
busy = {}
Sidekiq::Workers.new.each { |process, _thread, work| busy[work["payload"]["jid"]] = "busy:#{process}" }
out = {}
jobs.each do |job|
  key = job["key"]
  places = []
  status = "missing"
  if Sidekiq::Queue.new(job["queue"]).find_job(key)
    places << "queue:#{job['queue']}"
    status = "enqueued"
  end
  { "scheduled" => Sidekiq::ScheduledSet.new, "retry" => Sidekiq::RetrySet.new, "dead" => Sidekiq::DeadSet.new }.each do |name, set|
    next unless set.find_job(key)

    places << name
    status = name
  end
  if busy[key]
    places << busy[key]
    status = "busy"
  end
  out[key] = { status: status, places: places }
end
puts({ jobs: out }.to_json)
