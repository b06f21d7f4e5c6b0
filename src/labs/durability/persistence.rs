//! Persistence (seed 003's "periodic snapshots to disk"): a producer pushes jobs to a Redis
//! list at a steady rate, the server is SIGKILLed at a moment drawn per run, and restarted on
//! its own files. Which acknowledged jobs come back depends on the persistence mode — none,
//! RDB snapshots, AOF `everysec`, AOF `always` — and each mode has a price in push rate.
//!
//! One run, on a redis-server of its own whose data dir is on a real disk (fsync on tmpfs
//! costs nothing, so the price would not show):
//!
//! 1. the push rate of the mode: one producer, then several at once, each for `throughput_ms`;
//! 2. t=0: the producer pushes `job-000001`, `job-000002`, … at `rate_per_s` (RPUSH, one round
//!    trip each) while INFO persistence is sampled every 100 ms;
//! 3. at the run's kill moment the server's process group gets SIGKILL (a snapshot child dies
//!    with it, as it would with the machine); the producer stops at its first error;
//! 4. redis-server starts again on the same dir; LRANGE says what came back.

use crate::checker::{health::health, RunVerdict};
use crate::error::{Context, Error};
use crate::labs::durability::checker::{durability, Durability, JobRanges};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
};
use crate::lang::{pick, Lang};
use crate::list_queue::events::ListEvent;
use crate::list_queue::{job_id, job_number, numbered_job, ListJob};
use crate::service::{Backend, NodeSpec, RedisNode, RunDir};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use rand::Rng;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// `kind = "persistence"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PersistenceSpec {
    pub mode: PersistMode,
    /// The steady producer's rate (not time-scaled: it is a rate).
    #[serde(default = "PersistenceSpec::default_rate")]
    pub rate_per_s: f64,
    /// The kill moment is drawn per run (seeded) in this window, ms after t=0 (time-scaled).
    #[serde(default = "PersistenceSpec::default_kill")]
    pub kill_between_ms: [f64; 2],
    /// How long each push-rate measurement lasts (time-scaled).
    #[serde(default = "PersistenceSpec::default_throughput_ms")]
    pub throughput_ms: f64,
    /// Producers pushing at once in the second push-rate measurement.
    #[serde(default = "PersistenceSpec::default_concurrent")]
    pub concurrent_producers: u32,
    /// Bytes of JSON per job.
    #[serde(default = "PersistenceSpec::default_job_bytes")]
    pub job_bytes: usize,
}

/// How the server keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PersistMode {
    /// `--save "" --appendonly no`.
    None,
    /// Redis's own snapshot schedule, `save 3600 1 300 100 60 10000`: the first snapshot of a
    /// busy server comes after a minute.
    RdbDefaults,
    /// `save 1 1`: a snapshot every second there was a write (the closest a schedule gets).
    Rdb,
    /// `appendonly yes`, `appendfsync everysec`.
    AofEverysec,
    /// `appendonly yes`, `appendfsync always`.
    AofAlways,
}

impl PersistMode {
    /// The redis-server arguments of the mode.
    pub fn args(self) -> Vec<String> {
        let args: &[&str] = match self {
            PersistMode::None => &["--save", "", "--appendonly", "no"],
            PersistMode::RdbDefaults => &["--save", "3600 1 300 100 60 10000", "--appendonly", "no"],
            PersistMode::Rdb => &["--save", "1 1", "--appendonly", "no"],
            PersistMode::AofEverysec => &["--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
            PersistMode::AofAlways => &["--save", "", "--appendonly", "yes", "--appendfsync", "always"],
        };
        args.iter().map(|a| a.to_string()).collect()
    }

    fn describe(self, lang: Lang) -> String {
        match self {
            PersistMode::None => pick(lang, "no persistence", "không lưu xuống đĩa").into(),
            PersistMode::RdbDefaults => pick(
                lang,
                "RDB snapshots on Redis's default schedule (save 3600 1 300 100 60 10000)",
                "snapshot RDB theo lịch mặc định của Redis (save 3600 1 300 100 60 10000)",
            )
            .into(),
            PersistMode::Rdb => pick(
                lang,
                "RDB snapshots every second with a write (save 1 1)",
                "snapshot RDB mỗi giây có ghi (save 1 1)",
            )
            .into(),
            PersistMode::AofEverysec => "AOF, appendfsync everysec".into(),
            PersistMode::AofAlways => "AOF, appendfsync always".into(),
        }
    }

    fn short(self) -> &'static str {
        match self {
            PersistMode::None => "none",
            PersistMode::RdbDefaults => "RDB (defaults)",
            PersistMode::Rdb => "RDB save 1 1",
            PersistMode::AofEverysec => "AOF everysec",
            PersistMode::AofAlways => "AOF always",
        }
    }
}

