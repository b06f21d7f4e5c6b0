//! The scaling curves side by side: jobs per second against worker processes for each variant
//! (median of the runs, whiskers min–max, both axes logarithmic so a straight 45° line is
//! perfect scaling), and beside it the CPU of the Redis server's one thread and of the whole
//! machine at each point — the two things that can stop the curve.

use crate::chart::{Axis, Chart, Mark, MarkAxis, Scale, Series, Style};
use crate::labs::list_queue::queue_scale::{summarize, PointSummary, QueueScaleObserved, QueueScaleSpec};
use crate::labs::list_queue::scale_worker::QueueKind;
use crate::labs::VariantRuns;
use crate::lang::Words;

/// The lab's charts (none without a run).
pub fn compare(variants: &[VariantRuns<'_, QueueScaleSpec>]) -> Vec<Chart> {
    let curves: Vec<(Words, Vec<PointSummary>)> = variants
        .iter()
        .map(|v| {
            let observed: Vec<&QueueScaleObserved> = v.runs.iter().map(|r| r.observed).collect();
            (legend_name(v.spec), summarize(&observed))
        })
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if curves.is_empty() {
        return Vec::new();
    }
    let workers =
        Axis {
            label: crate::words!("worker processes", "số process worker"), unit: String::new(), scale: Scale::Log2
        };
    let series = |value: fn(&PointSummary) -> f64, whiskers: bool| -> Vec<Series> {
        curves
            .iter()
            .map(|(name, points)| Series {
                name: name.clone(),
                style: Style::Line,
                points: points.iter().map(|p| (p.workers as f64, value(p))).collect(),
                err: whiskers.then(|| points.iter().map(|p| (p.min_jobs_per_s, p.max_jobs_per_s)).collect()),
                unmeasured: Vec::new(),
            })
            .collect()
    };
    let throughput = Chart {
        id: "throughput".into(),
        title: crate::words!("Jobs/s by worker processes", "Job/s theo số process worker"),
        x: workers.clone(),
        y: Axis { label: crate::words!("jobs per second", "job mỗi giây"), unit: "jobs/s".into(), scale: Scale::Log10 },
        series: series(|p| p.jobs_per_s.max(1.0), true),
        marks: Vec::new(),
        note: Some(crate::words!(
            "jobs finished per second over the measured window, from the server; median of the runs, whiskers min–max. Both axes are logarithmic: a line parallel to the diagonal is perfect scaling, a flat one is a limit",
            "số job xong mỗi giây trong cửa sổ đo, đọc từ server; trung vị các lần chạy, râu min–max. Hai trục đều logarit: đường song song đường chéo là mở rộng hoàn hảo, đường nằm ngang là chạm giới hạn"
        )),
    };
    let full = |label: Words| vec![Mark { label, axis: MarkAxis::Y, at: 100.0 }];
    let redis = Chart {
        id: "redis-cpu".into(),
        title: crate::words!("Redis's one thread beside it", "Luồng duy nhất của Redis bên cạnh"),
        x: workers.clone(),
        y: Axis { label: crate::words!("Redis main thread busy", "luồng chính Redis bận"), unit: "%".into(), scale: Scale::Linear },
        series: series(|p| p.redis_pct, false),
        marks: full(crate::words!("one core: the thread is full", "một core: luồng đã đầy")),
        note: Some(crate::words!(
            "the server's main-thread CPU over the window (INFO cpu), in % of one core: at 100 % more workers cannot make Redis answer faster",
            "CPU luồng chính của server trong cửa sổ đo (INFO cpu), theo % một core: tới 100 % thì thêm worker cũng không làm Redis trả lời nhanh hơn"
        )),
    };
    let machine = Chart {
        id: "machine-cpu".into(),
        title: crate::words!("The machine's cores beside it", "Các core của máy bên cạnh"),
        x: workers,
        y: Axis { label: crate::words!("all cores busy", "mọi core bận"), unit: "%".into(), scale: Scale::Linear },
        series: series(|p| p.machine_pct, false),
        marks: full(crate::words!("every core busy", "mọi core đều bận")),
        note: Some(crate::words!(
            "the machine's busy share of all its cores over the window (/proc/stat): Redis, the workers and the harness share them when the server runs here",
            "phần bận của mọi core trong cửa sổ đo (/proc/stat): Redis, các worker và harness dùng chung khi server chạy trên máy này"
        )),
    };
    vec![throughput, redis, machine]
}

/// A variant in a legend, short enough that the legend leaves the curves visible:
/// `list, parse only`, `stream COUNT 10, 5 ms`.
fn legend_name(spec: &QueueScaleSpec) -> Words {
    let queue = match (spec.queue, spec.read_count) {
        (QueueKind::List, _) => "list".to_string(),
        (QueueKind::Stream, 1) => "stream".to_string(),
        (QueueKind::Stream, k) => format!("stream COUNT {k}"),
    };
    match spec.cost_ms {
        ms if ms > 0.0 => Words::new(format!("{queue}, {ms} ms"), format!("{queue}, {ms} ms")),
        _ => Words::new(format!("{queue}, parse only"), format!("{queue}, chỉ parse")),
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::list_queue::queue_scale::charts::*;
    use crate::labs::list_queue::queue_scale::tests::point;
    use crate::labs::RunView;

    #[test]
    fn one_curve_per_variant_on_log_axes_with_the_cpu_beside_it() {
        let spec: QueueScaleSpec = toml::from_str("queue = \"list\"\nworkers = [1, 2]\n").unwrap();
        let a = QueueScaleObserved { cores: 2, points: vec![point(1, 100, 10, 20.0), point(2, 180, 20, 40.0)] };
        let b = QueueScaleObserved { cores: 2, points: vec![point(1, 120, 12, 30.0), point(2, 220, 24, 50.0)] };
        let view = |o| RunView { run: 1, events: &[], timed_out: false, observed: o };
        let title = crate::words!("list", "list");
        let variants = [VariantRuns { id: "list-zero", title: &title, spec: &spec, runs: vec![view(&a), view(&b)] }];
        let charts = compare(&variants);
        assert_eq!(
            charts.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["throughput", "redis-cpu", "machine-cpu"]
        );
        charts.iter().for_each(|c| c.validate().unwrap());
        // The median of two runs is the lower one (`stats::quantile`); whiskers span both.
        assert_eq!(charts[0].series[0].points, [(1.0, 100.0), (2.0, 180.0)]);
        assert_eq!(charts[0].series[0].err, Some(vec![(100.0, 120.0), (180.0, 220.0)]));
        assert_eq!(charts[1].series[0].points, [(1.0, 10.0), (2.0, 20.0)]);
        assert_eq!(charts[2].series[0].points, [(1.0, 20.0), (2.0, 40.0)]);
        assert!(compare(&variants[..0]).is_empty());
        assert_eq!(charts[0].series[0].name.en, "list, parse only");
        let batched: QueueScaleSpec =
            toml::from_str("queue = \"stream\"\nworkers = [1]\nread_count = 10\ncost_ms = 5\n").unwrap();
        assert_eq!(legend_name(&batched).vi, "stream COUNT 10, 5 ms");
    }
}
