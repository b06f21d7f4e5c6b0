//! `ordlab bench`: how much the harness itself adds. Per lab it reports the wall time of a
//! run divided by the injected delay on its critical path (1.00 = no overhead), the time to
//! start the servers, and the XADD→receive latency of idle consumers (p50, p99). Nothing in
//! the library depends on it. [`interposer`] measures what the interposer adds to a round trip.
//! [`lab_all`] times a batch of labs as `run all` runs them, with where its time goes
//! ([`crate::timing`]).

pub mod explore;
pub mod interposer;

use crate::error::{Context, Error};
use crate::runner::{RunOptions, Runner};
use crate::scenario::Scenario;
use crate::service::{ServiceOptions, Services};
use crate::stats::quantile;
use crate::timeline::{Actor, Event, EventKind};
use std::collections::HashMap;
use std::path::PathBuf;

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

/// Measure each lab: servers started fresh per lab (that start is timed), `runs` runs per
/// variant at time scale 1.
pub async fn run(labs: &[Scenario], runs: u32, svc: &ServiceOptions, exe: PathBuf) -> Result<(), Error> {
    println!("{}", crate::service::start_times_line(svc).await);
    println!(
        "{:<16} {:>5} {:>14} {:>9} {:>16} {:>16} {:>12} {:>10}",
        "lab", "runs", "wall/critical", "start s", "xadd→recv p50", "xadd→recv p99", "PING p50", "recv/PING"
    );
    for lab in labs {
        let services = Services::start(svc).await?;
        let start_s = services.start_time.as_secs_f64();
        let mut opts = RunOptions::new(1.0, 1);
        opts.runs = Some(runs);
        let measured = async {
            // The same server, just before the lab's runs: the floor an XADD→receive cannot beat.
            let ping = ping_round_trips_ms(&services.redis_url, PINGS).await?;
            let report = Runner::new(&services, exe.clone()).await?.run_lab(lab, &opts).await?;
            Ok::<_, Error>((ping, report))
        }
        .await;
        services.stop().await;
        let (ping, report) = measured?;
        let (mut ratios, mut lat) = (Vec::new(), Vec::new());
        for v in &report.variants {
            for r in &v.run_records {
                if let Some(critical) = v.procedure.critical_path_ms(r, 1.0) {
                    ratios.push(wall_ms(&r.events) / critical);
                }
                lat.extend(idle_latencies_ms(&r.events));
            }
        }
        let mean = if ratios.is_empty() { f64::NAN } else { ratios.iter().sum::<f64>() / ratios.len() as f64 };
        let ms = |q| quantile(&lat, q).map(|x| format!("{x:.2} ms")).unwrap_or_else(|| "-".into());
        let ping_p50 = quantile(&ping, 0.5).unwrap_or(f64::NAN);
        let ratio = quantile(&lat, 0.5).map(|l| format!("{:.1}×", l / ping_p50)).unwrap_or_else(|| "-".into());
        println!(
            "{:<16} {:>5} {:>14.3} {:>9.3} {:>16} {:>16} {:>9.3} ms {:>10}",
            lab.id,
            ratios.len(),
            mean,
            start_s,
            ms(0.5),
            ms(0.99),
            ping_p50,
            ratio
        );
    }
    Ok(())
}

/// PINGs per round-trip measurement.
const PINGS: usize = 1000;

/// `n` PING round trips, one after the other on one connection, in ms: what loopback and
/// the server cost before any harness is involved.
pub async fn ping_round_trips_ms(redis_url: &str, n: usize) -> Result<Vec<f64>, Error> {
    let mut conn = crate::connect::redis(redis_url).await.context("connect for PING")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = std::time::Instant::now();
        let _: String = redis::cmd("PING").query_async(&mut conn).await.context("PING")?;
        out.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(out)
}

/// Every lab as `just lab all` runs it (full runs, time scale 1), once per `jobs` value: the
/// wall time against the sum of the runs' injected critical paths.
pub async fn lab_all(labs: &[Scenario], jobs: &[usize], svc: &ServiceOptions, exe: PathBuf) -> Result<(), Error> {
    println!("\nevery lab as `just lab all` runs them (time scale 1, full runs, results not kept):");
    for &n in jobs {
        let opts = RunOptions::new(1.0, 1);
        let start = std::time::Instant::now();
        let (reports, spans) = crate::schedule::run_labs_timed(labs, &opts, svc, n, exe.clone(), &mut |_| {}).await?;
        let wall = start.elapsed().as_secs_f64();
        let totals = LabAllTotals::of(&reports);
        println!(
            "  --jobs {n}: wall {wall:.1} s · Σ critical paths {:.1} s · wall/critical {:.2} · scheduler races alone {:.1} s of runs · {} runs",
            totals.critical_s,
            wall / totals.critical_s,
            totals.race_s,
            totals.runs
        );
        print!("{}", crate::timing::Breakdown::of(&spans).render(wall * 1000.0));
    }
    Ok(())
}

/// What the runs of many labs add up to.
#[derive(Debug, Default, PartialEq)]
pub struct LabAllTotals {
    pub runs: usize,
    /// Σ of every run's injected critical path, where the lab injects handler work.
    pub critical_s: f64,
    /// Σ of the wall time of the runs of scheduler-race variants (run alone).
    pub race_s: f64,
}

impl LabAllTotals {
    pub fn of(reports: &[crate::report::LabReport]) -> LabAllTotals {
        let mut t = LabAllTotals::default();
        for v in reports.iter().flat_map(|r| &r.variants) {
            for r in &v.run_records {
                t.runs += 1;
                t.critical_s += v.procedure.critical_path_ms(r, 1.0).unwrap_or(0.0) / 1000.0;
                if v.scheduler_race {
                    t.race_s += wall_ms(&r.events) / 1000.0;
                }
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Job;

    fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us, actor, kind }
    }

    #[test]
    fn latency_counts_only_idle_consumers() {
        let c1 = Actor::Consumer(1);
        let job = |t: &str, v| Job::new(42, t, v);
        let events = vec![
            ev(-500, c1, EventKind::Ready),
            ev(0, Actor::Producer, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
            ev(300, c1, EventKind::Received { entry_id: "1-0".into(), job: job("created", 1), deliveries: None }),
            ev(400, Actor::Producer, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
            ev(805_000, c1, EventKind::Acked { entry_id: "1-0".into() }),
            ev(805_100, c1, EventKind::Received { entry_id: "1-1".into(), job: job("paid", 2), deliveries: None }),
            ev(858_000, c1, EventKind::Acked { entry_id: "1-1".into() }),
        ];
        // created found C1 idle (0.3 ms); paid waited behind created and is not counted.
        assert_eq!(idle_latencies_ms(&events), vec![0.3]);
        assert_eq!(wall_ms(&events), 858.0);
    }
}
