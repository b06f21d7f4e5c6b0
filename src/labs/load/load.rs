//! Under load (seed 001 only ever ran one or two orders): many orders, a small share of them
//! with a slow first job, every strategy side by side. Throughput, end-to-end latency and
//! wrong final states per strategy, and the producer's own XADD rate against redis-benchmark
//! on the same server in the same run.

use crate::chart::Chart;
use crate::checker::RunVerdict;
use crate::connect;
use crate::error::{Context, Error};
use crate::handler::order::Strategy;
use crate::labs::load::concurrency::max_concurrent_handlers;
pub use crate::labs::load::generate::GenerateSpec;
use crate::labs::order_stream::{self as stream, StreamSpec};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunOutcome, RunView,
    TimelineDisplay, VariantRuns,
};
use crate::lang::{pick, Lang};
use crate::orders::OrderRow;
use crate::stats::quantile;
use crate::timeline::{Actor, Event, EventKind};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod charts;

/// `kind = "load"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    pub generate: GenerateSpec,
    #[serde(default = "stream::one")]
    pub consumers: u32,
    #[serde(default = "stream::one")]
    pub shards: u32,
    #[serde(default)]
    pub strategy: Strategy,
}

/// What the servers said: the rows, and the producer alone against redis-benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadObserved {
    pub final_rows: Vec<OrderRow>,
    /// The producer's XADD alone on the quiet server (median of the rounds).
    pub producer_alone: XaddRate,
    /// redis-benchmark's XADD, one client, no pipelining (median of the rounds); None when the
    /// tool is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<XaddRate>,
}

/// One client sending XADD one at a time: requests per second and the median request time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct XaddRate {
    pub per_s: i64,
    pub p50_us: i64,
}

/// Requests per round of the producer-against-benchmark comparison (both sides the same).
const PROBE_REQUESTS: u32 = 5000;
/// Alternating rounds; the median of each side is reported.
const PROBE_ROUNDS: usize = 3;

impl LoadSpec {
    /// The stream run this load is: the generated events, no other fault.
    fn stream(&self) -> StreamSpec {
        let events = self.generate.events();
        StreamSpec {
            consumers: self.consumers,
            shards: self.shards,
            strategy: self.strategy.clone(),
            cost_ms: Default::default(),
            initial: Some(crate::orders::default_initial(&events)),
            events,
            state_bytes: 0,
            faults: Vec::new(),
            old_crash: None,
            reaper: None,
            worker: None,
            waiting_order: None,
            patience_ms: None,
        }
    }

    /// The producer's own XADD on the quiet server against redis-benchmark's, like for like:
    /// one connection, one request at a time, the same number of requests, alternating rounds,
    /// the median of each side (a rate is at the mercy of a scheduler stall; the median
    /// request time much less so).
    async fn producer_against_benchmark(&self, ctx: &RunContext<'_>) -> Result<(XaddRate, Option<XaddRate>), Error> {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let prefix = ctx.key_prefix();
        for round in 0..PROBE_ROUNDS {
            let conn = connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
            ours.push(xadd_one_at_a_time(conn, &format!("{prefix}probe{round}"), PROBE_REQUESTS).await?);
            let (url, key) = (ctx.services.redis_url.clone(), format!("{prefix}bench"));
            let bench = tokio::task::spawn_blocking(move || redis_benchmark_xadd(&url, &key, PROBE_REQUESTS))
                .await
                .expect("benchmark task does not panic");
            theirs.extend(bench);
        }
        Ok((median_rate(&ours), (theirs.len() == PROBE_ROUNDS).then(|| median_rate(&theirs))))
    }

    /// Handlers that may run at once: consumers, or a fan-out reader's workers.
    pub fn handler_budget(&self) -> u32 {
        self.consumers * self.strategy.handlers_per_consumer()
    }
}

