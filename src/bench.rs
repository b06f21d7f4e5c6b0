//! `ordlab bench`: how much the harness itself adds. Per lab it reports the wall time of a
//! run divided by the injected delay on its critical path (1.00 = no overhead), the time to
//! start the servers, and the XADD→receive latency of idle consumers (p50, p99).

use crate::error::Error;
use crate::runner::{RunOptions, Runner};
use crate::scenario::{Scenario, Setup};
use crate::service::{ServiceOptions, Services};
use crate::timeline::{Actor, Event, EventKind};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Ideal end of a run in ms: each consumer does its injected work back to back, starting each
/// job no earlier than its scheduled publish time; the largest end over consumers.
pub fn critical_path_ms(setup: &Setup, events: &[Event], scale: f64) -> f64 {
    let mut publish_ms: HashMap<&str, f64> = HashMap::new();
    for e in events {
        if let EventKind::Published { entry_id, job, attempt } = &e.kind {
            let spec = setup
                .events
                .iter()
                .find(|s| s.order == job.order && s.event_type == job.event_type && s.version == job.version);
            let at = spec.map(|s| {
                let first = s.at_ms.unwrap_or(0.0);
                if *attempt > 1 {
                    first + crate::fault::PublishSchedule(s).retry_offset_ms(*attempt)
                } else {
                    first
                }
            });
            publish_ms.insert(entry_id, at.unwrap_or(0.0) * scale);
        }
    }
    let mut free_at: HashMap<Actor, f64> = HashMap::new();
    for e in events {
        if let EventKind::Received { entry_id, job, .. } = &e.kind {
            let start = free_at
                .get(&e.actor)
                .copied()
                .unwrap_or(0.0)
                .max(publish_ms.get(entry_id.as_str()).copied().unwrap_or(0.0));
            free_at.insert(e.actor, start + setup.cost_for(job) * scale);
        }
    }
    free_at.values().copied().fold(0.0, f64::max)
}

/// Wall time of a run in ms: the last acknowledgement.
pub fn wall_ms(events: &[Event]) -> f64 {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Acked { .. }))
        .map(|e| e.t_us as f64 / 1000.0)
        .fold(0.0, f64::max)
}

/// XADD→receive latencies in ms, counting only entries whose consumer was idle (blocked in
/// XREADGROUP) when the entry was published, so queueing behind a job is not counted.
pub fn idle_latencies_ms(events: &[Event]) -> Vec<f64> {
    let published: HashMap<&str, i64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Published { entry_id, .. } => Some((entry_id.as_str(), e.t_us)),
            _ => None,
        })
        .collect();
    let mut idle_since: HashMap<Actor, i64> = HashMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Ready | EventKind::Acked { .. } => {
                idle_since.insert(e.actor, e.t_us);
            }
            EventKind::Received { entry_id, .. } => {
                if let (Some(&p), Some(&idle)) = (published.get(entry_id.as_str()), idle_since.get(&e.actor)) {
                    if idle <= p {
                        out.push((e.t_us - p) as f64 / 1000.0);
                    }
                }
                idle_since.remove(&e.actor);
            }
            _ => {}
        }
    }
    out
}

/// What a run over many orders measured: throughput (acknowledged events per second from the
/// first publish to the last ack), end-to-end latency per event (publish → ack, p50 and p99
/// in µs), the producer's own XADD rate, and how many orders ended wrong.
pub fn load_facts(setup: &Setup, events: &[Event], final_rows: &[crate::scenario::OrderRow]) -> BTreeMap<String, i64> {
    let shard_of_actor = |a: Actor| match a {
        Actor::Consumer(i) => (i - 1) % setup.shards,
        _ => 0,
    };
    let mut published: HashMap<(u32, &str), i64> = HashMap::new();
    let mut acked: Vec<(i64, (u32, &str))> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Published { entry_id, job, .. } => {
                published.entry((setup.shard_of(job.order), entry_id.as_str())).or_insert(e.t_us);
            }
            EventKind::Acked { entry_id } => acked.push((e.t_us, (shard_of_actor(e.actor), entry_id.as_str()))),
            _ => {}
        }
    }
    let first_publish = published.values().copied().min().unwrap_or(0);
    let last_publish = published.values().copied().max().unwrap_or(0);
    let last_ack = acked.iter().map(|(t, _)| *t).max().unwrap_or(0);
    let latencies: Vec<f64> = acked.iter().filter_map(|(t, key)| published.get(key).map(|p| (t - p) as f64)).collect();
    let per_second = |n: usize, span_us: i64| if span_us > 0 { (n as f64 * 1e6 / span_us as f64) as i64 } else { 0 };
    let wrong_orders =
        final_rows.iter().filter(|r| setup.expected_status(r.order).is_some_and(|want| want != r.status)).count()
            as i64;
    BTreeMap::from([
        ("events".to_string(), acked.len() as i64),
        ("throughput_eps".to_string(), per_second(acked.len(), last_ack - first_publish)),
        ("latency_p50_us".to_string(), quantile(&latencies, 0.5).unwrap_or(0.0) as i64),
        ("latency_p99_us".to_string(), quantile(&latencies, 0.99).unwrap_or(0.0) as i64),
        (
            "producer_xadd_per_s".to_string(),
            per_second(published.len().saturating_sub(1), last_publish - first_publish),
        ),
        ("wrong_orders".to_string(), wrong_orders),
    ])
}

