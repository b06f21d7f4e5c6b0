//! The `ordlab` command line: parse cheaply, then build the expensive things (servers,
//! processes). Errors become one line on stderr and an exit code (see `ordlab::error`).

use anyhow::Context as _;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use ordlab::error::{EXIT_ERROR, EXIT_INTERRUPTED, EXIT_MATCHED, EXIT_MISMATCH};
use ordlab::exploration::ExploreOptions;
use ordlab::lang::Lang;
use ordlab::report::text::TextOptions;
use ordlab::report::{files, json, record, snapshot, text, LabReport};
use ordlab::runner::RunOptions;
use ordlab::scenario::Scenario;
use ordlab::service::{BackendChoice, ServiceOptions, Services};
use ordlab::{bench, catalog};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "ordlab",
    version,
    about = "Reproduce job-ordering bugs on real Redis and PostgreSQL, and measure the fixes."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the built-in labs: id, title, source.
    List {
        /// Instead, every lab variant and whether `ordlab explore` can step it, or why not
        /// (one line each: `lab:variant<TAB>steppable` or `lab:variant<TAB>not steppable: …`).
        #[arg(long)]
        explorable: bool,
    },
    /// Run labs (ids, scenario files, or `all`) and report the outcome.
    Run {
        /// Lab ids (`baseline`), paths to scenario files, or `all`.
        #[arg(required = true)]
        labs: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
        /// Write <id>.txt, <id>.json.gz, an SVG per variant and SUMMARY.md into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Language of the text report and the SVG timelines.
        #[arg(long, value_enum, default_value_t = Lang::En)]
        lang: Lang,
        /// Which run the SVG timelines show (with --out).
        #[arg(long, default_value_t = 1)]
        svg_run: u32,
        /// Replay one schedule found by `ordlab explore` (`P.C1x2.C2`): one run, stepped
        /// exactly in that order (one lab, one variant).
        #[arg(long)]
        schedule: Option<String>,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Run a lab under every order of its processes' steps that can matter (each Redis command
    /// and SQL statement held at the wire until its turn), and count the orders that end wrong.
    Explore {
        lab: String,
        /// The variant (needed when the lab has more than one).
        #[arg(long)]
        variant: Option<String>,
        /// Bound the switches away from a process that could go on (like loom); default: none.
        #[arg(long)]
        preemptions: Option<u32>,
        /// Sample by PCT with this bug depth instead of enumerating.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10))]
        pct: Option<u32>,
        /// Runs for --pct.
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
        schedules: u32,
        /// Seed for --pct and for the lab's own random choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// A hard stop on runs, said in the report when hit.
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
        max_schedules: u64,
        /// Replay this one schedule (`P.C1x2.C2`), as `ordlab run --schedule` does.
        #[arg(long, conflicts_with_all = ["pct", "preemptions"])]
        schedule: Option<String>,
        /// How an exhaustive search leaves out repeats: optimal DPOR (one run per class),
        /// source sets alone, or the sleep sets `--preemptions` uses (to compare them).
        #[arg(long, value_enum, default_value_t = ordlab::exploration::Reduction::Optimal, hide = true)]
        reduction: ordlab::exploration::Reduction,
        /// Write explore-<lab>-<variant>.json.gz and .txt (and the shortest wrong run's SVG) here.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Lang::En)]
        lang: Lang,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Run a lab as its snapshot test does and show the difference from the stored snapshot.
    Diff {
        lab: String,
        /// Directory of the insta snapshots.
        #[arg(long, default_value = "snapshots")]
        snapshots: PathBuf,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Re-judge a saved run (results/<id>.json.gz) with no servers; exits as `run` would.
    Check {
        file: PathBuf,
        /// Also draw the saved runs' pictures again (SVG, PNG) and the lab book beside the file,
        /// with this build's renderers: analysis apart from the run, no servers.
        #[arg(long)]
        redraw: bool,
        /// Language of the redrawn pictures.
        #[arg(long, value_enum, default_value_t = Lang::En)]
        lang: Lang,
        /// The run the redrawn pictures show.
        #[arg(long, default_value_t = 1)]
        svg_run: u32,
    },
    /// Rebuild the lab book (index.html), SUMMARY.md and every lab's SVGs and PNGs from the
    /// lab records in DIR/records, with no servers (records are refreshed first from any newer
    /// per-run data, <id>.json.gz, in DIR).
    Book {
        /// The results directory.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Language of the pictures.
        #[arg(long, value_enum, default_value_t = Lang::En)]
        lang: Lang,
    },
    /// The lab book on 127.0.0.1 (from the records in DIR/records) with a "run again" button
    /// per variant: a click runs that variant once on this machine's servers and streams its
    /// events into the page as they happen, then its verdict. Ctrl-C stops it and everything
    /// it started.
    Serve {
        /// The results directory.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Port on 127.0.0.1 (default: a free one, printed).
        #[arg(long)]
        port: Option<u16>,
        /// The language the page opens in (EN | VI switches it).
        #[arg(long, value_enum, default_value_t = Lang::En)]
        lang: Lang,
        /// Multiply every duration of a run by F (2: slower, to watch).
        #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
        time_scale: f64,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Install the job-queue libraries the built-in scenarios pin (each at its version into
    /// ~/.cache/ordlab/libraries/, reused afterwards); one line per library that cannot be.
    Libraries,
    /// Which backends work here, server versions and capabilities, what to install.
    Doctor {
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Measure the harness: wall time against injected delay, start time, XADD→receive latency,
    /// and the interposer's cost (direct against through an endpoint).
    Bench {
        /// Labs to measure (default: every built-in lab).
        labs: Vec<String>,
        #[arg(long, default_value_t = 5)]
        runs: u32,
        /// Also time every lab as `just lab all` runs them (full runs, time scale 1), with
        /// --jobs 1 and with --jobs N, against the sum of their injected critical paths.
        #[arg(long)]
        lab_all: bool,
        /// Time only `run all` (as --lab-all, over the labs given), with where its time goes
        /// per lab: not the per-lab, interposer and explorer measurements.
        #[arg(long, conflicts_with_all = ["lab_all", "interposer"])]
        lab_all_only: bool,
        /// N for --lab-all (default: the number of cores).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
        jobs: Option<u32>,
        /// Measure only the interposer's cost (Redis via redis-benchmark, PostgreSQL SELECT 1,
        /// direct against through an endpoint), not the labs.
        #[arg(long, conflicts_with_all = ["labs", "lab_all"])]
        interposer: bool,
        /// Measure only the explorer: schedules per second for baseline (its processes reused,
        /// and started afresh every run), s1 and s1 with the Python example consumer.
        #[arg(long, conflicts_with_all = ["labs", "lab_all", "interposer"])]
        explore: bool,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// A class exercise: run a check list against your worker (a command line, or a file
    /// whose interpreter its extension names) and say right, wrong or unknown for each check,
    /// with its hint and the timeline of its first wrong run; exit code 0 only when every check
    /// ends right. Given a class (program files and folders: `submissions/*`, or one folder of
    /// them), grade each in turn on the same servers into a gradebook (CSV and a page).
    Grade {
        /// `my_consumer.py`, after `--` a whole command line (`-- php my_consumer.php`), or a
        /// class's submissions (`submissions/*`, `submissions/`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        worker: Vec<String>,
        #[command(flatten)]
        how: GradeArgs,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Internal: a role process (consumer, claimer, dispatcher) a lab starts; its JSON config
    /// comes on stdin.
    #[command(name = "__role", hide = true)]
    Role {
        /// Run one config per stdin line, parking between them (`roles::reuse`).
        #[arg(long)]
        reusable: bool,
    },
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Runs per variant (default: as the scenario says; at least 1: a lab that judged no run
    /// cannot match).
    #[arg(long, value_parser = parse_runs)]
    runs: Option<u32>,
    /// Multiply every duration of the lab (handler work, schedules, lock TTLs) by F.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    time_scale: f64,
    /// Seed for every random choice (default: random, printed in the report).
    #[arg(long)]
    seed: Option<u64>,
    /// Run only this variant.
    #[arg(long)]
    variant: Option<String>,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
    /// Variants run at a time, each on servers of its own (default: the number of cores; 1 with
    /// --backend external, whose servers are shared).
    /// Variants whose outcome depends on the OS scheduler always run alone, first.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: Option<u32>,
}

#[derive(clap::Args, Clone)]
struct ServiceArgs {
    /// Where the servers come from.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Redis URL for --backend external.
    #[arg(long, env = "ORDLAB_REDIS_URL", hide_env_values = true)]
    redis_url: Option<String>,
    /// PostgreSQL URL or key=value string for --backend external.
    #[arg(long, env = "ORDLAB_PG_URL", hide_env_values = true)]
    pg_url: Option<String>,
    /// Nodes of your Redis Cluster for --backend external, for labs past one node (`cluster`):
    /// comma-separated or the flag repeated (redis://h1:7000,redis://h2:7001).
    #[arg(long = "redis-cluster-url", env = "ORDLAB_REDIS_CLUSTER_URL", value_delimiter = ',', hide_env_values = true)]
    redis_cluster_url: Vec<String>,
    /// Redis image for --backend docker (and auto).
    #[arg(long, env = "ORDLAB_REDIS_IMAGE", default_value = "redis:8")]
    redis_image: String,
    /// PostgreSQL image for --backend docker (and auto).
    #[arg(long, env = "ORDLAB_PG_IMAGE", default_value = "postgres:18")]
    pg_image: String,
    /// With --backend external: keep what the run made on your servers (keys under
    /// ordlab:<nonce>:, the schemas ordlab and ordlab_sink) to look at; the next run on those
    /// servers removes them.
    #[arg(long)]
    keep: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Auto,
    Local,
    Docker,
    External,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn parse_runs(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(0) => Err("0 runs judge nothing, and a lab that judged nothing cannot match: use 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a number of runs (for example 5)")),
    }
}

fn parse_patience(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 100.0 => Ok(f),
        _ => Err(format!("{s:?}: give a time in ms of at least 100 (for example 5000)")),
    }
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("{s:?} is not a positive number (for example 0.25 or 1)")),
    }
}

impl ServiceArgs {
    fn options(&self) -> ServiceOptions {
        ServiceOptions {
            backend: match self.backend {
                BackendArg::Auto => BackendChoice::Auto,
                BackendArg::Local => BackendChoice::Local,
                BackendArg::Docker => BackendChoice::Docker,
                BackendArg::External => BackendChoice::External,
            },
            redis_image: self.redis_image.clone(),
            pg_image: self.pg_image.clone(),
            redis_url: self.redis_url.clone(),
            pg_url: self.pg_url.clone(),
            redis_cluster_urls: self.redis_cluster_url.clone(),
            keep: self.keep,
            ..ServiceOptions::default()
        }
    }
}

fn main() {
    let cli = parse_cli();
    if let Command::Role { reusable } = cli.command {
        let code = run_role_process(reusable);
        ordlab::service::process::reap_children();
        std::process::exit(code);
    }
    // A run interrupted on the user's servers removes what it made there only once its
    // processes are gone (below), so none of them can set a key after the last scan.
    ordlab::service::namespace::defer_interrupted_removals();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let code = runtime.block_on(async {
        // Ctrl-C or SIGTERM drops the command's future, whose guards stop every server and
        // child process it started before we exit.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            r = execute(cli.command) => match r {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("ordlab: {}", one_line(&e));
                    e.downcast_ref::<ordlab::Error>().map(|e| e.exit_code()).unwrap_or(EXIT_ERROR)
                }
            },
            _ = tokio::signal::ctrl_c() => { eprintln!("ordlab: interrupted; servers and processes stopped"); EXIT_INTERRUPTED }
            _ = term.recv() => { eprintln!("ordlab: terminated; servers and processes stopped"); EXIT_INTERRUPTED }
        }
    });
    drop(runtime);
    // A child whose handle went with the runtime (Ctrl-C drops the command's future) is
    // still ours until it is waited for.
    ordlab::service::process::reap_children();
    ordlab::service::namespace::finish_interrupted_removals();
    std::process::exit(code);
}

/// The command line, or one `ordlab:` line and exit 2 for a bad one (help and the version
/// print as clap prints them). A server option given on the command line that the chosen
/// backend would ignore is refused too.
fn parse_cli() -> Cli {
    let refuse = |line: String| -> ! {
        eprintln!("ordlab: {line}");
        std::process::exit(EXIT_ERROR)
    };
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => refuse(clap_line(&e)),
    };
    if let Some((_, sub)) = matches.subcommand() {
        if let Some(line) = ignored_server_option(sub) {
            refuse(line);
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| refuse(clap_line(&e)))
}

/// clap's message in one line: its lines before the usage (without `error: `: what is
/// wrong, the values allowed, a tip), joined, and where to look.
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let said: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty())
        .collect();
    format!("{} (see --help)", said.join(" "))
}

