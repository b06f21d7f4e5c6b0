//! The load lab's charts, one bar or curve per strategy (run 1 of each variant): throughput,
//! orders left wrong, and the publish → ack latency distribution.

use crate::chart::{Axis, Chart, Mark, Scale, Series, Style};
use crate::labs::load::load::{measure, publish_and_ack, LoadSpec};
use crate::labs::{Judge, VariantRuns};
use crate::lang::Words;
use crate::words;

/// Points of a distribution curve: enough for a slide.
const CURVE_POINTS: usize = 100;

pub fn compare(variants: &[VariantRuns<'_, LoadSpec>]) -> Vec<Chart> {
    let firsts: Vec<(&VariantRuns<'_, LoadSpec>, &crate::labs::RunView<'_, _>)> =
        variants.iter().filter_map(|v| v.runs.iter().find(|r| r.run == 1).map(|r| (v, r))).collect();
    if firsts.len() < 2 {
        return Vec::new();
    }
    let categories = Scale::Categories(firsts.iter().map(|(v, _)| Words::same(v.id)).collect());
    let strategy = Axis { label: Words::new("variant", "biến thể"), unit: String::new(), scale: categories };
    let bars = |name: Words, values: Vec<f64>| Series {
        name,
        style: Style::Bars,
        points: values.into_iter().enumerate().map(|(i, y)| (i as f64, y)).collect(),
        err: None,
        unmeasured: Vec::new(),
    };
    let note = Some(Words::new("run 1 of each variant", "lần 1 của mỗi biến thể"));
    let throughput: Vec<f64> =
        firsts.iter().map(|(v, r)| measure(v.spec.shards, r.events).throughput_eps as f64).collect();
    let wrong: Vec<f64> = firsts
        .iter()
        .map(|(v, r)| v.spec.final_state(r.observed).iter().filter(|i| i.is_wrong()).count() as f64)
        .collect();
    let orders = firsts[0].0.spec.generate.orders;
    vec![
        Chart {
            id: "throughput".into(),
            title: Words::new("load: events acknowledged per second", "load: số sự kiện được ack mỗi giây"),
            x: strategy.clone(),
            y: Axis {
                label: Words::new("throughput", "thông lượng"), unit: "events/s".into(), scale: Scale::Linear
            },
            series: vec![bars(Words::new("throughput", "thông lượng"), throughput)],
            marks: Vec::new(),
            note: note.clone(),
        },
        Chart {
            id: "wrong-orders".into(),
            title: words!(
                "load: orders left in a wrong state, of {orders}",
                "load: số đơn sai trạng thái cuối, trên {orders}"
            ),
            x: strategy,
            y: Axis { label: Words::new("wrong orders", "đơn sai"), unit: String::new(), scale: Scale::Linear },
            series: vec![bars(Words::new("wrong orders", "đơn sai"), wrong)],
            marks: Vec::new(),
            note: note.clone(),
        },
        latency(&firsts, note),
    ]
}

/// Share of events acknowledged within x ms of their publish, one staircase per variant.
fn latency(
    firsts: &[(&VariantRuns<'_, LoadSpec>, &crate::labs::RunView<'_, <LoadSpec as Judge>::Observed>)],
    note: Option<Words>,
) -> Chart {
    let series = firsts
        .iter()
        .map(|(v, r)| {
            let mut ms: Vec<f64> = publish_and_ack(v.spec.shards, r.events)
                .latencies_us()
                .iter()
                .map(|us| (us / 1000.0).max(0.01))
                .collect();
            ms.sort_by(f64::total_cmp);
            Series { name: Words::same(v.id), style: Style::Step, points: ecdf(&ms), err: None, unmeasured: Vec::new() }
        })
        .collect();
    Chart {
        id: "latency".into(),
        title: Words::new(
            "load: publish → ack latency, share of events at or below",
            "load: độ trễ publish → ack, tỉ lệ sự kiện không vượt quá",
        ),
        x: Axis { label: Words::new("latency", "độ trễ"), unit: "ms".into(), scale: Scale::Log10 },
        y: Axis { label: Words::new("events", "sự kiện"), unit: "%".into(), scale: Scale::Linear },
        series,
        marks: vec![Mark { label: Words::same("p99"), axis: Default::default(), at: 99.0 }],
        note,
    }
}

/// The empirical distribution of sorted values as at most [`CURVE_POINTS`] (value, % ≤ value)
/// points, always with the smallest and the largest.
fn ecdf(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(CURVE_POINTS).max(1);
    let mut idx: Vec<usize> = (0..n).step_by(step).collect();
    if idx.last() != Some(&(n - 1)) {
        idx.push(n - 1);
    }
    idx.into_iter().map(|i| (sorted[i], (i + 1) as f64 * 100.0 / n as f64)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ecdf_is_thinned_and_ends_at_100_percent() {
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        let points = crate::labs::load::load::charts::ecdf(&values);
        assert!(points.len() <= crate::labs::load::load::charts::CURVE_POINTS + 1);
        assert_eq!(points.first(), Some(&(1.0, 0.1)));
        assert_eq!(points.last(), Some(&(1000.0, 100.0)));
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(crate::labs::load::load::charts::ecdf(&[3.0]), vec![(3.0, 100.0)]);
    }
}
