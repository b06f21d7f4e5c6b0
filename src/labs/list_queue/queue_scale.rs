//! Do more worker processes make a Redis queue faster? Only until something else is full: the
//! handlers' own time, the round trips each worker waits for, the Redis server's one thread,
//! or the machine's cores — and the lab reads the CPU of each beside the rate to say which.
//!
//! Seed 003 ends by saying more worker processes (on more servers) scale its list queue "very
//! easily"; `cluster` takes up the servers, this lab the processes. One point: a queue filled
//! beforehand (so the producer is never the limit), N worker processes started on it, a
//! warm-up, then a window measured from the server — jobs finished (a list: what left the
//! queue and the processing list; a stream: the group's entries read minus its pending ones)
//! and the server's main-thread CPU (`INFO cpu`) — and from `/proc`, the workers' CPU and the
//! machine's. Each worker takes one job at a time as the seed's does (a list: BLMOVE into the
//! processing list, the handler, LREM; a stream: XREADGROUP, the handler, XACK), with a
//! handler that does nothing or one that takes a fixed time. The per-job timeline is off: a
//! line per job would cost more than the job.

mod charts;

use crate::chart::Chart;
use crate::checker::limit::{classify_at, CpuReading, Limit, CONTENDED_MACHINE_PCT};
use crate::checker::{health::health, RunVerdict, Verdict};
use crate::cpu_time;
use crate::error::{Context as _, Error};
use crate::labs::list_queue::scale_worker::{QueueKind, ScaleWorkerConfig, JOB_FIELD};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunOutcome, RunView, VariantRuns,
};
use crate::lang::{pick, Lang};
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::cluster_worker::QueuedJob;
use crate::roles::{RoleConfig, RoleProcess};
use crate::stats::quantile;
use crate::timeline::{Actor, Job, RawEvent};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// `kind = "queue-scale"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueScaleSpec {
    pub queue: QueueKind,
    /// Worker processes per point, in increasing order (`[1, 2, 4, 8]`).
    pub workers: Vec<u32>,
    /// Handler work per job, ms before `--time-scale` (0: the handler only parses the job).
    #[serde(default)]
    pub cost_ms: f64,
    /// Entries per XREADGROUP (a stream only; a list takes one job per BLMOVE).
    #[serde(default = "one")]
    pub read_count: u32,
    /// Jobs in the queue when a point starts: enough that it never runs dry in the window.
    #[serde(default = "default_jobs")]
    pub jobs: u32,
    #[serde(default = "default_warmup")]
    pub warmup_ms: f64,
    #[serde(default = "default_window")]
    pub window_ms: f64,
}

fn one() -> u32 {
    1
}
fn default_jobs() -> u32 {
    200_000
}
fn default_warmup() -> f64 {
    300.0
}
fn default_window() -> f64 {
    1000.0
}

/// One point: what the server and `/proc` said over its window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint {
    pub workers: u32,
    /// Jobs finished in the window.
    pub jobs: i64,
    pub window_us: i64,
    /// The Redis server's main-thread CPU over the window.
    pub redis_cpu_us: i64,
    /// The worker processes' CPU over the window, together.
    pub workers_cpu_us: i64,
    /// The machine's busy share of all its cores over the window, in %.
    pub machine_pct: f64,
    /// The queue ran out during the window: the rate is a lower bound.
    pub ran_dry: bool,
}

impl ScalePoint {
    pub fn jobs_per_s(&self) -> f64 {
        self.jobs as f64 * 1e6 / self.window_us.max(1) as f64
    }

    /// The server's main thread, in % of one core.
    pub fn redis_pct(&self) -> f64 {
        100.0 * self.redis_cpu_us as f64 / self.window_us.max(1) as f64
    }

    /// The worker processes together, in % of one core.
    pub fn workers_pct(&self) -> f64 {
        100.0 * self.workers_cpu_us as f64 / self.window_us.max(1) as f64
    }

    /// The server's main-thread CPU per job, µs.
    pub fn redis_us_per_job(&self) -> Option<f64> {
        (self.jobs > 0).then(|| self.redis_cpu_us as f64 / self.jobs as f64)
    }
}

