//! The cluster lab's charts, from its throughput runs: jobs per second against worker
//! processes for each key layout (median over runs, min–max whiskers), the ceiling the busiest
//! master's CPU allows for each, and each master's share of the queue commands per variant.

use crate::chart::{Axis, Chart, Mark, MarkAxis, Scale, Series, Style};
use crate::labs::cluster::cluster::{measure, ClusterSpec, KeyLayout, Measures};
use crate::labs::VariantRuns;
use crate::lang::Words;
use crate::stats::quantile;
use std::collections::BTreeMap;

/// The lab's charts (none without a throughput run).
pub fn compare(variants: &[VariantRuns<'_, ClusterSpec>]) -> Vec<Chart> {
    let runs: Vec<&VariantRuns<'_, ClusterSpec>> = variants.iter().filter(|v| v.spec.is_throughput_run()).collect();
    if runs.is_empty() {
        return Vec::new();
    }
    let measured = crate::words!(
        "jobs per second from the first push to the last job; median of the runs, whiskers min–max. On one machine the cores run the masters, the workers and the harness: the ceiling chart shows what the masters alone allow",
        "số job mỗi giây từ lần đẩy đầu tới job cuối; trung vị các lần chạy, râu min–max. Trên một máy, các core chạy cả master, worker và harness: biểu đồ trần cho biết riêng các master cho phép bao nhiêu"
    );
    let ceiling = crate::words!(
        "jobs per second at which the busiest master's main thread would be 100 % busy, at the CPU per job the run measured (INFO cpu)",
        "số job mỗi giây mà luồng chính của master bận nhất sẽ bận 100 %, theo CPU mỗi job đo được (INFO cpu)"
    );
    vec![
        curve(
            &runs,
            "throughput",
            crate::words!("Jobs/s by worker processes", "Job/s theo số worker"),
            measured,
            |m| m.jobs_per_s,
        ),
        curve(
            &runs,
            "ceiling",
            crate::words!("Ceiling: one master's thread full", "Trần: một luồng master đầy"),
            ceiling,
            |m| m.ceiling_jobs_per_s,
        ),
        shares(&runs),
    ]
}

/// The layout's name in a legend.
fn layout_name(keys: KeyLayout) -> Words {
    match keys {
        KeyLayout::Seed => crate::words!("the seed's keys", "key của seed"),
        KeyLayout::OneKey => crate::words!("one key {{queue:default}}", "một key {{queue:default}}"),
        KeyLayout::NaiveTags => crate::words!("tags {{shard-0}}…", "tag {{shard-0}}…"),
        KeyLayout::BalancedTags => crate::words!("a tag per master", "mỗi master một tag"),
    }
}

/// One line per key layout: `value` of every point, grouped by worker processes.
fn curve(
    runs: &[&VariantRuns<'_, ClusterSpec>],
    id: &str,
    title: Words,
    note: Words,
    value: fn(&Measures) -> i64,
) -> Chart {
    let mut by_layout: BTreeMap<u8, (KeyLayout, BTreeMap<u32, Vec<f64>>)> = BTreeMap::new();
    for v in runs {
        let keys = v.spec.keys;
        let entry = by_layout.entry(keys as u8).or_insert_with(|| (keys, BTreeMap::new()));
        for p in v.runs.iter().flat_map(|r| &r.observed.points) {
            let m = measure(p);
            entry.1.entry(m.workers).or_default().push(value(&m) as f64);
        }
    }
    let series = by_layout
        .into_values()
        .map(|(keys, points)| {
            let median = |vs: &[f64]| quantile(vs, 0.5).unwrap_or(0.0);
            let spread =
                |vs: &[f64]| (vs.iter().copied().fold(f64::MAX, f64::min), vs.iter().copied().fold(0.0, f64::max));
            Series {
                name: layout_name(keys),
                style: Style::Line,
                points: points.iter().map(|(w, vs)| (*w as f64, median(vs))).collect(),
                err: Some(points.values().map(|vs| spread(vs)).collect()),
                unmeasured: Vec::new(),
            }
        })
        .collect();
    Chart {
        id: id.to_string(),
        title,
        x: Axis { label: crate::words!("worker processes", "số worker"), unit: String::new(), scale: Scale::Linear },
        y: Axis {
            label: crate::words!("jobs per second", "job mỗi giây"),
            unit: "jobs/s".into(),
            scale: Scale::Linear,
        },
        series,
        marks: Vec::new(),
        note: Some(note),
    }
}

/// Each master's share of the queue commands, one group of bars per master, one bar per
/// variant (its first run and worker count), against the fair share.
fn shares(runs: &[&VariantRuns<'_, ClusterSpec>]) -> Chart {
    let firsts: Vec<(&VariantRuns<'_, ClusterSpec>, &crate::labs::cluster::cluster::PointObserved)> =
        runs.iter().filter_map(|v| Some((*v, v.runs.first()?.observed.points.first()?))).collect();
    let masters: Vec<String> =
        firsts.first().map(|(_, p)| p.masters.iter().map(|m| m.name.clone()).collect()).unwrap_or_default();
    let series = firsts
        .iter()
        .map(|(v, p)| Series {
            name: v.title.clone(),
            style: Style::Bars,
            points: measure(p).shares.iter().enumerate().take(masters.len()).map(|(i, s)| (i as f64, *s)).collect(),
            err: None,
            unmeasured: Vec::new(),
        })
        .collect();
    let fair = if masters.is_empty() { 0.0 } else { 100.0 / masters.len() as f64 };
    Chart {
        id: "shares".into(),
        title: crate::words!("Which master serves the queue", "Master nào phục vụ hàng đợi"),
        x: Axis {
            label: crate::words!("master", "master"),
            unit: String::new(),
            scale: Scale::Categories(masters.iter().map(|m| Words::new(m.clone(), m.clone())).collect()),
        },
        y: Axis {
            label: crate::words!("share of the queue commands", "phần lệnh của hàng đợi"),
            unit: "%".into(),
            scale: Scale::Linear,
        },
        series,
        marks: vec![Mark { label: crate::words!("fair share", "phần chia đều"), axis: MarkAxis::Y, at: fair }],
        note: Some(crate::words!(
            "calls of LPUSH, BLMOVE, RPUSH and LREM each master counted itself (INFO commandstats)",
            "số lần gọi LPUSH, BLMOVE, RPUSH và LREM mà mỗi master tự đếm (INFO commandstats)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::cluster::cluster::charts::*;
    use crate::labs::cluster::cluster::{ClusterObserved, MasterLoad, PointObserved, QueueObserved, WorkerCounts};
    use crate::labs::RunView;
    use crate::service::cluster::stats::NodeCounters;

    fn spec(keys: KeyLayout, workers: WorkerCounts) -> ClusterSpec {
        let text = "orders = 3\nkeys = \"one-key\"\nper_job_events = false\n";
        let mut s: ClusterSpec = toml::from_str(text).unwrap();
        (s.keys, s.workers_per_queue) = (keys, workers);
        s
    }

    /// A point: `per_queue` workers on `queues` queues, commands per master, 600 jobs in 0.1 s.
    fn point(per_queue: u32, queues: usize, commands: &[u64]) -> PointObserved {
        let masters = commands
            .iter()
            .enumerate()
            .map(|(i, c)| MasterLoad {
                name: crate::service::cluster::node_name(i),
                slots: vec![],
                counters: NodeCounters { cpu_us: 20_000 * (*c > 0) as i64, queue_commands: *c, ..Default::default() },
            })
            .collect();
        let queue = |i: usize| QueueObserved {
            tag: format!("{{q{i}}}"),
            slot: 0,
            processing_slot: 0,
            master: "A".into(),
            applied: vec![(1, 1); 600 / queues],
            left_in_queue: 0,
            left_in_processing: 0,
        };
        PointObserved {
            workers_per_queue: per_queue,
            masters,
            queues: (0..queues).map(queue).collect(),
            window_us: 100_000,
            elapsed_us: 100_000,
        }
    }

    #[test]
    fn throughput_and_ceiling_by_layout_and_shares_by_master() {
        let one_key = ClusterObserved {
            points: vec![point(1, 1, &[0, 900, 0]), point(3, 1, &[0, 900, 0])],
            reshard: None,
            external: false,
        };
        let tags = ClusterObserved { points: vec![point(1, 3, &[300, 300, 300])], reshard: None, external: false };
        let (s1, s2) = (
            spec(KeyLayout::OneKey, WorkerCounts::Sweep(vec![1, 3])),
            spec(KeyLayout::BalancedTags, WorkerCounts::One(1)),
        );
        let (t1, t2) = (crate::words!("one key", "một key"), crate::words!("tags", "tag"));
        let view = |o| RunView { run: 1, events: &[], timed_out: false, observed: o };
        let variants = [
            VariantRuns { id: "one-key", title: &t1, spec: &s1, runs: vec![view(&one_key)] },
            VariantRuns { id: "balanced-tags", title: &t2, spec: &s2, runs: vec![view(&tags)] },
        ];
        let charts = compare(&variants);
        assert_eq!(charts.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["throughput", "ceiling", "shares"]);
        charts.iter().for_each(|c| c.validate().unwrap());
        // 600 jobs in 0.1 s; one key at 1 and 3 workers, a tag per master at 3.
        assert_eq!(charts[0].series[0].points, [(1.0, 6000.0), (3.0, 6000.0)]);
        assert_eq!(charts[0].series[1].points, [(3.0, 6000.0)]);
        // One key: one master's 20 ms of CPU for 600 jobs; a tag per master: the same per master.
        assert_eq!(charts[1].series[0].points[0], (1.0, 30_000.0));
        assert_eq!(charts[2].series[0].points, [(0.0, 0.0), (1.0, 100.0), (2.0, 0.0)]);
        assert_eq!(charts[2].marks[0].at.round(), 33.0);
        assert!(compare(&variants[..0]).is_empty());
    }
}
