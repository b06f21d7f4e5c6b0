//! The single-reader ceiling of S3: one fan-out reader process, more and more workers, on a
//! stream filled in advance (the producer is never the limit). Per point the throughput is
//! read from the server (the group's entries read minus its pending ones, over a window after
//! a warm-up), and CPU from `/proc`: the reader process's share of one core and the machine's
//! share of all. A point is reader-bound when the reader process saturates its core; adding
//! workers then adds nothing. Handlers are the lab's job times without the database write
//! (`wait`: an external call, no local resource), or nothing at all (`ack-only`: what the
//! reader alone dispatches). The per-entry timeline is off (a line costs more than the
//! hand-over it would record).

use crate::checker::limit::{classify, CpuReading, Limit};
use crate::checker::{health::health, RunVerdict};
use crate::cpu_time as cpu;
use crate::error::{Context as _, Error};
use crate::orders::HandlerWork;
use crate::handler::order::fanout::Fanout;
use crate::handler::order::Strategy;
use crate::labs::load::generate::GenerateSpec;
use crate::labs::order_stream as stream;
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunOutcome, RunView,
};
use crate::lang::{pick, Lang};
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::consumer::{ConsumerConfig, HandlerMode};
use crate::roles::RoleConfig;
use crate::stats::quantile;
use crate::timeline::{Actor, RawEvent};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// `kind = "reader-ceiling"` (a variant of `load`: its `generate` is the workload).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderCeilingSpec {
    pub generate: GenerateSpec,
    /// One reader process (the point of the lab).
    #[serde(default = "stream::one")]
    pub consumers: u32,
    /// `fanout`: its `read_count` and `max_in_flight` apply; `workers` is swept.
    #[serde(default)]
    pub strategy: Strategy,
    pub ceiling: CeilingPlan,
}

/// `ceiling = { … }`: the workers to try per handler kind, the window and warm-up of each
/// point, and how many entries to fill the stream with.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingPlan {
    pub workers: Vec<u32>,
    #[serde(default = "CeilingPlan::default_handlers")]
    pub handlers: Vec<HandlerMode>,
    #[serde(default = "CeilingPlan::default_window")]
    pub window_ms: f64,
    #[serde(default = "CeilingPlan::default_warmup")]
    pub warmup_ms: f64,
    #[serde(default = "CeilingPlan::default_entries")]
    pub entries: u32,
}

impl CeilingPlan {
    fn default_handlers() -> Vec<HandlerMode> {
        vec![HandlerMode::Wait, HandlerMode::AckOnly]
    }
    fn default_window() -> f64 {
        1000.0
    }
    fn default_warmup() -> f64 {
        300.0
    }
    fn default_entries() -> u32 {
        100_000
    }
}

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CeilingPoint {
    pub handler: HandlerMode,
    pub workers: u32,
    /// Entries acknowledged per second over the window (from the server).
    pub events_per_s: f64,
    /// Workers × the rate of the series' fewest workers, scaled: what the handlers alone would
    /// allow. None for `ack-only` (no handler time to scale).
    pub ideal_per_s: Option<f64>,
    pub cpu: CpuReading,
    /// The reader's CPU time per entry acknowledged, in µs.
    pub reader_cpu_us_per_entry: f64,
    /// The stream ran out during the window: the rate is a lower bound.
    pub ran_dry: bool,
    pub limit: Limit,
}

/// What the sweep measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CeilingObserved {
    pub points: Vec<CeilingPoint>,
}

impl CeilingObserved {
    /// The reader's CPU per entry when it does nothing else (median of the ack-only points).
    pub fn reader_cpu_us_per_entry(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .points
            .iter()
            .filter(|p| p.handler == HandlerMode::AckOnly)
            .map(|p| p.reader_cpu_us_per_entry)
            .collect();
        quantile(&v, 0.5)
    }

    /// The first point of a handler kind where the reader is the limit.
    pub fn reader_bound_from(&self, handler: HandlerMode) -> Option<&CeilingPoint> {
        self.points.iter().find(|p| p.handler == handler && p.limit == Limit::Reader)
    }
}

impl ReaderCeilingSpec {
    fn options(&self) -> Fanout {
        self.strategy.spec::<Fanout>().cloned().unwrap_or_default()
    }

    fn work(&self) -> HandlerWork {
        HandlerWork::new(&BTreeMap::new(), &self.generate.events())
    }

