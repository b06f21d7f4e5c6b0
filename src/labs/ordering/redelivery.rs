//! Redelivery checker: which entries the claimer (`reaper`) received after a consumer had
//! received them, under the same entry ID, with the delivery count the server reported. A
//! claim that produced a new ID (a re-publish) is not a redelivery: that ID was never
//! received before. This settles seed 001's claim that the ID "changes on every claim".

use crate::timeline::{Actor, Event, EventKind};
use std::collections::HashSet;

/// One entry the claimer received after a consumer had received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redelivered {
    pub entry_id: String,
    /// Who received it first.
    pub first: Actor,
    /// The delivery count the server reported to the claimer.
    pub deliveries: Option<u64>,
}

pub fn redelivered(events: &[Event]) -> Vec<Redelivered> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.actor == Actor::Reaper) {
        let EventKind::Received { entry_id, deliveries, .. } = &e.kind else { continue };
        let first = events.iter().find(|f| {
            f.actor != Actor::Reaper && f.t_us <= e.t_us && f.kind.delivered().iter().any(|(id, _)| id == entry_id)
        });
        if let Some(first) = first {
            out.push(Redelivered { entry_id: entry_id.clone(), first: first.actor, deliveries: *deliveries });
        }
    }
    out
}

/// Published entries nobody ever received.
pub fn never_delivered(events: &[Event]) -> usize {
    let received: HashSet<String> = events.iter().flat_map(|e| e.kind.delivered()).map(|(id, _)| id).collect();
    events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Published { entry_id, .. } if !received.contains(entry_id)))
        .count()
}

#[cfg(test)]
mod tests {
    use crate::labs::ordering::redelivery::*;
    use crate::timeline::Job;

    fn received(t_us: i64, actor: Actor, id: &str, deliveries: Option<u64>) -> Event {
        Event {
            t_us,
            actor,
            kind: EventKind::Received { entry_id: id.into(), job: Job::new(42, "created", 1), deliveries },
        }
    }

    #[test]
    fn a_claimed_entry_keeps_its_id_and_counts_a_second_delivery() {
        let events = [
            received(0, Actor::Consumer(1), "1-0", None),
            received(10, Actor::Consumer(2), "1-1", None),
            received(400, Actor::Reaper, "1-0", Some(2)),
        ];
        assert_eq!(
            redelivered(&events),
            vec![Redelivered { entry_id: "1-0".into(), first: Actor::Consumer(1), deliveries: Some(2) }]
        );
    }

    #[test]
    fn a_new_id_is_not_a_redelivery_and_unread_entries_are_counted() {
        let events = [received(0, Actor::Consumer(1), "1-0", None), received(400, Actor::Reaper, "9-0", Some(1))];
        assert!(redelivered(&events).is_empty());
        let published = |id: &str| Event {
            t_us: 0,
            actor: Actor::Producer,
            kind: EventKind::Published { entry_id: id.into(), job: Job::new(42, "created", 1), attempt: 1 },
        };
        assert_eq!(
            never_delivered(&[published("1-0"), published("1-1"), received(1, Actor::Consumer(1), "1-0", None)]),
            1
        );
    }
}
