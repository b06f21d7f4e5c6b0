//! A run over many orders or many events does not fit a slide: it is drawn for a few of its
//! orders, the wrong ones always among them, and a run of more events than a slide holds is
//! drawn in windows around the events its verdict rests on (its [key
//! events](crate::labs::key_events): the probe, the death, the wrong write), each cut
//! marked on the picture with what was left out — never as its first events only.

use crate::labs::FinalItem;
use crate::report::{Drawn, DrawnWindow, VariantReport};
use crate::timeline::vocabulary::Belongs;
use crate::timeline::{Event, EventKind};
use std::collections::HashSet;

/// Orders a slide can show: a run over more is drawn for some of them only.
pub const SVG_MAX_ORDERS: usize = 8;

/// Events a slide can show: a run with more (thousands of jobs) is drawn in windows around its
/// key events, at most this many in all.
pub const SVG_MAX_EVENTS: usize = 200;

/// Events drawn from a long run's start (what was set up), before the windows of its keys.
const HEAD: usize = 12;

/// Two windows this few events apart are drawn as one (the events between them too).
const JOIN: usize = 4;

/// The variant as a slide can show it, orders first ([`order_window`]), then at most
/// [`SVG_MAX_EVENTS`] events of run `run` in windows around its key events, with the returned
/// copy's `drawn` saying where it was cut (None: drawn whole). A compact record's run 1 is
/// already cut (its `drawn` says where); an older record's is its first events.
pub fn readable_window(v: &VariantReport, run: u32) -> (VariantReport, Option<Vec<i64>>) {
    let (mut out, shown) = order_window(v, run);
    out.drawn = None;
    let Some(r) = out.run_records.iter_mut().find(|r| r.run == run) else { return (out, shown) };
    let drawn = if run == 1 && v.drawn.is_some() {
        v.drawn.clone()
    } else if let Some(n) = v.drawn_events_before_cap.filter(|n| run == 1 && *n > r.events.len()) {
        // A record of version 1 kept the first events only.
        Some(first_events(&r.events, n))
    } else if r.events.len() > SVG_MAX_EVENTS {
        let keys = v.procedure.key_events(r);
        let (kept, drawn) = select(&r.events, &keys, SVG_MAX_EVENTS);
        let kept: HashSet<usize> = kept.into_iter().collect();
        let mut i = 0;
        r.events.retain(|_| {
            i += 1;
            kept.contains(&(i - 1))
        });
        Some(drawn)
    } else {
        None
    };
    if let Some(d) = &drawn {
        let (en, vi) = (&out.title.en, &out.title.vi);
        let (k, n) = (r.events.len(), d.events);
        out.title = if d.windows.len() == 1 && d.windows[0].left_out_before == 0 && d.keys == 0 {
            crate::lang::Words {
                en: format!("{en} (its first {k} of {n} events)"),
                vi: format!("{vi} ({k} sự kiện đầu trên {n})"),
            }
        } else {
            crate::lang::Words {
                en: format!("{en} ({k} of {n} events, around what the verdict rests on)"),
                vi: format!("{vi} ({k} trên {n} sự kiện, quanh những gì kết luận dựa vào)"),
            }
        };
    }
    out.drawn = drawn;
    (out, shown)
}

/// The events of run `run` its slide draws (orders windowed, then cut around its key events)
/// and where it was cut: what a compact record keeps of the run.
pub fn drawn_events(v: &VariantReport, run: u32) -> Option<(Vec<Event>, Option<Drawn>)> {
    let (windowed, _) = readable_window(v, run);
    let events = windowed.record(run)?.events.clone();
    Some((events, windowed.drawn))
}

/// A timeline of `n` events of which `kept` are its first: one window, the rest left out.
fn first_events(kept: &[Event], n: usize) -> Drawn {
    let (from_us, to_us) = span(kept.iter());
    Drawn {
        events: n,
        windows: vec![DrawnWindow { from_us, to_us, events: kept.len(), left_out_before: 0 }],
        left_out_after: n - kept.len(),
        keys: 0,
        keys_drawn: 0,
    }
}

fn span<'a>(events: impl Iterator<Item = &'a Event>) -> (i64, i64) {
    events.fold((i64::MAX, i64::MIN), |(a, b), e| (a.min(e.t_us), b.max(e.t_us)))
}

/// Key events a picture always draws, the most important first: the others only where they
/// fall in the windows of these.
pub const MUST_DRAW: usize = 16;

/// Which of `events` a picture of at most `budget` events draws, given the `keys` its verdict
/// rests on (indices into `events`, the most important first, repeats allowed): the first
/// [`HEAD`] events, then windows that hold the first [`MUST_DRAW`] keys, as few as fit the
/// budget (keys far apart get windows of their own), each widened on both sides as far as the
/// budget allows; windows a few events apart are joined. Returns the indices kept, in
/// `events`' order, and where the run was cut (with how many of all the keys it holds).
pub fn select(events: &[Event], keys: &[usize], budget: usize) -> (Vec<usize>, Drawn) {
    let n = events.len();
    let mut by_time: Vec<usize> = (0..n).collect();
    by_time.sort_by_key(|&i| events[i].t_us);
    let mut rank = vec![0; n];
    for (r, &i) in by_time.iter().enumerate() {
        rank[i] = r;
    }
    let mut all_ranks: Vec<usize> = keys.iter().filter(|&&k| k < n).map(|&k| rank[k]).collect();
    let mut seen = HashSet::new();
    all_ranks.retain(|r| seen.insert(*r));
    let all_keys = all_ranks.len();
    let mut key_ranks: Vec<usize> = all_ranks.iter().copied().take(MUST_DRAW.min(budget / 2)).collect();
    key_ranks.sort_unstable();
    let ranges = if n <= budget {
        vec![(0, n)]
    } else if key_ranks.is_empty() {
        vec![(0, budget)]
    } else {
        let head = HEAD.min(budget / 10);
        let groups = grouped(&key_ranks, head, budget, n);
        // The widest margin around each group that fits, by bisection (what a margin covers
        // only grows).
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if covered(&groups, mid, head, n) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        merged(&groups, lo, head, n)
    };
    let mut kept_ranks = Vec::new();
    let mut windows = Vec::new();
    let mut last_end = 0;
    for &(a, b) in &ranges {
        let (from_us, to_us) = span(by_time[a..b].iter().map(|&i| &events[i]));
        windows.push(DrawnWindow { from_us, to_us, events: b - a, left_out_before: a - last_end });
        kept_ranks.extend(a..b);
        last_end = b;
    }
    let keys_drawn = all_ranks.iter().filter(|k| ranges.iter().any(|(a, b)| (*a..*b).contains(*k))).count();
    let mut kept: Vec<usize> = kept_ranks.iter().map(|&r| by_time[r]).collect();
    kept.sort_unstable();
    let drawn = Drawn { events: n, windows, left_out_after: n - last_end, keys: all_keys, keys_drawn };
    (kept, drawn)
}

