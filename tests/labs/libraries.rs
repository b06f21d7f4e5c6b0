//! Real job-queue libraries under test (`library-*` labs): each library's documented failure
//! beside its fix, on real servers, with the library's own client, worker and state; one run
//! of each variant, as the snapshot test and `ordlab diff` run it, then the snapshots in both
//! languages.
//!
//! Every fault is placed at a named command, a handler's start or a held command, never hoped
//! for by timing. Each library is installed at its pinned version into ordlab's cache on first
//! use (`just setup` does it beforehand); one that cannot be installed here says NOT TESTED and
//! why, and CI, which installs every library, fails instead.

use super::core_labs::assert_snapshots;
use super::support;
use ordlab::labs::library::job_queue::{LibraryFacts, LibraryObserved, LibrarySpec};
use ordlab::labs::library::manifest::{LibraryRef, Manifest};
use ordlab::labs::{Observed, RunRecord};
use ordlab::report::LabReport;
use ordlab::timeline::{Actor, EventKind};

/// Installed (or installable) here at every version; otherwise one NOT TESTED line.
async fn installed(name: &str, versions: &[&str]) -> bool {
    let mut missing = None;
    for version in versions {
        let library = LibraryRef { name: name.into(), version: version.to_string(), adapter: None };
        let result = match Manifest::read(&library) {
            Ok(m) => ordlab::labs::library::install::ensure(&m, &library).await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = result {
            missing = Some(e);
            break;
        }
    }
    support::has_runtime(&format!("{name} {} (just setup)", versions.join(" and ")), missing)
}

/// The one run of variant `id`, its facts and what it observed.
fn run<'a>(report: &'a LabReport, id: &str) -> (&'a RunRecord, LibraryFacts, &'a LibraryObserved) {
    let v = support::variant(report, id);
    let r = &v.run_records[0];
    assert_eq!(v.unknown, 0, "{id}: {:?}", r.verdict);
    let Observed::Library(o) = &r.observed else { panic!("{id}: a library run") };
    (r, support::facts::<LibrarySpec>(v, r), o)
}

/// Worker `n`'s commands at the wire, in order, each with its reply.
fn commands_of(r: &RunRecord, n: u32) -> Vec<(Vec<String>, String)> {
    r.events
        .iter()
        .filter(|e| e.actor == Actor::Worker(n))
        .filter_map(|e| match &e.kind {
            EventKind::ServerCommand { args, reply, .. } => Some((args.clone(), reply.clone())),
            _ => None,
        })
        .collect()
}

/// Worker `n`'s command the run's first fault hit: its last one recorded before the fault fired
/// (a library's other connections may still send a command before the SIGKILL lands).
fn hit_by_fault(r: &RunRecord, n: u32) -> Option<(Vec<String>, String)> {
    let fired = r.events.iter().position(|e| e.kind.family::<ordlab::fault::FaultEvent>().is_some())?;
    r.events[..fired].iter().rev().find_map(|e| match &e.kind {
        EventKind::ServerCommand { args, reply, .. } if e.actor == Actor::Worker(n) => {
            Some((args.clone(), reply.clone()))
        }
        _ => None,
    })
}

fn killed(r: &RunRecord, n: u32) -> bool {
    r.events.iter().any(|e| e.actor == Actor::Worker(n) && matches!(e.kind, EventKind::Crashed { by_runner: true, .. }))
}

/// The fault events of a run, as fired (`W1: pause (SIGSTOP) for 6000 ms at …`).
fn faults_fired(r: &RunRecord) -> Vec<String> {
    r.events
        .iter()
        .filter_map(|e| e.kind.family::<ordlab::fault::FaultEvent>())
        .filter_map(|f| match f {
            ordlab::fault::FaultEvent::FaultFired { fault, .. } => Some(fault.label().en),
            _ => None,
        })
        .collect()
}

fn counts(f: &LibraryFacts) -> [i64; 7] {
    [f.once, f.lost, f.stuck, f.failed, f.duplicate_sequential, f.duplicate_overlapping, f.disagreement]
}

// [once, lost, stuck, failed, duplicate_sequential, duplicate_overlapping, disagreement]

