//! `ordlab explore`: instead of sampling a race, run a lab under every order of its processes'
//! steps that can matter, on the real servers, and count how many of those orders end wrong.
//! Any order is a short string (`P.C2.P.C1x3`) that replays the same run, every time.
//!
//! Each run of the search is an ordinary run of the lab, judged by the lab's own checkers; only
//! its processes connect through the explorer's gated interposer ([`crate::explore::control`]),
//! so every Redis command and SQL statement waits at the wire until the search
//! ([`crate::explore::search`]) picks it. Steps that touch different keys or rows commute
//! ([`crate::explore::footprint`]); runs that differ only in the
//! order of commuting steps are one class, counted once. The servers are started once; each
//! run resets the lab's keys and rows, as a run of `ordlab run` does.

pub use crate::explore::{Control, Schedule};

use crate::checker::Verdict;
use crate::error::Error;
use crate::explore::dpor::{self, Dpor};
use crate::explore::search::{self, Choice, Pct, Replay, Strategy};
use crate::explore::sleep_sets::SleepSets;
use crate::labs::RunRecord;
use crate::lang::{pick, Lang};
use crate::runner::Runner;
use crate::scenario::{Scenario, Variant};
use crate::service::Services;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// How an exhaustive search leaves out orders that only swap commuting steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Reduction {
    /// Optimal dynamic partial-order reduction (wakeup trees): one run per class.
    #[default]
    Optimal,
    /// Source sets alone: a run can be cut short where every process left is asleep.
    Source,
    /// Depth-first search with sleep sets (what `--preemptions` bounds).
    SleepSets,
}

impl Reduction {
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Optimal => "optimal",
            Reduction::Source => "source-sets",
            Reduction::SleepSets => "sleep-sets",
        }
    }
}

/// How to search.
#[derive(Clone, Debug)]
pub enum Search {
    /// Every class of schedules (up to `preemptions` switches away from a process that could go on).
    Exhaustive { preemptions: Option<u32> },
    /// `schedules` runs of probabilistic concurrency testing, bug depth `depth`.
    Pct { depth: u32, schedules: u32, seed: u64 },
    /// One schedule, exactly.
    Replay(Schedule),
}

#[derive(Clone, Debug)]
pub struct ExploreOptions {
    pub search: Search,
    /// How an exhaustive search without a preemption bound reduces (a bound is sleep sets').
    pub reduction: Reduction,
    /// A hard stop on runs (said in the report when hit).
    pub max_schedules: usize,
    /// A run longer than this is cut (a process that loops without end).
    pub max_steps: usize,
    /// The lab's own random choices (a consumer's seed); the schedule is the explorer's.
    pub seed: u64,
    /// Keep ordlab's own role processes from one run to the next, parked between them
    /// ([`crate::roles::reuse`]); false: every run starts its own, as `ordlab run` does.
    pub reuse_processes: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            search: Search::Exhaustive { preemptions: None },
            reduction: Reduction::Optimal,
            max_schedules: 2000,
            max_steps: 400,
            seed: 1,
            reuse_processes: true,
        }
    }
}

/// One class of schedules: the first schedule found in it and how its run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExploredClass {
    pub schedule: String,
    /// The class's name: its steps in lexicographic normal form.
    pub key: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    /// Each step's command (`C1 XREADGROUP GROUP … >`), in the schedule's order.
    pub steps: Vec<String>,
    /// What became of each event the lab means to deliver (lost, dropped, applied twice), where
    /// the lab delivers events through a queue: a right final state can still have dropped one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fates: Option<crate::checker::fates::FateCounts>,
    /// The judged run (events, final state): what `ordlab check` re-judges.
    pub record: RunRecord,
}

