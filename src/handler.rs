//! How a handler applies what it is handed: one idea, two registries of one shape.
//!
//! - [`order`]: how a stream consumer applies an order event (a status, a version, maybe a
//!   document or a change) to the orders table: `Strategy`, the scenario's `strategy`. It gets
//!   a [`order::Delivery`] and the connections in an [`order::Handler`], and leaves a write
//!   (or none) on the timeline; the verdict is the table's final state.
//! - [`job`]: how a job handler keeps a job's side effects to one (seed 000's techniques, and
//!   the pipeline lab's `handle_message`): `Technique`, the scenario's `technique`. It gets a
//!   [`job::JobRun`] (the job, its delivery count, the side-effect sink, the planned crash
//!   points) and answers [`job::Handled`], which decides the acknowledgement; the verdict is
//!   the partner's ledger.
//!
//! Why two registries and not one enum: the two never stand in for each other. A stream lab
//! cannot run a technique (there is no side-effect sink, no crash point, nothing to count), a
//! job lab cannot run a strategy (a job has no order version to compare); one enum would make
//! every lab reject half of its arms when it validates, and the two scenario keys mean
//! different things to a reader of the lab. What they share is the shape, and that is what
//! this module fixes:
//!
//! - each entry is a type in its family's folder (its options as fields, `{}` without any)
//!   that implements the family's trait, [`order::StrategyKind`] or [`job::TechniqueKind`],
//!   both on top of [`Described`];
//! - a macro in the family's registry lists the entries, one line each (variant, type, the
//!   name a scenario file gives), and writes the enum, its names and the dispatch;
//! - what a lab or a role needs to know about an entry (does it hold a lock, read through a
//!   fan-out reader, keep tables of its own…) is a trait method with a default, overridden
//!   beside the entry. No code outside an entry's file matches on it, so adding one touches
//!   its file and its registry line only.

use crate::lang::Lang;

/// What every handler entry says about itself, in both registries.
pub trait Described {
    /// The entry in one phrase of the set-up line.
    fn describe(&self, lang: Lang) -> String;
    /// The entry in a few words, for the SUMMARY table (English).
    fn short(&self) -> String;
}

pub mod job;
pub mod order;
