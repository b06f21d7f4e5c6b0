//! A consumer: one OS process in the consumer group, with its own connections, that reads one
//! entry at a time (`XREADGROUP … COUNT 1 BLOCK`), applies it with the lab's strategy, and
//! acknowledges it. It reports every step as a JSON line on stdout.
//!
//! The orchestrator starts it as `ordlab __role` and stops it with SIGKILL when the run is
//! over; it holds nothing that needs a clean exit. With a reorder-buffer strategy it holds
//! entries across reads until their order's next version arrives.

use super::RoleEnv;
use crate::connect;
use crate::error::{Context, Error};
use crate::fault::Fault;
use crate::handler::order::events::HandlerEvent;
use crate::handler::order::reorder_buffer::{Offer, ReorderBuffer};
use crate::handler::order::{Delivery, Handler, Payload, Strategy};
use crate::orders::HandlerWork;
use crate::streams::job_of;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Job, Sink, StdoutSink};
use rand::SeedableRng;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamReadReply};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Everything a consumer process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsumerConfig {
    pub env: RoleEnv,
    /// 1-based; the process is `C<index>` in the timeline.
    pub index: u32,
    pub stream: String,
    pub group: String,
    /// `CLIENT SETNAME` of the reading connection, so the orchestrator can see it block.
    pub client_name: String,
    pub strategy: Strategy,
    pub work: HandlerWork,
    /// Its faults, at the events it reports (`received`: SIGKILL right after a receive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// Nodes to look for a new primary among when a Redis command fails (the `failover`
    /// lab); empty: a failing command ends the process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow_primary: Vec<String>,
    /// What a fan-out worker does with an entry (a measurement of the reader may replace the
    /// strategy by a wait or by nothing; then no per-entry timeline either).
    #[serde(default, skip_serializing_if = "HandlerMode::is_strategy")]
    pub handler: HandlerMode,
}

/// What a handler does with an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HandlerMode {
    /// The lab's strategy: its work, its write, then XACK.
    #[default]
    Strategy,
    /// Only the injected work (a wait standing in for an external call), then XACK.
    Wait,
    /// Nothing but XACK: what the reader alone can dispatch.
    AckOnly,
}

impl HandlerMode {
    pub fn is_strategy(&self) -> bool {
        *self == HandlerMode::Strategy
    }
}

impl ConsumerConfig {
    pub fn actor(&self) -> Actor {
        Actor::Consumer(self.index)
    }
}

/// An entry waiting to be applied.
struct Pending {
    entry_id: String,
    job: Job,
    payload: Payload,
}

/// What one consumer process holds while it runs.
struct Consumer {
    cfg: Arc<ConsumerConfig>,
    applier: Applier,
    buffer: ReorderBuffer<Pending>,
    received: u32,
    /// Re-reading its own pending entries (`XREADGROUP … 0`) after finding a new primary.
    history: bool,
}

