//! What a Redis that holds a queue keeps: redis-server SIGKILLed and restarted on its own files,
//! and a maxmemory policy when the queue grows beside a cache. Both judge the acknowledged jobs
//! the server lost.

pub mod checker;
pub mod eviction;
pub mod persistence;

use crate::labs::Family;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family::NOTHING_OF_ITS_OWN;