/// What one run measured: a point per worker count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueScaleObserved {
    /// The machine's cores (what "the machine is full" means).
    pub cores: u32,
    pub points: Vec<ScalePoint>,
}

/// A worker count over every run of a variant: medians, and the rate's spread.
#[derive(Clone, Debug, PartialEq)]
pub struct PointSummary {
    pub workers: u32,
    pub jobs_per_s: f64,
    pub min_jobs_per_s: f64,
    pub max_jobs_per_s: f64,
    pub redis_pct: f64,
    pub workers_pct: f64,
    pub machine_pct: f64,
    pub redis_us_per_job: Option<f64>,
    pub ran_dry: bool,
    pub limit: Limit,
}

/// Medians per worker count over the runs (a run's points are in the spec's order).
pub fn summarize(runs: &[&QueueScaleObserved]) -> Vec<PointSummary> {
    let Some(first) = runs.first() else { return Vec::new() };
    first
        .points
        .iter()
        .map(|p| {
            let same: Vec<&ScalePoint> =
                runs.iter().filter_map(|r| r.points.iter().find(|q| q.workers == p.workers)).collect();
            let median = |f: &dyn Fn(&ScalePoint) -> f64| {
                quantile(&same.iter().map(|q| f(q)).collect::<Vec<_>>(), 0.5).unwrap_or(0.0)
            };
            let rates: Vec<f64> = same.iter().map(|q| q.jobs_per_s()).collect();
            let cpu = CpuReading {
                reader_pct: 0.0,
                redis_pct: Some(median(&|q| q.redis_pct())),
                machine_pct: median(&|q| q.machine_pct),
            };
            let per_job: Vec<f64> = same.iter().filter_map(|q| q.redis_us_per_job()).collect();
            PointSummary {
                workers: p.workers,
                jobs_per_s: median(&|q| q.jobs_per_s()),
                min_jobs_per_s: rates.iter().copied().fold(f64::MAX, f64::min),
                max_jobs_per_s: rates.iter().copied().fold(0.0, f64::max),
                redis_pct: median(&|q| q.redis_pct()),
                workers_pct: median(&|q| q.workers_pct()),
                machine_pct: cpu.machine_pct,
                redis_us_per_job: quantile(&per_job, 0.5),
                ran_dry: same.iter().any(|q| q.ran_dry),
                limit: classify_at(&cpu, CONTENDED_MACHINE_PCT),
            }
        })
        .collect()
}

/// Where adding workers stopped helping: the first step that gave less than a quarter of the
/// gain the added workers would give if nothing else were full (doubling: under ×1.25).
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    pub from: u32,
    pub to: u32,
    /// Rate at `to` over rate at `from`.
    pub gain: f64,
    /// The limit at `to`.
    pub limit: Limit,
}

pub fn knee(points: &[PointSummary]) -> Option<Knee> {
    points.windows(2).find_map(|w| {
        let (a, b) = (&w[0], &w[1]);
        let ideal = b.workers as f64 / a.workers as f64;
        let gain = if a.jobs_per_s > 0.0 { b.jobs_per_s / a.jobs_per_s } else { 0.0 };
        (gain < 1.0 + 0.25 * (ideal - 1.0)).then_some(Knee { from: a.workers, to: b.workers, gain, limit: b.limit })
    })
}

/// The point with the most jobs per second: where the server's per-job cost is least blurred
/// by its housekeeping.
pub fn busiest(points: &[PointSummary]) -> Option<&PointSummary> {
    points.iter().max_by(|a, b| a.jobs_per_s.total_cmp(&b.jobs_per_s))
}

/// The keys of one point.
struct PointKeys {
    queue: String,
    processing: String,
    group: String,
}

/// What the server and `/proc` say at one moment.
struct Sample {
    at_ns: u64,
    /// Jobs in the queue (or the group's lag) and jobs finished so far.
    left: i64,
    done: i64,
    redis_cpu_us: i64,
    workers_cpu_s: f64,
    machine: (u64, u64),
}

impl QueueScaleSpec {
    /// The jobs of a point, as the seed's JSON with a working id.
    fn payloads(&self) -> impl Iterator<Item = String> {
        (1..=self.jobs as i64)
            .map(|n| QueuedJob { id: format!("job-{n:06}"), job: Job::new(n, "created", 1) }.payload())
    }

