//! One run of a list-queue lab: keys and ledger, worker and supervisor processes, the producer
//! (a task of the orchestrator, gated pushes), the run loop that ends it, and what is left.
//!
//! Workers from a command line (`setup.worker`) take the place of ordlab's own `W<n>`: each
//! gets, besides the common `ORDLAB_*` variables, `ORDLAB_QUEUE`, `ORDLAB_PROCESSING`,
//! `ORDLAB_RETRY`, `ORDLAB_FAILED` (the run's full key names), `ORDLAB_SINK_URL` (the HTTP
//! side-effect sink: `POST $ORDLAB_SINK_URL/$ORDLAB_EFFECT`), `ORDLAB_EFFECT` (`email`),
//! `ORDLAB_WORKER` (its name, `W1`, the body's `from`) and `ORDLAB_COST_MS` (each job's handler
//! work in ms, time scale applied, as JSON `{"*": 100, "job-000001": 300}`). It is ready once
//! blocked in its blocking command. It emits no list events: the run loop reads what it needs
//! off its recorded Redis commands ([`wire_list_event`]).

use crate::checker::total_queue::DeadLetter;
use crate::error::{Context, Error};
use crate::labs::list_queue::list_queue::{JobPlan, ListQueueObserved, ListQueueSpec, PushEnd, EFFECT};
use crate::labs::list_queue::supervisor::ListSupervisorConfig;
use crate::labs::list_queue::worker::ListWorkerConfig;
use crate::labs::{RunContext, RunOutcome};
use crate::list_queue::events::{DeadLetterReason, ListEvent};
use crate::list_queue::{payload_label, ListJob, ListKeys, OnFailure, Take};
use crate::roles::client_list::{is_blocked, wait_for_client, ClientState};
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerEnv};
use crate::roles::{RoleConfig, RoleProcess};
use crate::side_effect::http::HttpSink;
use crate::side_effect::{timeline_events, SideEffectSink, SinkConfig};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, CrashCause, EventKind, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tokio::sync::mpsc;

mod explored;

