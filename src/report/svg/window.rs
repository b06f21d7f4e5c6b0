//! A run over many orders does not fit a slide: it is drawn for a few of its orders, the wrong
//! ones always among them, with a title that says which.

use crate::labs::FinalItem;
use crate::report::VariantReport;
use crate::timeline::EventKind;
use std::collections::HashSet;

/// Orders a slide can show: a run over more is drawn for some of them only.
pub const SVG_MAX_ORDERS: usize = 8;

/// The variant as a slide can show it: for a run over many orders, only the events of
/// [`SVG_MAX_ORDERS`] of its orders (half of them wrong ones, if any, then the first) and
/// events that belong to no order, with the orders shown. Other variants are returned
/// unchanged, with None.
pub fn readable_window(v: &VariantReport, run: u32) -> (VariantReport, Option<Vec<i64>>) {
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
        // Entry IDs of the shown orders, so work and acks (which carry only the ID) follow.
        let ids: HashSet<String> = r
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Received { entry_id, job, .. } if shown.contains(&job.order) => Some(entry_id.clone()),
                _ => None,
            })
            .collect();
        r.events.retain(|e| match (&e.kind, e.kind.order()) {
            (_, Some(o)) => shown.contains(&o),
            (EventKind::WorkStarted { entry_id, .. } | EventKind::Acked { entry_id }, None) => ids.contains(entry_id),
            _ => true,
        });
    }
    let listed: Vec<String> = shown.iter().map(|o| format!("#{o}")).collect();
    let (en, vi) = (&v.title.en, &v.title.vi);
    let (list, n) = (listed.join(" "), orders.len());
    out.title =
        crate::lang::Words { en: format!("{en} (orders {list} of {n})"), vi: format!("{vi} (đơn {list} trên {n})") };
    (out, Some(shown))
}
