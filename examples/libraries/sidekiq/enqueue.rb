# Enqueue the lab's jobs with Sidekiq's own client API: Sidekiq::Client.push with the job's
# key as its jid, on its queue, with `retry` retries (none: retry false).
require_relative "jobs"

JSON.parse(ENV.fetch("ORDLAB_JOBS")).each do |job|
  retry_ = job["retry"].to_i.positive? ? job["retry"] : false
  jid = Sidekiq::Client.push("class" => Work, "queue" => job["queue"], "jid" => job["key"],
                             "args" => [job["key"], job["ms"], job["fail"] || 0], "retry" => retry_)
  raise "Sidekiq refused #{job['key']}" unless jid
  puts "enqueued #{jid} on #{job['queue']}"
end