pub async fn run(spec: &ListQueueSpec, ctx: &mut RunContext<'_>) -> Result<RunOutcome<ListQueueObserved>, Error> {
    let keys = ListKeys::new(&ctx.key_prefix());
    let sink_cfg = SinkConfig::prepare(&ctx.services.pg_config)
        .await?
        .for_run(format!("{}:{}:{}:{}", ctx.nonce, ctx.lab, ctx.variant, ctx.run));
    let ledger = SideEffectSink::connect(&sink_cfg).await?;
    ledger.reset().await?;
    for j in spec.jobs.iter().filter(|j| j.refused > 0) {
        ledger.add_fault(&spec.refusal(j), ctx.scale).await?;
    }
    let deprecation = match spec.take {
        Take::Brpoplpush => deprecation(&mut ctx.redis, "brpoplpush").await,
        _ => None,
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
    // Workers from a command line reach the sink over HTTP; ordlab's own call it directly.
    let http = match spec.worker {
        Some(_) => Some(HttpSink::start(sink_cfg.clone()).await?),
        None => None,
    };
    let mut crew = Crew { keys: keys.clone(), sink: sink_cfg.clone(), tx: tx.clone(), workers: Vec::new(), http };
    let (t0_ns, mut raw, timed_out) = match ctx.control {
        Some(control) => {
            let t0_ns = crate::clock::now_ns();
            let (raw, finished) = explored::run(spec, ctx, control, &mut crew, &mut rx).await?;
            (t0_ns, raw, !finished)
        }
        None => sampled(spec, ctx, &mut crew, &mut rx).await?,
    };
    drop(crew);
    drop(tx);
    crate::labs::consumer_group::drain(rx, &mut raw);
    if let Some(control) = ctx.control {
        raw.extend(control.take_events());
    }
    let records = ledger.records().await?;
    raw.extend(timeline_events(&records));
    let mut observed = leftovers(&mut ctx.redis, &keys, spec.take).await?;
    observed.records = records;
    observed.deprecation = deprecation;
    observed.scale = ctx.scale.0;
    ctx.delete_run_keys().await?;
    Ok(RunOutcome { t0_ns, raw, timed_out, observed })
}

/// A sampled run: the first workers (one, staggered), the supervisor, the producer, until the
/// run ends; t=0, the events, whether it hit its deadline.
async fn sampled(
    spec: &ListQueueSpec,
    ctx: &mut RunContext<'_>,
    crew: &mut Crew,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
) -> Result<(u64, Vec<RawEvent>, bool), Error> {
    let first = if spec.stagger { 1 } else { spec.workers };
    for _ in 0..first {
        crew.start_worker(spec, ctx).await?;
    }
    let keys = crew.keys.clone();
    let supervisor = start_supervisor(spec, ctx, &keys, &crew.tx).await?;
    let producer = crate::connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
    let t0_ns = crate::clock::now_ns();
    let mut raw = Vec::new();
    let timed_out = drive(spec, ctx, producer, crew, rx, &mut raw).await?;
    for w in std::mem::take(&mut crew.workers).into_iter().flatten() {
        w.stop().await;
    }
    crew.http.take();
    if let Some(s) = supervisor {
        s.stop().await;
    }
    Ok((t0_ns, raw, timed_out))
}

/// The worker processes of a run and what starting one more needs.
struct Crew {
    keys: ListKeys,
    sink: SinkConfig,
    tx: mpsc::UnboundedSender<RawEvent>,
    /// `W<i+1>` at index i; None once killed by the runner.
    workers: Vec<Option<CrewMember>>,
    /// The side-effect sink over HTTP, for workers from a command line.
    http: Option<HttpSink>,
}

/// One worker of the crew: ordlab's own process, or one from the scenario's command line.
enum CrewMember {
    Own(RoleProcess),
    Foreign(CommandWorker),
}

impl CrewMember {
    async fn stop(self) {
        match self {
            CrewMember::Own(p) => p.stop().await,
            CrewMember::Foreign(w) => w.stop().await,
        }
    }
}

impl Crew {
    /// Start the next worker `W<n+1>` and wait until it is ready: a blocking worker blocked in
    /// its command (so the first started takes the first job), a polling one connected.
    async fn start_worker(&mut self, spec: &ListQueueSpec, ctx: &mut RunContext<'_>) -> Result<(), Error> {
        let index = self.workers.len() as u32 + 1;
        if spec.worker.is_some() {
            return self.start_foreign(spec, ctx, index).await;
        }
        let cfg = self.worker_config(spec, ctx, index);
        let child = ctx.spawn(&RoleConfig::of(&cfg.clone()), self.tx.clone())?;
        let want = if spec.take == Take::Lease { ClientState::Connected } else { ClientState::Blocked };
        wait_for_client(&mut ctx.redis, &cfg.client_name, want, &child).await?;
        self.workers.push(Some(CrewMember::Own(child)));
        Ok(())
    }

    /// The config of ordlab's own worker `W<index>`.
    fn worker_config(&self, spec: &ListQueueSpec, ctx: &RunContext<'_>, index: u32) -> ListWorkerConfig {
        ListWorkerConfig {
            env: ctx.role_env(index),
            index,
            client_name: ctx.client_name(Actor::Worker(index)),
            keys: self.keys.clone(),
            take: spec.take,
            identity: spec.identity,
            lease_ms: spec.lease_ms,
            poll_ms: spec.poll_ms,
            on_failure: spec.on_failure.clone(),
            on_poison: spec.on_poison,
            cost_ms: spec.worker_cost(index),
            job_cost_ms: spec.jobs.iter().filter_map(|j| j.cost_ms.map(|c| (j.label(), c))).collect(),
            first_cost_ms: spec.jobs.iter().filter_map(|j| j.first_cost_ms.map(|c| (j.label(), c))).collect(),
            faults: spec.faults.iter().filter(|f| f.aims_at(Actor::Worker(index), index)).cloned().collect(),
            sink: self.sink.clone(),
            effect: EFFECT.into(),
        }
    }

    /// Start worker `index` from the scenario's command line, through its interposer, and wait
    /// until it is blocked in its blocking command (under the explorer: its endpoints gated,
    /// started and watched; the explorer waits for its first command).
    pub(super) async fn start_foreign(&mut self, spec: &ListQueueSpec, ctx: &mut RunContext<'_>, index: u32) -> Result<(), Error> {
        let worker = spec.worker.as_ref().expect("a worker command");
        let actor = Actor::Worker(index);
        let client_name = ctx.client_name(actor);
        let scaled = |ms: f64| ctx.scale.duration(ms).as_secs_f64() * 1000.0;
        let mut cost_ms = BTreeMap::from([("*".to_string(), scaled(spec.worker_cost(index)))]);
        cost_ms.extend(spec.jobs.iter().filter_map(|j| j.cost_ms.map(|c| (j.label(), scaled(c)))));
        let sink_url = self.http.as_ref().map(HttpSink::url).unwrap_or_default();
        let extra = [
            ("ORDLAB_QUEUE", self.keys.queue.clone()),
            ("ORDLAB_PROCESSING", self.keys.processing.clone()),
            ("ORDLAB_RETRY", self.keys.retry.clone()),
            ("ORDLAB_FAILED", self.keys.failed.clone()),
            ("ORDLAB_SINK_URL", sink_url),
            ("ORDLAB_EFFECT", EFFECT.to_string()),
            ("ORDLAB_WORKER", actor.to_string()),
        ];
        let env = WorkerEnv {
            index,
            consumer: actor.to_string(),
            key_prefix: ctx.key_prefix(),
            cost_ms,
            seed: ctx.seed_for(index),
            extra: extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            ..WorkerEnv::default()
        };
        let upstreams =
            Upstreams { redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, control: ctx.control };
        let w = CommandWorker::start(worker, &env, actor, &client_name, upstreams, self.tx.clone()).await?;
        let ready = match ctx.control {
            Some(control) => {
                control.watch_exit(actor, w.process.exit_check());
                Ok(())
            }
            None => w.ready(&mut ctx.redis, &client_name, ClientState::Blocked, worker).await,
        };
        self.place(index, CrewMember::Foreign(w));
        ready
    }

    /// Put worker `index` (1-based) in its slot, the slots before it kept (empty where a
    /// worker is registered and not started yet).
    pub(super) fn place(&mut self, index: u32, member: CrewMember) {
        while self.workers.len() < index as usize {
            self.workers.push(None);
        }
        self.workers[index as usize - 1] = Some(member);
    }

    /// SIGKILL worker `index` mid-job, as the plan says; its timeline says so first.
    async fn kill(&mut self, index: u32) {
        let Some(slot) = self.workers.get_mut(index as usize - 1) else { return };
        if let Some(w) = slot.take() {
            self.tx
                .emit(Actor::Worker(index), EventKind::killed_by_runner(crate::timeline::killed_by_runner_mid_job()));
            w.stop().await;
        }
    }
}

/// The supervisor's config: the reaper, the scheduler, or both (None: the lab has neither).
fn supervisor_config(spec: &ListQueueSpec, ctx: &RunContext<'_>, keys: &ListKeys) -> Option<ListSupervisorConfig> {
    if spec.reaper.is_none() && spec.scheduler.is_none() {
        return None;
    }
    Some(ListSupervisorConfig {
        env: ctx.role_env(spec.workers + 1),
        client_name: ctx.client_name(Actor::Reaper),
        keys: keys.clone(),
        reaper_poll_ms: spec.reaper.map(|r| r.poll_ms),
        scheduler_poll_ms: spec.scheduler.map(|r| r.poll_ms),
    })
}

async fn start_supervisor(
    spec: &ListQueueSpec,
    ctx: &mut RunContext<'_>,
    keys: &ListKeys,
    tx: &mpsc::UnboundedSender<RawEvent>,
) -> Result<Option<RoleProcess>, Error> {
    let Some(cfg) = supervisor_config(spec, ctx, keys) else { return Ok(None) };
    let child = ctx.spawn(&RoleConfig::of(&cfg.clone()), tx.clone())?;
    wait_for_client(&mut ctx.redis, &cfg.client_name, ClientState::Connected, &child).await?;
    Ok(Some(child))
}

/// How often the run loop looks whether the run is at rest, once it may be.
const LOOK: Duration = Duration::from_millis(5);

/// What the run loop knows: jobs pushed, who is busy, what each job came to.
#[derive(Default)]
struct Progress {
    next: usize,
    /// The next job waits until this one is taken.
    gate: Option<String>,
    busy: HashMap<Actor, bool>,
    /// Jobs done or dead-lettered, per label.
    settled: HashMap<String, u32>,
    /// Workers the plan killed (not restarted, unlike a planned crash).
    killed_by_plan: HashSet<Actor>,
    /// Workers whose crash was seen: gone, whatever their slot in the crew says.
    dead: HashSet<Actor>,
    /// Lease workers (which poll, so `CLIENT LIST` cannot show them waiting) whose last event
    /// came after their job's last write: nothing in hand until their next take.
    done_writing: HashMap<Actor, bool>,
    last_event: Option<tokio::time::Instant>,
}

/// Push the jobs (each gated job once the previous one was taken), collect events, kill and
/// restart as planned, and end the run. Returns whether it hit its deadline.
async fn drive(
    spec: &ListQueueSpec,
    ctx: &mut RunContext<'_>,
    mut producer: MultiplexedConnection,
    crew: &mut Crew,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
) -> Result<bool, Error> {
    let start = tokio::time::Instant::now();
    let deadline = start + ctx.scale.duration(30_000.0) + Duration::from_secs(10);
    let max_end = spec.max_ms.map(|ms| start + ctx.scale.duration(ms));
    let quiet = ctx.scale.duration(spec.observe_ms);
    let mut p = Progress { last_event: Some(start), ..Progress::default() };
    push_ready(spec, &mut producer, crew, &mut p).await?;
    let mut next_look = start;
    loop {
        if p.next == spec.jobs.len() && all_settled(spec, &p) && p.busy.values().all(|b| !b) {
            return Ok(false);
        }
        let quiet_end = p.last_event.unwrap_or(start) + quiet;
        // While the run could be at rest, look at the server every LOOK (a few ms); when it is
        // at rest the run is over now rather than after `observe_ms` of quiet.
        let look = may_rest(spec, &p).then_some(next_look);
        let wake = [Some(deadline), Some(quiet_end), max_end, look].into_iter().flatten().min().expect("deadline");
        tokio::select! {
            ev = rx.recv() => {
                let Some(ev) = ev else { return Ok(true) };
                p.last_event = Some(tokio::time::Instant::now());
                let list = ev.kind.family::<ListEvent>().or_else(|| wire_list_event(&crew.keys, &ctx.key_prefix(), &ev));
                let step = observe(spec, &ev, list.as_ref(), &mut p);
                let next_worker = spec.stagger
                    && list.as_ref().is_some_and(|e| matches!(e, ListEvent::Taken { .. }))
                    && ev.actor == Actor::Worker(crew.workers.len() as u32)
                    && (crew.workers.len() as u32) < spec.workers;
                raw.push(ev);
                if next_worker {
                    crew.start_worker(spec, ctx).await?;
                }
                match step {
                    Step::Push => push_ready(spec, &mut producer, crew, &mut p).await?,
                    Step::Kill(index) => crew.kill(index).await,
                    Step::Restart => crew.start_worker(spec, ctx).await?,
                    Step::Nothing => {}
                }
            }
            _ = tokio::time::sleep_until(wake) => {
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return Ok(true);
                }
                if look.is_some_and(|l| now >= l) {
                    let names: Vec<String> =
                        (1..=crew.workers.len() as u32).map(|i| ctx.client_name(Actor::Worker(i))).collect();
                    if at_rest(spec, &p, crew, &names, &mut producer).await? {
                        return Ok(false);
                    }
                    next_look = now + LOOK;
                    continue;
                }
                // Quiet (every job pushed, nothing happening) or the lab's end: over.
                if p.next == spec.jobs.len() || max_end.is_some_and(|m| now >= m) {
                    return Ok(false);
                }
            }
        }
    }
}

