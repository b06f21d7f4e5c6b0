//! One variant's section: title and set-up, a run's timeline, every run's final state, what
//! was measured, and the count of wrong runs against the expectation.

use super::{fates, timeline, TextOptions};
use crate::checker::{Outcome, Verdict};
use crate::labs::{FinalItem, RunRecord};
use crate::lang::{pick, Lang};
use crate::report::VariantReport;
use crate::stats::wilson_95;
use std::fmt::Write;

/// More items than this are summarised (`3/1000-wrong`): listing fifty statuses helps nobody.
const LISTED_ITEMS: usize = 5;

/// Write the section to `out`; the numbers (0-based, in `out`) of the lines that carry a
/// verdict go to `verdicts`.
pub fn render(out: &mut String, v: &VariantReport, opts: &TextOptions, verdicts: &mut Vec<usize>) {
    let _ = writeln!(out, "### {}: {}; {}", v.id, v.title.get(opts.lang), v.procedure.describe(opts.lang));
    if let Some(why) = &v.skipped {
        let _ = writeln!(out, "  {}: {why}", pick(opts.lang, "skipped", "bỏ qua"));
        return;
    }
    if opts.redact.active() && v.timer_race {
        // Served late in one run, never in the next: only the verdict is the same every run.
        let note = pick(
            opts.lang,
            "[run details: a race between the client's timeout and the server's reply decides them, they differ run to run; the verdict does not]",
            "[chi tiết từng lần: do cuộc đua giữa timeout của client và reply của server quyết định, khác nhau mỗi lần; kết luận thì không]",
        );
        let _ = writeln!(out, "  {note}");
        verdict(out, v, opts, false, verdicts);
        mark(out, verdicts);
        expectation(out, v, opts, false);
        return;
    }
    let hidden = opts.redact.active() && v.scheduler_race && !v.procedure.per_process_stable();
    if hidden {
        let _ = writeln!(out, "  [timeline: decided by the OS scheduler, differs run to run]");
    } else if let Some(r) = v.record(opts.timeline_run) {
        let by_process = v.scheduler_race || v.procedure.processes_interleave_freely();
        timeline::render(out, r, &v.procedure, opts, by_process);
        if opts.redact.active() && v.scheduler_race {
            let note = pick(
                opts.lang,
                "[timeline listed process by process: the order between processes is the race this variant measures]",
                "[dòng thời gian liệt kê theo từng process: thứ tự giữa các process là cuộc đua mà biến thể này đo]",
            );
            let _ = writeln!(out, "  {note}");
        } else if opts.redact.active() && by_process {
            let note = pick(
                opts.lang,
                "[timeline listed process by process: the processes run side by side and their interleaving differs run to run]",
                "[dòng thời gian liệt kê theo từng process: các process chạy song song và thứ tự xen kẽ khác nhau mỗi lần]",
            );
            let _ = writeln!(out, "  {note}");
        }
    }
    outcome_marked(out, v, opts, verdicts);
}

/// Everything after the timeline: every run's final state, the lab's per-run lines, what was
/// measured, and the count of wrong runs against the expectation (the lab book shows these
/// lines under its step-through picture).
pub fn outcome(out: &mut String, v: &VariantReport, opts: &TextOptions) {
    outcome_marked(out, v, opts, &mut Vec::new());
}

/// The next line written to `out` carries a verdict: note its number.
fn mark(out: &str, verdicts: &mut Vec<usize>) {
    verdicts.push(out.matches('\n').count());
}

/// [`outcome`], noting which lines carry a verdict: the final states, the count of wrong
/// (and of unjudged) runs, the expectation.
fn outcome_marked(out: &mut String, v: &VariantReport, opts: &TextOptions, verdicts: &mut Vec<usize>) {
    // A measured-only or at-least-one count differs between runs of the lab: redact it.
    let unstable = opts.redact.active() && v.expected.is_probabilistic();
    // Where the scheduler decides the interleaving, each run's details differ too.
    let per_run_varies = unstable || (opts.redact.active() && v.scheduler_race);
    // A lab that leaves no final state (a throughput sweep) has no status line.
    let has_final_state = v.run_records.iter().any(|r| !v.procedure.final_state(r).is_empty());
    let finals: Vec<String> = v
        .run_records
        .iter()
        .map(|r| {
            if per_run_varies {
                "[status]".to_string()
            } else {
                final_label(&v.procedure.final_state(r), r, |r| fates::not_applied(v, r), opts)
            }
        })
        .collect();
    let label = pick(opts.lang, "final status per run", "status cuối từng lần");
    if has_final_state {
        mark(out, verdicts);
        let _ = writeln!(out, "  {label}: {}", finals.join(" "));
    }
    for line in v.procedure.per_run_lines(&v.run_records, opts.lang) {
        let line = if per_run_varies { line.redacting_numbers() } else { line };
        let _ = writeln!(out, "  {}", opts.redact.line(&line));
    }
    fates::per_run(out, v, opts, per_run_varies);
    facts(out, v, opts);
    verdict(out, v, opts, unstable, verdicts);
    if let Some(r) = v.run_records.iter().find(|r| r.events.iter().any(|e| !e.kind.last_lines().is_empty())) {
        last_lines(out, r, opts);
    }
    fates::dropped_example(out, v, opts, per_run_varies);
    mark(out, verdicts);
    expectation(out, v, opts, unstable);
}

