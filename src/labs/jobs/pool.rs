//! The worker processes of a jobs run: the readers `C1…`, each started and seen blocked in
//! XREADGROUP before the next, and later the claimer (`reaper`). A reader that dies by a
//! planned SIGKILL is replaced by a new process with the next number, as a process supervisor
//! would; what it left pending is the claimer's to take.

use crate::error::Error;
use crate::labs::RunContext;
use crate::roles::claimer::ReaperSpec;
use crate::roles::job_worker::JobWorkerConfig;
use crate::roles::readiness::{wait_for_client, ClientState};
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::{Actor, RawEvent};
use tokio::sync::mpsc;

pub struct Pool {
    /// A reader's config; `actor`, `client_name` and `env.seed` change per process.
    template: JobWorkerConfig,
    processes: Vec<RoleProcess>,
    /// The highest reader number started so far.
    last_reader: u32,
}

impl Pool {
    /// Start `readers` readers, each blocked before the next starts.
    pub async fn start(
        ctx: &mut RunContext<'_>,
        template: JobWorkerConfig,
        readers: u32,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Pool, Error> {
        let mut pool = Pool { template, processes: Vec::new(), last_reader: 0 };
        for _ in 0..readers {
            pool.last_reader += 1;
            let cfg = pool.config(ctx, Actor::Consumer(pool.last_reader), pool.last_reader);
            pool.spawn(ctx, cfg, ClientState::BlockedInXreadgroup, tx).await?;
        }
        Ok(pool)
    }

    /// Start the claimer and wait until it is connected.
    pub async fn start_claimer(
        &mut self,
        ctx: &mut RunContext<'_>,
        reaper: &ReaperSpec,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let mut claimer = self.config(ctx, Actor::Reaper, 0);
        claimer.claim = Some(reaper.clone());
        self.spawn(ctx, claimer, ClientState::Connected, tx).await
    }

    fn config(&self, ctx: &RunContext<'_>, actor: Actor, index: u32) -> JobWorkerConfig {
        let mut cfg = self.template.clone();
        cfg.env = ctx.role_env(index);
        cfg.actor = actor;
        cfg.client_name = ctx.client_name(actor);
        cfg
    }

    /// One more reader, `C<n+1>`, in place of one that died. It is not waited for: the jobs
    /// are published already and it is the only reader, so nothing depends on when it starts
    /// reading (and it may well die at its own planned point before anyone could look).
    pub fn replace_reader(&mut self, ctx: &RunContext<'_>, tx: &mpsc::UnboundedSender<RawEvent>) -> Result<(), Error> {
        self.last_reader += 1;
        let cfg = self.config(ctx, Actor::Consumer(self.last_reader), self.last_reader);
        self.processes.push(ctx.spawn(&RoleConfig::JobWorker(cfg), tx.clone())?);
        Ok(())
    }

    async fn spawn(
        &mut self,
        ctx: &mut RunContext<'_>,
        cfg: JobWorkerConfig,
        want: ClientState,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let name = cfg.client_name.clone();
        let child = ctx.spawn(&RoleConfig::JobWorker(cfg), tx.clone())?;
        self.processes.push(child);
        let mut conn = ctx.redis.clone();
        wait_for_client(&mut conn, &name, want, self.processes.last().expect("just pushed")).await
    }

    /// Kill every process and wait until its output is drained.
    pub async fn stop(self) {
        for p in self.processes {
            p.stop().await;
        }
    }
}