    /// One point: a reader with `workers` workers on its own group from the stream's start.
    async fn point(
        &self,
        ctx: &mut RunContext<'_>,
        stream: &str,
        handler: HandlerMode,
        workers: u32,
    ) -> Result<(CeilingPoint, Vec<RawEvent>), Error> {
        let group = format!("ceiling-{}-{workers}", handler_name(handler));
        redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(stream)
            .arg(&group)
            .arg("0")
            .query_async::<()>(&mut ctx.redis)
            .await
            .context("XGROUP CREATE")?;
        let options = Fanout { workers, max_in_flight: Some((16 * workers).max(100)), ..self.options() };
        let cfg = ConsumerConfig {
            env: ctx.role_env(1),
            index: 1,
            stream: stream.to_string(),
            group: group.clone(),
            client_name: ctx.client_name(Actor::Consumer(1)),
            strategy: Strategy::Fanout(options),
            work: self.work(),
            faults: Vec::new(),
            follow_primary: Vec::new(),
            handler,
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let role = ctx.spawn(&RoleConfig::of(&cfg.clone()), tx)?;
        let mut conn = ctx.redis.clone();
        wait_for_client(&mut conn, &cfg.client_name, ClientState::Connected, &role).await?;
        ctx.scale.sleep(self.ceiling.warmup_ms).await;
        let a = Sample::take(&mut conn, stream, &group, role.pid()).await?;
        ctx.scale.sleep(self.ceiling.window_ms).await;
        let b = Sample::take(&mut conn, stream, &group, role.pid()).await?;
        role.stop().await;
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        Ok((b.since(&a, handler, workers), raw))
    }
}

/// What the server and `/proc` say at one moment.
struct Sample {
    at_ns: u64,
    acked: i64,
    /// Entries not yet read by the group.
    lag: i64,
    reader_cpu_s: f64,
    machine: (u64, u64),
}

impl Sample {
    async fn take(
        conn: &mut MultiplexedConnection,
        stream: &str,
        group: &str,
        pid: Option<u32>,
    ) -> Result<Sample, Error> {
        let (read, pending, lag) = crate::streams::group_progress(conn, stream, group).await?;
        Ok(Sample {
            at_ns: crate::clock::now_ns(),
            acked: read - pending,
            lag,
            reader_cpu_s: pid.and_then(cpu::process_seconds).unwrap_or(0.0),
            machine: cpu::machine().unwrap_or((0, 0)),
        })
    }

    /// The point measured between `earlier` and this sample.
    fn since(&self, earlier: &Sample, handler: HandlerMode, workers: u32) -> CeilingPoint {
        let secs = (self.at_ns - earlier.at_ns) as f64 / 1e9;
        let acked = (self.acked - earlier.acked).max(0) as f64;
        let reader = self.reader_cpu_s - earlier.reader_cpu_s;
        let (total, idle) =
            (self.machine.0.saturating_sub(earlier.machine.0), self.machine.1.saturating_sub(earlier.machine.1));
        let machine_pct = if total > 0 { 100.0 * (1.0 - idle as f64 / total as f64) } else { 0.0 };
        let cpu = CpuReading { reader_pct: 100.0 * reader / secs, redis_pct: None, machine_pct };
        CeilingPoint {
            handler,
            workers,
            events_per_s: acked / secs,
            ideal_per_s: None,
            cpu,
            reader_cpu_us_per_entry: if acked > 0.0 { reader * 1e6 / acked } else { 0.0 },
            ran_dry: self.lag == 0,
            limit: classify(&cpu),
        }
    }
}

fn handler_name(h: HandlerMode) -> &'static str {
    match h {
        HandlerMode::Strategy => "lab",
        HandlerMode::Wait => "wait",
        HandlerMode::AckOnly => "ack-only",
    }
}

/// Fill `stream` with `n` entries: the workload's events, over and over.
async fn fill(
    conn: &mut MultiplexedConnection,
    stream: &str,
    events: &[crate::orders::EventSpec],
    n: u32,
) -> Result<(), Error> {
    let mut pipe = redis::pipe();
    for (i, e) in events.iter().cycle().take(n as usize).enumerate() {
        pipe.add_command(crate::streams::xadd(stream, &e.job())).ignore();
        if (i + 1) % 1000 == 0 || i + 1 == n as usize {
            pipe.query_async::<()>(conn).await.context("XADD (fill)")?;
            pipe = redis::pipe();
        }
    }
    Ok(())
}