/// Push every job from `p.next` up to the next gated one (a gated job goes once the job before
/// it was taken: `observe` opens the gate), in one pipeline: the jobs of a batch reach the
/// server together, so a worker takes its first job after every push of the batch was sent,
/// however long the runner waited between two of them on a loaded machine. A push is stamped
/// when it is queued for sending, just before the pipeline goes.
async fn push_ready(
    spec: &ListQueueSpec,
    producer: &mut MultiplexedConnection,
    crew: &Crew,
    p: &mut Progress,
) -> Result<(), Error> {
    let cmd = match spec.push {
        PushEnd::Rpush => "RPUSH",
        PushEnd::Lpush => "LPUSH",
    };
    let mut pipe = redis::pipe();
    let mut batch: Vec<(&JobPlan, u64)> = Vec::new();
    while p.next < spec.jobs.len() && p.gate.is_none() {
        let job: &JobPlan = &spec.jobs[p.next];
        pipe.cmd(cmd).arg(&crew.keys.queue).arg(job.payload());
        batch.push((job, crate::clock::now_ns()));
        p.next += 1;
        if spec.jobs.get(p.next).is_some_and(|j| j.after_taken) {
            p.gate = Some(job.label());
        }
    }
    if batch.is_empty() {
        return Ok(());
    }
    let lens: Vec<i64> = pipe.query_async(producer).await.context(cmd)?;
    for ((job, sent), len) in batch.into_iter().zip(lens) {
        let kind =
            ListEvent::Pushed { job: job.label(), list: "queue:default".into(), len, gated: job.after_taken }.event();
        crew.tx.record(RawEvent { mono_ns: sent, actor: Actor::Producer, kind });
    }
    Ok(())
}

