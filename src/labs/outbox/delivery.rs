//! Delivery checker: what the stream and the consumers' writes say about delivery. Duplicates
//! and reordering in the log alone do not make a run wrong (an idempotent or CAS consumer can
//! absorb them); a side effect that happened more than once does.

use crate::checker::{RunVerdict, Verdict};
use crate::streams::StreamEntry;
use crate::timeline::{Event, EventKind};
use std::collections::BTreeMap;

/// Duplicates and reordering in the log's own order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    /// Entries whose event (order, version) is already earlier in the stream.
    pub duplicates: u32,
    /// Pairs of entries of one order where the earlier one has the higher version.
    pub out_of_order_pairs: u32,
}

/// Count duplicates and out-of-order pairs in the stream.
pub fn stream_stats(stream: &[StreamEntry]) -> DeliveryStats {
    let mut stats = DeliveryStats::default();
    for (j, later) in stream.iter().enumerate() {
        let earlier = stream[..j].iter().filter(|e| e.job.order == later.job.order);
        for e in earlier {
            if e.job.version > later.job.version {
                stats.out_of_order_pairs += 1;
            }
        }
        if stream[..j].iter().any(|e| e.job.order == later.job.order && e.job.version == later.job.version) {
            stats.duplicates += 1;
        }
    }
    stats
}

/// Entry IDs per event (order, version), in stream order: two IDs = published twice.
pub fn copies(stream: &[StreamEntry]) -> BTreeMap<(i64, i64), Vec<String>> {
    let mut out: BTreeMap<(i64, i64), Vec<String>> = BTreeMap::new();
    for e in stream {
        out.entry((e.job.order, e.job.version)).or_default().push(e.entry_id.clone());
    }
    out
}

/// Side effects per event (order, version): the entry IDs of every `wrote` that changed a row
/// (rows ≥ 1), in timeline order. An idempotent consumer's skipped duplicate writes 0 rows
/// and does not count; a plain consumer applies every copy.
pub fn side_effects(stream: &[StreamEntry], events: &[Event]) -> BTreeMap<(i64, i64), Vec<String>> {
    let job_of: BTreeMap<&str, (i64, i64)> =
        stream.iter().map(|e| (e.entry_id.as_str(), (e.job.order, e.job.version))).collect();
    let mut out: BTreeMap<(i64, i64), Vec<String>> = BTreeMap::new();
    for e in events {
        if let EventKind::Wrote { entry_id, rows, .. } = &e.kind {
            if *rows >= 1 {
                if let Some(key) = job_of.get(entry_id.as_str()) {
                    out.entry(*key).or_default().push(entry_id.clone());
                }
            }
        }
    }
    out
}

/// Events whose side effect happened more than once.
pub fn applied_twice(stream: &[StreamEntry], events: &[Event]) -> usize {
    side_effects(stream, events).values().filter(|e| e.len() > 1).count()
}

/// An event whose side effect happened more than once makes the run wrong.
pub fn delivery(stream: &[StreamEntry], events: &[Event]) -> RunVerdict {
    let mut v = RunVerdict::right();
    let types: BTreeMap<(i64, i64), &str> =
        stream.iter().map(|e| ((e.job.order, e.job.version), e.job.event_type.as_str())).collect();
    for ((order, version), entries) in side_effects(stream, events) {
        if entries.len() > 1 {
            let t = types.get(&(order, version)).copied().unwrap_or("?");
            v.add(
                Verdict::Wrong,
                format!(
                    "order {order} {t} (v={version}) applied {} times (entries {})",
                    entries.len(),
                    entries.join(", ")
                ),
            );
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::labs::outbox::delivery::*;
    use crate::timeline::{Actor, Job};

    fn entry(id: &str, order: i64, t: &str, version: i64) -> StreamEntry {
        StreamEntry { shard: 0, entry_id: id.into(), job: Job::new(order, t, version) }
    }

    fn wrote(id: &str, rows: u64) -> Event {
        Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Wrote { entry_id: id.into(), order: 0, status: String::new(), version: None, rows },
        }
    }

    #[test]
    fn stream_stats_count_duplicates_and_out_of_order_pairs() {
        // Two dispatchers without exclusion: 42 created, 42 paid, 43 created, 42 created again.
        let s = [
            entry("1-0", 42, "created", 1),
            entry("2-0", 42, "paid", 2),
            entry("3-0", 43, "created", 1),
            entry("4-0", 42, "created", 1),
        ];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 1, out_of_order_pairs: 1 });
        // A crash: 42 paid published twice, in order otherwise.
        let s = [entry("1-0", 42, "created", 1), entry("2-0", 42, "paid", 2), entry("3-0", 42, "paid", 2)];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 1, out_of_order_pairs: 0 });
        assert_eq!(copies(&s)[&(42, 2)], ["2-0", "3-0"]);
        // Fully reversed, three versions: three pairs.
        let s = [entry("1-0", 7, "shipped", 3), entry("2-0", 7, "paid", 2), entry("3-0", 7, "created", 1)];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 0, out_of_order_pairs: 3 });
    }

    #[test]
    fn a_duplicate_applied_twice_is_wrong_and_an_absorbed_one_is_not() {
        let s = [entry("1-0", 42, "created", 1), entry("2-0", 42, "paid", 2), entry("3-0", 42, "paid", 2)];
        let plain = [wrote("1-0", 1), wrote("2-0", 1), wrote("3-0", 1)];
        assert_eq!(side_effects(&s, &plain)[&(42, 2)], ["2-0", "3-0"]);
        assert_eq!(applied_twice(&s, &plain), 1);
        let v = delivery(&s, &plain);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(v.reasons, ["order 42 paid (v=2) applied 2 times (entries 2-0, 3-0)"]);
        let idempotent = [wrote("1-0", 1), wrote("2-0", 1), wrote("3-0", 0)];
        assert_eq!(side_effects(&s, &idempotent)[&(42, 2)], ["2-0"]);
        assert_eq!(delivery(&s, &idempotent), RunVerdict::right());
    }
}
