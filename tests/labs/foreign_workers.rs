//! Workers from a command line: the examples' Python and PHP consumers under the baseline race
//! and the S4 lock, seed 000's priority loops in Python, and seed 000's idempotent wrapper and
//! multi-step job in Python, recorded at the wire by the interposer and judged by the same
//! checkers as ordlab's own.
//!
//! The verdicts are as certain as the built-in labs': `created` (800 ms of work) writes ~750 ms
//! after `paid` whatever the language; only a stall that long could flip a run. S4a's count is
//! the scheduler's (who asks for the lock first), so only what holds in every run is asserted:
//! two holds, never at once, both released. The tests need python3 with redis-py and psycopg,
//! and php with phpredis and pgsql (`just setup` installs them); where one is missing, the test
//! says NOT TESTED and why, and CI installs them.

use super::support;
use ordlab::checker::{exclusion, Outcome};
use ordlab::labs::idempotency::jobs::JobsSpec;
use ordlab::labs::ordering::stream::StreamSpec;
use ordlab::labs::priority::priority::{PriorityFacts, PrioritySpec};
use ordlab::report::VariantReport;
use ordlab::timeline::EventKind;

/// Why a runtime or its client libraries cannot be used here, if so.
pub(crate) fn missing(check: &[&str]) -> Option<String> {
    let out = std::process::Command::new(check[0]).args(&check[1..]).output();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            Some(format!("{}: {}", check.join(" "), String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("")))
        }
        Err(e) => Some(format!("{}: {e}", check[0])),
    }
}

pub(crate) const PYTHON: [&str; 3] = ["python3", "-c", "import redis, psycopg"];
const PHP: [&str; 3] = ["php", "-r", "if (!class_exists('Redis') || !function_exists('pg_connect')) exit(1);"];

#[tokio::test]
async fn foreign_consumers_reach_the_verdicts_of_ordlab_s_own() {
    for (check, what) in [(&PYTHON, "python3 with redis-py and psycopg"), (&PHP, "php with phpredis and pgsql")] {
        if !support::has_runtime(what, missing(check)) {
            return;
        }
    }
    let report = support::snapshot_run("foreign-ordering").await;
    super::core_labs::assert_snapshots(&report);
    for v in &report.variants {
        let all = v.run_records.len() as u32;
        assert_eq!(v.unknown, 0, "{}: {:?}", v.id, v.run_records[0].verdict);
        assert_eq!(v.outcome, Outcome::Matched, "{}", v.id);
        if v.id.contains("-lock-") {
            lock_holds(v);
            continue;
        }
        let want = if v.id.ends_with("plain") { all } else { 0 };
        assert_eq!(v.wrong, want, "{}: {:?}", v.id, v.run_records[0].verdict);
        if v.id == "python-killed-after-read" {
            for r in &v.run_records {
                let f = support::facts::<StreamSpec>(v, r);
                let d = f.redelivery.clone().expect("a claimer ran");
                // The server delivered created once before the kill; the claimer got it back
                // with the same ID and delivery count 2, and nothing is left pending.
                assert_eq!(
                    (d.redelivered_same_id, d.claimed_delivery_count, f.pending_after_run),
                    (1, Some(2), Some(0)),
                    "{f:?}"
                );
            }
        } else if v.id.starts_with("python") || v.id.starts_with("php") {
            // Recorded at the wire: each process's reads, statements and acks.
            let r1 = &v.run_records[0];
            let commands: Vec<&str> = r1
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::ServerCommand { args, .. } => {
                        args.first().map(|a| a.split_whitespace().next().unwrap_or(""))
                    }
                    _ => None,
                })
                .collect();
            for want in ["XREADGROUP", "UPDATE", "XACK"] {
                assert_eq!(commands.iter().filter(|c| **c == want).count(), 2, "{}: two {want} in {commands:?}", v.id);
            }
        }
    }
}

