//! `ordlab grade` against the student workers of examples/grade/: each check tells one mistake
//! apart, a worker is judged only once it is back waiting for work, its output never breaks its
//! run, and a class is graded into one gradebook by one command.
//!
//! Certainty: every verdict asserted holds in every run. The early ack is lost by a SIGKILL at
//! the wire (no timing); a stale event is written last by 750 ms of handler work (350 ms at time
//! scale 0.5), its redelivery after 500 ms of min-idle; in the lock-TTL check (TTL 1000 ms, jobs
//! of 1400 ms: 500 and 700 at scale 0.5) the second holder takes the expired lock within the
//! 200 ms before the first one's plain DEL, which lets a third holder in 300 ms before the second
//! one's TTL ends (at 700 ms of work against 500 ms of TTL the window was 100 ms: graded right
//! under load). Only the lock worker's race check is the
//! scheduler's (who locks first), and it is not asserted. The tests need python3 with redis-py
//! and psycopg, and php with phpredis and pgsql; where one is missing, the test says NOT TESTED.

use super::foreign_workers::{missing, PYTHON};
use super::support;
use std::path::Path;

const PHP: [&str; 3] = ["php", "-r", "if (!class_exists('Redis') || !function_exists('pg_connect')) exit(1);"];

fn python() -> bool {
    support::has_runtime("python3 with redis-py and psycopg", missing(&PYTHON))
}

/// `ordlab grade <args>` on local servers: exit code, stdout, stderr.
fn grade(args: &[&str]) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path()).args(["grade", "--backend", "local"]).args(args).output().unwrap();
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The report's line for check `id`: `✕ race: <title>: wrong 1/1`.
fn check_line<'a>(report: &'a str, id: &str) -> &'a str {
    let prefix = |mark: &str| format!("{mark} {id}: ");
    report
        .lines()
        .find(|l| ["✓", "✕", "?"].iter().any(|m| l.starts_with(&prefix(m))))
        .unwrap_or_else(|| panic!("no line for check {id} in:\n{report}"))
}

/// The report's lines under check `id` (its hint, timeline, reasons).
fn check_block(report: &str, id: &str) -> String {
    let first = check_line(report, id);
    let next_check = |l: &&str| ["✓ ", "✕ ", "? "].iter().any(|m| l.starts_with(m)) || l.ends_with("checks right");
    let lines: Vec<&str> = report.lines().skip_while(|l| *l != first).skip(1).take_while(|l| !next_check(l)).collect();
    lines.join("\n")
}

const CHECKS: [&str; 5] = ["race", "late-duplicate", "redelivery", "crash-after-ack", "lock-ttl"];

#[test]
fn the_ack_first_worker_is_wrong_only_by_the_early_ack_never_by_a_cut_off_write() {
    if !python() {
        return;
    }
    let (code, report, err) = grade(&["--runs", "1", "--time-scale", "0.5", "examples/grade/submissions/ack_first.py"]);
    assert_eq!(code, Some(1), "{report}{err}");
    let crash = check_line(&report, "crash-after-ack");
    assert!(crash.starts_with("✕") && crash.ends_with("wrong 1/1"), "{report}");
    let block = check_block(&report, "crash-after-ack");
    assert!(block.contains("hint: an early ack loses the event"), "{block}");
    assert!(block.contains("→ order 42 ended new (v=0), expected created"), "{block}");
    for id in CHECKS.iter().filter(|c| **c != "crash-after-ack") {
        // Judged once both workers are back in XREADGROUP: the write after the ack is made.
        let line = check_line(&report, id);
        assert!(line.starts_with("✓") || line.starts_with("?"), "{id} must not be wrong:\n{report}");
        if line.starts_with("?") {
            assert!(check_block(&report, id).contains("→ "), "{id}: unknown says why:\n{report}");
        }
    }
}

#[test]
fn a_lock_released_by_a_plain_del_is_wrong_when_the_job_outlives_its_ttl() {
    if !python() {
        return;
    }
    let args = ["--check", "lock-ttl", "--runs", "2", "--time-scale", "0.5"];
    let (code, report, err) = grade(&[&args[..], &["examples/grade/submissions/lock_del.py"]].concat());
    assert_eq!(code, Some(1), "{report}{err}");
    assert!(check_line(&report, "lock-ttl").ends_with("wrong 2/2"), "{report}");
    let block = check_block(&report, "lock-ttl");
    assert!(block.contains("→ mutual exclusion broken: ") && block.contains("DEL "), "{block}");
}

#[test]
fn a_lock_released_by_its_token_is_right_when_the_job_outlives_its_ttl() {
    if !python() {
        return;
    }
    let args = ["--check", "lock-ttl", "--runs", "2", "--time-scale", "0.5"];
    let (code, report, err) = grade(&[&args[..], &["examples/grade/lock_token.py"]].concat());
    assert_eq!(code, Some(0), "{report}{err}");
    assert!(check_line(&report, "lock-ttl").ends_with("right 2/2"), "{report}");
}

