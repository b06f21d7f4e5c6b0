//! Planned crashes of a job worker at a named point of its handler, on a job's first
//! delivery only (the redelivered copy runs to the end): after the claim (the technique's
//! claim or check is done, the effect not yet asked for), after the effect (the partner's
//! receipt in hand, nothing marked), before the ack (everything done but XACK).

use crate::lang::Words;
use serde::{Deserialize, Serialize};

/// Where in a job handler a worker can be killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HandlerPoint {
    AfterClaim,
    AfterEffect,
    BeforeAck,
}

impl HandlerPoint {
    pub const ALL: [HandlerPoint; 3] = [HandlerPoint::AfterClaim, HandlerPoint::AfterEffect, HandlerPoint::BeforeAck];

    /// The scenario's name for it (`after-claim`).
    pub fn name(self) -> &'static str {
        match self {
            HandlerPoint::AfterClaim => "after-claim",
            HandlerPoint::AfterEffect => "after-effect",
            HandlerPoint::BeforeAck => "before-ack",
        }
    }

    /// What the crash announcement says.
    pub fn detail(self) -> Words {
        match self {
            HandlerPoint::AfterClaim => Words::new(
                "after the claim or check, before the effect",
                "sau bước claim hoặc kiểm tra, trước hiệu ứng",
            ),
            HandlerPoint::AfterEffect => Words::new(
                "after the effect, before marking it done and XACK",
                "sau hiệu ứng, trước khi đánh dấu xong và XACK",
            ),
            HandlerPoint::BeforeAck => Words::new("everything done, before XACK", "mọi thứ đã xong, trước XACK"),
        }
    }
}

/// The worker that reaches `at` while handling `job` on its first delivery kills itself.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct JobCrash {
    pub job: String,
    pub at: HandlerPoint,
}

/// Does a worker at `point` of `job`, delivered `deliveries` times, crash now?
pub fn crash_due(plan: &[JobCrash], job: &str, deliveries: u64, point: HandlerPoint) -> bool {
    deliveries <= 1 && plan.iter().any(|c| c.job == job && c.at == point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_fires_at_its_job_and_point_on_the_first_delivery_only() {
        let plan = [JobCrash { job: "job-1".into(), at: HandlerPoint::AfterClaim }];
        assert!(crash_due(&plan, "job-1", 1, HandlerPoint::AfterClaim));
        assert!(!crash_due(&plan, "job-1", 2, HandlerPoint::AfterClaim), "the redelivered copy runs on");
        assert!(!crash_due(&plan, "job-1", 1, HandlerPoint::AfterEffect));
        assert!(!crash_due(&plan, "job-2", 1, HandlerPoint::AfterClaim));
    }
}