    /// The keys of the point with `n` workers: a list of its own (taking a job removes it), or
    /// the run's one stream with a consumer group of its own (reading one does not).
    fn keys(&self, ctx: &RunContext<'_>, n: u32) -> PointKeys {
        let prefix = ctx.key_prefix();
        match self.queue {
            QueueKind::List => PointKeys {
                queue: format!("{prefix}w{n}:queue"),
                processing: format!("{prefix}w{n}:processing"),
                group: String::new(),
            },
            QueueKind::Stream => {
                PointKeys { queue: format!("{prefix}stream"), processing: String::new(), group: format!("w{n}") }
            }
        }
    }

    /// Fill a queue with every job, 1000 per command, the first job first out.
    async fn fill(&self, conn: &mut MultiplexedConnection, queue: &str) -> Result<(), Error> {
        let payloads: Vec<String> = self.payloads().collect();
        for chunk in payloads.chunks(1000) {
            match self.queue {
                // LPUSH a b c leaves c b a; BLMOVE … RIGHT takes a first.
                QueueKind::List => {
                    redis::cmd("LPUSH").arg(queue).arg(chunk).query_async::<()>(conn).await.context("LPUSH (fill)")?
                }
                QueueKind::Stream => {
                    let mut pipe = redis::pipe();
                    for p in chunk {
                        pipe.cmd("XADD").arg(queue).arg("*").arg(JOB_FIELD).arg(p).ignore();
                    }
                    pipe.query_async::<()>(conn).await.context("XADD (fill)")?;
                }
            }
        }
        Ok(())
    }

    /// Make the point's queue full: a list filled now; the stream filled for the first point, a
    /// group of the point's own reading it from the start.
    async fn prepare(&self, conn: &mut MultiplexedConnection, keys: &PointKeys, first: bool) -> Result<(), Error> {
        if self.queue == QueueKind::List || first {
            self.fill(conn, &keys.queue).await?;
        }
        if self.queue == QueueKind::Stream {
            let create = redis::cmd("XGROUP").arg("CREATE").arg(&keys.queue).arg(&keys.group).arg("0").clone();
            create.query_async::<()>(conn).await.context("XGROUP CREATE")?;
        }
        Ok(())
    }

    async fn sample(
        &self,
        conn: &mut MultiplexedConnection,
        keys: &PointKeys,
        workers: &[RoleProcess],
    ) -> Result<Sample, Error> {
        let (left, done) = match self.queue {
            QueueKind::List => {
                let (queue, processing): (i64, i64) =
                    redis::pipe().llen(&keys.queue).llen(&keys.processing).query_async(conn).await.context("LLEN")?;
                (queue, self.jobs as i64 - queue - processing)
            }
            QueueKind::Stream => {
                let (read, pending, lag) = crate::streams::group_progress(conn, &keys.queue, &keys.group).await?;
                (lag, read - pending)
            }
        };
        let info = crate::redis_info::read(conn, "cpu").await.context("INFO cpu")?;
        Ok(Sample {
            at_ns: crate::clock::now_ns(),
            left,
            done,
            redis_cpu_us: crate::redis_info::main_thread_cpu_us(&info).unwrap_or(0),
            workers_cpu_s: workers.iter().filter_map(|w| w.pid().and_then(cpu_time::process_seconds)).sum(),
            machine: cpu_time::machine().unwrap_or((0, 0)),
        })
    }

