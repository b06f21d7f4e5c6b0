//! Reorder buffer (P3): the consumer holds an order's events until the next expected version
//! arrives, then applies them in version order. It repairs an out-of-order log at the cost of
//! waiting, and needs a gap timeout for a version that never comes.
//!
//! This file holds the strategy's options and the pure buffer; the consumer loop feeds the
//! buffer and applies what it releases with a plain write.

use super::{plain, Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::error::Error;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// `strategy = { kind = "reorder-buffer", gap_timeout_ms = 1000 }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderBufferSpec {
    /// How long to wait for a missing version before applying what is held.
    #[serde(default = "ReorderBufferSpec::default_gap_timeout")]
    pub gap_timeout_ms: f64,
}

impl ReorderBufferSpec {
    fn default_gap_timeout() -> f64 {
        1000.0
    }
}

impl Described for ReorderBufferSpec {
    fn describe(&self, lang: Lang) -> String {
        let t = self.gap_timeout_ms;
        crate::tr!(
            lang,
            "reorder buffer per order (gap timeout {t} ms), then plain UPDATE",
            "bộ đệm sắp xếp lại theo đơn (chờ tối đa {t} ms), rồi UPDATE thường"
        )
    }

    fn short(&self) -> String {
        format!("reorder buffer, gap timeout {} ms", self.gap_timeout_ms)
    }
}

impl StrategyKind for ReorderBufferSpec {
    /// The buffer decides when (in the consumer loop); once released, a plain write.
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        plain::write(h, d).await
    }

    fn gap_timeout_ms(&self) -> Option<f64> {
        Some(self.gap_timeout_ms)
    }
}

/// What happened to an offered event.
#[derive(Debug, PartialEq)]
pub enum Offer<T> {
    /// Apply these now, in this order (the offered event and any it unblocked).
    Ready(Vec<T>),
    /// Held until version `waiting_for` of its order arrives.
    Held { waiting_for: i64 },
    /// Older than what was already applied: drop it.
    Stale(T),
}

/// Events released because their gap timed out.
#[derive(Debug, PartialEq)]
pub struct Expired<T> {
    pub order: i64,
    pub missing_version: i64,
    /// How long the oldest held event waited, in ms.
    pub held_ms: f64,
    pub items: Vec<T>,
}

pub struct ReorderBuffer<T> {
    /// Next version to apply, per order.
    expected: HashMap<i64, i64>,
    /// Held events per order by version, with the time each was held (ns).
    held: HashMap<i64, BTreeMap<i64, (u64, T)>>,
}

impl<T> Default for ReorderBuffer<T> {
    fn default() -> Self {
        ReorderBuffer { expected: HashMap::new(), held: HashMap::new() }
    }
}

impl<T> ReorderBuffer<T> {
    /// Does the buffer know where `order` stands?
    pub fn knows(&self, order: i64) -> bool {
        self.expected.contains_key(&order)
    }

    /// The next version to apply for `order` (from the row's current version + 1).
    pub fn expect(&mut self, order: i64, next: i64) {
        self.expected.insert(order, next);
    }

    pub fn is_empty(&self) -> bool {
        self.held.values().all(|h| h.is_empty())
    }

    pub fn offer(&mut self, order: i64, version: i64, item: T, now_ns: u64) -> Offer<T> {
        let next = *self.expected.get(&order).unwrap_or(&1);
        if version < next {
            return Offer::Stale(item);
        }
        if version > next {
            self.held.entry(order).or_default().insert(version, (now_ns, item));
            return Offer::Held { waiting_for: next };
        }
        let mut ready = vec![item];
        self.expected.insert(order, version + 1);
        ready.extend(self.drain_contiguous(order));
        Offer::Ready(ready)
    }

    /// Release every order whose oldest held event has waited at least `gap_ns`: the gap is
    /// skipped and the held run applied in version order.
    pub fn expired(&mut self, now_ns: u64, gap_ns: u64) -> Vec<Expired<T>> {
        let due: Vec<i64> = self
            .held
            .iter()
            .filter(|(_, h)| h.values().map(|(t, _)| *t).min().is_some_and(|t| now_ns.saturating_sub(t) >= gap_ns))
            .map(|(o, _)| *o)
            .collect();
        let mut out = Vec::new();
        for order in due {
            let first_held = self.held[&order].keys().next().copied().expect("non-empty");
            let oldest = self.held[&order].values().map(|(t, _)| *t).min().expect("non-empty");
            let missing_version = *self.expected.get(&order).unwrap_or(&1);
            self.expected.insert(order, first_held);
            let items = self.drain_contiguous(order);
            out.push(Expired { order, missing_version, held_ms: (now_ns - oldest) as f64 / 1e6, items });
        }
        out
    }

    /// Pop held events of `order` while they continue the expected sequence.
    fn drain_contiguous(&mut self, order: i64) -> Vec<T> {
        let mut out = Vec::new();
        let Some(h) = self.held.get_mut(&order) else { return out };
        let mut next = self.expected[&order];
        while let Some((_, item)) = h.remove(&next) {
            out.push(item);
            next += 1;
        }
        self.expected.insert(order, next);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_events_pass_straight_through() {
        let mut b = ReorderBuffer::default();
        b.expect(42, 1);
        assert_eq!(b.offer(42, 1, "c", 0), Offer::Ready(vec!["c"]));
        assert_eq!(b.offer(42, 2, "p", 0), Offer::Ready(vec!["p"]));
        assert!(b.is_empty());
    }

    #[test]
    fn a_later_version_waits_for_the_missing_one() {
        let mut b = ReorderBuffer::default();
        b.expect(42, 1);
        assert_eq!(b.offer(42, 2, "p", 0), Offer::Held { waiting_for: 1 });
        assert_eq!(b.offer(42, 3, "s", 0), Offer::Held { waiting_for: 1 });
        assert_eq!(b.offer(42, 1, "c", 5), Offer::Ready(vec!["c", "p", "s"]));
        assert!(b.is_empty());
        assert_eq!(b.offer(42, 2, "again", 6), Offer::Stale("again"));
    }

    #[test]
    fn a_gap_times_out_and_the_held_run_is_released() {
        let mut b = ReorderBuffer::default();
        b.expect(42, 1);
        b.offer(42, 2, "p", 1_000_000);
        b.offer(42, 3, "s", 2_000_000);
        assert!(b.expired(5_000_000, 10_000_000).is_empty());
        let out = b.expired(11_000_000, 10_000_000);
        assert_eq!(out, vec![Expired { order: 42, missing_version: 1, held_ms: 10.0, items: vec!["p", "s"] }]);
        // Version 1, arriving after all, is now stale.
        assert_eq!(b.offer(42, 1, "c", 12_000_000), Offer::Stale("c"));
    }

    #[test]
    fn orders_are_independent() {
        let mut b = ReorderBuffer::default();
        b.expect(42, 1);
        b.expect(43, 1);
        assert_eq!(b.offer(42, 2, "42p", 0), Offer::Held { waiting_for: 1 });
        assert_eq!(b.offer(43, 1, "43c", 0), Offer::Ready(vec!["43c"]));
    }
}
