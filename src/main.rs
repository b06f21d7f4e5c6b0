//! The `ordlab` command line: parse cheaply, then build the expensive things (servers,
//! processes). Errors become one line on stderr and an exit code (see `ordlab::error`).

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use ordlab::error::{EXIT_ERROR, EXIT_INTERRUPTED, EXIT_MATCHED, EXIT_MISMATCH};
use ordlab::report::text::{Lang, TextOptions};
use ordlab::report::{json, snapshot, summary, svg, text, LabReport};
use ordlab::runner::{RunOptions, Runner};
use ordlab::scenario::Scenario;
use ordlab::service::{BackendChoice, ServiceOptions, Services};
use ordlab::{bench, catalog, consumer};
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
    List,
    /// Run labs (ids, scenario files, or `all`) and report the outcome.
    Run {
        /// Lab ids (`baseline`), paths to scenario files, or `all`.
        #[arg(required = true)]
        labs: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
        /// Write results/<id>.txt and results/<id>.json into this directory.
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
    /// Re-judge a saved run (results/<id>.json) with no servers; exits as `run` would.
    Check { file: PathBuf },
    /// Which backends work here, server versions and capabilities, what to install.
    Doctor {
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Measure the harness: wall time against injected delay, start time, XADD→receive latency.
    Bench {
        /// Labs to measure (default: every built-in lab).
        labs: Vec<String>,
        #[arg(long, default_value_t = 5)]
        runs: u32,
        #[command(flatten)]
        services: ServiceArgs,
    },
    /// Internal: a consumer process (started by the runner).
    #[command(name = "__consumer", hide = true)]
    Consumer {
        /// The JSON config; read from stdin when absent (how the runner passes it).
        config: Option<String>,
    },
    /// Internal: an outbox dispatcher process (started by the runner).
    #[command(name = "__dispatcher", hide = true)]
    Dispatcher {
        /// The JSON config; read from stdin when absent (how the runner passes it).
        config: Option<String>,
    },
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Runs per variant (default: as the scenario says).
    #[arg(long)]
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
    #[arg(long, default_value = "redis:8")]
    redis_image: String,
    #[arg(long, default_value = "postgres:18")]
    pg_image: String,
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
            ..ServiceOptions::default()
        }
    }
}

fn main() {
    let cli = Cli::parse();
    if let Command::Consumer { config } = &cli.command {
        std::process::exit(run_consumer(&role_config(config)));
    }
    if let Command::Dispatcher { config } = &cli.command {
        std::process::exit(run_dispatcher(&role_config(config)));
    }
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
    std::process::exit(code);
}

/// An error chain on one line: `outer: inner: root`.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// A role's config: the argument if given, else all of stdin.
fn role_config(arg: &Option<String>) -> String {
    arg.clone().unwrap_or_else(|| {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut s);
        s
    })
}

fn run_consumer(config: &str) -> i32 {
    let cfg: consumer::ConsumerConfig = match serde_json::from_str(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ordlab __consumer: bad config: {e}");
            return EXIT_ERROR;
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    match rt.block_on(consumer::run(cfg)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ordlab __consumer: {e}");
            EXIT_ERROR
        }
    }
}

fn run_dispatcher(config: &str) -> i32 {
    let cfg: ordlab::outbox::DispatcherConfig = match serde_json::from_str(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ordlab __dispatcher: bad config: {e}");
            return EXIT_ERROR;
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    match rt.block_on(ordlab::outbox::run_process(cfg)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ordlab __dispatcher: {e}");
            EXIT_ERROR
        }
    }
}

