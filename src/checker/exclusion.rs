//! Mutual exclusion over lock-held intervals: no two consumers may be inside the critical
//! section of one key at once, except after the first one's lock expired (its TTL ran out
//! while it worked) — the documented limit of a TTL lock, counted, never hidden.
//!
//! An interval runs from the reply to the successful `SET … NX PX` to the moment its release
//! was sent. With a correct lock two intervals can never overlap: a release is sent before the
//! server deletes the key, and the next holder's reply arrives after the server set it for
//! them. Stamping a release at its reply instead would show overlaps that never happened.
//!
//! A worker from a command line takes and releases its lock at the wire: the interposer's
//! records of `SET key token PX ms NX` answered `OK` and of its release (`DELEX key IFEQ token`,
//! a Lua compare-and-delete by `EVAL`, or a plain `DEL key`, which deletes the key whoever holds
//! it) give the same intervals, timed by the send and reply the interposer stamped.

use crate::checker::{RunVerdict, Verdict};
use crate::handler::order::events::HandlerEvent;
use crate::timeline::{Actor, Event, EventKind};

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
    /// When the key's TTL ran out as a step of the explorer (`PEXPIRE key 0` by the harness)
    /// while this holder held it.
    pub expired_us: Option<i64>,
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

/// A lock taken or released as one event says: ordlab's own handler's, or a wire record.
enum LockStep {
    Acquired {
        key: String,
        px_ms: u64,
        sent_us: i64,
    },
    Released {
        key: String,
        released: i64,
        sent_us: i64,
    },
    /// The explorer made the key's TTL run out (a timer step of the harness).
    Expired {
        key: String,
    },
}

fn lock_step(e: &Event) -> Option<LockStep> {
    if let EventKind::ServerCommand { args, reply, error: false, round_trip_us, .. } = &e.kind {
        if e.actor == Actor::Runner {
            let expired = args.len() == 3 && args[0].eq_ignore_ascii_case("PEXPIRE") && args[2] == "0";
            return (expired && reply == "1").then(|| LockStep::Expired { key: args[1].clone() });
        }
        let sent_us = e.t_us - round_trip_us.unwrap_or(0);
        return match wire_lock(args, reply)? {
            WireLock::Acquired { key, px_ms } => Some(LockStep::Acquired { key, px_ms, sent_us }),
            WireLock::Released { key, released } => Some(LockStep::Released { key, released, sent_us }),
        };
    }
    match e.kind.family::<HandlerEvent>()? {
        HandlerEvent::LockAcquired { key, px_ms, round_trip_us, .. } => {
            Some(LockStep::Acquired { key, px_ms, sent_us: e.t_us - round_trip_us })
        }
        HandlerEvent::LockReleased { key, released, .. } => Some(LockStep::Released { key, released, sent_us: e.t_us }),
        _ => None,
    }
}

/// What a recorded Redis command did to a lock, if it took or released one.
#[derive(Debug, PartialEq)]
enum WireLock {
    /// `SET key token … NX … PX ms` (or `EX s`) answered `OK`.
    Acquired { key: String, px_ms: u64 },
    /// `DELEX key IFEQ token`, or `EVAL <a script that deletes> 1 key token`, answered with
    /// the number of keys it deleted.
    Released { key: String, released: i64 },
}

/// The key a recorded `DELEX key IFEQ token` or compare-and-delete `EVAL` releases, whatever
/// its reply: which of the two a worker sends depends on the server's version (a snapshot
/// shows `[release]`, as for ordlab's own consumer).
pub fn wire_release_key(args: &[String]) -> Option<String> {
    if args.first().is_some_and(|c| c.eq_ignore_ascii_case("DEL")) {
        return None;
    }
    match wire_lock(args, "0")? {
        WireLock::Released { key, .. } => Some(key),
        WireLock::Acquired { .. } => None,
    }
}

