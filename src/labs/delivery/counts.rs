//! What a failover did to a consumer group, counted from what the old primary had confirmed
//! (each role's replies before it moved to the new primary) and from the promoted replica's
//! own state: entries lost, acknowledgements undone, entries delivered again, and orders whose
//! stored state went back to an older one. Pure: the lab reads the servers and the timeline,
//! this counts.

use crate::timeline::{Actor, EventKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// An entry as a consumer received it: ID, order, version (an ID alone could be reused by
/// the new primary in the same millisecond as a lost one).
pub type EntryKey = (String, i64, i64);

/// What the old primary confirmed, as the roles saw its replies: everything a role did before
/// its own `reconnected`.
#[derive(Debug, Default, PartialEq)]
pub struct OldPrimary {
    /// Entry IDs of XADD replies to the producer.
    pub confirmed: Vec<String>,
    pub received: HashSet<EntryKey>,
    /// Entry IDs of XACK replies to consumers.
    pub acked: HashSet<String>,
    /// Entry IDs a consumer applied (wrote) before it moved.
    pub applied: HashSet<String>,
    /// What consumers received from the new primary, in order (repeats kept).
    pub received_after: Vec<EntryKey>,
}

/// Split a run's events (in time order) at each role's `reconnected`.
pub fn split<'a>(events: impl IntoIterator<Item = (Actor, &'a EventKind)>) -> OldPrimary {
    let mut moved: HashSet<Actor> = HashSet::new();
    let mut old = OldPrimary::default();
    for (actor, kind) in events {
        let before = !moved.contains(&actor);
        match kind {
            EventKind::Reconnected { .. } => {
                moved.insert(actor);
            }
            EventKind::Published { entry_id, .. } if before => old.confirmed.push(entry_id.clone()),
            EventKind::Received { entry_id, job, .. } => {
                let key = (entry_id.clone(), job.order, job.version);
                if before {
                    old.received.insert(key);
                } else {
                    old.received_after.push(key);
                }
            }
            EventKind::Acked { entry_id } if before => {
                old.acked.insert(entry_id.clone());
            }
            EventKind::Wrote { entry_id, .. } if before => {
                old.applied.insert(entry_id.clone());
            }
            _ => {}
        }
    }
    old
}

/// The promoted replica's stream and group right after `REPLICAOF NO ONE`.
#[derive(Debug, Default, PartialEq)]
pub struct Promoted {
    pub entries: HashSet<String>,
    pub last_delivered: String,
    pub pending: HashSet<String>,
}

/// The counts of one failover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailoverCounts {
    /// XADDs the old primary confirmed.
    pub confirmed: u32,
    /// Confirmed, missing on the new primary, and applied by a consumer before the crash.
    pub lost_applied: u32,
    /// Confirmed, missing on the new primary, and never applied: gone for good.
    pub lost_never_applied: u32,
    /// Acknowledged on the old primary; pending or not yet delivered on the new one.
    pub acks_lost: u32,
    /// Received again from the new primary after the old one had the ack.
    pub redelivered_acked: u32,
    /// Received again from the new primary, never acknowledged on the old one (in a handler
    /// at the crash).
    pub redelivered_in_flight: u32,
}

impl FailoverCounts {
    pub fn lost(&self) -> u32 {
        self.lost_applied + self.lost_never_applied
    }

    pub fn redelivered(&self) -> u32 {
        self.redelivered_acked + self.redelivered_in_flight
    }
}

pub fn count(old: &OldPrimary, new: &Promoted) -> FailoverCounts {
    let undelivered = |id: &str| crate::streams::id_order(id) > crate::streams::id_order(&new.last_delivered);
    let lost: Vec<&String> = old.confirmed.iter().filter(|id| !new.entries.contains(*id)).collect();
    let again: HashSet<&EntryKey> = old.received_after.iter().filter(|k| old.received.contains(*k)).collect();
    let acked_before = |k: &&&EntryKey| old.acked.contains(&k.0);
    FailoverCounts {
        confirmed: old.confirmed.len() as u32,
        lost_applied: lost.iter().filter(|id| old.applied.contains(**id)).count() as u32,
        lost_never_applied: lost.iter().filter(|id| !old.applied.contains(**id)).count() as u32,
        acks_lost: old
            .acked
            .iter()
            .filter(|id| new.entries.contains(*id) && (new.pending.contains(*id) || undelivered(id)))
            .count() as u32,
        redelivered_acked: again.iter().filter(acked_before).count() as u32,
        redelivered_in_flight: again.iter().filter(|k| !acked_before(k)).count() as u32,
    }
}

