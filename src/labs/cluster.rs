//! Seed 003's list queue past one node: a three-master Redis Cluster, hash tags, order per key, a
//! hash slot moved while workers run.

#[allow(clippy::module_inception)] // the family's kind of the same name
pub mod cluster;
pub mod job_effects;
pub mod slot_migration;
pub mod spread;

use crate::labs::Family;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family::NOTHING_OF_ITS_OWN;
