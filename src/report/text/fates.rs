//! What became of the events, next to the final state: per run the events dropped, lost,
//! applied twice and applied out of order (`checker::fates`), the drops in the verdict line
//! (`right final state, 1 event dropped: 5/5 runs`) and the first run's dropped events.

use super::TextOptions;
use crate::checker::fates::{DropReason, Fate, FateCounts};
use crate::labs::RunRecord;
use crate::lang::{pick, Lang};
use crate::report::VariantReport;
use std::fmt::Write;

/// Events of `r` that never took effect (0 where the lab delivers nothing through a queue).
pub fn not_applied(v: &VariantReport, r: &RunRecord) -> u32 {
    v.procedure.fates(r).map_or(0, |f| f.counts().not_applied())
}

/// `events per run (dropped/lost/applied twice/out of order): 1/0/0/0 1/0/0/0`.
pub fn per_run(out: &mut String, v: &VariantReport, opts: &TextOptions, varies: bool) {
    let counts: Vec<FateCounts> =
        v.run_records.iter().filter_map(|r| v.procedure.fates(r)).map(|f| f.counts()).collect();
    if counts.is_empty() {
        return;
    }
    let cells: Vec<String> = counts
        .iter()
        .map(|c| {
            let cell = format!("{}/{}/{}/{}", c.dropped, c.lost, c.applied_twice, c.out_of_order);
            if varies && opts.redact.active() {
                "[n]".to_string()
            } else {
                cell
            }
        })
        .collect();
    let label = pick(
        opts.lang,
        "events per run (dropped / lost / applied twice / applied out of order)",
        "sự kiện từng lần (bị bỏ / bị mất / áp dụng hai lần / áp dụng sai thứ tự)",
    );
    let _ = writeln!(out, "  {label}: {}", cells.join(" "));
}

/// ` · right final state, 1 event dropped: 5/5 runs` after the count of wrong runs. Where the
/// drops vary between runs of the lab (`dropped = "any"`), a snapshot always shows the part,
/// its count redacted; where the wrong runs vary, it does not say whether the dropping runs
/// were the right ones.
pub fn verdict_part(v: &VariantReport, opts: &TextOptions, unstable: bool) -> String {
    let drops_vary = opts.redact.active() && v.expected_dropped.is_probabilistic() && v.procedure.intended().is_some();
    if v.dropped == 0 && !drops_vary {
        return String::new();
    }
    let with_drops: Vec<(&RunRecord, u32)> =
        v.run_records.iter().map(|r| (r, not_applied(v, r))).filter(|(_, k)| *k > 0).collect();
    let all_right =
        !unstable && !drops_vary && with_drops.iter().all(|(r, _)| r.verdict.verdict == crate::checker::Verdict::Right);
    let same = with_drops.first().map(|(_, k)| *k).filter(|k| !drops_vary && with_drops.iter().all(|(_, j)| j == k));
    let events = match (same, opts.lang) {
        (Some(1), Lang::En) => "1 event dropped".to_string(),
        (Some(k), Lang::En) => format!("{k} events dropped"),
        (None, Lang::En) => "events dropped".to_string(),
        (Some(k), Lang::Vi) => format!("{k} sự kiện bị bỏ"),
        (None, Lang::Vi) => "có sự kiện bị bỏ".to_string(),
    };
    let head = match (all_right, opts.lang) {
        (true, Lang::En) => format!("right final state, {events}"),
        (true, Lang::Vi) => format!("trạng thái cuối đúng, {events}"),
        (false, _) => events,
    };
    let k = if drops_vary { "[k]".to_string() } else { v.dropped.to_string() };
    format!(" · {head}: {k}/{} {}", v.runs, pick(opts.lang, "runs", "lần"))
}

fn reason(r: DropReason, lang: Lang) -> &'static str {
    match r {
        DropReason::Stale => pick(lang, "skipped as stale (UPDATE 0)", "bỏ qua vì cũ (UPDATE 0)"),
        DropReason::Buffer => pick(lang, "dropped by the reorder buffer", "bộ đệm sắp xếp lại bỏ đi"),
        DropReason::Refused => pick(lang, "the database refused the write", "database từ chối lệnh ghi"),
        DropReason::ConsumerDied => pick(lang, "its consumer died holding it", "consumer giữ nó đã chết"),
        DropReason::NotApplied => pick(lang, "never written", "không được ghi"),
    }
}

/// `dropped (run 1): created (v=1) — skipped as stale (UPDATE 0)`.
pub fn dropped_example(out: &mut String, v: &VariantReport, opts: &TextOptions, varies: bool) {
    let Some((run, fates)) = v
        .run_records
        .iter()
        .find_map(|r| v.procedure.fates(r).filter(|f| f.counts().not_applied() > 0).map(|f| (r.run, f)))
    else {
        return;
    };
    if varies && opts.redact.active() {
        return;
    }
    let parts: Vec<String> = fates
        .not_applied()
        .map(|e| {
            let why = match e.fate {
                Fate::Dropped(r) => reason(r, opts.lang),
                Fate::Lost => pick(opts.lang, "never delivered", "không bao giờ được giao"),
                Fate::Applied { .. } => "",
            };
            format!("#{} {} (v={}) — {why}", e.event.order, e.event.event_type, e.event.version)
        })
        .collect();
    let (label, r) = (pick(opts.lang, "dropped", "bị bỏ"), pick(opts.lang, "run", "lần"));
    let _ = writeln!(out, "  {label} ({r} {run}): {}", parts.join("; "));
}
