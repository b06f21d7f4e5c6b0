//! The text renderer on synthesized reports: no servers, every line checked.

use super::*;
use crate::checker::{Expectation, Outcome, RunVerdict, Verdict};
use crate::labs::order_stream::StreamObserved;
use crate::labs::{Observed, RunRecord};
use crate::orders::OrderRow;
use crate::report::{Environment, LabInfo, VariantReport};
use crate::scenario::Variant;
use crate::streams::StreamEntry;
use crate::timeline::{Actor, Event, EventKind, Job};

const BASELINE: &str = r#"consumers = 2
cost_ms = { created = 800, paid = 50 }
events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#;

fn env() -> Environment {
    Environment {
        ordlab_version: "0.1.0".into(),
        git_commit: "abc1234".into(),
        backend: "local".into(),
        redis_version: "8.6.3".into(),
        redis_server: String::new(),
        postgres_version: "15.18".into(),
        lock_release: "DELEX IFEQ".into(),
        command_line: "ordlab run baseline".into(),
        date: "2026-11-29T20:00:00Z".into(),
        seed: 7,
        time_scale: 1.0,
    }
}

fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
    Event { t_us, actor, kind }
}

fn received(t_us: i64, c: u32, id: &str, t: &str, v: i64) -> Event {
    ev(t_us, Actor::Consumer(c), EventKind::Received { entry_id: id.into(), job: Job::new(42, t, v), deliveries: None })
}

fn wrote(t_us: i64, c: u32, id: &str, status: &str) -> Event {
    wrote_order(t_us, c, id, 42, status)
}

fn wrote_order(t_us: i64, c: u32, id: &str, order: i64, status: &str) -> Event {
    let kind = EventKind::Wrote { entry_id: id.into(), order, status: status.into(), version: None, rows: 1 };
    ev(t_us, Actor::Consumer(c), kind)
}

/// A baseline run: C2 writes paid at 53 ms, C1 writes created at 803 ms.
fn baseline_run(run: u32, verdict: Verdict, final_status: &str) -> RunRecord {
    let events = vec![
        received(2_300, 2, "1-1", "paid", 2),
        received(2_400, 1, "1-0", "created", 1),
        wrote(53_000, 2, "1-1", "paid"),
        ev(53_100, Actor::Consumer(2), EventKind::Acked { entry_id: "1-1".into() }),
        wrote(803_000, 1, "1-0", "created"),
    ];
    let observed = Observed::Stream(StreamObserved {
        stream: vec![
            StreamEntry { shard: 0, entry_id: "1-0".into(), job: Job::new(42, "created", 1) },
            StreamEntry { shard: 0, entry_id: "1-1".into(), job: Job::new(42, "paid", 2) },
        ],
        final_rows: vec![OrderRow { order: 42, status: final_status.into(), version: 1 }],
        entry_bytes: None,
        pending_after_run: None,
        documents: None,
        waiting_order: vec![1, 2],
    });
    let reasons =
        if verdict == Verdict::Wrong { vec!["order 42 ended created (v=1), expected paid".into()] } else { vec![] };
    RunRecord { run, events, timed_out: false, observed, verdict: RunVerdict { verdict, reasons } }
}

fn variant(id: &str, setup: &str, expect: Expectation, runs: Vec<RunRecord>) -> VariantReport {
    let v = Variant {
        id: id.into(),
        title: "The bug".into(),
        runs: runs.len() as u32,
        procedure: crate::scenario::setup_from_toml(setup).unwrap(),
        expect,
        expect_dropped: Expectation::None,
        scheduler_race: false,
        timer_race: false,
        seed: None,
        explored: None,
        explore_setup: None,
    };
    VariantReport::tally(&v, runs)
}

fn report(variants: Vec<VariantReport>) -> LabReport {
    LabReport {
        schema_version: crate::SCHEMA_VERSION,
        environment: env(),
        lab: LabInfo {
            id: "baseline".into(),
            title: "The bug".into(),
            source: "seed 001, 08a".into(),
            description: None,
            question: Some(crate::lang::Words {
                en: "Two consumers in parallel: which write wins?".into(),
                vi: "Hai consumer song song: lần ghi nào thắng?".into(),
            }),
            family: Some("ordering".into()),
        },
        variants,
        from_all_runs: None,
    }
}

