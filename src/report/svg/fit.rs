//! Fitting a timeline to a slide (16:9): each lane gets the label rows its share of the
//! page's height allows, and a lane whose labels need more keeps the labels that matter —
//! those of its key events and alarms first, then every other one in time — and draws the
//! rest as marks without words (their lines are the lab book's step captions). A page whose
//! lanes alone are taller than a slide is drawn whole and widened to 16:9 instead.

use super::axis::Axis;
use super::glyphs::{LOCK_H, WORK_H};
use super::layout::{place_labels, Placed};
use super::model::{Mark, Timeline};

/// Slide height for the page's width (16:9).
pub const SLIDE_HEIGHT: f64 = 720.0;
/// Vertical distance between stacked label rows.
pub const ROW_H: f64 = 19.0;
/// A lane with no label: its bars, lock bar and room around them.
const LANE_BASE: f64 = 8.0 + WORK_H / 2.0 + 8.0 + WORK_H / 2.0 + LOCK_H + 10.0 + 6.0;
/// Labels a lane starts from before it is fitted: a crowded lane's labels beyond this are
/// never placed (placing costs more than linear time).
const FIRST_LABELS: usize = 48;

/// Where one lane goes.
pub struct LaneLayout {
    /// y of the lane line.
    pub y: f64,
    pub top: f64,
    pub bottom: f64,
    pub labels: Vec<Placed>,
    /// Marks whose label was left out to fit the page.
    pub unlabelled: usize,
}

/// Lanes one under the other from `top`, their labels fitted into `room` px of height (lanes,
/// rows and all); lanes that fit with room to spare are spread out over it.
pub fn lay_out_lanes(tl: &Timeline, axis: &Axis, top: f64, room: f64) -> Vec<LaneLayout> {
    let x = |ms: f64| axis.x(ms);
    let rows_room = ((room - LANE_BASE * tl.lanes.len() as f64) / ROW_H).floor().max(0.0) as usize;
    // Each lane as it would be with (nearly) every label.
    let mut placed: Vec<(Vec<Placed>, usize)> =
        tl.lanes.iter().map(|l| labelled(&l.marks, &x, FIRST_LABELS, usize::MAX)).collect();
    let demand: Vec<usize> = placed.iter().map(|(p, _)| rows_of(p)).collect();
    let total: usize = demand.iter().sum();
    if total > rows_room {
        // Shares in proportion to demand, at least one row each where a lane has labels.
        let caps = shares(&demand, rows_room);
        for (i, lane) in tl.lanes.iter().enumerate() {
            if demand[i] > caps[i] {
                placed[i] = labelled(&lane.marks, &x, FIRST_LABELS, caps[i]);
            }
        }
    }
    let used: f64 =
        placed.iter().map(|(p, _)| rows_of(p) as f64 * ROW_H).sum::<f64>() + LANE_BASE * tl.lanes.len() as f64;
    let spare = ((room - used) / tl.lanes.len().max(1) as f64).clamp(0.0, 140.0);
    let mut y = top;
    let mut out = Vec::new();
    for (labels, unlabelled) in placed {
        let rows =
            |above: bool| labels.iter().filter(|p| p.above == above).map(|p| p.rows().end).max().unwrap_or(0) as f64;
        let (rows_above, rows_below) = (rows(true), rows(false));
        let line_y = y + spare / 2.0 + 8.0 + WORK_H / 2.0 + 8.0 + rows_above * ROW_H;
        let bottom = line_y + WORK_H / 2.0 + LOCK_H + 10.0 + rows_below * ROW_H + 6.0 + spare / 2.0;
        out.push(LaneLayout { y: line_y, top: y, bottom, labels, unlabelled });
        y = bottom;
    }
    out
}

/// Rows a lane's labels take, both sides.
fn rows_of(placed: &[Placed]) -> usize {
    let side = |above: bool| placed.iter().filter(|p| p.above == above).map(|p| p.rows().end).max().unwrap_or(0);
    side(true) + side(false)
}

/// `room` rows shared in proportion to `demand`, at least one each that wants any (where they
/// fit), never more than it wants.
fn shares(demand: &[usize], room: usize) -> Vec<usize> {
    let total: usize = demand.iter().sum::<usize>().max(1);
    let wanting = demand.iter().filter(|d| **d > 0).count();
    let spare = room.saturating_sub(wanting);
    demand.iter().map(|&d| if d == 0 { 0 } else { (1 + spare * d / total).min(d) }).collect()
}

