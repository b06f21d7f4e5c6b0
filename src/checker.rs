//! Checkers are pure functions from a recorded run (timeline, what the servers held after it)
//! to a verdict, so a saved run can be re-judged without servers. Verdicts are three-valued
//! and compose as in Jepsen: wrong beats unknown beats right.
//!
//! One file per concern that several families use; a lab composes the ones it needs in its
//! `judge`, with its family's own (`labs::<family>::…`): [`health`] (did the run finish and
//! every process die only as planned), [`final_state`] (each order ends in its last event's
//! status), [`fates`] (what became of every event: applied, dropped, lost, out of order),
//! [`exclusion`] (no two lock holders at once: the lock strategy's, in stream and load labs),
//! [`limit`] (what bounded a throughput measurement), [`total_queue`] (every job's effects
//! exactly once, or the dead-letter queue, counted from the side-effect sink's ledger),
//! [`transactions`] (changes a process never committed, from its statements at the wire), and
//! [`outcome`] (a variant's count of wrong runs against its expectation).

pub mod evidence;
pub mod exclusion;
pub mod fates;
pub mod final_state;
pub mod health;
pub mod limit;
pub mod outcome;
pub mod total_queue;
pub mod transactions;
mod verdict;

pub use outcome::{Expectation, Outcome};
pub use verdict::{RunVerdict, Verdict};
