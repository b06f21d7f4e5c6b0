//! A figure of the lab book: its frame in the page (caption, step controls, a slot for its
//! pictures) and what its lab's part fills the slot with (the picture in both languages, the
//! steps as text). One tab stop per figure: the figure itself takes the focus, and its arrow
//! keys step (Home, End, Space to play, P to present); its buttons are for the mouse, each
//! named by what it does ("PNG of lock s4c").

use super::{both, esc, unseen};
use crate::chart::Chart;
use crate::lang::{Lang, Words};
use crate::report::chart::svg as chart_svg;
use crate::report::svg::{readable_window, render_steps};
use crate::report::words::{timeline_lines, Wording};
use crate::report::{LabReport, Redactor, VariantReport};
use std::fmt::Write;

/// The run each variant's timeline shows.
pub const DRAWN_RUN: u32 = 1;

/// A slot of a figure and its content: the part's key and the HTML it holds.
pub type Slot = (String, String);

/// A lab's slots by key, to fill its figures in place (a standalone page).
pub type Filled = std::collections::HashMap<String, String>;

/// The drawn run's timeline lines in both languages, as (t in ms, line); None when nothing
/// happened on a timeline (a throughput sweep records none).
fn steps(v: &VariantReport) -> Option<[Vec<(i64, String)>; 2]> {
    let (windowed, _) = readable_window(v, DRAWN_RUN);
    let record = windowed.record(DRAWN_RUN)?;
    if record.events.is_empty() {
        return None;
    }
    Some(Lang::ALL.map(|lang| {
        let w = Wording { lang, many_orders: v.procedure.many_orders(), redact: Redactor::NONE };
        timeline_lines(record, &v.procedure, &w, false).into_iter().map(|(e, line)| (e.t_ms(), line)).collect()
    }))
}

/// The id of variant `v`'s timeline figure.
pub fn timeline_id(r: &LabReport, v: &VariantReport) -> String {
    format!("fig-{}-{}", r.lab.id, v.id)
}

/// The frame of variant `v`'s timeline; with `filled`, its slots filled in place (a standalone
/// page).
pub fn timeline(out: &mut String, r: &LabReport, v: &VariantReport, filled: Option<&Filled>) {
    let Some(steps) = steps(v) else { return };
    let fig = esc(&timeline_id(r, v));
    let n = steps[0].len().max(1);
    let (lab, vid) = (esc(&r.lab.id), esc(&v.id));
    let name = format!("{} {}", r.lab.id, v.id);
    let run = Words::new(format!("run {DRAWN_RUN}"), format!("lần {DRAWN_RUN}"));
    let verdict = v.record(DRAWN_RUN).map(|rec| verdict_words(rec.verdict.verdict)).unwrap_or_else(|| Words::same(""));
    let _ = writeln!(
        out,
        r#"<figure class="timeline" id="{fig}" data-lab="{lab}" data-variant="{vid}" data-steps="{n}" tabindex="0" aria-labelledby="cap-{fig}" aria-keyshortcuts="ArrowLeft ArrowRight Home End Space P">"#
    );
    let key = timeline_id(r, v);
    let parts = [key.clone(), format!("steps-{key}")];
    slot(out, &parts[0], filled, "figs");
    let word = |en: &str, vi: &str| both(&Words::new(en, vi));
    let _ = writeln!(
        out,
        r#"<div class="stepper" role="group" aria-label="{name}"><button type="button" tabindex="-1" data-act="first">{}</button><button type="button" tabindex="-1" data-act="prev">{}</button><button type="button" tabindex="-1" data-act="play" aria-pressed="false">{}</button><button type="button" tabindex="-1" data-act="next">{}</button><button type="button" tabindex="-1" data-act="last">{}</button><input type="range" tabindex="-1" min="1" max="{n}" value="{n}" aria-label="step of {name}" data-label-en="step of {name}" data-label-vi="bước của {name}"/><span class="where" translate="no"></span><span class="acts"><button type="button" tabindex="-1" class="present">{}{}</button><button type="button" tabindex="-1" class="pngbtn"><span translate="no">PNG</span>{}</button><a class="link" href="{}" tabindex="-1">{}{}</a></span></div>
<output class="caption" aria-live="polite"></output><output class="detail"></output>"#,
        word("|◀ start", "|◀ đầu"),
        word("◀ back", "◀ lùi"),
        word("▶ play", "▶ chạy"),
        word("next ▶", "tiếp ▶"),
        word("all ▶|", "tất cả ▶|"),
        word("▣ present", "▣ trình chiếu"),
        unseen(&Words::new(format!(" {name}"), format!(" {name}"))),
        unseen(&Words::new(format!(" of {name}"), format!(" của {name}"))),
        esc(&format!("#{}-{}", r.lab.id, v.id)),
        word("link", "liên kết"),
        unseen(&Words::new(format!(" to {name}"), format!(" tới {name}"))),
        name = esc(&name),
    );
    let caption = Words::new(
        format!("Timeline of {name}, {}: {} — {}", run.en, v.title.en, verdict.en),
        format!("Dòng thời gian của {name}, {}: {} — {}", run.vi, v.title.vi, verdict.vi),
    );
    let hint = Words::new(
        "focus the figure: ← → step, Home/End, Space plays, P presents",
        "chọn hình: ← → từng bước, Home/End, Space chạy, P trình chiếu",
    );
    let _ = writeln!(
        out,
        r#"<figcaption id="cap-{fig}">{} <span class="hint">{}</span></figcaption>"#,
        both(&caption),
        both(&hint)
    );
    slot(out, &parts[1], filled, "steps-slot");
    out.push_str("</figure>\n");
}

