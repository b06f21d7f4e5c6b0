//! The mechanism under `ordlab explore`: a run's processes stepped one server command at a time
//! at the interposer ([`control`]), what each step touches ([`footprint`]), the search over
//! orders of steps ([`search`]) and the schedule strings that name them ([`schedule`]).
//!
//! The roles and the runner use [`Control`] to put a run's processes under the explorer; the
//! driver that runs a lab under every order and judges it is [`crate::exploration`].

pub mod control;
pub mod footprint;
pub mod random_words;
pub mod schedule;
pub mod search;
pub mod timer;

pub use control::Control;
pub use schedule::Schedule;
