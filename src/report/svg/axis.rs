//! The time axis of a slide: one stretch for a run drawn whole, or one stretch per window of a
//! run cut around its key events ([`Drawn`]), with a gap between stretches where events were
//! left out. Each stretch is linear in ms; a stretch gets room for its events, not for its
//! duration, so a window of 30 events in 2 ms is as readable as one of 30 in 2 s.

use super::layout::tick_step;
use super::{PLOT_LEFT, PLOT_RIGHT};
use crate::lang::{pick, Lang};
use crate::report::Drawn;

/// Width of the gap that marks a cut.
pub const GAP: f64 = 28.0;
/// A stretch is never narrower than this.
const MIN_STRETCH: f64 = 90.0;

/// One linear stretch of the axis: ms `t0..t1` drawn over x `x0..x1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch {
    pub t0: f64,
    pub t1: f64,
    pub x0: f64,
    pub x1: f64,
}

/// Where events were left out: the gap from `x0` to `x1`, and what it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct Cut {
    pub x0: f64,
    pub x1: f64,
    pub events: usize,
    /// The time it skips, in ms (None after the last window: the rest of the run).
    pub ms: Option<f64>,
}

impl Cut {
    /// `312 events, 4.9 s left out` in `lang`.
    pub fn words(&self, lang: Lang) -> String {
        let n = self.events;
        match self.ms {
            Some(ms) => crate::tr!(lang, "{n} events, {} left out", "bỏ qua {n} sự kiện, {}", duration(ms, lang)),
            None => crate::tr!(lang, "{n} more events left out", "bỏ qua {n} sự kiện sau đó"),
        }
        .replace("  ", " ")
    }
}

impl Cut {
    /// `312 · 4.9 s`: the count and the time, for a picture with many cuts.
    pub fn short_words(&self, lang: Lang) -> String {
        match self.ms {
            Some(ms) => format!("{} · {}", self.events, duration(ms, lang)),
            None => format!("{} …", self.events),
        }
    }
}

/// `480 ms`, `4.9 s` (`4,9 s` in Vietnamese).
pub fn duration(ms: f64, lang: Lang) -> String {
    let s = if ms < 1.0 {
        "< 1 ms".to_string()
    } else if ms < 1000.0 {
        format!("{} ms", super::model::fmt_ms(ms.round()))
    } else {
        format!("{:.1} s", ms / 1000.0)
    };
    if lang == Lang::Vi {
        s.replace('.', ",")
    } else {
        s
    }
}

/// Maps ms to x over one or more stretches.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub stretches: Vec<Stretch>,
    pub cuts: Vec<Cut>,
}

impl Axis {
    /// One stretch from `start` to `end` ms.
    pub fn whole(start: f64, end: f64) -> Axis {
        Axis { stretches: vec![Stretch { t0: start, t1: end, x0: PLOT_LEFT, x1: PLOT_RIGHT }], cuts: Vec::new() }
    }

    /// A stretch per window of `drawn` (µs in it, ms here; `scale` none: times are as
    /// recorded), the first reaching back to `start` and the last on to `end` where nothing was
    /// left out before or after them.
    pub fn cut(drawn: &Drawn, start: f64, end: f64) -> Axis {
        let windows = &drawn.windows;
        if windows.is_empty() {
            return Axis::whole(start, end);
        }
        let leading = windows[0].left_out_before > 0;
        let trailing = drawn.left_out_after > 0;
        let gaps = windows.len() - 1 + usize::from(leading) + usize::from(trailing);
        let room = PLOT_RIGHT - PLOT_LEFT - gaps as f64 * GAP;
        let weights: Vec<f64> = windows.iter().map(|w| (w.events.max(3)) as f64).collect();
        let widths = shares(&weights, room, MIN_STRETCH);
        let mut x = PLOT_LEFT + if leading { GAP } else { 0.0 };
        let mut stretches = Vec::new();
        let mut cuts = Vec::new();
        if leading {
            cuts.push(Cut { x0: PLOT_LEFT, x1: PLOT_LEFT + GAP, events: windows[0].left_out_before, ms: None });
        }
        let last = windows.len() - 1;
        for (i, (w, width)) in windows.iter().zip(&widths).enumerate() {
            let (from, to) = (w.from_us as f64 / 1000.0, w.to_us as f64 / 1000.0);
            let pad = ((to - from) * 0.04).max(0.2);
            let t0 = if i == 0 && !leading { start.min(from) } else { from - pad };
            let t1 = if i == last && !trailing { end.max(to) } else { to + pad };
            stretches.push(Stretch { t0, t1, x0: x, x1: x + width });
            x += width;
            if i < last {
                let next = &windows[i + 1];
                let ms = (next.from_us - w.to_us) as f64 / 1000.0;
                cuts.push(Cut { x0: x, x1: x + GAP, events: next.left_out_before, ms: Some(ms) });
                x += GAP;
            }
        }
        if trailing {
            cuts.push(Cut { x0: x, x1: x + GAP, events: drawn.left_out_after, ms: None });
        }
        if leading {
            // A run cut before its first window: how much time that skips is not known here.
            cuts[0].ms = Some(windows[0].from_us as f64 / 1000.0 - start.max(0.0)).filter(|ms| *ms > 0.0);
        }
        Axis { stretches, cuts }
    }

