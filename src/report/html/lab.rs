//! One lab's section: its question and set-up; per variant the step-through timeline of the
//! drawn run with its steps as text, and the text report's lines on every run's outcome; the
//! lab's charts; and the environment header to cite.

use super::{both, esc};
use crate::lang::{Lang, Words};
use crate::report::chart::{lab_charts, svg as chart_svg};
use crate::report::svg::{readable_window, render_steps};
use crate::report::text::{self, TextOptions};
use crate::report::words::{timeline_lines, Wording};
use crate::report::{LabReport, Redactor, VariantReport};
use std::fmt::Write;

/// The run each variant's timeline shows.
const DRAWN_RUN: u32 = 1;

pub fn render(out: &mut String, r: &LabReport) {
    let lab = &r.lab;
    let id = esc(&lab.id);
    let _ = writeln!(
        out,
        r#"<section class="lab" id="lab-{id}" data-lab="{id}" data-family="{}"><h2><span translate="no">{id}</span> — {}</h2>"#,
        esc(lab.family.as_deref().unwrap_or("other")),
        both(&lab.title)
    );
    if let Some(q) = &lab.question {
        let _ = writeln!(out, r#"<p class="question">{}</p>"#, both(q));
    }
    let source = Words::new("source", "nguồn");
    let _ =
        writeln!(out, r#"<p class="source">{}: <span translate="no">{}</span></p>"#, both(&source), esc(&lab.source));
    for v in &r.variants {
        variant(out, r, v);
    }
    let table = Lang::ALL.map(|lang| r.side_by_side(lang));
    if !table[0].trim().is_empty() {
        let _ = writeln!(
            out,
            r#"<pre class="side" lang="en">{}</pre><pre class="side" lang="vi">{}</pre>"#,
            esc(table[0].trim()),
            esc(table[1].trim())
        );
    }
    for chart in lab_charts(r) {
        let fig = format!("chart-{id}-{}", esc(&chart.id));
        let _ = writeln!(out, r#"<figure class="chart" id="{fig}">"#);
        for lang in Lang::ALL {
            let _ = writeln!(out, r#"<div class="fig" lang="{}">{}</div>"#, lang.code(), chart_svg(&chart, lang));
        }
        let _ = writeln!(out, r#"<button type="button" class="pngbtn" translate="no">PNG</button></figure>"#);
    }
    cite(out, r);
    out.push_str("</section>\n");
}

fn variant(out: &mut String, r: &LabReport, v: &VariantReport) {
    let (lab, vid) = (esc(&r.lab.id), esc(&v.id));
    let _ = writeln!(
        out,
        r#"<article class="variant" id="v-{lab}-{vid}" data-variant="{vid}"><h3><span translate="no">{vid}</span>: {}</h3>"#,
        both(&v.title)
    );
    let setup = Words::new(v.procedure.describe(Lang::En), v.procedure.describe(Lang::Vi));
    let _ = writeln!(out, r#"<p class="setup">{}</p>"#, both(&setup));
    timeline(out, r, v);
    for lang in Lang::ALL {
        let lines = r.outcome_lines(v, lang);
        let _ = writeln!(out, r#"<pre class="result" lang="{}">{}</pre>"#, lang.code(), esc(lines.trim_end()));
    }
    out.push_str("</article>\n");
}

/// The drawn run as a picture per language with the step control, and its steps as text.
fn timeline(out: &mut String, r: &LabReport, v: &VariantReport) {
    let (windowed, _) = readable_window(v, DRAWN_RUN);
    let Some(record) = windowed.record(DRAWN_RUN) else { return };
    if record.events.is_empty() {
        // Nothing happened on a timeline (a throughput sweep records none): no picture.
        return;
    }
    let fig = format!("fig-{}-{}", esc(&r.lab.id), esc(&v.id));
    let steps: Vec<Vec<(i64, String)>> = Lang::ALL
        .iter()
        .map(|&lang| {
            let w = Wording { lang, many_orders: v.procedure.many_orders(), redact: Redactor::NONE };
            timeline_lines(record, &v.procedure, &w, false).into_iter().map(|(e, line)| (e.t_ms(), line)).collect()
        })
        .collect();
    let n = steps[0].len();
    let _ = writeln!(out, r#"<figure class="timeline" id="{fig}" data-steps="{n}" tabindex="-1">"#);
    for lang in Lang::ALL {
        let code = lang.code();
        let svg = render_steps(r, v, DRAWN_RUN, lang, &format!("{fig}-{code}"));
        let _ = writeln!(out, r#"<div class="fig" lang="{code}">{svg}</div>"#);
    }
    let word = |en: &str, vi: &str| both(&Words::new(en, vi));
    let _ = writeln!(
        out,
        r#"<div class="stepper" role="group"><button type="button" data-act="first">{}</button><button type="button" data-act="prev">{}</button><button type="button" data-act="play" aria-pressed="false">{}</button><button type="button" data-act="next">{}</button><button type="button" data-act="last">{}</button><input type="range" min="1" max="{m}" value="{m}" aria-label="step"/><span class="where" translate="no"></span><button type="button" class="pngbtn" translate="no">PNG</button></div>
<output class="caption" aria-live="polite"></output><output class="detail"></output>"#,
        word("|◀ start", "|◀ đầu"),
        word("◀ back", "◀ lùi"),
        word("▶ play", "▶ chạy"),
        word("next ▶", "tiếp ▶"),
        word("all ▶|", "tất cả ▶|"),
        m = n.max(1)
    );
    for (lang, lines) in Lang::ALL.iter().zip(&steps) {
        let summary = crate::lang::pick(*lang, "every step as text", "từng bước dạng chữ");
        let _ = write!(
            out,
            r#"<details class="steps" lang="{0}"><summary>{summary}</summary><ol class="steps" lang="{0}">"#,
            lang.code()
        );
        for (t, line) in lines {
            let _ = write!(out, r#"<li data-t="{t}">{}</li>"#, esc(line));
        }
        out.push_str("</ol></details>\n");
    }
    out.push_str("</figure>\n");
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
