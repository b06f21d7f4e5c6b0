//! Faults injected on purpose, each one data from the scenario with a no-op default: handler
//! work (a sleep standing in for an API call), publish failures with their retry schedule,
//! planned SIGKILLs of role processes (at a consumer's receive, or at a named point of a job
//! handler), a replication link with a shape (delay, bandwidth, partition, the primary's
//! machine dying), a hash slot moved between cluster masters while workers run, and the time
//! scale that stretches or shrinks them all.
//!
//! A lab that injects nothing gets the no-op versions: zero work, no failing attempt, no
//! crash, time scale 1.

mod crash;
mod job_crash;
pub mod link;
mod list_crash;
mod publish;
pub mod slot_migration;
mod time_scale;
mod work;

pub use crash::{crash_now, CrashPoint, CrashSpec, PlannedCrashes};
pub use job_crash::{crash_due, HandlerPoint, JobCrash};
pub use list_crash::{ListCrash, ListCrashPoint};
pub use publish::PublishSchedule;
pub use time_scale::{TimeScale, NEVER_BY_THE_CLOCK_MS};
pub use work::HandlerWork;
