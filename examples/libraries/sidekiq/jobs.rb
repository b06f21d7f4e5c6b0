# The job Sidekiq's worker runs: it tells ordlab's side-effect partner when it starts and when
# it ends (POST $ORDLAB_SINK_URL/start and /end, {"job", "from", "delivery"}), and works for the
# lab's handler time in between; on its first `fail` attempts it tells /fail and raises. The
# attempt is Sidekiq's own retry_count plus two (none yet: 1), read by a server middleware.
require "json"
require "net/http"
require "sidekiq"

Sidekiq.configure_server do |config|
  config.redis = { url: ENV.fetch("ORDLAB_REDIS_URL") }
  config.server_middleware do |chain|
    chain.add(Class.new do
      def call(_worker, job, _queue)
        Thread.current[:ordlab_attempt] = job.key?("retry_count") ? job["retry_count"] + 2 : 1
        yield
      end
    end)
  end
end
Sidekiq.configure_client do |config|
  config.redis = { url: ENV.fetch("ORDLAB_REDIS_URL") }
end

def ordlab_tell(what, key, attempt)
  uri = URI("#{ENV.fetch('ORDLAB_SINK_URL')}/#{what}")
  body = { job: key, from: ENV.fetch("ORDLAB_WORKER"), delivery: attempt }.to_json
  Net::HTTP.start(uri.host, uri.port, read_timeout: 30) do |http|
    http.post(uri.path, body, "content-type" => "application/json")
  end
end

class Work
  include Sidekiq::Worker

  def perform(key, ms, fail = 0)
    attempt = Thread.current[:ordlab_attempt] || 1
    ordlab_tell("start", key, attempt)
    sleep(ms / 1000.0)
    if attempt <= fail
      ordlab_tell("fail", key, attempt)
      raise "#{key}: planned failure on attempt #{attempt}"
    end
    ordlab_tell("end", key, attempt)
  end
end