/// The consumer loop; returns only on error.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    crate::fault::role::install(&cfg.faults, cfg.env.seed, cfg.env.scale);
    let mut reader = named_connection(&cfg.env.redis_url, &cfg.client_name).await?;
    let cfg = Arc::new(cfg);
    let applier = Applier::connect(cfg.actor(), cfg.clone(), cfg.env.seed).await?;
    let mut c = Consumer { cfg, applier, buffer: ReorderBuffer::default(), received: 0, history: false };
    // A reorder buffer holds entries across reads; other strategies apply each as it comes.
    let gap_ns = c.cfg.strategy.gap_timeout_ms().map(|ms| c.cfg.env.scale.duration(ms).as_nanos() as u64);
    // Under the explorer the gap timeout is a server timer it fires as a step: the held
    // entry's wait is a read that blocks for the timer's length (never run out by the clock).
    let explored_gap = c.cfg.strategy.gap_timeout_ms().map(|ms| c.cfg.env.scale.timer_ms(ms.ceil() as u64));
    let explored_gap = explored_gap.filter(|ms| *ms >= crate::fault::NEVER_BY_THE_CLOCK_MS);
    StdoutSink.emit(c.cfg.actor(), EventKind::Ready);
    loop {
        // While something is held, poll (the gap timeout must fire on time, and Redis answers
        // a BLOCK timeout only at its next cron tick, up to 100 ms late); otherwise block.
        let holding = !c.buffer.is_empty();
        let block = match (holding, explored_gap) {
            (false, _) => Some(0),
            (true, Some(ms)) => Some(ms),
            (true, None) => None,
        };
        let entries = match read(&mut reader, &c.cfg, block, c.history).await {
            Ok(entries) => entries,
            Err(e) => {
                reader = c.follow_primary(e).await?;
                continue;
            }
        };
        if c.history && entries.is_empty() {
            c.history = false;
            continue;
        }
        if holding && entries.is_empty() && explored_gap.is_none() {
            c.cfg.env.scale.sleep(5.0).await;
        }
        let mut ready = Vec::new();
        for entry in &entries {
            ready.extend(c.take(entry, gap_ns.is_some()).await?);
        }
        match (gap_ns, explored_gap) {
            // The explorer ended the held entries' wait: their gap ran out.
            (Some(_), Some(_)) if holding && entries.is_empty() => ready.extend(c.expired(0)),
            (Some(gap), None) => ready.extend(c.expired(gap)),
            _ => {}
        }
        for p in ready {
            if let Err(e) = c.apply_and_ack(&p).await {
                // The entry stays pending where the primary is now: it comes back.
                reader = c.follow_primary(e).await?;
                break;
            }
        }
    }
}

/// One `XREADGROUP … COUNT 1 [BLOCK ms]` of new entries (no BLOCK: a poll), or of its own
/// pending entries (`history`: ID 0, the restart pattern of the Redis docs).
async fn read(
    reader: &mut MultiplexedConnection,
    cfg: &ConsumerConfig,
    block: Option<u64>,
    history: bool,
) -> Result<Vec<StreamId>, Error> {
    let mut read = redis::cmd("XREADGROUP");
    read.arg("GROUP").arg(&cfg.group).arg(cfg.actor().to_string()).arg("COUNT").arg(1);
    if let Some(ms) = block.filter(|_| !history) {
        read.arg("BLOCK").arg(ms);
    }
    let from = if history { "0" } else { ">" };
    let reply: Option<StreamReadReply> =
        read.arg("STREAMS").arg(&cfg.stream).arg(from).query_async(reader).await.context("XREADGROUP")?;
    Ok(reply.unwrap_or_default().keys.into_iter().flat_map(|k| k.ids).collect())
}

impl Consumer {
    /// A Redis command failed. Where the lab lets it follow the primary, find the node that is
    /// primary now, go on there (a new reading connection, a new one for the strategy) and
    /// re-read its own pending entries first; else, or for any other error, give up.
    async fn follow_primary(&mut self, error: Error) -> Result<MultiplexedConnection, Error> {
        if self.cfg.follow_primary.is_empty() || !matches!(error, Error::Redis { .. }) {
            return Err(error);
        }
        let nodes = &self.cfg.follow_primary;
        let (url, conn) = super::primary::find(nodes).await?;
        self.applier.conn = conn;
        let reader = named_connection(&url, &self.cfg.client_name).await?;
        let server = super::primary::node_name(nodes, &url).to_string();
        StdoutSink.emit(self.cfg.actor(), EventKind::Reconnected { server });
        self.history = true;
        Ok(reader)
    }

    /// A received entry: announced, maybe the planned crash, then ready or held.
    async fn take(&mut self, entry: &StreamId, buffered: bool) -> Result<Vec<Pending>, Error> {
        let actor = self.cfg.actor();
        let Some(job) = job_of(entry) else {
            let detail = format!("undecodable entry {}", entry.id);
            StdoutSink.emit(actor, EventKind::crashed(false, detail));
            return Ok(Vec::new());
        };
        StdoutSink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
        self.received += 1;
        let pending = Pending { entry_id: entry.id.clone(), job: job.clone(), payload: Payload::of(entry) };
        if !buffered {
            return Ok(vec![pending]);
        }
        if !self.buffer.knows(job.order) {
            let row = self
                .applier
                .pg
                .query_opt(&format!("SELECT version FROM {}.orders WHERE id = $1", connect::SCHEMA), &[&job.order])
                .await
                .context("read current version")?;
            self.buffer.expect(job.order, row.map(|r| r.get::<_, i64>(0)).unwrap_or(0) + 1);
        }
        match self.buffer.offer(job.order, job.version, pending, crate::clock::now_ns()) {
            Offer::Ready(items) => Ok(items),
            Offer::Held { waiting_for } => {
                StdoutSink.emit(actor, HandlerEvent::Held { entry_id: entry.id.clone(), job, waiting_for }.event());
                Ok(Vec::new())
            }
            Offer::Stale(p) => {
                let reason = "older than the version already applied".to_string();
                StdoutSink
                    .emit(actor, HandlerEvent::Dropped { entry_id: p.entry_id.clone(), job: p.job, reason }.event());
                self.applier.ack(&p.entry_id).await?;
                Ok(Vec::new())
            }
        }
    }

