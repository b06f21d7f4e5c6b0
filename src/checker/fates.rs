//! What became of every event a lab meant to deliver, read from the run's timeline: applied
//! (once, or twice), dropped by the consumer (skipped as stale, refused by the database, held
//! by a consumer that died), or lost (never delivered). It is Jepsen's total-queue checker for
//! the ordering labs, plus the per-key order in which events took effect.
//!
//! A drop is not a wrong run by itself — a CAS consumer drops a stale event by design, and
//! whether the state suffered is the final-state checker's call — but it is always counted and
//! printed, and a variant must declare the drops it expects (`expect.dropped`).

use super::{RunVerdict, Verdict};
use crate::handler::order::events::HandlerEvent;
use crate::timeline::{Actor, Event, EventKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An event the lab meant to deliver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intended {
    pub order: i64,
    pub version: i64,
    pub event_type: String,
}

/// Why a delivered event never changed the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// A version check found a newer version (`UPDATE 0`: CAS, keep-newest).
    Stale,
    /// A reorder buffer dropped it as older than what it had applied.
    Buffer,
    /// The database refused the write (a duplicate key): its change is lost.
    Refused,
    /// The consumer that had it died before applying it.
    ConsumerDied,
    /// Delivered and never written, for no reason the timeline shows (a run cut short).
    NotApplied,
}

/// What became of one intended event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Changed the state `times` times (2 or more: applied twice).
    Applied { times: u32 },
    /// Reached a consumer and never changed the state.
    Dropped(DropReason),
    /// Never reached any consumer.
    Lost,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFate {
    pub event: Intended,
    /// Deliveries to consumers (2 or more: redelivered, or published twice).
    pub deliveries: u32,
    pub fate: Fate,
    /// It took effect after a higher version of its order had.
    pub out_of_order: bool,
}

impl EventFate {
    pub fn applied(&self) -> bool {
        matches!(self.fate, Fate::Applied { .. })
    }
}

/// Every intended event's fate in one run, and deliveries of events nobody meant to publish.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fates {
    pub events: Vec<EventFate>,
    pub unexpected: Vec<(i64, i64)>,
}

/// The counts a report prints next to the final state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FateCounts {
    pub events: u32,
    /// Never delivered.
    pub lost: u32,
    /// Delivered, never applied.
    pub dropped: u32,
    pub applied_twice: u32,
    pub delivered_twice: u32,
    pub out_of_order: u32,
    pub unexpected: u32,
}

impl FateCounts {
    /// Events whose change never took effect: dropped or lost.
    pub fn not_applied(&self) -> u32 {
        self.dropped + self.lost
    }
}

impl Fates {
    pub fn counts(&self) -> FateCounts {
        let n = |f: &dyn Fn(&EventFate) -> bool| self.events.iter().filter(|e| f(e)).count() as u32;
        FateCounts {
            events: self.events.len() as u32,
            lost: n(&|e| e.fate == Fate::Lost),
            dropped: n(&|e| matches!(e.fate, Fate::Dropped(_))),
            applied_twice: n(&|e| matches!(e.fate, Fate::Applied { times } if times > 1)),
            delivered_twice: n(&|e| e.deliveries > 1),
            out_of_order: n(&|e| e.out_of_order),
            unexpected: self.unexpected.len() as u32,
        }
    }

    /// Events whose change never took effect, in the lab's order.
    pub fn not_applied(&self) -> impl Iterator<Item = &EventFate> {
        self.events.iter().filter(|e| !e.applied())
    }
}

/// How a timeline event changes an entry's fate, if it does.
enum Effect {
    Applied,
    Dropped(DropReason),
}

/// The entry an event is about and what it did to it: (order, entry ID, effect).
fn effect_of(kind: &EventKind) -> Option<(i64, String, Effect)> {
    if let Some(h) = kind.family::<HandlerEvent>() {
        return Some(match h {
            HandlerEvent::Inserted { entry_id, order, .. } => (order, entry_id, Effect::Applied),
            HandlerEvent::WriteFailed { entry_id, order, .. } => {
                (order, entry_id, Effect::Dropped(DropReason::Refused))
            }
            HandlerEvent::Dropped { entry_id, job, .. } => (job.order, entry_id, Effect::Dropped(DropReason::Buffer)),
            _ => return None,
        });
    }
    Some(match kind {
        EventKind::Wrote { entry_id, order, rows, version, .. } => match (*rows, version) {
            (1.., _) => (*order, entry_id.clone(), Effect::Applied),
            (0, Some(_)) => (*order, entry_id.clone(), Effect::Dropped(DropReason::Stale)),
            // An idempotent consumer's skipped copy: another copy took effect.
            (0, None) => return None,
        },
        _ => return None,
    })
}

