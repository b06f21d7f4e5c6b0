//! The axes of a chart: the span of its data and plotters ranges with round ticks.

use crate::chart::{Chart, MarkAxis, Scale, Style};
use plotters::coord::combinators::{IntoLogRange, LogCoord};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

/// The span of the data (and marks, whiskers) on one axis, padded so nothing sits on the frame.
pub(super) fn domain(chart: &Chart, x_axis: bool) -> (f64, f64) {
    let axis = if x_axis { &chart.x } else { &chart.y };
    if let Scale::Categories(c) = &axis.scale {
        return (-0.5, c.len().max(1) as f64 - 0.5);
    }
    let mut values: Vec<f64> = Vec::new();
    for s in &chart.series {
        values.extend(s.points.iter().map(|p| if x_axis { p.0 } else { p.1 }));
        if !x_axis {
            values.extend(s.err.iter().flatten().flat_map(|&(lo, hi)| [lo, hi]));
        }
        // Bars stand on zero.
        if !x_axis && s.style == Style::Bars && axis.scale == Scale::Linear {
            values.push(0.0);
        }
    }
    let want = if x_axis { MarkAxis::X } else { MarkAxis::Y };
    values.extend(chart.marks.iter().filter(|m| m.axis == want).map(|m| m.at));
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        // Nothing to plot (every run of every series unmeasured): an empty axis that a
        // logarithmic scale can draw too.
        return match axis.scale {
            Scale::Log2 | Scale::Log10 => (1.0, 10.0),
            _ => (0.0, 1.0),
        };
    }
    match axis.scale {
        Scale::Log2 | Scale::Log10 => (lo / 1.3, hi * 1.3),
        _ => {
            let pad = if hi > lo { (hi - lo) * 0.06 } else { hi.abs().max(1.0) * 0.5 };
            let lo = if lo >= 0.0 && lo - pad < 0.0 { 0.0 } else { lo - pad };
            (lo, hi + pad)
        }
    }
}

/// An axis as plotters wants it: a linear or logarithmic range with our own tick positions.
pub(super) enum AxisRange {
    Lin(Ticked<RangedCoordf64>),
    Log(Ticked<LogCoord<f64>>),
}

impl AxisRange {
    pub(super) fn new(scale: &Scale, lo: f64, hi: f64) -> AxisRange {
        let log = |base: f64| {
            let coord: LogCoord<f64> = (lo..hi).log_scale().base(base).into();
            AxisRange::Log(Ticked { inner: coord, ticks: log_ticks(lo, hi, base) })
        };
        match scale {
            Scale::Linear => AxisRange::Lin(Ticked { inner: (lo..hi).into(), ticks: linear_ticks(lo, hi) }),
            Scale::Categories(c) => {
                AxisRange::Lin(Ticked { inner: (lo..hi).into(), ticks: (0..c.len()).map(|i| i as f64).collect() })
            }
            Scale::Log2 => log(2.0),
            Scale::Log10 => log(10.0),
        }
    }
}

/// A plotters range whose ticks are exactly the given values (plotters' own `WithKeyPoints`
/// cannot be used with a label formatter).
pub(super) struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Round tick values (1, 2, 2.5, 5 × 10ⁿ) covering `lo..hi`, about six of them.
pub(super) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 7.0).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Powers of the base inside `lo..hi` (for base 10 also 2× and 5× when there are few).
pub(super) fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let (a, b) = (lo.log(base).ceil() as i32, hi.log(base).floor() as i32);
    let mut ticks: Vec<f64> = (a..=b).map(|e| base.powi(e)).collect();
    if base == 10.0 && ticks.len() < 4 {
        let extra: Vec<f64> =
            (a - 1..=b).flat_map(|e| [2.0, 5.0].map(|m| m * 10f64.powi(e))).filter(|v| *v >= lo && *v <= hi).collect();
        ticks.extend(extra);
        ticks.sort_by(f64::total_cmp);
    }
    ticks
}
