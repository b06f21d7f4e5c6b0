//! A list-queue worker on a Redis Cluster: the seed's worker loop (`BRPOPLPUSH` into a
//! processing list, the job, `LREM`; on any error sleep 1 s and go on) with `BLMOVE` for the
//! deprecated `BRPOPLPUSH`, through redis-rs's cluster client, which follows MOVED and ASK
//! redirections and retries TRYAGAIN while a hash slot moves between masters.
//!
//! A job's effect is an `RPUSH order:version` onto its queue's applied list, in the queue's
//! hash slot: the list records what was applied, once per job, in the order it happened. A
//! worker exits when it takes a stop marker, reporting how many jobs it did and its CPU time.

use crate::cluster_queue::ClusterEvent;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::orders::HandlerWork;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Job, RawEvent, Sink, StdoutSink};
use redis::cluster_async::ClusterConnection;
use serde::{Deserialize, Serialize};

/// What a worker takes after the last job: it finishes, reports and exits.
pub const STOP: &str = "STOP";

/// The keys of one list queue. They share one hash tag, so one slot, so one master: the only
/// way BLMOVE between the queue and its processing list is allowed on a cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueKeys {
    /// The hash tag (`{shard-1}`): the queue's name in reports.
    pub tag: String,
    pub queue: String,
    pub processing: String,
    /// One `order:version` per applied job, in the order they were applied.
    pub applied: String,
}

/// A job as it sits in a list: the seed's JSON with a working id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedJob {
    pub id: String,
    #[serde(flatten)]
    pub job: Job,
}

impl QueuedJob {
    pub fn payload(&self) -> String {
        serde_json::to_string(self).expect("jobs serialize")
    }

    /// The entry its effect leaves on the applied list.
    pub fn effect(&self) -> String {
        format!("{}:{}", self.job.order, self.job.version)
    }
}

/// `order:version` of an applied-list entry.
pub fn parse_effect(entry: &str) -> Option<(i64, i64)> {
    let (order, version) = entry.split_once(':')?;
    Some((order.parse().ok()?, version.parse().ok()?))
}

/// `retry_wait_ms = { min = 20, max = 100 }`: how long the cluster client waits before it
/// retries a TRYAGAIN, in ms (redis-rs's default: at least 1280, at most 655360).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryWait {
    pub min: u64,
    pub max: u64,
}

/// Everything a cluster worker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClusterWorkerConfig {
    /// 1-based; the process is `C<index>` in the timeline.
    pub index: u32,
    /// Seed nodes for the cluster client.
    pub cluster_urls: Vec<String>,
    /// `CLIENT SETNAME` on every node connection, so the orchestrator can see it block.
    pub client_name: String,
    pub keys: QueueKeys,
    pub work: HandlerWork,
    pub scale: TimeScale,
    /// One timeline event per step of every job, or only the summary at the end.
    pub per_job_events: bool,
    /// The seed's sleep after an error (1000 ms), before `--time-scale`.
    pub error_sleep_ms: f64,
    /// The cluster client's TRYAGAIN wait, if not redis-rs's default.
    #[serde(default)]
    pub retry_wait: Option<RetryWait>,
}

impl ClusterWorkerConfig {
    pub fn actor(&self) -> Actor {
        Actor::Consumer(self.index)
    }
}

/// What the loop has done so far.
#[derive(Default)]
struct Tally {
    jobs: u64,
    last_ns: Option<u64>,
}

/// The worker loop; returns after the stop marker.
pub async fn run(cfg: ClusterWorkerConfig) -> Result<(), Error> {
    let retry = cfg.retry_wait.map(|r| (r.min, r.max));
    let client = crate::service::cluster::cluster_client(&cfg.cluster_urls, retry).context("cluster client")?;
    let mut conn = client.get_async_connection().await.context("cluster connect")?;
    // Routed to every node: whichever master serves the queue shows the name.
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(&cfg.client_name)
        .query_async::<()>(&mut conn)
        .await
        .context("CLIENT SETNAME")?;
    StdoutSink.emit(cfg.actor(), EventKind::Ready);
    let mut tally = Tally::default();
    loop {
        match step(&cfg, &mut conn, &mut tally).await {
            Ok(true) => continue,
            Ok(false) => break,
            Err((command, e)) => {
                let error = e.to_string();
                StdoutSink.emit(
                    cfg.actor(),
                    ClusterEvent::QueueError { command, error, sleep_ms: cfg.error_sleep_ms }.event(),
                );
                cfg.scale.sleep(cfg.error_sleep_ms).await;
            }
        }
    }
    let kind = ClusterEvent::WorkerDone { jobs: tally.jobs, cpu_ms: own_cpu_ms() }.event();
    StdoutSink.record(RawEvent {
        mono_ns: tally.last_ns.unwrap_or_else(crate::clock::now_ns),
        actor: cfg.actor(),
        kind,
    });
    Ok(())
}

