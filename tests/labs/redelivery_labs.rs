//! Crashes before XACK: `redelivery` (a consumer dies, XAUTOCLAIM hands its entry back under
//! the same ID with delivery count 2) and `fanout` (S3: one reader, a worker per order; the
//! reader dies and what it read stays pending).

use super::core_labs::assert_snapshots;
use super::support::{self, facts, variant};
use ordlab::checker::fates::first_receiver;
use ordlab::checker::{Outcome, Verdict};
use ordlab::handler::order::events::HandlerEvent;
use ordlab::labs::ordering::redelivery::{redelivered, Redelivered};
use ordlab::labs::ordering::stream::{RedeliveryFacts, StreamSpec};
use ordlab::timeline::{Actor, EventKind};

#[tokio::test]
async fn a_claimed_entry_keeps_its_id_and_its_delivery_count_rises() {
    let report = support::snapshot_run("redelivery").await;
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched), "{report:#?}");
    for v in &report.variants {
        for r in &v.run_records {
            assert!(!r.timed_out && r.verdict.verdict != Verdict::Unknown, "{}: {:?}", v.id, r.verdict);
            // The consumer that received created died; the reaper got that very entry ID, second
            // delivery. Which consumer that is follows the drawn waiting order.
            let took = first_receiver(&r.events, 42, 1).expect("someone received created");
            let again = redelivered(&r.events);
            assert!(
                matches!(again.as_slice(), [Redelivered { first, deliveries: Some(2), .. }] if *first == took),
                "{}: {again:?}",
                v.id
            );
            let died = r
                .events
                .iter()
                .find_map(|e| matches!(e.kind, EventKind::Crashed { planned: true, .. }).then_some(e.actor));
            assert_eq!(died, Some(took), "{}", v.id);
            let acked_by_reaper = r.events.iter().any(|e| {
                e.actor == Actor::Reaper
                    && matches!(&e.kind, EventKind::Acked { entry_id } if *entry_id == again[0].entry_id)
            });
            assert!(acked_by_reaper, "the run ends only after the claimed entry is acknowledged");
            let f = facts::<StreamSpec>(v, r);
            let again = f.redelivery.as_ref().expect("a crash lab counts redeliveries");
            assert_eq!((again.redelivered_same_id, again.claimed_delivery_count), (1, Some(2)));
            assert_eq!(f.pending_after_run, Some(0));
        }
    }
    assert_snapshots(&report);
}

#[tokio::test]
async fn fanout_keeps_order_per_key_and_a_dead_reader_leaves_entries_pending() {
    let report = support::snapshot_run("fanout").await;
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched), "{report:#?}");
    let kept = &variant(&report, "order-kept").run_records[0];
    let workers: Vec<String> = kept
        .events
        .iter()
        .filter_map(|e| match e.kind.family::<HandlerEvent>() {
            Some(HandlerEvent::Queued { worker, .. }) => Some(worker),
            _ => None,
        })
        .collect();
    assert_eq!(workers, ["C1/#42", "C1/#42", "C1/#43", "C1/#43"]);
    let writes: Vec<(i64, &str)> = kept
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Wrote { order, status, .. } => Some((*order, status.as_str())),
            _ => None,
        })
        .collect();
    // 43 does not wait behind 42's slow created; 42's paid waits in 42's queue.
    assert_eq!(writes, [(43, "created"), (43, "paid"), (42, "created"), (42, "paid")]);
    let crash = variant(&report, "reader-crash");
    for r in &crash.run_records {
        assert!(!r.timed_out, "the run ends once nothing more can happen");
        assert_eq!(r.verdict.verdict, Verdict::Wrong, "{:?}", r.verdict);
        // 43 created read and never acknowledged; 43 paid never read.
        let f = facts::<StreamSpec>(crash, r);
        let never = f.redelivery.as_ref().map(|r: &RedeliveryFacts| r.never_delivered);
        assert_eq!((f.pending_after_run, never), (Some(1), Some(1)), "{f:?}");
    }
    assert_snapshots(&report);
}
