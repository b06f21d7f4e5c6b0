//! The summary table: one row per variant of every lab, with the seed's figure; filtered by
//! family and strategy and sorted by the page's script (`data-` attributes carry the keys).

use super::{both, esc};
use crate::checker::{Expectation, Outcome};
use crate::lang::Words;
use crate::report::summary::{agreement, environment_cell};
use crate::report::{LabReport, VariantReport};
use crate::stats::wilson_95;
use std::collections::BTreeSet;
use std::fmt::Write;

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
    let heads: [(&str, &str, &str); 10] = [
        ("text", "lab", "lab"),
        ("text", "variant", "biến thể"),
        ("text", "strategy", "chiến lược"),
        ("num", "runs", "số lần"),
        ("num", "wrong", "sai"),
        ("text", "expected", "kỳ vọng"),
        ("text", "outcome", "kết quả"),
        ("text", "seed's figure", "số liệu bài gốc"),
        ("text", "agrees", "so với bài gốc"),
        ("text", "environment", "môi trường"),
    ];
    out.push_str(r#"<table class="summary"><thead><tr>"#);
    for (kind, en, vi) in heads {
        let _ = write!(out, r#"<th data-sort="{kind}" scope="col">{}</th>"#, both(&Words::new(en, vi)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let mut total = 0;
    for r in reports {
        for v in &r.variants {
            row(out, r, v);
            total += 1;
        }
    }
    let _ = writeln!(
        out,
        r#"</tbody></table>
<p class="count">{} <span class="shown">{total}</span> / {total}</p>
<p class="note">{}</p></section>"#,
        both(&Words::new("Showing", "Đang hiện")),
        both(&Words::new(
            "wrong: runs judged wrong of all runs, with the 95 % Wilson interval where the count is measured rather than asserted; agrees: the count against the seed's figure.",
            "sai: số lần bị chấm sai trên tổng số lần, kèm khoảng tin cậy Wilson 95 % khi con số là đo được chứ không phải khẳng định; so với bài gốc: con số đo được so với số liệu bài gốc công bố.",
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
        let _ = write!(out, r#"<option value="{0}" translate="no">{0}</option>"#, esc(v));
    }
    out.push_str("</select></label>");
}

fn row(out: &mut String, r: &LabReport, v: &VariantReport) {
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
    let class = if matches!(v.outcome, Outcome::Matched | Outcome::Skipped | Outcome::TooFewRuns) {
        ""
    } else {
        r#" class="mismatch""#
    };
    let id = esc(&r.lab.id);
    let _ = writeln!(
        out,
        r##"<tr{class} data-family="{}" data-strategy="{}" data-lab="{id}"><td translate="no"><a href="#lab-{id}">{id}</a></td><td translate="no"><a href="#v-{id}-{vid}">{vid}</a></td><td translate="no">{}</td><td class="num">{}</td><td class="num" data-v="{fraction:.4}">{}</td><td>{}</td><td>{}</td><td translate="no">{}</td><td>{}</td><td class="env" translate="no">{}</td></tr>"##,
        esc(&family(r)),
        esc(&v.procedure.approach()),
        esc(&v.procedure.approach()),
        v.runs,
        both(&wrong_words(v)),
        both(&expected_words(&v.expected)),
        both(&outcome),
        esc(figure),
        both(&agrees),
        esc(&environment_cell(&r.environment)),
        vid = esc(&v.id),
    );
}

/// `4/20 (95 % CI 8–42 %)`: the interval where the count is measured, not asserted.
pub(super) fn wrong_words(v: &VariantReport) -> Words {
    let (k, n) = (v.wrong, v.runs);
    let mut w = Words::new(format!("{k}/{n}"), format!("{k}/{n}"));
    if v.expected.is_probabilistic() {
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
