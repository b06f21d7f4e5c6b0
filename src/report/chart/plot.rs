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
            let (plot, below) = top.split_vertically(HEIGHT as i32 - 50 - 34);
            below.draw(&Text::new(note.get(lang).to_string(), (16, 14), font(17.0).color(&MUTED))).expect("note");
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
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(0xcc, 0xcc, 0xcc))
            .label_font(font(18.0).color(&INK))
            .draw()
            .expect("legend");
    }
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