    /// Orders whose missing version did not come in time: apply what is held.
    fn expired(&mut self, gap_ns: u64) -> Vec<Pending> {
        let mut out = Vec::new();
        for expired in self.buffer.expired(crate::clock::now_ns(), gap_ns) {
            let (order, missing_version, held_ms) = (expired.order, expired.missing_version, expired.held_ms);
            StdoutSink.emit(self.cfg.actor(), HandlerEvent::GapTimeout { order, missing_version, held_ms }.event());
            out.extend(expired.items);
        }
        out
    }

    async fn apply_and_ack(&mut self, p: &Pending) -> Result<(), Error> {
        self.applier.apply_and_ack(&p.entry_id, &p.job, &p.payload).await
    }
}

/// A connection named `client_name`, so the orchestrator can see it in CLIENT LIST.
pub async fn named_connection(redis_url: &str, client_name: &str) -> Result<MultiplexedConnection, Error> {
    let mut conn = connect::redis(redis_url).await.context("consumer connect")?;
    super::client_list::name_connection(&mut conn, client_name).await?;
    Ok(conn)
}

/// A strategy with its connections: applies entries and acknowledges them. Every consumer
/// mode (in-order reader, claimer, fan-out worker) applies through one, as `actor`.
pub struct Applier {
    pub actor: Actor,
    pub cfg: Arc<ConsumerConfig>,
    pub conn: MultiplexedConnection,
    pub pg: Arc<tokio_postgres::Client>,
    pub rng: rand_chacha::ChaCha8Rng,
}

impl Applier {
    /// Connect for `cfg`, as `actor`, with the random stream of `seed`.
    pub async fn connect(actor: Actor, cfg: Arc<ConsumerConfig>, seed: u64) -> Result<Applier, Error> {
        Ok(Applier {
            actor,
            conn: connect::redis(&cfg.env.redis_url).await.context("consumer connect")?,
            pg: Arc::new(connect::postgres(&cfg.env.pg_config).await.context("consumer connect")?),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            cfg,
        })
    }

    /// Apply one entry with the lab's strategy, then XACK it.
    pub async fn apply_and_ack(&mut self, entry_id: &str, job: &Job, payload: &Payload) -> Result<(), Error> {
        let delivery = Delivery { entry_id, job, cost_ms: self.cfg.work.cost_ms(job), payload };
        let env = &self.cfg.env;
        let mut handler = Handler {
            actor: self.actor,
            redis: &mut self.conn,
            pg: &self.pg,
            sink: &StdoutSink,
            scale: env.scale,
            rng: &mut self.rng,
            key_prefix: &env.key_prefix,
            has_delex: env.has_delex,
        };
        self.cfg.strategy.apply(&mut handler, &delivery).await?;
        self.ack(entry_id).await
    }

    /// XACK alone (an entry dropped without applying it).
    pub async fn ack(&mut self, entry_id: &str) -> Result<(), Error> {
        let (stream, group) = (&self.cfg.stream, &self.cfg.group);
        redis::cmd("XACK")
            .arg(stream)
            .arg(group)
            .arg(entry_id)
            .query_async::<i64>(&mut self.conn)
            .await
            .context("XACK")?;
        StdoutSink.emit(self.actor, EventKind::Acked { entry_id: entry_id.to_string() });
        Ok(())
    }
}
