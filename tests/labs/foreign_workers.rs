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
    seed_constructors_as_written(&report);
    for id in ["ordlab-weighted", "python-weighted"] {
        let served = facts(id, |f| f.served_while_backlogged.map(|s| s[0] * 10_000 + s[1] * 100 + s[2]));
        assert!(served.iter().all(|s| *s == Some(300 * 10_000 + 150 * 100 + 30)), "{id}: 300/150/30: {served:?}");
        // Two empty reads of ≥ 100 ms per round away from critical: p90 ≥ 150 ms.
        let p90 = facts(id, |f| f.trickle_critical_p90_ms);
        assert!(p90.iter().all(|ms| ms.is_some_and(|ms| ms >= 150)), "{id}: {p90:?}");
    }
}

/// The seed's strict loop with its own client lines (`Redis.from_url(url)`, `redis.Redis()`),
/// redis-py 8.1's 5 s socket timeout against its BLOCK 5000: whether the probe is served after
/// ~5 s (the server's empty reply came first) or never (the client's timeout did; `from_url`
/// dies of it, `Redis()` retries until the lab's patience runs out) is a race of two timers,
/// run by run. What each run says must be what happened in it: a probe with no take on the
/// timeline is "never served" or "not served within the lab's patience" in the facts, the
/// text, the verdict and the chart, never a number; one taken has its measured wait.
fn seed_constructors_as_written(report: &ordlab::report::LabReport) {
    use ordlab::labs::priority::served::tracks;
    use ordlab::priority_queue::Phase;
    use ordlab::report::text::{self, TextOptions};
    let text = text::render(report, &TextOptions::default());
    let chart = ordlab::report::chart::lab_charts(report).into_iter().find(|c| c.id == "waits").expect("waits chart");
    for (k, id) in ["python-strict-seed-from-url", "python-strict-seed-redis"].into_iter().enumerate() {
        let v = support::variant(report, id);
        let section = text.split("\n### ").find(|s| s.starts_with(id)).expect("its section");
        let mut never = 0;
        for r in &v.run_records {
            let f = support::facts::<PrioritySpec>(v, r);
            let probe = tracks(&r.events).into_iter().find(|t| t.phase == Phase::AlignedProbe).expect("a probe");
            let reasons = r.verdict.reasons.join("; ");
            match probe.taken_us {
                Some(_) => {
                    assert!(f.aligned_probe_wait_ms.is_some_and(|ms| ms >= 4000), "{id} run {}: {f:?}", r.run);
                    assert_eq!(f.aligned_probe_never_served_ms, None, "{id} run {}", r.run);
                }
                None => {
                    never += 1;
                    assert_eq!(f.aligned_probe_wait_ms, None, "{id} run {}: a never-served probe has no wait", r.run);
                    assert!(f.aligned_probe_never_served_ms.is_some_and(|ms| ms >= 4000), "{id} run {}: {f:?}", r.run);
                    let said = if id.ends_with("from-url") {
                        "never served (C1 died at t="
                    } else {
                        "not served within the lab's patience (12 s)"
                    };
                    assert!(reasons.contains(said), "{id} run {}: {reasons}", r.run);
                    if id.ends_with("from-url") {
                        // Killed by its own TimeoutError: the exit status and the line that says so.
                        assert!(
                            reasons.contains("C1 died unplanned: exit status: 1") && reasons.contains("TimeoutError"),
                            "{reasons}"
                        );
                        assert!(section.contains("C1's last lines before it died"), "{section}");
                    }
                }
            }
            // Wrong either way: the probe waited (or stayed unserved) ≥ 5 s against 250 ms.
            assert_eq!(r.verdict.verdict, ordlab::checker::Verdict::Wrong, "{id} run {}: {reasons}", r.run);
        }
        for r in &v.run_records {
            given_up_reads_are_no_answers(id, r);
        }
        if never > 0 {
            assert!(section.contains("never served") || section.contains("not served within"), "{section}");
            let mark = &chart.series[0].unmeasured;
            assert!(mark.iter().any(|u| u.x == (4 + k) as f64), "{id}: the chart marks it: {mark:?}");
        }
        assert!(!section.contains("waited 0 ms"), "{section}");
    }
}

