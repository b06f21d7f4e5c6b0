//! The priority claims an explored run can judge: which job is served before which, and what a
//! critical job had to wait for, not how many milliseconds anything took. Under the explorer
//! a read's `BLOCK` runs out only as a timer step, so a blocking read that came back empty is
//! one whose time ran out.
//!
//! - **strict** (`claims.strict`): no normal or low job is taken while a job of a higher
//!   priority waits that was queued before the worker's last read of its stream. A job queued
//!   after that read could not have been seen (every loop reads one stream after another, or
//!   all at once); one queued before was seen and passed over (a read over every stream that
//!   returns the lower streams' entries beside the higher one's, more of which wait).
//! - **critical waits for no timeout** (`claims.critical_wait_ms`): no critical job, once
//!   queued, waits until a blocking read that does not cover the critical stream runs out of
//!   time. Sampled, such a wait is the read's whole `BLOCK` (5000 ms on the seed's low read);
//!   explored, it is the order in which it can happen.
//!
//! The other claims are about time, which the explorer takes out (handler work takes none, a
//! block lasts until a timer step): low's starvation (its longest wait under traffic that
//! does not stop) and the weighted ratio (decided by the loop alone, the same in every order).

use crate::checker::{RunVerdict, Verdict};
use crate::labs::priority::served::Claims;
use crate::priority_queue::{Priority, PriorityEvent};
use crate::timeline::Event;
use std::collections::{BTreeMap, BTreeSet};

/// A worker's read as the checker needs it.
struct Read {
    queues: Vec<Priority>,
    /// It came back empty after blocking: its time ran out.
    timed_out: bool,
}

