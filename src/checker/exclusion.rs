//! Mutual exclusion over lock-held intervals: no two consumers may be inside the critical
//! section of one key at once, except after the first one's lock expired (its TTL ran out
//! while it worked) — the documented limit of a TTL lock, counted, never hidden.
//!
//! An interval runs from the reply to the successful `SET … NX PX` to the moment its release
//! was sent. With a correct lock two intervals can never overlap: a release is sent before the
//! server deletes the key, and the next holder's reply arrives after the server set it for
//! them. Stamping a release at its reply instead would show overlaps that never happened.

use crate::checker::{RunVerdict, Verdict};
use crate::handler::order::events::HandlerEvent;
use crate::timeline::{Actor, Event};

/// Redis expires keys on a whole-millisecond clock: a key set with PX p may be gone up to a
/// millisecond before p ms have passed.
const EXPIRY_SLACK_US: i64 = 2_000;

/// One consumer's hold of one key.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub key: String,
    pub holder: Actor,
    /// When the successful SET was sent (µs on the run's clock): its PX counts from no earlier.
    pub sent_us: i64,
    /// When its reply arrived.
    pub acquired_us: i64,
    /// The PX it was set with (time-scaled).
    pub px_ms: u64,
    /// When its release was sent; None if the holder never released it (it died).
    pub released_us: Option<i64>,
    /// The server's answer to the release (1 ours, 0 expired or taken over).
    pub released: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapKind {
    /// The second holder got the key when the first one's TTL could have run out.
    AfterExpiry,
    /// Both held the key and no expiry explains it: the lock is broken.
    Violation,
}

/// Two holders inside one key's critical section at once.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlap {
    pub key: String,
    pub first: Actor,
    pub second: Actor,
    pub second_acquired_us: i64,
    pub first_released_us: Option<i64>,
    pub kind: OverlapKind,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exclusion {
    /// In the order the holders got their keys.
    pub intervals: Vec<Interval>,
    pub overlaps: Vec<Overlap>,
}

impl Exclusion {
    pub fn violations(&self) -> usize {
        self.overlaps.iter().filter(|o| o.kind == OverlapKind::Violation).count()
    }

    pub fn after_expiry(&self) -> usize {
        self.overlaps.iter().filter(|o| o.kind == OverlapKind::AfterExpiry).count()
    }

    /// Who held each key first.
    pub fn first_holder(&self, key: &str) -> Option<Actor> {
        self.intervals.iter().find(|i| i.key == key).map(|i| i.holder)
    }

    /// Wrong on a violation. An overlap after expiry is what a TTL lock does when the job
    /// outlives it: the report shows it, and the final state says whether it did harm.
    pub fn verdict(&self) -> RunVerdict {
        let mut v = RunVerdict::right();
        for o in self.overlaps.iter().filter(|o| o.kind == OverlapKind::Violation) {
            let t = o.second_acquired_us / 1000;
            v.add(
                Verdict::Wrong,
                format!(
                    "mutual exclusion broken: {} took {} at t={t} ms while {} still held it",
                    o.second, o.key, o.first
                ),
            );
        }
        v
    }
}