/// Account for every intended event. An entry ID is unique only within its stream, and an
/// order lives in one stream, so an entry is named by (order, entry ID).
pub fn fates(intended: &[Intended], events: &[Event]) -> Fates {
    let wanted: BTreeSet<(i64, i64)> = intended.iter().map(|i| (i.order, i.version)).collect();
    let mut version_of: BTreeMap<(i64, String), i64> = BTreeMap::new();
    let mut deliveries: BTreeMap<(i64, i64), u32> = BTreeMap::new();
    let mut holders: BTreeMap<(i64, i64), Vec<Actor>> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut died: BTreeSet<Actor> = BTreeSet::new();
    for e in events {
        for (entry_id, job) in e.kind.delivered() {
            let key = (job.order, job.version);
            version_of.insert((job.order, entry_id), job.version);
            *deliveries.entry(key).or_default() += 1;
            holders.entry(key).or_default().push(e.actor);
            if !wanted.contains(&key) {
                unexpected.push(key);
            }
        }
        if let EventKind::Crashed { .. } = &e.kind {
            died.insert(e.actor);
        }
    }
    let mut applied: BTreeMap<(i64, i64), u32> = BTreeMap::new();
    let mut dropped: BTreeMap<(i64, i64), DropReason> = BTreeMap::new();
    let mut out_of_order: BTreeSet<(i64, i64)> = BTreeSet::new();
    let mut newest: BTreeMap<i64, i64> = BTreeMap::new();
    for (order, entry_id, effect) in events.iter().filter_map(|e| effect_of(&e.kind)) {
        let Some(&version) = version_of.get(&(order, entry_id.clone())) else { continue };
        let key = (order, version);
        match effect {
            Effect::Applied => {
                *applied.entry(key).or_default() += 1;
                let newest = newest.entry(order).or_insert(version);
                if *newest > version {
                    out_of_order.insert(key);
                }
                *newest = (*newest).max(version);
            }
            Effect::Dropped(reason) => {
                dropped.entry(key).or_insert(reason);
            }
        }
    }
    let fate_of = |key: (i64, i64), delivered: u32| match applied.get(&key) {
        Some(&times) => Fate::Applied { times },
        None if delivered == 0 => Fate::Lost,
        None => Fate::Dropped(dropped.get(&key).copied().unwrap_or_else(|| {
            let holders = holders.get(&key).map(Vec::as_slice).unwrap_or_default();
            if holders.iter().any(|a| died.contains(a)) {
                DropReason::ConsumerDied
            } else {
                DropReason::NotApplied
            }
        })),
    };
    let events = intended
        .iter()
        .map(|i| {
            let key = (i.order, i.version);
            let delivered = deliveries.get(&key).copied().unwrap_or(0);
            EventFate {
                event: i.clone(),
                deliveries: delivered,
                fate: fate_of(key, delivered),
                out_of_order: out_of_order.contains(&key),
            }
        })
        .collect();
    Fates { events, unexpected }
}

/// A delivery of an event nobody published means something else wrote to the run's keys: the
/// run cannot be judged.
pub fn unexpected_verdict(f: &Fates) -> RunVerdict {
    let mut v = RunVerdict::right();
    for (order, version) in &f.unexpected {
        v.add(Verdict::Unknown, format!("order {order} v={version} was delivered but never published by this run"));
    }
    v
}