/// `--redis-url`, `--pg-url` or `--redis-cluster-url` typed on the command line without
/// `--backend external`, which alone uses them (from the environment they are only defaults).
fn ignored_server_option(sub: &clap::ArgMatches) -> Option<String> {
    use clap::parser::ValueSource;
    let has = |id: &str| sub.try_get_raw(id).ok().flatten().is_some();
    if !has("backend") {
        return None;
    }
    let external = sub.get_one::<BackendArg>("backend").is_some_and(|b| matches!(b, BackendArg::External));
    let typed = |id: &str| sub.value_source(id) == Some(ValueSource::CommandLine);
    let flag = [("redis_url", "--redis-url"), ("pg_url", "--pg-url"), ("redis_cluster_url", "--redis-cluster-url")]
        .into_iter()
        .find(|(id, _)| has(id) && typed(id))
        .map(|(_, flag)| flag)?;
    (!external).then(|| {
        format!("{flag} is used only with --backend external: add --backend external, or leave {flag} out to start servers of ordlab's own")
    })
}

/// An error chain on one line: `outer: inner: root`. A PostgreSQL error is what the server
/// said ([`ordlab::connect::postgres_said`]), not tokio-postgres's bare "db error".
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = match cause.downcast_ref::<tokio_postgres::Error>() {
            Some(pg) => ordlab::connect::postgres_said(pg),
            None => cause.to_string(),
        };
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// `ordlab __role`: read the config from stdin and run the role until killed or done.
fn run_role_process(reusable: bool) -> i32 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let done = if reusable {
        rt.block_on(ordlab::roles::reuse::serve(&ordlab::labs::ROLES))
    } else {
        let mut config = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut config);
        rt.block_on(ordlab::labs::ROLES.run(&config))
    };
    match done {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ordlab __role: {e}");
            EXIT_ERROR
        }
    }
}