/// The ideal of each point: workers × the rate of its series' fewest workers, scaled.
fn with_ideals(mut points: Vec<CeilingPoint>) -> Vec<CeilingPoint> {
    let base: BTreeMap<&'static str, (u32, f64)> = points.iter().fold(BTreeMap::new(), |mut m, p| {
        let e = m.entry(handler_name(p.handler)).or_insert((p.workers, p.events_per_s));
        if p.workers < e.0 {
            *e = (p.workers, p.events_per_s);
        }
        m
    });
    for p in &mut points {
        if p.handler == HandlerMode::Wait {
            p.ideal_per_s = base.get(handler_name(p.handler)).map(|(w, rate)| rate * p.workers as f64 / *w as f64);
        }
    }
    points
}

/// What a reader-ceiling run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CeilingFacts {
    /// Worker counts measured.
    pub points: i64,
    /// The reader's CPU time per entry, where it was measured.
    pub reader_cpu_ns_per_entry: Option<i64>,
    /// The best rate with handlers that only acknowledge.
    pub ack_only_max_per_s: i64,
}

impl Facts for CeilingFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = vec![FactRow::stable("points", self.points)];
        rows.extend(self.reader_cpu_ns_per_entry.map(|n| FactRow::measured("reader_cpu_ns_per_entry", n)));
        rows.push(FactRow::measured("ack_only_max_per_s", self.ack_only_max_per_s));
        rows
    }
}

impl LabProcedure for ReaderCeilingSpec {
    fn validate(&mut self) -> Result<(), String> {
        if self.consumers != 1 {
            return Err(format!("setup.consumers = {}: the reader ceiling is one reader; use 1", self.consumers));
        }
        if self.strategy.spec::<Fanout>().is_none() {
            return Err(
                "setup.strategy: the reader ceiling measures the fan-out reader; use strategy = \"fanout\"".into()
            );
        }
        let c = &self.ceiling;
        if c.workers.is_empty()
            || c.workers.contains(&0)
            || c.handlers.is_empty()
            || c.window_ms <= 0.0
            || c.entries == 0
        {
            return Err("setup.ceiling: use workers ≥ 1 (at least one), a handler, window_ms > 0, entries ≥ 1".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<CeilingObserved>, Error> {
        let stream = format!("{}ceiling", ctx.key_prefix());
        let mut conn = ctx.redis.clone();
        fill(&mut conn, &stream, &self.generate.events(), self.ceiling.entries).await?;
        let t0_ns = crate::clock::now_ns();
        let (mut points, mut raw) = (Vec::new(), Vec::new());
        for &handler in &self.ceiling.handlers {
            for &workers in &self.ceiling.workers {
                let (point, events) = self.point(ctx, &stream, handler, workers).await?;
                points.push(point);
                raw.extend(events);
            }
        }
        ctx.delete_run_keys().await?;
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed: CeilingObserved { points: with_ideals(points) } })
    }
}

impl Judge for ReaderCeilingSpec {
    type Observed = CeilingObserved;
    type Facts = CeilingFacts;

    fn judge(&self, run: &RunView<'_, CeilingObserved>) -> RunVerdict {
        health(run.events, run.timed_out)
    }

    fn final_state(&self, _observed: &CeilingObserved) -> Vec<FinalItem> {
        Vec::new()
    }

    fn facts(&self, run: &RunView<'_, CeilingObserved>) -> CeilingFacts {
        let o = run.observed;
        let best =
            o.points.iter().filter(|p| p.handler == HandlerMode::AckOnly).map(|p| p.events_per_s).fold(0.0, f64::max);
        CeilingFacts {
            points: o.points.len() as i64,
            reader_cpu_ns_per_entry: o.reader_cpu_us_per_entry().map(|us| (us * 1000.0).round() as i64),
            ack_only_max_per_s: best.round() as i64,
        }
    }
}

impl Present for ReaderCeilingSpec {
    fn describe(&self, lang: Lang) -> String {
        let c = &self.ceiling;
        let workers: Vec<String> = c.workers.iter().map(u32::to_string).collect();
        let (w, n, warm, win) = (workers.join(", "), c.entries, c.warmup_ms, c.window_ms);
        crate::tr!(
            lang,
            "one fan-out reader process, workers {w}; handlers: the lab's job times without the database write (wait), and nothing but XACK (ack only); a stream filled with {n} entries beforehand; per point {warm} ms warm-up, then {win} ms measured from the server; per-entry timeline off",
            "một process reader fan-out, số worker {w}; handler: thời gian job của lab, không ghi DB (wait), và chỉ XACK (ack only); stream nạp sẵn {n} entry; mỗi điểm khởi động {warm} ms rồi đo {win} ms từ server; tắt timeline từng entry"
        )
    }