/// What the run loop does after an event.
enum Step {
    Nothing,
    /// A job was taken: push what its gate held back.
    Push,
    /// The plan kills this worker now.
    Kill(u32),
    /// A worker died as planned: its process manager starts another.
    Restart,
}

/// One event (`list`: its list event, its own or read off the wire): who is busy, what is
/// settled, and what the run loop does next.
fn observe(spec: &ListQueueSpec, ev: &RawEvent, list: Option<&ListEvent>, p: &mut Progress) -> Step {
    if let Some(done) = done_writing(spec, list) {
        p.done_writing.insert(ev.actor, done);
    }
    if matches!(ev.kind, EventKind::Crashed { .. }) {
        p.dead.insert(ev.actor);
    }
    match (&ev.kind, list) {
        (_, Some(ListEvent::Taken { job, .. })) => {
            p.busy.insert(ev.actor, true);
            if p.gate.as_ref() == Some(job) {
                p.gate = None;
                return Step::Push;
            }
        }
        (_, Some(ListEvent::ListJobDone { job, .. })) => {
            p.busy.insert(ev.actor, false);
            *p.settled.entry(job.clone()).or_insert(0) += 1;
            if let (Some(k), Actor::Worker(by)) = (spec.kill, ev.actor) {
                if k.after_done_by == by {
                    p.killed_by_plan.insert(Actor::Worker(k.worker));
                    return Step::Kill(k.worker);
                }
            }
        }
        (_, Some(ListEvent::ListDeadLettered { job, .. })) => {
            p.busy.insert(ev.actor, false);
            *p.settled.entry(job.clone()).or_insert(0) += 1;
        }
        (k @ EventKind::Crashed { planned: true, .. }, _) => {
            p.busy.insert(ev.actor, false);
            // A worker from a command line dies of a planned crash by the interposer's SIGKILL:
            // restarted like ordlab's own that kill themselves; one killed by the plan is not.
            let by_plan = k.crash_cause() == Some(CrashCause::KilledByRunner)
                && (spec.worker.is_none() || p.killed_by_plan.contains(&ev.actor));
            if spec.restart && !by_plan {
                return Step::Restart;
            }
        }
        (_, Some(ListEvent::RetryScheduled { .. }))
        | (_, Some(ListEvent::Poison { .. }))
        | (EventKind::Crashed { .. }, _) => {
            p.busy.insert(ev.actor, false);
        }
        _ => {}
    }
    Step::Nothing
}