/// A read the client gave up on (redis-py's 5 s timeout closing the connection) is in the
/// record as such, never as an answered read: no recorded exchange answers a command whose
/// reply came for nobody, and where the probe was never served the worker's give-ups and
/// reconnects are counted (`from_url` dies of its first; `Redis()` retries on a new connection).
fn given_up_reads_are_no_answers(id: &str, r: &ordlab::labs::RunRecord) {
    use ordlab::interposer::connections::{ClosedBy, ConnectionEvent, ConnectionStats};
    use ordlab::timeline::Actor;
    let mut gave_up = 0;
    for e in &r.events {
        let (connection, args) = match e.kind.family::<ConnectionEvent>() {
            Some(ConnectionEvent::ReplyForNobody { connection, args, waited_ms, .. }) => {
                assert!(waited_ms >= 4000.0, "{id} run {}: {waited_ms}", r.run);
                (connection, args)
            }
            Some(ConnectionEvent::NoReply { connection, args, by: ClosedBy::Client, .. }) => (connection, args),
            _ => continue,
        };
        gave_up += 1;
        let answered = r.events.iter().any(|x| {
            matches!(&x.kind, EventKind::ServerCommand { connection: c, args: a, .. } if *c == connection && *a == args && (x.t_us - e.t_us).abs() < 200_000)
        });
        assert!(!answered, "{id} run {}: a read given up on is recorded as answered", r.run);
    }
    let stats = ConnectionStats::of(&r.events).remove(&Actor::Consumer(1)).unwrap_or_default();
    assert_eq!(stats.client_gave_up, gave_up, "{id} run {}", r.run);
    let probe_taken = ordlab::labs::priority::served::tracks(&r.events)
        .iter()
        .any(|t| t.phase == ordlab::priority_queue::Phase::AlignedProbe && t.taken_us.is_some());
    if !probe_taken {
        // Never served: the worker gave up on its read at least once before the lab stopped.
        assert!(gave_up >= 1, "{id} run {}: {stats:?}", r.run);
        if id.ends_with("seed-redis") {
            assert!(stats.reconnects[0] >= 1, "{id} run {}: Redis() retries on a new connection: {stats:?}", r.run);
        }
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
    seed_lines_as_written(&report, &counts);
}

/// The seed's database lines as written beside the example's. `--seed-db` (psycopg 3's
/// default transaction, never committed): killed after the e-mail, both effects happen once,
/// yet order 42 is never completed, and the verdict says so, naming the changes never
/// committed; refused, the retry's UPDATE waits for C1's row lock, and the report names the
/// holder as PostgreSQL does. `--literal-cursor` (`rows = db.execute(...)`): the truthy
/// cursor lets the retry call the partner that the example's `.fetchall()` never calls.
fn seed_lines_as_written(report: &ordlab::report::LabReport, counts: &dyn Fn(&str) -> Vec<(i64, i64, i64, i64, i64)>) {
    use ordlab::checker::Verdict;
    use ordlab::labs::Kind as _;
    use ordlab::pg_locks::LockWait;
    use ordlab::timeline::Actor;
    let order_42 = |r: &ordlab::labs::RunRecord| {
        let o = JobsSpec::observed_of(&r.observed).expect("a jobs run");
        o.orders.iter().find(|row| row.order == 42).map(|row| row.status.clone())
    };
    let v = support::variant(report, "python-multistep-crash-seed-db");
    assert!(counts(&v.id).iter().all(|c| *c == (2, 0, 0, 1, 0)), "both effects once: {:?}", counts(&v.id));
    for r in &v.run_records {
        let why = r.verdict.reasons.join("; ");
        assert_eq!((r.verdict.verdict, order_42(r).as_deref()), (Verdict::Wrong, Some("paid")), "{why}");
        assert!(why.contains("order 42 ended paid, expected completed"), "{why}");
        assert!(why.contains("C1's transaction") && why.contains("never committed"), "{why}");
        assert!(why.contains("reaper's transaction") && why.contains("until the run stopped reaper"), "{why}");
    }
    let v = support::variant(report, "python-multistep-refused-seed-db");
    for r in &v.run_records {
        let why = r.verdict.reasons.join("; ");
        assert_eq!((r.verdict.verdict, order_42(r).as_deref()), (Verdict::Wrong, Some("paid")), "{why}");
        let waits = LockWait::of(&r.events);
        let wait = waits.iter().find(|w| w.waiter.map(|(a, _)| a) == Some(Actor::Reaper)).expect("the retry's wait");
        let holder = &wait.holders[0];
        assert_eq!(
            (holder.who.map(|(a, _)| a), holder.state.as_str()),
            (Some(Actor::Consumer(1)), "idle in transaction")
        );
        assert_eq!(wait.statement, "UPDATE");
        assert!(wait.waited_ms() >= 1000.0, "{wait:?}");
        assert!(
            why.contains("reaper's UPDATE") && why.contains("for C1's open transaction (idle in transaction since t="),
            "{why}"
        );
    }
    let (literal, fetchall) = (counts("python-multistep-crash-literal-cursor"), counts("python-multistep-crash"));
    assert!(literal.iter().all(|c| *c == (2, 0, 0, 1, 0)), "the truthy cursor: the partner is called: {literal:?}");
    assert!(fetchall.iter().all(|c| c.1 == 1), "with .fetchall() the retry returns: the partner is lost: {fetchall:?}");
    let v = support::variant(report, "python-multistep-crash-literal-cursor");
    assert!(v
        .run_records
        .iter()
        .all(|r| order_42(r).as_deref() == Some("completed") && r.verdict.verdict == Verdict::Right));
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