/// What the lab's part holds for variant `v`'s timeline: its picture in both languages (step-
/// tagged), and its steps as text.
fn timeline_part(r: &LabReport, v: &VariantReport, steps: &[Vec<(i64, String)>; 2]) -> [Slot; 2] {
    let fig = timeline_id(r, v);
    let mut pictures = String::new();
    for lang in Lang::ALL {
        let code = lang.code();
        let svg = render_steps(r, v, DRAWN_RUN, lang, &format!("{fig}-{code}"));
        let _ = writeln!(pictures, r#"<div class="fig" lang="{code}">{svg}</div>"#);
    }
    let mut list = String::new();
    for (lang, lines) in Lang::ALL.iter().zip(steps) {
        let summary = crate::lang::pick(*lang, "every step as text", "từng bước dạng chữ");
        let _ = write!(
            list,
            r#"<details class="steps" lang="{0}"><summary tabindex="-1">{summary}</summary><ol class="steps" lang="{0}">"#,
            lang.code()
        );
        for (t, line) in lines {
            let _ = write!(list, r#"<li data-t="{t}">{}</li>"#, esc(line));
        }
        list.push_str("</ol></details>\n");
    }
    [(fig.clone(), pictures), (format!("steps-{fig}"), list)]
}

/// Every slot of the lab's timelines, for its part.
pub fn timeline_slots(r: &LabReport, v: &VariantReport) -> Vec<Slot> {
    steps(v).map(|s| timeline_part(r, v, &s).to_vec()).unwrap_or_default()
}

/// A slot: filled (a standalone page) or empty, for the part to fill.
fn slot(out: &mut String, key: &str, filled: Option<&Filled>, class: &str) {
    match filled {
        Some(map) => {
            let html = map.get(key).map(String::as_str).unwrap_or_default();
            let _ = writeln!(out, r#"<div class="{class}" data-slot="{}" data-filled="1">{html}</div>"#, esc(key));
        }
        None => {
            let loading = Words::new("loading the picture…", "đang tải hình…");
            let filler =
                if class == "figs" { format!(r#"<p class="loading">{}</p>"#, both(&loading)) } else { String::new() };
            let _ = writeln!(out, r#"<div class="{class}" data-slot="{}">{filler}</div>"#, esc(key));
        }
    }
}

fn verdict_words(v: crate::checker::Verdict) -> Words {
    match v {
        crate::checker::Verdict::Wrong => Words::new("✕ wrong", "✕ sai"),
        crate::checker::Verdict::Right => Words::new("✓ right", "✓ đúng"),
        crate::checker::Verdict::Unknown => Words::new("? not judged", "? chưa rõ"),
    }
}

/// The id of a lab's chart figure.
pub fn chart_id(r: &LabReport, chart: &Chart) -> String {
    format!("chart-{}-{}", r.lab.id, chart.id)
}

/// The frame of a chart: its slot, buttons, and its title and note as its caption.
pub fn chart(out: &mut String, r: &LabReport, chart: &Chart, filled: Option<&Filled>) {
    let fig = esc(&chart_id(r, chart));
    let name = format!("{} {}", r.lab.id, chart.id);
    let _ = writeln!(
        out,
        r#"<figure class="chart" id="{fig}" data-lab="{}" tabindex="0" aria-labelledby="cap-{fig}" aria-keyshortcuts="P">"#,
        esc(&r.lab.id)
    );
    slot(out, &chart_id(r, chart), filled, "figs");
    let _ = writeln!(
        out,
        r#"<div class="stepper"><span class="acts"><button type="button" tabindex="-1" class="present">{}{}</button><button type="button" tabindex="-1" class="pngbtn"><span translate="no">PNG</span>{}</button></span></div>"#,
        both(&Words::new("▣ present", "▣ trình chiếu")),
        unseen(&Words::same(&format!(" {name}"))),
        unseen(&Words::new(format!(" of {name}"), format!(" của {name}"))),
    );
    let caption = match &chart.note {
        Some(note) => Words::new(
            format!("Chart: {} — {}", chart.title.en, note.en),
            format!("Biểu đồ: {} — {}", chart.title.vi, note.vi),
        ),
        None => Words::new(format!("Chart: {}", chart.title.en), format!("Biểu đồ: {}", chart.title.vi)),
    };
    let _ = writeln!(out, r#"<figcaption id="cap-{fig}">{}</figcaption></figure>"#, both(&caption));
}

/// What the lab's part holds for a chart: its picture in both languages.
pub fn chart_slot(r: &LabReport, chart: &Chart) -> Slot {
    let mut html = String::new();
    for lang in Lang::ALL {
        let _ = writeln!(html, r#"<div class="fig" lang="{}">{}</div>"#, lang.code(), chart_svg(chart, lang));
    }
    (chart_id(r, chart), html)
}
