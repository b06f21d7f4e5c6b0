//! A job worker: one OS process in the consumer group of a job queue, with its own Redis,
//! PostgreSQL and side-effect-sink connections. As a reader (`C<n>`) it takes new jobs one at
//! a time (`XREADGROUP … COUNT 1 BLOCK 0`); as the claimer (`reaper`) it takes jobs idle for
//! `min_idle_ms` (`XAUTOCLAIM`), the way at-least-once delivery hands a job back. Both handle a
//! job with the lab's idempotency technique and acknowledge it unless the handler failed
//! (then it stays pending for the claimer: the retry).

use crate::connect;
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::handler::job::events::JobEvent;
use crate::handler::job::{Handled, JobRun, Technique};
use crate::roles::claimer::ReaperSpec;
use crate::roles::consumer::named_connection;
use crate::roles::RoleEnv;
use crate::side_effect::{SideEffectSink, SinkConfig};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamPendingCountReply, StreamReadReply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything a job worker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobWorkerConfig {
    pub env: RoleEnv,
    pub actor: Actor,
    pub stream: String,
    pub group: String,
    /// `CLIENT SETNAME` of the reading connection, so the orchestrator can see it block.
    pub client_name: String,
    /// Claimer mode: take jobs idle this long with XAUTOCLAIM instead of reading new ones.
    #[serde(default)]
    pub claim: Option<ReaperSpec>,
    pub technique: Technique,
    /// The partner's effect for one-effect techniques.
    pub effect: String,
    pub sink: SinkConfig,
    /// Its faults at its handler's named points (`after-claim`, …; a job's first delivery).
    pub faults: Vec<crate::fault::Fault>,
    /// The order each multi-step job completes.
    #[serde(default)]
    pub orders: BTreeMap<String, i64>,
}

/// A job as a worker got it.
struct Delivered {
    entry_id: String,
    job: String,
    deliveries: u64,
}

/// What a job worker process connects to besides its reader: a Redis connection for its
/// commands (the reader blocks on its own), its PostgreSQL session, the side-effect sink, and
/// its lock token. The seed's production worker (`pipeline_worker`) starts the same way.
pub struct WorkerIo {
    pub conn: MultiplexedConnection,
    pub pg: tokio_postgres::Client,
    pub sink: SideEffectSink,
    pub token: String,
}

impl WorkerIo {
    /// Connect as `actor`: the reader (named `client_name`, so the orchestrator sees it wait),
    /// then the rest.
    pub async fn connect(
        env: &RoleEnv,
        client_name: &str,
        sink: &SinkConfig,
        actor: Actor,
    ) -> Result<(MultiplexedConnection, WorkerIo), Error> {
        let reader = named_connection(&env.redis_url, client_name).await?;
        let conn = connect::redis(&env.redis_url).await.context("worker connect")?;
        let pg = connect::postgres(&env.pg_config).await.context("worker connect")?;
        let sink = SideEffectSink::connect(sink).await?;
        let token = format!("{actor}-{:016x}", env.seed);
        Ok((reader, WorkerIo { conn, pg, sink, token }))
    }
}

/// What one worker process holds while it runs.
struct Worker {
    cfg: JobWorkerConfig,
    conn: MultiplexedConnection,
    pg: tokio_postgres::Client,
    sink: SideEffectSink,
    token: String,
}

/// The worker loop; returns only on error.
pub async fn run(cfg: JobWorkerConfig) -> Result<(), Error> {
    crate::fault::role::install(&cfg.faults, cfg.env.seed, cfg.env.scale);
    let (mut reader, WorkerIo { conn, pg, sink, token }) =
        WorkerIo::connect(&cfg.env, &cfg.client_name, &cfg.sink, cfg.actor).await?;
    let mut w = Worker { cfg, conn, pg, sink, token };
    StdoutSink.emit(w.cfg.actor, EventKind::Ready);
    loop {
        let batch = match w.cfg.claim.clone() {
            None => read_new(&mut reader, &w.cfg).await?,
            Some(spec) => {
                let batch = claim_idle(&mut reader, &w.cfg, &spec).await?;
                if batch.is_empty() {
                    w.cfg.env.scale.sleep(spec.poll_ms).await;
                }
                batch
            }
        };
        for d in batch {
            w.handle(d).await?;
        }
    }
}

