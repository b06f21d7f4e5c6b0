//! An SVG timeline of one run, drawn to be pasted into a slide: one lane per process, handler
//! work and lock holds as bars, receives, writes, publishes, crashes and SQL statements as
//! labelled marks on a millisecond axis, and the run's final state with its verdict.
//!
//! It is a pure function of the saved report, so any recorded run can be drawn again without
//! servers; the file is self-contained (no scripts, fonts or images from elsewhere). Three
//! steps: [`model`] turns the run's events into lanes of bars and marks (in ms), [`layout`]
//! places labels and ticks, [`draw`] writes the SVG.

mod axis;
mod draw;
mod fit;
mod footer;
mod glyphs;
mod layout;
mod model;
mod window;

pub use layout::esc as escape;
pub use window::{drawn_events, readable_window, SVG_MAX_ORDERS};

use super::{LabReport, VariantReport};
use crate::fault::TimeScale;
use crate::lang::{pick, Lang};

/// Page width; every size below is in px on it.
const WIDTH: f64 = 1280.0;
/// Left edge of the time axis; lane labels sit to its left.
const PLOT_LEFT: f64 = 140.0;
/// Right edge of the time axis; labels may run a little past it, up to `WIDTH - MARGIN`.
const PLOT_RIGHT: f64 = 1220.0;
const MARGIN: f64 = 24.0;
const LABEL_PX: f64 = 14.0;

/// Render run `run` (1-based) of `variant` as a standalone SVG document; a run over many
/// orders is drawn for a few of them ([`readable_window`]).
pub fn render(report: &LabReport, variant: &VariantReport, run: u32, lang: Lang) -> String {
    render_as(report, variant, run, lang, &Flavour::FILE)
}

/// The same picture for the lab book's walk-through: every element drawn for an event carries
/// `data-step="k"` (k = the number of the text report's timeline line that shows it, or of the
/// last line before it), the final state and verdict come
/// at the last step, and the hatch pattern's id ends in `id` so several SVGs fit one page.
pub fn render_steps(report: &LabReport, variant: &VariantReport, run: u32, lang: Lang, id: &str) -> String {
    render_as(report, variant, run, lang, &Flavour { steps: true, pattern: format!("hatch-{id}") })
}

/// How a picture is written: for a file, or for the lab book.
pub struct Flavour {
    /// Tag elements with the step that shows them.
    pub steps: bool,
    /// The id of the lock hatch pattern.
    pub pattern: String,
}

impl Flavour {
    const FILE: Flavour = Flavour { steps: false, pattern: String::new() };

    /// ` data-step="k"`, or nothing. A mark is no tab stop (`_mark`): the lab book's figure is
    /// one, and its arrow keys step through the marks.
    fn step_attr(&self, step: u32, _mark: bool) -> String {
        if self.steps && step > 0 {
            format!(r#" data-step="{step}""#)
        } else {
            String::new()
        }
    }

    fn pattern_id(&self) -> &str {
        if self.pattern.is_empty() {
            "hatch"
        } else {
            &self.pattern
        }
    }
}

fn render_as(report: &LabReport, variant: &VariantReport, run: u32, lang: Lang, flavour: &Flavour) -> String {
    let (variant, shown) = readable_window(variant, run);
    let variant = &variant;
    let title = format!(
        "{} / {} — {} · {} {run}",
        report.lab.id,
        variant.id,
        variant.title.get(lang),
        pick(lang, "run", "lần")
    );
    let summary = variant.procedure.describe(lang);
    let mut title_lines: Vec<(String, f64, bool)> = Vec::new();
    // The title is bold: wider than the estimate for plain text.
    for line in layout::wrap(&title, (WIDTH - 2.0 * MARGIN) / layout::BOLD_WIDEN, 22.0) {
        title_lines.push((line, 22.0, true));
    }
    for line in layout::wrap(&summary, WIDTH - 2.0 * MARGIN, 16.0) {
        title_lines.push((line, 16.0, false));
    }
    let Some(record) = variant.record(run) else {
        let msg = format!(
            "{} {run}: {}",
            pick(lang, "run", "lần"),
            pick(lang, "not in this report", "không có trong báo cáo này")
        );
        return draw::missing_run(&title_lines, &msg);
    };
    let scale = TimeScale(report.environment.time_scale);
    let keys = variant.procedure.key_events(record);
    let timeline = model::Timeline::build(record, scale, &variant.procedure, lang, &keys);
    let mut final_items = variant.procedure.final_state(record);
    if let Some(shown) = shown {
        final_items.retain(|i| i.order.is_some_and(|o| shown.contains(&o)));
    }
    draw::page(&title_lines, &timeline, record, &final_items, variant.drawn.as_ref(), lang, flavour)
}

/// A run still going on, drawn from its events so far (its last [`window::SVG_MAX_EVENTS`],
/// the earlier ones counted as left out): `ordlab serve` draws the live run so, beside the
/// saved one. Its times are from its first event; it has no final state yet.
pub fn render_live(
    lab: &str,
    variant: &str,
    procedure: &crate::labs::Procedure,
    events: &[crate::timeline::Event],
    scale: f64,
    lang: Lang,
) -> String {
    let mut sorted: Vec<crate::timeline::Event> = events.to_vec();
    sorted.sort_by_key(|e| e.t_us);
    let left_out = sorted.len().saturating_sub(window::SVG_MAX_EVENTS);
    let kept = sorted.split_off(left_out);
    let title = format!("{lab} / {variant} — {}", pick(lang, "live, on this machine", "đang chạy trên máy này"));
    let drawn = (left_out > 0).then(|| {
        let (from_us, to_us) = (kept.first().map_or(0, |e| e.t_us), kept.last().map_or(0, |e| e.t_us));
        crate::report::Drawn {
            events: left_out + kept.len(),
            windows: vec![crate::report::DrawnWindow { from_us, to_us, events: kept.len(), left_out_before: left_out }],
            left_out_after: 0,
            keys: 0,
            keys_drawn: 0,
        }
    });
    let title_lines = vec![(title, 22.0, true)];
    let timeline = model::Timeline::of_events(&kept, TimeScale(scale), procedure, lang, &[]);
    draw::live_page(&title_lines, &timeline, drawn.as_ref(), lang)
}

#[cfg(test)]
mod page_check;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_check;
