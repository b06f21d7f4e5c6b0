//! Seed 000's jobs with side effects under at-least-once delivery: each idempotency technique with
//! crashes at named points and a partner that fails, and the seed's production pipeline end to
//! end. Effects are counted in the side-effect sink.

pub mod job_worker;
pub mod jobs;
pub mod pipeline;
pub mod pipeline_worker;
mod worker_pool;

use crate::labs::Family;
use crate::roles::role;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family {
    vocabularies: &[],
    roles: &[role::<job_worker::JobWorkerConfig>(), role::<pipeline_worker::PipelineWorkerConfig>()],
    tables: &[],
};
