//! How many handlers ran at once: a handler runs from its `work_started` to the `acked` of the
//! same entry in the same process. A strategy's handler budget (consumers, or a fan-out
//! reader's workers) bounds it; a reader that spawns a task per order does not.

use crate::timeline::{Actor, Event, EventKind};
use std::collections::HashSet;

/// The most handlers running at the same moment in a run (events in time order).
pub fn max_concurrent_handlers(events: &[Event]) -> usize {
    let mut running: HashSet<(Actor, &str)> = HashSet::new();
    let mut most = 0;
    for e in events {
        match &e.kind {
            EventKind::WorkStarted { entry_id, .. } => {
                running.insert((e.actor, entry_id));
                most = most.max(running.len());
            }
            EventKind::Acked { entry_id } => {
                running.remove(&(e.actor, entry_id.as_str()));
            }
            _ => {}
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use crate::labs::load::concurrency::*;

    fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us, actor, kind }
    }

    fn start(t: i64, a: u32, id: &str) -> Event {
        ev(t, Actor::Consumer(a), EventKind::WorkStarted { entry_id: id.into(), ms: 2.0 })
    }

    fn ack(t: i64, a: u32, id: &str) -> Event {
        ev(t, Actor::Consumer(a), EventKind::Acked { entry_id: id.into() })
    }

    #[test]
    fn overlapping_handlers_are_counted_across_processes() {
        // C1 runs 1-0 and then 1-2; C2 runs 1-1 meanwhile; a fan-out C3 runs two at once.
        let events = vec![
            start(0, 1, "1-0"),
            start(1, 2, "1-1"),
            ack(5, 1, "1-0"),
            start(6, 1, "1-2"),
            start(7, 3, "1-3"),
            start(8, 3, "1-4"),
            ack(9, 2, "1-1"),
            ack(10, 1, "1-2"),
        ];
        assert_eq!(max_concurrent_handlers(&events), 4);
    }

    #[test]
    fn one_consumer_never_overlaps_itself() {
        let events = vec![start(0, 1, "1-0"), ack(5, 1, "1-0"), start(6, 1, "1-1"), ack(9, 1, "1-1")];
        assert_eq!(max_concurrent_handlers(&events), 1);
    }
}
