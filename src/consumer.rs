//! A consumer: one OS process in the consumer group, with its own connections, that reads one
//! entry at a time (`XREADGROUP … COUNT 1 BLOCK`), applies it with the lab's strategy, and
//! acknowledges it. It reports every step as a JSON line on stdout.
//!
//! The orchestrator starts it as `ordlab __consumer '<config json>'` and stops it with SIGKILL
//! when the run is over; it holds nothing that needs a clean exit.

use crate::connect;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::scenario::Strategy;
use crate::strategy::{self, Delivery, Handler};
use crate::timeline::{Actor, EventKind, Job, Sink, StdoutSink};
use rand::SeedableRng;
use redis::streams::{StreamId, StreamReadReply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything a consumer process needs, passed as one JSON argument.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsumerConfig {
    /// 1-based; the process is `C<index>` in the timeline.
    pub index: u32,
    pub redis_url: String,
    pub pg_config: String,
    pub stream: String,
    pub group: String,
    /// `CLIENT SETNAME` of the reading connection, so the runner can see it block.
    pub client_name: String,
    pub key_prefix: String,
    pub strategy: Strategy,
    pub cost_ms: BTreeMap<String, f64>,
    pub scale: TimeScale,
    pub seed: u64,
    pub has_delex: bool,
}

impl ConsumerConfig {
    pub fn actor(&self) -> Actor {
        Actor::Consumer(self.index)
    }
}

/// Decode a stream entry written by the producer (`order`, `type`, `version` fields).
pub fn job_of(entry: &StreamId) -> Option<Job> {
    Some(Job {
        order: entry.get::<String>("order")?.parse().ok()?,
        event_type: entry.get("type")?,
        version: entry.get::<String>("version")?.parse().ok()?,
    })
}

/// The consumer loop; returns only on error.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    let sink = StdoutSink;
    let actor = cfg.actor();
    let mut reader = connect::redis(&cfg.redis_url).await.context("consumer connect")?;
    let mut writer = connect::redis(&cfg.redis_url).await.context("consumer connect")?;
    let pg = connect::postgres(&cfg.pg_config).await.context("consumer connect")?;
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(&cfg.client_name)
        .query_async(&mut reader)
        .await
        .context("CLIENT SETNAME")?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    sink.emit(actor, EventKind::Ready);
    loop {
        let reply: StreamReadReply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&cfg.group)
            .arg(actor.to_string())
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(0)
            .arg("STREAMS")
            .arg(&cfg.stream)
            .arg(">")
            .query_async(&mut reader)
            .await
            .context("XREADGROUP")?;
        for entry in reply.keys.iter().flat_map(|k| k.ids.iter()) {
            let Some(job) = job_of(entry) else {
                // Not ours to judge: ack it so the run can finish, and leave a trace.
                sink.emit(
                    actor,
                    EventKind::Crashed { planned: false, detail: format!("undecodable entry {}", entry.id) },
                );
                continue;
            };
            sink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
            let delivery = Delivery {
                entry_id: &entry.id,
                job: &job,
                cost_ms: cfg.cost_ms.get(&job.event_type).copied().unwrap_or(0.0),
            };
            let mut handler = Handler {
                actor,
                redis: &mut writer,
                pg: &pg,
                sink: &sink,
                scale: cfg.scale,
                rng: &mut rng,
                key_prefix: &cfg.key_prefix,
                has_delex: cfg.has_delex,
            };
            strategy::apply(&mut handler, &cfg.strategy, &delivery).await?;
            let _: i64 = redis::cmd("XACK")
                .arg(&cfg.stream)
                .arg(&cfg.group)
                .arg(&entry.id)
                .query_async(&mut writer)
                .await
                .context("XACK")?;
            sink.emit(actor, EventKind::Acked { entry_id: entry.id.clone() });
        }
    }
}
