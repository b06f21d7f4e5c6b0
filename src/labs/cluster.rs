//! Seed 003's list queue past one node: a three-master Redis Cluster, hash tags, order per key, a
//! hash slot moved while workers run.

// The family's main kind bears its name (`labs::cluster::cluster`).
#[allow(clippy::module_inception)]
pub mod cluster;
pub mod job_effects;
pub mod spread;

use crate::labs::Family;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family::NOTHING_OF_ITS_OWN;