/// One job (true) or the stop marker (false). An error names the command that failed; the
/// job it held, if any, stays in the processing list.
async fn step(
    cfg: &ClusterWorkerConfig,
    conn: &mut ClusterConnection,
    tally: &mut Tally,
) -> Result<bool, (String, redis::RedisError)> {
    let k = &cfg.keys;
    let taken: Option<String> = redis::cmd("BLMOVE")
        .arg(&k.queue)
        .arg(&k.processing)
        .arg("RIGHT")
        .arg("LEFT")
        .arg(0)
        .query_async(conn)
        .await
        .map_err(|e| ("BLMOVE".to_string(), e))?;
    let Some(raw) = taken else { return Ok(true) };
    if raw == STOP {
        lrem(conn, &k.processing, &raw).await?;
        return Ok(false);
    }
    let Ok(job) = serde_json::from_str::<QueuedJob>(&raw) else {
        // Not a job of ours: left in the processing list, as the seed's JSON.parse would.
        let error = redis::RedisError::from((redis::ErrorKind::Parse, "not a job", raw));
        return Err(("JSON.parse".to_string(), error));
    };
    let actor = cfg.actor();
    let (id, queue) = (job.id.clone(), k.tag.clone());
    if cfg.per_job_events {
        StdoutSink.emit(
            actor,
            ClusterEvent::JobTaken { job_id: id.clone(), job: job.job.clone(), queue: queue.clone() }.event(),
        );
    }
    let ms = cfg.work.cost_ms(&job.job);
    if ms > 0.0 {
        if cfg.per_job_events {
            StdoutSink.emit(actor, EventKind::WorkStarted { entry_id: id.clone(), ms: ms * cfg.scale.0 });
        }
        cfg.scale.sleep(ms).await;
    }
    redis::cmd("RPUSH")
        .arg(&k.applied)
        .arg(job.effect())
        .query_async::<i64>(conn)
        .await
        .map_err(|e| ("RPUSH".to_string(), e))?;
    let applied_ns = crate::clock::now_ns();
    lrem(conn, &k.processing, &raw).await?;
    if cfg.per_job_events {
        let kind = ClusterEvent::JobApplied { job_id: id, job: job.job, queue }.event();
        StdoutSink.record(RawEvent { mono_ns: applied_ns, actor, kind });
    }
    tally.jobs += 1;
    tally.last_ns = Some(applied_ns);
    Ok(true)
}

async fn lrem(conn: &mut ClusterConnection, key: &str, raw: &str) -> Result<(), (String, redis::RedisError)> {
    let cmd = redis::cmd("LREM").arg(key).arg(1).arg(raw).clone();
    cmd.query_async::<i64>(conn).await.map(drop).map_err(|e| ("LREM".to_string(), e))
}

/// User + system CPU time of this process so far, in ms.
fn own_cpu_ms() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    use nix::sys::time::TimeValLike;
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| (u.user_time().num_microseconds() + u.system_time().num_microseconds()) as f64 / 1000.0)
        .unwrap_or(0.0)
}

impl crate::roles::Role for ClusterWorkerConfig {
    const NAME: &'static str = "cluster-worker";

    fn actor(&self) -> crate::timeline::Actor {
        ClusterWorkerConfig::actor(self)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_travel_as_the_seeds_json_and_leave_order_version_effects() {
        let j = QueuedJob { id: "job-000042".into(), job: Job::new(42, "paid", 2) };
        assert_eq!(j.payload(), r#"{"id":"job-000042","order":42,"type":"paid","version":2}"#);
        assert_eq!(serde_json::from_str::<QueuedJob>(&j.payload()).unwrap(), j);
        assert_eq!(parse_effect(&j.effect()), Some((42, 2)));
        assert_eq!(parse_effect("x"), None);
        assert!(serde_json::from_str::<QueuedJob>(STOP).is_err());
    }
}
