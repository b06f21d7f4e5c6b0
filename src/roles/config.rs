//! What a role process is told when it starts: which role, with what. The orchestrator writes
//! a [`RoleConfig`] as JSON on the child's stdin; `ordlab __role` reads it and runs the role
//! until it is killed (or, for a dispatcher, until its outbox is published).

use super::claimer::ClaimerConfig;
use super::cluster_worker::ClusterWorkerConfig;
use super::consumer::ConsumerConfig;
use super::dispatcher::DispatcherConfig;
use super::job_worker::JobWorkerConfig;
use super::list_supervisor::ListSupervisorConfig;
use super::list_worker::ListWorkerConfig;
use super::pipeline_worker::PipelineWorkerConfig;
use super::priority_worker::PriorityWorkerConfig;
use super::scale_worker::ScaleWorkerConfig;
use super::zset_worker::ZsetWorkerConfig;
use crate::error::Error;
use crate::fault::TimeScale;
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};

/// What every role of a run shares: where the servers are, the run's key prefix and clock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoleEnv {
    pub redis_url: String,
    pub pg_config: String,
    /// Prefix of every Redis key of the run (isolation between runs and invocations).
    pub key_prefix: String,
    pub scale: TimeScale,
    /// The process's own seed (every random choice repeats with `--seed`).
    pub seed: u64,
    /// The server has `DELEX key IFEQ token` (Redis ≥ 8.4).
    pub has_delex: bool,
}

/// One role process.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "kebab-case")]
pub enum RoleConfig {
    /// Reads the group one entry at a time, or as a fan-out reader when its strategy says so.
    Consumer(ConsumerConfig),
    /// Takes over idle pending entries with XAUTOCLAIM.
    Claimer(ClaimerConfig),
    /// Publishes outbox rows to the stream.
    Dispatcher(DispatcherConfig),
    /// Polls one stream per priority with a priority loop.
    PriorityWorker(PriorityWorkerConfig),
    /// Takes jobs from one sorted set (ZPOPMAX, BZPOPMAX or a leased pop).
    ZsetWorker(ZsetWorkerConfig),
    /// Handles queue jobs with an idempotency technique (reader or claimer).
    JobWorker(JobWorkerConfig),
    /// The seed's production worker: priority polling, idempotent handler, retry, DLQ.
    PipelineWorker(PipelineWorkerConfig),
    /// Takes jobs from a Redis list queue (seed 003).
    ListWorker(ListWorkerConfig),
    /// Puts back jobs whose lease ran out and moves due retries to a list queue.
    ListSupervisor(ListSupervisorConfig),
    /// Takes jobs from a list queue on a Redis Cluster.
    ClusterWorker(ClusterWorkerConfig),
    /// Takes jobs from a list or a stream group as fast as it can, for throughput.
    ScaleWorker(ScaleWorkerConfig),
}

impl RoleConfig {
    /// Who the process is on the timeline.
    pub fn actor(&self) -> Actor {
        match self {
            RoleConfig::Consumer(c) => c.actor(),
            RoleConfig::Claimer(_) => Actor::Reaper,
            RoleConfig::Dispatcher(d) => Actor::Dispatcher(d.index),
            RoleConfig::PriorityWorker(w) => w.actor(),
            RoleConfig::ZsetWorker(w) => Actor::Consumer(w.index),
            RoleConfig::JobWorker(w) => w.actor,
            RoleConfig::PipelineWorker(w) => w.actor,
            RoleConfig::ListWorker(w) => w.actor(),
            RoleConfig::ListSupervisor(s) => s.actor(),
            RoleConfig::ClusterWorker(w) => w.actor(),
            RoleConfig::ScaleWorker(w) => Actor::Worker(w.index),
        }
    }
}

/// Run a role until it is killed or done: the body of `ordlab __role`.
pub async fn run_role(config: RoleConfig) -> Result<(), Error> {
    match config {
        RoleConfig::Consumer(c) if c.strategy.reads_through_fanout() => super::fanout::run(c).await,
        RoleConfig::Consumer(c) => super::consumer::run(c).await,
        RoleConfig::Claimer(c) => super::claimer::run(c).await,
        RoleConfig::Dispatcher(d) => super::dispatcher::run_process(d).await,
        RoleConfig::PriorityWorker(w) => super::priority_worker::run(w).await,
        RoleConfig::ZsetWorker(w) => super::zset_worker::run(w).await,
        RoleConfig::JobWorker(w) => super::job_worker::run(w).await,
        RoleConfig::PipelineWorker(w) => super::pipeline_worker::run(w).await,
        RoleConfig::ListWorker(w) => super::list_worker::run(w).await,
        RoleConfig::ListSupervisor(s) => super::list_supervisor::run(s).await,
        RoleConfig::ClusterWorker(w) => super::cluster_worker::run(w).await,
        RoleConfig::ScaleWorker(w) => super::scale_worker::run(w).await,
    }
}
