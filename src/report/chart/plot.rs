//! Drawing a chart with plotters: mesh, series (lines, steps, points, grouped bars, whiskers),
//! reference marks and the legend.

use super::{axis_title, format_tick, FONT, HEIGHT, INK, MUTED, PALETTE};
use crate::chart::{Chart, MarkAxis, Scale, Style};
use crate::lang::Lang;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::IntoDynElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(super) fn plot<X, Y>(root: &DrawingArea<SVGBackend, Shift>, chart: &Chart, lang: Lang, x: X, y: Y)
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let font = |size: f64| (FONT, size).into_font();
    let top = root.titled(chart.title.get(lang), font(30.0).color(&INK)).expect("title");
    let area = match &chart.note {
        Some(note) => {
            let lines = wrap(note.get(lang), NOTE_CHARS);
            let (plot, below) = top.split_vertically(HEIGHT as i32 - 50 - 12 - NOTE_LINE * lines.len() as i32);
            for (i, line) in lines.into_iter().enumerate() {
                let at = (16, 14 + NOTE_LINE * i as i32);
                below.draw(&Text::new(line, at, font(17.0).color(&MUTED))).expect("note");
            }
            plot
        }
        None => top,
    };
    let mut ctx = ChartBuilder::on(&area)
        .margin(16)
        .margin_right(48)
        .x_label_area_size(70)
        .y_label_area_size(100)
        .build_cartesian_2d(x, y)
        .expect("chart area");
    let (xs, ys) = (chart.x.scale.clone(), chart.y.scale.clone());
    let xf = move |v: &f64| format_tick(*v, &xs, lang);
    let yf = move |v: &f64| format_tick(*v, &ys, lang);
    ctx.configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xe6, 0xe6, 0xe6))
        .axis_style(MUTED)
        .x_desc(axis_title(&chart.x, lang))
        .y_desc(axis_title(&chart.y, lang))
        .axis_desc_style(font(20.0).color(&INK))
        .label_style(font(18.0).color(&INK))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .draw()
        .expect("mesh");
    let geometry = BarGeometry::new(chart);
    let y_floor = match chart.y.scale {
        Scale::Log2 | Scale::Log10 => ctx.y_range().start,
        _ => 0f64.max(ctx.y_range().start),
    };
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(3))).map(|_| ())
            }
            Style::Step => ctx.draw_series(LineSeries::new(stairs(&s.points), color.stroke_width(3))).map(|_| ()),
            Style::Points | Style::HollowPoints => {
                ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 7, point_style(color, s.style)))).map(|_| ())
            }
            Style::Bars => ctx
                .draw_series(s.points.iter().map(|&(px, py)| {
                    let (x0, x1) = geometry.span(i, px);
                    Rectangle::new([(x0, y_floor), (x1, py)], color.filled())
                }))
                .map(|_| ()),
        }
        .expect("series");
        if let Some(err) = &s.err {
            let centres: Vec<f64> = s.points.iter().map(|p| geometry.centre(i, p.0)).collect();
            draw_whiskers(&mut ctx, &centres, err, geometry.cap_half_width());
        }
        draw_unmeasured(&mut ctx, s, |x| geometry.centre(i, x), color, lang);
        let style = s.style;
        ctx.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .expect("legend")
            .label(s.name.get(lang).to_string())
            .legend(move |(x, y)| match style {
                Style::Bars => Rectangle::new([(x, y - 8), (x + 20, y + 8)], color.filled()).into_dyn(),
                Style::Points | Style::HollowPoints => {
                    Circle::new((x + 10, y), 7, point_style(color, style)).into_dyn()
                }
                Style::Line | Style::Step => {
                    PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)).into_dyn()
                }
            });
    }
    draw_marks(&mut ctx, chart, lang);
    if chart.series.len() > 1 {
        let corner = legend_corner(chart, lang, |p| ctx.backend_coord(&p), ctx.plotting_area().get_pixel_range());
        ctx.configure_series_labels()
            .position(corner)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(0xcc, 0xcc, 0xcc))
            .label_font(font(18.0).color(&INK))
            .draw()
            .expect("legend");
    }
}