async fn execute(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::List { explorable: false } => {
            print!("{}", catalog::list_table(&catalog::all()?, catalog::LIST_WIDTH));
            Ok(EXIT_MATCHED)
        }
        Command::List { explorable: true } => list_explorable(),
        Command::Doctor { services } => doctor(&services).await,
        Command::Libraries => install_libraries().await,
        Command::Book { out, lang } => book(&out, lang),
        Command::Serve { out, port, lang, time_scale, services } => serve(out, port, lang, time_scale, &services).await,
        Command::Check { file, .. } if ordlab::exploration::load(&file).is_some() => {
            let x = ordlab::exploration::load(&file).expect("just read").map_err(anyhow::Error::msg)?;
            let changed = ordlab::exploration::rejudge(&x)?;
            print!("{}", ordlab::exploration::render(&x, Lang::En));
            for c in &changed {
                println!("verdict changed: {c}");
            }
            println!("re-judged {} classes: {} changed", x.classes.len(), changed.len());
            Ok(if changed.is_empty() { EXIT_MATCHED } else { EXIT_MISMATCH })
        }
        Command::Check { file, redraw, lang, svg_run } => {
            let report = json::load(&file)?.rejudged();
            print!("{}", text::render(&report, &TextOptions::default()));
            if redraw {
                let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
                let pictures = files::write_pictures(dir, &report, lang, svg_run)
                    .with_context(|| format!("draw {}'s pictures in {}", report.lab.id, dir.display()))?;
                record::write(dir, &report)?;
                write_summary(dir)?;
                write_pngs(&pictures)?;
            }
            Ok(if report.matched() { EXIT_MATCHED } else { EXIT_MISMATCH })
        }
        Command::Run { labs, run, schedule: Some(schedule), lang, services, .. } => {
            let [lab] = labs.as_slice() else { anyhow::bail!("--schedule replays one lab: give one lab id") };
            let search = ordlab::exploration::Search::Replay(ordlab::explore::Schedule::parse(&schedule)?);
            let opts = ExploreOptions { search, max_schedules: 1, seed: run.seed.unwrap_or(1), ..Default::default() };
            explore_cli(lab, run.variant.as_deref(), opts, None, lang, &services).await
        }
        Command::Explore {
            lab,
            variant,
            preemptions,
            pct,
            schedules,
            seed,
            max_schedules,
            schedule,
            reduction,
            out,
            lang,
            services,
        } => {
            let search = match (schedule, pct) {
                (Some(s), _) => ordlab::exploration::Search::Replay(ordlab::explore::Schedule::parse(&s)?),
                (None, Some(depth)) => ordlab::exploration::Search::Pct { depth, schedules, seed },
                (None, None) => ordlab::exploration::Search::Exhaustive { preemptions },
            };
            let max_schedules = max_schedules as usize;
            let opts =
                ordlab::exploration::ExploreOptions { search, reduction, max_schedules, seed, ..Default::default() };
            explore_cli(&lab, variant.as_deref(), opts, out, lang, &services).await
        }
        Command::Run { labs, run, out, format, lang, svg_run, services, schedule: None } => {
            let write = Output { dir: out, format, lang, svg_run };
            run_labs(&labs, &run, &services, &write).await
        }
        Command::Diff { lab, snapshots, services } => diff(&lab, &snapshots, &services).await,
        Command::Bench { labs, runs, lab_all, lab_all_only, jobs, interposer, explore, services } => {
            check_services(&services)?;
            if explore {
                bench::explore::run(&services.options(), std::env::current_exe()?).await?;
                return Ok(EXIT_MATCHED);
            }
            if interposer {
                bench::interposer::run(&services.options()).await?;
                return Ok(EXIT_MATCHED);
            }
            let labs = if labs.is_empty() { catalog::all()? } else { resolve_labs(&labs)? };
            check_worker_programs(&labs, None)?;
            if !lab_all_only {
                bench::run(&labs, runs, &services.options(), std::env::current_exe()?).await?;
                bench::interposer::run(&services.options()).await?;
                bench::explore::run(&services.options(), std::env::current_exe()?).await?;
            }
            if lab_all || lab_all_only {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                let n = jobs.map_or(cores, |j| j as usize);
                let jobs: Vec<usize> = if n == 1 { vec![1] } else { vec![1, n] };
                bench::lab_all(&labs, &jobs, &services.options(), std::env::current_exe()?).await?;
            }
            Ok(EXIT_MATCHED)
        }
        Command::Grade { worker, how, services } => grade(&worker, how, &services).await,
        Command::Role { .. } => unreachable!("handled before the runtime starts"),
    }
}