fn wire_lock(args: &[String], reply: &str) -> Option<WireLock> {
    let word = |i: usize| args.get(i).map(|a| a.to_ascii_uppercase());
    match word(0)?.as_str() {
        "SET" if reply == "OK" => {
            let options: Vec<String> = args.iter().skip(3).map(|a| a.to_ascii_uppercase()).collect();
            let after = |name: &str| options.iter().position(|o| o == name).and_then(|i| options.get(i + 1));
            let px_ms = match (after("PX"), after("EX")) {
                (Some(ms), _) => ms.parse().ok()?,
                (None, Some(s)) => s.parse::<u64>().ok()? * 1000,
                (None, None) => return None,
            };
            options.iter().any(|o| o == "NX").then(|| WireLock::Acquired { key: args[1].clone(), px_ms })
        }
        "DELEX" if word(2).as_deref() == Some("IFEQ") => {
            Some(WireLock::Released { key: args.get(1)?.clone(), released: reply.parse().ok()? })
        }
        "EVAL" if word(1).is_some_and(|script| script.contains("DEL")) && word(2).as_deref() == Some("1") => {
            Some(WireLock::Released { key: args.get(3)?.clone(), released: reply.parse().ok()? })
        }
        // A release without a token: it ends its sender's hold, and deletes whoever's lock the
        // key is by then (its reply says only that a key was deleted).
        "DEL" if args.len() == 2 => Some(WireLock::Released { key: args[1].clone(), released: reply.parse().ok()? }),
        _ => None,
    }
}

