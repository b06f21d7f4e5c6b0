//! The text report: an environment header, then per variant a title line with the set-up,
//! one run's timeline in the seed's shape (`t=   2 ms  C1 received 1792591449272-0 created
//! (v=1)`), every run's final state with wrong ones marked, what was measured, and the count
//! of wrong runs against the expectation. English by default; Vietnamese follows the wording
//! of the seed's own lab output.

mod fates;
mod header;
mod timeline;
mod variant;

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
    let mut out = String::new();
    header::environment(&mut out, &report.environment, opts);
    let lab = &report.lab;
    let _ = writeln!(out, "\n# {} — {}", lab.id, lab.title.get(opts.lang));
    if let Some(q) = &lab.question {
        let _ = writeln!(out, "{}: {}", crate::lang::pick(opts.lang, "question", "câu hỏi"), q.get(opts.lang));
    }
    let _ = writeln!(out, "{}: {}", crate::lang::pick(opts.lang, "source", "nguồn"), lab.source);
    for v in &report.variants {
        out.push('\n');
        variant::render(&mut out, v, opts);
    }
    header::side_by_side(&mut out, report, opts);
    out
}

#[cfg(test)]
mod tests;
