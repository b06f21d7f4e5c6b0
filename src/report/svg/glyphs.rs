//! The colours and shapes of marks: one small SVG element per glyph, centred on its point.

use super::model::Glyph;

pub const INK: &str = "#222222";
pub const MUTED: &str = "#666666";
pub const GRID: &str = "#e6e6e6";
pub const RED: &str = "#c62828";
pub const GREEN: &str = "#2e7d32";
pub const GREY: &str = "#8a8a8a";
pub const WORK: &str = "#4c78a8";
pub const LOCK: &str = "#e8891d";
pub const WRITE: &str = "#1b3a6b";
pub const SQL: &str = "#6a3d9a";
/// Height of a handler-work bar; the lock bar is drawn below it.
pub const WORK_H: f64 = 22.0;
pub const LOCK_H: f64 = 9.0;

impl Glyph {
    /// Its label is set in bold: what went wrong.
    pub fn strong(self) -> bool {
        matches!(self, Glyph::Overwrote | Glyph::Crash | Glyph::Released | Glyph::Failed)
    }

    pub fn color(self) -> &'static str {
        match self {
            Glyph::Received | Glyph::Published => INK,
            Glyph::Wrote | Glyph::Stale => WRITE,
            Glyph::Failed | Glyph::Overwrote | Glyph::Crash | Glyph::Released | Glyph::Expired => RED,
            Glyph::SqlError | Glyph::OutboxFailed => RED,
            Glyph::LockTaken => "#a85a00",
            Glyph::SqlSent | Glyph::SqlDone | Glyph::Outbox => SQL,
            Glyph::Acked => GREY,
        }
    }
}

/// A closed path through `points`, filled.
fn polygon(class: &str, points: &[(f64, f64)], fill: &str) -> String {
    let d: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, (x, y))| format!("{}{x:.1},{y:.1}", if i == 0 { "M" } else { "L" }))
        .collect();
    format!(r#"<path class="mark {class}" d="{} Z" fill="{fill}" stroke="white" stroke-width="1"/>"#, d.join(" "))
}

/// Two strokes crossing at (x, y): ✕.
fn cross(class: &str, (x0, y0): (f64, f64), (x1, y1): (f64, f64), color: &str, width: f64) -> String {
    format!(
        r#"<path class="mark {class}" d="M{x0:.1},{y0:.1} L{x1:.1},{y1:.1} M{x0:.1},{y1:.1} L{x1:.1},{y0:.1}" stroke="{color}" stroke-width="{width}" stroke-linecap="round"/>"#
    )
}

/// The mark's glyph centred on (x, y), as one SVG element.
pub fn glyph(g: Glyph, x: f64, y: f64) -> String {
    let c = g.color();
    match g {
        Glyph::Received => polygon("received", &[(x - 6.0, y - 8.0), (x + 6.0, y - 8.0), (x, y + 2.0)], c),
        Glyph::Published => polygon("published", &[(x - 6.0, y + 6.0), (x + 6.0, y + 6.0), (x, y - 6.0)], GREEN),
        Glyph::Failed => cross("failed", (x - 6.0, y - 6.0), (x + 6.0, y + 6.0), c, 3.5),
        Glyph::Crash => polygon(
            "crash",
            &[
                (x + 4.0, y - 15.0),
                (x - 8.0, y + 3.0),
                (x - 1.0, y + 3.0),
                (x - 4.0, y + 15.0),
                (x + 8.0, y - 3.0),
                (x + 1.0, y - 3.0),
            ],
            c,
        ),
        Glyph::Outbox | Glyph::OutboxFailed => {
            polygon("outbox", &[(x, y - 8.0), (x + 8.0, y), (x, y + 8.0), (x - 8.0, y)], c)
        }
        Glyph::Wrote | Glyph::Overwrote => format!(
            r#"<circle class="mark {}" cx="{x:.1}" cy="{y:.1}" r="7" fill="{c}" stroke="white" stroke-width="1.5"/>"#,
            if g == Glyph::Wrote { "wrote" } else { "overwrote" }
        ),
        Glyph::Stale => {
            format!(
                r#"<circle class="mark stale" cx="{x:.1}" cy="{y:.1}" r="6" fill="white" stroke="{c}" stroke-width="2.5"/>"#
            )
        }
        Glyph::LockTaken => format!(
            r#"<rect class="mark lock" x="{:.1}" y="{:.1}" width="3" height="{:.1}" fill="{c}"/>"#,
            x - 1.5,
            y + WORK_H / 2.0 - 2.0,
            LOCK_H + 6.0
        ),
        Glyph::Released => {
            let (top, bottom) = (y + WORK_H / 2.0 + 0.5, y + WORK_H / 2.0 + LOCK_H + 3.5);
            cross("released", (x - 5.0, top), (x + 5.0, bottom), c, 3.0)
        }
        Glyph::Expired => format!(
            r#"<line class="mark expired" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-width="2" stroke-dasharray="4 3"/>"#,
            y - WORK_H / 2.0 - 4.0,
            y + WORK_H / 2.0 + LOCK_H + 6.0
        ),
        Glyph::SqlSent => format!(
            r#"<rect class="mark sql" x="{:.1}" y="{:.1}" width="11" height="11" fill="white" stroke="{c}" stroke-width="2.5"/>"#,
            x - 5.5,
            y - 5.5
        ),
        Glyph::SqlDone | Glyph::SqlError => format!(
            r#"<rect class="mark sql" x="{:.1}" y="{:.1}" width="11" height="11" fill="{c}" stroke="white" stroke-width="1"/>"#,
            x - 5.5,
            y - 5.5
        ),
        Glyph::Acked => format!(
            r#"<line class="mark acked" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/>"#,
            y - 5.0,
            y + 5.0
        ),
    }
}