/// What INFO persistence said, sampled every 100 ms before the kill.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PersistSample {
    /// When, in ms after t=0.
    pub at_ms: f64,
    pub rdb_changes_since_last_save: i64,
    pub rdb_bgsave_in_progress: i64,
    pub aof_pending_bio_fsync: i64,
    pub aof_delayed_fsync: i64,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersistenceObserved {
    /// The filesystem of the server's data dir (`ext4`, `tmpfs`, …).
    pub data_fs: String,
    pub kill_at_ms: f64,
    /// Jobs whose push the server acknowledged before it died.
    pub acked: JobRanges,
    /// Jobs in the restarted server's queue.
    pub held: JobRanges,
    /// The push sent when the server died (no reply).
    pub in_flight: Option<u64>,
    /// The last INFO persistence sample before the kill.
    pub last_sample: Option<PersistSample>,
    /// Push rate with one producer and with `concurrent_producers`, jobs/s.
    pub push_per_s: (f64, f64),
    /// From the restart to the server answering.
    pub restart_ms: f64,
}

impl PersistenceObserved {
    pub fn durability(&self) -> Durability {
        durability(&self.acked.ids(job_id), &[], &self.held.ids(job_id))
    }
}

impl PersistenceSpec {
    fn default_rate() -> f64 {
        5000.0
    }
    fn default_kill() -> [f64; 2] {
        [1500.0, 3500.0]
    }
    fn default_throughput_ms() -> f64 {
        1000.0
    }
    fn default_concurrent() -> u32 {
        8
    }
    fn default_job_bytes() -> usize {
        200
    }
}

/// What a persistence run measured; every figure differs from run to run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PersistenceFacts {
    pub acked: i64,
    pub held_after_restart: i64,
    pub lost_acked: i64,
    pub held_unacked: i64,
    pub kill_at_ms: i64,
    pub push_per_s_one_producer: i64,
    pub push_per_s_concurrent: i64,
    /// From the last INFO persistence sample before the kill, where one was taken.
    pub rdb_changes_since_last_save: Option<i64>,
    pub aof_delayed_fsync: Option<i64>,
}

impl Facts for PersistenceFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = vec![
            FactRow::measured("acked", self.acked),
            FactRow::measured("held_after_restart", self.held_after_restart),
            FactRow::measured("lost_acked", self.lost_acked),
            FactRow::measured("held_unacked", self.held_unacked),
            FactRow::measured("kill_at_ms", self.kill_at_ms),
            FactRow::measured("push_per_s_one_producer", self.push_per_s_one_producer),
            FactRow::measured("push_per_s_concurrent", self.push_per_s_concurrent),
        ];
        rows.extend(self.rdb_changes_since_last_save.map(|n| FactRow::measured("rdb_changes_since_last_save", n)));
        rows.extend(self.aof_delayed_fsync.map(|n| FactRow::measured("aof_delayed_fsync", n)));
        rows
    }
}

impl LabProcedure for PersistenceSpec {
    fn needs(&self) -> crate::labs::Needs {
        crate::labs::Needs {
            not_external: Some("it starts a Redis server of its own (it SIGKILLs and restarts one)"),
            ..Default::default()
        }
    }