/// Who received an event first, if anyone did (a redelivery keeps the first).
pub fn first_receiver(events: &[Event], order: i64, version: i64) -> Option<Actor> {
    events
        .iter()
        .find(|e| e.kind.delivered().iter().any(|(_, j)| j.order == order && j.version == version))
        .map(|e| e.actor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::Job;

    fn intended() -> Vec<Intended> {
        ["created", "paid"]
            .iter()
            .enumerate()
            .map(|(i, t)| Intended { order: 42, version: i as i64 + 1, event_type: t.to_string() })
            .collect()
    }

    fn ev(t_us: i64, who: u32, kind: EventKind) -> Event {
        Event { t_us, actor: Actor::Consumer(who), kind }
    }

    fn received(t_us: i64, who: u32, id: &str, t: &str, v: i64) -> Event {
        ev(t_us, who, EventKind::Received { entry_id: id.into(), job: Job::new(42, t, v), deliveries: None })
    }

    fn wrote(t_us: i64, who: u32, id: &str, version: Option<i64>, rows: u64) -> Event {
        ev(t_us, who, EventKind::Wrote { entry_id: id.into(), order: 42, status: String::new(), version, rows })
    }

    #[test]
    fn the_baseline_applies_both_and_the_old_one_out_of_order() {
        let events = [
            received(1, 1, "1-0", "created", 1),
            received(2, 2, "1-1", "paid", 2),
            wrote(50, 2, "1-1", None, 1),
            wrote(800, 1, "1-0", None, 1),
        ];
        let f = fates(&intended(), &events);
        assert_eq!(f.counts(), FateCounts { events: 2, out_of_order: 1, ..FateCounts::default() });
        assert_eq!(first_receiver(&events, 42, 1), Some(Actor::Consumer(1)));
    }

    #[test]
    fn a_stale_skip_a_buffer_drop_and_a_refused_insert_are_drops() {
        let cas = [
            received(1, 1, "1-0", "created", 1),
            received(2, 2, "1-1", "paid", 2),
            wrote(50, 2, "1-1", Some(2), 1),
            wrote(800, 1, "1-0", Some(1), 0),
        ];
        let f = fates(&intended(), &cas);
        assert_eq!(f.counts().dropped, 1);
        assert_eq!(
            f.not_applied().map(|e| (e.event.event_type.as_str(), e.fate)).collect::<Vec<_>>(),
            [("created", Fate::Dropped(DropReason::Stale))]
        );
        let buffer = [
            received(1, 1, "1-1", "paid", 2),
            wrote(500, 1, "1-1", None, 1),
            received(900, 1, "1-0", "created", 1),
            ev(
                901,
                1,
                HandlerEvent::Dropped {
                    entry_id: "1-0".into(),
                    job: Job::new(42, "created", 1),
                    reason: String::new(),
                }
                .event(),
            ),
        ];
        assert_eq!(fates(&intended(), &buffer).events[0].fate, Fate::Dropped(DropReason::Buffer));
        let insert = [
            received(1, 1, "1-0", "created", 1),
            received(1, 2, "1-1", "paid", 2),
            ev(
                100,
                1,
                HandlerEvent::Inserted { entry_id: "1-0".into(), order: 42, status: "created".into(), version: 1 }
                    .event(),
            ),
            ev(
                101,
                2,
                HandlerEvent::WriteFailed {
                    entry_id: "1-1".into(),
                    order: 42,
                    status: "paid".into(),
                    error: "duplicate key".into(),
                }
                .event(),
            ),
        ];
        assert_eq!(fates(&intended(), &insert).events[1].fate, Fate::Dropped(DropReason::Refused));
    }

    #[test]
    fn lost_died_twice_and_unexpected_are_told_apart() {
        let events = [
            received(1, 1, "1-0", "created", 1),
            ev(2, 1, EventKind::crashed(true, String::new())),
            received(3, 2, "9-9", "shipped", 3),
        ];
        let f = fates(&intended(), &events);
        assert_eq!(f.events[0].fate, Fate::Dropped(DropReason::ConsumerDied));
        assert_eq!(f.events[1].fate, Fate::Lost);
        assert_eq!(f.unexpected, [(42, 3)]);
        assert_eq!(f.counts().not_applied(), 2);
        // Published twice and applied by both copies; an idempotent skip (0 rows, no version)
        // is neither an effect nor a drop.
        let twice = [
            received(1, 1, "1-0", "created", 1),
            wrote(2, 1, "1-0", None, 1),
            received(3, 1, "1-1", "paid", 2),
            wrote(4, 1, "1-1", None, 1),
            received(5, 1, "1-2", "paid", 2),
            wrote(6, 1, "1-2", None, 1),
            received(7, 1, "1-3", "paid", 2),
            wrote(8, 1, "1-3", None, 0),
        ];
        let c = fates(&intended(), &twice).counts();
        assert_eq!((c.applied_twice, c.delivered_twice, c.dropped), (1, 1, 0));
    }

    #[test]
    fn an_entry_id_is_named_with_its_order_since_shards_repeat_ids() {
        let both = vec![
            Intended { order: 42, version: 1, event_type: "created".into() },
            Intended { order: 43, version: 1, event_type: "created".into() },
        ];
        let events = [
            ev(1, 1, EventKind::Received { entry_id: "5-0".into(), job: Job::new(42, "created", 1), deliveries: None }),
            ev(1, 2, EventKind::Received { entry_id: "5-0".into(), job: Job::new(43, "created", 1), deliveries: None }),
            ev(
                9,
                1,
                EventKind::Wrote { entry_id: "5-0".into(), order: 42, status: String::new(), version: None, rows: 1 },
            ),
            ev(
                9,
                2,
                EventKind::Wrote { entry_id: "5-0".into(), order: 43, status: String::new(), version: None, rows: 1 },
            ),
        ];
        assert_eq!(fates(&both, &events).counts(), FateCounts { events: 2, ..FateCounts::default() });
    }

    // One behaviour test per fate a report counts (dropped / lost / applied twice / out of
    // order): each fails when that fate's code is removed.

    #[test]
    fn applied_twice_a_change_that_took_effect_from_two_copies() {
        // outbox-crash: the dispatcher is killed between XADD and the mark, the next one
        // publishes the row again; a plain consumer applies both copies.
        let created = [Intended { order: 42, version: 1, event_type: "created".into() }];
        let plain = [
            received(1, 1, "1-0", "created", 1),
            wrote(2, 1, "1-0", None, 1),
            received(3, 1, "1-1", "created", 1),
            wrote(4, 1, "1-1", None, 1),
        ];
        let f = fates(&created, &plain);
        assert_eq!(f.events[0].fate, Fate::Applied { times: 2 });
        assert_eq!(f.counts(), FateCounts { events: 1, applied_twice: 1, delivered_twice: 1, ..FateCounts::default() });
        // The idempotent consumer skips the second copy (0 rows, no version): delivered twice,
        // applied once.
        let mut idempotent = plain.clone();
        idempotent[3] = wrote(4, 1, "1-1", None, 0);
        let f = fates(&created, &idempotent);
        assert_eq!(f.events[0].fate, Fate::Applied { times: 1 });
        assert_eq!(f.counts(), FateCounts { events: 1, delivered_twice: 1, ..FateCounts::default() });
    }

    #[test]
    fn lost_an_event_no_consumer_ever_received() {
        // paid was published and never delivered (a failover's lost entry); created is applied.
        let events = [received(1, 1, "1-0", "created", 1), wrote(2, 1, "1-0", None, 1)];
        let f = fates(&intended(), &events);
        assert_eq!(f.events[1].fate, Fate::Lost);
        assert_eq!(f.counts(), FateCounts { events: 2, lost: 1, ..FateCounts::default() });
        // Received by a consumer that then died is a drop, not a loss.
        let died = [
            received(1, 1, "1-0", "created", 1),
            wrote(2, 1, "1-0", None, 1),
            received(3, 2, "1-1", "paid", 2),
            ev(4, 2, EventKind::crashed(true, String::new())),
        ];
        let f = fates(&intended(), &died);
        assert_eq!(f.events[1].fate, Fate::Dropped(DropReason::ConsumerDied));
        assert_eq!(f.counts(), FateCounts { events: 2, dropped: 1, ..FateCounts::default() });
    }

    #[test]
    fn dropped_an_event_delivered_whose_change_never_took_effect() {
        // cas (S5): paid lands first, created's UPDATE … WHERE version < 1 changes 0 rows.
        let cas = [
            received(1, 1, "1-0", "created", 1),
            received(2, 2, "1-1", "paid", 2),
            wrote(50, 2, "1-1", Some(2), 1),
            wrote(800, 1, "1-0", Some(1), 0),
        ];
        let f = fates(&intended(), &cas);
        assert_eq!(f.events[0].fate, Fate::Dropped(DropReason::Stale));
        assert_eq!(f.counts(), FateCounts { events: 2, dropped: 1, ..FateCounts::default() });
        assert_eq!(f.counts().not_applied(), 1);
        // Delivered and never written, with no reason in the timeline (a run cut short).
        let cut = [received(1, 1, "1-0", "created", 1), wrote(2, 1, "1-0", None, 1), received(3, 1, "1-1", "paid", 2)];
        let f = fates(&intended(), &cut);
        assert_eq!(f.events[1].fate, Fate::Dropped(DropReason::NotApplied));
        assert_eq!(f.counts(), FateCounts { events: 2, dropped: 1, ..FateCounts::default() });
    }

    #[test]
    fn out_of_order_an_older_version_took_effect_after_a_newer_one() {
        // baseline: paid (v=2) is written at 50 ms, created (v=1) at 800 ms, over it.
        let baseline = [
            received(1, 1, "1-0", "created", 1),
            received(2, 2, "1-1", "paid", 2),
            wrote(50, 2, "1-1", None, 1),
            wrote(800, 1, "1-0", None, 1),
        ];
        let f = fates(&intended(), &baseline);
        assert_eq!((f.events[0].out_of_order, f.events[1].out_of_order), (true, false));
        assert_eq!(f.counts(), FateCounts { events: 2, out_of_order: 1, ..FateCounts::default() });
        // s1: one consumer, created then paid: in order.
        let s1 = [
            received(1, 1, "1-0", "created", 1),
            wrote(800, 1, "1-0", None, 1),
            received(801, 1, "1-1", "paid", 2),
            wrote(850, 1, "1-1", None, 1),
        ];
        assert_eq!(fates(&intended(), &s1).counts(), FateCounts { events: 2, ..FateCounts::default() });
    }
}
