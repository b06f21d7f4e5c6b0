//! `outbox-multi` and `outbox-crash`: several dispatchers on one outbox, and a dispatcher
//! killed between XADD and marking its row. Only what cannot fail by chance is asserted; the
//! odds are in the comments and in the scenario files.

use super::support::{self, final_rows, stream, variant};
use ordlab::labs::outbox::delivery::{self as checker, DeliveryStats};
use ordlab::report::VariantReport;
use ordlab::timeline::{Actor, EventKind};

fn unplanned_crashes(v: &VariantReport) -> usize {
    v.run_records
        .iter()
        .flat_map(|r| r.events.iter())
        .filter(|e| matches!(e.kind, EventKind::Crashed { planned: false, .. }))
        .count()
}

#[tokio::test]
async fn outbox_multi_needs_per_key_exclusion() {
    // Time scale 1: D1 waits 300 ms before each XADD, D2 20 ms. In no-exclusion both see row 1
    // (42 created) unpublished at t≈0: D1's copy is a second 42 created whatever happens, and
    // the one consumer applies it twice (wrong, certain). That copy lands after D2's 42 paid
    // unless D2 stalls ≈260 ms between its first two XADDs.
    let report = support::run_lab("outbox-multi", 3, 1.0, 7).await;
    let none = variant(&report, "no-exclusion");
    assert_eq!((none.wrong, none.unknown), (none.runs, 0), "{:?}", none.run_records[0].verdict);
    for r in &none.run_records {
        let stats = checker::stream_stats(&stream(r));
        assert!(stats.duplicates >= 1 && stats.out_of_order_pairs >= 1, "run {}: {stats:?}", r.run);
        // Both dispatchers published.
        for d in [Actor::Dispatcher(1), Actor::Dispatcher(2)] {
            assert!(
                r.events.iter().any(|e| e.actor == d && matches!(e.kind, EventKind::Published { .. })),
                "run {}: {d} published nothing",
                r.run
            );
        }
        // One consumer applies the stream in log order: #42 ends as its last entry says (created
        // when D1's stale copy lands after shipped, as it does unless D2 is slow).
        let rows = final_rows(r);
        let f42 = rows.iter().find(|x| x.order == 42).unwrap();
        let last42 = stream(r).iter().rev().find(|e| e.job.order == 42).map(|e| e.job.event_type.clone());
        assert_eq!(Some(&f42.status), last42.as_ref(), "run {}", r.run);
    }
    for id in ["skip-locked", "advisory-lock"] {
        let v = variant(&report, id);
        assert_eq!(
            (v.wrong, v.unknown),
            (0, 0),
            "{id}: {:?}",
            v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>()
        );
        for r in &v.run_records {
            assert_eq!(checker::stream_stats(&stream(r)), DeliveryStats::default(), "{id} run {}", r.run);
            assert_eq!(stream(r).len(), 7, "{id} run {}", r.run);
            // The race did happen: both dispatchers published (the slow one holds one key
            // for ≈450 ms while the fast one takes the others).
            for d in [Actor::Dispatcher(1), Actor::Dispatcher(2)] {
                assert!(
                    r.events.iter().any(|e| e.actor == d && matches!(e.kind, EventKind::Published { .. })),
                    "{id} run {}: {d} published nothing",
                    r.run
                );
            }
        }
    }
    assert!(report.matched());
}

#[tokio::test]
async fn outbox_crash_publishes_twice_and_an_idempotent_consumer_absorbs_it() {
    // Deterministic: row 2 is never marked (D1 dies first), so D2 always publishes it again.
    let report = support::run_lab("outbox-crash", 2, 0.5, 7).await;
    for id in ["plain-consumer", "idempotent-consumer"] {
        let v = variant(&report, id);
        assert_eq!(unplanned_crashes(v), 0, "{id}");
        for r in &v.run_records {
            // The planned crash is in the timeline, by D1, with its detail.
            let crashes: Vec<(Actor, &str)> = r
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Crashed { planned: true, detail, .. } => Some((e.actor, detail.as_str())),
                    _ => None,
                })
                .collect();
            assert_eq!(crashes, [(Actor::Dispatcher(1), "after XADD, before marking row 2 published")], "{id}");
            assert!(r.events.iter().any(|e| e.actor == Actor::Dispatcher(2)), "{id}: D2 never ran");
            // At-least-once: 42 paid (v=2) is in the stream twice, nothing else is.
            let entries = stream(r);
            assert_eq!(checker::stream_stats(&entries), DeliveryStats { duplicates: 1, out_of_order_pairs: 0 });
            let copies = checker::copies(&entries);
            assert_eq!(copies[&(42, 2)].len(), 2, "{id}: {copies:?}");
            let effects = checker::side_effects(&entries, &r.events);
            let expected = if id == "plain-consumer" { 2 } else { 1 };
            assert_eq!(
                effects[&(42, 2)],
                if expected == 2 { copies[&(42, 2)].clone() } else { vec![copies[&(42, 2)][0].clone()] }
            );
            assert!(effects.iter().filter(|(k, _)| **k != (42, 2)).all(|(_, e)| e.len() == 1), "{id}: {effects:?}");
            assert!(final_rows(r).iter().all(|x| x.status == "paid"), "{id}");
        }
    }
    let plain = variant(&report, "plain-consumer");
    assert_eq!((plain.wrong, plain.unknown), (plain.runs, 0));
    let idem = variant(&report, "idempotent-consumer");
    assert_eq!((idem.wrong, idem.unknown), (0, 0));
    assert!(report.matched());
}
