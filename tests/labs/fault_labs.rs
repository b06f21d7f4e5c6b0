//! The small labs of the fault layer's new actions (issue 31): each one a seed's claim or a
//! client's behaviour shown by a fault (a pause past a lock's TTL, a lost reply to XACK),
//! judged by the labs' own checkers, and snapshotted.

use super::core_labs::assert_snapshots;
use super::support::{self, facts, variant};
use ordlab::checker::exclusion;
use ordlab::checker::fates::first_receiver;
use ordlab::checker::{Outcome, Verdict};
use ordlab::fault::{Action, FaultEvent};
use ordlab::labs::ordering::stream::StreamSpec;
use ordlab::report::VariantReport;
use ordlab::timeline::{Event, EventKind};

/// When (ms) the run's pause fired and when it was over, from the fault events.
fn pause_window(events: &[Event]) -> (f64, f64) {
    let at = |over: bool| {
        events
            .iter()
            .find_map(|e| match e.kind.family::<FaultEvent>() {
                Some(FaultEvent::FaultFired { fault, .. }) if !over && matches!(fault.action, Action::PauseMs(_)) => {
                    Some(e.t_us as f64 / 1000.0)
                }
                Some(FaultEvent::FaultOver { .. }) if over => Some(e.t_us as f64 / 1000.0),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no fault {} in {events:#?}", if over { "over" } else { "fired" }))
    };
    (at(false), at(true))
}

/// Every run of `v`: the pause fired on created's consumer and lasted at least `ms`; returns
/// per run (did created's holder lock first, the lock check).
fn paused_runs(v: &VariantReport, ms: f64) -> Vec<(bool, exclusion::Exclusion)> {
    v.run_records
        .iter()
        .map(|r| {
            assert_ne!(r.verdict.verdict, Verdict::Unknown, "run {}: the pause must fire: {:?}", r.run, r.verdict);
            let (fired, over) = pause_window(&r.events);
            assert!(over - fired >= ms, "run {}: paused {} ms, not {ms}", r.run, over - fired);
            let created_by = first_receiver(&r.events, 42, 1).expect("someone got created");
            let ex = exclusion::check(&r.events);
            (ex.first_holder("lock:order:42") == Some(created_by), ex)
        })
        .collect()
}

#[tokio::test]
async fn a_holder_paused_past_its_lock_s_ttl_lets_a_second_holder_in_and_writes_last() {
    // Full time scale, 3 runs each. Within the TTL: created's holder sleeps 100 ms and releases at
    // ~150 ms, 350 ms before its 500 ms TTL. Past it: the lock expires at 500 ms, paid's
    // holder writes at ~560 ms, the paused holder wakes at 1000 ms and writes created ~440 ms
    // later than paid. Margins of hundreds of ms: no stall of a loaded machine bridges them.
    let report = support::snapshot_run("lock-pause").await;
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched), "{report:#?}");
    for (created_first, ex) in paused_runs(variant(&report, "within-ttl"), 100.0) {
        assert_eq!(ex.intervals.len(), 2, "{ex:?}");
        assert!(ex.overlaps.is_empty(), "a pause within the TTL keeps the lock: {ex:?} ({created_first})");
    }
    let past = variant(&report, "past-ttl");
    assert_eq!(past.wrong, past.runs);
    for (created_first, ex) in paused_runs(past, 1000.0) {
        assert_eq!((ex.intervals.len(), ex.violations()), (2, 0), "{ex:?}");
        if created_first {
            // paid's holder took the key while created's slept; created's release by token
            // found the key gone (0): it did not delete anyone's lock, and wrote all the same.
            assert_eq!(ex.after_expiry(), 1, "{ex:?}");
            assert_eq!(ex.intervals[0].released, Some(0), "{ex:?}");
        }
    }
    // Three holders (published at 0, 100, 1200 ms; TTL 1000, pause 1500): created's holder
    // locks first by design, paid's takes the expired key, and the woken holder's release
    // decides whether shipped's gets in while paid's still works (margins of 180–320 ms).
    for (id, released, violations, wrong) in [("third-holder-token", 0, 0, 0), ("third-holder-del", 1, 1, 3)] {
        let v = variant(&report, id);
        assert_eq!(v.wrong, wrong, "{id}");
        for (created_first, ex) in paused_runs(v, 1500.0) {
            assert!(created_first, "{id}: {ex:?}");
            assert_eq!(ex.intervals.len(), 3, "{id}: {ex:?}");
            assert_eq!((ex.after_expiry(), ex.violations()), (1, violations), "{id}: {ex:?}");
            assert_eq!(ex.intervals[0].released, Some(released), "{id}: the woken holder's release: {ex:?}");
        }
    }
    assert_snapshots(&report);
}

/// The replies to the XACKs of `entry` at the wire, in order (a reply not passed on still
/// says what the server answered).
fn xack_replies(events: &[Event], entry: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ServerCommand { args, reply, .. }
                if args[0] == "XACK" && args.last().map(String::as_str) == Some(entry) =>
            {
                Some(reply.split(' ').next().unwrap_or_default().to_string())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_lost_reply_to_xack_leaves_nothing_pending_and_a_client_that_does_not_retry_dies_of_it() {
    use super::foreign_workers::{missing, PHP, PYTHON};
    for (check, what) in [(&PYTHON, "python3 with redis-py and psycopg"), (&PHP, "php with phpredis and pgsql")] {
        if !support::has_runtime(what, missing(check)) {
            return;
        }
    }
    let report = support::snapshot_run("xack-lost-reply").await;
    assert!(report.variants.iter().all(|v| v.outcome == Outcome::Matched), "{report:#?}");
    let created_entry = |r: &ordlab::report::RunRecord| support::stream(r)[0].entry_id.clone();
    for id in ["python-reply-lost", "php-reply-lost"] {
        let v = variant(&report, id);
        for r in &v.run_records {
            // The server executed the XACK (it answered 1); the consumer died before paid:
            // nothing pending, nothing handed back, paid never delivered.
            assert_eq!(xack_replies(&r.events, &created_entry(r)), ["1"], "{id} run {}", r.run);
            let f = facts::<StreamSpec>(v, r);
            let d = f.redelivery.as_ref().expect("a reaper counts redeliveries");
            assert_eq!(
                (f.pending_after_run, d.redelivered_same_id, d.never_delivered),
                (Some(0), 0, 1),
                "{id} run {}: {f:?}",
                r.run
            );
            assert!(died_unplanned(&r.events), "{id} run {}", r.run);
        }
    }
    let lost = variant(&report, "python-ack-lost");
    for r in &lost.run_records {
        // The XACK never reached the server: created stayed pending and came back once.
        assert!(xack_replies(&r.events, &created_entry(r)).is_empty(), "run {}", r.run);
        let f = facts::<StreamSpec>(lost, r);
        let again = f.redelivery.as_ref().expect("a reaper counts redeliveries");
        assert_eq!((again.redelivered_same_id, f.pending_after_run), (1, Some(0)), "run {}: {f:?}", r.run);
    }
    let retrying = variant(&report, "python-retrying-reply-lost");
    for r in &retrying.run_records {
        // redis-py's retry sent XACK again on a new connection: answered 0, already done.
        assert_eq!(xack_replies(&r.events, &created_entry(r)), ["1", "0"], "run {}", r.run);
        assert!(!died_unplanned(&r.events), "run {}", r.run);
        assert_eq!(r.verdict.verdict, Verdict::Right, "run {}", r.run);
    }
    assert_snapshots(&report);
}

fn died_unplanned(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e.kind, EventKind::Crashed { planned: false, .. }))
}
