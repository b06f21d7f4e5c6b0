//! The named points of ordlab's own workers where a fault can fire (`event = "after-claim"`):
//! in a job handler, after the claim (the technique's claim or check is done, the effect not
//! yet asked for), after the effect (the partner's receipt in hand, nothing marked), before
//! the ack (everything done but XACK); in a list-queue worker, after the take and after the
//! effect.

use super::{Action, Count, Fault, Target, Trigger};
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

impl HandlerPoint {
    /// SIGKILL whichever worker reaches this point with `job` on its first delivery (the
    /// redelivered copy runs to the end).
    pub fn kill(self, job: &str) -> Fault {
        Fault {
            target: Target::Any,
            trigger: Trigger::Event { event: self.name().into(), job: Some(job.into()), delivery: Some(1) },
            count: Count::ONCE,
            probability: None,
            action: Action::Kill,
        }
    }
}

/// Where in a list-queue worker's loop it can be killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListPoint {
    /// The job is taken (popped, or moved into processing); nothing done yet.
    AfterTake,
    /// The side effect happened; the entry is still in processing.
    AfterEffect,
}

impl ListPoint {
    /// The scenario's name for it (`after-take`).
    pub fn name(self) -> &'static str {
        match self {
            ListPoint::AfterTake => "after-take",
            ListPoint::AfterEffect => "after-effect",
        }
    }

    /// The point a fault's event names, if it is one.
    pub fn named(event: &str) -> Option<ListPoint> {
        [ListPoint::AfterTake, ListPoint::AfterEffect].into_iter().find(|p| p.name() == event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Injector, Occurrence};
    use crate::timeline::Actor;

    #[test]
    fn a_handler_kill_fires_at_its_job_and_point_on_the_first_delivery_only() {
        let inj = Injector::new(vec![HandlerPoint::AfterClaim.kill("job-1")], 1);
        let at = |job, delivery, point: HandlerPoint| {
            let occ = Occurrence::Event {
                by: Actor::Consumer(1),
                event: point.name(),
                job: Some(job),
                delivery: Some(delivery),
            };
            inj.fire(&occ).len()
        };
        assert_eq!(at("job-1", 2, HandlerPoint::AfterClaim), 0, "the redelivered copy runs on");
        assert_eq!(at("job-1", 1, HandlerPoint::AfterEffect), 0);
        assert_eq!(at("job-2", 1, HandlerPoint::AfterClaim), 0);
        assert_eq!(at("job-1", 1, HandlerPoint::AfterClaim), 1);
    }
}