#[tokio::test]
async fn rq_loses_after_blpop_and_2_12_runs_a_finished_job_again_where_3_0_does_not() {
    if !installed("rq", &["2.12.0", "3.0.0"]).await {
        return;
    }
    let report = support::snapshot_run("library-rq").await;
    for id in ["two-queues-2-12", "two-queues-3-0"] {
        let (r, f, o) = run(&report, id);
        assert_eq!((counts(&f), f.promise_broken), ([1, 1, 0, 0, 0, 0, 0], 1), "{id}");
        // The pop reached the server, its reply never reached RQ: W1 died right there.
        assert_eq!(hit_by_fault(r, 1).map(|c| c.0[0].clone()).as_deref(), Some("BLPOP"), "{id}");
        assert!(killed(r, 1), "{id}");
        let job1 = &o.states["job-1"];
        assert_eq!((job1.status.as_str(), job1.places.as_deref()), ("queued", Some(&[][..])), "{id}");
    }
    let (r, f, o) = run(&report, "one-queue-2-12");
    assert_eq!((counts(&f), f.promise_broken), ([1, 0, 1, 0, 0, 0, 0], 0));
    assert_eq!(hit_by_fault(r, 1).map(|c| c.0[0].clone()).as_deref(), Some("BLMOVE"));
    assert_eq!(o.states["job-1"].places.as_deref(), Some(&["intermediate:default".to_string()][..]));
    // rq #2424: job-2 enqueued while W1's EXEC after WATCH is held makes that EXEC fail (WatchError,
    // a nil reply) in both versions; 2.12.0 leaves job-1 in the StartedJobRegistry and RQ's own
    // cleanup runs it again, 3.0.0 does not.
    for (id, expected) in [("dependent-2-12", [1, 0, 0, 0, 1, 0, 0]), ("dependent-3-0", [2, 0, 0, 0, 0, 0, 0])] {
        let (r, f, _) = run(&report, id);
        assert_eq!(counts(&f), expected, "{id}");
        let w1 = commands_of(r, 1);
        let watched = w1.iter().position(|(a, _)| a[0] == "WATCH" && a[1] == "rq:job:job-1:dependents");
        let exec = watched.and_then(|w| w1[w..].iter().find(|(a, _)| a[0] == "EXEC"));
        assert_eq!(exec.map(|(_, reply)| reply.as_str()), Some("(nil)"), "{id}: the held EXEC fails: {w1:?}");
        let held = r.events.iter().any(|e| matches!(&e.kind, EventKind::Family(f) if f.kind() == "command_held"));
        assert!(held, "{id}");
    }
    assert_snapshots(&report);
}

#[tokio::test]
async fn celery_runs_a_countdown_past_visibility_twice_and_loses_a_task_killed_after_brpop() {
    if !installed("celery", &["5.7.0"]).await {
        return;
    }
    let report = support::snapshot_run("library-celery").await;
    let (_, f, _) = run(&report, "countdown-past-visibility");
    assert_eq!((counts(&f), f.promise_broken), ([0, 0, 0, 0, 1, 0, 0], 0), "at-least-once allows it");
    let (_, f, _) = run(&report, "visibility-above-countdown");
    assert_eq!(counts(&f), [1, 0, 0, 0, 0, 0, 0]);
    let (r, f, o) = run(&report, "kill-after-brpop");
    assert_eq!((counts(&f), f.promise_broken), ([0, 1, 0, 0, 0, 0, 0], 1));
    assert_eq!(hit_by_fault(r, 1).map(|c| c.0[0].clone()).as_deref(), Some("BRPOP"));
    assert_eq!(o.states["job-1"].status, "PENDING");
    // The control: killed at the reply of the EXEC that recorded it unacked, it is restored.
    let (r, f, _) = run(&report, "kill-after-unacked");
    assert_eq!(counts(&f), [1, 0, 0, 0, 0, 0, 0]);
    let w1 = commands_of(r, 1);
    let hit = hit_by_fault(r, 1).expect("a command hit");
    assert_eq!(hit.0[0], "EXEC", "W1 died at that EXEC's reply: {w1:?}");
    let exec = w1.iter().position(|c| *c == hit).expect("W1's EXEC");
    assert!(w1[..exec].iter().any(|(a, _)| a[0] == "ZADD" && a[1] == "unacked_index"), "{w1:?}");
    assert!(killed(r, 1));
    assert_snapshots(&report);
}

