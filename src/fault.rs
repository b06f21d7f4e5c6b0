//! Faults injected on purpose, each one data from the scenario with a no-op default: handler
//! work (a sleep standing in for an API call), publish failures with their retry schedule,
//! planned SIGKILLs of role processes, a replication link with a shape (delay, bandwidth,
//! partition, the primary's machine dying), and the time scale that stretches or shrinks them.
//!
//! A lab that injects nothing gets the no-op versions: zero work, no failing attempt, no
//! crash, time scale 1.

mod crash;
pub mod link;
mod list_crash;
mod publish;
mod time_scale;
mod work;

pub use crash::{crash_now, CrashPoint, CrashSpec, PlannedCrashes};
pub use list_crash::{ListCrash, ListCrashPoint};
pub use publish::PublishSchedule;
pub use time_scale::TimeScale;
pub use work::HandlerWork;
