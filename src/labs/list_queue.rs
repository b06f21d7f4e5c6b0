//! Seed 003's list queue: workers, a processing list, leases and a reaper, retries and poison
//! payloads; and more worker processes on a list or a stream group. Effects are counted in the
//! side-effect sink.

pub mod effect_counts;
#[allow(clippy::module_inception)] // the family's kind of the same name
pub mod list_queue;
pub mod queue_scale;
pub mod retry_schedule;
pub mod scale_worker;
pub mod supervisor;
pub mod worker;

use crate::labs::Family;
use crate::roles::role;

/// The events and roles only this family uses.
pub const FAMILY: Family = Family {
    vocabularies: &[],
    roles: &[
        role::<worker::ListWorkerConfig>(),
        role::<supervisor::ListSupervisorConfig>(),
        role::<scale_worker::ScaleWorkerConfig>(),
    ],
    tables: &[],
};
