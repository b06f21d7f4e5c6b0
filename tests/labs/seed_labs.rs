//! The seed's other published labs, each checked against its published figure, and their
//! normalized snapshots. Deterministic variants must match exactly; the probabilistic ones
//! (`s4a`, `s4b`) are asserted only in ways that cannot fail by chance (odds in comments).

use super::core_labs::assert_snapshots;
use super::support::{self, final_rows, stream, variant, waiting_order};
use ordlab::checker::exclusion::{self, Exclusion};
use ordlab::checker::fates::first_receiver;
use ordlab::checker::{Outcome, Verdict};
use ordlab::labs::outbox::outbox_rollback::OutboxRollbackSpec;
use ordlab::report::VariantReport;
use ordlab::timeline::{Actor, EventKind};
use std::collections::BTreeSet;

fn finals(v: &VariantReport) -> Vec<Vec<(i64, String, i64)>> {
    v.run_records
        .iter()
        .map(|r| final_rows(r).iter().map(|x| (x.order, x.status.clone(), x.version)).collect())
        .collect()
}

/// One lock run as the tests read it: who received created (and so who held it), the lock
/// holds, and the verdict.
struct LockRun {
    run: u32,
    created_by: Actor,
    exclusion: Exclusion,
    wrong: bool,
}

fn lock_runs(v: &VariantReport) -> Vec<LockRun> {
    v.run_records
        .iter()
        .map(|r| {
            let created_by =
                first_receiver(&r.events, 42, 1).unwrap_or_else(|| panic!("run {}: nobody got created", r.run));
            // Redis hands a new entry to the reader that has waited longest: the first of the
            // drawn waiting order, never a choice of the harness.
            assert_eq!(
                Some(&created_by),
                waiting_order(r).first().map(|i| Actor::Consumer(*i)).as_ref(),
                "run {}",
                r.run
            );
            assert_ne!(r.verdict.verdict, Verdict::Unknown, "run {}: {:?}", r.run, r.verdict);
            LockRun {
                run: r.run,
                created_by,
                exclusion: exclusion::check(&r.events),
                wrong: r.verdict.verdict == Verdict::Wrong,
            }
        })
        .collect()
}

/// Every run held the lock twice (once per event), never both at once.
fn assert_exclusion(runs: &[LockRun]) {
    for r in runs {
        assert_eq!(r.exclusion.intervals.len(), 2, "run {}: {:?}", r.run, r.exclusion);
        assert!(r.exclusion.overlaps.is_empty(), "run {}: {:?}", r.run, r.exclusion.overlaps);
    }
}

/// The run is wrong exactly when paid's holder took the lock first: the lock decided nothing,
/// who asked first did. Two independent readings (final rows, timeline) must agree.
fn assert_wrong_iff_paid_locked_first(runs: &[LockRun]) {
    for r in runs {
        let paid_first = r.exclusion.first_holder(KEY) != Some(r.created_by);
        assert_eq!(r.wrong, paid_first, "run {}", r.run);
    }
}

const KEY: &str = "lock:order:42";

#[tokio::test]
async fn lock_without_prework_excludes_and_who_locks_first_is_a_race() {
    // S4a: wrong or right is measured only (`any`); what must hold in every run is asserted.
    let report = support::run_variant("lock", Some("s4a"), 20, 0.25, 11).await;
    let s4a = variant(&report, "s4a");
    let runs = lock_runs(s4a);
    assert_exclusion(&runs);
    assert_wrong_iff_paid_locked_first(&runs);
    // The harness does not decide who receives created: both consumers did. The waiting order
    // is a fair draw per run from the seed; a seed whose 20 draws all agree has odds
    // 2 × 2^-20 ≈ 2e-6, and this seed's draws are fixed, so the test cannot flake.
    let takers: BTreeSet<Actor> = runs.iter().map(|r| r.created_by).collect();
    assert_eq!(takers.len(), 2, "{takers:?}");
}

#[tokio::test]
async fn lock_with_random_prework_goes_wrong_about_half_the_time() {
    // Whoever draws the shorter random pre-work (0–30 ms) locks first, so about half the runs
    // end wrong; 20 right runs in a row would have odds near 0.5^20 ≈ 1e-6.
    let report = support::run_variant("lock", Some("s4b"), 20, 0.5, 11).await;
    let s4b = variant(&report, "s4b");
    assert!(s4b.wrong >= 1, "s4b: {}/{}", s4b.wrong, s4b.runs);
    let runs = lock_runs(s4b);
    assert_exclusion(&runs);
    assert_wrong_iff_paid_locked_first(&runs);
}

#[tokio::test]
async fn lock_with_a_short_ttl_overlaps_after_expiry_and_is_always_wrong() {
    // Full time scale: the overwrite comes 300 ms after the lock expired, a margin no stall on
    // a loaded machine reaches.
    let report = support::run_variant("lock", Some("s4c"), 10, 1.0, 11).await;
    let s4c = variant(&report, "s4c");
    assert_eq!((s4c.wrong, s4c.runs), (10, 10));
    let runs = lock_runs(s4c);
    let mut expired = 0;
    for r in &runs {
        let ex = &r.exclusion;
        assert_eq!((ex.intervals.len(), ex.violations()), (2, 0), "run {}: {ex:?}", r.run);
        if ex.first_holder(KEY) == Some(r.created_by) {
            // created locked first and outlived its 500 ms TTL: paid's holder got the key while
            // created's still worked (an overlap after expiry), and created's late release
            // answered 0.
            assert_eq!(ex.after_expiry(), 1, "run {}: {ex:?}", r.run);
            assert_eq!(ex.intervals[0].released, Some(0), "run {}", r.run);
            expired += 1;
        } else {
            assert!(ex.overlaps.is_empty(), "run {}: {ex:?}", r.run);
        }
    }
    // created's holder has a head start (it receives created one publish gap before paid
    // exists) and locked first in 8 of 10 runs measured; all ten the other way has odds near
    // 0.2^10 ≈ 1e-7.
    assert!(expired >= 1, "no run showed the expired lock");
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
    assert!(rollback.run_records.iter().all(|r| support::facts::<OutboxRollbackSpec>(rollback, r).outbox_rows == 0));
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
