//! A throughput worker (actor `W<n>`) for `list-scale`: jobs one at a time, as seed 003's loop
//! takes them, from a list or from a stream group. It records no timeline event per job: a
//! line per job would cost the worker more than the job, and the lab reads its throughput from
//! the server.
//!
//! On a list it is the seed's reliable loop with `BLMOVE` for the deprecated `BRPOPLPUSH`:
//! move the job into the processing list, parse it, run the handler, `LREM` it by value. On a
//! stream it is the consumer-group loop: `XREADGROUP … COUNT n >`, parse, handle, one `XACK`
//! for what it read. Both parse the same JSON job; the handler is an injected sleep (or
//! nothing). Two commands per job (per read, on a stream read `n` at a time), each a round trip.

use crate::error::{Context, Error};
use crate::roles::cluster_worker::QueuedJob;
use crate::roles::RoleEnv;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};

/// Where the jobs wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// A Redis list, taken with BLMOVE into a processing list, finished with LREM.
    List,
    /// A Redis stream read by a consumer group, finished with XACK.
    Stream,
}

/// Everything a throughput worker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleWorkerConfig {
    pub env: RoleEnv,
    /// 1-based: the consumer name in the group and `W<index>` on the timeline.
    pub index: u32,
    /// `CLIENT SETNAME` of its connection, so the orchestrator can see it connected.
    pub client_name: String,
    pub queue: QueueKind,
    /// The list or the stream.
    pub key: String,
    /// The list's processing list (unused on a stream).
    pub processing: String,
    /// The stream's consumer group (unused on a list).
    pub group: String,
    /// Entries per XREADGROUP (a list takes one job per BLMOVE).
    pub read_count: u32,
    /// Handler work per job, ms before `--time-scale` (0: none).
    pub cost_ms: f64,
}

/// The field of a stream entry that holds the job's JSON.
pub const JOB_FIELD: &str = "job";

/// The worker process: connect, name the connection, take jobs until killed.
pub async fn run(cfg: ScaleWorkerConfig) -> Result<(), Error> {
    let mut conn = crate::connect::redis(&cfg.env.redis_url).await.context("worker connect")?;
    crate::roles::client_list::name_connection(&mut conn, &cfg.client_name).await?;
    loop {
        match cfg.queue {
            QueueKind::List => list_job(&cfg, &mut conn).await?,
            QueueKind::Stream => stream_jobs(&cfg, &mut conn).await?,
        }
    }
}

/// The handler: parse the job (the seed's `JSON.parse`), then its work.
async fn handle(cfg: &ScaleWorkerConfig, raw: &str) -> Result<(), Error> {
    // The lab fills the queue with jobs only: one that does not parse is the harness's fault.
    let parsed = serde_json::from_str::<QueuedJob>(raw);
    parsed.map_err(|e| Error::NotReady { what: "a job that parses".into(), detail: e.to_string() })?;
    if cfg.cost_ms > 0.0 {
        cfg.env.scale.sleep(cfg.cost_ms).await;
    }
    Ok(())
}

/// BLMOVE one job into the processing list, handle it, LREM it.
async fn list_job(cfg: &ScaleWorkerConfig, conn: &mut MultiplexedConnection) -> Result<(), Error> {
    let taken: Option<String> = redis::cmd("BLMOVE")
        .arg(&cfg.key)
        .arg(&cfg.processing)
        .arg("RIGHT")
        .arg("LEFT")
        .arg(0)
        .query_async(conn)
        .await
        .context("BLMOVE")?;
    let Some(raw) = taken else { return Ok(()) };
    handle(cfg, &raw).await?;
    redis::cmd("LREM").arg(&cfg.processing).arg(1).arg(&raw).query_async::<i64>(conn).await.context("LREM")?;
    Ok(())
}

/// XREADGROUP up to `read_count` new entries, handle each, XACK them in one command.
async fn stream_jobs(cfg: &ScaleWorkerConfig, conn: &mut MultiplexedConnection) -> Result<(), Error> {
    let consumer = format!("W{}", cfg.index);
    let reply: Option<redis::streams::StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(&cfg.group)
        .arg(&consumer)
        .arg("COUNT")
        .arg(cfg.read_count)
        .arg("BLOCK")
        .arg(0)
        .arg("STREAMS")
        .arg(&cfg.key)
        .arg(">")
        .query_async(conn)
        .await
        .context("XREADGROUP")?;
    let entries: Vec<redis::streams::StreamId> = reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids).collect();
    if entries.is_empty() {
        return Ok(());
    }
    let mut ack = redis::cmd("XACK");
    ack.arg(&cfg.key).arg(&cfg.group);
    for entry in &entries {
        let raw: String = entry.get(JOB_FIELD).unwrap_or_default();
        handle(cfg, &raw).await?;
        ack.arg(&entry.id);
    }
    ack.query_async::<i64>(conn).await.context("XACK").map(drop)
}

impl crate::roles::Role for ScaleWorkerConfig {
    const NAME: &'static str = "scale-worker";

    fn actor(&self) -> crate::timeline::Actor {
        use crate::timeline::Actor;
        Actor::Worker(self.index)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}
