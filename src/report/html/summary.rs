//! The summary table: one row per variant of every lab, with the seed's figure; filtered by
//! family and strategy and sorted by the page's script (`data-` attributes carry the keys).
//! The environment is stated once above it (the one most labs ran in); a row that ran in
//! another says so with a mark. A variant that ended wrong is marked by colour and by a
//! symbol (✕), one that stayed right by ✓, so neither rests on colour alone.

use super::{both, esc, terms};
use crate::checker::{Expectation, Outcome};
use crate::lang::Words;
use crate::report::summary::{agreement, environment_cell};
use crate::report::{Environment, LabReport, VariantReport};
use crate::stats::wilson_95;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The environment most labs ran in (by the summary's environment cell and commit).
pub struct Common<'a> {
    pub environment: &'a Environment,
}

fn key(e: &Environment) -> (String, &str) {
    (environment_cell(e), e.git_commit.as_str())
}

/// The environment the most labs share; None without labs.
pub fn common_environment(reports: &[LabReport]) -> Option<Common<'_>> {
    let mut best: Option<(&Environment, usize)> = None;
    for r in reports {
        let n = reports.iter().filter(|o| key(&o.environment) == key(&r.environment)).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((&r.environment, n));
        }
    }
    best.map(|(environment, _)| Common { environment })
}

/// The labs that ran elsewhere than `common`, each with what differs.
pub fn elsewhere(reports: &[LabReport], common: &Environment) -> Vec<String> {
    reports
        .iter()
        .filter(|r| key(&r.environment) != key(common))
        .map(|r| format!("{} ({}, commit {})", r.lab.id, environment_cell(&r.environment), r.environment.git_commit))
        .collect()
}