    /// One point: `n` workers on a freshly filled queue, a warm-up, a measured window.
    async fn point(
        &self,
        ctx: &mut RunContext<'_>,
        n: u32,
        first: bool,
        sink: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<ScalePoint, Error> {
        let keys = self.keys(ctx, n);
        let mut conn = ctx.redis.clone();
        self.prepare(&mut conn, &keys, first).await?;
        let mut workers = Vec::new();
        for index in 1..=n {
            let cfg = ScaleWorkerConfig {
                env: ctx.role_env(index),
                index,
                client_name: ctx.client_name(Actor::Worker(index)),
                queue: self.queue,
                key: keys.queue.clone(),
                processing: keys.processing.clone(),
                group: keys.group.clone(),
                read_count: self.read_count,
                cost_ms: self.cost_ms,
            };
            let role = ctx.spawn(&RoleConfig::of(&cfg.clone()), sink.clone())?;
            wait_for_client(&mut conn, &cfg.client_name, ClientState::Connected, &role).await?;
            workers.push(role);
        }
        ctx.scale.sleep(self.warmup_ms).await;
        let a = self.sample(&mut conn, &keys, &workers).await?;
        ctx.scale.sleep(self.window_ms).await;
        let b = self.sample(&mut conn, &keys, &workers).await?;
        for w in workers {
            w.stop().await;
        }
        let (all, idle) = (b.machine.0.saturating_sub(a.machine.0), b.machine.1.saturating_sub(a.machine.1));
        Ok(ScalePoint {
            workers: n,
            jobs: (b.done - a.done).max(0),
            window_us: ((b.at_ns - a.at_ns) / 1000) as i64,
            redis_cpu_us: b.redis_cpu_us - a.redis_cpu_us,
            workers_cpu_us: ((b.workers_cpu_s - a.workers_cpu_s) * 1e6).round() as i64,
            machine_pct: if all > 0 { 100.0 * (1.0 - idle as f64 / all as f64) } else { 0.0 },
            ran_dry: b.left == 0,
        })
    }

    /// `list (BLMOVE + LREM)` or `stream (XREADGROUP COUNT 10 + XACK)`.
    fn queue_phrase(&self) -> String {
        match self.queue {
            QueueKind::List => "list (BLMOVE + LREM)".into(),
            QueueKind::Stream if self.read_count > 1 => format!("stream (XREADGROUP COUNT {} + XACK)", self.read_count),
            QueueKind::Stream => "stream (XREADGROUP + XACK)".into(),
        }
    }

    fn handler_phrase(&self, lang: Lang) -> String {
        if self.cost_ms > 0.0 {
            crate::tr!(lang, "{} ms handlers", "handler {} ms", self.cost_ms)
        } else {
            pick(lang, "handlers that only parse the job", "handler chỉ parse job").into()
        }
    }

    /// What is full at a point; `stalled`: the point is at or past the knee, where more workers
    /// did not help, so waiting on handlers or round trips cannot be the reason.
    fn limit_word(&self, limit: Limit, stalled: bool, cores: u32, lang: Lang) -> String {
        match limit {
            Limit::Handlers if stalled => pick(lang, "nothing measured full", "không thứ gì đo được là đầy").into(),
            Limit::Handlers if self.cost_ms > 0.0 => {
                pick(lang, "the handlers' own time", "thời gian của chính handler").into()
            }
            Limit::Handlers => {
                pick(lang, "the round trips each worker waits for", "các round trip mỗi worker phải chờ").into()
            }
            Limit::Reader => pick(lang, "one worker's core", "core của một worker").into(),
            Limit::Redis => pick(lang, "Redis's one thread", "luồng duy nhất của Redis").into(),
            Limit::Machine => crate::tr!(lang, "the machine's {cores} cores", "{cores} core của máy"),
        }
    }
}

/// What a queue-scale run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueScaleFacts {
    /// Worker counts measured.
    pub points: i64,
    pub peak_jobs_per_s: i64,
    /// The last point's rate over the first's, times 100.
    pub speedup_x100: i64,
    /// Workers from which more stop helping (0: none found).
    pub knee_workers: i64,
    pub redis_ns_per_job_busiest: i64,
    pub max_redis_pct: i64,
}

impl Facts for QueueScaleFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![
            FactRow::stable("points", self.points),
            FactRow::measured("peak_jobs_per_s", self.peak_jobs_per_s),
            FactRow::measured("speedup_x100", self.speedup_x100),
            FactRow::measured("knee_workers", self.knee_workers),
            FactRow::measured("redis_ns_per_job_busiest", self.redis_ns_per_job_busiest),
            FactRow::measured("max_redis_pct", self.max_redis_pct),
        ]
    }
}