/// What an exploration found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exploration {
    pub explore_version: u32,
    pub lab: String,
    pub variant: String,
    /// `exhaustive`, `exhaustive, at most 2 preemptions`, `pct depth 2, 200 schedules, seed 1`, `replay`.
    pub search: String,
    pub runs: usize,
    /// Runs cut short because every process able to step was asleep (an order already run).
    pub cut_as_repeats: usize,
    /// Runs cut at the preemption bound or the step limit.
    pub cut_at_bound: usize,
    /// Orders the reduction planned that a run could not follow (the process it named could
    /// not step there): a race it took to be reversible was not.
    #[serde(default)]
    pub unfollowed: usize,
    pub classes: Vec<ExploredClass>,
    /// `--max-schedules` stopped the search before it was done.
    pub hit_max_schedules: bool,
    /// Where it stopped there: the share of the search done, estimated from the branches at
    /// each point of the last run taken as equal in size (races found later add branches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered: Option<f64>,
    /// The preemption bound left some schedules out.
    pub bounded: bool,
    /// PCT: the per-run lower bound on finding a bug of its depth, `1/(n·k^(d−1))`.
    pub pct_bound: Option<f64>,
    pub processes: usize,
    /// Role processes of ordlab's own started over all the runs (reused ones count once);
    /// workers from a command line are not counted. Not saved.
    #[serde(skip)]
    pub role_processes_started: usize,
    /// Runs of a Python worker forked from a fork server ([`crate::service::fork_server`]). Not saved.
    #[serde(skip)]
    pub workers_forked: usize,
    pub seconds: f64,
    /// What sampling the same variant showed, from the lab's record in results/, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<Sampled>,
    /// Why the two differ, in the lab's words (its variant's `explored`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast: Option<crate::lang::Words>,
    /// Explored on the lab's smaller `[explore]` set-up, not the sampled one: what it keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smaller_setup: Option<crate::lang::Words>,
}

/// A variant's sampled outcome, as `ordlab run` recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sampled {
    pub wrong: u32,
    pub runs: u32,
    /// Runs in which an event reached a consumer and was never applied.
    #[serde(default)]
    pub dropped: u32,
    pub time_scale: f64,
}

impl Sampled {
    /// The variant's outcome in a lab report (a results record).
    pub fn of(report: &crate::report::LabReport, variant: &str) -> Option<Sampled> {
        let v = report.variants.iter().find(|v| v.id == variant && v.runs > 0)?;
        Some(Sampled { wrong: v.wrong, runs: v.runs, dropped: v.dropped, time_scale: report.environment.time_scale })
    }
}

pub const EXPLORE_VERSION: u32 = 1;

/// Where `x` is saved in `dir`: `explore-<lab>-<variant>.json.gz` (gzip: an exploration keeps
/// every class's run, a few MB of JSON for a large lab).
pub fn path_in(dir: &std::path::Path, x: &Exploration) -> std::path::PathBuf {
    dir.join(format!("explore-{}-{}.json.gz", x.lab, x.variant))
}

/// Save `x` in `dir`; returns its path.
pub fn save(dir: &std::path::Path, x: &Exploration) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write as _;
    let path = path_in(dir, x);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(serde_json::to_string(x).expect("an exploration serializes").as_bytes())?;
    std::fs::write(&path, gz.finish()?)?;
    Ok(path)
}

/// Read a saved exploration (gzip or plain JSON); None when `path` holds something else.
pub fn load(path: &std::path::Path) -> Option<Result<Exploration, String>> {
    let text = crate::report::json::read_text(path).ok()?;
    if !text.trim_start().starts_with("{\"explore_version\"") {
        return None;
    }
    Some(serde_json::from_str(&text).map_err(|e| format!("{}: not an exploration: {e}", path.display())))
}

/// Judge every class's recorded run again with this build's checkers, with no servers: the
/// classes whose verdict changed (`ordlab check` on an exploration's JSON).
pub fn rejudge(x: &Exploration) -> Result<Vec<String>, Error> {
    let lab = crate::catalog::find(&x.lab).map_err(|e| Error::Explore(format!("{}: {e}", x.lab)))?;
    let v =
        lab.variant(&x.variant).ok_or_else(|| Error::Explore(format!("lab {} has no variant {}", x.lab, x.variant)))?;
    let v = v.as_explored();
    let mut changed = Vec::new();
    for c in &x.classes {
        let now = v.procedure.judge(&c.record);
        // A class cut by a retry nothing could end is unknown by the explorer, not the checker.
        let spinning = c.reasons.iter().any(|r| r.contains("retries forever"));
        if now.verdict != c.verdict && !spinning {
            changed.push(format!(
                "{}: saved {:?}, now {:?} ({})",
                c.schedule,
                c.verdict,
                now.verdict,
                now.reasons.join("; ")
            ));
        }
    }
    Ok(changed)
}

