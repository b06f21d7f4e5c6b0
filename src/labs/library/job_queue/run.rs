//! One run of a library lab: install (once), an empty library database (its Redis database, or
//! a PostgreSQL database of its own), the side-effect sink over HTTP, the library's workers
//! through their interposers, its enqueue command, the wait until the run is at rest, then its
//! state command.
//!
//! Each adapter command gets, besides `ORDLAB_REDIS_URL` and `ORDLAB_PG_URL`: `ORDLAB_JOBS`
//! (`[{"key", "queue", "ms", "retry", "fail", "options"}]`, time scale applied to `ms`),
//! `ORDLAB_OPTIONS` (the lab's library settings, JSON), `ORDLAB_SINK_URL`; a worker also
//! `ORDLAB_WORKER` (`W1`, the `from` of its ledger requests), `ORDLAB_WORKER_NAME` (the name
//! its connections must carry, so CLIENT LIST finds it waiting) and `ORDLAB_QUEUES`
//! (space-separated).

use super::stage::{Place, Stage};
use super::{LibraryObserved, LibrarySpec};
use crate::error::{Context, Error};
use crate::fault::Fault;
use crate::labs::library::adapter::{parse_state, run_once, Call, LIBRARY_DB};
use crate::labs::library::install::{self, Installed};
use crate::labs::library::manifest::{Backend, Manifest};
use crate::labs::{RunContext, RunOutcome};
use crate::side_effect::http::HttpSink;
use crate::side_effect::{timeline_events, SideEffectSink, SinkConfig};
use crate::timeline::{Actor, EventKind, RawEvent};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

mod crew;
use crew::Crew;

/// The PostgreSQL database a PostgreSQL-backed library keeps its jobs in, made afresh per run.
pub const LIBRARY_PG_DB: &str = "ordlab_library";