    /// The x of `ms`: on its stretch, or at the nearer edge of the gap it falls in.
    pub fn x(&self, ms: f64) -> f64 {
        let s = &self.stretches;
        for (i, st) in s.iter().enumerate() {
            if ms <= st.t1 || i == s.len() - 1 {
                if ms < st.t0 {
                    // In the gap before this stretch (or before the axis).
                    let before = i.checked_sub(1).map(|j| &s[j]);
                    return match before {
                        Some(b) if ms - b.t1 < st.t0 - ms => b.x1,
                        _ => st.x0,
                    };
                }
                let span = (st.t1 - st.t0).max(1e-9);
                return st.x0 + (ms.min(st.t1) - st.t0) / span * (st.x1 - st.x0);
            }
        }
        PLOT_LEFT
    }

    /// Round ticks on every stretch, about one per 90 px, none within 14 px of a stretch's
    /// edge unless it is the only one: (ms, x).
    pub fn ticks(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let cut = self.stretches.len() > 1 || !self.cuts.is_empty();
        for st in &self.stretches {
            let span = (st.t1 - st.t0).max(1e-6);
            let intervals = ((st.x1 - st.x0) / 90.0).floor().max(1.0);
            let step = tick_step(span * 10.0 / intervals);
            let mut t = (st.t0 / step).ceil() * step;
            let mut mine = Vec::new();
            while t <= st.t1 + 1e-9 {
                mine.push((t, self.x(t)));
                t += step;
            }
            if cut {
                let inner: Vec<(f64, f64)> =
                    mine.iter().copied().filter(|(_, x)| *x > st.x0 + 14.0 && *x < st.x1 - 14.0).collect();
                if !inner.is_empty() {
                    mine = inner;
                }
            }
            out.extend(mine);
        }
        out
    }

    /// The axis caption: ms since the producer started, and where the run was cut.
    pub fn caption(&self, lang: Lang) -> &'static str {
        if self.cuts.is_empty() {
            pick(lang, "ms since the producer started", "ms kể từ khi producer bắt đầu")
        } else {
            pick(
                lang,
                "ms since the producer started · ≈ events left out",
                "ms kể từ khi producer bắt đầu · ≈ sự kiện bị bỏ qua",
            )
        }
    }
}

/// `room` shared out in proportion to `weights`, each share at least `least` (where they all
/// fit).
fn shares(weights: &[f64], room: f64, least: f64) -> Vec<f64> {
    let least = least.min(room / weights.len().max(1) as f64);
    let mut fixed = vec![false; weights.len()];
    loop {
        let free_room = room - least * fixed.iter().filter(|f| **f).count() as f64;
        let free_weight: f64 = weights.iter().zip(&fixed).filter(|(_, f)| !**f).map(|(w, _)| w).sum();
        let out: Vec<f64> = weights
            .iter()
            .zip(&fixed)
            .map(|(w, f)| if *f { least } else { free_room * w / free_weight.max(1e-9) })
            .collect();
        let too_small: Vec<usize> = (0..out.len()).filter(|&i| !fixed[i] && out[i] < least).collect();
        if too_small.is_empty() {
            return out;
        }
        too_small.into_iter().for_each(|i| fixed[i] = true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::DrawnWindow;

    fn window(from_ms: i64, to_ms: i64, events: usize, left_out_before: usize) -> DrawnWindow {
        DrawnWindow { from_us: from_ms * 1000, to_us: to_ms * 1000, events, left_out_before }
    }

    #[test]
    fn a_cut_run_gets_a_stretch_per_window_and_a_gap_per_cut() {
        let drawn = Drawn {
            events: 900,
            windows: vec![window(0, 10, 60, 0), window(5000, 5002, 30, 400), window(9000, 9100, 30, 300)],
            left_out_after: 80,
            keys: 3,
            keys_drawn: 3,
        };
        let axis = Axis::cut(&drawn, 0.0, 9100.0);
        assert_eq!(axis.stretches.len(), 3);
        assert_eq!(axis.cuts.len(), 3, "two between the windows, one after the last");
        assert_eq!((axis.cuts[0].events, axis.cuts[0].ms), (400, Some(4990.0)));
        assert_eq!((axis.cuts[2].events, axis.cuts[2].ms), (80, None));
        assert!((axis.stretches[2].x1 + GAP - PLOT_RIGHT).abs() < 1e-6, "the whole plot is used");
        // Times map inside their stretch, in order; a time in a gap goes to the nearer edge.
        let xs: Vec<f64> = [0.0, 10.0, 5000.0, 5002.0, 9000.0].iter().map(|t| axis.x(*t)).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        assert_eq!(axis.x(20.0), axis.stretches[0].x1);
        assert_eq!(axis.x(4900.0), axis.stretches[1].x0);
        // The short second window (2 ms) is as wide as its 30 events ask, not squeezed by time.
        assert!(axis.stretches[1].x1 - axis.stretches[1].x0 >= MIN_STRETCH);
        let ticks = axis.ticks();
        assert!(ticks.iter().any(|(t, _)| *t > 5000.0 && *t < 5002.5), "ticks in the 2 ms window: {ticks:?}");
        assert_eq!(axis.cuts[0].words(Lang::En), "400 events, 5.0 s left out");
        assert_eq!(axis.cuts[2].words(Lang::Vi), "bỏ qua 80 sự kiện sau đó");
    }

    #[test]
    fn shares_keep_a_least_width() {
        let s = shares(&[100.0, 1.0, 1.0], 1000.0, 90.0);
        assert!((s.iter().sum::<f64>() - 1000.0).abs() < 1e-6);
        assert_eq!((s[1], s[2]), (90.0, 90.0));
    }
}
