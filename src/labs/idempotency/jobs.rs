//! Jobs with side effects under at-least-once delivery (seed 000's idempotency half): a queue
//! of jobs on one stream, one worker process at a time (a supervisor starts the next when one
//! is SIGKILLed at a planned point), a claimer that hands back what a dead or failed worker
//! left pending (`XAUTOCLAIM`), an idempotency technique ported from the seed, and a partner
//! that can refuse or lose its reply. The verdict counts each job's effects in the
//! side-effect sink's ledger: exactly once is right; lost or duplicated is wrong. Labs
//! `idempotency`, `idem-antipatterns`, `multistep` and `foreign-jobs` are this kind; a
//! scenario's `worker = { command = [...] }` runs anyone's job worker in place of ordlab's own
//! ([`foreign`]).

mod explored;
mod foreign;
mod plan;
mod publish;

pub use plan::{Cell, Fate, JobPlan};

use crate::checker::health::health;
use crate::checker::{RunVerdict, Verdict};
use crate::connect::{self, SCHEMA};
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::handler::job::events::JobEvent;
use crate::handler::job::Technique;
use crate::labs::consumer_group::drain;
use crate::labs::idempotency::job_worker::JobWorkerConfig;
use crate::labs::idempotency::worker_pool::{Pool, WorkerTemplate};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
    TimelineDisplay,
};
use crate::lang::{pick, Lang};
use crate::orders::{self, OrderRow};
use crate::roles::claimer::ReaperSpec;
use crate::roles::command_worker::WorkerCommand;
use crate::roles::RoleConfig;
use crate::side_effect::{EffectRecord, SideEffectSink, SinkConfig};
use crate::streams::{self, GROUP};
use crate::timeline::{Actor, EventKind, RawEvent};
use foreign::{ForeignCrew, WireJobs};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// `kind = "jobs"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobsSpec {
    pub technique: Technique,
    /// The claimer: when a pending job counts as abandoned, how often it looks.
    pub reaper: ReaperSpec,
    /// Readers at a time (2 for a race between two workers).
    #[serde(default = "crate::labs::order_stream::one")]
    pub workers: u32,
    /// What the partner does for one-effect techniques, and how long it takes.
    #[serde(default)]
    pub partner: PartnerSpec,
    pub jobs: Vec<JobPlan>,
    /// The lab's prediction, one per job and effect in plan order (`once | lost | twice`).
    pub expect: Vec<Fate>,
    /// Publish with `XADD … IDMP` (Redis ≥ 8.6), remembering at most `maxsize` ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idmp: Option<IdmpSpec>,
    /// Workers from a command line instead of ordlab's own, readers and claimer alike:
    /// `worker = { command = ["python3", "examples/python/jobs_worker.py", "wrapper"] }`;
    /// `technique` then names what the program does (its effects, its tables), and faults
    /// are the interposer's (`worker.faults`), not `jobs[].crash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerCommand>,
    /// How long the lab waits for every job to be acknowledged (ms, before `--time-scale`)
    /// before it gives up; default: a generous bound that only a hung run reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patience_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PartnerSpec {
    #[serde(default = "PartnerSpec::default_effect")]
    pub effect: String,
    /// Each request takes this long at the partner (ms, before `--time-scale`).
    #[serde(default = "PartnerSpec::default_latency")]
    pub latency_ms: f64,
}

impl PartnerSpec {
    fn default_effect() -> String {
        "email".into()
    }
    fn default_latency() -> f64 {
        50.0
    }
}

impl Default for PartnerSpec {
    fn default() -> Self {
        PartnerSpec { effect: Self::default_effect(), latency_ms: Self::default_latency() }
    }
}

/// `XCFGSET <stream> IDMP-MAXSIZE <maxsize>` before publishing (None: the server's 100).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdmpSpec {
    #[serde(default)]
    pub maxsize: Option<u32>,
}

/// What a jobs run left: the partner's ledger, the Redis values of counter techniques, the
/// cells the verdict counts, and entries still pending.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobsObserved {
    /// The stream after the run, in log order: (entry ID, job).
    pub stream: Vec<(String, String)>,
    pub ledger: Vec<EffectRecord>,
    /// `views:<job>` / `status:<job>` → value (1 for a value that is set).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redis_values: BTreeMap<String, i64>,
    pub entries: u32,
    pub pending_after_run: i64,
    /// A run of `ordlab explore` (one schedule): the lab's prediction, which is about the
    /// order the clock picks, is no verdict there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explored: bool,
    /// The order rows the technique is meant to change, as they were once every worker had
    /// stopped (what was never committed is gone by then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orders: Vec<OrderRow>,
}

