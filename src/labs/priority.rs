//! Seed 000's priority queues: one stream per priority polled by a strict or weighted loop, or one
//! sorted set popped by score. Runs go through phases that each ask one question of the loop.

mod job_run;
pub mod order_claims;
#[allow(clippy::module_inception)] // the family's kind of the same name
pub mod priority;
mod seed_claims;
pub mod served;
pub mod unserved;
mod wire;
pub mod worker;
pub mod zset;
pub mod zset_checker;
pub mod zset_worker;

use crate::labs::Family;
use crate::roles::role;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family {
    vocabularies: &[],
    roles: &[role::<worker::PriorityWorkerConfig>(), role::<zset_worker::ZsetWorkerConfig>()],
    tables: &[],
};
