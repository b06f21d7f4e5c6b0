//! The claimer (actor `reaper`): a consumer process in claim mode. Every `poll_ms` it sends
//! `XAUTOCLAIM <stream> <group> reaper <min-idle> 0-0 COUNT 1`, reads the server's delivery
//! count with `XPENDING`, applies what it got with the lab's strategy and acknowledges it.
//! An entry a dead consumer left pending comes back under the same ID, delivered once more.

use super::consumer::{named_connection, Applier, ConsumerConfig};
use crate::error::{Context, Error};
use crate::handler::order::Payload;
use crate::streams::job_of;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::streams::{StreamAutoClaimReply, StreamPendingCountReply};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `reaper = { min_idle_ms = 300, poll_ms = 50 }`: when an entry counts as abandoned, and
/// how often to look.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReaperSpec {
    pub min_idle_ms: f64,
    #[serde(default = "ReaperSpec::default_poll")]
    pub poll_ms: f64,
    /// In a stream lab whose consumers are a worker from a command line: who claims. ordlab's
    /// own claimer (default), or `"worker"`: a process of the worker's command (`ORDLAB_CONSUMER
    /// = reaper`, told `ORDLAB_CLAIM_MIN_IDLE_MS` and `ORDLAB_CLAIM_POLL_MS`), as in the jobs
    /// labs, so the worker's own code handles what it claims.
    #[serde(default, skip_serializing_if = "ClaimerBy::is_ordlab")]
    pub by: ClaimerBy,
}

/// Whose code the claimer runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimerBy {
    #[default]
    Ordlab,
    Worker,
}

impl ClaimerBy {
    fn is_ordlab(&self) -> bool {
        *self == ClaimerBy::Ordlab
    }
}

impl ReaperSpec {
    fn default_poll() -> f64 {
        50.0
    }

    /// The environment a claimer from a command line is told (time scale applied). Its min-idle
    /// is a server timer: under the explorer (time scale 0) it never passes by the clock, and
    /// the explorer makes an entry idle as a step of its own, as for ordlab's own claimer.
    pub fn worker_env(&self, scale: crate::fault::TimeScale) -> std::collections::BTreeMap<String, String> {
        let poll = (scale.duration(self.poll_ms).as_secs_f64() * 1000.0).round().max(1.0);
        std::collections::BTreeMap::from([
            ("ORDLAB_CLAIM_MIN_IDLE_MS".to_string(), scale.timer_ms(self.min_idle_ms.round() as u64).to_string()),
            ("ORDLAB_CLAIM_POLL_MS".to_string(), poll.to_string()),
        ])
    }
}

/// A claimer process: the consumer it stands in for (stream, strategy, costs) and when to claim.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClaimerConfig {
    pub consumer: ConsumerConfig,
    pub reaper: ReaperSpec,
}

/// The claimer loop; returns only on error.
pub async fn run(cfg: ClaimerConfig) -> Result<(), Error> {
    let consumer = Arc::new(cfg.consumer);
    let mut conn = named_connection(&consumer.env.redis_url, &consumer.client_name).await?;
    let mut applier = Applier::connect(Actor::Reaper, consumer.clone(), consumer.env.seed).await?;
    let min_idle = consumer.env.scale.timer_ms(cfg.reaper.min_idle_ms.round() as u64);
    StdoutSink.emit(Actor::Reaper, EventKind::Ready);
    loop {
        let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(&consumer.stream)
            .arg(&consumer.group)
            .arg(Actor::Reaper.to_string())
            .arg(min_idle)
            .arg("0-0")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut conn)
            .await
            .context("XAUTOCLAIM")?;
        if reply.claimed.is_empty() {
            consumer.env.scale.sleep(cfg.reaper.poll_ms).await;
            continue;
        }
        for entry in &reply.claimed {
            let Some(job) = job_of(entry) else { continue };
            // The server's own count, after the claim raised it.
            let pending: StreamPendingCountReply = redis::cmd("XPENDING")
                .arg(&consumer.stream)
                .arg(&consumer.group)
                .arg(&entry.id)
                .arg(&entry.id)
                .arg(1)
                .query_async(&mut conn)
                .await
                .context("XPENDING")?;
            let deliveries = pending.ids.first().map(|p| p.times_delivered as u64);
            StdoutSink
                .emit(Actor::Reaper, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries });
            applier.apply_and_ack(&entry.id, &job, &Payload::of(entry)).await?;
        }
    }
}

impl crate::roles::Role for ClaimerConfig {
    const NAME: &'static str = "claimer";

    fn actor(&self) -> crate::timeline::Actor {
        use crate::timeline::Actor;
        Actor::Reaper
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}
