//! The worker processes of a job-queue run: readers `C1…`, each started and seen blocked in
//! XREADGROUP before the next, and the claimer (`reaper`) when the lab wants it. A worker that
//! dies by a planned SIGKILL is replaced by a new process (a reader with the next number, or a
//! new reaper), as a process supervisor would; what it left pending is the claimer's to take.

use crate::error::Error;
use crate::labs::RunContext;
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::{Actor, RawEvent};
use tokio::sync::mpsc;

/// A worker's config the pool stamps per process.
pub trait WorkerTemplate {
    /// The config of process `actor` (`index`: its seed), and the client name of the
    /// connection it reads with.
    fn for_process(&self, ctx: &RunContext<'_>, actor: Actor, index: u32) -> (RoleConfig, String);
}

pub struct Pool<T: WorkerTemplate> {
    template: T,
    processes: Vec<RoleProcess>,
    /// The highest reader number started so far.
    last_reader: u32,
    /// Claimers started so far (each a new process with the next seed).
    claimers: u32,
}

impl<T: WorkerTemplate> Pool<T> {
    /// Start `readers` readers, each blocked before the next starts.
    pub async fn start(
        ctx: &mut RunContext<'_>,
        template: T,
        readers: u32,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Pool<T>, Error> {
        let mut pool = Pool { template, processes: Vec::new(), last_reader: 0, claimers: 0 };
        for _ in 0..readers {
            pool.last_reader += 1;
            let (cfg, name) = pool.template.for_process(ctx, Actor::Consumer(pool.last_reader), pool.last_reader);
            pool.spawn(ctx, cfg, &name, ClientState::BlockedInXreadgroup, tx).await?;
        }
        Ok(pool)
    }

    /// Start the claimer and wait until it is connected.
    pub async fn start_claimer(
        &mut self,
        ctx: &mut RunContext<'_>,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let (cfg, name) = self.claimer_config(ctx);
        self.spawn(ctx, cfg, &name, ClientState::Connected, tx).await
    }

    fn claimer_config(&mut self, ctx: &RunContext<'_>) -> (RoleConfig, String) {
        self.claimers += 1;
        // Seeds 1000+: never a reader's.
        self.template.for_process(ctx, Actor::Reaper, 1000 + self.claimers)
    }

    /// A new process in place of `dead`, which died by a planned crash. It is not waited for:
    /// the jobs are published already and nothing depends on when it starts reading (and it
    /// may die at its own planned point before anyone could look).
    pub fn replace(
        &mut self,
        ctx: &RunContext<'_>,
        dead: Actor,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let (cfg, _) = match dead {
            Actor::Reaper => self.claimer_config(ctx),
            _ => {
                self.last_reader += 1;
                self.template.for_process(ctx, Actor::Consumer(self.last_reader), self.last_reader)
            }
        };
        self.processes.push(ctx.spawn(&cfg, tx.clone())?);
        Ok(())
    }

    async fn spawn(
        &mut self,
        ctx: &mut RunContext<'_>,
        cfg: RoleConfig,
        client_name: &str,
        want: ClientState,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let child = ctx.spawn(&cfg, tx.clone())?;
        self.processes.push(child);
        let mut conn = ctx.redis.clone();
        wait_for_client(&mut conn, client_name, want, self.processes.last().expect("just pushed")).await
    }

    /// Kill every process and wait until its output is drained.
    pub async fn stop(self) {
        for p in self.processes {
            p.stop().await;
        }
    }
}
