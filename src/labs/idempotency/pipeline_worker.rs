//! A production worker (seed 000's `production_worker`): one OS process that polls one stream
//! per priority with a polling loop ([`crate::roles::priority_loop`]), handles each job with the
//! seed's `handle_message` or its corrected form, acknowledges it, leaves it pending for a
//! retry, or moves it to the dead-letter queue. As the claimer (`reaper`) it takes jobs idle
//! for `min_idle_ms` from every stream (`XAUTOCLAIM`) and handles them the same way.
//!
//! Thousands of jobs pass through: the timeline gets what matters for the verdict and the
//! latencies (acks, dead letters, failures, redeliveries, crashes), not every command.

use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::handler::job::events::JobEvent;
use crate::handler::job::pipeline::{Disposition, PipelineHandler};
use crate::handler::job::JobRun;
use crate::labs::idempotency::job_worker::{delivery_count, job_id, WorkerIo};
use crate::roles::claimer::ReaperSpec;
use crate::roles::priority_loop::{self, LoopSpec, Planner};
use crate::roles::RoleEnv;
use crate::side_effect::{SideEffectSink, SinkConfig};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamAutoClaimReply, StreamId};
use serde::{Deserialize, Serialize};

/// Everything a pipeline worker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PipelineWorkerConfig {
    pub env: RoleEnv,
    pub actor: Actor,
    /// One stream per priority, highest first.
    pub streams: Vec<String>,
    pub group: String,
    pub dlq: String,
    pub client_name: String,
    pub polling: LoopSpec,
    pub handler: PipelineHandler,
    /// The dispatch's own work before the effect (ms, before `--time-scale`).
    pub work_ms: f64,
    pub sink: SinkConfig,
    /// Its faults at its handler's named points.
    pub faults: Vec<crate::fault::Fault>,
    /// Claimer mode: XAUTOCLAIM jobs idle this long instead of polling new ones.
    #[serde(default)]
    pub claim: Option<ReaperSpec>,
}

struct Worker {
    cfg: PipelineWorkerConfig,
    conn: MultiplexedConnection,
    pg: tokio_postgres::Client,
    sink: SideEffectSink,
    token: String,
}

/// The worker loop; returns only on error.
pub async fn run(cfg: PipelineWorkerConfig) -> Result<(), Error> {
    crate::fault::role::install(&cfg.faults, cfg.env.seed, cfg.env.scale);
    let (mut reader, WorkerIo { conn, pg, sink, token }) =
        WorkerIo::connect(&cfg.env, &cfg.client_name, &cfg.sink, cfg.actor).await?;
    let mut w = Worker { cfg, conn, pg, sink, token };
    StdoutSink.emit(w.cfg.actor, EventKind::Ready);
    match w.cfg.claim.clone() {
        None => poll(&mut w, &mut reader).await,
        Some(spec) => claim(&mut w, &mut reader, &spec).await,
    }
}

/// New jobs, read the way the polling loop says.
async fn poll(w: &mut Worker, reader: &mut MultiplexedConnection) -> Result<(), Error> {
    let mut planner = Planner::new(w.cfg.polling.clone(), w.cfg.streams.len());
    let consumer = w.cfg.actor.to_string();
    loop {
        let read = planner.next();
        let got = priority_loop::read(reader, &w.cfg.group, &consumer, &w.cfg.streams, &read, read.block.arg(w.cfg.env.scale)).await?;
        planner.got(&priority_loop::per_stream(&got, w.cfg.streams.len()));
        for (i, entry) in got {
            w.handle(i, &entry, 1).await?;
        }
    }
}

/// Jobs idle for `min_idle_ms` on any stream, with the server's delivery count.
async fn claim(w: &mut Worker, reader: &mut MultiplexedConnection, spec: &ReaperSpec) -> Result<(), Error> {
    let min_idle = w.cfg.env.scale.duration(spec.min_idle_ms).as_millis().max(1) as u64;
    loop {
        let mut any = false;
        for i in 0..w.cfg.streams.len() {
            let stream = w.cfg.streams[i].clone();
            let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
                .arg(&stream)
                .arg(&w.cfg.group)
                .arg(w.cfg.actor.to_string())
                .arg(min_idle)
                .arg("0-0")
                .arg("COUNT")
                .arg(10)
                .query_async(reader)
                .await
                .context("XAUTOCLAIM")?;
            for entry in reply.claimed {
                any = true;
                let deliveries = delivery_count(reader, &stream, &w.cfg.group, &entry.id).await?;
                w.handle(i, &entry, deliveries).await?;
            }
        }
        if !any {
            w.cfg.env.scale.sleep(spec.poll_ms).await;
        }
    }
}

impl Worker {
    async fn handle(&mut self, stream: usize, entry: &StreamId, deliveries: u64) -> Result<(), Error> {
        let actor = self.cfg.actor;
        let Some(job) = job_id(entry) else { return Ok(()) };
        if deliveries > 1 {
            StdoutSink.emit(
                actor,
                JobEvent::JobReceived { entry_id: entry.id.clone(), job: job.clone(), deliveries }.event(),
            );
        }
        let payload: String = entry.get("payload").unwrap_or_default();
        let mut run = JobRun {
            actor,
            job: &job,
            deliveries,
            order: 0,
            effect: "",
            redis: &mut self.conn,
            pg: &self.pg,
            sink: &self.sink,
            key_prefix: &self.cfg.env.key_prefix,
            scale: self.cfg.env.scale,
            token: &self.token,
            quiet: true,
        };
        let work = self.cfg.env.scale.duration(self.cfg.work_ms);
        let disposition = self.cfg.handler.handle(&mut run, &payload, work).await?;
        if disposition == Disposition::Ack {
            run.crash_point(HandlerPoint::BeforeAck);
        }
        let stream_name = self.cfg.streams[stream].clone();
        match disposition {
            Disposition::Ack => self.ack(&stream_name, &entry.id, &job).await,
            Disposition::Pending(reason) => {
                StdoutSink.emit(actor, JobEvent::JobFailed { job, reason, retryable: true }.event());
                Ok(())
            }
            Disposition::DeadLetter(reason) => {
                let _: String = redis::cmd("XADD")
                    .arg(&self.cfg.dlq)
                    .arg("*")
                    .arg("job")
                    .arg(&job)
                    .arg("reason")
                    .arg(serde_json::to_value(reason).expect("reasons serialize").as_str().unwrap_or_default())
                    .arg("stream")
                    .arg(&stream_name)
                    .arg("entry")
                    .arg(&entry.id)
                    .query_async(&mut self.conn)
                    .await
                    .context("XADD dlq")?;
                StdoutSink.emit(actor, JobEvent::DeadLettered { job: job.clone(), reason }.event());
                self.ack(&stream_name, &entry.id, &job).await
            }
        }
    }

    async fn ack(&mut self, stream: &str, entry_id: &str, job: &str) -> Result<(), Error> {
        let _: i64 = redis::cmd("XACK")
            .arg(stream)
            .arg(&self.cfg.group)
            .arg(entry_id)
            .query_async(&mut self.conn)
            .await
            .context("XACK")?;
        StdoutSink
            .emit(self.cfg.actor, JobEvent::JobAcked { entry_id: entry_id.to_string(), job: job.to_string() }.event());
        Ok(())
    }
}

impl crate::roles::Role for PipelineWorkerConfig {
    const NAME: &'static str = "pipeline-worker";

    fn actor(&self) -> crate::timeline::Actor {
        self.actor
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}