/// `ordlab grade`'s options but the worker and the servers.
#[derive(clap::Args)]
struct GradeArgs {
    /// The built-in exercise set.
    #[arg(long = "set", default_value = "ordering")]
    set: String,
    /// A check list file of your own instead (src/grade/ordering.toml is one to copy).
    #[arg(long, conflicts_with = "set")]
    checks: Option<PathBuf>,
    /// Only this check.
    #[arg(long)]
    check: Option<String>,
    /// Runs per check (default: the check list's).
    #[arg(long, value_parser = parse_runs)]
    runs: Option<u32>,
    /// Multiply every duration of the checks (handler work, lock TTLs, min-idle) by F.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    time_scale: f64,
    /// Seed for every random choice (default: random).
    #[arg(long)]
    seed: Option<u64>,
    /// Grade every check by exploring every order of its steps (classes), not by sampling.
    #[arg(long)]
    explore: bool,
    /// Replay one schedule of the check --check names (as a grade's shortest wrong schedule
    /// says): its steps in order, each with what followed it, and its verdict.
    #[arg(long, requires = "check")]
    schedule: Option<String>,
    /// With --explore (or a check list's `explore = true`): at most this many runs per
    /// explored check (the grade says when the search stopped there).
    #[arg(long, default_value_t = 500)]
    max_schedules: usize,
    /// How long (ms) a worker may take to start, may go without progress, and has to be
    /// back waiting for work after the last ack, before its run is cut (default: the check
    /// list's).
    #[arg(long, value_parser = parse_patience)]
    patience_ms: Option<f64>,
    /// Where a class's gradebook is written (gradebook.csv, index.html, students/).
    #[arg(long, default_value = "gradebook")]
    out: PathBuf,
    #[arg(long, value_enum, default_value_t = Lang::En)]
    lang: Lang,
}