/// A run's final state in one token: `created✕`, `paid−1` (one event dropped),
/// `#42:created/#43:paid`, or `3/1000-wrong`.
fn final_label(items: &[FinalItem], r: &RunRecord, fates_of: impl Fn(&RunRecord) -> u32, opts: &TextOptions) -> String {
    let mark = match r.verdict.verdict {
        Verdict::Wrong => "✕",
        Verdict::Unknown => "?",
        Verdict::Right => "",
    };
    // `paid−1`: right final state, one event dropped (never applied).
    let mark = match fates_of(r) {
        0 => mark.to_string(),
        k => format!("{mark}−{k}"),
    };
    match items {
        [one] => format!("{}{mark}", one.value),
        many if many.len() > LISTED_ITEMS => {
            let wrong = many.iter().filter(|i| i.is_wrong()).count();
            // How many of a thousand orders go wrong varies run to run.
            let wrong = if wrong > 0 { opts.redact.count(wrong) } else { "0".into() };
            format!("{wrong}/{}-wrong{mark}", many.len())
        }
        few => {
            let all: Vec<String> = few.iter().map(|i| format!("{}:{}", i.subject, i.value)).collect();
            format!("{}{mark}", all.join("/"))
        }
    }
}

/// `measured (run N): name=value, …` for every run that measured something.
fn facts(out: &mut String, v: &VariantReport, opts: &TextOptions) {
    for r in &v.run_records {
        let facts = v.procedure.fact_rows(r);
        if facts.is_empty() {
            continue;
        }
        let shown: Vec<String> = facts
            .iter()
            .map(|f| format!("{}={}", f.name, if f.stable { f.value.to_string() } else { opts.redact.count(f.value) }))
            .collect();
        let (measured, run) = (pick(opts.lang, "measured", "đo được"), pick(opts.lang, "run", "lần"));
        let _ = writeln!(out, "  {measured} ({run} {}): {}", r.run, shown.join(", "));
    }
}

/// The count of wrong runs, why the first one is wrong, and whether it matches.
fn verdict(out: &mut String, v: &VariantReport, opts: &TextOptions, unstable: bool, verdicts: &mut Vec<usize>) {
    let k = if unstable { "[k]".to_string() } else { v.wrong.to_string() };
    let interval = if v.expected.is_probabilistic() && !opts.redact.active() {
        let (lo, hi) = wilson_95(v.wrong, v.runs - v.unknown);
        format!(" ({} {:.0}–{:.0} %)", pick(opts.lang, "95 % interval", "khoảng tin cậy 95 %"), lo * 100.0, hi * 100.0)
    } else {
        String::new()
    };
    let runs = pick(opts.lang, "runs", "lần");
    let drops = fates::verdict_part(v, opts, unstable);
    mark(out, verdicts);
    let _ = writeln!(out, "  → {}: {k}/{} {runs}{interval}{drops}", v.procedure.wrong_means(opts.lang), v.runs);
    // Why the first wrong run is wrong, in the checker's words (they name entry IDs, so the
    // snapshot leaves them out).
    if let Some(r) =
        v.run_records.iter().find(|r| r.verdict.verdict == Verdict::Wrong).filter(|_| !opts.redact.active())
    {
        let (why, run) = (pick(opts.lang, "why", "vì sao"), pick(opts.lang, "run", "lần"));
        let _ = writeln!(out, "  {why} ({run} {}): {}", r.run, r.verdict.reasons.join("; "));
    }
    if v.unknown > 0 {
        let (u, n) = (v.unknown, v.runs);
        mark(out, verdicts);
        let _ = writeln!(
            out,
            "  {}",
            crate::tr!(opts.lang, "→ could not judge: {u}/{n} runs", "→ không kết luận được: {u}/{n} lần")
        );
        if let Some(r) = v.run_records.iter().find(|r| r.verdict.verdict == Verdict::Unknown) {
            unknown_why(out, r, opts);
        }
    }
}