/// Has ordlab's own worker written the last of its job once it emits this event (Some(true)),
/// or does it hold a job (Some(false))? Each event is emitted after the write it reports, but
/// the seed's failure and max-attempts paths push first and LREM after their event, and the
/// seed's poison is slept over with the job in hand: those are not the end of a job's writes.
fn done_writing(spec: &ListQueueSpec, list: Option<&ListEvent>) -> Option<bool> {
    let atomic_failure = !matches!(spec.on_failure, OnFailure::SeedRetryList);
    match list? {
        ListEvent::Taken { .. } => Some(false),
        ListEvent::ListJobDone { .. } => Some(true),
        ListEvent::RetryScheduled { .. } => Some(atomic_failure),
        ListEvent::ListDeadLettered { reason: DeadLetterReason::Poison, .. } => Some(true),
        ListEvent::ListDeadLettered { .. } => Some(atomic_failure),
        ListEvent::Poison { .. } => Some(false),
        _ => None,
    }
}

/// Could the run be at rest, as far as its events tell? Every job pushed, the run of no fixed
/// length, no worker between a take and its job's end, and every lease worker of ordlab's own
/// past its job's last write (the server is asked only then, [`at_rest`]).
fn may_rest(spec: &ListQueueSpec, p: &Progress) -> bool {
    let lease_workers_idle = spec.take != Take::Lease
        || spec.worker.is_some()
        || p.done_writing.iter().all(|(a, done)| *done || p.dead.contains(a) || p.killed_by_plan.contains(a));
    p.next == spec.jobs.len()
        && p.gate.is_none()
        && spec.max_ms.is_none()
        && p.busy.values().all(|b| !b)
        && lease_workers_idle
}