/// A gradebook's CSV rows by student: the cells of each check, in CHECKS order.
fn rows(csv: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[2..7], CHECKS, "{csv}");
    lines
        .map(|l| {
            let cells: Vec<String> = l.split(',').map(String::from).collect();
            (cells[0].clone(), cells[2..7].to_vec())
        })
        .collect()
}

fn wrong_count(cells: &[String]) -> usize {
    cells.iter().filter(|c| c.starts_with("wrong")).count()
}

#[test]
fn acking_first_is_graded_wrong_in_at_least_as_many_checks_as_the_plain_consumer() {
    if !python() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let (code, text, err) = grade(&[
        "--runs",
        "1",
        "--time-scale",
        "0.5",
        "--out",
        o,
        "examples/grade/submissions/plain_update.py",
        "examples/grade/ack_first_plain.py",
    ]);
    assert_eq!(code, Some(0), "{text}{err}");
    let book = rows(&std::fs::read_to_string(out.path().join("gradebook.csv")).unwrap());
    let (plain, ack_first) = (&book["plain_update"], &book["ack_first_plain"]);
    // The plain consumer: its last write is created's, in the race, the late copy and the
    // redelivery; acking after the work, it loses nothing when killed after its ack.
    assert_eq!(plain, &["wrong 1/1", "wrong 1/1", "wrong 1/1", "right 1/1", "right 1/1"], "{book:?}");
    assert!(wrong_count(ack_first) >= wrong_count(plain), "{book:?}");
    // Acking first, it is judged once back waiting, after its stale writes: wrong where the
    // plain consumer is, and the early ack loses the event killed after it. (Judged at its last
    // XACK, it passed the late copy and the redelivery: their stale write was cut off.)
    assert_eq!(ack_first, &["wrong 1/1", "wrong 1/1", "wrong 1/1", "wrong 1/1", "right 1/1"], "{book:?}");
}

#[test]
fn a_worker_that_prints_invalid_utf8_and_binary_floods_is_graded_on_its_work() {
    if !python() {
        return;
    }
    // 256 KiB of binary bytes on stdout and stderr per entry, after a Latin-1 line ("caf\xe9").
    // (The gradebook's PHP CAS worker writes Latin-1 lines too.)
    let worker = "examples/grade/loud_cas.py";
    let (code, report, err) = grade(&["--runs", "1", "--time-scale", "0.5", worker]);
    assert_eq!(code, Some(0), "{worker}: every check right:\n{report}{err}");
    assert!(report.contains("5 of 5 checks right"), "{report}");
}

#[test]
fn a_worker_that_stops_making_progress_is_cut_once_per_check_not_once_per_run() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("checks.toml");
    std::fs::write(
        &list,
        r#"id = "stuck"
title = "t"
runs = 3
patience_ms = 1500
[setup]
consumers = 1
cost_ms = { created = 10 }
events = [{ order = 42, type = "created", version = 1 }]
[[check]]
id = "one-event"
title = "one event"
hint = { en = "one event, applied", vi = "một sự kiện, được áp dụng" }
"#,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (code, report, err) = grade(&["--checks", list.to_str().unwrap(), "examples/grade/hangs_after_one.py"]);
    let took = started.elapsed();
    assert_eq!(code, Some(1), "{report}{err}");
    let line = check_line(&report, "one-event");
    assert!(line.starts_with("?") && line.ends_with("unknown 1/1"), "one run of 3, unknown:\n{report}");
    let block = check_block(&report, "one-event");
    assert!(block.contains("C1 made no progress for 1.5 s and was not waiting for work"), "{block}");
    assert!(block.contains("XREADGROUP") && block.contains("stopped after run 1 of 3"), "{block}");
    // One patience (1.5 s), not three: servers and the worker's start are the rest.
    assert!(took < std::time::Duration::from_secs(12), "took {took:?}");
}