/// Pair each consumer's acquisitions with its next release of the same key.
pub fn intervals(events: &[Event]) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for e in events {
        match lock_step(e) {
            Some(LockStep::Acquired { key, px_ms, sent_us }) => out.push(Interval {
                key,
                holder: e.actor,
                sent_us,
                acquired_us: e.t_us,
                px_ms,
                released_us: None,
                released: None,
                expired_us: None,
            }),
            Some(LockStep::Released { key, released, sent_us }) => {
                let open =
                    out.iter_mut().rev().find(|i| i.holder == e.actor && i.key == key && i.released_us.is_none());
                if let Some(i) = open {
                    i.released_us = Some(sent_us);
                    i.released = Some(released);
                }
            }
            Some(LockStep::Expired { key }) => {
                // The key's holder is the newest open holder of it (a worker's key names may
                // carry the run's prefix: compare by suffix either way).
                let suffix = |long: &str, short: &str| long.strip_suffix(short).is_some_and(|p| p.ends_with(':'));
                let same = |k: &str| k == key || suffix(&key, k) || suffix(k, &key);
                let open = out.iter_mut().rev().find(|i| same(&i.key) && i.released_us.is_none());
                if let Some(i) = open.filter(|i| i.expired_us.is_none()) {
                    i.expired_us = Some(e.t_us);
                }
            }
            None => {}
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
            let by_ttl = a.sent_us + a.px_ms as i64 * 1000 - EXPIRY_SLACK_US;
            let expired_by = a.expired_us.map_or(by_ttl, |t| t.min(by_ttl));
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
    fn a_ttl_run_out_by_the_explorer_counts_as_expiry() {
        // Under the explorer the PX never runs out by the clock; the harness's PEXPIRE is the expiry.
        let never = crate::fault::NEVER_BY_THE_CLOCK_MS;
        let expire = |t_us: i64| Event {
            t_us,
            actor: Actor::Runner,
            kind: EventKind::ServerCommand {
                server: crate::timeline::ServerKind::Redis,
                connection: 0,
                args: vec!["PEXPIRE".into(), format!("ordlab:n1:{KEY}"), "0".into()],
                reply: "1".into(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
        };
        let overlapping = [acquired(300, 1, never), acquired(900, 2, never), released(950, 2, 1), released(990, 1, 0)];
        assert_eq!(check(&overlapping).violations(), 1, "no expiry: a broken lock");
        let mut expired = overlapping.to_vec();
        expired.insert(1, expire(600));
        let e = check(&expired);
        assert_eq!((e.after_expiry(), e.violations()), (1, 0));
        assert_eq!(e.intervals[0].expired_us, Some(600));
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

    /// A wire record of worker `who`: `args` answered `reply`, sent `round_trip_us` before.
    fn wire(t_us: i64, who: u32, args: &str, reply: &str, round_trip_us: i64) -> Event {
        let kind = EventKind::ServerCommand {
            server: crate::timeline::ServerKind::Redis,
            connection: 1,
            args: args.split(' ').map(String::from).collect(),
            reply: reply.into(),
            error: false,
            entries: Vec::new(),
            round_trip_us: Some(round_trip_us),
        };
        Event { t_us, actor: Actor::Consumer(who), kind }
    }

    #[test]
    fn a_worker_s_lock_is_read_from_the_wire() {
        // redis-py's order (PX before NX); the release counts from its send (820.0 ms), before
        // the next holder's reply (820.1 ms), though its own reply came after (820.3 ms).
        let e = check(&[
            wire(300, 1, "SET lock:order:42 C1:1-0 PX 5000 NX", "OK", 200),
            wire(20_300, 2, "SET lock:order:42 C2:1-1 PX 5000 NX", "(nil)", 200),
            wire(820_300, 1, "DELEX lock:order:42 IFEQ C1:1-0", "1", 300),
            wire(820_100, 2, "SET lock:order:42 C2:1-1 PX 5000 NX", "OK", 100),
            wire(900_000, 2, "EVAL if_redis.call('get',KEYS[1])==ARGV[1]_then_return_redis.call('del',KEYS[1]) 1 lock:order:42 C2:1-1", "1", 100),
        ]);
        assert_eq!(e.intervals.len(), 2, "{e:?}");
        assert_eq!(
            (e.intervals[0].sent_us, e.intervals[0].released_us, e.intervals[0].px_ms),
            (100, Some(820_000), 5000)
        );
        assert_eq!((e.intervals[1].released_us, e.intervals[1].released), (Some(899_900), Some(1)));
        assert_eq!((e.overlaps.len(), e.first_holder(KEY)), (0, Some(Actor::Consumer(1))));
        // A SET without NX is no lock; one with EX counts in seconds.
        assert_eq!(wire_lock(&["SET".into(), "k".into(), "v".into(), "PX".into(), "5".into()], "OK"), None);
        let ex = ["SET", "k", "v", "NX", "EX", "2"].map(String::from);
        assert_eq!(wire_lock(&ex, "OK"), Some(WireLock::Acquired { key: "k".into(), px_ms: 2000 }));
        let delex = ["DELEX", "k", "IFEQ", "t"].map(String::from);
        assert_eq!((wire_release_key(&delex), wire_release_key(&ex)), (Some("k".into()), None));
    }

    #[test]
    fn a_worker_s_lock_that_outlives_its_ttl_overlaps_after_expiry() {
        // S4c from the wire: C1 sets PX 500 at 0.3 ms; C2 gets the key at 510 ms; C1's late
        // release deletes nothing.
        let e = check(&[
            wire(300, 1, "SET lock:order:42 C1:1-0 PX 500 NX", "OK", 200),
            wire(510_000, 2, "SET lock:order:42 C2:1-1 PX 500 NX", "OK", 100),
            wire(568_000, 2, "DELEX lock:order:42 IFEQ C2:1-1", "1", 100),
            wire(810_000, 1, "DELEX lock:order:42 IFEQ C1:1-0", "0", 100),
        ]);
        assert_eq!((e.after_expiry(), e.violations(), e.intervals[0].released), (1, 0, Some(0)));
    }

    #[test]
    fn a_plain_del_ends_its_sender_s_hold_and_a_third_holder_then_breaks_exclusion() {
        // The lock-ttl check with a DEL release: C1's job outlives its PX 500; C2 takes the key
        // at 523 ms; C1's DEL at 710 ms deletes C2's lock, and C1 takes it again at 711 ms,
        // while C2 holds it (until 1023 ms at the latest).
        let e = check(&[
            wire(1_000, 1, "SET lock:order:42 t1 NX PX 500", "OK", 100),
            wire(523_000, 2, "SET lock:order:42 t2 NX PX 500", "OK", 100),
            wire(710_000, 1, "DEL lock:order:42", "1", 100),
            wire(711_000, 1, "SET lock:order:42 t3 NX PX 500", "OK", 100),
            wire(1_230_000, 2, "DEL lock:order:42", "0", 100),
        ]);
        assert_eq!(e.intervals[0].released_us, Some(709_900));
        assert_eq!((e.after_expiry(), e.violations()), (1, 1), "{e:?}");
        assert_eq!((e.overlaps[1].first, e.overlaps[1].second), (Actor::Consumer(2), Actor::Consumer(1)));
        // A released hold no longer overlaps a later holder; DEL is no `[release]` of a snapshot.
        let released = check(&[
            wire(1_000, 1, "SET lock:order:42 t1 NX PX 5000", "OK", 100),
            wire(163_000, 1, "DEL lock:order:42", "1", 100),
            wire(535_000, 2, "SET lock:order:42 t2 NX PX 5000", "OK", 100),
        ]);
        assert_eq!(released.overlaps.len(), 0, "{released:?}");
        assert_eq!(wire_release_key(&["DEL".into(), "k".into()]), None);
    }

    #[test]
    fn a_holder_that_died_holds_until_its_lock_expires() {
        let died = check(&[acquired(300, 1, 500), acquired(501_000, 2, 500), released(560_000, 2, 1)]);
        assert_eq!((died.after_expiry(), died.violations()), (1, 0));
        let early = check(&[acquired(300, 1, 500), acquired(200_000, 2, 500)]);
        assert_eq!(early.violations(), 1);
    }
}
