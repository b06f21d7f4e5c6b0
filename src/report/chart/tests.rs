use super::*;
use crate::chart::{Mark, MarkAxis, Series, Style};
use crate::lang::Words;

fn w(en: &str, vi: &str) -> Words {
    Words::new(en, vi)
}

/// The text of every `<text>` element (plotters puts it on its own line).
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| t.split_once('>').unwrap().1.split("</text>").next().unwrap().trim().to_string())
        .collect()
}

fn bars() -> Chart {
    Chart {
        id: "throughput".into(),
        title: w("load: throughput per strategy", "load: thông lượng theo chiến lược"),
        x: Axis {
            label: w("strategy", "chiến lược"),
            unit: String::new(),
            scale: Scale::Categories(vec![w("plain", "plain"), w("lock", "lock")]),
        },
        y: Axis {
            label: w("events per second", "sự kiện mỗi giây"), unit: "events/s".into(), scale: Scale::Linear
        },
        series: vec![
            Series {
                name: w("measured", "đo được"),
                style: Style::Bars,
                points: vec![(0.0, 704.0), (1.0, 341.5)],
                err: Some(vec![(650.0, 720.0), (300.0, 360.0)]),
                unmeasured: Vec::new(),
            },
            Series {
                name: w("seed", "bài gốc"),
                style: Style::HollowPoints,
                points: vec![(0.0, 500.0)],
                err: None,
                unmeasured: Vec::new(),
            },
        ],
        marks: vec![Mark { label: w("2 cores", "2 lõi"), axis: MarkAxis::Y, at: 600.0 }],
        note: Some(w("run 1 of each variant", "lần 1 của mỗi biến thể")),
    }
}

fn ecdf() -> Chart {
    let points: Vec<(f64, f64)> = (1..=40).map(|i| (i as f64 * 3.0, i as f64 * 2.5)).collect();
    Chart {
        id: "latency".into(),
        title: w("latency", "độ trễ"),
        x: Axis { label: w("latency", "độ trễ"), unit: "ms".into(), scale: Scale::Log10 },
        y: Axis { label: w("events", "sự kiện"), unit: "%".into(), scale: Scale::Linear },
        series: vec![Series {
            name: w("plain", "plain"),
            style: Style::Step,
            points,
            err: None,
            unmeasured: Vec::new(),
        }],
        marks: vec![Mark { label: w("p99", "p99"), axis: MarkAxis::Y, at: 99.0 }],
        note: None,
    }
}

#[test]
fn svg_has_the_title_categories_legend_and_mark_in_the_language() {
    let en = svg(&bars(), Lang::En);
    assert!(en.starts_with("<svg") && en.contains(r#"width="1280""#) && en.contains(r#"height="720""#));
    let words = texts(&en);
    for needle in [
        "load: throughput per strategy",
        "plain",
        "lock",
        "measured",
        "seed",
        "2 cores",
        "events per second (events/s)",
        "run 1 of each variant",
    ] {
        assert!(words.iter().any(|t| t.trim() == needle), "{needle} missing in {words:?}");
    }
    let vi = texts(&svg(&bars(), Lang::Vi));
    for needle in ["load: thông lượng theo chiến lược", "đo được", "bài gốc", "2 lõi", "sự kiện mỗi giây (events/s)"]
    {
        assert!(vi.iter().any(|t| t.trim() == needle), "{needle} missing in {vi:?}");
    }
    assert!(!vi.iter().any(|t| t.contains("measured")));
}

#[test]
fn grouped_bars_and_whiskers_are_drawn() {
    let s = svg(&bars(), Lang::En);
    // Two bars of the palette's first colour, and whisker lines in ink.
    assert_eq!(s.matches(r##"fill="#4C78A8""##).count(), 2 + 1, "two bars and the legend swatch:\n{s}");
    assert!(s.matches(r##"stroke="#222222""##).count() >= 6, "a whisker is three lines per bar");
}

#[test]
fn log_axis_ticks_are_powers_of_ten() {
    let words = texts(&svg(&ecdf(), Lang::En));
    for tick in ["10", "100"] {
        assert!(words.iter().any(|t| t == tick), "tick {tick} in {words:?}");
    }
    assert_eq!(axes::log_ticks(2.5, 150.0, 10.0), vec![5.0, 10.0, 20.0, 50.0, 100.0]);
    assert_eq!(axes::log_ticks(1.0, 64.0, 2.0), vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    assert_eq!(axes::linear_ticks(0.0, 760.0), vec![0.0, 200.0, 400.0, 600.0]);
}

#[test]
fn vietnamese_ticks_use_a_decimal_comma() {
    assert_eq!(format_tick(2.5, &Scale::Linear, Lang::Vi), "2,5");
    assert_eq!(format_tick(2.5, &Scale::Linear, Lang::En), "2.5");
    assert_eq!(format_tick(12000.0, &Scale::Linear, Lang::En), "12k");
}

#[test]
fn table_prints_every_series_per_x_and_caps_long_ones() {
    let t = table(&bars(), Lang::En);
    assert!(t.contains("strategy | measured | seed"), "{t}");
    assert!(t.contains("plain | 704 [650–720] | 500"), "{t}");
    assert!(t.contains("lock | 342 [300–360] | –") || t.contains("lock | 341.50 [300–360] | –"), "{t}");
    let long = table(&ecdf(), Lang::Vi);
    assert_eq!(long.lines().filter(|l| l.contains(" | ")).count(), 1 + TABLE_ROWS, "{long}");
    assert!(long.contains("… 28 dòng nữa"), "{long}");
}
