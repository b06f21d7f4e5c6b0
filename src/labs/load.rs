//! Many orders at once: every strategy side by side at the same handler budget, and the limits of
//! one fan-out reader. Throughput and latency are measured, not asserted.

pub mod concurrency;
pub mod generate;
// The family's main kind bears its name (`labs::load::load`).
#[allow(clippy::module_inception)]
pub mod load;
pub mod reader_ceiling;

use crate::labs::Family;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family::NOTHING_OF_ITS_OWN;