impl JobsSpec {
    fn effects(&self) -> Vec<String> {
        self.technique.effects(&self.partner.effect)
    }

    /// Each order the jobs are meant to change, and the status they are meant to leave it in.
    pub fn intended_orders(&self) -> Vec<(i64, &'static str)> {
        let Some(status) = self.technique.order_status_after() else { return Vec::new() };
        let mut out: Vec<(i64, &'static str)> = Vec::new();
        for j in &self.jobs {
            if !out.iter().any(|(o, _)| *o == j.order) {
                out.push((j.order, status));
            }
        }
        out
    }

    pub fn cells(&self, observed: &JobsObserved, lang: Lang) -> Vec<Cell> {
        plan::cells(&self.jobs, &self.effects(), &self.expect, &observed.ledger, &observed.redis_values, lang)
    }

    /// Everything a run could wait for, tripled, plus 10 s: only a hung run reaches it. The
    /// scenario's `patience_ms` instead, where it gives one.
    fn bound(&self, scale: TimeScale) -> Duration {
        if let Some(ms) = self.patience_ms {
            return scale.duration(ms);
        }
        let per_job = self.reaper.min_idle_ms + self.reaper.poll_ms + 2.0 * self.partner.latency_ms;
        scale.duration(per_job * 3.0 * self.jobs.len() as f64 * 2.0) + Duration::from_secs(10)
    }

    /// The longest a job works: each of its effects waits the partner's latency.
    fn longest_job_ms(&self) -> f64 {
        self.partner.latency_ms * self.effects().len().max(1) as f64
    }

    fn worker_template(&self, ctx: &RunContext<'_>, stream: &str, sink: SinkConfig) -> JobsTemplate {
        JobsTemplate {
            reaper: self.reaper.clone(),
            cfg: JobWorkerConfig {
                env: ctx.role_env(0),
                actor: Actor::Consumer(0),
                stream: stream.to_string(),
                group: GROUP.to_string(),
                client_name: String::new(),
                claim: None,
                technique: self.technique.clone(),
                effect: self.partner.effect.clone(),
                sink,
                faults: plan::crashes(&self.jobs),
                orders: self.jobs.iter().map(|j| (j.job.clone(), j.order)).collect(),
            },
        }
    }

    /// The partner's faults and latency, the worker's tables, the orders row.
    async fn prepare(&self, ctx: &RunContext<'_>) -> Result<(SinkConfig, SideEffectSink), Error> {
        let sink_cfg = SinkConfig::prepare(&ctx.services.pg_config).await?.for_run(ctx.key_prefix());
        let ledger = SideEffectSink::connect(&sink_cfg).await?;
        ledger.reset().await?;
        for fault in self.jobs.iter().filter_map(JobPlan::partner_fault) {
            ledger.add_fault(&fault, ctx.scale).await?;
        }
        for effect in self.effects() {
            ledger.set_latency(&effect, ctx.scale.duration(self.partner.latency_ms)).await?;
        }
        if self.technique.uses_database() {
            reset_tables(ctx.pg, &self.jobs).await?;
        }
        Ok((sink_cfg, ledger))
    }

    /// Values of the counter techniques' keys after the run.
    async fn redis_values(&self, ctx: &mut RunContext<'_>) -> Result<BTreeMap<String, i64>, Error> {
        let mut out = BTreeMap::new();
        for effect in self.effects().iter().filter(|e| Technique::is_redis_effect(e)) {
            for j in &self.jobs {
                let key = format!("{effect}:{}", j.job);
                let v: Option<String> = redis::cmd("GET")
                    .arg(format!("{}{key}", ctx.key_prefix()))
                    .query_async(&mut ctx.redis)
                    .await
                    .context("GET")?;
                // A counter's value; a written status counts as one effect however often written.
                let n = v.map(|v| v.parse::<i64>().unwrap_or(1)).unwrap_or(0);
                out.insert(key, n);
            }
        }
        Ok(out)
    }
}

impl JobsSpec {
    /// A sampled run: the workers start, the producer publishes while they read, the claimer
    /// starts once every job was handled once; until every job is acknowledged (or the
    /// deadline). Returns t=0, the events, what was seen, whether it finished.
    async fn sampled(
        &self,
        ctx: &mut RunContext<'_>,
        stream: &str,
        sink_cfg: SinkConfig,
        tx: &mpsc::UnboundedSender<RawEvent>,
        rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    ) -> Result<(u64, Vec<RawEvent>, Seen, bool), Error> {
        let mut pool = match &self.worker {
            Some(w) => {
                let what = (stream, self.partner.effect.as_str(), &self.reaper);
                Workers::Foreign(ForeignCrew::start(ctx, w, what, sink_cfg, self.workers, tx).await?)
            }
            None => {
                Workers::Own(Pool::start(ctx, self.worker_template(ctx, stream, sink_cfg), self.workers, tx).await?)
            }
        };
        // A worker from a command line writing to the database: who waits for whose locks, as
        // PostgreSQL says (its connections are named by the interposer).
        let _locks = (matches!(pool, Workers::Foreign(_)) && self.technique.uses_database())
            .then(|| crate::pg_locks::LockWatch::start(&ctx.services.pg_config, tx.clone()));
        let producer = connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
        let bound = self.bound(ctx.scale);
        let deadline = tokio::time::Instant::now() + bound;
        let t0_ns = crate::clock::now_ns();
        let publish = publish::publish(
            producer,
            stream.to_string(),
            self.jobs.clone(),
            self.idmp.is_some(),
            Arc::new(tx.clone()),
        );
        tokio::pin!(publish);
        let (mut raw, mut seen, mut published, mut claiming) = (Vec::new(), Seen::default(), false, false);
        let mut wire = WireJobs::default();
        let finished = loop {
            if seen.over(published) {
                break true;
            }
            // The claimer starts once every job has been handled once, so retries never
            // interleave with first deliveries (the counts would be the same; the order of the
            // timeline's lines would not).
            if !claiming && seen.first_pass_over(published) {
                claiming = true;
                pool.start_claimer(ctx, tx).await?;
            }
            // A worker from a command line says nothing when a job fails: it reads again.
            let look = matches!(pool, Workers::Foreign(_)) && !claiming && !seen.holding.is_empty();
            tokio::select! {
                r = &mut publish, if !published => { r?; published = true; }
                ev = rx.recv() => match ev {
                    Some(ev) => seen.take(ev, &mut wire, &mut raw),
                    None => break false,
                },
                _ = tokio::time::sleep(Duration::from_millis(20)), if look => {
                    let Workers::Foreign(crew) = &pool else { unreachable!("look is for foreign workers") };
                    let readers: Vec<Actor> = seen.holding.keys().copied().collect();
                    let done = crew.blocked_readers(ctx, &readers).await?;
                    // What they did before blocking (their XACK) was recorded before they could.
                    while let Ok(ev) = rx.try_recv() {
                        seen.take(ev, &mut wire, &mut raw);
                    }
                    done.into_iter().for_each(|a| seen.release(a));
                }
                _ = tokio::time::sleep_until(deadline) => {
                    // The lab gives up, and says on what: the entries never acknowledged.
                    let mut waiting: Vec<String> = seen.published.difference(&seen.acked).cloned().collect();
                    waiting.sort();
                    let gave_up = crate::timeline::patience::PatienceEvent::GaveUp {
                        patience_ms: bound.as_secs_f64() * 1000.0,
                        waiting_for: waiting,
                    };
                    use crate::timeline::vocabulary::Vocabulary as _;
                    raw.push(RawEvent::now(Actor::Runner, gave_up.event()));
                    break false;
                }
            }
            for dead in std::mem::take(&mut seen.to_replace) {
                pool.replace(ctx, dead, tx).await?;
            }
        };
        pool.stop().await;
        // What the workers did before they were stopped goes through the same filter and
        // translation as the rest: a last empty poll is no more kept here than in the loop.
        while let Ok(ev) = rx.try_recv() {
            seen.take(ev, &mut wire, &mut raw);
        }
        Ok((t0_ns, raw, seen, finished))
    }
}

/// The worker processes of a run: ordlab's own, or from the scenario's command line.
enum Workers {
    Own(Pool<JobsTemplate>),
    Foreign(ForeignCrew),
}

impl Workers {
    async fn start_claimer(
        &mut self,
        ctx: &mut RunContext<'_>,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        match self {
            Workers::Own(p) => p.start_claimer(ctx, tx).await,
            Workers::Foreign(c) => c.start_claimer(ctx, tx).await,
        }
    }