#[test]
fn a_class_is_graded_into_one_gradebook_by_one_command() {
    if !python() || !support::has_runtime("php with phpredis and pgsql", missing(&PHP)) {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let args = ["--runs", "1", "--time-scale", "0.5", "--patience-ms", "4000", "--out", o];
    let (code, text, err) = grade(&[&args[..], &["examples/grade/submissions"]].concat());
    assert_eq!(code, Some(0), "{text}{err}");
    // Progress on the terminal: n of N, the student, the check.
    assert!(err.contains("[1/10] ack_first: race run 1/1") && err.contains("[10/10] syntax_error"), "{err}");
    let csv = std::fs::read_to_string(out.path().join("gradebook.csv")).unwrap();
    let book = rows(&csv);
    let names: Vec<&str> = book.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "ack_first",
            "cas_php",
            "cas_python",
            "check_then_act",
            "exits_at_once",
            "garbage",
            "hangs",
            "lock_del",
            "plain_update",
            "syntax_error"
        ]
    );
    let right = "right 1/1";
    let wrong = "wrong 1/1";
    assert_eq!(book["ack_first"], [right, right, right, wrong, right], "{csv}");
    for correct in ["cas_php", "cas_python", "check_then_act"] {
        assert_eq!(book[correct], [right; 5], "{correct}: {csv}");
    }
    assert_eq!(book["plain_update"], [wrong, wrong, wrong, right, right], "{csv}");
    // The lock's race is the scheduler's (who locks first); the rest is certain.
    assert_eq!(book["lock_del"][1..], [wrong, wrong, right, wrong], "{csv}");
    let reason = |name: &str| -> String {
        let line = csv.lines().find(|l| l.starts_with(&format!("{name},"))).unwrap();
        assert!(line.contains(",not started,"), "{line}");
        line.to_string()
    };
    assert!(reason("syntax_error").contains("SyntaxError"), "{csv}");
    assert!(reason("exits_at_once").contains("ORDLAB_STREAM_NAME is not set"), "{csv}");
    assert!(reason("hangs").contains("not blocked in XREADGROUP after 4 s"), "{csv}");
    assert!(reason("garbage").contains("exit status: 3"), "{csv}");
    // Each not-started row is one line (a CSV record per line: no raw newline in a reason).
    assert_eq!(csv.lines().count(), 11, "{csv}");
    // The page: a row per student, each cell linked to the check on the student's page, where
    // the first wrong run's timeline is.
    let page = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(page.contains("href=\"students/ack_first.html#crash-after-ack\">wrong 1/1</a>"), "{page}");
    let student = std::fs::read_to_string(out.path().join("students/ack_first.html")).unwrap();
    assert!(student.contains("id=\"crash-after-ack\"") && student.contains("XACK"), "{student}");
    assert!(Path::new(&out.path().join("students/syntax_error.html")).is_file());
}

/// The work-first check-then-act worker: sampled, the race check is right (paid's write lands
/// 750 ms before created's SELECT); explored, some order puts paid's SELECT and UPDATE between
/// created's SELECT and UPDATE. The search's depth-first order reaches that class in its 12th
/// run; 30 leave room for a search that orders its runs otherwise. Its replay is the same class.
#[test]
fn explored_the_work_first_check_then_act_worker_is_wrong_with_a_schedule_to_replay() {
    if !python() {
        return;
    }
    let worker = "examples/grade/submissions/check_then_act.py";
    let (code, report, err) = grade(&["--explore", "--check", "race", "--max-schedules", "30", worker]);
    assert_eq!(code, Some(1), "{report}{err}");
    let line = check_line(&report, "race");
    assert!(line.starts_with("✕") && line.contains(": wrong in "), "{report}");
    let block = check_block(&report, "race");
    assert!(block.contains("hint: paid is written first"), "{block}");
    assert!(block.contains("→ order 42 ended created (v=1), expected paid"), "{block}");
    let replay = block.lines().find_map(|l| l.trim().strip_prefix("replay it: ")).expect("a replay line");
    let schedule = replay.split(" --schedule ").nth(1).and_then(|s| s.split(' ').next()).unwrap();
    // The replay starts with its schedule; its steps are numbered in the order they ran.
    let (code, replayed, err) = grade(&["--check", "race", "--schedule", schedule, "--", "python3", worker]);
    assert_eq!(code, Some(1), "{replayed}{err}");
    let mut lines = replayed.lines().skip(1);
    assert!(lines.next().unwrap().starts_with(&format!("schedule {schedule} (")), "{replayed}");
    assert!(lines.next().unwrap().trim_start().starts_with("1. P XADD"), "{replayed}");
    assert!(replayed.contains("→ order 42 ended created (v=1), expected paid"), "{replayed}");
}

/// A lock worker whose tokens are `uuid4()`s: each run's SET carries another token, and the
/// search still matches its steps (their shape leaves the token out) instead of stopping at
/// the first replayed prefix.
#[test]
fn explored_a_lock_worker_with_random_tokens_is_stepped() {
    if !python() {
        return;
    }
    let args = ["--explore", "--check", "race", "--max-schedules", "6", "examples/grade/submissions/lock_del.py"];
    let (code, report, err) = grade(&args);
    assert_eq!(code, Some(1), "{report}{err}");
    let line = check_line(&report, "race");
    assert!(line.contains(" orders"), "graded by classes: {report}{err}");
    assert!(!err.contains("the schedule asks for"), "{err}");
}
