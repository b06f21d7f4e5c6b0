//! A consumer: one OS process in the consumer group, with its own connections, that reads one
//! entry at a time (`XREADGROUP … COUNT 1 BLOCK`), applies it with the lab's strategy, and
//! acknowledges it. It reports every step as a JSON line on stdout.
//!
//! The orchestrator starts it as `ordlab __consumer '<config json>'` and stops it with SIGKILL
//! when the run is over; it holds nothing that needs a clean exit.

use crate::connect;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::scenario::{Setup, Strategy};
use crate::strategy::reorder_buffer::{Offer, ReorderBuffer};
use crate::strategy::{self, Delivery, Handler};
use crate::timeline::{Actor, EventKind, Job, Sink, StdoutSink};
use rand::SeedableRng;
use redis::streams::{StreamId, StreamReadReply};
use serde::{Deserialize, Serialize};

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
    /// The variant's set-up: strategy, handler costs.
    pub setup: Setup,
    pub scale: TimeScale,
    pub seed: u64,
    pub has_delex: bool,
    /// Run as the claimer (actor `reaper`, [`crate::redelivery`]) instead of reading new entries.
    #[serde(default)]
    pub claimer: bool,
}

impl ConsumerConfig {
    pub fn actor(&self) -> Actor {
        if self.claimer {
            Actor::Reaper
        } else {
            Actor::Consumer(self.index)
        }
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

/// An entry waiting to be applied.
struct Pending {
    entry_id: String,
    job: Job,
    state: Option<String>,
}

/// The consumer loop; returns only on error.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    if cfg.claimer {
        return crate::redelivery::run_claimer(cfg).await;
    }
    if cfg.setup.strategy == Strategy::Fanout {
        return crate::fanout::run(cfg).await;
    }
    let sink = StdoutSink;
    let actor = cfg.actor();
    let mut reader = named_connection(&cfg).await?;
    let mut writer = connect::redis(&cfg.redis_url).await.context("consumer connect")?;
    let pg = connect::postgres(&cfg.pg_config).await.context("consumer connect")?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    // A reorder buffer holds entries across reads; other strategies apply each as it comes.
    let gap_ns = match cfg.setup.strategy {
        Strategy::ReorderBuffer { gap_timeout_ms } => Some(cfg.scale.duration(gap_timeout_ms).as_nanos() as u64),
        _ => None,
    };
    let mut buffer: ReorderBuffer<Pending> = ReorderBuffer::default();
    let mut received = 0u32;
    sink.emit(actor, EventKind::Ready);
    loop {
        // While something is held, poll (the gap timeout must fire on time, and Redis answers
        // a BLOCK timeout only at its next cron tick, up to 100 ms late); otherwise block.
        let holding = !buffer.is_empty();
        let mut read = redis::cmd("XREADGROUP");
        read.arg("GROUP").arg(&cfg.group).arg(actor.to_string()).arg("COUNT").arg(1);
        if !holding {
            read.arg("BLOCK").arg(0);
        }
        let reply: Option<StreamReadReply> =
            read.arg("STREAMS").arg(&cfg.stream).arg(">").query_async(&mut reader).await.context("XREADGROUP")?;
        let reply = reply.unwrap_or_default();
        if holding && reply.keys.is_empty() {
            cfg.scale.sleep(5.0).await;
        }
        let mut ready = Vec::new();
        for entry in reply.keys.iter().flat_map(|k| k.ids.iter()) {
            let Some(job) = job_of(entry) else {
                sink.emit(
                    actor,
                    EventKind::Crashed { planned: false, detail: format!("undecodable entry {}", entry.id) },
                );
                continue;
            };
            sink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
            received += 1;
            crate::redelivery::maybe_crash(&cfg, &sink, received, &job);
            let pending = Pending { entry_id: entry.id.clone(), job: job.clone(), state: entry.get("state") };
            if gap_ns.is_none() {
                ready.push(pending);
                continue;
            }
            if !buffer.knows(job.order) {
                let row = pg
                    .query_opt(&format!("SELECT version FROM {}.orders WHERE id = $1", connect::SCHEMA), &[&job.order])
                    .await
                    .context("read current version")?;
                buffer.expect(job.order, row.map(|r| r.get::<_, i64>(0)).unwrap_or(0) + 1);
            }
            match buffer.offer(job.order, job.version, pending, crate::clock::now_ns()) {
                Offer::Ready(items) => ready.extend(items),
                Offer::Held { waiting_for } => {
                    sink.emit(actor, EventKind::Held { entry_id: entry.id.clone(), job, waiting_for });
                }
                Offer::Stale(p) => {
                    let reason = "older than the version already applied".to_string();
                    sink.emit(actor, EventKind::Dropped { entry_id: p.entry_id.clone(), job: p.job, reason });
                    ack(&mut writer, &cfg, &sink, &p.entry_id).await?;
                }
            }
        }
        if let Some(gap) = gap_ns {
            for expired in buffer.expired(crate::clock::now_ns(), gap) {
                sink.emit(
                    actor,
                    EventKind::GapTimeout {
                        order: expired.order,
                        missing_version: expired.missing_version,
                        held_ms: expired.held_ms,
                    },
                );
                ready.extend(expired.items);
            }
        }
        for p in ready {
            apply_and_ack(&cfg, &mut writer, &pg, &mut rng, &p.entry_id, &p.job, p.state.as_deref()).await?;
        }
    }
}

/// The reading connection, named so the runner can see it block (`CLIENT SETNAME`).
pub async fn named_connection(cfg: &ConsumerConfig) -> Result<redis::aio::MultiplexedConnection, Error> {
    let mut conn = connect::redis(&cfg.redis_url).await.context("consumer connect")?;
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(&cfg.client_name)
        .query_async(&mut conn)
        .await
        .context("CLIENT SETNAME")?;
    Ok(conn)
}

/// Apply one entry with the lab's strategy, then XACK it: the step every consumer mode
/// (in-order reader, claimer, fan-out worker) shares.
pub async fn apply_and_ack(
    cfg: &ConsumerConfig,
    conn: &mut redis::aio::MultiplexedConnection,
    pg: &tokio_postgres::Client,
    rng: &mut rand_chacha::ChaCha8Rng,
    entry_id: &str,
    job: &Job,
    state: Option<&str>,
) -> Result<(), Error> {
    let sink = StdoutSink;
    let delivery = Delivery { entry_id, job, cost_ms: cfg.setup.cost_for(job), state };
    {
        let mut handler = Handler {
            actor: cfg.actor(),
            redis: &mut *conn,
            pg,
            sink: &sink,
            scale: cfg.scale,
            rng,
            key_prefix: &cfg.key_prefix,
            has_delex: cfg.has_delex,
        };
        strategy::apply(&mut handler, &cfg.setup.strategy, &delivery).await?;
    }
    ack(conn, cfg, &sink, entry_id).await
}

async fn ack(
    conn: &mut redis::aio::MultiplexedConnection,
    cfg: &ConsumerConfig,
    sink: &StdoutSink,
    entry_id: &str,
) -> Result<(), Error> {
    let _: i64 =
        redis::cmd("XACK").arg(&cfg.stream).arg(&cfg.group).arg(entry_id).query_async(conn).await.context("XACK")?;
    sink.emit(cfg.actor(), EventKind::Acked { entry_id: entry_id.to_string() });
    Ok(())
}