    async fn replace(
        &mut self,
        ctx: &mut RunContext<'_>,
        dead: Actor,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        match self {
            Workers::Own(p) => p.replace(ctx, dead, tx),
            Workers::Foreign(c) => c.replace(ctx, dead, tx).await,
        }
    }

    async fn stop(self) {
        match self {
            Workers::Own(p) => p.stop().await,
            Workers::Foreign(c) => c.stop().await,
        }
    }
}

/// A jobs worker's config, stamped per process by the pool.
struct JobsTemplate {
    cfg: JobWorkerConfig,
    reaper: ReaperSpec,
}

impl JobsTemplate {
    /// The config of process `actor` (`index`: its seed).
    fn config(&self, ctx: &RunContext<'_>, actor: Actor, index: u32) -> JobWorkerConfig {
        let mut cfg = self.cfg.clone();
        cfg.env = ctx.role_env(index);
        cfg.actor = actor;
        cfg.client_name = ctx.client_name(actor);
        cfg.claim = (actor == Actor::Reaper).then(|| self.reaper.clone());
        cfg
    }
}

impl WorkerTemplate for JobsTemplate {
    fn for_process(&self, ctx: &RunContext<'_>, actor: Actor, index: u32) -> (RoleConfig, String) {
        let cfg = self.config(ctx, actor, index);
        let name = cfg.client_name.clone();
        (RoleConfig::of(&cfg), name)
    }
}