/// Characters per line of a chart's note at its size (17 px on 1600 px), and the line height.
const NOTE_CHARS: usize = 150;
const NOTE_LINE: i32 = 22;

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The corner of the plot where the legend hides the fewest drawn points: each series' points
/// and points along its lines, in pixels (`to_pixel`), against a box the legend's size
/// estimated from its labels. Upper right when no corner is better.
fn legend_corner(
    chart: &Chart,
    lang: Lang,
    to_pixel: impl Fn((f64, f64)) -> (i32, i32),
    (xs, ys): (std::ops::Range<i32>, std::ops::Range<i32>),
) -> SeriesLabelPosition {
    let widest = chart.series.iter().map(|s| s.name.get(lang).chars().count()).max().unwrap_or(0) as i32;
    let (w, h) = (widest * 10 + 60, chart.series.len() as i32 * 26 + 16);
    let mut pixels: Vec<(i32, i32)> = Vec::new();
    for s in &chart.series {
        let pts: Vec<(i32, i32)> = s.points.iter().map(|&p| to_pixel(p)).collect();
        pixels.extend(&pts);
        for pair in pts.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            pixels.extend((1..20).map(|k| (x0 + (x1 - x0) * k / 20, y0 + (y1 - y0) * k / 20)));
        }
    }
    let corners = [
        (SeriesLabelPosition::UpperRight, xs.end - w, ys.start),
        (SeriesLabelPosition::UpperLeft, xs.start, ys.start),
        (SeriesLabelPosition::LowerRight, xs.end - w, ys.end - h),
        (SeriesLabelPosition::LowerLeft, xs.start, ys.end - h),
    ];
    let hidden = |&(_, x, y): &(SeriesLabelPosition, i32, i32)| {
        pixels.iter().filter(|&&(px, py)| px >= x && px <= x + w && py >= y && py <= y + h).count()
    };
    // `min_by_key` keeps the first of equals: upper right on a tie.
    corners.iter().min_by_key(|c| hidden(c)).map_or(SeriesLabelPosition::UpperRight, |c| c.0.clone())
}

type Ctx<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// Min–max (or interval) whiskers with caps at the given x positions.
fn draw_whiskers<X, Y>(ctx: &mut Ctx<'_, '_, X, Y>, centres: &[f64], err: &[(f64, f64)], cap: f64)
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (&cx, &(lo, hi)) in centres.iter().zip(err) {
        let lines =
            [vec![(cx, lo), (cx, hi)], vec![(cx - cap, lo), (cx + cap, lo)], vec![(cx - cap, hi), (cx + cap, hi)]];
        ctx.draw_series(lines.into_iter().map(|l| PathElement::new(l, INK.stroke_width(2)))).expect("whiskers");
    }
}

/// Runs with no value at all (a job never served): a cross in the series' colour at the top
/// of the plot, above where its bar or point would stand, and the reason under it; nothing
/// that reads as a value on the axis.
fn draw_unmeasured<X, Y>(
    ctx: &mut Ctx<'_, '_, X, Y>,
    s: &crate::chart::Series,
    centre: impl Fn(f64) -> f64,
    color: RGBColor,
    lang: Lang,
) where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for u in &s.unmeasured {
        let (cx, top) = (centre(u.x), ctx.y_range().end);
        let area = ctx.plotting_area().strip_coord_spec();
        // The area draws in its own pixels, from its top-left corner.
        let (bx, by) = area.get_base_pixel();
        let (px, py) = ctx.backend_coord(&(cx, top));
        let (px, py) = (px - bx, py - by + 24);
        let arm = 11;
        for (a, b) in [((px - arm, py - arm), (px + arm, py + arm)), ((px - arm, py + arm), (px + arm, py - arm))] {
            area.draw(&PathElement::new(vec![a, b], color.stroke_width(5))).expect("unmeasured mark");
        }
        let style = (FONT, 17.0).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(u.label.get(lang).to_string(), (px, py + arm + 8), style)).expect("unmeasured label");
    }
}

/// Dashed reference lines across the plot, each labelled at its start.
fn draw_marks<X, Y>(ctx: &mut Ctx<'_, '_, X, Y>, chart: &Chart, lang: Lang)
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for m in &chart.marks {
        let (xr, yr) = (ctx.x_range(), ctx.y_range());
        let (line, at, anchor) = match m.axis {
            MarkAxis::Y => {
                (vec![(xr.start, m.at), (xr.end, m.at)], (xr.start, m.at), Pos::new(HPos::Left, VPos::Bottom))
            }
            MarkAxis::X => (vec![(m.at, yr.start), (m.at, yr.end)], (m.at, yr.end), Pos::new(HPos::Left, VPos::Top)),
        };
        ctx.draw_series(DashedLineSeries::new(line, 10, 6, MUTED.stroke_width(2))).expect("mark");
        let style = (FONT, 18.0).into_font().color(&MUTED).pos(anchor);
        ctx.draw_series(std::iter::once(Text::new(format!(" {}", m.label.get(lang)), at, style))).expect("mark label");
    }
}

