//! The seed's other published labs, each checked against its published figure, and their
//! normalized snapshots. Deterministic variants must match exactly; the probabilistic ones
//! (`s4a`, `s4b`) are asserted only in ways that cannot fail by chance (odds in comments).

use super::core_labs::assert_snapshots;
use super::support::{self, final_rows, stream, variant};
use ordlab::checker::{Outcome, Verdict};
use ordlab::report::VariantReport;
use ordlab::timeline::{Actor, EventKind};

fn finals(v: &VariantReport) -> Vec<Vec<(i64, String, i64)>> {
    v.run_records
        .iter()
        .map(|r| final_rows(r).iter().map(|x| (x.order, x.status.clone(), x.version)).collect())
        .collect()
}

#[tokio::test]
async fn lock_with_a_short_ttl_is_always_wrong() {
    // Full time scale: the overwrite comes 250 ms after the lock expired, a margin no stall
    // on a loaded machine reaches.
    let report = support::run_variant("lock", Some("s4c"), 10, 1.0, 11).await;
    let s4c = variant(&report, "s4c");
    assert_eq!((s4c.wrong, s4c.runs), (10, 10));
    for r in &s4c.run_records {
        let created_by = r.events.iter().find_map(|e| match &e.kind {
            EventKind::Received { job, .. } if job.event_type == "created" => Some(e.actor),
            _ => None,
        });
        let first_lock =
            r.events.iter().find_map(|e| matches!(e.kind, EventKind::LockAcquired { .. }).then_some(e.actor));
        let created_release = r.events.iter().find_map(|e| match &e.kind {
            EventKind::LockReleased { released, .. } if Some(e.actor) == created_by => Some(*released),
            _ => None,
        });
        // When the created job locked first, its lock expired under it: the release says 0.
        if first_lock == created_by {
            assert_eq!(created_release, Some(0), "run {}", r.run);
        }
    }
}

#[tokio::test]
async fn lock_with_random_prework_goes_wrong_about_half_the_time() {
    // Whoever draws the shorter random pre-work (0–30 ms) locks first, so about half the runs
    // end wrong; 20 right runs in a row would have odds near 0.5^20 ≈ 1e-6.
    let report = support::run_variant("lock", Some("s4b"), 20, 0.5, 11).await;
    let s4b = variant(&report, "s4b");
    assert!(s4b.wrong >= 1, "s4b: {}/{}", s4b.wrong, s4b.runs);
    assert_eq!(s4b.unknown, 0);
}

#[tokio::test]
async fn lock_without_prework_is_measured_and_every_run_judged() {
    // S4a is measured only (the scheduler decides who locks first); every run must be judged.
    let report = support::run_variant("lock", Some("s4a"), 10, 0.25, 11).await;
    let s4a = variant(&report, "s4a");
    assert_eq!((s4a.runs, s4a.unknown), (10, 0));
    assert_eq!(s4a.outcome, Outcome::Matched);
}

#[tokio::test]
async fn cas_keeps_the_newest_state() {
    let report = support::snapshot_run("cas").await;
    assert_eq!(variant(&report, "s5").wrong, 0);
    let race = variant(&report, "sql-race");
    let expected: Vec<(i64, String, i64)> = [42, 43, 44].iter().map(|o| (*o, "paid".to_string(), 2)).collect();
    for f in finals(race) {
        assert_eq!(f, expected);
    }
    // B's outcome per case, and B really waited for A's row lock: A holds it 1000 ms × 0.5
    // and B arrives 300 ms × 0.5 in, so B waits ≥ 350 ms; asserting 200 ms leaves room for
    // nothing but a clock that runs backwards.
    let r = &race.run_records[0];
    let b: Vec<(String, f64)> = r
        .events
        .iter()
        .filter(|e| e.actor == Actor::Session('B'))
        .filter_map(|e| match &e.kind {
            EventKind::SqlDone { outcome, waited_ms, .. }
                if outcome.starts_with("UPDATE") || outcome.starts_with("ERROR") =>
            {
                Some((outcome.clone(), *waited_ms))
            }
            _ => None,
        })
        .collect();
    let outcomes: Vec<&str> = b.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(outcomes, ["UPDATE 0", "UPDATE 1", "ERROR: could not serialize access due to concurrent update"]);
    assert!(b.iter().all(|(_, w)| *w >= 200.0), "{b:?}");
    assert!(report.matched());
    assert_snapshots(&report);
}

#[tokio::test]
async fn a_producer_retry_reorders_the_log() {
    let report = support::snapshot_run("reorder").await;
    let v = variant(&report, "reorder");
    assert_eq!(v.wrong, v.runs);
    for r in &v.run_records {
        // The log itself: paid's entry comes before created's.
        let entries = stream(r);
        let types: Vec<&str> = entries.iter().map(|e| e.job.event_type.as_str()).collect();
        assert_eq!(types, ["paid", "created"]);
    }
    assert_snapshots(&report);
}

#[tokio::test]
async fn a_version_must_be_born_with_the_event() {
    let report = support::snapshot_run("p2").await;
    assert_eq!(variant(&report, "business-version").wrong, 0);
    let by_entry = variant(&report, "entry-id-version");
    assert_eq!(by_entry.wrong, by_entry.runs);
    assert!(report.matched());
    assert_snapshots(&report);
}

#[tokio::test]
async fn an_outbox_dispatcher_must_be_sequential_per_key() {
    let report = support::snapshot_run("outbox").await;
    let rollback = variant(&report, "rollback");
    assert!(finals(rollback).iter().all(|f| *f == vec![(42, "paid".to_string(), 2)]));
    assert!(rollback.run_records.iter().all(|r| support::facts(rollback, r)["outbox_rows"] == 0));
    let stream_of = |v: &VariantReport| -> Vec<String> {
        stream(&v.run_records[0]).iter().map(|e| format!("{}{}", e.job.order, &e.job.event_type[..1])).collect()
    };
    let naive = variant(&report, "naive");
    assert_eq!(stream_of(naive), ["43c", "42p", "43p", "42c"]);
    assert_eq!(finals(naive)[0], vec![(42, "created".to_string(), 1), (43, "paid".to_string(), 2)]);
    assert_eq!(naive.run_records[0].verdict.verdict, Verdict::Wrong);
    let per_key = variant(&report, "per-key");
    assert_eq!(stream_of(per_key), ["43c", "43p", "42c", "42p"]);
    assert_eq!(finals(per_key)[0], vec![(42, "paid".to_string(), 2), (43, "paid".to_string(), 2)]);
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched));
    assert_snapshots(&report);
}

#[tokio::test]
async fn lock_snapshot() {
    assert_snapshots(&support::snapshot_run("lock").await);
}