impl Exploration {
    /// An exploration of `v` by `search` (its name), nothing found yet.
    fn new(lab: &Scenario, v: &Variant, search: String) -> Exploration {
        Exploration {
            explore_version: EXPLORE_VERSION,
            lab: lab.id.clone(),
            variant: v.id.clone(),
            search,
            runs: 0,
            cut_as_repeats: 0,
            cut_at_bound: 0,
            unfollowed: 0,
            classes: Vec::new(),
            hit_max_schedules: false,
            covered: None,
            bounded: false,
            pct_bound: None,
            processes: 0,
            role_processes_started: 0,
            workers_forked: 0,
            seconds: 0.0,
            sampled: None,
            contrast: v.explored.clone(),
            smaller_setup: v.explore_setup.as_ref().map(|e| e.why.clone()),
        }
    }

    /// Runs per class found (1.00: no run repeated a class or was cut short).
    pub fn runs_per_class(&self) -> f64 {
        self.runs as f64 / self.classes.len().max(1) as f64
    }

    pub fn wrong(&self) -> impl Iterator<Item = &ExploredClass> {
        self.classes.iter().filter(|c| c.verdict == Verdict::Wrong)
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.classes.iter().filter(|c| c.verdict == v).count()
    }

    /// The shortest wrong class (fewest steps, then first found).
    pub fn shortest_wrong(&self) -> Option<&ExploredClass> {
        self.wrong().min_by_key(|c| c.steps.len())
    }
}

/// The search `opts` asks for, and its name in the report.
fn strategy_of(opts: &ExploreOptions) -> (Box<dyn Strategy>, String) {
    match &opts.search {
        Search::Exhaustive { preemptions: None } => match opts.reduction {
            Reduction::Optimal => (Box::new(Dpor::new(dpor::Mode::Optimal)), "exhaustive".into()),
            Reduction::Source => (Box::new(Dpor::new(dpor::Mode::Source)), "exhaustive, source sets".into()),
            Reduction::SleepSets => (Box::new(SleepSets::new(None)), "exhaustive, sleep sets".into()),
        },
        // Sleep sets: a preemption bound on top of DPOR can leave out orders within the bound
        // (Coons, Musuvathi, McKinley, OOPSLA 2013), so the bounded search does not use it.
        Search::Exhaustive { preemptions: Some(k) } => {
            (Box::new(SleepSets::new(Some(*k))), format!("exhaustive, at most {k} preemptions"))
        }
        Search::Pct { depth, schedules, seed } => (
            Box::new(Pct::new(*depth, *schedules, *seed, 2 * opts.max_steps.min(50))),
            format!("pct depth {depth}, {schedules} schedules, seed {seed}"),
        ),
        Search::Replay(s) => (Box::new(Replay::new(s.clone())), "replay".into()),
    }
}

/// Count one run: a complete run in a class not seen before adds the class.
fn count_run(
    x: &mut Exploration,
    stepped: crate::explore::control::Stepped,
    record: RunRecord,
    intended: Option<&[crate::checker::fates::Intended]>,
) {
    match stepped.end {
        Some(Choice::Done) => {
            let key = search::class_key(&stepped.taken);
            if x.classes.iter().any(|c| c.key == key) {
                return;
            }
            let mut record = record;
            record.run = 1;
            for s in &stepped.spinning {
                // Nothing left could ever let this retry succeed: the run cannot finish.
                record
                    .verdict
                    .add(Verdict::Unknown, format!("{s} retries forever: no process left can change what it waits on"));
            }
            let fates = intended.map(|i| crate::checker::fates::fates(i, &record.events).counts());
            x.classes.push(ExploredClass {
                schedule: Schedule(stepped.turns.clone()).to_string(),
                key,
                verdict: record.verdict.verdict,
                reasons: record.verdict.reasons.clone(),
                steps: stepped.lines,
                fates,
                record,
            });
        }
        Some(Choice::Asleep) => x.cut_as_repeats += 1,
        _ => x.cut_at_bound += 1,
    }
}

/// Can the explorer step variant `v`? Err: why not, in one line (its kind's reason, or a clock
/// of its own that it races).
pub fn steppable(v: &Variant) -> Result<(), String> {
    let v = &v.as_explored();
    if v.timer_race {
        return Err(
            "it races a clock of its own (a client's socket timeout), which is no step the explorer takes".into()
        );
    }
    v.procedure.explorable()
}