impl LabProcedure for QueueScaleSpec {
    fn validate(&mut self) -> Result<(), String> {
        if self.workers.is_empty() || self.workers.contains(&0) || !self.workers.windows(2).all(|w| w[0] < w[1]) {
            return Err("setup.workers: list worker counts ≥ 1 in increasing order, e.g. [1, 2, 4, 8]".into());
        }
        if !self.cost_ms.is_finite() || self.cost_ms < 0.0 {
            return Err(format!("setup.cost_ms = {}: use a handler time ≥ 0 (ms)", self.cost_ms));
        }
        if self.read_count == 0 || (self.read_count > 1 && self.queue == QueueKind::List) {
            return Err(
                "setup.read_count: use ≥ 1, and more than 1 only with queue = \"stream\" (BLMOVE takes one job)".into(),
            );
        }
        if self.jobs == 0
            || self.window_ms.is_nan()
            || self.window_ms <= 0.0
            || self.warmup_ms.is_nan()
            || self.warmup_ms < 0.0
        {
            return Err("setup: use jobs ≥ 1, window_ms > 0 and warmup_ms ≥ 0".into());
        }
        Ok(())
    }

    fn missing(&self, server: &crate::service::ServerInfo) -> Option<String> {
        let version = &server.redis_version;
        match self.queue {
            QueueKind::List => {
                (!server.redis.blmove).then(|| format!("needs Redis ≥ 6.2 (BLMOVE); this server is {version}"))
            }
            QueueKind::Stream => (!crate::service::probe::version_at_least(version, (7, 0)))
                .then(|| format!("needs Redis ≥ 7.0 (XINFO GROUPS entries-read and lag); this server is {version}")),
        }
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<QueueScaleObserved>, Error> {
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0_ns = crate::clock::now_ns();
        let mut points = Vec::new();
        for (i, &n) in self.workers.iter().enumerate() {
            let point = self.point(ctx, n, i == 0, &tx).await;
            if self.queue == QueueKind::List || point.is_err() {
                // A list point's leftovers (megabytes of jobs) go before the next point fills.
                ctx.delete_run_keys().await?;
            }
            points.push(point?);
        }
        ctx.delete_run_keys().await?;
        drop(tx);
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed: QueueScaleObserved { cores, points } })
    }
}

impl Judge for QueueScaleSpec {
    type Observed = QueueScaleObserved;
    type Facts = QueueScaleFacts;

    fn judge(&self, run: &RunView<'_, QueueScaleObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out);
        for p in &run.observed.points {
            if p.jobs == 0 {
                v.add(Verdict::Unknown, format!("W={}: no job finished in the window", p.workers));
            } else if p.ran_dry {
                v.add(
                    Verdict::Unknown,
                    format!("W={}: the queue ran dry in the window; fill more (setup.jobs)", p.workers),
                );
            }
        }
        v
    }

    fn final_state(&self, _observed: &QueueScaleObserved) -> Vec<FinalItem> {
        Vec::new()
    }

    fn facts(&self, run: &RunView<'_, QueueScaleObserved>) -> QueueScaleFacts {
        let o = run.observed;
        let summary = summarize(&[o]);
        let rate = |p: Option<&PointSummary>| p.map_or(0.0, |p| p.jobs_per_s);
        let speedup = if rate(summary.first()) > 0.0 { rate(summary.last()) / rate(summary.first()) } else { 0.0 };
        let per_job = busiest(&summary).and_then(|p| p.redis_us_per_job);
        let peak = o.points.iter().map(ScalePoint::redis_pct).fold(0.0, f64::max);
        QueueScaleFacts {
            points: o.points.len() as i64,
            peak_jobs_per_s: summary.iter().map(|p| p.jobs_per_s).fold(0.0, f64::max).round() as i64,
            speedup_x100: (speedup * 100.0).round() as i64,
            knee_workers: knee(&summary).map_or(0, |k| k.from as i64),
            redis_ns_per_job_busiest: per_job.map_or(0, |us| (us * 1000.0).round() as i64),
            max_redis_pct: peak.round() as i64,
        }
    }
}