pub fn render(out: &mut String, reports: &[LabReport]) {
    let families: BTreeSet<String> = reports.iter().map(family).collect();
    let strategies: BTreeSet<String> =
        reports.iter().flat_map(|r| r.variants.iter().map(|v| v.procedure.approach())).collect();
    let _ = writeln!(out, r#"<section id="summary"><h2>{}</h2>"#, both(&Words::new("Summary", "Tóm tắt")));
    out.push_str(r#"<div class="filters">"#);
    select(out, "f-family", &Words::new("Family", "Nhóm"), &families);
    select(out, "f-strategy", &Words::new("Strategy", "Chiến lược"), &strategies);
    let _ = writeln!(
        out,
        r#"<label>{} <input id="f-text" type="search"/></label></div>"#,
        both(&Words::new("Find", "Tìm"))
    );
    let heads: [(&str, &str, &str, &str); 9] = [
        ("text", "lab", "lab", ""),
        ("text", "variant", "biến thể", ""),
        ("text", "strategy", "chiến lược", "wide"),
        ("num", "runs", "số lần", "num"),
        ("num", "wrong", "sai", ""),
        ("text", "expected", "kỳ vọng", "narrow"),
        ("text", "outcome", "kết quả", "narrow"),
        ("text", "seed's figure", "số liệu bài gốc", "wide"),
        ("text", "agrees", "so với bài gốc", "narrow"),
    ];
    out.push_str(r#"<div class="table-wrap"><table class="summary"><thead><tr>"#);
    for (kind, en, vi, class) in heads {
        let class = if class.is_empty() { String::new() } else { format!(r#" class="{class}""#) };
        let _ = write!(out, r#"<th data-sort="{kind}" scope="col"{class}>{}</th>"#, both(&Words::new(en, vi)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let common = common_environment(reports).map(|c| key(c.environment));
    let mut total = 0;
    for r in reports {
        let here = common.as_ref().is_none_or(|c| *c == key(&r.environment));
        for v in &r.variants {
            row(out, r, v, here);
            total += 1;
        }
    }
    let _ = writeln!(
        out,
        r#"</tbody></table></div>
<p class="count">{} <span class="shown">{total}</span> / {total}</p>
<p class="note">{}</p></section>"#,
        both(&Words::new("Showing", "Đang hiện")),
        both(&Words::new(
            "wrong: runs judged wrong of all runs (✕ some wrong, ✓ none), with the 95 % Wilson interval where the count is measured rather than asserted; agrees: the count against the seed's figure; † ran in another environment than the one above.",
            "sai: số lần bị chấm sai trên tổng số lần (✕ có lần sai, ✓ không lần nào), kèm khoảng tin cậy Wilson 95 % khi con số là đo được chứ không phải khẳng định; so với bài gốc: con số đo được so với số liệu bài gốc công bố; † chạy trong môi trường khác với môi trường ở trên.",
        ))
    );
}

fn family(r: &LabReport) -> String {
    r.lab.family.clone().unwrap_or_else(|| "other".into())
}

fn select(out: &mut String, id: &str, label: &Words, values: &BTreeSet<String>) {
    let _ = write!(
        out,
        // An <option> holds text only, so the page's script sets it from data-en/data-vi.
        r#"<label>{} <select id="{id}"><option value="" data-en="all" data-vi="tất cả">all</option>"#,
        both(label),
    );
    for v in values {
        let _ = write!(
            out,
            r#"<option value="{0}" data-en="{0}" data-vi="{1}" translate="no">{0}</option>"#,
            esc(v),
            esc(&terms::vi(v))
        );
    }
    out.push_str("</select></label>");
}

fn row(out: &mut String, r: &LabReport, v: &VariantReport, here: bool) {
    let judged = v.runs.saturating_sub(v.unknown);
    let fraction = if judged == 0 { f64::NAN } else { v.wrong as f64 / judged as f64 };
    let (figure, agrees) = match &v.seed {
        Some(seed) => (seed.figure.as_str(), agreement(seed.agrees, v)),
        None => ("—", "—"),
    };
    let agrees = match agrees {
        "agrees" => Words::new("agrees", "khớp"),
        "differs" => Words::new("differs", "khác"),
        "see report" => Words::new("see report", "xem báo cáo"),
        other => Words::same(other),
    };
    let outcome = match v.outcome {
        Outcome::Matched => Words::new("matches", "khớp"),
        Outcome::Mismatched => Words::new("DOES NOT MATCH", "KHÔNG KHỚP"),
        Outcome::Inconclusive => Words::new("inconclusive", "chưa kết luận"),
        Outcome::Skipped => Words::new("skipped", "bỏ qua"),
        Outcome::TooFewRuns => Words::new("too few runs to show", "quá ít lần chạy để thấy"),
    };
    let mismatch = !matches!(v.outcome, Outcome::Matched | Outcome::Skipped | Outcome::TooFewRuns);
    let (verdict, mark) = match (v.wrong > 0, v.runs == v.unknown && v.runs > 0) {
        (true, _) => ("wrong", "✕"),
        (false, true) => ("unknown", "?"),
        (false, false) if v.runs == 0 => ("skipped", "–"),
        (false, false) => ("right", "✓"),
    };
    let class = format!(r#" class="{verdict}{}""#, if mismatch { " mismatch" } else { "" });
    let id = esc(&r.lab.id);
    let approach = v.procedure.approach();
    let elsewhere = if here {
        String::new()
    } else {
        format!(
            r#" <abbr class="elsewhere" title="{}">†</abbr>"#,
            esc(&format!("{} · commit {}", environment_cell(&r.environment), r.environment.git_commit))
        )
    };
    let _ = writeln!(
        out,
        r##"<tr{class} data-family="{}" data-strategy="{}" data-lab="{id}"><td translate="no"><a href="#lab-{id}">{id}</a>{elsewhere}</td><td translate="no"><a href="#v-{id}-{vid}">{vid}</a></td><td class="wide">{}</td><td class="num">{}</td><td class="wrong-cell" data-v="{fraction:.4}"><span class="mark" aria-hidden="true">{mark}</span> {}</td><td class="narrow">{}</td><td class="narrow">{}</td><td class="wide">{}</td><td class="narrow">{}</td></tr>"##,
        esc(&family(r)),
        esc(&approach),
        both(&Words::new(approach.clone(), terms::vi(&approach))),
        v.runs,
        both(&wrong_words(v)),
        both(&expected_words(&v.expected)),
        both(&outcome),
        both(&Words::new(figure, terms::vi(figure))),
        both(&agrees),
        vid = esc(&v.id),
    );
}

/// `✕ 4/20 wrong (95 % CI 8–42 %)`: the interval where the count is measured, not asserted.
pub(super) fn wrong_words(v: &VariantReport) -> Words {
    let (k, n) = (v.wrong, v.runs);
    let mut w = Words::new(format!("{k}/{n}"), format!("{k}/{n}"));
    if v.expected.is_probabilistic() && v.runs > v.unknown {
        let (lo, hi) = wilson_95(v.wrong, v.runs - v.unknown);
        let (lo, hi) = (lo * 100.0, hi * 100.0);
        w.en.push_str(&format!(" (95 % CI {lo:.0}–{hi:.0} %)"));
        w.vi.push_str(&format!(" (KTC 95 % {lo:.0}–{hi:.0} %)"));
    }
    if v.unknown > 0 {
        w.en.push_str(&format!(", {} unknown", v.unknown));
        w.vi.push_str(&format!(", {} chưa rõ", v.unknown));
    }
    w
}

pub(super) fn expected_words(e: &Expectation) -> Words {
    match e {
        Expectation::All => Words::new("all", "tất cả"),
        Expectation::None => Words::new("none", "không lần nào"),
        Expectation::Some => Words::new("some", "ít nhất một lần"),
        Expectation::Any => Words::new("any (measured only)", "bất kỳ (chỉ đo)"),
        Expectation::Exactly(k) => Words::new(format!("exactly {k}"), format!("đúng {k} lần")),
    }
}