/// Explore variant `v` of `lab` on `services` (started by the caller, kept for every run).
/// Also returns, as an ordinary lab report with one run, the run of the shortest wrong class
/// (or of the one replayed schedule): what the text report, the SVG and the lab book draw.
pub async fn explore(
    services: &Services,
    exe: std::path::PathBuf,
    lab: &Scenario,
    v: &Variant,
    opts: &ExploreOptions,
) -> Result<(Exploration, Option<crate::report::LabReport>), Error> {
    steppable(v).map_err(|why| Error::Explore(format!("{}/{} cannot be explored: {why}", lab.id, v.id)))?;
    let mut x = Exploration::new(lab, v, String::new());
    // From here on the variant is what runs: on its smaller set-up, where the lab has one.
    let v = &v.as_explored();
    let started = std::time::Instant::now();
    let mut runner = Runner::new(services, exe).await?;
    let mut redis =
        crate::connect::redis(&services.redis_url).await.map_err(|e| Error::Explore(format!("connect: {e}")))?;
    let pg =
        crate::connect::postgres(&services.pg_config).await.map_err(|e| Error::Explore(format!("connect: {e}")))?;
    let (mut strategy, search) = strategy_of(opts);
    x.search = search;
    let mut pct_steps = 0;
    let intended = v.procedure.intended();
    let pool = crate::roles::reuse::RolePool::new(opts.reuse_processes);
    let forks = std::sync::Arc::new(crate::service::fork_server::ForkServers::default());
    let searched = async {
        loop {
            let mut control = Control::new(&services.redis_url, &services.pg_config);
            if opts.reuse_processes {
                control = control.with_forks(forks.clone());
            }
            let lab_side = async {
                let r = runner.run_controlled(lab, v, opts.seed, &control, &pool).await;
                control.lab_finished();
                r
            };
            let step_side = control.drive(strategy.as_mut(), opts.max_steps, &mut redis, &pg);
            let run_started = std::time::Instant::now();
            let (record, stepped) = tokio::join!(lab_side, step_side);
            let (record, stepped) = (record?, stepped?);
            if std::env::var_os("ORDLAB_EXPLORE_TRACE").is_some() {
                let s = Schedule(stepped.turns.clone());
                eprintln!(
                    "explore: run {} {s} {:?} {:.3} s",
                    x.runs + 1,
                    stepped.end,
                    run_started.elapsed().as_secs_f64()
                );
            }
            x.runs += 1;
            x.processes = x.processes.max(control.processes());
            pct_steps = pct_steps.max(stepped.turns.len());
            let more = strategy.advance(&stepped.taken);
            count_run(&mut x, stepped, record, intended.as_deref());
            if !more {
                break;
            }
            if x.runs >= opts.max_schedules {
                x.hit_max_schedules = true;
                break;
            }
        }
        Ok::<_, Error>(())
    }
    .await;
    pool.stop().await;
    forks.stop().await;
    searched?;
    let stats = strategy.stats();
    x.unfollowed = stats.unfollowed;
    x.covered = stats.covered.filter(|_| x.hit_max_schedules);
    x.role_processes_started = pool.started().len();
    x.workers_forked = forks.forked();
    if let Search::Pct { depth, schedules, seed } = &opts.search {
        let pct = Pct::new(*depth, *schedules, *seed, pct_steps);
        x.pct_bound = Some(pct.bound(x.processes));
    }
    if let Search::Exhaustive { preemptions: Some(_) } = &opts.search {
        x.bounded = x.cut_at_bound > 0 || stats.bounded;
    }
    x.seconds = started.elapsed().as_secs_f64();
    let shown = match &opts.search {
        Search::Replay(_) => x.classes.first(),
        _ => x.shortest_wrong(),
    };
    let report = shown.map(|c| report_of(&runner, lab, v, c, opts.seed));
    Ok((x, report))
}

/// One class's run as an ordinary lab report (what the text report, the SVG and the lab book
/// draw).
fn report_of(runner: &Runner, lab: &Scenario, v: &Variant, c: &ExploredClass, seed: u64) -> crate::report::LabReport {
    let mut run_opts = crate::runner::RunOptions::new(0.0, seed);
    run_opts.command_line = format!("ordlab run {} --variant {} --schedule {}", lab.id, v.id, c.schedule);
    // One schedule's run, not a sample: the variant's expectation is about sampling.
    let mut shown = v.clone();
    shown.expect = crate::checker::outcome::Expectation::Any;
    shown.expect_dropped = crate::checker::outcome::Expectation::Any;
    let variant = crate::report::VariantReport::tally(&shown, vec![c.record.clone()]);
    runner.lab_report(lab, vec![variant], &run_opts)
}