/// Orders whose stored version is below a version a consumer wrote: a stale event overwrote
/// a newer state. `written`: (order, version) of every write that changed a row; `stored`:
/// order → version after the run.
pub fn stale_orders(written: &[(i64, i64)], stored: &BTreeMap<i64, i64>) -> Vec<(i64, i64, i64)> {
    let mut newest: BTreeMap<i64, i64> = BTreeMap::new();
    for &(order, v) in written {
        let e = newest.entry(order).or_insert(v);
        *e = (*e).max(v);
    }
    newest.into_iter().filter_map(|(order, v)| stored.get(&order).filter(|s| **s < v).map(|s| (order, *s, v))).collect()
}

#[cfg(test)]
mod tests {
    use crate::labs::delivery::counts::*;
    use crate::timeline::Job;

    fn ids(list: &[&str]) -> HashSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn key(id: &str, v: i64) -> EntryKey {
        (id.to_string(), 42, v)
    }

    /// Six entries confirmed by the old primary. The replica got 1–4 and saw 1–2 delivered
    /// (2 still pending, 3–4 not delivered); 5–6 never reached it.
    fn scene() -> (OldPrimary, Promoted) {
        let old = OldPrimary {
            confirmed: ["1-0", "2-0", "3-0", "4-0", "5-0", "6-0"].map(String::from).to_vec(),
            received: ["1-0", "2-0", "3-0", "4-0", "5-0"].iter().map(|id| key(id, 1)).collect(),
            acked: ids(&["1-0", "2-0", "3-0", "5-0"]),
            applied: ids(&["1-0", "2-0", "3-0", "4-0", "5-0"]),
            received_after: Vec::new(),
        };
        let new = Promoted {
            entries: ids(&["1-0", "2-0", "3-0", "4-0"]),
            last_delivered: "2-0".into(),
            pending: ids(&["2-0"]),
        };
        (old, new)
    }

    #[test]
    fn losses_are_split_by_whether_they_were_applied() {
        let (old, new) = scene();
        let c = count(&old, &new);
        assert_eq!((c.lost_applied, c.lost_never_applied, c.lost()), (1, 1, 2));
    }

    #[test]
    fn an_ack_is_lost_when_the_new_primary_has_the_entry_pending_or_undelivered() {
        let (old, new) = scene();
        // 1: acked there too. 2: pending there. 3: past last-delivered. 5: lost with its entry.
        assert_eq!(count(&old, &new).acks_lost, 2);
    }

    #[test]
    fn redeliveries_are_told_apart_by_whether_the_old_primary_had_the_ack() {
        let (mut old, new) = scene();
        // 2 and 3 had been acked, 4 was in a handler; 3 comes twice; 7-0 is new.
        old.received_after = vec![key("2-0", 1), key("3-0", 1), key("4-0", 1), key("3-0", 1), key("7-0", 1)];
        let c = count(&old, &new);
        assert_eq!((c.redelivered_acked, c.redelivered_in_flight), (2, 1));
    }

    #[test]
    fn each_role_moves_at_its_own_reconnect() {
        let job = |v| Job::new(42, if v == 1 { "created" } else { "paid" }, v);
        let (p, c1, c2) = (Actor::Producer, Actor::Consumer(1), Actor::Consumer(2));
        let kinds = [
            (p, EventKind::Published { entry_id: "1-0".into(), job: job(1), attempt: 1 }),
            (c1, EventKind::Received { entry_id: "1-0".into(), job: job(1), deliveries: None }),
            (c1, EventKind::Reconnected { server: "replica".into() }),
            // C2 had not noticed yet: still the old primary.
            (c2, EventKind::Received { entry_id: "1-1".into(), job: job(2), deliveries: None }),
            (c2, EventKind::Acked { entry_id: "1-1".into() }),
            (c1, EventKind::Received { entry_id: "1-0".into(), job: job(1), deliveries: None }),
            (p, EventKind::Reconnected { server: "replica".into() }),
            (p, EventKind::Published { entry_id: "2-0".into(), job: job(2), attempt: 2 }),
        ];
        let old = split(kinds.iter().map(|(a, k)| (*a, k)));
        assert_eq!(old.confirmed, ["1-0"]);
        assert_eq!(old.acked, ids(&["1-1"]));
        assert_eq!(old.received.len(), 2);
        assert_eq!(old.received_after, [key("1-0", 1)]);
    }

    #[test]
    fn stale_is_a_stored_version_below_one_that_was_written() {
        let written = [(42, 1), (42, 2), (42, 1), (43, 1), (43, 2)];
        let stored = BTreeMap::from([(42, 1), (43, 2)]);
        assert_eq!(stale_orders(&written, &stored), vec![(42, 1, 2)]);
    }
}