/// `ordlab grade`: the check list against one worker (its report, exit 0 when every check is
/// right), or against a class's submissions, one at a time on the same servers (a gradebook).
async fn grade(worker: &[String], how: GradeArgs, services: &ServiceArgs) -> anyhow::Result<i32> {
    use ordlab::grade::{self, CheckList, Submission};
    let mut list = match &how.checks {
        Some(path) => CheckList::from_path(path)?,
        None => grade::builtin(&how.set)?,
    };
    if let Some(ms) = how.patience_ms {
        list.checks.iter_mut().for_each(|c| c.patience_ms = ms);
    }
    if let Some(id) = &how.check {
        let ids: Vec<String> = list.checks.iter().map(|c| c.id.clone()).collect();
        list.checks.retain(|c| c.id == *id);
        if list.checks.is_empty() {
            anyhow::bail!("no check {id:?} in {}: the checks are {}", list.origin, ids.join(", "));
        }
    }
    // `--` before the worker: one command line, whatever its words are.
    let one_command = std::env::args().any(|a| a == "--");
    let class = grade::is_class(worker, one_command);
    let subs = if class {
        grade::submissions(worker)?
    } else {
        let command = grade::worker_command(worker)?;
        ordlab::roles::command_worker::check_program(&command)?;
        // Named by its program file (`my_consumer.py` → my_consumer), else by its command.
        let file = worker.iter().map(std::path::Path::new).find(|p| p.is_file());
        let name = file.and_then(|p| p.file_stem()).map(|s| s.to_string_lossy().into_owned());
        vec![Submission { name: name.unwrap_or_else(|| command.join(" ")), command }]
    };
    check_services(services)?;
    let seed = how.seed.unwrap_or_else(rand::random);
    if let Some(text) = &how.schedule {
        anyhow::ensure!(!class, "--schedule replays one worker's run: give one worker, not a class");
        let schedule =
            ordlab::exploration::Schedule::parse(text).map_err(|e| anyhow::anyhow!("--schedule {text}: {e}"))?;
        let lab = list.scenario(&subs[0].command)?;
        let v = &lab.variants[0];
        let started = ordlab::service::Services::start(&services.options()).await?;
        let replayed = grade::explored::replay(&started, std::env::current_exe()?, &lab, v, schedule, seed).await;
        started.stop().await;
        let c = replayed?;
        println!("# {} (`{}`): {}, replayed", subs[0].name, subs[0].command.join(" "), v.id);
        print!("{}", grade::explored::render_replay(&c, v, how.lang));
        if c.verdict != ordlab::checker::Verdict::Right {
            println!("hint: {}", list.checks[0].hint.get(how.lang));
        }
        return Ok(if c.verdict == ordlab::checker::Verdict::Right { EXIT_MATCHED } else { EXIT_MISMATCH });
    }
    let mut run = RunOptions::new(how.time_scale, seed);
    run.runs = how.runs;
    run.command_line = command_line();
    let budget = grade::explored::Budget { seed, max_schedules: how.max_schedules, ..Default::default() };
    let opts = grade::GradeOptions { list: &list, run, explore_all: how.explore, explore: budget };
    let started = ordlab::service::Services::start(&services.options()).await?;
    let exe = std::env::current_exe()?;
    let mut on_step = |step: &grade::Step<'_>| {
        if class {
            eprintln!("{step}");
        }
    };
    let graded = grade::grade(&subs, &opts, &started, exe, &mut on_step).await;
    started.stop().await;
    let graded = graded?;
    if !class {
        let g = &graded[0];
        if let Err(why) = &g.result {
            // The one line a worker that cannot start gets, as `ordlab run` gives it.
            return Err(
                ordlab::Error::WorkerCommand { command: g.submission.command.join(" "), detail: why.clone() }.into()
            );
        }
        print!("{}", grade::render(g, &list, how.lang));
        return Ok(if g.all_right() { EXIT_MATCHED } else { EXIT_MISMATCH });
    }
    let header = format!("{} · {} · seed {seed} · time scale {}", list.origin, command_line(), how.time_scale);
    let written = grade::book::write(&how.out, &graded, &list, how.lang, &header)?;
    for g in &graded {
        let (right, total) = g.score();
        match &g.result {
            Ok(checks) => {
                let cells: Vec<String> = checks.iter().map(|c| format!("{} {}", c.id, c.cell())).collect();
                println!("{}: {right}/{total} right ({})", g.submission.name, cells.join(", "));
            }
            Err(why) => println!("{}: did not start: {why}", g.submission.name),
        }
    }
    println!("gradebook: {} and {}", written.csv.display(), written.page.display());
    Ok(EXIT_MATCHED)
}

/// `ordlab explore` (and `run --schedule`): the variant's classes of schedules, the shortest
/// wrong one step by step and as the lab's own report.
/// `ordlab list --explorable`: every lab variant, steppable by the explorer or why not.
fn list_explorable() -> anyhow::Result<i32> {
    for lab in catalog::all()? {
        for v in &lab.variants {
            match ordlab::exploration::steppable(v) {
                Ok(()) => println!("{}:{}\tsteppable", lab.id, v.id),
                Err(why) => println!("{}:{}\tnot steppable: {why}", lab.id, v.id),
            }
        }
    }
    Ok(EXIT_MATCHED)
}

async fn explore_cli(
    id: &str,
    variant: Option<&str>,
    opts: ExploreOptions,
    out: Option<PathBuf>,
    lang: Lang,
    services: &ServiceArgs,
) -> anyhow::Result<i32> {
    if let Some(dir) = &out {
        check_out_dir(dir)?;
    }
    let lab = catalog::find(id)?;
    let v = match variant {
        Some(name) => lab.variant(name).with_context(|| {
            format!("lab {} has no variant {name:?}: its variants are {}", lab.id, lab.variant_ids().join(", "))
        })?,
        None if lab.variants.len() == 1 => &lab.variants[0],
        None => anyhow::bail!(
            "lab {} has {} variants: choose one with --variant ({})",
            lab.id,
            lab.variants.len(),
            lab.variant_ids().join(", ")
        ),
    };
    ordlab::exploration::steppable(v)
        .map_err(|why| anyhow::anyhow!("{}/{} cannot be explored: {why}", lab.id, v.id))?;
    check_worker_programs(std::slice::from_ref(&lab), Some(&v.id))?;
    check_services(services)?;
    let replay = matches!(opts.search, ordlab::exploration::Search::Replay(_));
    let servers = Services::start(&services.options()).await?;
    let result = ordlab::exploration::explore(&servers, std::env::current_exe()?, &lab, v, &opts).await;
    servers.stop().await;
    let (mut x, report) = result?;
    let sampled = record::load(&record::path_of(Path::new("results"), &x.lab)).ok();
    x.sampled = sampled.and_then(|r| ordlab::exploration::Sampled::of(&r, &x.variant));
    // A replay starts with its schedule, then its run (whose timeline follows the steps).
    if let Some(c) = x.classes.first().filter(|_| replay) {
        println!("schedule {} ({} steps)", c.schedule, c.steps.len());
    }
    if let Some(report) = &report {
        print!("{}", text::render(report, &TextOptions { lang, ..TextOptions::default() }));
    }
    let summary = ordlab::exploration::render(&x, lang);
    if !replay {
        print!("{summary}");
    }
    if let Some(dir) = out {
        let saved = ordlab::exploration::path_in(&dir, &x);
        ordlab::exploration::save(&dir, &x).with_context(|| format!("write {}", saved.display()))?;
        let shown = report.as_ref().map(|r| text::render(r, &TextOptions { lang, ..TextOptions::default() }));
        let path = dir.join(format!("explore-{}-{}.txt", x.lab, x.variant));
        std::fs::write(&path, format!("{summary}\n{}", shown.unwrap_or_default()))
            .with_context(|| format!("write {}", path.display()))?;
        if let Some(report) = &report {
            files::write_pictures(&dir, report, lang, 1)?;
        }
    }
    Ok(EXIT_MATCHED)
}