    fn approach(&self) -> String {
        "fan-out reader ceiling (S3)".into()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(lang, "a point that could not be measured", "điểm đo không lấy được").into()
    }

    fn per_run_lines(&self, runs: &[RunView<'_, CeilingObserved>], lang: Lang) -> Vec<Line> {
        let Some(run) = runs.first() else { return Vec::new() };
        let o = run.observed;
        let mut lines = Vec::new();
        for p in &o.points {
            let n = |x: f64| Piece::Count(x.round() as i64);
            let ideal = p.ideal_per_s.map_or(Line::default(), |i| {
                Line::text(pick(lang, " (ideal ", " (lý tưởng ")).and(n(i)).and_text("/s)")
            });
            let dry = if p.ran_dry { pick(lang, " (ran dry: at least)", " (hết entry: ít nhất)") } else { "" };
            lines.push(
                Line::text(format!("{:<8} W={:<4} ", handler_name(p.handler), p.workers))
                    .and(n(p.events_per_s))
                    .and_text("/s")
                    .and_line(ideal)
                    .and_text(pick(lang, " · reader CPU ", " · CPU reader "))
                    .and(n(p.cpu.reader_pct))
                    .and_text(pick(lang, " % of a core · machine ", " % một core · máy "))
                    .and(n(p.cpu.machine_pct))
                    .and_text(pick(lang, " % → limit: ", " % → giới hạn: "))
                    .and(Piece::Measured(format!("{}{dry}", limit_word(p.limit, lang)))),
            );
        }
        lines.push(conclusion(o, lang));
        lines
    }
}

fn limit_word(l: Limit, lang: Lang) -> &'static str {
    match l {
        Limit::Handlers => pick(lang, "handlers", "handler"),
        Limit::Reader => pick(lang, "READER", "READER"),
        Limit::Redis => "Redis",
        Limit::Machine => pick(lang, "machine", "máy"),
    }
}

/// Where the reader, not the workers, became the limit (or that it never did here).
fn conclusion(o: &CeilingObserved, lang: Lang) -> Line {
    let us = o.reader_cpu_us_per_entry().unwrap_or(0.0);
    let per_core = if us > 0.0 { 1e6 / us } else { 0.0 };
    let n = |x: f64| Piece::Count(x.round() as i64);
    let head = match o.reader_bound_from(HandlerMode::Wait) {
        Some(p) => Line::text("→ ")
            .and(Piece::Measured(crate::tr!(
                lang,
                "the reader is the limit from {} workers on",
                "reader là giới hạn từ {} worker trở lên",
                p.workers
            )))
            .and_text(" (")
            .and(n(p.events_per_s))
            .and_text(pick(lang, " events/s); ", " event/s); ")),
        None => Line::text("→ ")
            .and(Piece::Measured(
                pick(
                    lang,
                    "the reader was not the limit at any worker count tried here",
                    "reader chưa là giới hạn ở số worker nào đã thử",
                )
                .into(),
            ))
            .and_text("; "),
    };
    head.and_text(pick(lang, "alone it needs ", "riêng nó cần "))
        .and(Piece::Count((us * 1000.0).round() as i64))
        .and_text(pick(
            lang,
            " ns of CPU per entry (read, parse, route, hand over, account, XACK): one core ≈ ",
            " ns CPU mỗi entry (đọc, parse, định tuyến, giao, đếm, XACK): một core ≈ ",
        ))
        .and(n(per_core))
        .and_text(pick(lang, " entries/s", " entry/s"))
}

#[cfg(test)]
mod tests {
    use crate::labs::load::reader_ceiling::*;

    fn point(handler: HandlerMode, workers: u32, rate: f64) -> CeilingPoint {
        let cpu = CpuReading { reader_pct: 10.0, redis_pct: None, machine_pct: 20.0 };
        CeilingPoint {
            handler,
            workers,
            events_per_s: rate,
            ideal_per_s: None,
            cpu,
            reader_cpu_us_per_entry: 8.0,
            ran_dry: false,
            limit: Limit::Handlers,
        }
    }

    #[test]
    fn the_ideal_scales_the_fewest_workers_rate() {
        let pts = with_ideals(vec![
            point(HandlerMode::Wait, 1, 250.0),
            point(HandlerMode::Wait, 4, 900.0),
            point(HandlerMode::AckOnly, 4, 30_000.0),
        ]);
        assert_eq!(pts[1].ideal_per_s, Some(1000.0));
        assert_eq!(pts[2].ideal_per_s, None);
    }
}