/// The S4 variants: what every run shows, whoever locked first. S4c is wrong in every run and
/// created's holder's late release deletes nothing (its 800 ms outlive the 500 ms TTL); S4a's
/// count is the scheduler's, but its two holds never overlap and both release their own lock.
/// A worker's holds are read from its `SET … NX PX` and release at the wire.
fn lock_holds(v: &VariantReport) {
    let s4c = v.id.ends_with("s4c");
    if s4c {
        assert_eq!(v.wrong, v.run_records.len() as u32, "{}", v.id);
    }
    for r in &v.run_records {
        let ex = exclusion::check(&r.events);
        assert_eq!((ex.intervals.len(), ex.violations()), (2, 0), "{} run {}: {ex:?}", v.id, r.run);
        // Each hold counts from its SET's send, before its reply (the interposer stamps both).
        assert!(ex.intervals.iter().all(|i| i.sent_us < i.acquired_us), "{} run {}: {ex:?}", v.id, r.run);
        let mut released: Vec<Option<i64>> = ex.intervals.iter().map(|i| i.released).collect();
        released.sort();
        let want = if s4c { [Some(0), Some(1)] } else { [Some(1), Some(1)] };
        assert_eq!(released, want, "{} run {}: {ex:?}", v.id, r.run);
        let at_the_wire =
            r.events.iter().any(|e| matches!(&e.kind, EventKind::ServerCommand { args, .. } if args[0] == "SET"));
        assert_eq!(at_the_wire, !v.id.starts_with("ordlab"), "{}: the worker's lock is its own SET", v.id);
    }
}

#[tokio::test]
async fn foreign_priority_workers_reach_the_verdicts_of_ordlab_s_own() {
    if !support::has_runtime("python3 with redis-py", missing(&["python3", "-c", "import redis"])) {
        return;
    }
    let report = support::snapshot_run("foreign-priority").await;
    super::core_labs::assert_snapshots(&report);
    let facts = |id: &str, f: fn(&PriorityFacts) -> Option<i64>| -> Vec<Option<i64>> {
        let v = support::variant(&report, id);
        v.run_records.iter().map(|r| f(&support::facts::<PrioritySpec>(v, r))).collect()
    };
    for v in &report.variants {
        // Both loops are wrong in every run, by Redis semantics (the scenario says why).
        assert_eq!((v.wrong, v.unknown, v.outcome), (v.run_records.len() as u32, 0, Outcome::Matched), "{}", v.id);
    }
    for id in ["ordlab-strict", "python-strict"] {
        assert!(facts(id, |f| f.backlog_lower_before_critical).iter().all(|n| *n == Some(0)), "{id}: strict");
        // The probe went in while C1 sat in XREADGROUP low BLOCK 5000 (≤ 1 s after it began).
        let probe = facts(id, |f| f.aligned_probe_wait_ms);
        assert!(probe.iter().all(|ms| ms.is_some_and(|ms| ms >= 4000)), "{id}: {probe:?}");
        // The trickle's last critical job is published 1560 ms after the low jobs.
        let low = facts(id, |f| f.trickle_low_max_wait_ms);
        assert!(low.iter().all(|ms| ms.is_some_and(|ms| ms >= 1500)), "{id}: {low:?}");
    }
    for id in ["ordlab-weighted", "python-weighted"] {
        let served = facts(id, |f| f.served_while_backlogged.map(|s| s[0] * 10_000 + s[1] * 100 + s[2]));
        assert!(served.iter().all(|s| *s == Some(300 * 10_000 + 150 * 100 + 30)), "{id}: 300/150/30: {served:?}");
        // Two empty reads of ≥ 100 ms per round away from critical: p90 ≥ 150 ms.
        let p90 = facts(id, |f| f.trickle_critical_p90_ms);
        assert!(p90.iter().all(|ms| ms.is_some_and(|ms| ms >= 150)), "{id}: {p90:?}");
    }
}