/// `redis-benchmark` XADD with one client and no pipelining (how our producer publishes),
/// against the same server: requests per second, or None if the tool is missing or fails.
pub fn redis_benchmark_xadd(redis_url: &str, key: &str, requests: u32) -> Option<i64> {
    let url = redis::parse_redis_url(redis_url)?;
    let (host, port) = (url.host_str()?.to_string(), url.port().unwrap_or(6379));
    let out = std::process::Command::new("redis-benchmark")
        .args(["-h", &host, "-p", &port.to_string(), "-c", "1", "-n", &requests.to_string(), "--csv"])
        .args(["XADD", key, "*", "order", "42", "type", "paid", "version", "2"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // CSV: a header line, then `"XADD ...","<rps>",...`.
    let row = text.lines().find(|l| l.starts_with("\"XADD"))?;
    let rps = row.split("\",\"").nth(1)?.trim_matches('"');
    rps.parse::<f64>().ok().map(|x| x as i64)
}

/// The q-quantile (0..=1) by nearest rank; None when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Measure each lab: servers started fresh per lab (that start is timed), `runs` runs per
/// variant at time scale 1.
pub async fn run(labs: &[Scenario], runs: u32, svc: &ServiceOptions, exe: PathBuf) -> Result<(), Error> {
    println!(
        "{:<16} {:>5} {:>14} {:>9} {:>16} {:>16}",
        "lab", "runs", "wall/critical", "start s", "xadd→recv p50", "xadd→recv p99"
    );
    for lab in labs {
        let services = Services::start(svc).await?;
        let start_s = services.start_time.as_secs_f64();
        let mut runner = Runner::new(&services, exe.clone()).await?;
        let mut opts = RunOptions::new(1.0, 1);
        opts.runs = Some(runs);
        let report = runner.run_lab(lab, &opts).await?;
        drop(runner);
        services.stop().await;
        let (mut ratios, mut lat) = (Vec::new(), Vec::new());
        for v in &report.variants {
            for r in &v.run_records {
                let critical = critical_path_ms(&v.setup, &r.events, 1.0);
                if critical > 0.0 {
                    ratios.push(wall_ms(&r.events) / critical);
                }
                lat.extend(idle_latencies_ms(&r.events));
            }
        }
        let mean = if ratios.is_empty() { f64::NAN } else { ratios.iter().sum::<f64>() / ratios.len() as f64 };
        let ms = |q| quantile(&lat, q).map(|x| format!("{x:.2} ms")).unwrap_or_else(|| "-".into());
        println!("{:<16} {:>5} {:>14.3} {:>9.3} {:>16} {:>16}", lab.id, ratios.len(), mean, start_s, ms(0.5), ms(0.99));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Job;

    fn setup() -> Setup {
        Setup::from_toml(&format!(
            "cost_ms = {{ created = 800, paid = 50 }}
{}",
            r#"events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#
        ))
        .unwrap()
    }

    fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us, actor, kind }
    }

    fn job(t: &str, v: i64) -> Job {
        Job { order: 42, event_type: t.into(), version: v }
    }

    fn s1_run() -> Vec<Event> {
        let c1 = Actor::Consumer(1);
        vec![
            ev(-500, c1, EventKind::Ready),
            ev(0, Actor::Producer, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
            ev(300, c1, EventKind::Received { entry_id: "1-0".into(), job: job("created", 1), deliveries: None }),
            ev(400, Actor::Producer, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
            ev(805_000, c1, EventKind::Acked { entry_id: "1-0".into() }),
            ev(805_100, c1, EventKind::Received { entry_id: "1-1".into(), job: job("paid", 2), deliveries: None }),
            ev(858_000, c1, EventKind::Acked { entry_id: "1-1".into() }),
        ]
    }

    #[test]
    fn one_consumer_does_both_jobs_back_to_back() {
        let events = s1_run();
        assert_eq!(critical_path_ms(&setup(), &events, 1.0), 850.0);
        assert_eq!(critical_path_ms(&setup(), &events, 0.5), 425.0);
        assert_eq!(wall_ms(&events), 858.0);
    }

    #[test]
    fn latency_counts_only_idle_consumers() {
        // created found C1 idle (0.3 ms); paid waited behind created and is not counted.
        assert_eq!(idle_latencies_ms(&s1_run()), vec![0.3]);
    }

    #[test]
    fn load_facts_measure_throughput_latency_and_wrong_orders() {
        let events = s1_run();
        let rows = vec![crate::scenario::OrderRow { order: 42, status: "created".into(), version: 1 }];
        let f = load_facts(&setup(), &events, &rows);
        assert_eq!(f["events"], 2);
        // 2 acks between the first publish (t=0) and the last ack (858 ms).
        assert_eq!(f["throughput_eps"], 2);
        // publish → ack: 805 ms and 857.6 ms.
        assert_eq!((f["latency_p50_us"], f["latency_p99_us"]), (805_000, 857_600));
        assert_eq!(f["wrong_orders"], 1);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