/// `n` XADDs of the producer's own command, each awaited before the next, timed one by one.
async fn xadd_one_at_a_time(
    mut conn: redis::aio::MultiplexedConnection,
    stream: &str,
    n: u32,
) -> Result<XaddRate, Error> {
    let job = crate::timeline::Job::new(42, "paid", 2);
    let mut times = Vec::with_capacity(n as usize);
    let started = crate::clock::now_ns();
    for _ in 0..n {
        let at = crate::clock::now_ns();
        let _: String = crate::streams::xadd(stream, &job).query_async(&mut conn).await.context("XADD")?;
        times.push((crate::clock::now_ns() - at) as f64 / 1000.0);
    }
    let secs = (crate::clock::now_ns() - started) as f64 / 1e9;
    Ok(XaddRate { per_s: (n as f64 / secs) as i64, p50_us: quantile(&times, 0.5).unwrap_or(0.0) as i64 })
}

/// The median rate and the median of the median request times.
fn median_rate(rounds: &[XaddRate]) -> XaddRate {
    let per_s: Vec<f64> = rounds.iter().map(|r| r.per_s as f64).collect();
    let p50: Vec<f64> = rounds.iter().map(|r| r.p50_us as f64).collect();
    XaddRate { per_s: quantile(&per_s, 0.5).unwrap_or(0.0) as i64, p50_us: quantile(&p50, 0.5).unwrap_or(0.0) as i64 }
}

/// What a load run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadFacts {
    /// Handlers the strategy may run at once.
    pub handlers: i64,
    pub most_handlers_at_once: i64,
    /// Events acknowledged.
    pub events: i64,
    pub throughput_eps: i64,
    pub latency_p50_us: i64,
    pub latency_p99_us: i64,
    pub producer_xadd_per_s: i64,
    pub wrong_orders: i64,
    pub producer_alone_xadd_per_s: i64,
    pub producer_alone_p50_us: i64,
    /// redis-benchmark's XADD rate and latency, where it ran.
    pub benchmark_xadd_per_s: Option<i64>,
    pub benchmark_p50_us: Option<i64>,
}

impl Facts for LoadFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = vec![
            FactRow::stable("handlers", self.handlers),
            FactRow::measured("most_handlers_at_once", self.most_handlers_at_once),
            FactRow::stable("events", self.events),
            FactRow::measured("throughput_eps", self.throughput_eps),
            FactRow::measured("latency_p50_us", self.latency_p50_us),
            FactRow::measured("latency_p99_us", self.latency_p99_us),
            FactRow::measured("producer_xadd_per_s", self.producer_xadd_per_s),
            FactRow::measured("wrong_orders", self.wrong_orders),
            FactRow::measured("producer_alone_xadd_per_s", self.producer_alone_xadd_per_s),
            FactRow::measured("producer_alone_p50_us", self.producer_alone_p50_us),
        ];
        rows.extend(self.benchmark_xadd_per_s.map(|n| FactRow::measured("benchmark_xadd_per_s", n)));
        rows.extend(self.benchmark_p50_us.map(|n| FactRow::measured("benchmark_p50_us", n)));
        rows
    }
}

