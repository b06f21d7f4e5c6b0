//! Planned crashes of list-queue workers: a worker SIGKILLs itself when it reaches a named
//! point with job `job` (right after taking it, or right after its side effect and before
//! removing it from the processing list) — worker `worker`, or whichever worker gets there
//! first. A crash fires once per job and point in a run (the worker claims it with SET NX
//! before it dies), so the worker that takes the job again does not die too.

use serde::{Deserialize, Serialize};

/// `crash = [{ worker = 1, job = "job-0001", at = "after-take" }]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListCrash {
    /// Only this worker (None: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u32>,
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
        self.worker.is_none_or(|w| w == worker) && self.job == job && self.at == at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_fires_for_its_worker_job_and_point_only() {
        let c = ListCrash { worker: Some(1), job: "job-0001".into(), at: ListCrashPoint::AfterTake };
        assert!(c.fires(1, "job-0001", ListCrashPoint::AfterTake));
        assert!(!c.fires(2, "job-0001", ListCrashPoint::AfterTake));
        assert!(!c.fires(1, "job-0002", ListCrashPoint::AfterTake));
        assert!(!c.fires(1, "job-0001", ListCrashPoint::AfterEffect));
        let any = ListCrash { worker: None, ..c };
        assert!(any.fires(2, "job-0001", ListCrashPoint::AfterTake));
    }
}