fn baseline(n: u32) -> LabReport {
    let runs = (1..=n).map(|i| baseline_run(i, Verdict::Wrong, "created")).collect();
    report(vec![variant("baseline", BASELINE, Expectation::All, runs)])
}

#[test]
fn a_report_in_the_seed_shape() {
    let text = render(&baseline(2), &TextOptions::default());
    let expected = "\
ordlab 0.1.0 (commit abc1234) · backend local · Redis 8.6.3 · PostgreSQL 15.18 · lock release: DELEX IFEQ
ordlab run baseline · 2026-11-29T20:00:00Z · seed 7 · time scale 1

# baseline — The bug
question: Two consumers in parallel: which write wins?
source: seed 001, 08a

### baseline: The bug; 2 consumers in parallel (2 processes); created 800 ms, paid 50 ms; plain UPDATE
run 1 — stream: 1-0 created (v=1), 1-1 paid (v=2)
  t=   2 ms  C2 received 1-1 paid (v=2)
  t=   2 ms  C1 received 1-0 created (v=1)
  t=  53 ms  C2 wrote status=paid → UPDATE 1
  t= 803 ms  C1 wrote status=created → UPDATE 1
  consumers waiting in XREADGROUP, longest first (Redis hands a new entry to the longest waiter): C1, C2
  final status per run: created✕ created✕
  created taken by, per run: C1 C1 → C1 took created in 2 of 2 runs
  events per run (dropped / lost / applied twice / applied out of order): 0/0/0/1 0/0/0/1
  → wrong final state (not paid): 2/2 runs
  why (run 1): order 42 ended created (v=1), expected paid
  expected wrong: all → matches
";
    assert_eq!(text, expected);
}

#[test]
fn vietnamese_follows_the_seed_wording() {
    let text = render(&baseline(1), &TextOptions { lang: Lang::Vi, ..TextOptions::default() });
    assert!(text.contains("câu hỏi: Hai consumer song song: lần ghi nào thắng?\nnguồn: seed 001, 08a"), "{text}");
    assert!(text.contains("2 consumer song song (2 process); created 800 ms, paid 50 ms; UPDATE thường"), "{text}");
    assert!(text.contains("lần 1 — stream:"), "{text}");
    assert!(text.contains("t=  53 ms  C2 ghi status=paid → UPDATE 1"), "{text}");
    assert!(text.contains("  status cuối từng lần: created✕"), "{text}");
    assert!(text.contains("  → SAI trạng thái cuối (không phải paid): 1/1 lần"), "{text}");
    assert!(text.contains("  kỳ vọng số lần sai: all → khớp"), "{text}");
}