/// The exploration in words: counts, each wrong class with its reason and schedule string,
/// and how to replay one.
pub fn render(x: &Exploration, lang: Lang) -> String {
    let mut out = String::new();
    let (wrong, unknown) = (x.count(Verdict::Wrong), x.count(Verdict::Unknown));
    let _ = writeln!(out, "# explore {} --variant {} ({})", x.lab, x.variant, x.search);
    smaller_setup_line(&mut out, x, lang);
    let classes = x.classes.len();
    let _ = writeln!(
        out,
        "{}",
        crate::tr!(
            lang,
            "{classes} classes of schedules (runs that differ only in the order of commuting steps are one class), from {} runs ({:.2} runs per class; {} cut short as repeats, {} at a bound), {:.1} s",
            "{classes} lớp lịch chạy (các lần chạy chỉ khác thứ tự của các bước giao hoán là một lớp), từ {} lần chạy ({:.2} lần chạy mỗi lớp; {} dừng sớm vì lặp lại, {} ở giới hạn), {:.1} s",
            x.runs,
            x.runs_per_class(),
            x.cut_as_repeats,
            x.cut_at_bound,
            x.seconds
        )
    );
    let _ = writeln!(
        out,
        "{}",
        crate::tr!(
            lang,
            "explored: {wrong} of {classes} classes wrong, {unknown} unknown",
            "đã duyệt: {wrong} trên {classes} lớp SAI, {unknown} không rõ"
        )
    );
    if x.workers_forked > 0 {
        let n = x.workers_forked;
        let _ = writeln!(
            out,
            "{}",
            crate::tr!(
                lang,
                "the Python workers: {n} forks of one python3 that imported what the worker imports once (each the worker as `python3 <script>` runs it, but for the interpreter's start)",
                "các worker Python: {n} lần fork từ một python3 đã import sẵn những gì worker import (mỗi lần là worker như `python3 <script>` chạy, chỉ bỏ bước khởi động trình thông dịch)"
            )
        );
    }
    if let Some(s) = &x.sampled {
        let (w, n, scale) = (s.wrong, s.runs, s.time_scale);
        let dropped = match (s.dropped, lang) {
            (0, _) => String::new(),
            (d, Lang::En) => format!(", an event never applied in {d}"),
            (d, Lang::Vi) => format!(", một sự kiện không được áp dụng trong {d}"),
        };
        let _ = writeln!(
            out,
            "{}",
            crate::tr!(
                lang,
                "sampled (ordlab run, time scale {scale}): {w} of {n} runs wrong{dropped} (there handler work and the OS scheduler pick the order; here every order of the steps is run once)",
                "lấy mẫu (ordlab run, time scale {scale}): {w} trên {n} lần chạy SAI{dropped} (ở đó công việc của handler và bộ lập lịch của OS chọn thứ tự; ở đây mỗi thứ tự các bước được chạy một lần)"
            )
        );
    }
    if let Some(why) = &x.contrast {
        let _ = writeln!(out, "  {}", why.get(lang));
    }
    fates_line(&mut out, x, lang);
    if x.classes.iter().any(|c| c.steps.iter().any(|s| s.starts_with("N "))) {
        let _ = writeln!(
            out,
            "{}",
            pick(
                lang,
                "N: a server timer runs out, as a step of its own at every point it could (a key's TTL: PEXPIRE key 0; an entry idle for the claimer's min-idle: XCLAIM … IDLE, same owner; a read's block time, a reorder buffer's gap timeout: CLIENT UNBLOCK … TIMEOUT; a lease, a delayed retry's due time: ZADD <set> XX CH 0 <member>); the clock never decides it here",
                "N: một bộ hẹn giờ của server hết hạn, là một bước riêng ở mọi thời điểm có thể (TTL của khoá: PEXPIRE key 0; entry rảnh đủ min-idle của claimer: XCLAIM … IDLE, cùng chủ; thời gian chờ của một lệnh đọc, gap timeout của bộ đệm sắp xếp lại: CLIENT UNBLOCK … TIMEOUT; một lease, thời điểm đến hạn của một lần thử lại bị hoãn: ZADD <set> XX CH 0 <member>); ở đây đồng hồ không quyết định"
            )
        );
    }
    bounds_lines(&mut out, x, lang);
    if let Some(p) = x.pct_bound {
        let (runs, all) = (x.runs, pct_over_runs(p, x.runs));
        let _ = writeln!(
            out,
            "{}",
            crate::tr!(
                lang,
                "pct: each run finds a bug of this depth with probability ≥ {p:.2e} ({} processes); the {runs} runs made, at least one of them: ≥ {all:.2e}",
                "pct: mỗi lần chạy tìm ra lỗi ở độ sâu này với xác suất ≥ {p:.2e} ({} tiến trình); {runs} lần chạy đã làm, ít nhất một lần: ≥ {all:.2e}",
                x.processes
            )
        );
    }
    wrong_classes(&mut out, x, lang);
    out
}