#[tokio::test]
async fn sidekiq_loses_a_job_killed_after_brpop_and_runs_one_past_its_shutdown_timeout_twice() {
    if !installed("sidekiq", &["6.4.1"]).await {
        return;
    }
    let report = support::snapshot_run("library-sidekiq").await;
    let (r, f, _) = run(&report, "kill-after-brpop");
    assert_eq!((counts(&f), f.promise_broken), ([1, 1, 0, 0, 0, 0, 0], 0), "documented: no broken promise");
    assert_eq!(hit_by_fault(r, 1).map(|c| c.0[0].clone()).as_deref(), Some("BRPOP"));
    let (r, f, _) = run(&report, "term-past-timeout");
    assert_eq!(counts(&f), [0, 0, 0, 0, 1, 0, 0]);
    // Sidekiq pushed job-1 back onto its queue before it exited.
    assert!(commands_of(r, 1).iter().any(|(a, _)| a[0] == "RPUSH" && a[1] == "queue:default"));
    let (_, f, _) = run(&report, "term-within-timeout");
    assert_eq!(counts(&f), [1, 0, 0, 0, 0, 0, 0]);
    assert_snapshots(&report);
}

#[tokio::test]
async fn bullmq_runs_a_job_twice_when_its_worker_is_paused_past_lock_duration() {
    if !installed("bullmq", &["6.7.0"]).await {
        return;
    }
    let report = support::snapshot_run("library-bullmq").await;
    for (id, expected) in [("pause-past-lock", [0, 0, 0, 0, 0, 1, 0]), ("max-stalled-0", [0, 0, 0, 0, 0, 0, 1])] {
        let (r, f, o) = run(&report, id);
        assert_eq!(counts(&f), expected, "{id}");
        assert_eq!(faults_fired(r).len(), 1, "{id}: the pause fired once");
        // W1 woke after the checker took the job: its moveToFinished answers -2, Missing lock.
        let finished: Vec<String> = commands_of(r, 1)
            .into_iter()
            .filter(|(a, _)| a.get(1).is_some_and(|s| s == "moveToFinished"))
            .map(|(_, reply)| reply)
            .collect();
        assert!(!finished.is_empty() && finished.iter().all(|r| r == "-2"), "{id}: {finished:?}");
        if id == "max-stalled-0" {
            let reason = o.states["job-1"].reason.as_deref().unwrap_or_default();
            assert!(reason.contains("stalled"), "{reason}");
        }
    }
    assert_snapshots(&report);
}

#[tokio::test]
async fn pg_boss_11_0_7_leaves_a_stately_singleton_in_retry_for_good_and_11_0_8_runs_it() {
    if !installed("pg-boss", &["11.0.7", "11.0.8"]).await {
        return;
    }
    let report = support::snapshot_run("library-pg-boss").await;
    let (r, f, o) = run(&report, "stately-retry-11-0-7");
    assert_eq!(counts(&f), [1, 0, 2, 0, 0, 0, 0]);
    assert_eq!((o.states["A"].status.as_str(), o.states["C"].status.as_str()), ("retry", "created"));
    // The fetch skips k, the key of a job in retry, for good.
    let skips = commands_of(r, 1).iter().any(|(a, _)| a[0].contains("singleton_key NOT IN ('k')"));
    assert!(skips, "a fetch that skips k");
    let (_, f, _) = run(&report, "stately-retry-11-0-8");
    assert_eq!(counts(&f), [3, 0, 0, 0, 0, 0, 0]);
    assert_snapshots(&report);
}

#[tokio::test]
async fn graphile_worker_leaves_a_job_locked_by_a_killed_worker_and_by_a_graceful_stop() {
    if !installed("graphile-worker", &["0.18.0"]).await {
        return;
    }
    let report = support::snapshot_run("library-graphile-worker").await;
    let (r, f, o) = run(&report, "kill-after-get-job");
    assert_eq!((counts(&f), f.promise_broken), ([0, 0, 1, 0, 0, 0, 0], 0));
    assert_eq!(o.states["job-1"].status, "locked");
    // W1 died at the reply to the statement that takes a job (with j as (select … for update
    // skip locked) update … set attempts = attempts + 1, locked_by = $1).
    let (last, reply) = hit_by_fault(r, 1).unwrap_or_default();
    assert!(last[0].starts_with("with j as ( select jobs.job_queue_id") && reply == "UPDATE 1", "{last:?} → {reply}");
    assert!(killed(r, 1));
    let (_, f, _) = run(&report, "kill-before-get-job");
    assert_eq!(counts(&f), [1, 0, 0, 0, 0, 0, 0]);
    let (_, f, o) = run(&report, "term-mid-job");
    assert_eq!((counts(&f), o.states["job-1"].status.as_str()), ([0, 0, 0, 0, 0, 0, 1], "locked"));
    assert_snapshots(&report);
}
