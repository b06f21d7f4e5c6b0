//! Labs the seed named but never ran, each measured here for the first time, checked against
//! the outcome its scenario file declares, and snapshotted.

use super::core_labs::assert_snapshots;
use super::support::{self, facts, variant};
use ordlab::checker::Outcome;
use ordlab::handler::order::events::HandlerEvent;
use ordlab::labs::Observed;
use ordlab::report::VariantReport;
use ordlab::timeline::EventKind;

fn last_write_ms(v: &VariantReport, order: i64) -> f64 {
    v.run_records[0]
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Wrote { order: o, .. } if *o == order))
        .map(|e| e.t_us as f64 / 1000.0)
        .fold(0.0, f64::max)
}

#[tokio::test]
async fn sharding_keeps_order_per_key_and_blocks_the_head_of_its_line() {
    let report = support::snapshot_run("shard").await;
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched), "{report:#?}");
    let sharded = variant(&report, "sharded");
    // At time scale 0.5, #42's created works 400 ms. #44 shares its shard and waits behind
    // it; #43 has its own shard and is done after ~50 ms of work. 200 ms apart is a margin
    // far beyond scheduling noise, and far below the 400 ms the design puts between them.
    let (t42, t43, t44) = (last_write_ms(sharded, 42), last_write_ms(sharded, 43), last_write_ms(sharded, 44));
    assert!(t44 > t43 + 200.0 && t42 > t43 + 200.0, "#42 {t42} #43 {t43} #44 {t44}");
    assert_snapshots(&report);
}

#[tokio::test]
async fn the_first_write_must_be_one_statement() {
    let report = support::run_lab("upsert", 20, 0.5, 5).await;
    // UPDATE-then-INSERT loses the second insert about half the time (measured); 20 runs
    // without a loss would have odds near 0.55^20 ≈ 1e-5.
    let naive = variant(&report, "update-then-insert");
    assert!(naive.wrong >= 1, "{}/{}", naive.wrong, naive.runs);
    let lost = naive
        .run_records
        .iter()
        .flat_map(|r| &r.events)
        .filter(|e| matches!(e.kind.family::<HandlerEvent>(), Some(HandlerEvent::WriteFailed { .. })));
    assert!(lost.count() >= naive.wrong as usize, "every wrong run lost an insert");
    assert_eq!(variant(&report, "conditional-upsert").wrong, 0);
}

#[tokio::test]
async fn upsert_snapshot() {
    // The naive variant's count is probabilistic: the snapshot redacts it, visibly.
    assert_snapshots(&support::snapshot_run("upsert").await);
}

#[tokio::test]
async fn deltas_with_a_cas_skip_lose_an_item_and_state_events_keep_the_whole_document() {
    let report = support::snapshot_run("state-event").await;
    assert!(report.matched(), "{report:#?}");
    // What every run stored, read from the database: the document, not only the status.
    let stored = |id: &str| -> Vec<(String, Vec<String>, i64)> {
        variant(&report, id)
            .run_records
            .iter()
            .map(|r| {
                let Observed::Stream(o) = &r.observed else { panic!("a stream run") };
                let doc = &o.documents.as_ref().expect("documents are read")[&42];
                (doc.status.clone(), doc.items.keys().cloned().collect(), doc.total)
            })
            .collect()
    };
    let full = ("paid".to_string(), vec!["book".to_string(), "pen".to_string()], 3000);
    // book's handler ends ~650 ms after paid is applied (scale 1): the CAS skips it in every
    // run, the document lacks it, and nothing was overwritten by a stale write.
    for (run, doc) in stored("delta-cas").into_iter().enumerate() {
        assert_eq!(doc, ("paid".to_string(), vec!["pen".to_string()], 500), "run {}", run + 1);
    }
    assert_eq!(variant(&report, "delta-cas").wrong, variant(&report, "delta-cas").runs);
    for id in ["delta-plain", "state-keep-newest"] {
        assert!(stored(id).iter().all(|d| *d == full), "{id}: {:?}", stored(id));
        assert_eq!(variant(&report, id).wrong, 0, "{id}");
    }
    // Every run of delta-cas and state-keep-newest skips book (a drop); only one loses it.
    for (id, dropped) in [("delta-cas", 1), ("delta-plain", 0), ("state-keep-newest", 1)] {
        let v = variant(&report, id);
        assert_eq!(v.dropped, if dropped == 1 { v.runs } else { 0 }, "{id}");
    }
    let v = variant(&report, "state-keep-newest");
    let facts = facts::<ordlab::labs::ordering::stream::StreamSpec>(v, &v.run_records[0]);
    // 512 bytes of state per entry against a few dozen for the delta.
    let (with_state, delta) = (facts.entry_bytes.expect("measured"), facts.delta_entry_bytes.expect("measured"));
    assert!(with_state >= 512 && delta < 64, "{facts:?}");
    assert_snapshots(&report);
}

#[tokio::test]
async fn a_reorder_buffer_repairs_the_log_and_times_out_on_a_gap() {
    let report = support::snapshot_run("reorder-buffer").await;
    assert!(report.matched(), "{report:#?}");
    let buffered = &variant(&report, "buffered").run_records[0];
    let writes: Vec<&str> = buffered
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Wrote { status, .. } => Some(status.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(writes, ["created", "paid"], "applied in version order");
    let gap = &variant(&report, "gap-timeout").run_records[0];
    assert!(gap
        .events
        .iter()
        .any(|e| matches!(e.kind.family::<HandlerEvent>(), Some(HandlerEvent::GapTimeout { missing_version: 1, .. }))));
    assert!(gap
        .events
        .iter()
        .any(|e| matches!(e.kind.family::<HandlerEvent>(), Some(HandlerEvent::Dropped { job, .. }) if job.event_type == "created")));
    // A right final state with an event dropped is said, in the verdict line and in SUMMARY,
    // and the scenario must declare it (it does: `dropped = "all"`).
    let gap_timeout = variant(&report, "gap-timeout");
    assert_eq!((gap_timeout.wrong, gap_timeout.dropped), (0, gap_timeout.runs));
    let text = ordlab::report::text::render(&report, &Default::default());
    let n = gap_timeout.runs;
    assert!(text.contains(&format!("0/{n} runs · right final state, 1 event dropped: {n}/{n} runs")), "{text}");
    assert!(text.contains("#42 created (v=1) — dropped by the reorder buffer"), "{text}");
    let summary = ordlab::report::summary::render(std::slice::from_ref(&report));
    assert!(
        summary.contains(&format!(
            "| gap-timeout | 1 consumer, reorder buffer, gap timeout 500 ms | {n} | 0/{n} | {n}/{n} |"
        )),
        "{summary}"
    );
    assert_eq!(variant(&report, "buffered").dropped, 0);
    assert_snapshots(&report);
}

#[tokio::test]
async fn failover_snapshot() {
    assert_snapshots(&support::snapshot_run("failover").await);
}

#[tokio::test]
async fn outbox_multi_snapshot() {
    assert_snapshots(&support::snapshot_run("outbox-multi").await);
}

#[tokio::test]
async fn outbox_crash_snapshot() {
    assert_snapshots(&support::snapshot_run("outbox-crash").await);
}
