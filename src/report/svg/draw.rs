//! Writing the SVG: the page (title, lanes with their bars, marks and labels, the time axis)
//! and its footer (a key to the marks, the final state and the verdict badge).

use super::axis::Axis;
use super::fit::{lay_out_lanes, LaneLayout, ROW_H, SLIDE_HEIGHT};
use super::glyphs::{glyph, GRID, INK, LOCK, LOCK_H, MUTED, RED, SQL, WORK, WORK_H};
use super::layout::{esc, text_width};
use super::model::{fmt_ms, BarKind, Glyph, Lane, Mark, Timeline};
use super::{Flavour, LABEL_PX, MARGIN, PLOT_LEFT, PLOT_RIGHT, WIDTH};
use crate::labs::{FinalItem, RunRecord};
use crate::lang::Lang;
use crate::report::Drawn;
use std::fmt::Write;

const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', 'DejaVu Sans', sans-serif";
/// A leader starts this far above (or below) the lane line: at its glyph's edge.
const LEADER_FROM: f64 = 8.0;

/// The SVG document: 16:9, [`WIDTH`] wide, or wider where the page is taller than a slide
/// (its content centred: the texts keep their place on the page's own width).
fn document(height: f64, title: &str, body: &str, pattern: &str) -> String {
    let height = height.max(SLIDE_HEIGHT);
    let width = (height * 16.0 / 9.0).max(WIDTH).round();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{}" font-size="{LABEL_PX}" role="img">"#,
        esc(FONT)
    );
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(
        out,
        r##"<defs><pattern id="{pattern}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fdf0e0"/><line x1="0" y1="0" x2="0" y2="6" stroke="{LOCK}" stroke-width="2.5"/></pattern></defs>"##
    );
    let _ = writeln!(out, r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#);
    if width > WIDTH {
        let _ = writeln!(
            out,
            r#"<svg class="page" x="{:.0}" y="0" width="{WIDTH}" height="{height}" overflow="visible">"#,
            (width - WIDTH) / 2.0
        );
        out.push_str(body);
        out.push_str("</svg>\n");
    } else {
        out.push_str(body);
    }
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

/// The whole page: 16:9, its lanes fitted between the title and the footer
/// ([`super::fit`]); a page whose lanes alone are taller is widened to 16:9 instead.
pub fn page(
    title_lines: &[(String, f64, bool)],
    tl: &Timeline,
    record: &RunRecord,
    items: &[FinalItem],
    drawn: Option<&Drawn>,
    lang: Lang,
    flavour: &Flavour,
) -> String {
    let axis = match drawn {
        Some(d) => Axis::cut(d, tl.start, tl.end),
        None => Axis::whole(tl.start, tl.end),
    };
    let mut body = String::new();
    let mut plot_top = title_block(&mut body, title_lines) + 24.0;
    let cut_labels = cut_labels(&axis, lang);
    plot_top += cut_labels.1;
    // The footer's height, from a draft drawn at 0.
    let footer_height = footer(&mut String::new(), tl, record, items, 0.0, lang, flavour);
    let room = SLIDE_HEIGHT - plot_top - AXIS_H - footer_height - MARGIN;
    let layouts = lay_out_lanes(tl, &axis, plot_top, room);
    let axis_y = layouts.last().map_or(plot_top, |l| l.bottom) + 4.0;
    grid(&mut body, &axis, plot_top, axis_y, lang);
    for (i, (lane, lay)) in tl.lanes.iter().zip(&layouts).enumerate() {
        draw_lane(&mut body, lane, lay, &axis, i % 2 == 1, flavour);
    }
    draw_cuts(&mut body, &axis, plot_top, axis_y, &cut_labels.0);
    let bottom = axis_y + AXIS_H + footer(&mut body, tl, record, items, axis_y + AXIS_H, lang, flavour);
    let height = (bottom + MARGIN).ceil().max(SLIDE_HEIGHT);
    let body = body.replace("url(#hatch)", &format!("url(#{})", flavour.pattern_id()));
    document(height, first_title(title_lines), &body, flavour.pattern_id())
}

/// A run still going on: its lanes and axis, no final state yet.
pub fn live_page(title_lines: &[(String, f64, bool)], tl: &Timeline, drawn: Option<&Drawn>, lang: Lang) -> String {
    let axis = match drawn {
        Some(d) => Axis::cut(d, tl.start, tl.end),
        None => Axis::whole(tl.start, tl.end),
    };
    let mut body = String::new();
    let mut plot_top = title_block(&mut body, title_lines) + 24.0;
    let cut_labels = cut_labels(&axis, lang);
    plot_top += cut_labels.1;
    let room = SLIDE_HEIGHT - plot_top - AXIS_H - MARGIN;
    let layouts = lay_out_lanes(tl, &axis, plot_top, room);
    let axis_y = layouts.last().map_or(plot_top, |l| l.bottom) + 4.0;
    grid(&mut body, &axis, plot_top, axis_y, lang);
    for (i, (lane, lay)) in tl.lanes.iter().zip(&layouts).enumerate() {
        draw_lane(&mut body, lane, lay, &axis, i % 2 == 1, &Flavour::FILE);
    }
    draw_cuts(&mut body, &axis, plot_top, axis_y, &cut_labels.0);
    let height = (axis_y + AXIS_H + MARGIN).ceil().max(SLIDE_HEIGHT);
    let body = body.replace("url(#hatch)", "url(#hatch-live)");
    document(height, first_title(title_lines), &body, "hatch-live")
}

/// The axis's ticks and caption under the lanes, to the footer's top.
const AXIS_H: f64 = 66.0;

/// The final state and verdict (with its reason) on the right, shown at the last step, and the
/// key to the marks on the left or under them, from `y`; returns the height it takes.
#[allow(clippy::too_many_arguments)]
fn footer(
    out: &mut String,
    tl: &Timeline,
    record: &RunRecord,
    items: &[FinalItem],
    y: f64,
    lang: Lang,
    flavour: &Flavour,
) -> f64 {
    let footer_y = y + 4.0;
    if flavour.steps {
        let _ = writeln!(out, "<g{}>", flavour.step_attr(tl.steps, false));
    }
    let (final_left, badge_bottom) = super::footer::final_state(out, record, items, footer_y, lang);
    let why_bottom = super::footer::why(out, record, badge_bottom + 4.0, lang);
    if flavour.steps {
        let _ = writeln!(out, "</g>");
    }
    let legend_bottom = if final_left - MARGIN >= 420.0 && why_bottom <= badge_bottom {
        super::footer::legend(out, tl, footer_y, final_left - 28.0, lang)
    } else {
        super::footer::legend(out, tl, why_bottom + 24.0, WIDTH - MARGIN, lang)
    };
    legend_bottom.max(why_bottom) - y
}

/// Vertical grid lines at round ticks, the axis and its caption.
fn grid(out: &mut String, axis: &Axis, plot_top: f64, axis_y: f64, lang: Lang) {
    let _ = writeln!(out, r#"<g class="axis" font-size="14" fill="{MUTED}">"#);
    let mut last_right = f64::NEG_INFINITY;
    for (tick, tx) in axis.ticks() {
        let stroke = if tick.abs() < 1e-9 { "#bdbdbd" } else { GRID };
        let _ = writeln!(
            out,
            r#"<line x1="{tx:.1}" y1="{plot_top:.1}" x2="{tx:.1}" y2="{axis_y:.1}" stroke="{stroke}" stroke-width="1"/>"#
        );
        let label = fmt_ms(tick);
        let half = text_width(&label, 14.0) / 2.0;
        // Ticks of two stretches can meet at a cut: a label that would touch the one before
        // it is left out (its grid line stays).
        if tx - half > last_right + 6.0 {
            let _ = writeln!(out, r#"<text x="{tx:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#, axis_y + 20.0);
            last_right = tx + half;
        }
    }
    let _ = writeln!(
        out,
        r#"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="{MUTED}" stroke-width="1"/>"#
    );
    let caption = axis.caption(lang);
    let _ =
        writeln!(out, r#"<text x="{PLOT_RIGHT}" y="{:.1}" text-anchor="end">{}</text>"#, axis_y + 40.0, esc(caption));
    let _ = writeln!(out, "</g>");
}

/// Each cut's words above the plot, centred on its gap where they fit, in as many rows as
/// they need not to overlap: the labels (x, row, text) and the height they take.
fn cut_labels(axis: &Axis, lang: Lang) -> (Vec<(f64, usize, String)>, f64) {
    // Many cuts get their counts only; a label that finds no room in two rows is left out
    // (its gap still shows, and the axis caption says what a gap is).
    let short = axis.cuts.len() > 4;
    let mut rows: Vec<f64> = Vec::new();
    let mut out = Vec::new();
    for c in &axis.cuts {
        let text = if short { format!("≈ {}", c.short_words(lang)) } else { format!("≈ {}", c.words(lang)) };
        let w = text_width(&text, 13.0);
        let x = ((c.x0 + c.x1) / 2.0).clamp(MARGIN + w / 2.0, WIDTH - MARGIN - w / 2.0);
        let row = rows.iter().position(|right| x - w / 2.0 > right + 8.0).unwrap_or(rows.len());
        if row >= 2 {
            continue;
        }
        if row == rows.len() {
            rows.push(f64::NEG_INFINITY);
        }
        rows[row] = x + w / 2.0;
        out.push((x, row, text));
    }
    (out, rows.len() as f64 * 18.0)
}

/// A cut's two edges from `top` to `bottom`: zigzag lines, the gap between them plain.
fn cut_edges(out: &mut String, c: &super::axis::Cut, top: f64, bottom: f64) {
    let _ = writeln!(
        out,
        r#"<rect class="cut" x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="white"/>"#,
        c.x0 + 4.0,
        c.x1 - c.x0 - 8.0,
        bottom - top
    );
    for edge in [c.x0 + 5.0, c.x1 - 5.0] {
        let mut points = String::new();
        let (mut y, mut k) = (top, 0);
        while y < bottom {
            let dx = if k % 2 == 0 { -2.5 } else { 2.5 };
            let _ = write!(points, "{:.1},{y:.1} ", edge + dx);
            y = (y + 7.0).min(bottom);
            k += 1;
            if y >= bottom {
                let _ = write!(points, "{:.1},{y:.1}", edge - dx);
            }
        }
        let _ = writeln!(
            out,
            r#"<polyline class="cut" points="{}" fill="none" stroke="{MUTED}" stroke-width="1"/>"#,
            points.trim_end()
        );
    }
}

/// Each cut's edges across the axis, and its words above the plot.
fn draw_cuts(out: &mut String, axis: &Axis, plot_top: f64, axis_y: f64, labels: &[(f64, usize, String)]) {
    if axis.cuts.is_empty() {
        return;
    }
    let rows = labels.iter().map(|l| l.1 + 1).max().unwrap_or(0) as f64;
    let _ = writeln!(out, r#"<g class="cuts" font-size="13" fill="{MUTED}">"#);
    for c in &axis.cuts {
        cut_edges(out, c, axis_y - 6.0, axis_y + 6.0);
    }
    for (x, row, text) in labels {
        let ty = plot_top - 6.0 - (rows - 1.0 - *row as f64) * 18.0;
        let _ = writeln!(out, r#"<text x="{x:.1}" y="{ty:.1}" text-anchor="middle">{}</text>"#, esc(text));
    }
    let _ = writeln!(out, "</g>");
}

/// One lane: its band, name, line from when it was ready, bars, then marks and labels.
fn draw_lane(out: &mut String, lane: &Lane, lay: &LaneLayout, axis: &Axis, shaded: bool, flavour: &Flavour) {
    let unlabelled =
        if lay.unlabelled > 0 { format!(r#" data-unlabelled="{}""#, lay.unlabelled) } else { String::new() };
    let _ = writeln!(out, r#"<g class="lane" data-actor="{}"{unlabelled}>"#, esc(&lane.actor.to_string()));
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
    for c in &axis.cuts {
        cut_edges(out, c, lay.top, lay.bottom);
    }
    let from = lane.ready.map_or(PLOT_LEFT, |r| axis.x(r));
    // The lane's line on each stretch of the axis, broken at the cuts.
    for st in axis.stretches.iter().filter(|st| st.x1 > from) {
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#9e9e9e" stroke-width="1.5"/>"##,
            st.x0.max(from),
            st.x1,
            y = lay.y
        );
    }
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
        let mut attr = flavour.step_attr(m.step, true);
        if m.key {
            attr.push_str(r#" data-key="1""#);
        }
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