/// The worker's own tables for the database techniques: empty of this run's jobs, each
/// notification pending, order rows at `paid`.
async fn reset_tables(pg: &tokio_postgres::Client, jobs: &[JobPlan]) -> Result<(), Error> {
    pg.batch_execute(&crate::handler::job::create_tables_sql()).await.context("create job tables")?;
    for j in jobs {
        pg.execute(&format!("DELETE FROM {SCHEMA}.processed_orders WHERE order_id = $1"), &[&j.job])
            .await
            .context("reset processed_orders")?;
        pg.execute(
            &format!(
                "INSERT INTO {SCHEMA}.notifications (id, status) VALUES ($1, 'pending')
                 ON CONFLICT (id) DO UPDATE SET status = 'pending', sent_at = NULL"
            ),
            &[&j.job],
        )
        .await
        .context("reset notifications")?;
    }
    let mut rows: Vec<OrderRow> = Vec::new();
    for j in jobs {
        if !rows.iter().any(|r| r.order == j.order) {
            rows.push(OrderRow { order: j.order, status: "paid".into(), version: 2 });
        }
    }
    orders::reset(pg, &rows).await
}

/// The stream in log order: (entry ID, job).
async fn read_jobs(conn: &mut redis::aio::MultiplexedConnection, stream: &str) -> Result<Vec<(String, String)>, Error> {
    let reply: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg(stream).arg("-").arg("+").query_async(conn).await.context("XRANGE")?;
    Ok(reply
        .ids
        .iter()
        .filter_map(|e| Some((e.id.clone(), crate::labs::idempotency::job_worker::job_id(e)?)))
        .collect())
}

/// What the run has seen: entries published, handled once by a reader, acknowledged; planned
/// deaths.
#[derive(Default)]
struct Seen {
    published: HashSet<String>,
    acked: HashSet<String>,
    /// Entries a reader is done with (acknowledged, failed, or it died holding them).
    first_done: HashSet<String>,
    /// The entry each reader holds (one at a time).
    holding: HashMap<Actor, String>,
    /// Workers that died by a planned crash and are not replaced yet.
    to_replace: Vec<Actor>,
}

impl Seen {
    fn observe(&mut self, ev: &RawEvent) {
        let reader = matches!(ev.actor, Actor::Consumer(_));
        match (&ev.kind, ev.kind.family::<JobEvent>().as_ref()) {
            (_, Some(JobEvent::JobPublished { entry_id, .. })) => {
                self.published.insert(entry_id.clone());
            }
            (_, Some(JobEvent::JobReceived { entry_id, .. })) if reader => {
                // A worker from a command line that failed a job reads the next one: done with it.
                if let Some(before) = self.holding.insert(ev.actor, entry_id.clone()) {
                    self.first_done.insert(before);
                }
            }
            (_, Some(JobEvent::JobAcked { entry_id, .. })) => {
                self.acked.insert(entry_id.clone());
                self.release(ev.actor);
            }
            (_, Some(JobEvent::JobFailed { .. })) => self.release(ev.actor),
            (EventKind::Crashed { planned: true, .. }, _) if reader => {
                self.release(ev.actor);
                self.to_replace.push(ev.actor);
            }
            _ => {}
        }
    }

    /// Observe `ev` and what it stands for at the wire (a worker from a command line), and
    /// keep both; of the wire's job events only receipts go to the timeline (the XACK shows
    /// as itself). A claimer's empty polls are not kept, as ordlab's own claimer records none:
    /// how many there are is the scheduler's.
    fn take(&mut self, ev: RawEvent, wire: &mut WireJobs, raw: &mut Vec<RawEvent>) {
        let translated = wire.translate(&ev);
        self.observe(&ev);
        if !foreign::empty_poll(&ev) {
            raw.push(ev);
        }
        for t in translated {
            self.observe(&t);
            if matches!(t.kind.family::<JobEvent>(), Some(JobEvent::JobReceived { .. })) {
                raw.push(t);
            }
        }
    }