/// Seed 000's wrapper and multi-step job in Python (readers and claimer) beside ordlab's own
/// worker: each Python variant measures what its ordlab twin measures, in every run (lost,
/// once, redelivered), and its retry is the Python claimer's own XAUTOCLAIM at the wire.
#[tokio::test]
async fn foreign_job_workers_reach_the_verdicts_of_ordlab_s_own() {
    if !support::has_runtime("python3 with redis-py and psycopg", missing(&PYTHON)) {
        return;
    }
    let report = support::snapshot_run("foreign-jobs").await;
    super::core_labs::assert_snapshots(&report);
    for v in &report.variants {
        // `expect` names each cell's fate: a measured one that differs would make it unknown.
        assert_eq!((v.unknown, v.outcome), (0, Outcome::Matched), "{}: {:?}", v.id, v.run_records[0].verdict);
    }
    let counts = |id: &str| -> Vec<(i64, i64, i64, i64, i64)> {
        let v = support::variant(&report, id);
        let of = |r| {
            let f = support::facts::<JobsSpec>(v, r);
            (f.exactly_once, f.lost, f.duplicated, f.redelivered, f.pending_after_run)
        };
        v.run_records.iter().map(of).collect()
    };
    for case in ["wrapper-crash", "wrapper-refused", "multistep-refused", "multistep-crash"] {
        let (own, python) = (counts(&format!("ordlab-{case}")), counts(&format!("python-{case}")));
        assert_eq!(own, python, "{case}: ordlab's own vs the Python worker");
        assert!(own.iter().all(|c| c.3 == 1 && c.4 == 0), "{case}: one retry, nothing left pending: {own:?}");
        let v = support::variant(&report, &format!("python-{case}"));
        for r in &v.run_records {
            let claimed_at_the_wire = r.events.iter().any(|e| {
                e.actor == ordlab::timeline::Actor::Reaper
                    && matches!(&e.kind, EventKind::ServerCommand { args, entries, .. } if args[0] == "XAUTOCLAIM" && !entries.is_empty())
            });
            assert!(claimed_at_the_wire, "{case} run {}: the Python claimer's XAUTOCLAIM took the job", r.run);
        }
    }
}

/// A scenario file like foreign-ordering's python variant, with `command` as its worker.
fn scenario_with_worker(dir: &std::path::Path, command: &str) -> std::path::PathBuf {
    let text = format!(
        r#"id = "bad-worker"
title = "a worker that cannot run"
source = "test"
question = "q"
family = "ordering"
description = "d"
[setup]
consumers = 1
cost_ms = {{ created = 10 }}
events = [{{ order = 42, type = "created", version = 1 }}]
worker = {{ command = {command} }}
[expect]
wrong = "none"
"#
    );
    let path = dir.join("bad-worker.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Run the scenario through the CLI: exit code and stderr.
fn run_cli(scenario: &std::path::Path) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .args(["run", scenario.to_str().unwrap(), "--runs", "1", "--backend", "local"])
        .output()
        .unwrap();
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn still_running(marker: &str) -> bool {
    std::process::Command::new("pgrep").args(["-f", marker]).output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn a_worker_that_cannot_start_exits_at_once_or_never_connects_is_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // Not installed.
    let (code, err) = run_cli(&scenario_with_worker(dir.path(), r#"["/nonexistent/ordlab-worker"]"#));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("worker `/nonexistent/ordlab-worker`") && err.contains("not found"), "{err}");
    // Exits at once: its last stderr line is shown.
    let quits = r#"["sh", "-c", "echo 'ImportError: no module named redis' >&2; exit 3"]"#;
    let (code, err) = run_cli(&scenario_with_worker(dir.path(), quits));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("exit status: 3") && err.contains("ImportError: no module named redis"), "{err}");
    // Never connects: named after the readiness timeout, and killed.
    let (code, err) = run_cli(&scenario_with_worker(dir.path(), r#"["sleep", "61.25"]"#));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("worker `sleep 61.25`") && err.contains("not blocked in XREADGROUP"), "{err}");
    assert!(support::eventually(5, || !still_running("sleep 61.25")), "the worker was left running");
}

#[test]
fn a_priority_worker_that_exits_at_once_is_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"id = "bad-priority-worker"
title = "a priority worker that cannot run"
source = "test"
question = "q"
family = "priority"
description = "d"
[setup]
kind = "priority"
loop = { kind = "seed-strict" }
cost_ms = { critical = 2, normal = 2, low = 2 }
backlog = { critical = 3 }
worker = { command = ["sh", "-c", "echo 'KeyError: ORDLAB_STREAMS' >&2; exit 3"] }
[expect]
wrong = "none"
"#;
    let path = dir.path().join("bad-priority-worker.toml");
    std::fs::write(&path, text).unwrap();
    let (code, err) = run_cli(&path);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("exit status: 3") && err.contains("KeyError: ORDLAB_STREAMS"), "{err}");
}