/// Pair each consumer's acquisitions with its next release of the same key.
pub fn intervals(events: &[Event]) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for e in events {
        match e.kind.family::<HandlerEvent>().as_ref() {
            Some(HandlerEvent::LockAcquired { key, px_ms, round_trip_us, .. }) => out.push(Interval {
                key: key.clone(),
                holder: e.actor,
                sent_us: e.t_us - round_trip_us,
                acquired_us: e.t_us,
                px_ms: *px_ms,
                released_us: None,
                released: None,
            }),
            Some(HandlerEvent::LockReleased { key, released, .. }) => {
                let open =
                    out.iter_mut().rev().find(|i| i.holder == e.actor && i.key == *key && i.released_us.is_none());
                if let Some(i) = open {
                    i.released_us = Some(e.t_us);
                    i.released = Some(*released);
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|i| i.acquired_us);
    out
}

/// Every pair of holders of one key whose intervals overlap, classified.
pub fn check(events: &[Event]) -> Exclusion {
    let intervals = intervals(events);
    let mut overlaps = Vec::new();
    for (n, a) in intervals.iter().enumerate() {
        for b in intervals[n + 1..].iter().filter(|b| b.key == a.key && b.holder != a.holder) {
            if a.released_us.is_some_and(|r| b.acquired_us >= r) {
                continue;
            }
            let expired_by = a.sent_us + a.px_ms as i64 * 1000 - EXPIRY_SLACK_US;
            let kind = if b.acquired_us >= expired_by { OverlapKind::AfterExpiry } else { OverlapKind::Violation };
            overlaps.push(Overlap {
                key: a.key.clone(),
                first: a.holder,
                second: b.holder,
                second_acquired_us: b.acquired_us,
                first_released_us: a.released_us,
                kind,
            });
        }
    }
    Exclusion { intervals, overlaps }
}

#[cfg(test)]
mod tests {
    use crate::checker::exclusion::*;
    use crate::timeline::vocabulary::Vocabulary;

    const KEY: &str = "lock:order:42";

    fn acquired(t_us: i64, who: u32, px_ms: u64) -> Event {
        let kind =
            HandlerEvent::LockAcquired { key: KEY.into(), tries: 1, ttl_ms: px_ms, px_ms, round_trip_us: 100 }.event();
        Event { t_us, actor: Actor::Consumer(who), kind }
    }

    fn released(t_us: i64, who: u32, released: i64) -> Event {
        let kind = HandlerEvent::LockReleased { key: KEY.into(), method: "DELEX IFEQ".into(), released }.event();
        Event { t_us, actor: Actor::Consumer(who), kind }
    }

    #[test]
    fn one_after_the_other_is_exclusion() {
        // The second SET's reply (820.1 ms) comes after the first release was sent (820.0 ms).
        let e = check(&[
            acquired(300, 1, 5000),
            released(820_000, 1, 1),
            acquired(820_100, 2, 5000),
            released(900_000, 2, 1),
        ]);
        assert_eq!((e.intervals.len(), e.overlaps.len()), (2, 0));
        assert_eq!(e.first_holder(KEY), Some(Actor::Consumer(1)));
        assert_eq!(e.verdict(), RunVerdict::right());
    }

    #[test]
    fn a_ttl_shorter_than_the_job_overlaps_after_expiry() {
        // S4c at scale 0.5: PX 250; C2 gets the key 260 ms after C1 sent its SET; C1 releases
        // (too late, → 0) at 405 ms.
        let e = check(&[
            acquired(400, 1, 250),
            acquired(260_400, 2, 250),
            released(300_000, 2, 1),
            released(405_000, 1, 0),
        ]);
        assert_eq!((e.after_expiry(), e.violations()), (1, 0));
        assert_eq!(e.overlaps[0].first, Actor::Consumer(1));
        assert_eq!(e.verdict().verdict, Verdict::Right);
    }

    #[test]
    fn a_lock_that_excludes_nobody_is_a_violation() {
        // SET without NX: both "hold" the key from the start.
        let e =
            check(&[acquired(300, 1, 5000), acquired(400, 2, 5000), released(60_000, 2, 0), released(800_000, 1, 0)]);
        assert_eq!(e.violations(), 1);
        assert_eq!(
            e.verdict().reasons,
            ["mutual exclusion broken: C2 took lock:order:42 at t=0 ms while C1 still held it"]
        );
    }

    #[test]
    fn a_holder_that_died_holds_until_its_lock_expires() {
        let died = check(&[acquired(300, 1, 500), acquired(501_000, 2, 500), released(560_000, 2, 1)]);
        assert_eq!((died.after_expiry(), died.violations()), (1, 0));
        let early = check(&[acquired(300, 1, 500), acquired(200_000, 2, 500)]);
        assert_eq!(early.violations(), 1);
    }
}