/// Where the lab's file gives a smaller set-up for explore: that it was used, and what it keeps.
fn smaller_setup_line(out: &mut String, x: &Exploration, lang: Lang) {
    if let Some(why) = &x.smaller_setup {
        let _ = writeln!(
            out,
            "{}",
            crate::tr!(
                lang,
                "on the lab's smaller set-up for explore ([explore] in its file), not the sampled one: {}",
                "trên set-up nhỏ hơn của lab dành cho explore ([explore] trong file), không phải set-up lấy mẫu: {}",
                why.get(lang)
            )
        );
    }
}

/// PCT's runs are independent: the chance that at least one of `runs` finds a bug each finds
/// with probability ≥ `p` is ≥ 1 − (1 − p)^runs.
fn pct_over_runs(p: f64, runs: usize) -> f64 {
    1.0 - (1.0 - p).powi(runs.min(i32::MAX as usize) as i32)
}

/// What a bound left out: where --max-schedules stopped the search (and how much of it was
/// run, estimated), what --preemptions left out.
fn bounds_lines(out: &mut String, x: &Exploration, lang: Lang) {
    if x.hit_max_schedules {
        let runs = x.runs;
        let _ = match x.covered {
            Some(f) => {
                let pct = format!("{:.1}", 100.0 * f);
                writeln!(
                    out,
                    "{}",
                    crate::tr!(
                        lang,
                        "stopped at --max-schedules {runs}: not every class was run; about {pct}% of the search was (an estimate from the branches at each point of the last run, taken as equal in size; races not yet found add branches)",
                        "dừng ở --max-schedules {runs}: chưa chạy hết mọi lớp; khoảng {pct}% việc tìm kiếm đã chạy (ước tính từ các nhánh ở mỗi điểm của lần chạy cuối, coi như bằng nhau; các cuộc đua chưa tìm thấy sẽ thêm nhánh)"
                    )
                )
            }
            None => writeln!(
                out,
                "{}",
                crate::tr!(
                    lang,
                    "stopped at --max-schedules {runs}: not every class was run",
                    "dừng ở --max-schedules {runs}: chưa chạy hết mọi lớp"
                )
            ),
        };
    }
    if x.bounded {
        let _ = writeln!(
            out,
            "{}",
            pick(
                lang,
                "bounded by --preemptions: schedules with more switches were not run",
                "giới hạn bởi --preemptions: các lịch có nhiều lần chuyển hơn không được chạy"
            )
        );
    }
}

/// In how many classes an event was lost, dropped or applied twice (only what happened).
fn fates_line(out: &mut String, x: &Exploration, lang: Lang) {
    let classes = x.classes.len();
    let with = |f: fn(&crate::checker::fates::FateCounts) -> u32| {
        x.classes.iter().filter(|c| c.fates.as_ref().is_some_and(|n| f(n) > 0)).count()
    };
    let (lost, dropped, twice) = (with(|n| n.lost), with(|n| n.dropped), with(|n| n.applied_twice));
    if lost + dropped + twice == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "{}",
        crate::tr!(
            lang,
            "events: lost in {lost}, dropped in {dropped}, applied twice in {twice} of {classes} classes",
            "sự kiện: mất trong {lost}, bị bỏ trong {dropped}, áp dụng hai lần trong {twice} trên {classes} lớp"
        )
    );
}

