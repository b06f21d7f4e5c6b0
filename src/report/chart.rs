//! Drawing a [`Chart`]: a slide-sized SVG (plotters' SVG backend) for `results/` and the lab
//! book, and the same numbers as a small table for the text report.
//!
//! Text is set in DejaVu Sans first: `just setup` installs it, so the PNGs made from these
//! SVGs show Vietnamese the same on every machine.

mod axes;
mod plot;
mod spread;

pub use spread::{lab_charts, wrong_runs};

use crate::chart::{Axis, Chart, Scale};
use crate::lang::Lang;
use axes::AxisRange;
use plotters::prelude::*;
use std::fmt::Write as _;

/// Slide size (16:9); the PNG writer scales it to 1600×900.
pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 720;
/// Rows of a chart's table in the text report.
const TABLE_ROWS: usize = 12;
const FONT: &str = "DejaVu Sans, Noto Sans, Arial, sans-serif";
/// Colour-blind-safe series colours (Tableau 10), the first two as in the timelines.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x4c, 0x78, 0xa8),
    RGBColor(0xf5, 0x85, 0x18),
    RGBColor(0xe4, 0x57, 0x56),
    RGBColor(0x54, 0xa2, 0x4b),
    RGBColor(0xb2, 0x79, 0xa2),
    RGBColor(0x72, 0xb7, 0xb2),
    RGBColor(0x9d, 0x75, 0x5d),
    RGBColor(0xee, 0xca, 0x3b),
];
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const MUTED: RGBColor = RGBColor(0x66, 0x66, 0x66);

/// The chart as a standalone SVG document, [`WIDTH`]×[`HEIGHT`].
pub fn svg(chart: &Chart, lang: Lang) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).expect("drawing into a string cannot fail");
        let (x_lo, x_hi) = axes::domain(chart, true);
        let (y_lo, y_hi) = axes::domain(chart, false);
        let xs = AxisRange::new(&chart.x.scale, x_lo, x_hi);
        let ys = AxisRange::new(&chart.y.scale, y_lo, y_hi);
        match (xs, ys) {
            (AxisRange::Lin(x), AxisRange::Lin(y)) => plot::plot(&root, chart, lang, x, y),
            (AxisRange::Lin(x), AxisRange::Log(y)) => plot::plot(&root, chart, lang, x, y),
            (AxisRange::Log(x), AxisRange::Lin(y)) => plot::plot(&root, chart, lang, x, y),
            (AxisRange::Log(x), AxisRange::Log(y)) => plot::plot(&root, chart, lang, x, y),
        }
    }
    out
}

pub(super) fn format_tick(v: f64, scale: &Scale, lang: Lang) -> String {
    if let Scale::Categories(c) = scale {
        return c.get(v.round() as usize).map(|w| w.get(lang).to_string()).unwrap_or_default();
    }
    let abs = v.abs();
    let s = if abs >= 10_000.0 {
        let k = v / 1000.0;
        if k.fract().abs() < 1e-9 {
            format!("{k:.0}k")
        } else {
            format!("{k:.1}k")
        }
    } else if abs >= 10.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else if abs >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    // Vietnamese writes a decimal comma.
    if lang == Lang::Vi {
        s.replace('.', ",")
    } else {
        s
    }
}

pub(super) fn axis_title(a: &Axis, lang: Lang) -> String {
    if a.unit.is_empty() {
        a.label.get(lang).to_string()
    } else {
        format!("{} ({})", a.label.get(lang), a.unit)
    }
}

/// The chart's numbers as text lines, for the text report: one row per x, one column per series.
pub fn table(chart: &Chart, lang: Lang) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", chart.title.get(lang));
    let mut xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0).chain(s.unmeasured.iter().map(|u| u.x)))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let header: Vec<String> = std::iter::once(axis_title(&chart.x, lang))
        .chain(chart.series.iter().map(|s| s.name.get(lang).to_string()))
        .collect();
    let _ = writeln!(out, "  {}", header.join(" | "));
    let more = xs.len().saturating_sub(TABLE_ROWS);
    for x in xs.into_iter().take(TABLE_ROWS) {
        let mut row = vec![format_tick(x, &chart.x.scale, lang)];
        for s in &chart.series {
            let cell = s.points.iter().position(|p| p.0 == x).map(|i| {
                let v = format_value(s.points[i].1, lang);
                match s.err.as_ref().map(|e| e[i]) {
                    Some((lo, hi)) => format!("{v} [{}–{}]", format_value(lo, lang), format_value(hi, lang)),
                    None => v,
                }
            });
            // Runs with no value (a job never served) are said, never given a number.
            let unmeasured = s.unmeasured.iter().find(|u| u.x == x).map(|u| format!("✕ {}", u.label.get(lang)));
            row.push(match (cell, unmeasured) {
                (Some(c), Some(u)) => format!("{c} · {u}"),
                (Some(c), None) => c,
                (None, Some(u)) => u,
                (None, None) => "–".into(),
            });
        }
        let _ = writeln!(out, "  {}", row.join(" | "));
    }
    if more > 0 {
        let _ = match lang {
            Lang::En => writeln!(out, "  … {more} more rows (the chart shows every point)"),
            Lang::Vi => writeln!(out, "  … {more} dòng nữa (biểu đồ có mọi điểm)"),
        };
    }
    let _ = writeln!(out, "  ({}: {})", lang_word(lang), axis_title(&chart.y, lang));
    out
}

fn lang_word(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "values",
        Lang::Vi => "giá trị",
    }
}

fn format_value(v: f64, lang: Lang) -> String {
    let s = if v.fract().abs() < 1e-9 || v.abs() >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") };
    if lang == Lang::Vi {
        s.replace('.', ",")
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
