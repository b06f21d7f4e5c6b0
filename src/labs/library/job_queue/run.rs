//! One run of a library lab: install (once), an empty library database, the side-effect sink
//! over HTTP, the library's workers through their interposers, its enqueue command, the wait
//! until the run is at rest, then its state command.
//!
//! Each adapter command gets, besides `ORDLAB_REDIS_URL` and `ORDLAB_PG_URL`: `ORDLAB_JOBS`
//! (`[{"key", "queue", "ms", "retry"}]`, time scale applied), `ORDLAB_SINK_URL`; a worker also
//! `ORDLAB_WORKER` (`W1`, the `from` of its ledger requests), `ORDLAB_WORKER_NAME` (the name
//! its connections must carry, so CLIENT LIST finds it waiting) and `ORDLAB_QUEUES`
//! (space-separated).

use super::{LibraryObserved, LibrarySpec};
use crate::error::{Context, Error};
use crate::labs::library::adapter::{parse_state, run_once, Call, LIBRARY_DB};
use crate::labs::library::install::{self, Installed};
use crate::labs::library::manifest::Manifest;
use crate::labs::{RunContext, RunOutcome};
use crate::roles::client_list::ClientState;
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerCommand, WorkerEnv};
use crate::side_effect::http::HttpSink;
use crate::side_effect::{timeline_events, SideEffectSink, SinkConfig};
use crate::timeline::{Actor, EventKind, RawEvent};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub async fn run(spec: &LibrarySpec, ctx: &mut RunContext<'_>) -> Result<RunOutcome<LibraryObserved>, Error> {
    let library = spec.library.shown();
    let broke = |detail: String| Error::Library { library: library.clone(), detail };
    let manifest = Manifest::read(&spec.library).map_err(|e| broke(e.to_string()))?;
    let installed = install::ensure(&manifest, &spec.library)
        .await
        .map_err(|e| broke(format!("cannot be installed: {}", e.detail)))?;
    empty_library_db(ctx).await?;
    let sink_cfg = SinkConfig::prepare(&ctx.services.pg_config)
        .await?
        .for_run(format!("{}:{}:{}:{}", ctx.nonce, ctx.lab, ctx.variant, ctx.run));
    let ledger = SideEffectSink::connect(&sink_cfg).await?;
    ledger.reset().await?;
    let http = HttpSink::start(sink_cfg).await?;
    let env = common_env(spec, ctx, &installed, &http);
    let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
    let mut crew = Crew { manifest: &manifest, env: &env, tx: tx.clone(), workers: Vec::new() };
    for w in &spec.workers {
        crew.start(ctx, &w.queues, &w.faults).await?;
    }
    let call =
        Call { library: &library, redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, env: &env };
    let t0_ns = crate::clock::now_ns();
    run_once(&call, "enqueue", &manifest.enqueue, Actor::Producer, Some(tx.clone())).await?;
    let mut raw = Vec::new();
    let timed_out = settle(spec, ctx, &mut crew, &ledger, &mut rx, &mut raw).await?;
    for w in std::mem::take(&mut crew.workers) {
        w.stop().await;
    }
    drop(crew);
    drop(tx);
    drop(http);
    crate::labs::consumer_group::drain(rx, &mut raw);
    let stdout = run_once(&call, "state", &manifest.state, Actor::Runner, None).await?;
    let states = parse_state(&library, &stdout)?;
    let records = ledger.records().await?;
    raw.extend(timeline_events(&records));
    empty_library_db(ctx).await?;
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
    };
    Ok(RunOutcome { t0_ns, raw, timed_out, observed })
}

/// What every adapter command of the run is told, beyond its servers.
fn common_env(
    spec: &LibrarySpec,
    ctx: &RunContext<'_>,
    installed: &Installed,
    http: &HttpSink,
) -> Vec<(String, String)> {
    let scaled = |ms: f64| ctx.scale.duration(ms).as_secs_f64() * 1000.0;
    let jobs: Vec<serde_json::Value> = spec
        .jobs
        .iter()
        .map(|j| {
            serde_json::json!({
                "key": j.key, "queue": j.queue, "ms": scaled(j.ms.unwrap_or(spec.handler_ms)), "retry": j.retry,
            })
        })
        .collect();
    let mut env = installed.env();
    env.push(("ORDLAB_JOBS".into(), serde_json::Value::Array(jobs).to_string()));
    env.push(("ORDLAB_SINK_URL".into(), http.url()));
    env
}