/// Where the bars of each series stand on a category axis: side by side within a group at
/// most 0.8 of a category wide and at most ~120 px per bar.
struct BarGeometry {
    /// Position among the bar series, per series.
    slot: Vec<Option<usize>>,
    bars: usize,
    group: f64,
}

impl BarGeometry {
    fn new(chart: &Chart) -> BarGeometry {
        let mut n = 0;
        let mut slot = Vec::new();
        for s in &chart.series {
            slot.push((s.style == Style::Bars).then_some(n));
            n += usize::from(s.style == Style::Bars);
        }
        let categories = match &chart.x.scale {
            Scale::Categories(c) => c.len().max(1),
            _ => 1,
        };
        let group = (n.max(1) as f64 * categories as f64 * 0.11).min(0.8);
        BarGeometry { slot, bars: n, group }
    }

    fn width(&self) -> f64 {
        self.group / self.bars.max(1) as f64
    }

    /// Left and right edge of series `i`'s bar at category `x`, with a small gap.
    fn span(&self, i: usize, x: f64) -> (f64, f64) {
        let k = self.slot[i].unwrap_or(0) as f64;
        let x0 = x - self.group / 2.0 + k * self.width();
        (x0 + self.width() * 0.06, x0 + self.width() * 0.94)
    }

    /// The bar's centre for a bar series; the point itself otherwise.
    fn centre(&self, i: usize, x: f64) -> f64 {
        match self.slot[i] {
            Some(_) => {
                let (a, b) = self.span(i, x);
                (a + b) / 2.0
            }
            None => x,
        }
    }

    fn cap_half_width(&self) -> f64 {
        (self.width() * 0.2).min(0.05)
    }
}

fn stairs(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for w in points.windows(2) {
        out.push(w[0]);
        out.push((w[1].0, w[0].1));
    }
    out.extend(points.last().copied());
    out
}

fn point_style(color: RGBColor, style: Style) -> ShapeStyle {
    ShapeStyle { color: color.to_rgba(), filled: style == Style::Points, stroke_width: 3 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{Axis, Series};

    #[test]
    fn notes_wrap_between_words() {
        assert_eq!(wrap("one two three four", 9), ["one two", "three", "four"]);
        assert_eq!(wrap("a  b", 10), ["a b"]);
        assert!(wrap("", 10).is_empty());
        assert_eq!(wrap("averyveryverylongword x", 5), ["averyveryverylongword", "x"]);
    }

    #[test]
    fn the_legend_goes_where_it_hides_the_fewest_points() {
        let axis = || Axis { label: crate::words!("x", "x"), unit: String::new(), scale: Scale::Linear };
        let line = |points: Vec<(f64, f64)>| Series {
            name: crate::words!("a series", "một chuỗi"),
            style: Style::Line,
            points,
            err: None,
            unmeasured: Vec::new(),
        };
        let chart = |series| Chart {
            id: "c".into(),
            title: crate::words!("t", "t"),
            x: axis(),
            y: axis(),
            series,
            marks: Vec::new(),
            note: None,
        };
        // Data 0..100 on a 1000 × 1000 pixel plot, y growing upwards.
        let to_pixel = |(x, y): (f64, f64)| ((x * 10.0) as i32, 1000 - (y * 10.0) as i32);
        let area = (0..1000, 0..1000);
        // Two lines high on the right: the legend goes to the upper left.
        let high_right = chart(vec![line(vec![(0.0, 0.0), (100.0, 100.0)]), line(vec![(50.0, 95.0), (100.0, 95.0)])]);
        assert_eq!(legend_corner(&high_right, Lang::En, to_pixel, area.clone()), SeriesLabelPosition::UpperLeft);
        // Both high everywhere, low right empty.
        let high = chart(vec![line(vec![(0.0, 95.0), (100.0, 95.0)]), line(vec![(0.0, 5.0), (40.0, 5.0)])]);
        assert_eq!(legend_corner(&high, Lang::En, to_pixel, area.clone()), SeriesLabelPosition::LowerRight);
        // Nothing in the way: upper right, as before.
        let low = chart(vec![line(vec![(0.0, 5.0), (100.0, 5.0)]), line(vec![(0.0, 10.0), (100.0, 10.0)])]);
        assert_eq!(legend_corner(&low, Lang::En, to_pixel, area), SeriesLabelPosition::UpperRight);
    }
}