impl Present for QueueScaleSpec {
    fn describe(&self, lang: Lang) -> String {
        let workers: Vec<String> = self.workers.iter().map(u32::to_string).collect();
        let (q, w, h, n, warm, win) = (
            self.queue_phrase(),
            workers.join(", "),
            self.handler_phrase(lang),
            self.jobs,
            self.warmup_ms,
            self.window_ms,
        );
        let each = match self.read_count {
            1 => pick(lang, "each one job at a time", "mỗi worker một job một lúc").to_string(),
            k => crate::tr!(lang, "each reading {k} jobs at a time", "mỗi worker đọc {k} job một lần"),
        };
        crate::tr!(
            lang,
            "a {q}; {w} worker processes, {each}; {h}; {n} jobs queued beforehand per point; {warm} ms warm-up, then {win} ms measured from the server (jobs finished, Redis's main-thread CPU) and /proc (the workers' and the machine's CPU); per-job timeline off",
            "{q}; {w} process worker, {each}; {h}; mỗi điểm nạp sẵn {n} job; khởi động {warm} ms rồi đo {win} ms từ server (job xong, CPU luồng chính của Redis) và /proc (CPU của worker và của máy); tắt timeline từng job"
        )
    }

    fn approach(&self) -> String {
        format!("{}, {}", self.queue_phrase(), self.handler_phrase(Lang::En))
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(lang, "a point that could not be measured", "điểm đo không lấy được").into()
    }