    fn release(&mut self, actor: Actor) {
        if let Some(entry) = self.holding.remove(&actor) {
            self.first_done.insert(entry);
        }
    }

    /// Every job published and handled once by the readers: time for the retries.
    fn first_pass_over(&self, publisher_done: bool) -> bool {
        publisher_done && !self.published.is_empty() && self.first_done.is_superset(&self.published)
    }

    fn over(&self, publisher_done: bool) -> bool {
        publisher_done && !self.published.is_empty() && self.acked.is_superset(&self.published)
    }
}

/// What a jobs run measured; every figure is the same in every run of the variant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobsFacts {
    /// Jobs whose effect was applied once, never, more than once.
    pub exactly_once: i64,
    pub lost: i64,
    pub duplicated: i64,
    /// Entries in the stream.
    pub entries: i64,
    /// Receipts of a job delivered before.
    pub redelivered: i64,
    pub pending_after_run: i64,
}

impl Facts for JobsFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![
            FactRow::stable("exactly_once", self.exactly_once),
            FactRow::stable("lost", self.lost),
            FactRow::stable("duplicated", self.duplicated),
            FactRow::stable("entries", self.entries),
            FactRow::stable("redelivered", self.redelivered),
            FactRow::stable("pending_after_run", self.pending_after_run),
        ]
    }
}