    fn validate(&mut self) -> Result<(), String> {
        let [a, b] = self.kill_between_ms;
        if !(a.is_finite() && b.is_finite() && 0.0 < a && a <= b) {
            return Err(format!("setup.kill_between_ms = [{a}, {b}]: use two times 0 < first ≤ second, in ms"));
        }
        if !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0) {
            return Err(format!("setup.rate_per_s = {}: use a rate > 0", self.rate_per_s));
        }
        if self.concurrent_producers == 0 || self.throughput_ms.is_nan() || self.throughput_ms <= 0.0 {
            return Err("setup.concurrent_producers and setup.throughput_ms: use values > 0".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<PersistenceObserved>, Error> {
        let key = format!("{}queue:default", ctx.key_prefix());
        let (dir, spec) = self.node_spec(ctx.services.backend)?;
        let kill_at_ms = ctx.rng().random_range(self.kill_between_ms[0]..=self.kill_between_ms[1]);
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let mut server = ctx.services.start_redis_node(&spec).await?;
        let t0_ns = crate::clock::now_ns();
        let steady = self.until_killed(&mut server, &key, ctx.scale.duration(kill_at_ms), t0_ns, &tx).await?;
        let restarted = std::time::Instant::now();
        server.restart().await?;
        let restart_ms = restarted.elapsed().as_secs_f64() * 1000.0;
        let mut conn = crate::connect::redis(&server.url).await.context("connect to the restarted server")?;
        let held = held_jobs(&mut conn, &key).await?;
        tx.emit(Actor::Runner, ListEvent::ServerRestarted { jobs: held.len() as i64, load_ms: restart_ms }.event());
        server.stop().await;
        let data_fs = dir.as_ref().map_or_else(|| "container".to_string(), |d| fs_name(d.path()));
        drop(tx);
        let mut raw = Vec::new();
        while let Some(ev) = rx.recv().await {
            raw.push(ev);
        }
        // The price of the mode, on a fresh server of its own (the killed one's counters stay
        // about the kill).
        let (rates_dir, rates_spec) = self.node_spec(ctx.services.backend)?;
        let rates_server = ctx.services.start_redis_node(&rates_spec).await?;
        let push_per_s = self.push_rates(&rates_server.url, &key, ctx).await?;
        rates_server.stop().await;
        drop(rates_dir);
        let observed = PersistenceObserved {
            data_fs,
            kill_at_ms: kill_at_ms * ctx.scale.0,
            acked: steady.acked,
            held,
            in_flight: steady.in_flight,
            last_sample: steady.last_sample,
            push_per_s,
            restart_ms,
        };
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed })
    }
}

impl Judge for PersistenceSpec {
    type Observed = PersistenceObserved;
    type Facts = PersistenceFacts;

    fn judge(&self, run: &RunView<'_, PersistenceObserved>) -> RunVerdict {
        health(run.events, run.timed_out).and(run.observed.durability().verdict())
    }

    fn final_state(&self, observed: &PersistenceObserved) -> Vec<FinalItem> {
        crate::labs::durability::checker::acknowledged_jobs(&observed.durability())
    }

    fn facts(&self, run: &RunView<'_, PersistenceObserved>) -> PersistenceFacts {
        let o = run.observed;
        let d = o.durability();
        PersistenceFacts {
            acked: d.acked as i64,
            held_after_restart: d.held as i64,
            lost_acked: d.lost_acked.len() as i64,
            held_unacked: d.held_unacked.len() as i64,
            kill_at_ms: o.kill_at_ms.round() as i64,
            push_per_s_one_producer: o.push_per_s.0.round() as i64,
            push_per_s_concurrent: o.push_per_s.1.round() as i64,
            rdb_changes_since_last_save: o.last_sample.as_ref().map(|s| s.rdb_changes_since_last_save),
            aof_delayed_fsync: o.last_sample.as_ref().map(|s| s.aof_delayed_fsync),
        }
    }
}

impl Present for PersistenceSpec {
    fn describe(&self, lang: Lang) -> String {
        let [a, b] = self.kill_between_ms;
        let rate = self.rate_per_s;
        let mode = self.mode.describe(lang);
        crate::tr!(
            lang,
            "{mode}; a producer pushes {rate} jobs/s (RPUSH); the server is SIGKILLed at a moment drawn between {a} and {b} ms, then restarted on its own files (data dir on disk)",
            "{mode}; producer đẩy {rate} job/s (RPUSH); server bị SIGKILL vào một thời điểm ngẫu nhiên trong khoảng {a}–{b} ms, rồi khởi động lại trên chính file dữ liệu của nó (thư mục dữ liệu trên đĩa)"
        )
    }

    fn approach(&self) -> String {
        self.mode.short().to_string()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(lang, "acknowledged jobs lost in the restart", "job đã được xác nhận bị mất sau khi khởi động lại").into()
    }

