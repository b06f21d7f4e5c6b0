//! A fault is one declarative trigger and one action ([`Fault`]), declared in a scenario for any
//! kind and any process; one [`Injector`] per process or party decides when each fires, and
//! every party that can carry an action out consults it: the interposer at command boundaries,
//! ordlab's own roles at their named points, the side-effect partner per request, the explorer
//! per step. Every fault that fires is a timeline event ([`FaultEvent`]); one declared and never
//! fired makes the run unknown.
//!
//! - [`trigger`]: when (a command at its send or reply, a named point or timeline event, a
//!   moment of the run, the process's start), which of the matches (the n-th, every k-th), and
//!   with what probability.
//! - [`action`]: what (SIGKILL, pause, delay, lose the reply, hang, reset, refuse connections,
//!   restart a server, skew a clock; the partner's refuse, lost reply and delay).
//! - [`declare`]: the two together as a scenario's table, checked in one line.
//! - [`injector`]: the counts, and which faults fire now.
//! - [`event`]: the timeline events, and the check that every declared fault fired.
//! - [`process`]: the actions on a process (kill, pause, skew).
//!
//! Beside them, the time scale that stretches every duration of a lab (the workload's own
//! conditions, handler work and publish failures, are the order events' in [`crate::orders`];
//! a hash slot moved while workers run is the cluster family's). A lab that injects
//! nothing gets the no-op versions: zero work, no failing attempt, time scale 1.

pub mod action;
mod crash;
pub mod declare;
pub mod event;
pub mod injector;
mod point;
pub mod process;
pub mod role;
pub mod server;
mod time_scale;
pub mod trigger;

pub use action::Action;
pub use crash::{crash_now, PlannedCrashes};
pub use declare::{Fault, Target};
pub use event::{unfired, FaultEvent};
pub use injector::{Fired, Injector};
pub use point::{HandlerPoint, ListPoint};
pub use time_scale::{TimeScale, NEVER_BY_THE_CLOCK_MS};
pub use trigger::{Count, Moment, Occurrence, Trigger};
