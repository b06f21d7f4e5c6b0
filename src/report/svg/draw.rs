//! Writing the SVG: the page (title, lanes with their bars, marks and labels, the time axis)
//! and its footer (a key to the marks, the final state and the verdict badge).

use super::glyphs::{glyph, GRID, INK, LOCK, LOCK_H, MUTED, RED, SQL, WORK, WORK_H};
use super::layout::{esc, place_labels, text_width, tick_step, Placed};
use super::model::{fmt_ms, BarKind, Glyph, Lane, Mark, Timeline};
use super::{Flavour, LABEL_PX, MARGIN, PLOT_LEFT, PLOT_RIGHT, WIDTH};
use crate::labs::{FinalItem, RunRecord};
use crate::lang::{pick, Lang};
use std::fmt::Write;

const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', 'DejaVu Sans', sans-serif";
/// Vertical distance between stacked label rows.
const ROW_H: f64 = 19.0;
/// A leader starts this far above (or below) the lane line: at its glyph's edge.
const LEADER_FROM: f64 = 8.0;

fn document(height: f64, title: &str, body: &str, pattern: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="{}" font-size="{LABEL_PX}" role="img">"#,
        esc(FONT)
    );
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(
        out,
        r##"<defs><pattern id="{pattern}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fdf0e0"/><line x1="0" y1="0" x2="0" y2="6" stroke="{LOCK}" stroke-width="2.5"/></pattern></defs>"##
    );
    let _ = writeln!(out, r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#);
    out.push_str(body);
    out.push_str("</svg>\n");
    out
}

fn title_block(out: &mut String, lines: &[(String, f64, bool)]) -> f64 {
    let mut y = MARGIN;
    for (text, px, bold) in lines {
        y += px * 1.25;
        let (weight, color) = if *bold { ("bold", INK) } else { ("normal", MUTED) };
        let _ = writeln!(
            out,
            r#"<text x="{MARGIN}" y="{y:.1}" font-size="{px}" font-weight="{weight}" fill="{color}">{}</text>"#,
            esc(text)
        );
    }
    y
}

fn first_title(lines: &[(String, f64, bool)]) -> &str {
    lines.first().map(|l| l.0.as_str()).unwrap_or_default()
}