/// Which backends work here; versions and capabilities come from running servers, so the
/// chosen backend is started once.
async fn doctor(services: &ServiceArgs) -> anyhow::Result<i32> {
    let report = ordlab::service::doctor_with(&services.options()).await;
    println!("{}", report.to_string().trim_end());
    check_services(services)?;
    match Services::start(&services.options()).await {
        Ok(s) => {
            let caps = &s.info.redis;
            let has = |b: bool| if b { "yes" } else { "no" };
            println!("servers       {} backend started in {:.0} ms", s.backend, s.start_time.as_secs_f64() * 1000.0);
            println!("redis         {}", s.info.redis_version);
            println!(
                "  commands    DELEX IFEQ: {} (else Lua compare-and-delete) · XAUTOCLAIM: {} · BLMOVE: {} · BZPOPMAX: {} · XACKDEL: {} · XADD IDMP: {}",
                has(caps.delex),
                has(caps.xautoclaim),
                has(caps.blmove),
                has(caps.bzpopmax),
                has(caps.xackdel),
                has(caps.xadd_idmp)
            );
            println!("postgresql    {}", s.info.postgres_version);
            s.stop().await;
            Ok(EXIT_MATCHED)
        }
        Err(e) => {
            println!("servers       could not start: {e}");
            Ok(EXIT_ERROR)
        }
    }
}

/// Where and how `run` writes what it ran.
struct Output {
    dir: Option<PathBuf>,
    format: Format,
    lang: Lang,
    svg_run: u32,
}

/// `ordlab run`: everything that can be checked without servers first (labs, variant,
/// backend and URLs), then the servers, then the labs one by one.
async fn run_labs(ids: &[String], run: &RunArgs, services: &ServiceArgs, output: &Output) -> anyhow::Result<i32> {
    if let Some(dir) = &output.dir {
        check_out_dir(dir)?;
    }
    let mut labs = resolve_labs(ids)?;
    if let Some(v) = &run.variant {
        if let Some(lab) = labs.iter().find(|l| l.variant(v).is_none()) {
            anyhow::bail!("lab {} has no variant {v:?}: its variants are {}", lab.id, lab.variant_ids().join(", "));
        }
    }
    check_worker_programs(&labs, run.variant.as_deref())?;
    check_services(services)?;
    check_needs(&mut labs, run, services)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let external = matches!(services.backend, BackendArg::External);
    // An external server is shared, so by default its labs run one at a time.
    let jobs = run.jobs.map_or(if external { 1 } else { cores }, |j| j as usize);
    if jobs > 1 && external {
        anyhow::bail!("--jobs {jobs} needs servers of its own per job, and an external server is shared: use --jobs 1");
    }
    let mut opts = RunOptions::new(run.time_scale, run.seed.unwrap_or_else(rand::random));
    opts.runs = run.runs;
    opts.variant = run.variant.clone();
    opts.command_line = command_line();
    let progress = (!run.quiet && std::io::stderr().is_terminal()).then(|| progress_bar(&labs, run));
    if let Some(bar) = progress.clone() {
        opts.on_run = Some(std::sync::Arc::new(move |v: &str, i: u32, n: u32| {
            bar.set_message(format!("{v}: run {i}/{n}"));
            bar.inc(1);
        }));
    }
    // Each lab's files as soon as its last variant is done; its text on stdout in lab order.
    let mut written: Vec<anyhow::Result<Vec<PathBuf>>> = Vec::new();
    let mut printed = PrintInOrder::new(labs.iter().map(|l| l.id.clone()).collect());
    let mut on_lab = |report: &LabReport| {
        let text_report = text::render(report, &TextOptions { lang: output.lang, ..TextOptions::default() });
        if let Some(dir) = &output.dir {
            written.push(write_results(dir, report, &text_report, output.lang, output.svg_run));
        }
        if output.format == Format::Text {
            printed.ready(&report.lab.id, text_report);
        }
    };
    let exe = std::env::current_exe()?;
    let started = std::time::Instant::now();
    let reports = ordlab::schedule::run_labs_timed(&labs, &opts, &services.options(), jobs, exe, &mut on_lab).await;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let (reports, spans) = reports?;
    if labs.len() > 1 {
        let wall_ms = ordlab::timing::ms_since(started);
        let breakdown = ordlab::timing::Breakdown::of(&spans);
        let line = breakdown.summary_line(wall_ms, jobs);
        if let Some(dir) = &output.dir {
            // Where the wall time went, per lab, beside the results it made.
            let path = dir.join("timing.txt");
            let text = format!("# {}\n{line}\n{}", opts.command_line, breakdown.render(wall_ms));
            std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
            eprintln!("ordlab: {line} (per lab: {})", path.display());
        } else {
            eprintln!("ordlab: {line}");
        }
    }
    let pictures: Vec<PathBuf> = written.into_iter().collect::<anyhow::Result<Vec<_>>>()?.concat();
    if let Some(dir) = &output.dir {
        write_summary(dir)?;
        write_pngs(&pictures)?;
    }
    if output.format == Format::Json {
        println!("{}", if reports.len() == 1 { json::render(&reports[0]) } else { json::render_many(&reports) });
    }
    Ok(if reports.iter().all(LabReport::matched) { EXIT_MATCHED } else { EXIT_MISMATCH })
}

/// Can the results go to `dir`? Created if missing, and written to once (a file made and
/// removed), before any server starts: a lab that ran for minutes must not end in an
/// unwritable directory.
fn check_out_dir(dir: &Path) -> anyhow::Result<()> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("--out {shown} is a file, not a directory: give a directory for the results");
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!("--out {shown} cannot be created ({e}): give a writable directory for the results")
    })?;
    tempfile::NamedTempFile::new_in(dir).map_err(|e| {
        anyhow::anyhow!("--out {shown} is not writable ({e}): give a writable directory for the results")
    })?;
    Ok(())
}