#[test]
fn the_snapshot_form_redacts_what_varies_and_keeps_the_true_order() {
    let text = render(&baseline(1), &TextOptions { redact: Redactor::SNAPSHOT, ..TextOptions::default() });
    assert!(text.starts_with("ordlab [version] · backend [backend] · Redis [version] · PostgreSQL [version]\n"));
    assert!(!text.contains("1-0") && !text.contains("803"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("  t=")).collect();
    // The two receives, 0.1 ms apart in different processes, are listed by process; the
    // writes keep their real order: paid first, then the stale created over it.
    assert_eq!(
        lines,
        [
            "  t=[ms]  C1 received [id] created (v=1)",
            "  t=[ms]  C2 received [id] paid (v=2)",
            "  t=[ms]  C2 wrote status=paid → UPDATE 1",
            "  t=[ms]  C1 wrote status=created → UPDATE 1",
        ]
    );
    assert!(text.contains("  → wrong final state (not paid): 1/1 runs\n  expected wrong: all → matches"), "{text}");
}

#[test]
fn a_measured_count_comes_with_its_interval_and_is_redacted_in_snapshots() {
    let runs = vec![baseline_run(1, Verdict::Wrong, "created"), baseline_run(2, Verdict::Right, "paid")];
    let r = report(vec![variant("s4a", BASELINE, Expectation::Any, runs)]);
    let text = render(&r, &TextOptions::default());
    assert!(text.contains("  final status per run: created✕ paid\n"), "{text}");
    assert!(text.contains("  → wrong final state (not paid): 1/2 runs (95 % interval 9–91 %)"), "{text}");
    assert!(text.contains("expected wrong: any (measured only) → matches"), "{text}");
    let snap = render(&r, &TextOptions { redact: Redactor::SNAPSHOT, ..TextOptions::default() });
    assert!(snap.contains("final status per run: [status] [status]"), "{snap}");
    assert!(snap.contains(": [k]/2 runs\n") && snap.contains("→ [outcome]"), "{snap}");
}

#[test]
fn undecided_runs_and_mismatches_are_said() {
    let mut unknown = baseline_run(2, Verdict::Unknown, "paid");
    unknown.timed_out = true;
    unknown.verdict.reasons =
        vec!["C1 died unplanned: exit status: 1: TimeoutError: Timeout reading from socket".into()];
    let died = EventKind::died(
        "exit status: 1: TimeoutError: Timeout reading from socket",
        vec!["  File \"w.py\", line 9, in <module>".into(), "TimeoutError: Timeout reading from socket".into()],
    );
    unknown.events.push(ev(900_000, Actor::Consumer(1), died));
    let r = report(vec![variant(
        "baseline",
        BASELINE,
        Expectation::All,
        vec![baseline_run(1, Verdict::Wrong, "created"), unknown],
    )]);
    assert_eq!(r.variants[0].outcome, Outcome::Inconclusive);
    let text = render(&r, &TextOptions::default());
    assert!(text.contains("  final status per run: created✕ paid?"), "{text}");
    assert!(text.contains("  → could not judge: 1/2 runs"), "{text}");
    // Why, always: the checker's reason and what the process wrote last.
    assert!(
        text.contains(
            "  why it could not be judged (run 2): C1 died unplanned: exit status: 1: TimeoutError: Timeout reading from socket\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  C1's last lines before it died (run 2, t=900 ms):\n    |   File \"w.py\", line 9, in <module>\n    | TimeoutError"),
        "{text}"
    );
    assert!(text.contains("expected wrong: all → INCONCLUSIVE"), "{text}");
    let snap = render(&r, &TextOptions { redact: Redactor::SNAPSHOT, ..TextOptions::default() });
    assert!(
        snap.contains("why it could not be judged (run 2): C1 died unplanned: exit status: 1: TimeoutError"),
        "{snap}"
    );
    assert!(
        snap.contains("C1's last lines before it died (run 2, t=[ms]): [left out: they name this machine's paths]"),
        "{snap}"
    );
}

#[test]
fn facts_are_printed_per_run_and_only_measured_ones_are_redacted() {
    let setup = format!("{BASELINE}\nfaults = [{{ on = \"C1\", event = \"received\", job = \"created\" }}]\nreaper = {{ min_idle_ms = 300 }}");
    let mut run = baseline_run(1, Verdict::Wrong, "created");
    if let Observed::Stream(o) = &mut run.observed {
        o.pending_after_run = Some(0);
    }
    run.events.push(ev(
        400_000,
        Actor::Reaper,
        EventKind::Received { entry_id: "1-0".into(), job: Job::new(42, "created", 1), deliveries: Some(2) },
    ));
    let r = report(vec![variant("plain", &setup, Expectation::All, vec![run])]);
    let text = render(&r, &TextOptions { redact: Redactor::SNAPSHOT, ..TextOptions::default() });
    assert!(
        text.contains("  measured (run 1): pending_after_run=0, redelivered_same_id=1, claimed_delivery_count=2, never_delivered=0"),
        "{text}"
    );
    assert!(
        text.contains(
            "C1 SIGKILLed right after receiving created, before XACK; reaper: XAUTOCLAIM min-idle 300 ms, every 50 ms"
        ),
        "{text}"
    );
}

#[test]
fn many_orders_are_summarised_and_a_long_timeline_is_cut() {
    let events: Vec<String> = (1..=60).map(|o| format!("{{ order = {o}, type = \"paid\", version = 2 }}")).collect();
    let setup = format!("consumers = 1\nevents = [{}]", events.join(", "));
    let rows: Vec<OrderRow> = (1..=60)
        .map(|o| OrderRow { order: o, status: if o <= 3 { "new" } else { "paid" }.into(), version: 2 })
        .collect();
    let timeline: Vec<Event> = (1..=60).map(|o| wrote_order(o * 1000, 1, &format!("{o}-0"), o, "paid")).collect();
    let observed = Observed::Stream(StreamObserved {
        stream: vec![],
        final_rows: rows,
        entry_bytes: None,
        pending_after_run: None,
        documents: None,
        waiting_order: vec![],
    });
    let verdict = RunVerdict { verdict: Verdict::Wrong, reasons: vec![] };
    let run = RunRecord { run: 1, events: timeline, timed_out: false, observed, verdict };
    let r = report(vec![variant("many", &setup, Expectation::Some, vec![run])]);
    let text = render(&r, &TextOptions::default());
    assert!(text.contains("  final status per run: 3/60-wrong✕"), "{text}");
    // 40 lines from the start, 10 from the end; the 9 between are left to the JSON.
    assert!(text.contains("  t=  40 ms  C1 wrote status=paid (#40) → UPDATE 1\n  … 9 more lines (every event is in the JSON)\n  t=  50 ms"), "{text}");
    assert!(text.contains("→ wrong final state (not each order's last event): 1/1 runs"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("  t=")).count(), 51);
}

#[test]
fn a_variant_the_server_cannot_run_is_skipped_and_says_why() {
    let v = Variant {
        id: "idmp".into(),
        title: "IDMP".into(),
        runs: 3,
        procedure: crate::scenario::setup_from_toml(BASELINE).unwrap(),
        expect: Expectation::None,
        expect_dropped: Expectation::None,
        scheduler_race: false,
        timer_race: false,
        seed: None,
        explored: None,
        explore_setup: None,
    };
    let skipped = VariantReport::skipped(&v, "needs Redis ≥ 8.6 (XADD … IDMP); this server is 7.0.15".into());
    let r = report(vec![
        variant("baseline", BASELINE, Expectation::All, vec![baseline_run(1, Verdict::Wrong, "created")]),
        skipped,
    ]);
    assert_eq!(r.variants[1].outcome, Outcome::Skipped);
    assert!(r.matched(), "a skipped variant does not fail the lab");
    let text = render(&r, &TextOptions::default());
    assert!(
        text.contains("### idmp: IDMP; ")
            && text.contains("\n  skipped: needs Redis ≥ 8.6 (XADD … IDMP); this server is 7.0.15\n"),
        "{text}"
    );
    let vi = render(&r, &TextOptions { lang: Lang::Vi, ..TextOptions::default() });
    assert!(vi.contains("  bỏ qua: needs Redis ≥ 8.6"), "{vi}");
    assert_eq!(r.rejudged().variants[1].outcome, Outcome::Skipped, "re-judging keeps it skipped");
}

#[test]
fn the_renderer_marks_the_verdict_lines_it_writes() {
    let mut unknown = baseline_run(2, Verdict::Unknown, "paid");
    unknown.timed_out = true;
    unknown.verdict.reasons =
        vec!["C1 died unplanned: exit status: 1: TimeoutError: Timeout reading from socket".into()];
    let died = EventKind::died(
        "exit status: 1: TimeoutError: Timeout reading from socket",
        vec!["  File \"w.py\", line 9, in <module>".into(), "TimeoutError: Timeout reading from socket".into()],
    );
    unknown.events.push(ev(900_000, Actor::Consumer(1), died));
    let r = report(vec![variant(
        "baseline",
        BASELINE,
        Expectation::All,
        vec![baseline_run(1, Verdict::Wrong, "created"), unknown],
    )]);
    for lang in [Lang::En, Lang::Vi] {
        let opts = TextOptions { lang, redact: Redactor::SNAPSHOT, ..TextOptions::default() };
        let marked = render_marked(&r, &opts);
        assert_eq!(marked.text, render(&r, &opts));
        let lines: Vec<&str> = marked.text.lines().collect();
        let verdicts: Vec<&str> = marked.verdict_lines.iter().map(|&i| lines[i]).collect();
        let (status, could_not, expected) = match lang {
            Lang::En => ("  final status per run: ", "  → could not judge: ", "  expected wrong: "),
            Lang::Vi => ("  status cuối từng lần: ", "  → không kết luận được: ", "  kỳ vọng số lần sai: "),
        };
        assert_eq!(verdicts.len(), 4, "{verdicts:?}");
        assert!(verdicts[0].starts_with(status) && verdicts[1].starts_with("  → "), "{verdicts:?}");
        assert!(verdicts[2].starts_with(could_not) && verdicts[3].starts_with(expected), "{verdicts:?}");
    }
}