/// Empty the library's own database, before and after a run.
async fn empty_library_db(ctx: &RunContext<'_>) -> Result<(), Error> {
    let mut url = url::Url::parse(&ctx.services.redis_url).map_err(|e| Error::Library {
        library: "-".into(),
        detail: format!("the run's Redis URL does not parse: {e}"),
    })?;
    url.set_path(&format!("/{LIBRARY_DB}"));
    let mut conn = crate::connect::redis(url.as_str()).await.context("connect to the library's database")?;
    redis::cmd("FLUSHDB").query_async::<()>(&mut conn).await.context("FLUSHDB the library's database")
}

/// The library's worker processes of a run.
struct Crew<'a> {
    manifest: &'a Manifest,
    env: &'a [(String, String)],
    tx: mpsc::UnboundedSender<RawEvent>,
    /// `W<i+1>` at index i, with the queues it serves.
    workers: Vec<CommandWorker>,
}

impl Crew<'_> {
    /// Start `W<n+1>` on `queues` and wait until it waits in its blocking command.
    async fn start(
        &mut self,
        ctx: &mut RunContext<'_>,
        queues: &[String],
        faults: &[crate::fault::Fault],
    ) -> Result<(), Error> {
        let index = self.workers.len() as u32 + 1;
        let actor = Actor::Worker(index);
        let client_name = ctx.client_name(actor);
        let command = WorkerCommand {
            command: self.manifest.worker.clone(),
            count: None,
            // A worker's own faults, whatever they name: they are declared in its table.
            faults: faults
                .iter()
                .map(|f| crate::fault::Fault { target: crate::fault::Target::Process(actor), ..f.clone() })
                .collect(),
            env: BTreeMap::new(),
        };
        let mut extra: BTreeMap<String, String> = self.env.iter().cloned().collect();
        extra.insert("ORDLAB_WORKER".into(), actor.to_string());
        extra.insert("ORDLAB_WORKER_NAME".into(), client_name.clone());
        extra.insert("ORDLAB_QUEUES".into(), queues.join(" "));
        let env = WorkerEnv {
            index,
            redis_db: LIBRARY_DB,
            seed: ctx.seed_for(index),
            extra,
            scale: Some(ctx.scale),
            ..WorkerEnv::default()
        };
        let upstreams =
            Upstreams { redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, control: None };
        let w = CommandWorker::start(&command, &env, actor, &client_name, upstreams, self.tx.clone()).await?;
        let ready = w.ready(&mut ctx.redis, &client_name, ClientState::Blocked, &command).await;
        self.workers.push(w);
        ready
    }
}

/// Wait until the run is at rest: nothing new in the ledger or among the workers for the
/// lab's patience (and at least `at_least_ms` in all). A worker the interposer killed is
/// replaced where the lab restarts workers. True: the deadline came first.
async fn settle(
    spec: &LibrarySpec,
    ctx: &mut RunContext<'_>,
    crew: &mut Crew<'_>,
    ledger: &SideEffectSink,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
) -> Result<bool, Error> {
    let (patience, at_least, deadline) = (
        ctx.scale.duration(spec.patience_ms),
        ctx.scale.duration(spec.at_least_ms),
        ctx.scale.duration(spec.deadline_ms),
    );
    let start = Instant::now();
    let mut last_change = Instant::now();
    let mut seen = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        while let Ok(ev) = rx.try_recv() {
            if let (Actor::Worker(n), EventKind::Crashed { by_runner: true, .. }) = (ev.actor, &ev.kind) {
                last_change = Instant::now();
                if spec.restart {
                    raw.push(ev);
                    let queues = replaced_queues(spec, n);
                    crew.start(ctx, &queues, &[]).await?;
                    continue;
                }
            }
            raw.push(ev);
        }
        let records = ledger.records().await?;
        if records.len() != seen {
            seen = records.len();
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

/// The queues of worker `n`: a scenario's worker, or the one it replaced.
fn replaced_queues(spec: &LibrarySpec, n: u32) -> Vec<String> {
    let i = (n as usize - 1) % spec.workers.len();
    spec.workers[i].queues.clone()
}