/// Text reports printed in the order the labs were asked for, each as soon as it and every
/// lab before it are done.
struct PrintInOrder {
    order: Vec<String>,
    next: usize,
    waiting: std::collections::HashMap<String, String>,
}

impl PrintInOrder {
    fn new(order: Vec<String>) -> PrintInOrder {
        PrintInOrder { order, next: 0, waiting: Default::default() }
    }

    fn ready(&mut self, lab: &str, text: String) {
        self.waiting.insert(lab.to_string(), text);
        while let Some(text) = self.order.get(self.next).and_then(|id| self.waiting.remove(id)) {
            print!("{text}");
            self.next += 1;
        }
    }
}

/// `ordlab diff`: run the lab as its snapshot test does and compare with the stored snapshots.
async fn diff(lab: &str, snapshots: &Path, services: &ServiceArgs) -> anyhow::Result<i32> {
    let lab = catalog::find(lab)?;
    // Every file it reads is read before a server starts.
    let mut stored = Vec::new();
    for lang in Lang::ALL {
        let name = snapshot::file_name(&lab.id, lang);
        let path = snapshots.join(&name);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!("no snapshot {}: run `just test` and `cargo insta review` first", path.display())
        })?;
        stored.push((lang, name, text));
    }
    check_worker_programs(std::slice::from_ref(&lab), None)?;
    check_services(services)?;
    let report = ordlab::runner::run_as_snapshot(&lab, &services.options(), std::env::current_exe()?).await?;
    let mut same_all = true;
    for (lang, name, stored) in stored {
        let (same, diff) = snapshot::diff(snapshot::snap_body(&stored), &snapshot::normalized_marked(&report, lang));
        println!("== {name}: {diff}");
        same_all &= same;
    }
    Ok(if same_all { EXIT_MATCHED } else { EXIT_MISMATCH })
}

/// The program of every chosen variant's workers (`setup.worker.command`) can be started,
/// checked before any server starts.
fn check_worker_programs(labs: &[Scenario], only: Option<&str>) -> anyhow::Result<()> {
    let chosen = labs.iter().flat_map(|l| l.variants.iter()).filter(|v| only.is_none_or(|o| o == v.id));
    for command in chosen.filter_map(|v| v.procedure.needs().worker_command) {
        ordlab::roles::command_worker::check_program(&command)?;
    }
    Ok(())
}

/// The backend's URLs, checked for syntax before anything starts.
fn check_services(services: &ServiceArgs) -> anyhow::Result<()> {
    if !matches!(services.backend, BackendArg::External) {
        if services.keep {
            anyhow::bail!("--keep keeps what a run made on your servers (--backend external); servers ordlab starts are removed with everything on them: drop --keep, or use --backend external");
        }
        return Ok(());
    }
    if let Some(url) = &services.redis_url {
        redis::parse_redis_url(url).with_context(|| {
            "--redis-url is not a Redis URL: use redis://host:port/ (or ORDLAB_REDIS_URL)".to_string()
        })?;
    }
    for (i, url) in services.redis_cluster_url.iter().enumerate() {
        redis::parse_redis_url(url).with_context(|| {
            format!(
                "--redis-cluster-url entry {} is not a Redis URL: use redis://host:port/, comma-separated for several nodes (or ORDLAB_REDIS_CLUSTER_URL)",
                i + 1
            )
        })?;
    }
    if let Some(pg) = &services.pg_url {
        pg.parse::<tokio_postgres::Config>().map_err(|e| {
            anyhow::anyhow!(
                "--pg-url is not a PostgreSQL URL or key=value string ({e}): use postgres://user@host:port/db"
            )
        })?;
    }
    Ok(())
}

/// What the labs need from an external backend, before any server starts: a lab that needs a
/// Redis Cluster needs `--redis-cluster-url`; a variant that would change the user's servers is
/// refused when named with --variant, else left out with one line on stderr per lab saying
/// why; when that leaves nothing to run, the refusal is the one line.
fn check_needs(labs: &mut Vec<Scenario>, run: &RunArgs, services: &ServiceArgs) -> anyhow::Result<()> {
    if !matches!(services.backend, BackendArg::External) {
        return Ok(());
    }
    let asked = labs.len();
    // Per lab and reason, the variants left out.
    let mut left_out: Vec<(String, &'static str, Vec<String>)> = Vec::new();
    for lab in labs.iter_mut() {
        let mut kept = Vec::new();
        for v in std::mem::take(&mut lab.variants) {
            let needs = v.procedure.needs();
            let chosen = run.variant.as_ref().is_none_or(|only| *only == v.id);
            if chosen && needs.cluster && services.redis_cluster_url.is_empty() {
                anyhow::bail!(
                    "lab {} needs a Redis Cluster: with --backend external name its nodes with --redis-cluster-url redis://host:port,redis://host:port (or ORDLAB_REDIS_CLUSTER_URL), or use --backend local and the lab starts its own",
                    lab.id
                );
            }
            match needs.not_external {
                Some(why) if run.variant.is_some() && chosen => {
                    anyhow::bail!("{}/{} does not run against your servers: {why}; use --backend local", lab.id, v.id)
                }
                Some(why) if chosen => match left_out.iter_mut().find(|(l, w, _)| *l == lab.id && *w == why) {
                    Some((_, _, variants)) => variants.push(v.id),
                    None => left_out.push((lab.id.clone(), why, vec![v.id])),
                },
                _ => kept.push(v),
            }
        }
        lab.variants = kept;
    }
    labs.retain(|lab| !lab.variants.is_empty());
    if labs.is_empty() && asked > 0 {
        if let Some((lab, why, _)) = left_out.first() {
            anyhow::bail!("{lab} does not run against your servers: {why}; use --backend local");
        }
    }
    for (lab, why, variants) in &left_out {
        let which = match variants.as_slice() {
            [one] => format!("{lab}/{one}"),
            many => format!("{lab} (variants {})", many.join(", ")),
        };
        eprintln!("ordlab: {which} left out: {why} (it runs with --backend local)");
    }
    Ok(())
}

/// Progress on stderr: lab, variant, run i/n, elapsed and ETA.
fn progress_bar(labs: &[Scenario], run: &RunArgs) -> indicatif::ProgressBar {
    let total: u64 = labs
        .iter()
        .flat_map(|l| l.variants.iter())
        .filter(|v| run.variant.as_ref().is_none_or(|only| *only == v.id))
        .map(|v| run.runs.unwrap_or(v.runs) as u64)
        .sum();
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>12} {bar:30} {pos}/{len} runs · {msg} · {elapsed} elapsed, ETA {eta}",
        )
        .expect("valid template"),
    );
    bar.set_prefix("ordlab");
    bar
}