/// Why a run could not be judged, always: the checker's reasons (the process that died and
/// how, the limit that ran out), then the last lines each process that died unplanned wrote.
/// A snapshot redacts the reasons' numbers and leaves the lines out (they name paths of this
/// machine), saying so.
fn unknown_why(out: &mut String, r: &RunRecord, opts: &TextOptions) {
    let (why, run) =
        (pick(opts.lang, "why it could not be judged", "vì sao không kết luận được"), pick(opts.lang, "run", "lần"));
    let reasons = r.verdict.reasons.join("; ");
    let reasons = if opts.redact.active() { redact_reason(&reasons) } else { reasons };
    let _ = writeln!(out, "  {why} ({run} {}): {reasons}", r.run);
}

/// A checker's reason as a snapshot keeps it: its times (`t=7163 ms`, `5053 ms`) and entry IDs
/// redacted, its words and the names of processes kept.
fn redact_reason(reason: &str) -> String {
    static TIMES: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d+(\.\d+)? (ms|s)\b").expect("a valid pattern"));
    static IDS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b\d+-\d+\b").expect("a valid pattern"));
    IDS.replace_all(&TIMES.replace_all(reason, "[ms]"), "[id]").into_owned()
}

/// The last lines every process that died unplanned in run `r` wrote (a Python traceback's
/// end): what it said before it went.
fn last_lines(out: &mut String, r: &RunRecord, opts: &TextOptions) {
    for e in r.events.iter().filter(|e| !e.kind.last_lines().is_empty()) {
        let (actor, run, t) = (e.actor, r.run, opts.redact.ms(e.t_ms()));
        let head = crate::tr!(
            opts.lang,
            "{actor}'s last lines before it died (run {run}, t={t})",
            "những dòng cuối của {actor} trước khi chết (lần {run}, t={t})"
        );
        if opts.redact.active() {
            let _ = writeln!(out, "  {head}: [left out: they name this machine's paths]");
            continue;
        }
        let _ = writeln!(out, "  {head}:");
        for line in e.kind.last_lines() {
            let _ = writeln!(out, "    | {line}");
        }
    }
}

/// Why a `some` not shown does not fail: the runs made against the lab's own.
fn too_few_runs(v: &VariantReport, lang: Lang) -> String {
    let (runs, planned) = (v.runs, v.planned_runs);
    crate::tr!(
        lang,
        "NOT SHOWN in {runs} runs: too few to show it (the expectation is for the lab's {planned}; --runs {planned})",
        "CHƯA THẤY trong {runs} lần chạy: quá ít để thấy (kỳ vọng dành cho {planned} lần của lab; --runs {planned})"
    )
}

/// The expectation and whether the runs meet it.
fn expectation(out: &mut String, v: &VariantReport, opts: &TextOptions, unstable: bool) {
    let outcome = match (v.outcome, opts.lang) {
        // With a snapshot's few runs, an at-least-one count can miss by chance: the outcome is
        // only meaningful over the lab's full runs.
        _ if unstable => "[outcome]",
        (Outcome::Matched, Lang::En) => "matches",
        (Outcome::Matched, Lang::Vi) => "khớp",
        (Outcome::Mismatched, Lang::En) => "DOES NOT MATCH",
        (Outcome::Mismatched, Lang::Vi) => "KHÔNG KHỚP",
        (Outcome::Inconclusive, Lang::En) => "INCONCLUSIVE",
        (Outcome::Inconclusive, Lang::Vi) => "CHƯA KẾT LUẬN",
        (Outcome::Skipped, Lang::En) => "skipped",
        (Outcome::Skipped, Lang::Vi) => "bỏ qua",
        (Outcome::TooFewRuns, _) => &too_few_runs(v, opts.lang),
    };
    let expected = pick(opts.lang, "expected wrong", "kỳ vọng số lần sai");
    let dropped = if v.expected_dropped != crate::checker::Expectation::None || v.dropped > 0 {
        format!(", {}: {}", pick(opts.lang, "dropped", "bỏ sót"), v.expected_dropped)
    } else {
        String::new()
    };
    let _ = writeln!(out, "  {expected}: {}{dropped} → {outcome}", v.expected);
}