pub fn missing_run(title_lines: &[(String, f64, bool)], msg: &str) -> String {
    let mut body = String::new();
    let y = title_block(&mut body, title_lines) + 40.0;
    let _ = writeln!(body, r#"<text x="{MARGIN}" y="{y:.1}" font-size="18" fill="{RED}">{}</text>"#, esc(msg));
    document(y + MARGIN, first_title(title_lines), &body, "hatch")
}

/// Where one lane goes.
struct LaneLayout {
    /// y of the lane line.
    y: f64,
    top: f64,
    bottom: f64,
    labels: Vec<Placed>,
}

/// Maps milliseconds to x on the axis.
struct Axis {
    start: f64,
    end: f64,
}

impl Axis {
    fn x(&self, ms: f64) -> f64 {
        PLOT_LEFT + (ms - self.start) / (self.end - self.start) * (PLOT_RIGHT - PLOT_LEFT)
    }
}

/// The whole page.
pub fn page(
    title_lines: &[(String, f64, bool)],
    tl: &Timeline,
    record: &RunRecord,
    items: &[FinalItem],
    lang: Lang,
    flavour: &Flavour,
) -> String {
    let axis = Axis { start: tl.start, end: tl.end };
    let mut body = String::new();
    let plot_top = title_block(&mut body, title_lines) + 24.0;
    let layouts = lay_out_lanes(tl, &axis, plot_top);
    let axis_y = layouts.last().map_or(plot_top, |l| l.bottom) + 4.0;
    grid(&mut body, &axis, plot_top, axis_y, lang);
    for (i, (lane, lay)) in tl.lanes.iter().zip(&layouts).enumerate() {
        draw_lane(&mut body, lane, lay, &axis, i % 2 == 1, flavour);
    }
    // Footer: legend on the left, final state and verdict on the right (at the last step).
    let footer_y = axis_y + 70.0;
    if flavour.steps {
        let _ = writeln!(body, "<g{}>", flavour.step_attr(tl.steps, false));
    }
    let (final_left, badge_bottom) = super::footer::final_state(&mut body, record, items, footer_y, lang);
    if flavour.steps {
        let _ = writeln!(body, "</g>");
    }
    let legend_bottom = if final_left - MARGIN >= 420.0 {
        super::footer::legend(&mut body, tl, footer_y, final_left - 28.0, lang)
    } else {
        super::footer::legend(&mut body, tl, badge_bottom + 28.0, WIDTH - MARGIN, lang)
    };
    let height = (legend_bottom.max(badge_bottom) + MARGIN).ceil();
    let body = body.replace("url(#hatch)", &format!("url(#{})", flavour.pattern_id()));
    document(height, first_title(title_lines), &body, flavour.pattern_id())
}

/// Lanes one under the other, each as tall as its label rows need.
fn lay_out_lanes(tl: &Timeline, axis: &Axis, top: f64) -> Vec<LaneLayout> {
    let mut y = top;
    let mut out = Vec::new();
    for lane in &tl.lanes {
        let labels = place_labels(&lane.marks, &|ms| axis.x(ms));
        let rows =
            |above: bool| labels.iter().filter(|p| p.above == above).map(|p| p.rows().end).max().unwrap_or(0) as f64;
        let (rows_above, rows_below) = (rows(true), rows(false));
        let line_y = y + 8.0 + WORK_H / 2.0 + 8.0 + rows_above * ROW_H;
        let bottom = line_y + WORK_H / 2.0 + LOCK_H + 10.0 + rows_below * ROW_H + 6.0;
        out.push(LaneLayout { y: line_y, top: y, bottom, labels });
        y = bottom;
    }
    out
}

/// Vertical grid lines at round ticks, the axis and its caption.
fn grid(out: &mut String, axis: &Axis, plot_top: f64, axis_y: f64, lang: Lang) {
    let step = tick_step(axis.end - axis.start);
    let mut tick = (axis.start / step).ceil() * step;
    let _ = writeln!(out, r#"<g class="axis" font-size="14" fill="{MUTED}">"#);
    while tick <= axis.end + 1e-9 {
        let tx = axis.x(tick);
        let stroke = if tick.abs() < 1e-9 { "#bdbdbd" } else { GRID };
        let _ = writeln!(
            out,
            r#"<line x1="{tx:.1}" y1="{plot_top:.1}" x2="{tx:.1}" y2="{axis_y:.1}" stroke="{stroke}" stroke-width="1"/>"#
        );
        let _ =
            writeln!(out, r#"<text x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, axis_y + 20.0, fmt_ms(tick));
        tick += step;
    }
    let _ = writeln!(
        out,
        r#"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="{MUTED}" stroke-width="1"/>"#
    );
    let caption = pick(lang, "ms since the producer started", "ms kể từ khi producer bắt đầu");
    let _ =
        writeln!(out, r#"<text x="{PLOT_RIGHT}" y="{:.1}" text-anchor="end">{}</text>"#, axis_y + 40.0, esc(caption));
    let _ = writeln!(out, "</g>");
}

/// One lane: its band, name, line from when it was ready, bars, then marks and labels.
fn draw_lane(out: &mut String, lane: &Lane, lay: &LaneLayout, axis: &Axis, shaded: bool, flavour: &Flavour) {
    let _ = writeln!(out, r#"<g class="lane" data-actor="{}">"#, esc(&lane.actor.to_string()));
    if shaded {
        let (w, h) = (WIDTH - 2.0 * MARGIN, lay.bottom - lay.top);
        let _ =
            writeln!(out, r##"<rect x="{MARGIN}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="#f7f7f7"/>"##, lay.top);
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="18" font-weight="bold" fill="{INK}" text-anchor="end">{}</text>"#,
        PLOT_LEFT - 16.0,
        lay.y + 6.0,
        esc(&lane.actor.to_string())
    );
    let from = axis.x(lane.ready.map_or(axis.start, |r| r.max(axis.start)));
    let _ = writeln!(
        out,
        r##"<line x1="{from:.1}" y1="{y:.1}" x2="{PLOT_RIGHT}" y2="{y:.1}" stroke="#9e9e9e" stroke-width="1.5"/>"##,
        y = lay.y
    );
    if lane.ready.is_some() {
        let (y0, y1) = (lay.y - 6.0, lay.y + 6.0);
        let _ = writeln!(
            out,
            r##"<line class="ready" x1="{from:.1}" y1="{y0:.1}" x2="{from:.1}" y2="{y1:.1}" stroke="#9e9e9e" stroke-width="2"/>"##
        );
    }
    for bar in &lane.bars {
        draw_bar(out, bar, lay.y, axis, &flavour.step_attr(bar.step, false));
    }
    draw_marks(out, &lane.marks, lay, axis, flavour);
    let _ = writeln!(out, "</g>");
}

/// A bar; `attr` goes into each element (the lab book's step).
fn draw_bar(out: &mut String, bar: &super::model::Bar, y: f64, axis: &Axis, attr: &str) {
    let (x0, x1) = (axis.x(bar.t0), axis.x(bar.t1));
    let w = (x1 - x0).max(2.0);
    let below = y + WORK_H / 2.0 + 2.0;
    let _ = match bar.kind {
        BarKind::Work { ms } => {
            let _ = writeln!(
                out,
                r#"<rect{attr} class="work" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="{WORK_H}" rx="3" fill="{WORK}" fill-opacity="0.85" data-ms="{}"/>"#,
                y - WORK_H / 2.0,
                fmt_ms(ms)
            );
            let label = format!("{} ms", fmt_ms(ms));
            if text_width(&label, LABEL_PX) + 8.0 < w {
                let _ = writeln!(
                    out,
                    r#"<text{attr} x="{:.1}" y="{:.1}" font-size="{LABEL_PX}" fill="white" text-anchor="middle">{}</text>"#,
                    x0 + w / 2.0,
                    y + 4.5,
                    esc(&label)
                );
            }
            Ok(())
        }
        BarKind::Lock => writeln!(
            out,
            r#"<rect{attr} class="lock" x="{x0:.2}" y="{below:.1}" width="{w:.2}" height="{LOCK_H}" fill="url(#hatch)" stroke="{LOCK}" stroke-width="1.5"/>"#
        ),
        BarKind::LockExpired => writeln!(
            out,
            r#"<rect{attr} class="lock-expired" x="{x0:.2}" y="{below:.1}" width="{w:.2}" height="{LOCK_H}" fill="none" stroke="{RED}" stroke-width="1.5" stroke-dasharray="5 3"/>"#
        ),
        BarKind::Wait => writeln!(
            out,
            r##"<rect{attr} class="wait" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="8" fill="#eadcf3" stroke="{SQL}" stroke-width="1" stroke-dasharray="2 2"/>"##,
            y - 4.0
        ),
    };
}

/// Leaders first, then glyphs, then labels, so text stays on top.
fn draw_marks(out: &mut String, marks: &[Mark], lay: &LaneLayout, axis: &Axis, flavour: &Flavour) {
    // The baseline of a label line in `row`.
    let line_y = |above: bool, row: usize| {
        if above {
            lay.y - WORK_H / 2.0 - 8.0 - row as f64 * ROW_H
        } else {
            lay.y + WORK_H / 2.0 + LOCK_H + 6.0 + LABEL_PX + row as f64 * ROW_H
        }
    };
    for p in lay.labels.iter().filter(|p| p.has_leader(axis.x(marks[p.mark].t))) {
        let m = &marks[p.mark];
        let (mx, ly) = (axis.x(m.t), line_y(p.above, p.row));
        let end = ly - LABEL_PX + 2.0;
        // From the glyph's edge, clear of a work bar's duration text.
        let start = if p.above { lay.y - LEADER_FROM } else { lay.y + LEADER_FROM };
        let (attr, color) = (flavour.step_attr(m.step, false), m.glyph.color());
        if p.bent(mx) {
            // Sideways in the gap between the bars and row 0, then up (or down) its column.
            let foot = if p.above { lay.y - WORK_H / 2.0 - 2.5 } else { lay.y + WORK_H / 2.0 + LOCK_H + 3.5 };
            let _ = writeln!(
                out,
                r#"<polyline{attr} class="leader" points="{mx:.1},{start:.1} {mx:.1},{foot:.1} {c:.1},{foot:.1} {c:.1},{end:.1}" fill="none" stroke="{color}" stroke-width="1" stroke-opacity="0.5"/>"#,
                c = p.column
            );
            continue;
        }
        let (y1, y2) = if p.above { (end, start) } else { (start, end) };
        let _ = writeln!(
            out,
            r#"<line{attr} class="leader" x1="{mx:.1}" y1="{y1:.1}" x2="{mx:.1}" y2="{y2:.1}" stroke="{color}" stroke-width="1" stroke-opacity="0.5"/>"#
        );
    }
    // Acks under everything else: they often share a millisecond with the write.
    let (acks, others): (Vec<&Mark>, Vec<&Mark>) = marks.iter().partition(|m| m.glyph == Glyph::Acked);
    for m in acks.into_iter().chain(others) {
        let element = glyph(m.glyph, axis.x(m.t), lay.y);
        let attr = flavour.step_attr(m.step, true);
        // Into the element's start tag, after its name.
        let at = element.find(' ').unwrap_or(element.len());
        let _ = writeln!(out, "{}{attr}{}", &element[..at], &element[at..]);
    }
    for p in &lay.labels {
        let m = &marks[p.mark];
        let (lx, anchor) = if p.start_anchor { (p.column + 4.0, "start") } else { (p.column - 4.0, "end") };
        for (i, line) in p.lines.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"<text{} x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{}"{} stroke="white" stroke-width="3" paint-order="stroke">{}</text>"#,
                flavour.step_attr(m.step, false),
                line_y(p.above, p.row_of_line(i)),
                m.glyph.color(),
                if m.glyph.strong() { r#" font-weight="bold""# } else { "" },
                esc(line)
            );
        }
    }
}
