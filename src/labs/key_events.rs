//! The events a run's verdict rests on: the death, the failed publish, the write that
//! overwrote a newer state, the last write of an order left wrong, an effect applied twice,
//! and every event its vocabulary calls key (a probe, a dead letter). A picture too long to
//! draw whole is drawn in windows around them (`report::svg::window`), so it shows the moment
//! that matters, never only a run's first events.
//!
//! [`common`] is what every kind gets ([`Judge::key_events`](crate::labs::Judge::key_events)'s
//! default); a kind whose verdict rests on something else (a job its checker counts as lost)
//! adds those events with [`naming_jobs`] or its own search, and a family event says it is key
//! by [`Vocabulary::is_key`](crate::timeline::vocabulary::Vocabulary::is_key). Pure: events in,
//! indices into them out, the most important first (a picture that cannot draw every key
//! draws the first ones), possibly repeated.

use crate::lang::Lang;
use crate::timeline::vocabulary::{Drawing, Glyph, Redactor, Wording};
use crate::timeline::{EffectOutcome, Event, EventKind};
use std::collections::{HashMap, HashSet};

/// Glyphs that say something went wrong where they are drawn: a family event drawn with one
/// of them is key without saying so.
const ALARMS: [Glyph; 6] =
    [Glyph::Crash, Glyph::Failed, Glyph::Overwrote, Glyph::OutboxFailed, Glyph::SqlError, Glyph::Expired];

/// How much a key event weighs (less first): what made the state wrong, then what the
/// vocabulary calls key or draws as an alarm, then deaths, then failures absorbed or not.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Weight {
    Wrong,
    Marked,
    Death,
    Failure,
}

/// The events every kind's verdict may rest on, by index into `events`, the most important
/// first (then by time): the last write of each order in `wrong_orders`, writes (and family
/// `Applied` steps) that land after a newer version of their order and side effects applied a
/// second time; every family event that is key or drawn with an alarm glyph; crashes, killed
/// servers and reconnections; failed publishes, refused or failed statements, side effects
/// refused or replayed.
pub fn common(events: &[Event], wrong_orders: &[i64]) -> Vec<usize> {
    let wording = Wording { lang: Lang::En, many_orders: true, redact: Redactor::NONE };
    let mut order_of_entry: HashMap<&str, (i64, i64)> = HashMap::new();
    let mut newest: HashMap<i64, i64> = HashMap::new();
    let mut last_write: HashMap<i64, usize> = HashMap::new();
    let mut effects: HashSet<(&str, &str)> = HashSet::new();
    let mut keys: Vec<(Weight, usize)> = Vec::new();
    let mut by_time: Vec<usize> = (0..events.len()).collect();
    by_time.sort_by_key(|&i| events[i].t_us);
    for &i in &by_time {
        let weight = match &events[i].kind {
            EventKind::Crashed { .. } | EventKind::ServerKilled { .. } | EventKind::Reconnected { .. } => {
                Some(Weight::Death)
            }
            EventKind::PublishFailed { .. } => Some(Weight::Failure),
            EventKind::SqlDone { status, .. } => {
                (*status == crate::timeline::SqlStatus::Failed).then_some(Weight::Failure)
            }
            EventKind::Received { entry_id, job, .. } | EventKind::Published { entry_id, job, .. } => {
                order_of_entry.insert(entry_id, (job.order, job.version));
                None
            }
            EventKind::Wrote { entry_id, order, rows, .. } => {
                last_write.insert(*order, i);
                match order_of_entry.get(entry_id.as_str()) {
                    Some(&(_, version)) if *rows > 0 => {
                        later_than_newest(&mut newest, *order, version).then_some(Weight::Wrong)
                    }
                    _ => None,
                }
            }
            EventKind::Effect { job, effect, outcome, .. } => match outcome {
                EffectOutcome::Applied => (!effects.insert((job, effect))).then_some(Weight::Wrong),
                EffectOutcome::Replayed | EffectOutcome::Refused => Some(Weight::Failure),
            },
            EventKind::Family(f) => match crate::labs::VOCABULARIES.describe(f) {
                Some(d) if d.is_key() => Some(Weight::Marked),
                Some(d) => match d.drawing(&wording) {
                    Drawing::Mark(glyph, _) => ALARMS.contains(&glyph).then_some(Weight::Marked),
                    Drawing::Applied { order, version, .. } => {
                        last_write.insert(order, i);
                        later_than_newest(&mut newest, order, version).then_some(Weight::Wrong)
                    }
                    _ => None,
                },
                None => None,
            },
            _ => None,
        };
        if let Some(w) = weight {
            keys.push((w, i));
        }
    }
    keys.extend(wrong_orders.iter().filter_map(|o| last_write.get(o)).map(|&i| (Weight::Wrong, i)));
    let when: HashMap<usize, usize> = by_time.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    keys.sort_by_key(|&(w, i)| (w, when[&i]));
    keys.into_iter().map(|(_, i)| i).collect()
}