impl Worker {
    async fn handle(&mut self, d: Delivered) -> Result<(), Error> {
        let actor = self.cfg.actor;
        let kind = JobEvent::JobReceived { entry_id: d.entry_id.clone(), job: d.job.clone(), deliveries: d.deliveries }
            .event();
        StdoutSink.emit(actor, kind);
        let order = self.cfg.orders.get(&d.job).copied().unwrap_or(0);
        let mut run = JobRun {
            actor,
            job: &d.job,
            deliveries: d.deliveries,
            order,
            effect: &self.cfg.effect,
            redis: &mut self.conn,
            pg: &self.pg,
            sink: &self.sink,
            key_prefix: &self.cfg.env.key_prefix,
            scale: self.cfg.env.scale,
            token: &self.token,
            quiet: false,
        };
        match self.cfg.technique.handle(&mut run).await? {
            Handled::Done | Handled::Skipped(_) => {
                run.crash_point(HandlerPoint::BeforeAck);
                let _: i64 = redis::cmd("XACK")
                    .arg(&self.cfg.stream)
                    .arg(&self.cfg.group)
                    .arg(&d.entry_id)
                    .query_async(&mut self.conn)
                    .await
                    .context("XACK")?;
                StdoutSink.emit(actor, JobEvent::JobAcked { entry_id: d.entry_id, job: d.job }.event());
            }
            Handled::Failed(reason) => {
                StdoutSink.emit(actor, JobEvent::JobFailed { job: d.job, reason, retryable: true }.event());
            }
        }
        Ok(())
    }
}

/// The job id of an entry (`job` field).
pub fn job_id(entry: &StreamId) -> Option<String> {
    entry.get("job")
}

/// `XREADGROUP GROUP <g> <me> COUNT 1 BLOCK 0 STREAMS <s> >`: the next new job.
async fn read_new(conn: &mut MultiplexedConnection, cfg: &JobWorkerConfig) -> Result<Vec<Delivered>, Error> {
    let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(&cfg.group)
        .arg(cfg.actor.to_string())
        .arg("COUNT")
        .arg(1)
        .arg("BLOCK")
        .arg(0)
        .arg("STREAMS")
        .arg(&cfg.stream)
        .arg(">")
        .query_async(conn)
        .await
        .context("XREADGROUP")?;
    let entries = reply.unwrap_or_default().keys.into_iter().flat_map(|k| k.ids);
    Ok(entries.filter_map(|e| Some(Delivered { job: job_id(&e)?, entry_id: e.id, deliveries: 1 })).collect())
}

/// `XAUTOCLAIM <s> <g> reaper <min-idle> 0-0 COUNT 1`, with the server's delivery count.
async fn claim_idle(
    conn: &mut MultiplexedConnection,
    cfg: &JobWorkerConfig,
    spec: &ReaperSpec,
) -> Result<Vec<Delivered>, Error> {
    // Under the explorer (time scale 0) no entry goes idle by the clock: a timer step makes it so.
    let min_idle = if cfg.env.scale.0 == 0.0 {
        cfg.env.scale.timer_ms(spec.min_idle_ms.round() as u64)
    } else {
        cfg.env.scale.duration(spec.min_idle_ms).as_millis().max(1) as u64
    };
    let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
        .arg(&cfg.stream)
        .arg(&cfg.group)
        .arg(cfg.actor.to_string())
        .arg(min_idle)
        .arg("0-0")
        .arg("COUNT")
        .arg(1)
        .query_async(conn)
        .await
        .context("XAUTOCLAIM")?;
    let mut out = Vec::new();
    for entry in reply.claimed {
        let Some(job) = job_id(&entry) else { continue };
        out.push(Delivered {
            deliveries: delivery_count(conn, &cfg.stream, &cfg.group, &entry.id).await?,
            job,
            entry_id: entry.id,
        });
    }
    Ok(out)
}

/// The server's delivery count of one pending entry (`XPENDING <s> <g> <id> <id> 1`).
pub async fn delivery_count(
    conn: &mut MultiplexedConnection,
    stream: &str,
    group: &str,
    id: &str,
) -> Result<u64, Error> {
    let pending: StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(stream)
        .arg(group)
        .arg(id)
        .arg(id)
        .arg(1)
        .query_async(conn)
        .await
        .context("XPENDING")?;
    Ok(pending.ids.first().map_or(1, |p| p.times_delivered as u64))
}

impl crate::roles::Role for JobWorkerConfig {
    const NAME: &'static str = "job-worker";

    fn actor(&self) -> crate::timeline::Actor {
        self.actor
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}