async fn execute(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::List => {
            for s in catalog::all()? {
                println!("{:<16} {:<70} {}", s.id, s.title, s.source);
            }
            Ok(EXIT_MATCHED)
        }
        Command::Doctor { services } => {
            let report = ordlab::service::doctor().await;
            println!("{}", report.to_string().trim_end());
            // Versions and capabilities come from running servers: start the chosen backend once.
            match Services::start(&services.options()).await {
                Ok(s) => {
                    let caps = &s.info.redis;
                    let has = |b: bool| if b { "yes" } else { "no" };
                    println!(
                        "servers       {} backend started in {:.0} ms",
                        s.backend,
                        s.start_time.as_secs_f64() * 1000.0
                    );
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
        Command::Check { file } => {
            let report = json::load(&file)?;
            let rejudged = ordlab::checker::rejudge(&report);
            print!("{}", text::render(&rejudged, &TextOptions::default()));
            Ok(if rejudged.matched() { EXIT_MATCHED } else { EXIT_MISMATCH })
        }
        Command::Run { labs, run, out, format, lang, svg_run, services } => {
            let labs = resolve_labs(&labs)?;
            let services = Services::start(&services.options()).await?;
            let seed = run.seed.unwrap_or_else(rand::random);
            let mut opts = RunOptions::new(run.time_scale, seed);
            opts.runs = run.runs;
            opts.variant = run.variant.clone();
            opts.command_line = command_line();
            let progress = (!run.quiet && std::io::stderr().is_terminal()).then(|| progress_bar(&labs, &run));
            if let Some(bar) = &progress {
                let bar = bar.clone();
                opts.on_run = Some(std::sync::Arc::new(move |v: &str, i: u32, n: u32| {
                    bar.set_message(format!("{v}: run {i}/{n}"));
                    bar.inc(1);
                }));
            }
            let mut runner = Runner::new(&services, std::env::current_exe()?).await?;
            let mut reports = Vec::new();
            for lab in &labs {
                if let Some(v) = &opts.variant {
                    if lab.variant(v).is_none() {
                        let known: Vec<&str> = lab.variants.iter().map(|v| v.id.as_str()).collect();
                        anyhow::bail!("lab {} has no variant {v:?}: its variants are {}", lab.id, known.join(", "));
                    }
                }
                if let Some(bar) = &progress {
                    bar.set_prefix(lab.id.clone());
                }
                let report = runner.run_lab(lab, &opts).await?;
                let text_report = text::render(&report, &TextOptions { lang, ..TextOptions::default() });
                if let Some(dir) = &out {
                    write_results(dir, &report, &text_report, lang, svg_run)?;
                }
                if format == Format::Text {
                    print!("{text_report}");
                }
                reports.push(report);
            }
            drop(runner);
            services.stop().await;
            if let Some(bar) = progress {
                bar.finish_and_clear();
            }
            if let Some(dir) = &out {
                write_summary(dir)?;
            }
            if format == Format::Json {
                println!(
                    "{}",
                    if reports.len() == 1 { json::render(&reports[0]) } else { json::render_many(&reports) }
                );
            }
            Ok(if reports.iter().all(LabReport::matched) { EXIT_MATCHED } else { EXIT_MISMATCH })
        }
        Command::Diff { lab, snapshots, services } => {
            let lab = catalog::find(&lab)?;
            let services = Services::start(&services.options()).await?;
            let mut runner = Runner::new(&services, std::env::current_exe()?).await?;
            let mut opts = RunOptions::new(snapshot::TIME_SCALE, snapshot::SEED);
            opts.max_runs = Some(snapshot::RUNS);
            let report = runner.run_lab(&lab, &opts).await?;
            drop(runner);
            services.stop().await;
            let mut same_all = true;
            for lang in [Lang::En, Lang::Vi] {
                let name = snapshot::file_name(&lab.id, lang);
                let path = snapshots.join(&name);
                let stored = std::fs::read_to_string(&path).with_context(|| {
                    format!("no snapshot {}: run `just test` and `cargo insta review` first", path.display())
                })?;
                let (same, diff) = snapshot::diff(snapshot::snap_body(&stored), &snapshot::normalized(&report, lang));
                println!("== {name}: {diff}");
                same_all &= same;
            }
            Ok(if same_all { EXIT_MATCHED } else { EXIT_MISMATCH })
        }
        Command::Bench { labs, runs, services } => {
            let labs = if labs.is_empty() { catalog::all()? } else { resolve_labs(&labs)? };
            bench::run(&labs, runs, &services.options(), std::env::current_exe()?).await?;
            Ok(EXIT_MATCHED)
        }
        Command::Consumer { .. } | Command::Dispatcher { .. } => unreachable!("handled before the runtime starts"),
    }
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

/// `<id>.txt`, `<id>.json` and one `<id>-<variant>.svg` per variant.
fn write_results(dir: &Path, report: &LabReport, text_report: &str, lang: Lang, svg_run: u32) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let id = &report.lab.id;
    let write = |name: String, body: String| {
        std::fs::write(dir.join(&name), body).with_context(|| format!("write {}/{name}", dir.display()))
    };
    write(format!("{id}.txt"), text_report.to_string())?;
    // Compact: a lab over many orders records tens of thousands of events.
    write(format!("{id}.json"), json::render_compact(report) + "\n")?;
    for v in &report.variants {
        let name = if v.id == *id { format!("{id}.svg") } else { format!("{id}-{}.svg", v.id) };
        write(name, svg::render(report, &svg::readable_window(v, svg_run), svg_run, lang))?;
    }
    Ok(())
}

/// `SUMMARY.md` over every lab whose JSON is in `dir`, so a single lab's run keeps the
/// others' rows.
fn write_summary(dir: &Path) -> anyhow::Result<()> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let reports = paths.iter().map(|p| json::load(p)).collect::<Result<Vec<_>, _>>()?;
    std::fs::write(dir.join("SUMMARY.md"), summary::render(&reports))
        .with_context(|| format!("write {}/SUMMARY.md", dir.display()))?;
    Ok(())
}
