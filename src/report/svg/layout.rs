//! Where things go on the page: text widths (estimated, erring wide), word wrap, round axis
//! ticks, and label rows that never overlap within a lane.

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

/// Where a label goes: a row (0 = nearest the lane line) above or below, and its anchor.
pub struct Placed {
    pub mark: usize,
    pub above: bool,
    pub row: usize,
    /// Text starts at the mark (true) or ends there (false, near the right edge).
    pub start_anchor: bool,
}

/// Put each label in the first row, alternating above and below the lane line, where it
/// overlaps no label already there.
pub fn place_labels(marks: &[Mark], x: &dyn Fn(f64) -> f64) -> Vec<Placed> {
    let mut order: Vec<usize> = (0..marks.len()).filter(|i| marks[*i].label.is_some()).collect();
    order.sort_by(|a, b| marks[*a].t.total_cmp(&marks[*b].t));
    // rows[k]: occupied intervals of slot k, slots going above 0, below 0, above 1, below 1, …
    let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut placed = Vec::new();
    for i in order {
        let label = marks[i].label.as_deref().unwrap_or_default();
        let w = text_width(label, LABEL_PX);
        let mx = x(marks[i].t);
        let start_anchor = mx + 5.0 + w <= WIDTH - MARGIN;
        let span = if start_anchor { (mx - 2.0, mx + 5.0 + w) } else { (mx - 5.0 - w, mx + 2.0) };
        let fits = |row: &Vec<(f64, f64)>| row.iter().all(|(a, b)| span.1 + 6.0 <= *a || *b + 6.0 <= span.0);
        let slot = match rows.iter().position(fits) {
            Some(s) => s,
            None => {
                rows.push(Vec::new());
                rows.len() - 1
            }
        };
        rows[slot].push(span);
        placed.push(Placed { mark: i, above: slot % 2 == 0, row: slot / 2, start_anchor });
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