/// The keys (sorted ranks) in as few groups as fit the budget: one group, split at its widest
/// gap between two keys until the groups' spans (with the head) hold at most `budget` events.
fn grouped(keys: &[usize], head: usize, budget: usize, n: usize) -> Vec<(usize, usize)> {
    let mut groups = vec![(keys[0], *keys.last().expect("some keys"))];
    while covered(&groups, 0, head, n) > budget {
        // The widest gap between two neighbouring keys inside one group.
        let widest =
            keys.windows(2).filter(|w| groups.iter().any(|g| g.0 <= w[0] && w[1] <= g.1)).max_by_key(|w| w[1] - w[0]);
        let Some(w) = widest else { break };
        let (a, b) = (w[0], w[1]);
        let g = groups.iter().position(|g| g.0 <= a && b <= g.1).expect("the gap is in a group");
        let (start, end) = groups[g];
        groups.splice(g..=g, [(start, a), (b, end)]);
    }
    groups
}

/// The rank ranges drawn: `0..head` and each group widened by `margin` on both sides, joined
/// where fewer than [`JOIN`] events lie between two.
fn merged(groups: &[(usize, usize)], margin: usize, head: usize, n: usize) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let wanted = (head > 0).then_some((0, head)).into_iter();
    for (a, b) in wanted.chain(groups.iter().map(|&(a, b)| (a.saturating_sub(margin), (b + margin + 1).min(n)))) {
        match ranges.last_mut() {
            Some(last) if a <= last.1 + JOIN => last.1 = last.1.max(b),
            _ => ranges.push((a, b)),
        }
    }
    ranges
}

fn covered(groups: &[(usize, usize)], margin: usize, head: usize, n: usize) -> usize {
    merged(groups, margin, head, n).iter().map(|(a, b)| b - a).sum()
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

    /// `n` events a millisecond apart, by one consumer.
    fn run_of(n: i64) -> Vec<Event> {
        (0..n).map(|t| ev(t, Actor::Consumer(1), EventKind::Acked { entry_id: format!("1-{t}") })).collect()
    }

    #[test]
    fn a_long_run_is_drawn_around_its_key_events_with_its_start() {
        let events = run_of(1000);
        let (kept, drawn) = select(&events, &[900, 500], SVG_MAX_EVENTS);
        assert!(kept.len() <= SVG_MAX_EVENTS && kept.len() > SVG_MAX_EVENTS - 10, "{}", kept.len());
        assert!(kept.contains(&500) && kept.contains(&900) && kept.contains(&0));
        assert_eq!(drawn.windows.len(), 3, "the start, and a window per key: {drawn:?}");
        assert_eq!((drawn.keys, drawn.keys_drawn, drawn.events), (2, 2, 1000));
        let w = &drawn.windows[1];
        assert!(w.from_us < 500_000 && w.to_us > 500_000, "the key in the middle of its window: {w:?}");
        let left_out: usize = drawn.windows.iter().map(|w| w.left_out_before).sum::<usize>() + drawn.left_out_after;
        assert_eq!(left_out + kept.len(), 1000, "every event is drawn or counted as left out");
        // Two keys close together share a window.
        let (_, close) = select(&events, &[500, 510], SVG_MAX_EVENTS);
        assert_eq!(close.windows.len(), 2);
        // No keys: the first events, and what follows is counted.
        let (kept, none) = select(&events, &[], SVG_MAX_EVENTS);
        assert_eq!((kept.len(), none.windows.len(), none.left_out_after), (SVG_MAX_EVENTS, 1, 800));
        // A short run is drawn whole.
        let (kept, whole) = select(&run_of(50), &[10], SVG_MAX_EVENTS);
        assert_eq!((kept.len(), whole.left_out_after, whole.windows.len()), (50, 0, 1));
    }

    #[test]
    fn more_keys_than_a_picture_holds_draws_the_most_important() {
        let events = run_of(5000);
        // 300 keys every 15 events, the most important last in time.
        let keys: Vec<usize> = (0..300).rev().map(|k| 10 + k * 15).collect();
        let (kept, drawn) = select(&events, &keys, SVG_MAX_EVENTS);
        assert!(kept.len() <= SVG_MAX_EVENTS);
        for k in &keys[..MUST_DRAW] {
            assert!(kept.contains(k), "key {k} is among the first {MUST_DRAW}");
        }
        assert!(drawn.keys_drawn >= MUST_DRAW && drawn.keys == 300, "{drawn:?}");
    }

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
