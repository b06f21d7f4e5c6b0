//! The consumer-group side of a stream run, shared by every lab that feeds a stream: the
//! run's streams (one per shard) and their group, the consumer processes, each started and
//! seen blocked in XREADGROUP before the next, an optional claimer, and [`drive`], which
//! publishes while it records every event until the run's own condition says it is over.

use super::RunContext;
use crate::error::{Context as _, Error};
use crate::fault::{Fault, PlannedCrashes};
use crate::handler::order::Strategy;
use crate::orders::HandlerWork;
use crate::roles::claimer::{ClaimerBy, ClaimerConfig, ReaperSpec};
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerCommand, WorkerEnv};
use crate::roles::consumer::ConsumerConfig;
use crate::roles::reuse::RolePool;
use crate::roles::{RoleConfig, RoleProcess};
use crate::streams::{self, StreamEntry, GROUP};
use crate::timeline::{Actor, EventKind, RawEvent};
use redis::aio::MultiplexedConnection;
use std::collections::HashSet;
use std::future::Future;
use tokio::sync::mpsc;

/// Who reads the streams, and how.
pub struct GroupSpec<'a> {
    pub consumers: u32,
    /// Streams the producer routes to by `order mod shards`; consumer i reads shard
    /// (i-1) mod shards.
    pub shards: u32,
    pub strategy: &'a Strategy,
    pub work: HandlerWork,
    /// ordlab's own consumers' faults (each gets those aimed at it).
    pub faults: &'a [Fault],
    pub reaper: Option<&'a ReaperSpec>,
    /// Nodes a consumer looks for a new primary among when its primary fails (`failover`);
    /// empty: none.
    pub follow_primary: &'a [String],
    /// Consumers from a command line instead of ordlab's own (the stream kind).
    pub worker: Option<&'a WorkerCommand>,
    /// The order the consumers start waiting in (default: drawn from the seed).
    pub waiting_order: Option<&'a [u32]>,
    /// A worker from a command line's patience ([`crate::roles::patience`]).
    pub patience_ms: Option<f64>,
}

/// The consumer processes of one run (and its claimer), reading the run's streams.
pub struct ConsumerGroup<'p> {
    pub streams: Vec<String>,
    /// Consumer indices in the order they started waiting in XREADGROUP (longest first).
    pub waiting_order: Vec<u32>,
    processes: Vec<RoleProcess>,
    /// Under the explorer: where its processes are parked at the end of the run, for the next.
    roles: Option<&'p RolePool>,
    /// Workers from a command line, with their interposers, and their client names.
    foreign: Vec<(CommandWorker, String)>,
}

/// Where consumers connect: the shared server, or one a lab started itself.
pub struct Server<'a> {
    pub url: &'a str,
    /// A connection of the orchestrator to it, to watch the consumers get ready.
    pub conn: &'a mut MultiplexedConnection,
}

impl<'p> ConsumerGroup<'p> {
    /// The run's stream names for `shards` shards.
    pub fn stream_names(ctx: &RunContext<'_>, shards: u32) -> Vec<String> {
        let prefix = ctx.key_prefix();
        if shards == 1 {
            vec![format!("{prefix}orders")]
        } else {
            (0..shards).map(|k| format!("{prefix}orders:{k}")).collect()
        }
    }