fn resolve_labs(ids: &[String]) -> anyhow::Result<Vec<Scenario>> {
    if ids.len() == 1 && ids[0] == "all" {
        return Ok(catalog::all()?);
    }
    ids.iter().map(|id| catalog::find(id).map_err(Into::into)).collect()
}

fn command_line() -> String {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.insert(0, "ordlab".into());
    args.join(" ")
}

/// `<id>.txt`, `<id>.json.gz` and one `<id>-<variant>.svg` per variant (and the lab's charts).
fn write_results(
    dir: &Path,
    report: &LabReport,
    text_report: &str,
    lang: Lang,
    svg_run: u32,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let id = &report.lab.id;
    let write = |name: String, body: String| {
        std::fs::write(dir.join(&name), body).with_context(|| format!("write {}/{name}", dir.display()))
    };
    write(format!("{id}.txt"), text_report.to_string())?;
    // Compressed: a lab over many orders records tens of thousands of events.
    let gz = dir.join(format!("{id}.json.gz"));
    std::fs::write(&gz, json::gzip(report)).with_context(|| format!("write {}", gz.display()))?;
    record::write(dir, report)?;
    files::write_pictures(dir, report, lang, svg_run)
        .with_context(|| format!("write {id}'s pictures in {}", dir.display()))
}

/// A PNG of each picture written by this run: after every run is over, so drawing them
/// disturbs no race.
fn write_pngs(pictures: &[PathBuf]) -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    files::write_pngs(pictures, cores)?;
    Ok(())
}

/// `SUMMARY.md` and the lab book over every lab whose record is in `dir`, so a single lab's
/// run keeps the others' rows; a record that cannot be read is left out, with a line saying so.
fn write_summary(dir: &Path) -> anyhow::Result<()> {
    let (_, left_out) = files::write_summary_and_book(dir)?;
    left_out.iter().for_each(|line| eprintln!("ordlab: {line}"));
    Ok(())
}

/// `ordlab serve`: the address on stdout once the port is bound, then serve until Ctrl-C or
/// SIGTERM drop this future (and with it a run going on, its servers and processes).
async fn serve(out: PathBuf, port: Option<u16>, lang: Lang, scale: f64, services: &ServiceArgs) -> anyhow::Result<i32> {
    check_services(services)?;
    let opts = ordlab::serve::ServeOptions {
        dir: out,
        port,
        lang,
        scale,
        services: services.options(),
        exe: std::env::current_exe()?,
    };
    ordlab::serve::serve(opts, |addr| {
        use std::io::Write as _;
        println!("ordlab serve: the lab book at http://{addr}/ (Ctrl-C stops it)");
        let _ = std::io::stdout().flush();
    })
    .await?;
    Ok(EXIT_MATCHED)
}

/// `ordlab book`: the lab book, SUMMARY.md and the pictures again from the records alone.
fn book(dir: &Path, lang: Lang) -> anyhow::Result<i32> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rebuilt = files::rebuild_book(dir, lang, cores)?;
    rebuilt.left_out.iter().for_each(|line| eprintln!("ordlab: left out {line}"));
    if !rebuilt.refreshed.is_empty() {
        println!("records refreshed from per-run data: {}", rebuilt.refreshed.join(", "));
    }
    let d = dir.display();
    println!(
        "{} labs in {d}/index.html and {d}/SUMMARY.md, {} pictures (SVG and PNG): {}",
        rebuilt.labs.len(),
        rebuilt.pictures,
        rebuilt.labs.join(", ")
    );
    Ok(EXIT_MATCHED)
}

/// `ordlab libraries`: install every library a built-in scenario pins; exit 1 if one cannot be.
async fn install_libraries() -> anyhow::Result<i32> {
    use ordlab::labs::library::{install, manifest::Manifest};
    let mut pinned = std::collections::BTreeMap::new();
    for lab in ordlab::catalog::all()? {
        for v in &lab.variants {
            if let ordlab::labs::Procedure::Library(spec) = &v.procedure {
                pinned.insert(spec.library.shown(), spec.library.clone());
            }
        }
    }
    // Side by side: each install is mostly waiting for a registry.
    let installs = pinned.values().map(|library| async move {
        let installed = match Manifest::read(library) {
            Ok(m) => install::ensure(&m, library).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        (library, installed)
    });
    let mut failed = 0;
    for (library, installed) in futures::future::join_all(installs).await {
        match installed {
            Ok(i) => println!("{}: {} ({})", library.shown(), i.shown(), i.home.display()),
            Err(e) => {
                failed += 1;
                eprintln!("{e}: its labs are NOT TESTED");
            }
        }
    }
    Ok(if failed == 0 { EXIT_MATCHED } else { EXIT_MISMATCH })
}
