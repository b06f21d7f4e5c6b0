//! The text report: an environment header, then per variant a title line with the set-up,
//! one run's timeline in the seed's shape (`t=   2 ms  C1 received 1792591449272-0 created
//! (v=1)`), every run's final state with wrong ones marked, what was measured, and the count
//! of wrong runs against the expectation. English by default; Vietnamese follows the wording
//! of the seed's own lab output.

mod fates;
mod header;
mod timeline;
mod variant;

pub use header::environment;
pub use variant::outcome as variant_outcome;

use super::{LabReport, Lang, Redactor};
use std::fmt::Write;

/// How to render.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    pub lang: Lang,
    /// Which run's timeline to print (1-based).
    pub timeline_run: u32,
    /// How values that vary between runs are printed (snapshots redact them).
    pub redact: Redactor,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { lang: Lang::En, timeline_run: 1, redact: Redactor::NONE }
    }
}

pub fn render(report: &LabReport, opts: &TextOptions) -> String {
    render_marked(report, opts).text
}

/// A text report and which of its lines carry a verdict (each variant's final states, count
/// of wrong and of unjudged runs, expectation), as the renderer wrote them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marked {
    pub text: String,
    /// 0-based line numbers in `text`, ascending.
    pub verdict_lines: Vec<usize>,
}

impl Marked {
    pub fn is_verdict_line(&self, line: usize) -> bool {
        self.verdict_lines.binary_search(&line).is_ok()
    }
}

/// [`render`], with the verdict lines marked.
pub fn render_marked(report: &LabReport, opts: &TextOptions) -> Marked {
    let (mut out, mut verdict_lines) = (String::new(), Vec::new());
    header::environment(&mut out, &report.environment, opts);
    let lab = &report.lab;
    let _ = writeln!(out, "\n# {} — {}", lab.id, lab.title.get(opts.lang));
    if let Some(q) = &lab.question {
        let _ = writeln!(out, "{}: {}", crate::lang::pick(opts.lang, "question", "câu hỏi"), q.get(opts.lang));
    }
    let _ = writeln!(out, "{}: {}", crate::lang::pick(opts.lang, "source", "nguồn"), lab.source);
    for v in &report.variants {
        out.push('\n');
        variant::render(&mut out, v, opts, &mut verdict_lines);
    }
    header::side_by_side(&mut out, report, opts);
    // Charts as numbers; a snapshot leaves them out (every value in them is measured).
    if !opts.redact.active() {
        for chart in crate::report::chart::lab_charts(report) {
            let _ = write!(out, "\n{}", crate::report::chart::table(&chart, opts.lang));
        }
    }
    Marked { text: out, verdict_lines }
}

/// The side-by-side table of the lab's variants (run 1 of each), if the lab has one.
pub fn side_by_side(report: &LabReport, opts: &TextOptions) -> String {
    let mut out = String::new();
    header::side_by_side(&mut out, report, opts);
    out
}

#[cfg(test)]
mod tests;
