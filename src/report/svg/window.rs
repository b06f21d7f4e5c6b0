//! A run over many orders does not fit a slide: it is drawn for a few of its orders, the wrong
//! ones always among them, with a title that says which.

use crate::labs::FinalItem;
use crate::report::VariantReport;
use crate::timeline::vocabulary::Belongs;
use crate::timeline::EventKind;
use std::collections::HashSet;

/// Orders a slide can show: a run over more is drawn for some of them only.
pub const SVG_MAX_ORDERS: usize = 8;

/// Events a slide can show: a run with more (thousands of jobs) is drawn up to its first this
/// many, and its title says so.
pub const SVG_MAX_EVENTS: usize = 200;

/// The variant as a slide can show it, orders first ([`order_window`]), then at most
/// [`SVG_MAX_EVENTS`] events.
pub fn readable_window(v: &VariantReport, run: u32) -> (VariantReport, Option<Vec<i64>>) {
    let (mut out, shown) = order_window(v, run);
    for r in out.run_records.iter_mut().filter(|r| r.run == run) {
        // A compact record keeps only the drawn events, and how many there were.
        let n = v.drawn_events_before_cap.filter(|_| run == 1).unwrap_or(r.events.len());
        if n > SVG_MAX_EVENTS {
            r.events.truncate(SVG_MAX_EVENTS);
            let (en, vi) = (&out.title.en, &out.title.vi);
            out.title = crate::lang::Words {
                en: format!("{en} (its first {SVG_MAX_EVENTS} of {n} events)"),
                vi: format!("{vi} ({SVG_MAX_EVENTS} sự kiện đầu trên {n})"),
            };
        }
    }
    (out, shown)
}

/// The events of run `run` its slide draws (orders windowed, then capped) and how many the
/// cap saw: what a compact record keeps of the run's events.
pub fn drawn_events(v: &VariantReport, run: u32) -> Option<(Vec<crate::timeline::Event>, usize)> {
    let (windowed, _) = order_window(v, run);
    let mut events = windowed.record(run)?.events.clone();
    let before_cap = v.drawn_events_before_cap.filter(|_| run == 1).unwrap_or(events.len());
    events.truncate(SVG_MAX_EVENTS);
    Some((events, before_cap))
}

/// The variant as a slide can show it: for a run over many orders, only the events of
/// [`SVG_MAX_ORDERS`] of its orders (half of them wrong ones, if any, then the first) and
/// events that belong to no order, with the orders shown. Other variants are returned
/// unchanged, with None.
fn order_window(v: &VariantReport, run: u32) -> (VariantReport, Option<Vec<i64>>) {
    let mut out = v.clone();
    let Some(record) = v.record(run) else { return (out, None) };
    let items: Vec<FinalItem> = v.procedure.final_state(record);
    let orders: Vec<i64> = items.iter().filter_map(|i| i.order).collect();
    if orders.len() <= SVG_MAX_ORDERS {
        return (out, None);
    }
    let mut shown: Vec<i64> =
        items.iter().filter(|i| i.is_wrong()).filter_map(|i| i.order).take(SVG_MAX_ORDERS / 2).collect();
    for o in &orders {
        if shown.len() < SVG_MAX_ORDERS && !shown.contains(o) {
            shown.push(*o);
        }
    }
    shown.sort();
    for r in out.run_records.iter_mut().filter(|r| r.run == run) {
        // Entry IDs of the shown orders, so work, acks and fan-out queueing (which carry only
        // the ID) follow; locks follow the order in their key.
        let ids: HashSet<String> = r
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Received { entry_id, job, .. } if shown.contains(&job.order) => Some(entry_id.clone()),
                _ => None,
            })
            .collect();
        r.events.retain(|e| match belongs(e) {
            Belongs::Order(o) => shown.contains(&o),
            Belongs::Entry(id) => ids.contains(&id),
            Belongs::Everywhere => true,
        });
    }
    let listed: Vec<String> = shown.iter().map(|o| format!("#{o}")).collect();
    let (en, vi) = (&v.title.en, &v.title.vi);
    let (list, n) = (listed.join(" "), orders.len());
    out.title =
        crate::lang::Words { en: format!("{en} (orders {list} of {n})"), vi: format!("{vi} (đơn {list} trên {n})") };
    (out, Some(shown))
}

/// Which orders' slide keeps an event: a core event by the order or entry it names, any other
/// by its vocabulary.
fn belongs(e: &crate::timeline::Event) -> Belongs {
    if let Some(o) = e.kind.order() {
        return Belongs::Order(o);
    }
    match &e.kind {
        EventKind::WorkStarted { entry_id, .. } | EventKind::Acked { entry_id } => Belongs::Entry(entry_id.clone()),
        EventKind::Family(f) => crate::labs::VOCABULARIES.describe(f).map_or(Belongs::Everywhere, |d| d.belongs()),
        _ => Belongs::Everywhere,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Verdict;
    use crate::handler::order::events::HandlerEvent;
    use crate::labs::Observed;
    use crate::orders::OrderRow;
    use crate::report::fixture::{ev, job, lock_race};
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::Actor;

    #[test]
    fn locks_and_queueing_of_orders_not_shown_are_left_out() {
        let mut report = lock_race(Verdict::Right);
        let v = &mut report.variants[0];
        let r = &mut v.run_records[0];
        let Observed::Stream(o) = &mut r.observed else { panic!("a stream run") };
        o.final_rows = (1..=20).map(|order| OrderRow { order, status: "paid".into(), version: 2 }).collect();
        r.events.clear();
        for order in 1..=20 {
            let id = format!("1-{order}");
            let mut j = job("paid", 2);
            j.order = order;
            let key = format!("ordlab:x:lock:order:{order}");
            r.events.push(ev(
                order,
                Actor::Consumer(1),
                EventKind::Received { entry_id: id.clone(), job: j, deliveries: None },
            ));
            r.events.push(ev(
                order,
                Actor::Consumer(1),
                HandlerEvent::Queued { entry_id: id.clone(), worker: format!("C1/#{order}") }.event(),
            ));
            r.events.push(ev(
                order,
                Actor::Consumer(1),
                HandlerEvent::LockAcquired { key: key.clone(), tries: 1, ttl_ms: 500, px_ms: 500, round_trip_us: 100 }
                    .event(),
            ));
            r.events.push(ev(
                order,
                Actor::Consumer(1),
                HandlerEvent::LockReleased { key, method: "Lua".into(), released: 1 }.event(),
            ));
        }
        let (window, shown) = readable_window(&report.variants[0], 1);
        let shown = shown.expect("20 orders are too many for a slide");
        assert_eq!(shown.len(), SVG_MAX_ORDERS);
        let kept = &window.run_records[0].events;
        assert_eq!(kept.len(), 4 * SVG_MAX_ORDERS, "received, queued, lock taken and released of each shown order");
        let lock = HandlerEvent::LockAcquired {
            key: "ordlab:ab12:load:lock:1:lock:order:791".into(),
            tries: 1,
            ttl_ms: 1,
            px_ms: 1,
            round_trip_us: 0,
        };
        assert_eq!(lock.belongs(), Belongs::Order(791));
    }
}
