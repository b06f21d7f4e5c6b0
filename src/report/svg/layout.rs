//! Where things go on the page: text widths (estimated, erring wide), word wrap, round axis
//! ticks, and label rows that never overlap within a lane. A long label is wrapped between
//! words onto rows of its own, never cut; `page_check` holds every built-in lab's timeline to that.

use super::model::Mark;
use super::{LABEL_PX, MARGIN, WIDTH};

/// Rough advance width of text in a sans-serif font, erring wide so labels do not collide.
pub fn text_width(s: &str, px: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            ' ' => 0.32,
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | '(' | ')' | '[' | ']' => 0.3,
            'f' | 't' | 'r' | 'I' => 0.42,
            'm' | 'w' | 'M' | 'W' => 0.92,
            '0'..='9' => 0.64,
            c if c.is_uppercase() => 0.72,
            '→' | '—' | '✕' | '✓' | '×' | '…' => 0.84,
            _ => 0.6,
        })
        .sum();
    em * px
}

/// Greedy word wrap to a pixel width.
pub fn wrap(text: &str, max_px: f64, px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if !line.is_empty() && text_width(&candidate, px) > max_px {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A tick step of 1, 2, 2.5 or 5 × 10^k giving at most ten intervals over `span`.
pub fn tick_step(span: f64) -> f64 {
    let mut magnitude = 10f64.powf((span / 10.0).max(1e-9).log10().floor());
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * magnitude;
            if span / step <= 10.0 {
                return step;
            }
        }
        magnitude *= 10.0;
    }
}

/// How much wider bold text runs than [`text_width`] says.
pub const BOLD_WIDEN: f64 = 1.1;

/// A label wider than this is wrapped onto more lines (between words, never cut).
pub const LABEL_MAX_PX: f64 = 380.0;

/// The estimated width of a mark's label line, bold or not.
pub fn label_width(line: &str, bold: bool) -> f64 {
    text_width(line, LABEL_PX) * if bold { BOLD_WIDEN } else { 1.0 }
}

/// Where a label goes: above or below the lane line, the row of its line nearest the lane
/// (0 = nearest), its lines, and its anchor. Line `i` of a label below sits in row `row + i`;
/// above, the lines stack upwards, so its last line is in `row`.
pub struct Placed {
    pub mark: usize,
    pub above: bool,
    pub row: usize,
    pub lines: Vec<String>,
    /// Text starts at the mark (true) or ends there (false, near the right edge).
    pub start_anchor: bool,
}

impl Placed {
    /// Rows it takes, nearest the lane first.
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.row..self.row + self.lines.len()
    }

    /// The row of line `i`.
    pub fn row_of_line(&self, i: usize) -> usize {
        if self.above {
            self.row + self.lines.len() - 1 - i
        } else {
            self.row + i
        }
    }
}

/// Room kept between two labels in a row.
const GAP: f64 = 6.0;

/// Rows of one side of a lane (above or below): the spans of the labels already there.
#[derive(Default)]
struct Side {
    rows: Vec<Vec<(f64, f64)>>,
}

impl Side {
    /// Are rows `rows` free over `span`?
    fn fits(&self, span: (f64, f64), rows: std::ops::Range<usize>) -> bool {
        rows.into_iter().all(|k| {
            let row = self.rows.get(k).map(Vec::as_slice).unwrap_or_default();
            row.iter().all(|(a, b)| span.1 + GAP <= *a || *b + GAP <= span.0)
        })
    }

    fn take(&mut self, span: (f64, f64), rows: std::ops::Range<usize>) {
        if self.rows.len() < rows.end {
            self.rows.resize_with(rows.end, Vec::new);
        }
        for k in rows {
            self.rows[k].push(span);
        }
    }
}

/// Put each label, in time order, in the first place where it overlaps no label already
/// placed: row 0 above, row 0 below, row 1 above, row 1 below, … A label wider than
/// [`LABEL_MAX_PX`] is wrapped first and takes one row per line, all on one side.
pub fn place_labels(marks: &[Mark], x: &dyn Fn(f64) -> f64) -> Vec<Placed> {
    let mut order: Vec<usize> = (0..marks.len()).filter(|i| marks[*i].label.is_some()).collect();
    order.sort_by(|a, b| marks[*a].t.total_cmp(&marks[*b].t));
    let (mut above, mut below) = (Side::default(), Side::default());
    let mut placed = Vec::new();
    for i in order {
        let label = marks[i].label.as_deref().unwrap_or_default();
        let bold = marks[i].glyph.strong();
        let lines = wrap(label, LABEL_MAX_PX / if bold { BOLD_WIDEN } else { 1.0 }, LABEL_PX);
        let w = lines.iter().map(|l| label_width(l, bold)).fold(0.0, f64::max);
        let mx = x(marks[i].t);
        let start_anchor = mx + 5.0 + w <= WIDTH - MARGIN;
        let span = if start_anchor { (mx - 2.0, mx + 5.0 + w) } else { (mx - 5.0 - w, mx + 2.0) };
        let n = lines.len();
        // Rows beyond every label placed so far are free: the search ends.
        let slot = (0..)
            .find(|s: &usize| if s % 2 == 0 { &above } else { &below }.fits(span, s / 2..s / 2 + n))
            .unwrap_or_default();
        let side = if slot % 2 == 0 { &mut above } else { &mut below };
        side.take(span, slot / 2..slot / 2 + n);
        placed.push(Placed { mark: i, above: slot % 2 == 0, row: slot / 2, lines, start_anchor });
    }
    placed
}

/// Text as SVG character data or an attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
