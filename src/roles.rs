//! The processes a lab starts besides the servers: the producer (a task of the orchestrator),
//! and the roles that run as OS processes of their own (`ordlab __role`, config as JSON on
//! stdin, typed timeline events as JSON lines on stdout): stream consumers, the XAUTOCLAIM
//! claimer, the fan-out reader, outbox dispatchers, seed 003's list-queue workers and their
//! supervisor (reaper and scheduler), list-queue workers on a Redis Cluster, job workers
//! (a job queue handled with an idempotency technique, as reader or claimer, and the seed's
//! production worker), and throughput workers on a list or a stream group.
//!
//! [`RoleProcess`] is the orchestrator's handle on one such process: it turns its stdout into
//! timeline events, reports an unplanned death with its stderr, and kills it on drop.
//! [`readiness`] waits until a role is where the run needs it (blocked in XREADGROUP, or just
//! connected), as data over CLIENT LIST.

pub mod claimer;
pub mod client_list;
pub mod cluster_worker;
pub mod command_worker;
mod config;
pub mod consumer;
pub mod fanout;
mod keyed_queues;
pub mod patience;
pub mod primary;
pub mod priority_loop;
pub mod producer;
pub mod reuse;
mod role_process;

pub use config::{role, Role, RoleConfig, RoleEntry, RoleEnv, RoleRegistry};
pub use role_process::{ExitCheck, OutputLines, RoleProcess, Started};

/// A consumer reads the group one entry at a time, or as a fan-out reader when its strategy
/// says so (here, above both, so neither imports the other to choose).
impl Role for consumer::ConsumerConfig {
    const NAME: &'static str = "consumer";

    fn actor(&self) -> crate::timeline::Actor {
        self.actor()
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        if self.strategy.reads_through_fanout() {
            fanout::run(self).await
        } else {
            consumer::run(self).await
        }
    }
}
