//! What a pipeline run measured, read from its timeline: each job's latency from its publish
//! to its acknowledgement, per priority (p50, p90, p99), and the throughput of done jobs;
//! and the chart that sets the variants' latencies side by side.

use crate::chart::{Axis, Chart, Scale, Series, Style};
use crate::handler::job::events::JobEvent;
use crate::labs::idempotency::pipeline::plan::PRIORITIES;
use crate::lang::Words;
use crate::timeline::Event;
use std::collections::{HashMap, HashSet};

/// Latencies in µs per priority (0 critical, 1 normal, 2 low), of jobs done (acknowledged
/// and not dead-lettered), and the throughput of done jobs per second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latencies {
    pub per_priority: [Vec<i64>; 3],
    pub done: u32,
    /// From the first publish to the last acknowledgement of a done job.
    pub span_us: i64,
}

/// The priority of a job id (`c-0007` → 0).
pub fn priority_of(job: &str) -> Option<usize> {
    PRIORITIES.iter().position(|p| job.starts_with(&p[..1]) && job.as_bytes().get(1) == Some(&b'-'))
}

pub fn latencies(events: &[Event]) -> Latencies {
    let mut published: HashMap<&str, i64> = HashMap::new();
    let mut dead: HashSet<&str> = HashSet::new();
    let mut first_publish = i64::MAX;
    let decoded: Vec<(i64, JobEvent)> = events.iter().filter_map(|e| e.kind.family().map(|j| (e.t_us, j))).collect();
    for (t_us, e) in &decoded {
        match e {
            JobEvent::JobPublished { entry_id, .. } => {
                published.entry(entry_id.as_str()).or_insert(*t_us);
                first_publish = first_publish.min(*t_us);
            }
            JobEvent::DeadLettered { job, .. } => {
                dead.insert(job.as_str());
            }
            _ => {}
        }
    }
    let mut out = Latencies::default();
    let mut acked: HashSet<&str> = HashSet::new();
    let mut last_ack = first_publish;
    for (t_us, e) in &decoded {
        let JobEvent::JobAcked { entry_id, job } = e else { continue };
        let (Some(t0), Some(p)) = (published.get(entry_id.as_str()), priority_of(job)) else { continue };
        if dead.contains(job.as_str()) || !acked.insert(entry_id.as_str()) {
            continue;
        }
        out.per_priority[p].push(t_us - t0);
        out.done += 1;
        last_ack = last_ack.max(*t_us);
    }
    out.span_us = (last_ack - first_publish).max(0);
    out
}

impl Latencies {
    /// Done jobs per second over the run.
    pub fn throughput(&self) -> i64 {
        if self.span_us == 0 {
            return 0;
        }
        (self.done as f64 * 1e6 / self.span_us as f64).round() as i64
    }

    /// The `q` quantile (0–1) of a priority's latencies, in µs.
    pub fn quantile_us(&self, priority: usize, q: f64) -> Option<i64> {
        let v: Vec<f64> = self.per_priority[priority].iter().map(|x| *x as f64).collect();
        crate::stats::quantile(&v, q).map(|x| x.round() as i64)
    }
}

/// Latency per priority, p50 and p99, one pair of bar series per variant (ms, log scale).
pub fn latency_chart(variants: &[(&str, Latencies)]) -> Chart {
    let categories = PRIORITIES.iter().map(|p| Words::new(*p, priority_vi(p))).collect();
    let mut series = Vec::new();
    for (id, l) in variants {
        for (q, label) in [(0.5, "p50"), (0.99, "p99")] {
            let points = (0..3)
                .filter_map(|p| l.quantile_us(p, q).map(|us| (p as f64, (us as f64 / 1000.0).max(0.1))))
                .collect();
            series.push(Series {
                name: Words::new(format!("{id} {label}"), format!("{id} {label}")),
                style: Style::Bars,
                points,
                err: None,
                unmeasured: Vec::new(),
            });
        }
    }
    Chart {
        id: "latency".into(),
        title: Words::new("Publish → XACK latency per priority", "Độ trễ từ publish đến XACK theo mức ưu tiên"),
        x: Axis {
            label: Words::new("priority", "mức ưu tiên"),
            unit: String::new(),
            scale: Scale::Categories(categories),
        },
        y: Axis { label: Words::new("latency", "độ trễ"), unit: "ms".into(), scale: Scale::Log10 },
        series,
        marks: Vec::new(),
        note: Some(Words::new(
            "run 1 of each variant; done jobs only (not dead-lettered)",
            "lần 1 của mỗi biến thể; chỉ job đã xong (không vào DLQ)",
        )),
    }
}

fn priority_vi(p: &str) -> &'static str {
    match p {
        "critical" => "khẩn cấp",
        "normal" => "thường",
        _ => "thấp",
    }
}

#[cfg(test)]
mod tests {
    use crate::handler::job::events::FailReason;
    use crate::labs::idempotency::pipeline::stats::*;
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::Actor;
    use crate::timeline::EventKind;

    fn ev(t_ms: i64, kind: EventKind) -> Event {
        Event { t_us: t_ms * 1000, actor: Actor::Consumer(1), kind }
    }

    fn published(t: i64, id: &str, job: &str) -> Event {
        ev(
            t,
            JobEvent::JobPublished {
                entry_id: id.into(),
                job: job.into(),
                attempt: 1,
                reply_lost: false,
                same_id: false,
            }
            .event(),
        )
    }

    fn acked(t: i64, id: &str, job: &str) -> Event {
        ev(t, JobEvent::JobAcked { entry_id: id.into(), job: job.into() }.event())
    }

    fn run() -> Vec<Event> {
        vec![
            published(0, "1-0", "c-0001"),
            published(10, "1-1", "l-0002"),
            published(20, "1-2", "c-0003"),
            published(30, "1-3", "n-0004"),
            acked(5, "1-0", "c-0001"),
            acked(15, "1-0", "c-0001"),
            acked(40, "1-2", "c-0003"),
            ev(50, JobEvent::DeadLettered { job: "n-0004".into(), reason: FailReason::Rejected }.event()),
            acked(50, "1-3", "n-0004"),
            acked(1010, "1-1", "l-0002"),
        ]
    }

    #[test]
    fn latency_is_publish_to_first_ack_of_done_jobs_per_priority() {
        let l = latencies(&run());
        assert_eq!(l.per_priority, [vec![5_000, 20_000], vec![], vec![1_000_000]]);
        assert_eq!(l.done, 3);
        assert_eq!(l.span_us, 1_010_000);
        assert_eq!(l.throughput(), 3);
        assert_eq!(priority_of("l-0002"), Some(2));
        assert_eq!(priority_of("x-1"), None);
    }

    #[test]
    fn the_chart_has_a_p50_and_a_p99_bar_series_per_variant() {
        let l = latencies(&run());
        let chart = latency_chart(&[("seed", l.clone()), ("corrected", l)]);
        chart.validate().unwrap();
        assert_eq!(chart.series.len(), 4);
        assert_eq!(chart.series[0].points, vec![(0.0, 5.0), (2.0, 1000.0)], "no normal job done: no bar");
    }
}