impl LabProcedure for JobsSpec {
    fn validate(&mut self) -> Result<(), String> {
        if let Some(w) = &self.worker {
            if let Some(n) = w.count {
                self.workers = n;
            }
            // Each fault can kill one reader, whose replacement has the next number.
            w.check(self.workers + w.faults.len() as u32)?;
            if self.jobs.iter().any(|j| j.crash.is_some()) {
                return Err("setup.jobs[].crash is for ordlab's own worker: with setup.worker, declare setup.worker.faults = [{ worker = 1, command = \"SET\", at = \"reply\" }]".into());
            }
        }
        if let Some(j) = self.jobs.iter().find(|j| j.partner.is_some_and(|p| !matches!(p, crate::fault::Action::Refuse | crate::fault::Action::LoseReply))) {
            return Err(format!("setup.jobs[{}].partner: the partner can \"refuse\" or \"apply-then-fail\"", j.job));
        }
        if self.worker.is_none() && self.jobs.iter().any(|j| j.fault.is_some()) {
            return Err("setup.jobs[].fault names what a worker from a command line's interposer fault stands for: add setup.worker, or use setup.jobs[].crash for ordlab's own worker".into());
        }
        crate::labs::order_stream::check_consumers(self.workers).map_err(|e| e.replace("consumers", "workers"))?;
        if self.jobs.is_empty() {
            return Err("setup.jobs is empty: list at least one job".into());
        }
        let cells = self.jobs.len() * self.effects().len();
        if self.expect.len() != cells {
            return Err(format!(
                "setup.expect has {} entries: give one per job and effect ({} jobs × {} effects = {cells})",
                self.expect.len(),
                self.jobs.len(),
                self.effects().len()
            ));
        }
        if self.reaper.min_idle_ms <= 0.0 {
            return Err("setup.reaper.min_idle_ms must be > 0".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<JobsObserved>, Error> {
        let (sink_cfg, ledger) = self.prepare(ctx).await?;
        let stream = format!("{}jobs", ctx.key_prefix());
        streams::create_group(&mut ctx.redis, &stream, GROUP).await?;
        if let Some(n) = self.idmp.as_ref().and_then(|i| i.maxsize) {
            let _: () = redis::cmd("XCFGSET")
                .arg(&stream)
                .arg("IDMP-MAXSIZE")
                .arg(n)
                .query_async(&mut ctx.redis)
                .await
                .context("XCFGSET")?;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let (t0_ns, mut raw, entries, finished) = match ctx.control {
            Some(control) => {
                let template = self.worker_template(ctx, &stream, sink_cfg.clone());
                let t0_ns = crate::clock::now_ns();
                let run = explored::run(self, ctx, control, (template, &stream, sink_cfg), &tx, &mut rx).await?;
                (t0_ns, run.raw, run.seen.published.len() as u32, run.finished)
            }
            None => {
                let (t0_ns, raw, seen, finished) = self.sampled(ctx, &stream, sink_cfg, &tx, &mut rx).await?;
                (t0_ns, raw, seen.published.len() as u32, finished)
            }
        };
        drop(tx);
        drain(rx, &mut raw);
        // A claimer's empty polls are never kept (see `Seen::take`), however late they came.
        raw.retain(|ev| !foreign::empty_poll(ev));
        if let Some(control) = ctx.control {
            raw.extend(control.take_events());
        }
        let pending_after_run = streams::pending_count(&mut ctx.redis, &stream, GROUP).await?;
        let log = read_jobs(&mut ctx.redis, &stream).await?;
        let redis_values = self.redis_values(ctx).await?;
        let intended: Vec<i64> = self.intended_orders().iter().map(|(o, _)| *o).collect();
        let orders =
            if intended.is_empty() { Vec::new() } else { crate::orders::final_rows(ctx.pg, &intended).await? };
        let ledger_rows = ledger.records().await?;
        ledger.reset().await?;
        ctx.delete_run_keys().await?;
        raw.extend(crate::side_effect::timeline_events(&ledger_rows));
        let explored = ctx.control.is_some();
        let observed = JobsObserved {
            stream: log,
            ledger: ledger_rows,
            redis_values,
            entries,
            pending_after_run,
            explored,
            orders,
        };
        Ok(RunOutcome { t0_ns, raw, timed_out: !finished, observed })
    }

    fn needs(&self) -> crate::labs::procedure::Needs {
        crate::labs::procedure::Needs {
            worker_command: self.worker.as_ref().map(|w| w.command.clone()),
            ..Default::default()
        }
    }

    /// Stepped by the explorer ([`explored`]) unless a timer the clock decides could change a
    /// run: a key's TTL that can run out within a run (a lease) is no step yet. The claimer's
    /// min-idle is a step; workers from a command line are stepped as ordlab's own are.
    fn explorable(&self) -> Result<(), String> {
        let run_ms = self.bound(TimeScale::REAL).as_millis();
        let idle = self.reaper.min_idle_ms;
        match self.technique.key_ttl() {
            // Shorter than the claimer's min-idle: it runs out as a timer step, once every
            // process waits for work (before the retry, never during a job: no job outlasts it).
            Some((field, ttl)) if ttl < idle && self.longest_job_ms() >= ttl => Err(format!(
                "setup.technique.{field} = {ttl}: a job takes {} ms, not less than the key's TTL: it runs out while the job works, and the explorer runs a TTL out only once every process waits for work",
                self.longest_job_ms()
            )),
            Some((_, ttl)) if ttl < idle => Ok(()),
            Some((field, ttl)) if ttl <= run_ms as f64 => Err(format!(
                "setup.technique.{field} = {ttl}: the key's TTL can run out within a run (up to {run_ms} ms), and the explorer does not make that expiry a step yet"
            )),
            _ => Ok(()),
        }
    }

    fn missing(&self, server: &crate::service::ServerInfo) -> Option<String> {
        (self.idmp.is_some() && !server.redis.xadd_idmp)
            .then(|| format!("needs Redis ≥ 8.6 (XADD … IDMP); this server is {}", server.redis_version))
    }
}

impl Judge for JobsSpec {
    type Observed = JobsObserved;
    type Facts = JobsFacts;

    fn faults(&self, _observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        let mut all = plan::crashes(&self.jobs);
        all.extend(self.jobs.iter().filter_map(JobPlan::partner_fault));
        all.extend(self.worker.iter().flat_map(|w| w.faults.clone()));
        all
    }

    /// Wrong when an effect is not exactly once. A cell that differs from the lab's own
    /// prediction makes the run unknown whatever else it shows: the lab then does not show
    /// what it says it shows, and the variant must not pass as matching. Not so for one
    /// schedule of `ordlab explore`: the prediction is about the order the clock picks, and
    /// the explorer runs the other orders too.
    fn judge(&self, run: &RunView<'_, JobsObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out);
        let mut mispredicted = false;
        for c in self.cells(run.observed, Lang::En) {
            if c.applied != 1 {
                let what = if c.applied == 0 { "lost".to_string() } else { format!("applied {} times", c.applied) };
                v.add(Verdict::Wrong, format!("{} {} ({}): {what}", c.job, c.effect, c.column));
            }
            if c.fate() != Some(c.expected) && !run.observed.explored {
                mispredicted = true;
                let (p, n) = (c.expected.name(), c.applied);
                v.add(
                    Verdict::Unknown,
                    format!(
                        "{} {}: predicted {p}, measured {n} (the lab's reading of the code is wrong)",
                        c.job, c.effect
                    ),
                );
            }
        }
        v = v.and(self.judge_orders(run));
        if run.timed_out {
            // What held the run up, as PostgreSQL said it.
            for w in crate::pg_locks::LockWait::of(run.events) {
                v.add(Verdict::Unknown, w.reason());
            }
        }
        if mispredicted {
            v.verdict = Verdict::Unknown;
        }
        v
    }

    fn final_state(&self, observed: &JobsObserved) -> Vec<FinalItem> {
        let cells = self.cells(observed, Lang::En).into_iter().map(|c| FinalItem {
            order: None,
            subject: format!("{} {}", c.job, c.effect),
            value: c.applied.to_string(),
            should_be: (c.applied != 1).then(|| "1".to_string()),
        });
        let rows = self.intended_orders().into_iter().map(|(order, want)| {
            let status = observed.orders.iter().find(|r| r.order == order).map(|r| r.status.clone());
            let status = status.unwrap_or_else(|| "missing".to_string());
            FinalItem {
                order: Some(order),
                subject: format!("order {order}"),
                should_be: (status != want).then(|| want.to_string()),
                value: status,
            }
        });
        cells.chain(rows).collect()
    }

    fn facts(&self, run: &RunView<'_, JobsObserved>) -> JobsFacts {
        let cells = self.cells(run.observed, Lang::En);
        let count = |f: fn(u32) -> bool| cells.iter().filter(|c| f(c.applied)).count() as i64;
        let redelivered = run
            .events
            .iter()
            .filter(|e| matches!(e.kind.family::<JobEvent>(), Some(JobEvent::JobReceived { deliveries, .. }) if deliveries > 1))
            .count() as i64;
        JobsFacts {
            exactly_once: count(|n| n == 1),
            lost: count(|n| n == 0),
            duplicated: count(|n| n > 1),
            entries: run.observed.entries as i64,
            redelivered,
            pending_after_run: run.observed.pending_after_run,
        }
    }
}

impl JobsSpec {
    /// The rows the jobs were meant to change, as the run left them: wrong when one is not
    /// in the status the job writes, with the changes a process never committed named.
    fn judge_orders(&self, run: &RunView<'_, JobsObserved>) -> RunVerdict {
        let mut v = RunVerdict::right();
        let intended = self.intended_orders();
        if intended.is_empty() {
            return v;
        }
        let open = crate::checker::transactions::open_at_end(run.events);
        for (order, want) in intended {
            let got = run.observed.orders.iter().find(|r| r.order == order).map(|r| r.status.as_str());
            if got == Some(want) {
                continue;
            }
            let got = got.unwrap_or("missing");
            let mut reason = format!("order {order} ended {got}, expected {want}");
            if !open.is_empty() {
                let why: Vec<String> = open.iter().map(|t| t.reason()).collect();
                reason.push_str(&format!(": {}", why.join("; ")));
            }
            v.add(Verdict::Wrong, reason);
        }
        v
    }
}

impl Present for JobsSpec {
    fn describe(&self, lang: Lang) -> String {
        describe(self, lang)
    }

    fn approach(&self) -> String {
        self.technique.short()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let effects = pick(
            lang,
            "an effect not exactly once (lost or duplicated)",
            "có side effect không đúng một lần (mất hoặc lặp)",
        );
        let rows: Vec<String> = self
            .intended_orders()
            .iter()
            .map(|(order, status)| crate::tr!(lang, "order {order} not {status}", "đơn {order} không {status}"))
            .collect();
        match rows.is_empty() {
            true => effects.to_string(),
            false => format!("{effects}{}{}", pick(lang, ", or ", ", hoặc "), rows.join(", ")),
        }
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay {
            shows_publishing: self.idmp.is_some() || self.jobs.iter().any(|j| j.copies > 1 || j.resend_after.is_some()),
            ..TimelineDisplay::default()
        }
    }

    fn notes(&self, run: &RunView<'_, JobsObserved>, lang: Lang) -> RunNotes {
        let cells: Vec<Line> = self
            .cells(run.observed, lang)
            .iter()
            .map(|c| {
                let column = if c.column == c.effect { String::new() } else { format!(" ({})", c.column) };
                Line::text(format!("{} {}{column} {}", c.job, c.effect, cell_word(c.applied, lang)))
            })
            .collect();
        let label = if self.effects().iter().any(|e| Technique::is_redis_effect(e)) {
            pick(
                lang,
                "effects per job (the Redis values after the run)",
                "side effect theo job (giá trị trong Redis sau lần chạy)",
            )
        } else {
            pick(lang, "effects per job (from the sink's ledger)", "side effect theo job (theo sổ của sink)")
        };
        let heading = self.timeline().shows_publishing.then(|| {
            let entries: Vec<Line> = run
                .observed
                .stream
                .iter()
                .map(|(id, job)| Line(vec![Piece::EntryId(id.clone()), Piece::Text(format!(" {job}"))]))
                .collect();
            Line::text("stream: ").and_line(Line::join(entries, ", "))
        });
        let mut after = vec![Line::text(format!("{label}: ")).and_line(Line::join(cells, " · "))];
        for (order, _) in self.intended_orders() {
            if let Some(row) = run.observed.orders.iter().find(|r| r.order == order) {
                let (label, status) = (pick(lang, "order", "đơn"), &row.status);
                after.push(Line::text(crate::tr!(
                    lang,
                    "{label} {order} after the run: {status}",
                    "{label} {order} sau lần chạy: {status}"
                )));
            }
        }
        after.extend(crate::checker::transactions::open_at_end(run.events).iter().map(|t| t.words(lang)));
        after.extend(crate::pg_locks::LockWait::of(run.events).iter().map(|w| w.words(lang)));
        RunNotes { heading, after }
    }

    fn table_row(&self, run: &RunView<'_, JobsObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let cells = self.cells(run.observed, lang);
        Some(cells.iter().map(|c| (c.column.clone(), Line(vec![Piece::Text(cell_word(c.applied, lang))]))).collect())
    }
}

/// `1 ✓`, `0 lost`, `2 dup`.
fn cell_word(applied: u32, lang: Lang) -> String {
    match (applied, lang) {
        (1, _) => "1 ✓".to_string(),
        (0, Lang::En) => "0 ✕ lost".to_string(),
        (0, Lang::Vi) => "0 ✕ mất".to_string(),
        (n, Lang::En) => format!("{n} ✕ dup"),
        (n, Lang::Vi) => format!("{n} ✕ lặp"),
    }
}

/// `C1 is SIGKILLed by the interposer when the reply to its SET #1 arrives`.
fn fault_words(f: &crate::fault::Fault, lang: Lang) -> String {
    let who = match f.target {
        crate::fault::Target::Index(i) if i > 1000 => "reaper".to_string(),
        crate::fault::Target::Index(i) => format!("C{i}"),
        _ => f.target_words().get(lang).to_string(),
    };
    crate::roles::command_worker::fault_words(f, &who, lang)
}

fn describe(s: &JobsSpec, lang: Lang) -> String {
    let mut parts = vec![s.technique.describe(lang)];
    let (effects, ms) = (s.effects().join(" + "), s.partner.latency_ms);
    if !s.effects().iter().all(|e| Technique::is_redis_effect(e)) {
        parts.push(crate::tr!(lang, "the partner takes {ms} ms per request", "đối tác xử lý mỗi request {ms} ms"));
    }
    if s.workers > 1 {
        let n = s.workers;
        parts.push(crate::tr!(lang, "{n} workers at once", "{n} worker cùng lúc"));
    }
    let (idle, poll) = (s.reaper.min_idle_ms, s.reaper.poll_ms);
    parts.push(crate::tr!(
        lang,
        "retry: XAUTOCLAIM min-idle {idle} ms, every {poll} ms",
        "retry: XAUTOCLAIM min-idle {idle} ms, mỗi {poll} ms"
    ));
    let jobs: Vec<String> = s.jobs.iter().map(|j| format!("{} {}", j.job, j.label(lang))).collect();
    parts.push(crate::tr!(lang, "jobs ({effects}): {}", "job ({effects}): {}", jobs.join(", ")));
    if let Some(w) = &s.worker {
        parts.push(crate::tr!(lang, "worker: `{}`", "worker: `{}`", w.shown()));
        parts.extend(w.faults.iter().map(|f| fault_words(f, lang)));
    }
    if let Some(i) = &s.idmp {
        let max = i.maxsize.map_or("100".to_string(), |n| n.to_string());
        parts.push(crate::tr!(lang, "XADD … IDMP (remembers {max} ids)", "XADD … IDMP (nhớ {max} id)"));
    }
    if let Some(ms) = s.patience_ms {
        let limit = crate::timeline::patience::PatienceEvent::limit_words(ms);
        parts.push(crate::tr!(
            lang,
            "the lab waits at most {limit} for every job to be acknowledged",
            "lab chờ mọi job được ack tối đa {limit}"
        ));
    }
    parts.join("; ")
}