impl LabProcedure for LoadSpec {
    fn validate(&mut self) -> Result<(), String> {
        let g = &self.generate;
        if g.orders == 0 || g.types.is_empty() || !(0.0..=1.0).contains(&g.slow_share) {
            return Err("setup.generate: use orders ≥ 1, at least one type, 0 ≤ slow_share ≤ 1".into());
        }
        stream::check_consumers(self.consumers)?;
        self.strategy.check()?;
        if self.shards == 0 {
            return Err("setup.shards = 0: use at least 1".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<LoadObserved>, Error> {
        let spec = self.stream();
        let out = spec.run(ctx).await?;
        let (ours, theirs) = self.producer_against_benchmark(ctx).await?;
        ctx.delete_run_keys().await?;
        let observed = LoadObserved { final_rows: out.observed.final_rows, producer_alone: ours, benchmark: theirs };
        Ok(RunOutcome { t0_ns: out.t0_ns, raw: out.raw, timed_out: out.timed_out, observed })
    }
}

impl Judge for LoadSpec {
    type Observed = LoadObserved;
    type Facts = LoadFacts;

    fn judge(&self, run: &RunView<'_, LoadObserved>) -> RunVerdict {
        let spec = self.stream();
        let observed = stream::StreamObserved {
            stream: Vec::new(),
            final_rows: run.observed.final_rows.clone(),
            entry_bytes: None,
            pending_after_run: None,
            documents: None,
            waiting_order: vec![],
        };
        spec.judge(&RunView { run: run.run, events: run.events, timed_out: run.timed_out, observed: &observed })
    }

    fn final_state(&self, observed: &LoadObserved) -> Vec<FinalItem> {
        stream::order_items(&crate::orders::expected_statuses(&self.stream().events), &observed.final_rows)
    }

    fn facts(&self, run: &RunView<'_, LoadObserved>) -> LoadFacts {
        let m = measure(self.shards, run.events);
        let wrong = self.final_state(run.observed).iter().filter(|i| i.is_wrong()).count() as i64;
        let (ours, theirs) = (run.observed.producer_alone, run.observed.benchmark);
        LoadFacts {
            handlers: self.handler_budget() as i64,
            most_handlers_at_once: max_concurrent_handlers(run.events) as i64,
            events: m.acked,
            throughput_eps: m.throughput_eps,
            latency_p50_us: m.p50_us,
            latency_p99_us: m.p99_us,
            producer_xadd_per_s: m.producer_xadd_per_s,
            wrong_orders: wrong,
            producer_alone_xadd_per_s: ours.per_s,
            producer_alone_p50_us: ours.p50_us,
            benchmark_xadd_per_s: theirs.map(|b| b.per_s),
            benchmark_p50_us: theirs.map(|b| b.p50_us),
        }
    }
}

impl Present for LoadSpec {
    fn describe(&self, lang: Lang) -> String {
        let g = &self.generate;
        let (orders, types, share, slow, fast) =
            (g.orders, g.types.join("/"), g.slow_share * 100.0, g.slow_ms, g.fast_ms);
        let mut parts = vec![crate::tr!(
            lang,
            "{orders} orders × {types}, {share} % with a {slow} ms first job, every other job {fast} ms",
            "{orders} đơn × {types}, {share} % có job đầu {slow} ms, mọi job khác {fast} ms"
        )];
        parts.push(stream::consumers_phrase(self.consumers, lang));
        if self.shards > 1 {
            let n = self.shards;
            parts.push(crate::tr!(lang, "{n} shards by order id", "{n} shard theo mã đơn"));
        }
        parts.push(self.strategy.describe(lang));
        parts.join("; ")
    }

    fn approach(&self) -> String {
        self.stream().approach()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let expected = pick(lang, "each order's last event", "sự kiện cuối của từng đơn");
        crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay { many_orders: true, ..TimelineDisplay::default() }
    }

    /// Throughput, wrong orders and the publish → ack latency distribution per strategy.
    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        charts::compare(variants)
    }

    fn table_row(&self, run: &RunView<'_, LoadObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let m = measure(self.shards, run.events);
        let n = |x: i64| Line(vec![Piece::Count(x)]);
        let ms = |us: i64| Line(vec![Piece::MsFromUs(us)]);
        let items = self.final_state(run.observed);
        let wrong = items.iter().filter(|i| i.is_wrong()).count() as i64;
        let bench = run.observed.benchmark.map_or(Line::text("-"), |b| n(b.per_s));
        Some(vec![
            (pick(lang, "handlers", "handler").to_string(), Line::text(self.handler_budget().to_string())),
            (pick(lang, "events/s", "event/s").to_string(), n(m.throughput_eps)),
            ("p50 ms".to_string(), ms(m.p50_us)),
            ("p99 ms".to_string(), ms(m.p99_us)),
            (pick(lang, "wrong", "sai").to_string(), n(wrong).and_text(format!("/{}", items.len()))),
            ("producer/s".to_string(), n(run.observed.producer_alone.per_s)),
            ("redis-bench/s".to_string(), bench),
        ])
    }
}

/// Throughput and latency of a run over many orders, from its timeline.
struct LoadMeasures {
    acked: i64,
    /// Acknowledged events per second from the first publish to the last ack.
    throughput_eps: i64,
    /// End-to-end latency per event (publish → ack).
    p50_us: i64,
    p99_us: i64,
    producer_xadd_per_s: i64,
}

fn measure(shards: u32, events: &[Event]) -> LoadMeasures {
    let pairs = publish_and_ack(shards, events);
    let first_publish = pairs.published.values().copied().min().unwrap_or(0);
    let last_publish = pairs.published.values().copied().max().unwrap_or(0);
    let last_ack = pairs.acked.iter().map(|(t, _)| *t).max().unwrap_or(0);
    let latencies = pairs.latencies_us();
    let per_second = |n: usize, span_us: i64| if span_us > 0 { (n as f64 * 1e6 / span_us as f64) as i64 } else { 0 };
    LoadMeasures {
        acked: pairs.acked.len() as i64,
        throughput_eps: per_second(pairs.acked.len(), last_ack - first_publish),
        p50_us: quantile(&latencies, 0.5).unwrap_or(0.0) as i64,
        p99_us: quantile(&latencies, 0.99).unwrap_or(0.0) as i64,
        producer_xadd_per_s: per_second(pairs.published.len().saturating_sub(1), last_publish - first_publish),
    }
}

/// When each entry was published and acknowledged (keyed by shard and entry ID: an ID is
/// unique within its stream only).
struct PublishAndAck<'a> {
    published: HashMap<(u32, &'a str), i64>,
    acked: Vec<(i64, (u32, &'a str))>,
}

impl PublishAndAck<'_> {
    /// Publish → ack of every acknowledged entry, in µs.
    fn latencies_us(&self) -> Vec<f64> {
        self.acked.iter().filter_map(|(t, key)| self.published.get(key).map(|p| (t - p) as f64)).collect()
    }
}

fn publish_and_ack(shards: u32, events: &[Event]) -> PublishAndAck<'_> {
    let mut pairs = PublishAndAck { published: HashMap::new(), acked: Vec::new() };
    for e in events {
        match &e.kind {
            EventKind::Published { entry_id, job, .. } => {
                pairs.published.entry((stream::shard_of(job.order, shards), entry_id.as_str())).or_insert(e.t_us);
            }
            EventKind::Acked { entry_id } => {
                let shard = if let Actor::Consumer(_) = e.actor { stream::shard_of_actor(e.actor, shards) } else { 0 };
                pairs.acked.push((e.t_us, (shard, entry_id.as_str())));
            }
            _ => {}
        }
    }
    pairs
}

/// `redis-benchmark` XADD with one client and no pipelining (how our producer publishes),
/// against the same server: requests per second and its median request time, or None if the
/// tool is missing or fails.
pub fn redis_benchmark_xadd(redis_url: &str, key: &str, requests: u32) -> Option<XaddRate> {
    let out =
        std::process::Command::new("redis-benchmark").args(benchmark_args(redis_url, key, requests)?).output().ok()?;
    benchmark_csv(&String::from_utf8_lossy(&out.stdout))
}

/// redis-benchmark's arguments for the server at `redis_url`, with its user and password
/// when the URL has them (the Docker backend's servers need one). redis-benchmark prints no
/// warning for `-a` and knows no `--no-auth-warning` (redis-cli's flag: it refuses to run).
fn benchmark_args(redis_url: &str, key: &str, requests: u32) -> Option<Vec<String>> {
    let url = redis::parse_redis_url(redis_url)?;
    let (host, port) = (url.host_str()?.to_string(), url.port().unwrap_or(6379));
    let mut args: Vec<String> = ["-h", &host, "-p", &port.to_string()].map(String::from).to_vec();
    if let Some(password) = url.password() {
        let password = percent_decoded(password)?;
        if !url.username().is_empty() {
            args.extend(["--user".to_string(), percent_decoded(url.username())?]);
        }
        args.extend(["-a".to_string(), password]);
    }
    args.extend(["-c", "1", "-n", &requests.to_string(), "--csv"].map(String::from));
    args.extend(["XADD", key, "*", "order", "42", "type", "paid", "version", "2"].map(String::from));
    Some(args)
}

/// A URL's user or password as the server knows it (`%40` → `@`).
fn percent_decoded(s: &str) -> Option<String> {
    Some(percent_encoding::percent_decode_str(s).decode_utf8().ok()?.into_owned())
}

/// `"XADD …","<rps>","<avg ms>","<min ms>","<p50 ms>",…` (redis-benchmark ≥ 6.2 `--csv`).
fn benchmark_csv(text: &str) -> Option<XaddRate> {
    let row = text.lines().find(|l| l.starts_with("\"XADD"))?;
    let cells: Vec<f64> = row.split("\",\"").skip(1).filter_map(|c| c.trim_matches('"').parse().ok()).collect();
    let (rps, p50_ms) = (*cells.first()?, *cells.get(3)?);
    Some(XaddRate { per_s: rps as i64, p50_us: (p50_ms * 1000.0).round() as i64 })
}

#[cfg(test)]
mod tests {
    use crate::labs::load::load::*;
    use crate::timeline::Job;

    #[test]
    fn redis_benchmark_gets_the_password_of_the_url() {
        let plain = benchmark_args("redis://127.0.0.1:7000/", "k", 10).unwrap().join(" ");
        assert!(plain.starts_with("-h 127.0.0.1 -p 7000 -c 1 -n 10 --csv XADD k *"), "{plain}");
        assert!(!plain.contains("-a "));
        let docker = benchmark_args("redis://:s3cr%40t@127.0.0.1:7001/", "k", 10).unwrap().join(" ");
        assert!(docker.starts_with("-h 127.0.0.1 -p 7001 -a s3cr@t -c 1"), "{docker}");
        let user = benchmark_args("redis://bob:pw@127.0.0.1:7002/", "k", 10).unwrap().join(" ");
        assert!(user.contains("--user bob -a pw -c 1"), "{user}");
    }

    fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us, actor, kind }
    }