    /// On the shared server: create the streams and their group, then start the consumers.
    pub async fn start(
        ctx: &mut RunContext<'p>,
        spec: &GroupSpec<'_>,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<ConsumerGroup<'p>, Error> {
        let streams = Self::stream_names(ctx, spec.shards);
        let mut conn = ctx.redis.clone();
        for s in &streams {
            streams::create_group(&mut conn, s, GROUP).await?;
        }
        let url = ctx.services.redis_url.clone();
        Self::start_on(ctx, Server { url: &url, conn: &mut conn }, streams, spec, 1, tx).await
    }

    /// Start consumers `first..` on `server` (whose streams and group exist), one at a time,
    /// each blocked in XREADGROUP before the next, in the run's drawn waiting order (Redis
    /// serves blocked readers first come, first served: the first to wait gets the first
    /// entry), then the claimer if there is one, once it is connected.
    pub async fn start_on(
        ctx: &RunContext<'p>,
        server: Server<'_>,
        streams: Vec<String>,
        spec: &GroupSpec<'_>,
        first: u32,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<ConsumerGroup<'p>, Error> {
        let waiting_order = match spec.waiting_order {
            Some(order) => order.iter().map(|i| i + first - 1).collect(),
            None => ctx.waiting_order(first, spec.consumers),
        };
        let mut group = ConsumerGroup {
            streams,
            waiting_order: waiting_order.clone(),
            processes: Vec::new(),
            roles: ctx.control.and(ctx.roles),
            foreign: Vec::new(),
        };
        // Under the explorer every process is started at once and then waited for: the order in
        // which they first wait is the explorer's, not their start's.
        let mut starting: Vec<(Actor, Option<&WorkerCommand>)> = Vec::new();
        for index in waiting_order {
            if let Some(worker) = spec.worker {
                let actor = Actor::Consumer(index);
                let env = group.worker_env(ctx, spec, index, actor, Default::default());
                let want = ClientState::BlockedInXreadgroup;
                let started = group.start_foreign(ctx, server.url, server.conn, spec, worker, env, want, tx).await;
                started.map_err(|e| match e {
                    // Started one at a time: the first that fails is the only one that ran.
                    Error::WorkerCommand { command, detail } if starting.is_empty() && spec.consumers > 1 => {
                        let n = spec.consumers;
                        Error::WorkerCommand {
                            command,
                            detail: format!(
                                "{detail} (the first of its {n} processes to start; the others were not started)"
                            ),
                        }
                    }
                    other => other,
                })?;
                starting.push((actor, Some(worker)));
                continue;
            }
            let mut cfg = group.consumer_config(ctx, server.url, spec, index, Actor::Consumer(index));
            let name = cfg.client_name.clone();
            if let Some(control) = ctx.control {
                // Under the explorer: through its gated endpoints, ready once its first command waits there.
                let urls = control.endpoints(cfg.actor(), &name, &ctx.key_prefix()).await?;
                (cfg.env.redis_url, cfg.env.pg_config) = (urls.redis_url, urls.pg_url);
                let process = group.spawn(ctx, &RoleConfig::of(&cfg), tx).await?;
                control.watch_exit(cfg.actor(), process.exit_check());
                group.processes.push(process);
                starting.push((cfg.actor(), None));
                continue;
            }
            group
                .start_role(ctx, server.conn, RoleConfig::of(&cfg), &name, ClientState::BlockedInXreadgroup, tx)
                .await?;
        }
        if let (Some(reaper), Some(worker)) = (spec.reaper.filter(|r| r.by == ClaimerBy::Worker), spec.worker) {
            // The worker's own command claims: a process of it told to (`ORDLAB_CONSUMER=reaper`).
            let index = first + spec.consumers;
            let env = group.worker_env(ctx, spec, index, Actor::Reaper, reaper.worker_env(ctx.scale));
            group.start_foreign(ctx, server.url, server.conn, spec, worker, env, ClientState::Connected, tx).await?;
            if let Some(control) = ctx.control {
                control.poller(Actor::Reaper);
            }
            starting.push((Actor::Reaper, Some(worker)));
        } else if let Some(reaper) = spec.reaper {
            let mut consumer = group.consumer_config(ctx, server.url, spec, first + spec.consumers, Actor::Reaper);
            let name = consumer.client_name.clone();
            if let Some(control) = ctx.control {
                // Under the explorer it polls through its gated endpoints; between entries to
                // claim it is parked, waiting for work.
                let urls = control.endpoints(Actor::Reaper, &name, &ctx.key_prefix()).await?;
                (consumer.env.redis_url, consumer.env.pg_config) = (urls.redis_url, urls.pg_url);
                let cfg = RoleConfig::of(&ClaimerConfig { consumer, reaper: reaper.clone() });
                let process = group.spawn(ctx, &cfg, tx).await?;
                control.watch_exit(Actor::Reaper, process.exit_check());
                control.poller(Actor::Reaper);
                group.processes.push(process);
                starting.push((Actor::Reaper, None));
            } else {
                let cfg = RoleConfig::of(&ClaimerConfig { consumer, reaper: reaper.clone() });
                group.start_role(ctx, server.conn, cfg, &name, ClientState::Connected, tx).await?;
            }
        }
        if let Some(control) = ctx.control {
            for (actor, worker) in starting {
                control.ready(actor).await.map_err(|e| match worker {
                    Some(w) => Error::WorkerCommand { command: w.shown(), detail: e.to_string() },
                    None => e,
                })?;
            }
        }
        Ok(group)
    }

    /// What worker `index` is told: its stream and name, the lab's costs, the lock where the
    /// strategy is one, and `extra` (a claimer's min-idle).
    fn worker_env(
        &self,
        ctx: &RunContext<'_>,
        spec: &GroupSpec<'_>,
        index: u32,
        actor: Actor,
        mut extra: std::collections::BTreeMap<String, String>,
    ) -> WorkerEnv {
        if let Strategy::Lock(lock) = spec.strategy {
            extra.extend(lock.worker_env(&ctx.key_prefix(), ctx.scale, ctx.services.info.redis.delex));
        }
        WorkerEnv {
            scale: Some(ctx.scale),
            index,
            stream: self.streams[(index - 1) as usize % self.streams.len()].clone(),
            group: GROUP.to_string(),
            consumer: actor.to_string(),
            key_prefix: ctx.key_prefix(),
            orders_table: format!("{}.orders", crate::connect::SCHEMA),
            cost_ms: spec.work.scaled_costs(ctx.scale),
            seed: ctx.seed_for(index),
            redis_db: 0,
            extra,
        }
    }

    /// Start a process of the worker's command line as `env` says (a consumer, or the
    /// claimer), through its interposer, and wait until it is in `want` (within its patience).
    #[allow(clippy::too_many_arguments)]
    async fn start_foreign(
        &mut self,
        ctx: &RunContext<'_>,
        url: &str,
        conn: &mut MultiplexedConnection,
        spec: &GroupSpec<'_>,
        worker: &WorkerCommand,
        env: WorkerEnv,
        want: ClientState,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let actor = if env.consumer == Actor::Reaper.to_string() { Actor::Reaper } else { Actor::Consumer(env.index) };
        let client_name = ctx.client_name(actor);
        let upstreams = Upstreams { redis_url: url, pg_config: &ctx.services.pg_config, control: ctx.control };
        let w = CommandWorker::start(worker, &env, actor, &client_name, upstreams, tx.clone()).await?;
        let ready = match ctx.control {
            // Under the explorer the group waits for every process once all are started.
            Some(control) => {
                control.watch_exit(actor, w.process.exit_check());
                Ok(())
            }
            None => {
                let patience = crate::roles::patience::of(spec.patience_ms);
                w.ready_within(conn, &client_name, want, worker, patience).await
            }
        };
        self.foreign.push((w, client_name));
        ready
    }

    /// The processes that are not waiting for work now: a worker from a command line waits
    /// when blocked in XREADGROUP, its claimer when its last command (in `events`, since index
    /// `since`) was a claim that found nothing, or a read it blocks in; ordlab's own process
    /// when every entry it received is acknowledged; a process that exited waits for nothing.
    pub async fn not_waiting(
        &self,
        conn: &mut MultiplexedConnection,
        events: &[RawEvent],
        since: usize,
    ) -> Result<Vec<Actor>, Error> {
        let list: String = redis::cmd("CLIENT").arg("LIST").query_async(conn).await.context("CLIENT LIST")?;
        // ordlab's own processes (a claimer beside the workers) are busy while an entry they
        // received is not acknowledged.
        let mut busy: Vec<Actor> = self
            .processes
            .iter()
            .filter(|p| p.exited().is_none() && holds_an_entry(events, p.actor()))
            .map(|p| p.actor())
            .collect();
        for (w, name) in &self.foreign {
            let actor = w.process.actor();
            if w.process.exited().is_some() {
                continue;
            }
            let needle = format!(" name={name} ");
            let blocked = list.lines().any(|l| l.contains(&needle) && ClientState::BlockedInXreadgroup.seen_in(l));
            let idle_claimer = actor == Actor::Reaper
                && events[since.min(events.len())..].iter().rev().find(|e| e.actor == actor).is_some_and(empty_claim);
            if !blocked && !idle_claimer {
                busy.push(actor);
            }
        }
        Ok(busy)
    }

    fn consumer_config(
        &self,
        ctx: &RunContext<'_>,
        url: &str,
        spec: &GroupSpec<'_>,
        index: u32,
        actor: Actor,
    ) -> ConsumerConfig {
        let mut env = ctx.role_env(index);
        env.redis_url = url.to_string();
        ConsumerConfig {
            env,
            index,
            stream: self.streams[(index - 1) as usize % self.streams.len()].clone(),
            group: GROUP.to_string(),
            client_name: ctx.client_name(actor),
            strategy: spec.strategy.clone(),
            work: spec.work.clone(),
            faults: spec.faults.iter().filter(|f| f.aims_at(actor, index)).map(|f| f.resolved(actor)).collect(),
            follow_primary: spec.follow_primary.to_vec(),
            handler: Default::default(),
        }
    }

    async fn start_role(
        &mut self,
        ctx: &RunContext<'_>,
        conn: &mut MultiplexedConnection,
        cfg: RoleConfig,
        client_name: &str,
        want: ClientState,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let child = ctx.spawn(&cfg, tx.clone())?;
        self.processes.push(child);
        wait_for_client(conn, client_name, want, self.processes.last().expect("just pushed")).await
    }

    /// A role process under the explorer: one parked by the last run if there is one.
    async fn spawn(
        &self,
        ctx: &RunContext<'_>,
        cfg: &RoleConfig,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, Error> {
        match self.roles {
            Some(pool) => pool.start(ctx.exe, cfg, tx.clone()).await,
            None => ctx.spawn(cfg, tx.clone()),
        }
    }

    /// Kill every process (or park it for the next run, under the explorer) and wait until
    /// its output is drained.
    pub async fn stop(self) {
        match self.roles {
            Some(pool) => {
                futures::future::join_all(self.processes.into_iter().map(|p| pool.park(p))).await;
            }
            None => {
                for p in self.processes {
                    p.stop().await;
                }
            }
        }
        for (w, _) in self.foreign {
            w.stop().await;
        }
    }
}

/// The streams in log order, every entry tagged with its shard.
pub async fn read_streams(conn: &mut MultiplexedConnection, names: &[String]) -> Result<Vec<StreamEntry>, Error> {
    let mut entries = Vec::new();
    for (k, s) in names.iter().enumerate() {
        entries.extend(streams::read_entries(conn, s, k as u32).await?);
    }
    entries.sort_by_key(|e| streams::id_order(&e.entry_id));
    Ok(entries)
}

/// Has ordlab's own process `actor` received an entry it has not acknowledged (nor died with)?
fn holds_an_entry(events: &[RawEvent], actor: Actor) -> bool {
    let mut held: HashSet<&str> = HashSet::new();
    for e in events.iter().filter(|e| e.actor == actor) {
        match &e.kind {
            EventKind::Received { entry_id, .. } => {
                held.insert(entry_id);
            }
            EventKind::Acked { entry_id } => {
                held.remove(entry_id.as_str());
            }
            _ => {}
        }
    }
    !held.is_empty()
}

/// A claim (`XAUTOCLAIM`, `XCLAIM`) that found nothing: a claimer between entries.
pub fn empty_claim(ev: &RawEvent) -> bool {
    matches!(&ev.kind, EventKind::ServerCommand { args, entries, error: false, .. }
        if entries.is_empty() && args.first().is_some_and(|c| c.eq_ignore_ascii_case("XAUTOCLAIM") || c.eq_ignore_ascii_case("XCLAIM")))
}

/// Every event still in the channel once all its senders are gone.
pub fn drain(mut rx: mpsc::UnboundedReceiver<RawEvent>, raw: &mut Vec<RawEvent>) {
    while let Ok(ev) = rx.try_recv() {
        raw.push(ev);
    }
}

/// What the run has seen of publishing and acknowledging: the usual "is it over?".
#[derive(Default)]
pub struct Progress {
    /// `(shard, entry ID)`: entry IDs are unique per stream only.
    pub published: HashSet<(u32, String)>,
    pub acked: HashSet<(u32, String)>,
    pub crashes: PlannedCrashes,
}

impl Progress {
    pub fn observe(
        &mut self,
        ev: &RawEvent,
        shard_of_order: impl Fn(i64) -> u32,
        shard_of_actor: impl Fn(Actor) -> u32,
    ) {
        match &ev.kind {
            EventKind::Published { entry_id, job, .. } => {
                self.published.insert((shard_of_order(job.order), entry_id.clone()));
            }
            EventKind::Acked { entry_id } => {
                self.acked.insert((shard_of_actor(ev.actor), entry_id.clone()));
            }
            // A worker from a command line acknowledges at the wire: `XACK stream group id…`.
            EventKind::ServerCommand { args, error: false, .. } if args.first().is_some_and(|c| c == "XACK") => {
                for id in args.iter().skip(3) {
                    self.acked.insert((shard_of_actor(ev.actor), id.clone()));
                }
            }
            _ => {}
        }
        self.crashes.observe(ev);
    }

    /// Every event is published at least once in the end (failed attempts retry; several
    /// dispatchers or a crash may publish one twice), so the run is over when the publisher
    /// is done, `events` entries exist and all are acknowledged; or, with no claimer, when a
    /// planned crash left the rest pending for nobody.
    pub fn over(&self, publisher_done: bool, events: usize, consumers: u32, has_claimer: bool) -> bool {
        publisher_done
            && ((self.published.len() >= events && self.acked.is_superset(&self.published))
                || (!has_claimer && self.crashes.settled(&self.published, &self.acked, consumers)))
    }
}

/// Drive `publish` while recording every event into `raw`, until `over(event, publisher
/// done)` says the run is over (`over(Some(event), …)` sees each event first). Returns the
/// publisher's result, or None when the deadline passed or every sender is gone first.
pub async fn drive<T>(
    publish: impl Future<Output = Result<T, Error>>,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    deadline: tokio::time::Instant,
    mut over: impl FnMut(Option<&RawEvent>, bool) -> bool,
) -> Result<Option<T>, Error> {
    tokio::pin!(publish);
    let mut result = None;
    loop {
        if result.is_some() && over(None, true) {
            return Ok(result);
        }
        tokio::select! {
            r = &mut publish, if result.is_none() => { result = Some(r?); }
            ev = rx.recv() => match ev {
                Some(ev) => { over(Some(&ev), result.is_some()); raw.push(ev); }
                None => return Ok(None),
            },
            _ = tokio::time::sleep_until(deadline) => return Ok(None),
        }
    }
}

/// How long a run with workers from a command line waits for them ([`drive_workers`]).
pub struct Patience {
    /// The whole run's bound (only a hung run reaches it).
    pub deadline: tokio::time::Instant,
    /// How long nothing may move before the run is cut, and how long after the last ack the
    /// workers have to be back waiting for work.
    pub patience: std::time::Duration,
    /// How long nothing moves, every worker waiting and the publisher done, before the run
    /// is over without every entry acknowledged (a killed consumer's entry nobody claims):
    /// long enough for a claimer's min-idle and poll.
    pub quiet: std::time::Duration,
}

/// How often a run with workers from a command line asks the server where they are.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// As [`drive`], for workers from a command line: the run's final state is read only once
/// every worker is back waiting for work (blocked in XREADGROUP; a claimer between claims) or
/// has exited. When `over` says every entry is acknowledged, the workers have `patience` to
/// get back there; one that does not is recorded as cut mid-entry
/// ([`PatienceEvent::NotBackWaiting`]). Before that, a run in which nothing moves for `quiet`
/// while every worker waits and the publisher is done is over as it stands; one in which
/// nothing moves for `patience` while some worker does not wait is cut
/// ([`PatienceEvent::NoProgress`]). Returns the publisher's result (None if it never finished)
/// and whether the run hit its deadline.
pub async fn drive_workers<T>(
    publish: impl Future<Output = Result<T, Error>>,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    group: &ConsumerGroup<'_>,
    conn: &mut MultiplexedConnection,
    wait: Patience,
    mut over: impl FnMut(Option<&RawEvent>, bool) -> bool,
) -> Result<(Option<T>, bool), Error> {
    use crate::roles::patience::{last_command, PatienceEvent};
    use tokio::time::Instant;
    tokio::pin!(publish);
    let mut result = None;
    let mut moved = Instant::now();
    let mut looked = Instant::now();
    let cut =
        |raw: &mut Vec<RawEvent>, busy: &[Actor], event: &dyn Fn(u64, String) -> PatienceEvent, since: Instant| {
            let waited_ms = since.elapsed().as_millis() as u64;
            for a in busy {
                let last = last_command(raw, *a);
                raw.push(RawEvent::now(*a, crate::timeline::vocabulary::Vocabulary::event(&event(waited_ms, last))));
            }
        };
    // Until every entry is acknowledged (or the run is quiet, or cut).
    loop {
        if result.is_some() && over(None, true) {
            break;
        }
        let now = Instant::now();
        if now >= wait.deadline {
            return Ok((result, true));
        }
        if now.duration_since(moved) >= wait.quiet.min(wait.patience) && now.duration_since(looked) >= LOOK_EVERY {
            looked = now;
            let busy = group.not_waiting(conn, raw, 0).await?;
            if busy.is_empty() && result.is_some() && now.duration_since(moved) >= wait.quiet {
                return Ok((result, false));
            }
            if !busy.is_empty() && now.duration_since(moved) >= wait.patience {
                cut(raw, &busy, &|waited_ms, last| PatienceEvent::NoProgress { waited_ms, last }, moved);
                return Ok((result, false));
            }
        }
        let wake = wait.deadline.min(now + LOOK_EVERY);
        tokio::select! {
            r = &mut publish, if result.is_none() => { result = Some(r?); moved = Instant::now(); }
            ev = rx.recv() => match ev {
                Some(ev) => {
                    if !idle_poll(&ev) {
                        moved = Instant::now();
                    }
                    over(Some(&ev), result.is_some());
                    raw.push(ev);
                }
                None => return Ok((result, false)),
            },
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
    // Every entry is acknowledged: the workers have their patience to be back waiting.
    let (since, acked_at) = (raw.len(), Instant::now());
    loop {
        let busy = group.not_waiting(conn, raw, since).await?;
        if busy.is_empty() {
            return Ok((result, false));
        }
        if acked_at.elapsed() >= wait.patience {
            cut(raw, &busy, &|waited_ms, last| PatienceEvent::NotBackWaiting { waited_ms, last }, acked_at);
            return Ok((result, false));
        }
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => raw.push(ev),
                None => return Ok((result, false)),
            },
            _ = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
}

/// A read or claim that found nothing (a poll): no progress.
fn idle_poll(ev: &RawEvent) -> bool {
    empty_claim(ev)
        || matches!(&ev.kind, EventKind::ServerCommand { args, entries, error: false, .. }
            if entries.is_empty() && args.first().is_some_and(|c| c.eq_ignore_ascii_case("XREADGROUP")))
}
