//! Seed 000's priority queues: one stream per priority polled by a strict or weighted loop, or one
//! sorted set popped by score. Runs go through phases that each ask one question of the loop.

pub mod priority;
pub mod zset;
pub mod served;
pub mod zset_checker;
pub mod worker;
pub mod zset_worker;
mod job_run;
mod seed_claims;

use crate::labs::Family;
use crate::roles::role;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family { vocabularies: &[], roles: &[role::<worker::PriorityWorkerConfig>(), role::<zset_worker::ZsetWorkerConfig>()] };