    #[test]
    fn throughput_latency_from_the_timeline() {
        let c1 = Actor::Consumer(1);
        let job = |t: &str, v| Job::new(42, t, v);
        let events = vec![
            ev(0, Actor::Producer, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
            ev(400, Actor::Producer, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
            ev(805_000, c1, EventKind::Acked { entry_id: "1-0".into() }),
            ev(858_000, c1, EventKind::Acked { entry_id: "1-1".into() }),
        ];
        let m = measure(1, &events);
        assert_eq!((m.acked, m.throughput_eps), (2, 2));
        assert_eq!((m.p50_us, m.p99_us), (805_000, 857_600));
    }

    #[test]
    fn redis_benchmark_csv_gives_rate_and_median() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\"\n\
                   \"XADD bench * order 42 type paid version 2\",\"29629.63\",\"0.031\",\"0.008\",\"0.015\",\"0.031\"\n";
        assert_eq!(benchmark_csv(csv), Some(XaddRate { per_s: 29629, p50_us: 15 }));
        assert_eq!(benchmark_csv("ERROR"), None);
    }

    #[test]
    fn the_workload_is_the_same_for_every_strategy() {
        let g = GenerateSpec {
            orders: 1000,
            types: GenerateSpec::default_types(),
            slow_share: 0.02,
            slow_ms: 200.0,
            fast_ms: 2.0,
        };
        let events = g.events();
        assert_eq!(events.len(), 2000);
        let slow = events.iter().filter(|e| e.cost_ms == Some(200.0)).count();
        assert!((10..=30).contains(&slow), "{slow} slow orders");
        assert_eq!(g.events(), events);
    }
}