/// Is the run at rest, so that nothing can happen any more (every job where it will stay)?
/// Read at one instant (MULTI): the queue is empty, no lease is left that a reaper could put
/// back (or a lease worker holds), no retry waits for the scheduler, and every live worker
/// holds nothing: a blocking one has every connection of its name blocked in its take (the
/// commands of its last job all ran before it), a lease worker of ordlab's own polls (its
/// events say so, [`may_rest`]). A job lost, stuck in processing or in `queue:retry` stays so.
async fn at_rest(
    spec: &ListQueueSpec,
    p: &Progress,
    crew: &Crew,
    names: &[String],
    conn: &mut MultiplexedConnection,
) -> Result<bool, Error> {
    let keys = &crew.keys;
    let (clients, queued, leases, delayed): (String, i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("CLIENT")
        .arg("LIST")
        .cmd("LLEN")
        .arg(&keys.queue)
        .cmd("ZCARD")
        .arg(&keys.leases)
        .cmd("ZCARD")
        .arg(&keys.delayed)
        .query_async(conn)
        .await
        .context("MULTI CLIENT LIST LLEN ZCARD")?;
    if queued + leases + delayed > 0 {
        return Ok(false);
    }
    let polls = spec.take == Take::Lease && spec.worker.is_none();
    let live =
        crew.workers.iter().enumerate().filter(|(i, w)| w.is_some() && !p.dead.contains(&Actor::Worker(*i as u32 + 1)));
    Ok(polls || live.map(|(i, _)| &names[i]).all(|name| all_blocked(&clients, name)))
}

/// Does `CLIENT LIST` show at least one connection named `name`, and every one of them blocked?
fn all_blocked(client_list: &str, name: &str) -> bool {
    let needle = format!(" name={name} ");
    let mut lines = client_list.lines().filter(|l| l.contains(&needle)).peekable();
    lines.peek().is_some() && lines.all(is_blocked)
}

/// A worker from a command line's list step, read off one of its recorded Redis commands (its
/// arguments and replies are shown without the run's key prefix): a take into the processing
/// list (`BRPOPLPUSH`/`BLMOVE`/`RPOPLPUSH`/`LMOVE queue processing …`) whose reply is a job is
/// [`ListEvent::Taken`]; `LREM processing 1 <payload>` is [`ListEvent::ListJobDone`] with what
/// it removed. Only the run loop uses these (who is busy, what is settled: the seed also LREMs
/// a job it pushed to `queue:retry`, so that job counts as settled, which changes nothing,
/// since nothing reads `queue:retry` again); the timeline shows the commands themselves, and
/// the checker judges the ledger and the lists as for ordlab's own workers. A take that leaves
/// no copy (`BRPOP`) has no done step: such a run ends once at rest ([`at_rest`]: the worker
/// blocked in its take again, the queue empty), or when it has been quiet for `observe_ms`.
fn wire_list_event(keys: &ListKeys, prefix: &str, ev: &RawEvent) -> Option<ListEvent> {
    let EventKind::ServerCommand { args, reply, error: false, .. } = &ev.kind else { return None };
    let short = |key: &str| key.strip_prefix(prefix).unwrap_or(key).to_string();
    let (queue, processing) = (short(&keys.queue), short(&keys.processing));
    let arg = |i: usize| args.get(i).map(String::as_str);
    match args.first().map(String::as_str)? {
        via @ ("BRPOPLPUSH" | "BLMOVE" | "RPOPLPUSH" | "LMOVE")
            if arg(1) == Some(queue.as_str()) && arg(2) == Some(processing.as_str()) && reply != "(nil)" =>
        {
            Some(ListEvent::Taken { job: wire_label(reply), via: via.to_string(), lease_ms: None })
        }
        "LREM" if arg(1) == Some(processing.as_str()) => {
            let job = payload_label(arg(3)?);
            Some(ListEvent::ListJobDone { job, removed: reply.parse().ok() })
        }
        _ => None,
    }
}

/// A job's label from a reply as the interposer shows it (a long payload is cut short): the
/// payload's label when it parses, else its `"id"` value.
fn wire_label(reply: &str) -> String {
    if ListJob::parse(reply).is_ok() {
        return payload_label(reply);
    }
    let id = reply.split_once("\"id\":\"").and_then(|(_, rest)| rest.split_once('"')).map(|(id, _)| id.to_string());
    id.unwrap_or_else(|| payload_label(reply))
}

/// Every job has come to its end (done, or dead-lettered) as often as it was pushed.
fn all_settled(spec: &ListQueueSpec, p: &Progress) -> bool {
    spec.labels().iter().all(|(label, times)| p.settled.get(label).copied().unwrap_or(0) >= *times)
}

/// What is left in each list, as job labels, and the dead-letter list as the checker wants it.
async fn leftovers(conn: &mut MultiplexedConnection, keys: &ListKeys, take: Take) -> Result<ListQueueObserved, Error> {
    let read = |key: String| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query_async::<Vec<String>>(&mut conn).await.context("LRANGE")
        }
    };
    let strip = |e: &str| {
        e.split_once('|')
            .filter(|(t, _)| t.chars().all(|c| c.is_ascii_digit()))
            .map_or(e.to_string(), |(_, p)| p.to_string())
    };
    let processing_raw = read(keys.processing.clone()).await?;
    let labels = |v: Vec<String>| v.iter().map(|e| payload_label(&strip(e))).collect::<Vec<_>>();
    let failed = read(keys.failed.clone()).await?;
    let dead = failed
        .iter()
        .map(|p| DeadLetter {
            job: payload_label(p),
            reason: if ListJob::parse(p).is_ok() { "max attempts".into() } else { "poison".into() },
        })
        .collect();
    let delayed: Vec<String> = redis::cmd("ZRANGE")
        .arg(&keys.delayed)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn.clone())
        .await
        .context("ZRANGE")?;
    let mut orphans = 0;
    if take == Take::Lease {
        for e in &processing_raw {
            let score: Option<f64> =
                redis::cmd("ZSCORE").arg(&keys.leases).arg(e).query_async(&mut conn.clone()).await.context("ZSCORE")?;
            orphans += u32::from(score.is_none());
        }
    }
    Ok(ListQueueObserved {
        records: Vec::new(),
        queue: labels(read(keys.queue.clone()).await?),
        processing: labels(processing_raw),
        delayed: labels(delayed),
        retry: labels(read(keys.retry.clone()).await?),
        dead,
        orphans,
        deprecation: None,
        scale: 1.0,
    })
}

