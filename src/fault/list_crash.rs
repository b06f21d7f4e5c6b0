//! Planned crashes of list-queue workers: worker `worker` SIGKILLs itself when it reaches a
//! named point with job `job` (right after taking it, or right after its side effect and
//! before removing it from the processing list).

use serde::{Deserialize, Serialize};

/// `crash = [{ worker = 1, job = "job-0001", at = "after-take" }]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListCrash {
    pub worker: u32,
    pub job: String,
    pub at: ListCrashPoint,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListCrashPoint {
    /// The job is taken (popped, or moved into processing); nothing done yet.
    AfterTake,
    /// The side effect happened; the entry is still in processing.
    AfterEffect,
}

impl ListCrash {
    /// Does worker `worker` crash now, at `at` with job `job`?
    pub fn fires(&self, worker: u32, job: &str, at: ListCrashPoint) -> bool {
        self.worker == worker && self.job == job && self.at == at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_fires_for_its_worker_job_and_point_only() {
        let c = ListCrash { worker: 1, job: "job-0001".into(), at: ListCrashPoint::AfterTake };
        assert!(c.fires(1, "job-0001", ListCrashPoint::AfterTake));
        assert!(!c.fires(2, "job-0001", ListCrashPoint::AfterTake));
        assert!(!c.fires(1, "job-0002", ListCrashPoint::AfterTake));
        assert!(!c.fires(1, "job-0001", ListCrashPoint::AfterEffect));
    }
}
