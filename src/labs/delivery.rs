//! What a failover does to delivery: a primary killed under a steady producer, its replica
//! promoted with a real replication lag. Every count is read from the promoted replica.

pub mod counts;
pub mod failover;

use crate::labs::Family;
use crate::timeline::vocabulary::entry;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family { vocabularies: &[entry::<failover::events::FailoverEvent>()], roles: &[], tables: &[] };