/// Judge an explored run's events (in the order they happened) against `claims`.
pub fn judge(claims: &Claims, events: &[Event]) -> RunVerdict {
    let mut v = RunVerdict::right();
    // Jobs queued and not taken yet: job → (priority, index of its queueing).
    let mut waiting: BTreeMap<String, (Priority, usize)> = BTreeMap::new();
    // Per priority, the index of the worker's last read of its stream.
    let mut last_read: BTreeMap<Priority, usize> = BTreeMap::new();
    // Critical jobs waiting, and the reads that timed out since each was queued (the first).
    let mut critical_waited: BTreeMap<String, String> = BTreeMap::new();
    let mut passed_over: Vec<String> = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        match e.kind.family::<PriorityEvent>() {
            // An arrival that woke the worker's blocked read is one step: the worker may
            // record its read and take before the producer records the XADD's reply.
            Some(PriorityEvent::JobQueued { job, .. }) if taken.contains(&job) => {}
            Some(PriorityEvent::JobQueued { job, priority, .. }) => {
                waiting.insert(job, (priority, i));
            }
            Some(PriorityEvent::QueueRead { read, queues, got, .. }) => {
                let r = Read { timed_out: read.contains(" BLOCK ") && got.iter().all(|n| *n == 0), queues };
                for q in &r.queues {
                    last_read.insert(*q, i);
                }
                if r.timed_out && !r.queues.contains(&Priority::Critical) {
                    for (job, (p, _)) in &waiting {
                        if *p == Priority::Critical {
                            critical_waited.entry(job.clone()).or_insert_with(|| read.clone());
                        }
                    }
                }
            }
            Some(PriorityEvent::PriorityJobTaken { job, priority, .. }) => {
                waiting.remove(&job);
                taken.insert(job.clone());
                if claims.strict {
                    let seen_higher = waiting.iter().find(|(_, (p, queued))| {
                        p.index() < priority.index() && last_read.get(p).is_some_and(|r| queued < r)
                    });
                    if let Some((higher, _)) = seen_higher {
                        passed_over.push(format!("{job} taken while {higher} waited"));
                    }
                }
                if let Some(read) = critical_waited.remove(&job) {
                    if claims.critical_wait_ms.is_some() {
                        v.add(
                            Verdict::Wrong,
                            format!("critical {job} waited until `{read}` ran out of time (a read that does not cover critical)"),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(first) = passed_over.first() {
        let more = passed_over.len() - 1;
        let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
        v.add(
            Verdict::Wrong,
            format!("not strict: {first}, queued before the worker's last read of its stream{more}"),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority_queue::Phase;
    use crate::timeline::vocabulary::Vocabulary as _;
    use crate::timeline::{Actor, EventKind};

    fn ev(actor: Actor, kind: EventKind) -> Event {
        Event { t_us: 0, actor, kind }
    }
    fn queued(job: &str, priority: Priority) -> Event {
        let kind = PriorityEvent::JobQueued { job: job.into(), priority, phase: Phase::Probe, traced: true, score: None };
        ev(Actor::Producer, kind.event())
    }
    fn read(read: &str, queues: &[Priority], got: &[u32]) -> Event {
        let kind = PriorityEvent::QueueRead {
            read: read.into(),
            queues: queues.to_vec(),
            count: 10,
            got: got.to_vec(),
            waited_ms: 0.0,
        };
        ev(Actor::Consumer(1), kind.event())
    }
    fn taken(job: &str, priority: Priority) -> Event {
        let kind = PriorityEvent::PriorityJobTaken {
            job: job.into(),
            priority,
            phase: Phase::Probe,
            traced: true,
            waited_ms: None,
        };
        ev(Actor::Consumer(1), kind.event())
    }
    fn claims(strict: bool, critical_wait: bool) -> Claims {
        Claims {
            strict,
            ratio: None,
            ratio_tolerance: 0.1,
            low_gap_ms: None,
            low_wait_ms: None,
            critical_wait_ms: critical_wait.then_some(250.0),
        }
    }
    use Priority::{Critical as C, Low as L, Normal as N};

    #[test]
    fn a_critical_job_that_waits_out_a_read_of_another_stream_breaks_the_claim() {
        let events = vec![
            read("XREADGROUP critical COUNT 10 BLOCK 100", &[C], &[0]),
            queued("c-1", C),
            read("XREADGROUP normal COUNT 10 BLOCK 100", &[N], &[0]),
            read("XREADGROUP low COUNT 10 BLOCK 5000", &[L], &[0]),
            read("XREADGROUP critical COUNT 10 BLOCK 100", &[C], &[1]),
            taken("c-1", C),
        ];
        let v = judge(&claims(true, true), &events);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(
            v.reasons,
            ["critical c-1 waited until `XREADGROUP normal COUNT 10 BLOCK 100` ran out of time (a read that does not cover critical)"]
        );
        // Not a claim of the lab: no verdict.
        assert_eq!(judge(&claims(true, false), &events).verdict, Verdict::Right);
    }

    #[test]
    fn an_arrival_that_wakes_the_read_or_ends_one_without_block_waits_for_no_timeout() {
        // Woken by the arrival: the read over every stream returns it.
        let woken = vec![
            read("XREADGROUP critical normal low COUNT 1 BLOCK 0", &[C, N, L], &[0, 0, 0]),
            queued("c-1", C),
            read("XREADGROUP critical normal low COUNT 1 BLOCK 0", &[C, N, L], &[1, 0, 0]),
            taken("c-1", C),
        ];
        assert_eq!(judge(&claims(true, true), &woken).verdict, Verdict::Right);
        // Non-blocking reads of the lower streams come back empty at once: no timeout.
        let probed = vec![
            queued("c-1", C),
            read("XREADGROUP normal COUNT 10", &[N], &[0]),
            read("XREADGROUP low COUNT 10", &[L], &[0]),
            read("XREADGROUP critical COUNT 10", &[C], &[1]),
            taken("c-1", C),
        ];
        assert_eq!(judge(&claims(true, true), &probed).verdict, Verdict::Right);
    }

    #[test]
    fn an_arrival_that_woke_the_read_may_be_recorded_after_its_take() {
        // The XADD's reply and the woken read's come at once: the producer's record may be
        // last. The job was not waiting when l-1 was taken.
        let events = vec![
            read("XREADGROUP critical COUNT 10 BLOCK 100", &[C], &[1]),
            taken("c-1", C),
            queued("c-1", C),
            read("XREADGROUP critical COUNT 10 BLOCK 100", &[C], &[0]),
            read("XREADGROUP normal COUNT 10 BLOCK 100", &[N], &[0]),
            read("XREADGROUP low COUNT 10 BLOCK 5000", &[L], &[1]),
            taken("l-1", L),
        ];
        assert_eq!(judge(&claims(true, true), &events).verdict, Verdict::Right);
    }

    #[test]
    fn a_lower_job_taken_while_a_seen_higher_one_waits_is_not_strict() {
        // One read over every stream: 1 of 2 critical jobs and the low one come back together.
        let events = vec![
            queued("c-1", C),
            queued("c-2", C),
            queued("l-1", L),
            read("XREADGROUP critical normal low COUNT 1 BLOCK 5000", &[C, N, L], &[1, 0, 1]),
            taken("c-1", C),
            taken("l-1", L),
            read("XREADGROUP critical normal low COUNT 1 BLOCK 5000", &[C, N, L], &[1, 0, 0]),
            taken("c-2", C),
        ];
        let v = judge(&claims(true, false), &events);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(v.reasons, ["not strict: l-1 taken while c-2 waited, queued before the worker's last read of its stream"]);
        assert_eq!(judge(&claims(false, false), &events).verdict, Verdict::Right);
    }

    #[test]
    fn a_higher_job_queued_after_its_stream_was_read_could_not_have_been_seen() {
        let events = vec![
            queued("l-1", L),
            read("XREADGROUP critical COUNT 10", &[C], &[0]),
            queued("c-1", C),
            read("XREADGROUP normal COUNT 10", &[N], &[0]),
            read("XREADGROUP low COUNT 10", &[L], &[1]),
            taken("l-1", L),
            read("XREADGROUP critical COUNT 10", &[C], &[1]),
            taken("c-1", C),
        ];
        assert_eq!(judge(&claims(true, true), &events).verdict, Verdict::Right);
    }
}