/// Records `version` of `order` as applied; true when a newer one was applied before it.
fn later_than_newest(newest: &mut HashMap<i64, i64>, order: i64, version: i64) -> bool {
    let before = newest.get(&order).copied();
    newest.insert(order, before.map_or(version, |n| n.max(version)));
    before.is_some_and(|n| n > version)
}

/// The events that name one of `jobs` (a side effect, or a family event whose `job` field is
/// one of them): what a kind adds when its checker counts jobs lost or doubled.
pub fn naming_jobs(events: &[Event], jobs: &HashSet<String>) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| match &e.kind {
            EventKind::Effect { job, .. } => jobs.contains(job),
            EventKind::Family(f) => f.field_str("job").is_some_and(|j| jobs.contains(j)),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::{ev, job};
    use crate::timeline::Actor;

    fn wrote(t: i64, entry: &str, order: i64) -> Event {
        let kind = EventKind::Wrote { entry_id: entry.into(), order, status: "x".into(), version: None, rows: 1 };
        ev(t, Actor::Consumer(1), kind)
    }

    fn received(t: i64, entry: &str, event_type: &str, version: i64) -> Event {
        ev(
            t,
            Actor::Consumer(1),
            EventKind::Received { entry_id: entry.into(), job: job(event_type, version), deliveries: None },
        )
    }

    #[test]
    fn a_stale_overwrite_and_the_last_write_of_a_wrong_order_are_key() {
        let events = vec![
            received(1, "1-1", "created", 1),
            received(2, "1-2", "paid", 2),
            wrote(3, "1-2", 42),
            wrote(10, "1-1", 42),
        ];
        assert_eq!(common(&events, &[]), [3], "created (v=1) after paid (v=2): the overwrite");
        assert_eq!(common(&events, &[42]), [3, 3], "and the order's last write, once more");
        let in_order = vec![received(1, "1-1", "created", 1), wrote(3, "1-1", 42)];
        assert!(common(&in_order, &[]).is_empty(), "nothing went wrong: no key");
    }

    #[test]
    fn crashes_and_doubled_effects_are_key_and_jobs_are_found_by_name() {
        let effect = |t: i64, job: &str, outcome| {
            let kind = EventKind::Effect {
                job: job.into(),
                effect: "email".into(),
                requested_by: Actor::Consumer(1),
                idem_key: None,
                outcome,
            };
            ev(t, Actor::Sink, kind)
        };
        let events = vec![
            effect(1, "j1", EffectOutcome::Applied),
            ev(2, Actor::Consumer(1), EventKind::crashed(true, "after the effect")),
            effect(3, "j1", EffectOutcome::Applied),
            effect(4, "j2", EffectOutcome::Applied),
        ];
        assert_eq!(common(&events, &[]), [2, 1], "the doubled effect first, then the death");
        let jobs: HashSet<String> = ["j2".to_string()].into();
        assert_eq!(naming_jobs(&events, &jobs), [3]);
    }
}