/// `deprecated since 6.2.0, replaced by BLMOVE with the RIGHT and LEFT arguments`, from the
/// server's COMMAND DOCS (None when the server does not say).
async fn deprecation(conn: &mut MultiplexedConnection, command: &str) -> Option<String> {
    let reply: redis::Value = redis::cmd("COMMAND").arg("DOCS").arg(command).query_async(conn).await.ok()?;
    let docs = doc_fields(&reply)?;
    let since = docs.get("deprecated_since")?;
    let by = docs.get("replaced_by").map(|r| format!(", replaced by {}", r.replace('`', ""))).unwrap_or_default();
    Some(format!("{command} deprecated since {since}{by}"))
}

/// The name → text fields of a one-command COMMAND DOCS reply (RESP2 arrays or RESP3 maps).
fn doc_fields(reply: &redis::Value) -> Option<HashMap<String, String>> {
    use redis::Value;
    let pairs = |v: &Value| -> Option<Vec<(Value, Value)>> {
        match v {
            Value::Map(m) => Some(m.clone()),
            Value::Array(a) => {
                Some(a.chunks(2).filter(|c| c.len() == 2).map(|c| (c[0].clone(), c[1].clone())).collect())
            }
            _ => None,
        }
    };
    let (_, body) = pairs(reply)?.into_iter().next()?;
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    Some(pairs(&body)?.iter().filter_map(|(k, v)| Some((text(k)?, text(v)?))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_is_blocked_when_every_connection_of_its_name_is() {
        let one = "id=3 addr=x name=ordlab-n-W1 age=0 flags=b db=0 cmd=brpoplpush\n\
                   id=4 addr=x name=ordlab-n-W10 age=0 flags=N db=0 cmd=lrem\n";
        assert!(all_blocked(one, "ordlab-n-W1"), "W10's line is not W1's");
        assert!(!all_blocked(one, "ordlab-n-W10"));
        assert!(!all_blocked(one, "ordlab-n-W2"), "no connection: not known to wait");
        let two = format!("{one}id=5 addr=x name=ordlab-n-W1 age=0 flags=N db=0 cmd=lrem\n");
        assert!(!all_blocked(&two, "ordlab-n-W1"), "its other connection may still work");
    }

    #[test]
    fn the_seed_s_failure_paths_still_hold_the_job_after_their_event() {
        let spec = |on_failure: &str| -> ListQueueSpec {
            toml::from_str(&format!("take = \"lease\"\non_failure = {on_failure}\njobs = []\n")).expect("a spec")
        };
        let (seed, backoff) =
            (spec("\"seed-retry-list\""), spec("{ backoff = { base_ms = 1, factor = 2, max_attempts = 2 } }"));
        let retry = ListEvent::RetryScheduled { job: "j".into(), attempt: 2, to: "queue:retry".into(), delay_ms: None };
        let dead = |reason| ListEvent::ListDeadLettered { job: "j".into(), reason };
        assert_eq!(done_writing(&seed, Some(&retry)), Some(false), "RPUSH queue:retry, event, then LREM");
        assert_eq!(done_writing(&backoff, Some(&retry)), Some(true), "one script");
        assert_eq!(done_writing(&seed, Some(&dead(DeadLetterReason::MaxAttempts))), Some(false));
        assert_eq!(done_writing(&seed, Some(&dead(DeadLetterReason::Poison))), Some(true));
        let done = ListEvent::ListJobDone { job: "j".into(), removed: Some(1) };
        assert_eq!(done_writing(&seed, Some(&done)), Some(true));
        let taken = ListEvent::Taken { job: "j".into(), via: "lease script".into(), lease_ms: Some(5.0) };
        assert_eq!(done_writing(&seed, Some(&taken)), Some(false));
        let poison = ListEvent::Poison { payload: "{".into(), slept_ms: 1000.0 };
        assert_eq!(done_writing(&seed, Some(&poison)), Some(false), "slept over with the job in hand");
        assert_eq!(done_writing(&seed, None), None);
    }
}