    fn notes(&self, run: &RunView<'_, PersistenceObserved>, lang: Lang) -> RunNotes {
        RunNotes { heading: None, after: notes(self, run.observed, lang) }
    }

    fn per_run_lines(&self, runs: &[RunView<'_, PersistenceObserved>], lang: Lang) -> Vec<Line> {
        let cells: Vec<Line> = runs
            .iter()
            .map(|r| {
                let d = r.observed.durability();
                Line(vec![
                    Piece::Count(d.lost_acked.len() as i64),
                    Piece::Text("/".into()),
                    Piece::Count(d.acked as i64),
                    Piece::Text(" @".into()),
                    Piece::Ms(r.observed.kill_at_ms.round() as i64),
                ])
            })
            .collect();
        let label = pick(
            lang,
            "lost / acknowledged @ kill moment, per run",
            "mất / đã xác nhận @ thời điểm kill, theo lần chạy",
        );
        vec![Line::text(format!("{label}: ")).and_line(Line::join(cells, ", "))]
    }

    fn table_row(&self, run: &RunView<'_, PersistenceObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let o = run.observed;
        let d = o.durability();
        let n = self.concurrent_producers;
        Some(vec![
            (pick(lang, "mode", "chế độ").into(), Line::text(self.mode.short())),
            (
                pick(lang, "lost / acknowledged", "mất / đã xác nhận").into(),
                Line(vec![
                    Piece::Count(d.lost_acked.len() as i64),
                    Piece::Text(" / ".into()),
                    Piece::Count(d.acked as i64),
                ]),
            ),
            (
                pick(lang, "pushes/s, 1 producer", "lần đẩy/s, 1 producer").into(),
                Line(vec![Piece::Count(o.push_per_s.0.round() as i64)]),
            ),
            (
                crate::tr!(lang, "pushes/s, {n} producers", "lần đẩy/s, {n} producer"),
                Line(vec![Piece::Count(o.push_per_s.1.round() as i64)]),
            ),
        ])
    }
}

/// What the steady producer left when the server died.
struct Steady {
    acked: JobRanges,
    in_flight: Option<u64>,
    last_sample: Option<PersistSample>,
}

impl PersistenceSpec {
    /// The server's arguments: the mode's, and on the local backend `--dir` on a real disk (a
    /// local node's own dir is on tmpfs, where fsync costs nothing). A container keeps its
    /// files in its own filesystem, which a restart of the container keeps.
    fn node_spec(&self, backend: Backend) -> Result<(Option<RunDir>, NodeSpec), Error> {
        let mut args = self.mode.args();
        let dir = match backend {
            Backend::Local => Some(disk_dir()?),
            Backend::Docker | Backend::External => None,
        };
        if let Some(d) = &dir {
            args.extend(["--dir".to_string(), d.path().display().to_string()]);
        }
        Ok((dir, NodeSpec { args }))
    }

    /// Push rate with one producer, then with `concurrent_producers`, each for `throughput_ms`
    /// on a key of its own that is deleted afterwards.
    async fn push_rates(&self, url: &str, key: &str, ctx: &RunContext<'_>) -> Result<(f64, f64), Error> {
        let window = ctx.scale.duration(self.throughput_ms);
        let mut rates = Vec::new();
        for producers in [1, self.concurrent_producers] {
            let rate_key = format!("{key}:rate{producers}");
            let mut tasks = tokio::task::JoinSet::new();
            for p in 0..producers {
                let mut conn = crate::connect::redis(url).await.context("producer connect")?;
                let (k, bytes) = (rate_key.clone(), self.job_bytes);
                tasks.spawn(async move {
                    let end = tokio::time::Instant::now() + window;
                    let mut n = 0u64;
                    while tokio::time::Instant::now() < end {
                        let job = numbered_job(p as u64 * 1_000_000 + n, bytes, 0).to_json();
                        redis::cmd("RPUSH").arg(&k).arg(job).query_async::<i64>(&mut conn).await.context("RPUSH")?;
                        n += 1;
                    }
                    Ok::<u64, Error>(n)
                });
            }
            let mut pushed = 0;
            while let Some(done) = tasks.join_next().await {
                pushed += done.expect("push task does not panic")?;
            }
            rates.push(pushed as f64 / window.as_secs_f64());
            let mut conn = crate::connect::redis(url).await.context("connect")?;
            redis::cmd("DEL").arg(&rate_key).query_async::<i64>(&mut conn).await.context("DEL")?;
        }
        Ok((rates[0], rates[1]))
    }

