//! One lab's section: its question and set-up, its tools (a page of its own, print, slides);
//! per variant its verdict at a glance, the frame of its step-through timeline, and the text
//! report's lines on every run's outcome (long lists folded, the checker's reasons in the
//! page's language); the lab's charts; and the environment header to cite.

use super::figure::{self, Filled, Slot};
use super::{both, esc, fold, part, unseen};
use crate::lang::{Lang, Words};
use crate::report::chart::lab_charts;
use crate::report::text::{self, TextOptions};
use crate::report::{LabReport, VariantReport};
use std::fmt::Write;

/// The lab's section; with `filled` (its part's slots), its figures filled in place (a
/// standalone page).
pub fn render(out: &mut String, r: &LabReport, filled: Option<&Filled>) {
    let lab = &r.lab;
    let id = esc(&lab.id);
    let _ = writeln!(
        out,
        r#"<section class="lab" id="lab-{id}" data-lab="{id}" data-family="{}" data-part="{}"><h2><span translate="no">{id}</span> — {}</h2>"#,
        esc(lab.family.as_deref().unwrap_or("other")),
        esc(&part::lab_script(&lab.id)),
        both(&lab.title)
    );
    if let Some(q) = &lab.question {
        let _ = writeln!(out, r#"<p class="question">{}</p>"#, both(q));
    }
    let source = Words::new("source", "nguồn");
    let _ =
        writeln!(out, r#"<p class="source">{}: <span translate="no">{}</span></p>"#, both(&source), esc(&lab.source));
    tools(out, r, filled.is_some());
    for v in &r.variants {
        variant(out, r, v, filled);
    }
    let table = Lang::ALL.map(|lang| r.side_by_side(lang));
    if !table[0].trim().is_empty() {
        let _ = writeln!(
            out,
            r#"<div class="side-wrap"><pre class="side" lang="en">{}</pre><pre class="side" lang="vi">{}</pre></div>"#,
            esc(table[0].trim()),
            esc(table[1].trim())
        );
    }
    for chart in lab_charts(r) {
        figure::chart(out, r, &chart, filled);
    }
    cite(out, r);
    out.push_str("</section>\n");
}

/// The lab's own tools: the lab as a page of its own, printed, or as slides.
fn tools(out: &mut String, r: &LabReport, inline: bool) {
    let name = &r.lab.id;
    let page = if inline {
        String::new()
    } else {
        format!(
            r#"<a class="standalone" href="{}" download="ordlab-{}.html">{}{}</a>"#,
            esc(&part::standalone_path(name)),
            esc(name),
            both(&Words::new("⇩ page of its own", "⇩ trang riêng")),
            unseen(&Words::new(format!(": {name}"), format!(": {name}")))
        )
    };
    let _ = writeln!(
        out,
        r#"<div class="lab-tools">{page}<button type="button" data-print="lab">{}{}</button><button type="button" data-print="slides">{}{}</button></div>"#,
        both(&Words::new("print", "in")),
        unseen(&Words::new(format!(" {name}"), format!(" {name}"))),
        both(&Words::new("▭ slides (PDF)", "▭ slide (PDF)")),
        unseen(&Words::new(format!(" of {name}"), format!(" của {name}"))),
    );
}

fn variant(out: &mut String, r: &LabReport, v: &VariantReport, filled: Option<&Filled>) {
    let (lab, vid) = (esc(&r.lab.id), esc(&v.id));
    let _ = writeln!(
        out,
        r#"<article class="variant" id="v-{lab}-{vid}" data-variant="{vid}"><h3><span translate="no">{vid}</span>: {} {}</h3>"#,
        both(&v.title),
        badge(v)
    );
    let setup = Words::new(v.procedure.describe(Lang::En), v.procedure.describe(Lang::Vi));
    let _ = writeln!(out, r#"<p class="setup">{}</p>"#, both(&setup));
    figure::timeline(out, r, v, filled);
    for lang in Lang::ALL {
        let lines = r.outcome_lines(v, lang);
        let lines = match lang {
            Lang::En => lines,
            Lang::Vi => crate::report::reasons::outcome_lines_vi(&lines),
        };
        let _ = writeln!(
            out,
            r#"<pre class="result" lang="{}">{}</pre>"#,
            lang.code(),
            fold::lines(lines.trim_end(), lang)
        );
    }
    out.push_str("</article>\n");
}

/// The variant's verdict at a glance, by symbol, words and colour.
fn badge(v: &VariantReport) -> String {
    let (class, words) = if v.wrong > 0 {
        ("wrong", Words::new(format!("✕ wrong {}/{}", v.wrong, v.runs), format!("✕ sai {}/{}", v.wrong, v.runs)))
    } else if v.runs > 0 && v.unknown == v.runs {
        ("unknown", Words::new("? not judged", "? chưa rõ"))
    } else if v.runs > 0 {
        (
            "right",
            Words::new(
                format!("✓ right {}/{}", v.runs - v.unknown, v.runs),
                format!("✓ đúng {}/{}", v.runs - v.unknown, v.runs),
            ),
        )
    } else {
        ("skipped", Words::new("– skipped", "– bỏ qua"))
    };
    format!(r#"<span class="badge {class}">{}</span>"#, both(&words))
}

/// The environment header of the lab's own run, to cite with its figures.
fn cite(out: &mut String, r: &LabReport) {
    for lang in Lang::ALL {
        let mut text = String::new();
        text::environment(&mut text, &r.environment, &TextOptions { lang, ..Default::default() });
        let _ = writeln!(
            out,
            r#"<footer class="cite" lang="{}"><pre>{}</pre></footer>"#,
            lang.code(),
            esc(text.trim_end())
        );
    }
}

/// Every slot of the lab's figures: what its part holds.
pub fn part(r: &LabReport) -> Vec<Slot> {
    let mut slots: Vec<Slot> = r.variants.iter().flat_map(|v| figure::timeline_slots(r, v)).collect();
    slots.extend(lab_charts(r).iter().map(|c| figure::chart_slot(r, c)));
    slots
}