/// Each checker's reason with its count, the wrong schedules, the shortest one step by step.
fn wrong_classes(out: &mut String, x: &Exploration, lang: Lang) {
    // Stream entry IDs differ from run to run: classes wrong for the same reason group as one.
    static ENTRY_IDS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b\d+-\d+\b").expect("a valid pattern"));
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for c in x.wrong() {
        let r = ENTRY_IDS.replace_all(c.reasons.first().map_or("", String::as_str), "[id]").into_owned();
        match reasons.iter_mut().find(|(s, _)| *s == r) {
            Some(e) => e.1 += 1,
            None => reasons.push((r, 1)),
        }
    }
    for (r, n) in &reasons {
        let _ = writeln!(out, "  {} ×{n}: {r}", pick(lang, "wrong", "SAI"));
    }
    let mut wrong_classes: Vec<&ExploredClass> = x.wrong().collect();
    wrong_classes.sort_by_key(|c| c.steps.len());
    if !wrong_classes.is_empty() {
        let _ = writeln!(out, "{}", pick(lang, "wrong schedules (shortest first):", "các lịch SAI (ngắn nhất trước):"));
        for c in wrong_classes.iter().take(20) {
            let _ = writeln!(out, "  {}  ({} {})", c.schedule, c.steps.len(), pick(lang, "steps", "bước"));
        }
        if wrong_classes.len() > 20 {
            let _ = writeln!(out, "  … {}", wrong_classes.len() - 20);
        }
    }
    if let Some(c) = x.shortest_wrong() {
        let _ = writeln!(
            out,
            "{}",
            pick(lang, "the shortest wrong schedule, step by step:", "lịch SAI ngắn nhất, từng bước:")
        );
        for (i, s) in c.steps.iter().enumerate() {
            let _ = writeln!(out, "  {:>3}. {s}", i + 1);
        }
        let _ = writeln!(
            out,
            "{} ordlab run {} --variant {} --schedule {}",
            pick(lang, "replay it:", "chạy lại:"),
            x.lab,
            x.variant,
            c.schedule
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary of 2 000 runs, nothing found, with `fields` (JSON) changed.
    fn summary(fields: serde_json::Value) -> Exploration {
        let mut json = serde_json::json!({"explore_version": 1, "lab": "l", "variant": "v", "search": "s", "runs": 2000,
            "cut_as_repeats": 0, "cut_at_bound": 0, "classes": [], "hit_max_schedules": false, "bounded": false,
            "pct_bound": null, "processes": 3, "seconds": 1.0});
        for (k, v) in fields.as_object().expect("fields") {
            json[k] = v.clone();
        }
        serde_json::from_value(json).expect("a summary")
    }

    #[test]
    fn a_search_stopped_at_its_bound_says_the_bound_and_the_share_it_covered() {
        let x = summary(serde_json::json!({"hit_max_schedules": true, "covered": 0.4213}));
        let text = render(&x, Lang::En);
        assert!(text.contains("stopped at --max-schedules 2000"), "{text}");
        assert!(text.contains("about 42.1% of the search"), "{text}");
        let done = render(&summary(serde_json::json!({"covered": 0.5})), Lang::En);
        assert!(!done.contains("stopped at") && !done.contains("% of the search"), "{done}");
    }

    /// Classes wrong for one reason in all but the stream's entry IDs are one line.
    #[test]
    fn wrong_classes_group_by_reason_whatever_their_entry_ids() {
        let class = |schedule: &str, ids: &str| {
            let reason = format!("order 42 paid (v=2) applied 2 times (entries {ids})");
            serde_json::json!({"schedule": schedule, "key": schedule, "verdict": "wrong", "reasons": [reason],
                "steps": ["D1 XADD"], "record": {"run": 1, "events": [], "timed_out": false,
                "observed": {"kind": "outbox", "stream": [], "final_rows": [], "outbox_rows": 2},
                "verdict": {"verdict": "wrong", "reasons": []}}})
        };
        let classes =
            [class("D1.D2", "1796474563453-0, 1796474563459-0"), class("D2.D1", "1796474563486-0, 1796474563493-0")];
        let x = summary(serde_json::json!({"runs": 2, "classes": classes}));
        let text = render(&x, Lang::En);
        assert!(text.contains("  wrong ×2: order 42 paid (v=2) applied 2 times (entries [id], [id])\n"), "{text}");
        assert!(!text.contains("wrong ×1"), "{text}");
    }

    #[test]
    fn pct_states_its_bound_per_run_and_for_the_runs_made() {
        let x = summary(serde_json::json!({"runs": 100, "pct_bound": 0.01}));
        let text = render(&x, Lang::En);
        // 1 − 0.99^100 = 0.634
        assert!(text.contains("≥ 1.00e-2 (3 processes); the 100 runs made, at least one of them: ≥ 6.34e-1"), "{text}");
    }
}