    fn per_run_lines(&self, runs: &[RunView<'_, QueueScaleObserved>], lang: Lang) -> Vec<Line> {
        let observed: Vec<&QueueScaleObserved> = runs.iter().map(|r| r.observed).collect();
        let Some(cores) = observed.first().map(|o| o.cores) else { return Vec::new() };
        let summary = summarize(&observed);
        let base = summary.first().map_or(0.0, |p| p.jobs_per_s);
        let n = |x: f64| Piece::Count(x.round() as i64);
        let times = |x: f64| Piece::Measured(format!("×{x:.1}"));
        let stalled_from = knee(&summary).map_or(u32::MAX, |k| k.to);
        let mut lines = vec![Line::text(crate::tr!(
            lang,
            "median of {} runs per worker count (this machine: {cores} cores):",
            "trung vị {} lần chạy cho mỗi số worker (máy này: {cores} core):",
            runs.len()
        ))];
        for p in &summary {
            let speedup = if base > 0.0 { p.jobs_per_s / base } else { 0.0 };
            let dry = if p.ran_dry { pick(lang, " (ran dry: at least)", " (hết job: ít nhất)") } else { "" };
            lines.push(
                Line::text(format!("W={:<3} ", p.workers))
                    .and(n(p.jobs_per_s))
                    .and_text(pick(lang, " jobs/s (", " job/s ("))
                    .and(times(speedup))
                    .and_text(pick(lang, " vs one worker) · Redis ", " so với một worker) · Redis "))
                    .and(n(p.redis_pct))
                    .and_text(pick(lang, " % of its thread · workers ", " % luồng của nó · worker "))
                    .and(n(p.workers_pct))
                    .and_text(pick(lang, " % of a core · machine ", " % một core · máy "))
                    .and(n(p.machine_pct))
                    .and_text(pick(lang, " % → limit: ", " % → giới hạn: "))
                    .and(Piece::Measured(format!(
                        "{}{dry}",
                        self.limit_word(p.limit, p.workers >= stalled_from, cores, lang)
                    ))),
            );
        }
        lines.push(self.conclusion(&summary, cores, lang));
        lines
    }

    fn table_row(&self, run: &RunView<'_, QueueScaleObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let summary = summarize(&[run.observed]);
        let last = summary.last()?;
        let mut cells =
            vec![(pick(lang, "handler ms", "handler ms").to_string(), Line::text(self.cost_ms.to_string()))];
        cells.extend(
            summary
                .iter()
                .map(|p| (format!("W={} jobs/s", p.workers), Line(vec![Piece::Count(p.jobs_per_s.round() as i64)]))),
        );
        cells.push((format!("Redis % W={}", last.workers), Line(vec![Piece::Count(last.redis_pct.round() as i64)])));
        Some(cells)
    }

    fn summary_note(&self, runs: &[RunView<'_, QueueScaleObserved>]) -> Option<String> {
        let observed: Vec<&QueueScaleObserved> = runs.iter().map(|r| r.observed).collect();
        let summary = summarize(&observed);
        let (first, last) = (summary.first()?, summary.last()?);
        let cores = observed.first()?.cores;
        let head = format!(
            "{} → {} workers: {:.0} → {:.0} jobs/s (median of {} runs)",
            first.workers,
            last.workers,
            first.jobs_per_s,
            last.jobs_per_s,
            runs.len()
        );
        Some(match knee(&summary) {
            Some(k) => format!(
                "{head}; stopped helping from {} workers ({})",
                k.from,
                self.limit_word(k.limit, true, cores, Lang::En)
            ),
            None => format!("{head}; every step helped ({})", self.limit_word(last.limit, false, cores, Lang::En)),
        })
    }

    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        charts::compare(variants)
    }
}

impl QueueScaleSpec {
    /// Where adding workers stopped helping and why, and what Redis's thread alone allows.
    fn conclusion(&self, summary: &[PointSummary], cores: u32, lang: Lang) -> Line {
        let n = |x: f64| Piece::Count(x.round() as i64);
        let head = match knee(summary) {
            Some(k) => Line::text("→ ")
                .and(Piece::Measured(crate::tr!(
                    lang,
                    "adding workers stopped helping from {} to {} (×{:.2}): limit {}",
                    "thêm worker hết giúp ích từ {} lên {} (×{:.2}): giới hạn {}",
                    k.from,
                    k.to,
                    k.gain,
                    self.limit_word(k.limit, true, cores, lang)
                )))
                .and_text("; "),
            None => Line::text("→ ")
                .and(Piece::Measured(crate::tr!(
                    lang,
                    "every step of workers helped: limit {}",
                    "mỗi bước thêm worker đều giúp: giới hạn {}",
                    summary.last().map_or(String::new(), |p| self.limit_word(p.limit, false, cores, lang))
                )))
                .and_text("; "),
        };
        let commands = match self.queue {
            QueueKind::List => "BLMOVE + LREM",
            QueueKind::Stream if self.read_count > 1 => {
                pick(lang, "XREADGROUP + XACK, per job", "XREADGROUP + XACK, chia cho mỗi job")
            }
            QueueKind::Stream => "XREADGROUP + XACK",
        };
        let Some(busiest) = busiest(summary) else { return head };
        let us = busiest.redis_us_per_job.unwrap_or(0.0);
        let head = head
            .and_text(crate::tr!(
                lang,
                "at its busiest (W={}) Redis spent ",
                "lúc bận nhất (W={}) Redis tốn ",
                busiest.workers
            ))
            .and(n(us * 1000.0))
            .and_text(crate::tr!(
                lang,
                " ns of its one thread per job ({commands}), ",
                " ns luồng duy nhất của nó cho mỗi job ({commands}), "
            ))
            .and(n(busiest.redis_pct))
            .and_text(pick(lang, " % of a core", " % một core"));
        if busiest.redis_pct < IDLE_REDIS_PCT {
            // Mostly the server's own housekeeping: dividing it by jobs says nothing of a job.
            return head.and_text(": ").and(Piece::Measured(pick(lang, "nearly idle", "gần như rảnh").into()));
        }
        let full = if us > 0.0 { 1e6 / us } else { 0.0 };
        head.and_text(": ").and(Piece::Measured(crate::tr!(
            lang,
            "at that cost its thread alone would be full at ≈ {full:.0} jobs/s",
            "với chi phí đó riêng luồng của nó sẽ đầy ở ≈ {full:.0} job/s"
        )))
    }
}

/// Below this share of a core the server's CPU is mostly its own housekeeping (cron, idle
/// clients), not the jobs.
const IDLE_REDIS_PCT: f64 = 20.0;

#[cfg(test)]
mod tests {
    use crate::labs::list_queue::queue_scale::*;

    /// A point of `workers` workers doing `rate` jobs/s over 1 s, with CPU shares in %.
    pub fn point(workers: u32, rate: i64, redis_pct: i64, machine_pct: f64) -> ScalePoint {
        ScalePoint {
            workers,
            jobs: rate,
            window_us: 1_000_000,
            redis_cpu_us: redis_pct * 10_000,
            workers_cpu_us: 500_000,
            machine_pct,
            ran_dry: false,
        }
    }