pub async fn run(spec: &LibrarySpec, ctx: &mut RunContext<'_>) -> Result<RunOutcome<LibraryObserved>, Error> {
    let library = spec.library.shown();
    let broke = |detail: String| Error::Library { library: library.clone(), detail };
    let manifest = Manifest::read(&spec.library).map_err(|e| broke(e.to_string()))?;
    let installed = install::ensure(&manifest, &spec.library)
        .await
        .map_err(|e| broke(format!("cannot be installed: {}", e.detail)))?;
    empty_library_db(ctx).await?;
    let pg_config = match manifest.backend {
        Backend::Postgres => fresh_database(ctx).await?,
        Backend::Redis => ctx.services.pg_config.clone(),
    };
    let sink_cfg = SinkConfig::prepare(&ctx.services.pg_config)
        .await?
        .for_run(format!("{}:{}:{}:{}", ctx.nonce, ctx.lab, ctx.variant, ctx.run));
    let ledger = SideEffectSink::connect(&sink_cfg).await?;
    ledger.reset().await?;
    let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
    let (stage, mut to_start) = Stage::new(spec, manifest.enqueue.clone(), job_entries(spec, ctx), tx.clone());
    let http = HttpSink::start_observed(sink_cfg, Some(stage.observer())).await?;
    let env = common_env(spec, ctx, &installed, &http);
    stage.set_place(Place { library: library.clone(), redis_url: ctx.services.redis_url.clone(), pg_config, env });
    let scripts = scripts(&manifest, &stage).await?;
    let mut crew = Crew::new(spec, &manifest, stage.clone(), tx.clone(), &scripts);
    // A worker that starts at a job's start waits for it (the stage says when).
    let with_run = || spec.workers.iter().enumerate().filter(|(_, w)| w.starts_at.is_none());
    if !spec.enqueue_first {
        for (i, w) in with_run() {
            crew.start(ctx, &w.queues, Some(i), false).await?;
        }
    }
    let t0_ns = crate::clock::now_ns();
    stage.enqueue(Some(&stage.first_jobs(spec)), Actor::Producer).await?;
    if spec.enqueue_first {
        for (i, w) in with_run() {
            crew.start(ctx, &w.queues, Some(i), true).await?;
        }
    }
    let mut raw = Vec::new();
    let mut at = Settle { ctx, crew: &mut crew, ledger: &ledger, rx: &mut rx, to_start: &mut to_start, raw: &mut raw };
    let mut settled = at.settle(spec).await;
    if let (Ok(false), Some(after_s)) = (&settled, spec.recover_after_s) {
        settled = at.recover(spec, &manifest, &stage, after_s).await;
    }
    crew.stop().await;
    drop(tx);
    drop(http);
    let timed_out = settled?;
    if let Some(e) = stage.error() {
        return Err(e);
    }
    crate::labs::consumer_group::drain(rx, &mut raw);
    let place = stage.place();
    let call = Call { library: &library, redis_url: &place.redis_url, pg_config: &place.pg_config, env: &place.env };
    let stdout = run_once(&call, "state", &manifest.state, Actor::Runner, None).await?;
    let states = parse_state(&library, &stdout)?;
    let records = ledger.records().await?;
    raw.extend(timeline_events(&records));
    name_scripts(&mut raw, &scripts);
    empty_library_db(ctx).await?;
    if manifest.backend == Backend::Postgres {
        drop_database(ctx).await?;
    }
    let workers_started = raw
        .iter()
        .filter_map(|e| match e.actor {
            Actor::Worker(n) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let observed = LibraryObserved {
        installed,
        guarantee: manifest.guarantee,
        recovery: manifest.recovery.clone(),
        records,
        states,
        workers_started,
        scripts,
    };
    Ok(RunOutcome { t0_ns, raw, timed_out, observed })
}

/// Each job's entry of `ORDLAB_JOBS`, in the lab's order (time scale applied to `ms`).
fn job_entries(spec: &LibrarySpec, ctx: &RunContext<'_>) -> Vec<(String, serde_json::Value)> {
    let scaled = |ms: f64| ctx.scale.duration(ms).as_secs_f64() * 1000.0;
    spec.jobs
        .iter()
        .map(|j| {
            let entry = serde_json::json!({
                "key": j.key, "queue": j.queue, "ms": scaled(j.ms.unwrap_or(spec.handler_ms)), "retry": j.retry,
                "fail": j.fail, "options": j.options,
            });
            (j.key.clone(), entry)
        })
        .collect()
}

/// What every adapter command of the run is told, beyond its servers.
fn common_env(
    spec: &LibrarySpec,
    ctx: &RunContext<'_>,
    installed: &Installed,
    http: &HttpSink,
) -> Vec<(String, String)> {
    let jobs: Vec<serde_json::Value> = job_entries(spec, ctx).into_iter().map(|(_, v)| v).collect();
    let mut env = installed.env();
    env.push(("ORDLAB_JOBS".into(), serde_json::Value::Array(jobs).to_string()));
    env.push(("ORDLAB_OPTIONS".into(), serde_json::to_string(&spec.options).expect("JSON values")));
    env.push(("ORDLAB_SINK_URL".into(), http.url()));
    env
}

/// A fault as the interposer matches it, aimed at `actor`: a script the adapter names
/// (`command = "moveToActive"`) becomes `EVALSHA` with its SHA1 as the pattern.
pub(crate) fn wire_fault(f: &Fault, actor: Actor, scripts: &BTreeMap<String, String>) -> Fault {
    let mut f = Fault { target: crate::fault::Target::Process(actor), ..f.clone() };
    if let crate::fault::Trigger::Command { command: Some(c), pattern, .. } = &mut f.trigger {
        if let Some((sha, _)) = scripts.iter().find(|(_, name)| name.as_str() == c.as_str()) {
            *pattern = Some(sha.clone());
            *c = "EVALSHA".into();
        }
    }
    f
}

/// The adapter's Lua scripts by SHA1 (`{"<sha>": "moveToActive"}`), empty when it names none.
async fn scripts(manifest: &Manifest, stage: &Stage) -> Result<BTreeMap<String, String>, Error> {
    if manifest.scripts.is_empty() {
        return Ok(BTreeMap::new());
    }
    let place = stage.place();
    let call =
        Call { library: &place.library, redis_url: &place.redis_url, pg_config: &place.pg_config, env: &place.env };
    let out = run_once(&call, "scripts", &manifest.scripts, Actor::Runner, None).await?;
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{')).unwrap_or("");
    serde_json::from_str(line).map_err(|e| Error::Library {
        library: place.library.clone(),
        detail: format!("the scripts command printed no JSON of the form {{\"<sha1>\": \"<name>\"}} ({e})"),
    })
}

/// Name each script a command runs: `EVALSHA <sha>` → `EVALSHA moveToActive`, `EVAL <body>` and
/// `SCRIPT LOAD <body>` → the script's name (its SHA1 looked up) where the adapter named it,
/// `<script 9a2b966a>` otherwise; and cut every argument longer than a timeline line holds
/// (a message body, a heartbeat) to its start and its length.
fn name_scripts(raw: &mut [RawEvent], scripts: &BTreeMap<String, String>) {
    for e in raw.iter_mut() {
        let EventKind::ServerCommand { args, server, .. } = &mut e.kind else { continue };
        if *server == crate::timeline::ServerKind::Postgres {
            // A library's SQL spans many lines: one line, its start and its length.
            if let Some(sql) = args.first_mut() {
                let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
                *sql = cut(&one_line, LONG_SQL);
            }
            continue;
        }
        let at = match args.first().map(|a| a.to_ascii_uppercase()).as_deref() {
            Some("EVALSHA" | "EVALSHA_RO" | "EVAL" | "EVAL_RO") => Some(1),
            Some("SCRIPT") if args.get(1).is_some_and(|s| s.eq_ignore_ascii_case("LOAD")) => Some(2),
            _ => None,
        };
        if let Some(arg) = at.and_then(|at| args.get_mut(at)) {
            let is_sha = arg.len() == 40 && arg.bytes().all(|b| b.is_ascii_hexdigit());
            let sha = if is_sha {
                arg.to_ascii_lowercase()
            } else {
                sha1_smol::Sha1::from(arg.as_bytes()).digest().to_string()
            };
            match scripts.get(&sha) {
                Some(name) => *arg = name.clone(),
                None if !is_sha => *arg = format!("<script {}>", &sha[..8]),
                None => {}
            }
        }
        for arg in args.iter_mut() {
            *arg = cut(arg, LONG_ARG);
        }
    }
}

/// `text`, or its start and its length when it is longer than `max` bytes.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = (0..=max / 2).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    format!("{}… ({} bytes)", text[..end].replace('\n', " "), text.len())
}

/// An argument longer than this is cut in the timeline (the JSON keeps it cut too).
const LONG_ARG: usize = 120;
/// A statement longer than this (on one line) is cut.
const LONG_SQL: usize = 600;

/// Empty the library's own Redis database, before and after a run.
async fn empty_library_db(ctx: &RunContext<'_>) -> Result<(), Error> {
    let mut url = url::Url::parse(&ctx.services.redis_url).map_err(|e| Error::Library {
        library: "-".into(),
        detail: format!("the run's Redis URL does not parse: {e}"),
    })?;
    url.set_path(&format!("/{LIBRARY_DB}"));
    let mut conn = crate::connect::redis(url.as_str()).await.context("connect to the library's database")?;
    redis::cmd("FLUSHDB").query_async::<()>(&mut conn).await.context("FLUSHDB the library's database")
}

/// A PostgreSQL database of the library's own, made afresh (one a run before may have left);
/// its config string.
async fn fresh_database(ctx: &RunContext<'_>) -> Result<String, Error> {
    drop_database(ctx).await?;
    ctx.pg.batch_execute(&format!("CREATE DATABASE {LIBRARY_PG_DB}")).await.context("create the library's database")?;
    Ok(with_dbname(&ctx.services.pg_config, LIBRARY_PG_DB))
}

async fn drop_database(ctx: &RunContext<'_>) -> Result<(), Error> {
    ctx.pg
        .batch_execute(&format!("DROP DATABASE IF EXISTS {LIBRARY_PG_DB} WITH (FORCE)"))
        .await
        .context("drop the library's database")
}

/// A libpq `key=value` config with its `dbname` replaced (or added).
fn with_dbname(config: &str, db: &str) -> String {
    let mut words: Vec<String> =
        config.split_whitespace().filter(|w| !w.starts_with("dbname=")).map(str::to_string).collect();
    words.push(format!("dbname={db}"));
    words.join(" ")
}

/// The workers with a handler started and not ended (nor failed) in `records`.
fn open_on(records: &[crate::side_effect::EffectRecord]) -> Vec<u32> {
    use crate::labs::library::checker::{END, FAIL, START};
    let mut open: Vec<(u32, &str, Option<u32>)> = Vec::new();
    for r in records {
        let Actor::Worker(n) = r.actor else { continue };
        match r.effect.as_str() {
            START => open.push((n, r.job.as_str(), r.delivery)),
            END | FAIL => {
                if let Some(i) = open.iter().position(|o| *o == (n, r.job.as_str(), r.delivery)) {
                    open.remove(i);
                }
            }
            _ => {}
        }
    }
    open.into_iter().map(|(n, _, _)| n).collect()
}

/// What waiting for the run to come to rest reads and moves: the workers, the ledger, the
/// events, and the scenario's workers the stage says to start now.
struct Settle<'a, 'c, 'w> {
    ctx: &'a mut RunContext<'c>,
    crew: &'a mut Crew<'w>,
    ledger: &'a SideEffectSink,
    rx: &'a mut mpsc::UnboundedReceiver<RawEvent>,
    to_start: &'a mut mpsc::UnboundedReceiver<usize>,
    raw: &'a mut Vec<RawEvent>,
}

impl Settle<'_, '_, '_> {
    /// Wait until the run is at rest: nothing new in the ledger or among the workers for the
    /// lab's patience (and at least `at_least_ms` in all). A worker the lab killed or stopped
    /// is replaced where the lab restarts workers; a worker that starts at a job's start is
    /// started. True: the deadline came first.
    async fn settle(&mut self, spec: &LibrarySpec) -> Result<bool, Error> {
        let scale = self.ctx.scale;
        let (patience, at_least, deadline) =
            (scale.duration(spec.patience_ms), scale.duration(spec.at_least_ms), scale.duration(spec.deadline_ms));
        let start = Instant::now();
        let mut last_change = Instant::now();
        let mut seen = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            while let Ok(i) = self.to_start.try_recv() {
                self.crew.start(self.ctx, &spec.workers[i].queues, Some(i), false).await?;
                last_change = Instant::now();
            }
            while let Ok(ev) = self.rx.try_recv() {
                let replaced = match (&ev.actor, &ev.kind) {
                    (Actor::Worker(n), EventKind::Crashed { by_runner: true, .. }) => Some(*n),
                    (Actor::Worker(n), EventKind::Family(f)) if f.kind() == "stopped" => Some(*n),
                    _ => None,
                };
                self.raw.push(ev);
                if let Some(n) = replaced {
                    last_change = Instant::now();
                    if spec.restart {
                        let queues = self.crew.queues_of(n);
                        self.crew.start(self.ctx, &queues, None, false).await?;
                        // Its start took time the run was not at rest.
                        last_change = Instant::now();
                    }
                }
            }
            let records = self.ledger.records().await?;
            if records.len() != seen {
                seen = records.len();
                last_change = Instant::now();
            }
            // A job whose handler started on a worker still alive (paused, or working long)
            // is no rest, however long the ledger stays quiet.
            if open_on(&records).into_iter().any(|n| self.crew.is_alive(n)) {
                last_change = Instant::now();
            }
            if start.elapsed() >= at_least && last_change.elapsed() >= patience {
                return Ok(false);
            }
            if start.elapsed() >= deadline {
                return Ok(true);
            }
        }
    }

    /// Run the library's own recovery as it runs `after_s` later, then wait until the run is
    /// at rest again.
    async fn recover(
        &mut self,
        spec: &LibrarySpec,
        manifest: &Manifest,
        stage: &Stage,
        after_s: f64,
    ) -> Result<bool, Error> {
        use crate::timeline::vocabulary::Vocabulary as _;
        let place = stage.place();
        let mut env = place.env.clone();
        env.push(("ORDLAB_RECOVER_AFTER_S".into(), after_s.to_string()));
        let call =
            Call { library: &place.library, redis_url: &place.redis_url, pg_config: &place.pg_config, env: &env };
        let event = crate::labs::library::events::LibraryEvent::RecoveryRun { after_s };
        self.raw.push(RawEvent::now(Actor::Runner, event.event()));
        let (tx, mut commands) = mpsc::unbounded_channel();
        run_once(&call, "recover", &manifest.recover, Actor::Runner, Some(tx)).await?;
        while let Ok(e) = commands.try_recv() {
            self.raw.push(e);
        }
        self.settle(spec).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_named_by_a_script_is_its_evalsha_and_only_that_one() {
        use crate::fault::{Moment, Target, Trigger};
        let scripts = BTreeMap::from([("ab12".to_string(), "moveToActive".to_string())]);
        let declared = Fault::kill_at(Target::Index(1), "moveToActive", 1, Moment::Reply);
        let wire = wire_fault(&declared, Actor::Worker(1), &scripts);
        let Trigger::Command { command, pattern, .. } = &wire.trigger else { panic!("{wire:?}") };
        assert_eq!((command.as_deref(), pattern.as_deref()), (Some("EVALSHA"), Some("ab12")));
        assert_eq!(wire.target, Target::Process(Actor::Worker(1)));
        let plain =
            wire_fault(&Fault::kill_at(Target::Index(1), "BRPOP", 1, Moment::Reply), Actor::Worker(1), &scripts);
        let Trigger::Command { command, pattern, .. } = &plain.trigger else { panic!("{plain:?}") };
        assert_eq!((command.as_deref(), pattern.as_deref()), (Some("BRPOP"), None));
    }

    #[test]
    fn the_library_database_replaces_the_runs() {
        assert_eq!(
            with_dbname("host=127.0.0.1 port=5 user=postgres dbname=postgres", "lib"),
            "host=127.0.0.1 port=5 user=postgres dbname=lib"
        );
        assert_eq!(with_dbname("host=h password=x", "lib"), "host=h password=x dbname=lib");
    }

    #[test]
    fn scripts_are_named_by_their_sha_or_their_body() {
        let body = "return 1";
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        let scripts = BTreeMap::from([(sha.clone(), "one".to_string())]);
        let cmd = |args: &[&str]| RawEvent {
            mono_ns: 0,
            actor: Actor::Worker(1),
            kind: EventKind::ServerCommand {
                server: crate::timeline::ServerKind::Redis,
                connection: 1,
                args: args.iter().map(|a| a.to_string()).collect(),
                reply: String::new(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
        };
        let mut raw = vec![
            cmd(&["EVALSHA", &sha.to_uppercase(), "0"]),
            cmd(&["EVAL", body, "0"]),
            cmd(&["SCRIPT", "LOAD", body]),
            cmd(&["EVALSHA", "0000000000000000000000000000000000000000", "0"]),
            cmd(&["SCRIPT", "LOAD", "return 2"]),
            cmd(&["LPUSH", "q", &"x".repeat(200)]),
        ];
        name_scripts(&mut raw, &scripts);
        let shown: Vec<String> = raw
            .iter()
            .map(|e| match &e.kind {
                EventKind::ServerCommand { args, .. } => args.join(" "),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "EVALSHA one 0",
                "EVAL one 0",
                "SCRIPT LOAD one",
                "EVALSHA 0000000000000000000000000000000000000000 0",
                &format!("SCRIPT LOAD <script {}>", &sha1_smol::Sha1::from("return 2").digest().to_string()[..8]),
                &format!("LPUSH q {}… (200 bytes)", "x".repeat(60)),
            ]
        );
    }
}