    /// From t=0: the steady producer and the INFO sampler, until the kill; then the kill.
    async fn until_killed(
        &self,
        server: &mut RedisNode,
        key: &str,
        kill_after: Duration,
        t0_ns: u64,
        sink: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Steady, Error> {
        let producer = crate::connect::redis(&server.url).await.context("producer connect")?;
        let sampler = crate::connect::redis(&server.url).await.context("sampler connect")?;
        let pushing = tokio::spawn(push_steadily(producer, key.to_string(), self.rate_per_s, self.job_bytes));
        let last = std::sync::Arc::new(std::sync::Mutex::new(None));
        let sampling = tokio::spawn(sample_persistence(sampler, t0_ns, last.clone()));
        tokio::time::sleep(kill_after).await;
        // SIGKILL (locally to the whole process group: a snapshot child must not finish its
        // file after the kill; a container dies with everything in it).
        server.kill().await?;
        sink.emit(Actor::Runner, EventKind::ServerKilled { server: "redis-server".into(), signal: "SIGKILL".into() });
        let (acked, in_flight) = pushing.await.expect("producer task does not panic");
        sampling.abort();
        let last_sample = last.lock().expect("sampler does not panic").clone();
        Ok(Steady { acked: JobRanges::from_numbers(acked), in_flight, last_sample })
    }
}

/// Push job 1, 2, … at `rate` per second (each due at n / rate, not after the previous one)
/// until the first error; the acknowledged job numbers and the one in flight at the error.
async fn push_steadily(
    mut conn: MultiplexedConnection,
    key: String,
    rate: f64,
    bytes: usize,
) -> (Vec<u64>, Option<u64>) {
    let start = tokio::time::Instant::now();
    let mut acked = Vec::new();
    let mut n = 0u64;
    loop {
        n += 1;
        tokio::time::sleep_until(start + Duration::from_secs_f64((n - 1) as f64 / rate)).await;
        let job = numbered_job(n, bytes, crate::clock::now_ns() / 1_000_000).to_json();
        match redis::cmd("RPUSH").arg(&key).arg(job).query_async::<i64>(&mut conn).await {
            Ok(_) => acked.push(n),
            Err(_) => return (acked, Some(n)),
        }
    }
}

/// INFO persistence every 100 ms into `last`, until the server is gone or the task aborted.
async fn sample_persistence(
    mut conn: MultiplexedConnection,
    t0_ns: u64,
    last: std::sync::Arc<std::sync::Mutex<Option<PersistSample>>>,
) {
    use crate::redis_info::int;
    while let Ok(text) = crate::redis_info::read(&mut conn, "persistence").await {
        let field = |name: &str| int(&text, name).unwrap_or(0);
        *last.lock().expect("one writer") = Some(PersistSample {
            at_ms: (crate::clock::now_ns().saturating_sub(t0_ns)) as f64 / 1e6,
            rdb_changes_since_last_save: field("rdb_changes_since_last_save"),
            rdb_bgsave_in_progress: field("rdb_bgsave_in_progress"),
            aof_pending_bio_fsync: field("aof_pending_bio_fsync"),
            aof_delayed_fsync: field("aof_delayed_fsync"),
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Job numbers in the queue (LRANGE), from each payload's id.
async fn held_jobs(conn: &mut MultiplexedConnection, key: &str) -> Result<JobRanges, Error> {
    let payloads: Vec<String> =
        redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(conn).await.context("LRANGE")?;
    let numbers = payloads
        .iter()
        .filter_map(|p| ListJob::parse(p).ok().and_then(|j| j.id).and_then(|id| job_number(&id)))
        .collect();
    Ok(JobRanges::from_numbers(numbers))
}

/// A dir for the server's files on a real disk: `$ORDLAB_DISK_TMPDIR`, else the system temp
/// dir; in the run's registry, so a SIGKILLed run's dir is reclaimed by the next run.
fn disk_dir() -> Result<RunDir, Error> {
    let root = std::env::var_os("ORDLAB_DISK_TMPDIR").map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    Ok(RunDir::new_in(&root, "ordlab-persist-")?)
}

/// The filesystem type of `path`, by name where known.
fn fs_name(path: &Path) -> String {
    use nix::sys::statfs::{
        statfs, BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC,
    };
    let Ok(fs) = statfs(path) else { return "unknown".into() };
    let t = fs.filesystem_type();
    [
        (EXT4_SUPER_MAGIC, "ext4"),
        (TMPFS_MAGIC, "tmpfs"),
        (XFS_SUPER_MAGIC, "xfs"),
        (BTRFS_SUPER_MAGIC, "btrfs"),
        (OVERLAYFS_SUPER_MAGIC, "overlayfs"),
    ]
    .iter()
    .find(|(magic, _)| *magic == t)
    .map(|(_, name)| name.to_string())
    .unwrap_or_else(|| format!("{:#x}", t.0))
}

/// The run's lines after its timeline: the data dir, what came back, the last INFO sample and
/// the price of the mode.
fn notes(spec: &PersistenceSpec, o: &PersistenceObserved, lang: Lang) -> Vec<Line> {
    let d = o.durability();
    let mut lines = Vec::new();
    // Only a warning: on a real disk there is nothing to say (and a snapshot stays the same).
    if o.data_fs == "tmpfs" {
        lines.push(Line::text(pick(
            lang,
            "data dir on tmpfs: fsync costs nothing here, the push rates are not a disk's",
            "thư mục dữ liệu trên tmpfs: fsync ở đây không tốn gì, tốc độ đẩy không phải của đĩa thật",
        )));
    }
    let (ack, held, lost) = (d.acked as i64, d.held as i64, d.lost_acked.len() as i64);
    lines.push(Line(vec![
        Piece::Text(pick(lang, "acknowledged before the kill: ", "đã xác nhận trước khi kill: ").into()),
        Piece::Count(ack),
        Piece::Text(pick(lang, "; back after the restart: ", "; còn lại sau khi khởi động lại: ").into()),
        Piece::Count(held),
        Piece::Text(pick(lang, " → acknowledged and lost: ", " → đã xác nhận mà bị mất: ").into()),
        Piece::Count(lost),
    ]));
    let due = (o.kill_at_ms * spec.rate_per_s / 1000.0).floor() as i64 + 1;
    lines.push(Line(vec![
        Piece::Text(
            pick(
                lang,
                "pushes acknowledged / due by the kill at the steady rate: ",
                "lần đẩy được xác nhận / đến hạn trước khi kill theo tốc độ đều: ",
            )
            .into(),
        ),
        Piece::Count(ack),
        Piece::Text(" / ".into()),
        Piece::Count(due),
    ]));
    lines.push(
        Line::text(pick(lang, "held though never acknowledged (the reply died with the server; a retrying producer would push it twice): ", "có trong hàng đợi dù chưa được xác nhận (reply mất cùng server; producer retry sẽ đẩy hai lần): "))
            .and(Piece::Count(d.held_unacked.len() as i64)),
    );
    if let Some(s) = &o.last_sample {
        lines.push(Line(vec![
            Piece::Text(
                pick(lang, "last INFO persistence before the kill, t=", "INFO persistence cuối trước khi kill, t=")
                    .into(),
            ),
            Piece::Ms(s.at_ms.round() as i64),
            Piece::Text(": rdb_changes_since_last_save=".into()),
            Piece::Count(s.rdb_changes_since_last_save),
            Piece::Text(", aof_pending_bio_fsync=".into()),
            Piece::Count(s.aof_pending_bio_fsync),
            Piece::Text(", aof_delayed_fsync=".into()),
            Piece::Count(s.aof_delayed_fsync),
        ]));
    }
    let n = spec.concurrent_producers;
    lines.push(Line(vec![
        Piece::Text(pick(lang, "price of the mode: ", "giá của chế độ: ").into()),
        Piece::Count(o.push_per_s.0.round() as i64),
        Piece::Text(crate::tr!(lang, " pushes/s with 1 producer, ", " lần đẩy/s với 1 producer, ")),
        Piece::Count(o.push_per_s.1.round() as i64),
        Piece::Text(crate::tr!(lang, " with {n} at once", " với {n} producer cùng lúc")),
    ]));
    lines
}