    #[test]
    fn medians_over_runs_and_the_limit_from_the_median_cpu() {
        let a = QueueScaleObserved { cores: 2, points: vec![point(1, 100, 10, 20.0), point(2, 190, 95, 60.0)] };
        let b = QueueScaleObserved { cores: 2, points: vec![point(1, 120, 12, 30.0), point(2, 210, 97, 70.0)] };
        let c = QueueScaleObserved { cores: 2, points: vec![point(1, 110, 11, 25.0), point(2, 200, 20, 99.0)] };
        let s = summarize(&[&a, &b, &c]);
        assert_eq!((s[0].jobs_per_s, s[0].min_jobs_per_s, s[0].max_jobs_per_s), (110.0, 100.0, 120.0));
        assert_eq!(s[0].limit, Limit::Handlers);
        // Redis's median 95 % of its thread: Redis is the limit, before the machine's 70 %.
        assert_eq!((s[1].redis_pct, s[1].machine_pct, s[1].limit), (95.0, 70.0, Limit::Redis));
        assert_eq!(s[0].redis_us_per_job, Some(1000.0));
        assert!(summarize(&[]).is_empty());
    }

    #[test]
    fn the_knee_is_the_first_step_with_less_than_a_quarter_of_its_ideal_gain() {
        let o = |pts| QueueScaleObserved { cores: 2, points: pts };
        let linear =
            o(vec![point(1, 100, 5, 10.0), point(2, 200, 10, 20.0), point(4, 390, 20, 40.0), point(8, 760, 40, 80.0)]);
        assert_eq!(knee(&summarize(&[&linear])), None);
        let flat =
            o(vec![point(1, 100, 30, 50.0), point(2, 180, 60, 90.0), point(4, 210, 70, 99.0), point(8, 215, 71, 99.0)]);
        let k = knee(&summarize(&[&flat])).unwrap();
        assert_eq!((k.from, k.to, k.limit), (2, 4, Limit::Machine));
        assert!((k.gain - 210.0 / 180.0).abs() < 1e-9);
        // 1 → 4 workers ideally ×4: ×1.7 is under 1 + 0.25 × 3.
        let wide = o(vec![point(1, 100, 5, 10.0), point(4, 170, 10, 20.0)]);
        assert_eq!(knee(&summarize(&[&wide])).map(|k| k.to), Some(4));
    }

    #[test]
    fn a_point_with_no_job_or_a_dry_queue_cannot_be_judged() {
        let spec: QueueScaleSpec = toml::from_str("queue = \"list\"\nworkers = [1, 2]\n").unwrap();
        let mut dry = point(2, 0, 0, 0.0);
        let view = |o| RunView { run: 1, events: &[], timed_out: false, observed: o };
        let ok = QueueScaleObserved { cores: 2, points: vec![point(1, 100, 5, 10.0)] };
        assert_eq!(spec.judge(&view(&ok)).verdict, Verdict::Right);
        let none = QueueScaleObserved { cores: 2, points: vec![dry.clone()] };
        assert_eq!(spec.judge(&view(&none)).reasons, ["W=2: no job finished in the window"]);
        (dry.jobs, dry.ran_dry) = (50, true);
        let ran_dry = QueueScaleObserved { cores: 2, points: vec![dry] };
        assert_eq!(spec.judge(&view(&ran_dry)).verdict, Verdict::Unknown);
    }

    #[test]
    fn workers_must_increase_and_batches_are_for_streams() {
        let parse = |t: &str| -> QueueScaleSpec { toml::from_str(t).unwrap() };
        assert!(parse("queue = \"list\"\nworkers = [1, 2, 4, 8]\n").validate().is_ok());
        assert!(parse("queue = \"list\"\nworkers = [2, 1]\n").validate().is_err());
        assert!(parse("queue = \"list\"\nworkers = [0, 1]\n").validate().is_err());
        assert!(parse("queue = \"list\"\nworkers = [1]\nread_count = 10\n").validate().is_err());
        assert!(parse("queue = \"stream\"\nworkers = [1]\nread_count = 10\n").validate().is_ok());
        assert!(parse("queue = \"stream\"\nworkers = [1]\ncost_ms = -1\n").validate().is_err());
        assert!(toml::from_str::<QueueScaleSpec>("queue = \"set\"\nworkers = [1]\n").is_err());
    }
}
