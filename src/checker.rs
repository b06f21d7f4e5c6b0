//! Checkers are pure functions from a recorded run (timeline, what the servers held after it)
//! to a verdict, so a saved run can be re-judged without servers. Verdicts are three-valued
//! and compose as in Jepsen: wrong beats unknown beats right.
//!
//! One file per concern; a lab composes the ones it needs in its `judge`:
//! [`durability`] (acknowledged jobs a crash or eviction took away), [`effect_counts`] (effects
//! wanted per job against the sink's ledger), [`retry_schedule`] (retries against a backoff),
//! [`health`] (did the run finish and every process die only as planned), [`job_effects`]
//! (every list-queue job took effect once, each order's steps in order), [`spread`] (a queue's
//! load over a cluster's masters), [`final_state`]
//! (each order ends in its last event's status), [`delivery`] (duplicates, reordering and
//! side effects applied twice), [`fates`] (what became of every event: applied, dropped,
//! lost, out of order), [`exclusion`] (no two lock holders at once), [`concurrency`]
//! (handlers running at once), [`redelivery`] (claimed entries keep their ID), [`failover`]
//! (what a promoted replica lost), [`limit`] (what bounded a throughput measurement),
//! [`total_queue`] (every job's effects exactly once, or the dead-letter queue, counted from
//! the side-effect sink's ledger), and
//! [`outcome`] (a variant's count of wrong runs against its expectation).

pub mod exclusion;
pub mod fates;
pub mod final_state;
pub mod health;
pub mod limit;
pub mod outcome;
pub mod total_queue;
mod verdict;

pub use outcome::{Expectation, Outcome};
pub use verdict::{RunVerdict, Verdict};