/// The marks' labels placed, at most `first` of them and in at most `max_rows` rows: the
/// labels that matter most are kept ([`rank`]), the others dropped half at a time until the
/// rest fit. Returns the placement and how many labels were left out.
fn labelled(marks: &[Mark], x: &dyn Fn(f64) -> f64, first: usize, max_rows: usize) -> (Vec<Placed>, usize) {
    let order = rank(marks);
    let mut keep = order.len().min(first);
    loop {
        let kept: std::collections::HashSet<usize> = order[..keep].iter().copied().collect();
        let shown: Vec<Mark> = marks
            .iter()
            .enumerate()
            .map(|(i, m)| Mark {
                t: m.t,
                glyph: m.glyph,
                label: if kept.contains(&i) { m.label.clone() } else { None },
                step: m.step,
                key: m.key,
            })
            .collect();
        let placed = place_labels(&shown, x);
        if rows_of(&placed) <= max_rows || keep == 0 {
            return (placed, order.len() - keep);
        }
        keep = if keep <= 2 { keep - 1 } else { keep / 2 + keep % 2 };
    }
}

/// The marks with a label, those that matter most first: alarms (strong glyphs), then the
/// other key events, each in time order, then the others spread out — the first and the last in time, then
/// the middle of each stretch between those already ranked, and so on — so any first part of
/// the ranking covers the lane.
fn rank(marks: &[Mark]) -> Vec<usize> {
    let mut by_time: Vec<usize> = (0..marks.len()).filter(|&i| marks[i].label.is_some()).collect();
    by_time.sort_by(|a, b| marks[*a].t.total_cmp(&marks[*b].t));
    let (mut out, rest): (Vec<usize>, Vec<usize>) =
        by_time.into_iter().partition(|&i| marks[i].key || marks[i].glyph.strong());
    // What went wrong (a strong glyph: an overwrite, a crash) before the other key events.
    out.sort_by_key(|&i| !marks[i].glyph.strong());
    if rest.is_empty() {
        return out;
    }
    out.push(rest[0]);
    if rest.len() > 1 {
        out.push(rest[rest.len() - 1]);
    }
    let mut stretches = std::collections::VecDeque::from([(0, rest.len() - 1)]);
    while let Some((a, b)) = stretches.pop_front() {
        if b <= a + 1 {
            continue;
        }
        let mid = (a + b) / 2;
        out.push(rest[mid]);
        stretches.push_back((a, mid));
        stretches.push_back((mid, b));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::svg::model::Glyph;

    fn mark(t: f64, key: bool) -> Mark {
        Mark { t, glyph: Glyph::Received, label: Some(format!("received job number {t}")), step: 0, key }
    }

    #[test]
    fn a_crowded_lane_keeps_its_key_labels_and_fits_its_rows() {
        // 40 marks 2 px apart: their labels would stack in dozens of rows.
        let mut marks: Vec<Mark> = (0..40).map(|i| mark(i as f64, false)).collect();
        marks[30].key = true;
        let x = |ms: f64| 200.0 + ms * 2.0;
        let (all, none_left) = labelled(&marks, &x, 48, usize::MAX);
        assert!(rows_of(&all) > 6 && none_left == 0, "{} rows", rows_of(&all));
        let (fitted, left_out) = labelled(&marks, &x, 48, 4);
        assert!(rows_of(&fitted) <= 4, "{} rows", rows_of(&fitted));
        assert!(left_out > 0 && fitted.len() + left_out == 40);
        assert!(fitted.iter().any(|p| p.mark == 30), "the key event's label is kept");
        // What is kept is spread over the lane, not its first marks only.
        let last = fitted.iter().map(|p| p.mark).filter(|m| *m != 30).max().unwrap();
        assert!(last >= 30, "labels kept as late as mark {last}");
    }

    #[test]
    fn rows_are_shared_by_demand_with_one_each() {
        assert_eq!(shares(&[10, 0, 2], 6), [4, 0, 1]);
        assert_eq!(shares(&[3, 3], 10), [3, 3]);
        assert_eq!(shares(&[8, 8, 8], 2), [1, 1, 1]);
    }
}
