//! Priority queues on streams (seed 000): one stream per priority, one worker process that
//! polls them with the seed's strict or weighted loop or a corrected one, and a run made of
//! phases that each ask one question of the loop.
//!
//! 1. **backlog**: jobs of every priority queued before the worker starts — is critical served
//!    first (strict), or in the weighted ratio, and does low get a turn?
//! 2. **aligned probe**: one critical job queued while the worker is blocked in its longest
//!    read on another stream (the seed's `BLOCK 5000` on low) — how long does it wait?
//! 3. **burst**: critical jobs alone — how fast does critical go when the others are empty?
//! 4. **trickle**: light critical traffic (one job every `every_ms`) with some low jobs
//!    queued at its start — does low starve although the worker is mostly idle?
//! 5. **probes**: critical jobs at random moments into the idle system — the usual wait.
//!
//! Each phase starts once the previous one's jobs are done and at least 40 ms after the
//! worker's last step, so a snapshot's order of events is the lab's, not the scheduler's.
//! Every figure is read from the timeline ([`crate::labs::priority::served`]).

mod explored;
pub mod seed_lines;

use crate::chart::{Axis, Chart, Mark, MarkAxis, Scale, Series, Style, Unmeasured};
use crate::checker::health::health;
use crate::checker::RunVerdict;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::labs::priority::job_run::JobRun;
use crate::labs::priority::seed_claims::ms;
use crate::labs::priority::served::{self as priority, BacklogMeasures, Claims, PriorityMeasures};
use crate::labs::priority::unserved::{NeverServed, Wait};
use crate::labs::priority::worker::{describe, PriorityWorkerConfig, QueuedJob};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
    TimelineDisplay, VariantRuns,
};
use crate::lang::{pick, Lang, Words};
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{PerPriority, Phase, PhasePlan, Priority};
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerCommand, WorkerEnv};
use crate::roles::priority_loop::{Block, LoopSpec, Planner, Read};
use crate::roles::{RoleConfig, RoleProcess};
use crate::streams::{self, GROUP};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use rand::Rng;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// `kind = "priority"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioritySpec {
    /// The worker's polling loop.
    #[serde(rename = "loop")]
    pub worker_loop: LoopSpec,
    /// Handler work per job in ms, per priority.
    pub cost_ms: PerPriority<f64>,
    /// Jobs queued before the worker starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<PerPriority<u32>>,
    /// One critical job while the worker is blocked in its longest read on another stream.
    #[serde(default)]
    pub aligned_probe: bool,
    /// Critical jobs queued at once, nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trickle: Option<Trickle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Probes>,
    /// What the loop promises; the judge checks each.
    #[serde(default)]
    pub claims: Claims,
    /// A worker from a command line instead of ordlab's own C1 (`loop` then says which loop
    /// it runs: the aligned probe is placed by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerCommand>,
    /// How long the lab waits for a phase's jobs (ms, before `--time-scale`) before it gives
    /// up: a job not served by then is "not served within the lab's patience". Default: a
    /// generous bound on the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patience_ms: Option<f64>,
}

/// `trickle = { every_ms = 40, critical = 40, low = 3 }`: a critical job every `every_ms`,
/// the first at the phase's start together with every normal and low job.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Trickle {
    pub every_ms: f64,
    pub critical: u32,
    #[serde(default)]
    pub normal: u32,
    #[serde(default)]
    pub low: u32,
}

/// `probes = { count = 2, max_delay_ms = 5200 }`: critical jobs, each a seeded random
/// 0–`max_delay_ms` after the previous one was done.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    pub count: u32,
    pub max_delay_ms: f64,
}

/// What a priority run left on the server, and its scale (the judge scales the claims).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriorityObserved {
    pub scale: f64,
    pub queued: u32,
    pub done: u32,
    /// Entries delivered and never acknowledged (XPENDING over the three streams).
    pub pending_after_run: i64,
    /// Stepped by the explorer: the claims judged are about order, not time.
    #[serde(default)]
    pub explored: bool,
}

impl PrioritySpec {
    /// What a worker from a command line is told (examples/README.md): the three streams,
    /// highest first, each job's work per priority, the time scale for its own BLOCKs.
    pub(super) fn worker_env(&self, ctx: &RunContext<'_>, streams: &[String]) -> WorkerEnv {
        let cost_ms =
            Priority::ALL.iter().map(|p| (p.name().to_string(), self.cost_ms.array()[p.index()] * ctx.scale.0));
        WorkerEnv {
            index: 1,
            group: GROUP.to_string(),
            consumer: Actor::Consumer(1).to_string(),
            key_prefix: ctx.key_prefix(),
            cost_ms: cost_ms.collect(),
            seed: ctx.seed_for(1),
            extra: [
                ("ORDLAB_STREAMS".to_string(), streams.join(" ")),
                ("ORDLAB_TIME_SCALE".to_string(), ctx.scale.0.to_string()),
            ]
            .into(),
            ..WorkerEnv::default()
        }
    }

    /// C1: ordlab's own worker, or the one from the command line through its interposer.
    async fn start_worker(
        &self,
        ctx: &RunContext<'_>,
        streams: &[String],
        tx: &tokio::sync::mpsc::UnboundedSender<RawEvent>,
    ) -> Result<C1, Error> {
        let Some(spec) = &self.worker else {
            return Ok(C1::Own(ctx.spawn(&RoleConfig::of(&self.worker_config(ctx, streams)), tx.clone())?));
        };
        let actor = Actor::Consumer(1);
        let upstreams =
            Upstreams { redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, control: None };
        let env = self.worker_env(ctx, streams);
        let name = ctx.client_name(actor);
        let w = CommandWorker::start(spec, &env, actor, &name, upstreams, tx.clone()).await?;
        // A worker that does not exist, exits at once or never connects stops the lab with
        // one line naming it (its reads may have begun: the backlog is queued).
        if let Err(e) = w.ready(&mut ctx.redis.clone(), &name, ClientState::Connected, spec).await {
            w.stop().await;
            return Err(e);
        }
        Ok(C1::Foreign(w))
    }

    pub(super) fn worker_config(&self, ctx: &RunContext<'_>, streams: &[String]) -> PriorityWorkerConfig {
        PriorityWorkerConfig {
            env: ctx.role_env(1),
            index: 1,
            client_name: ctx.client_name(Actor::Consumer(1)),
            streams: streams.to_vec(),
            group: GROUP.to_string(),
            worker_loop: self.worker_loop.clone(),
            cost_ms: self.cost_ms.array(),
            explored: ctx.control.is_some(),
        }
    }

    fn jobs(&self) -> u32 {
        let backlog: u32 = self.backlog.map_or(0, |b| b.array().iter().sum());
        let trickle = self.trickle.as_ref().map_or(0, |t| t.critical + t.normal + t.low);
        backlog
            + u32::from(self.aligned_probe)
            + self.burst.unwrap_or(0)
            + trickle
            + self.probes.as_ref().map_or(0, |p| p.count)
    }

    /// A generous bound on a run: the work, every phase and probe waiting a whole idle cycle
    /// of the loop, a burst paying a cycle per read, the probes' delays; tripled, plus 15 s.
    /// Only a hung run reaches it.
    fn bound(&self, scale: TimeScale) -> Duration {
        let reads = idle_cycle(&self.worker_loop);
        let cycle: f64 = reads.iter().map(|r| block_ms(r.block) + 200.0).sum();
        let cost = self.cost_ms.array().iter().copied().fold(0.0, f64::max);
        let probes = self.probes.as_ref().map_or(0, |p| p.count);
        let delays = self.probes.as_ref().map_or(0.0, |p| p.count as f64 * p.max_delay_ms);
        let trickle = self.trickle.as_ref().map_or(0.0, |t| t.every_ms * t.critical as f64);
        let burst_reads = self.burst.unwrap_or(0) as f64 / reads[0].count.max(1) as f64;
        let waits = (5 + probes) as f64 * cycle + burst_reads * cycle;
        let ms = self.jobs() as f64 * cost + waits + delays + trickle;
        scale.duration(ms * 3.0) + Duration::from_secs(15)
    }

    async fn phases(&self, d: &mut Driver<'_>, worker: &RoleProcess, backlog: HashSet<String>) -> Result<bool, Error> {
        if backlog.is_empty() {
            d.wait_blocked(worker).await?;
        } else if !d.run.wait_done(&backlog).await {
            return Ok(false);
        }
        if self.aligned_probe && !d.aligned_probe(&self.worker_loop, worker).await? {
            return Ok(false);
        }
        if let Some(n) = self.burst {
            if !d.burst(n).await? {
                return Ok(false);
            }
        }
        if let Some(t) = &self.trickle {
            if !d.trickle(t).await? {
                return Ok(false);
            }
        }
        match &self.probes {
            Some(p) => d.random_probes(p).await,
            None => Ok(true),
        }
    }
}

/// The run's C1.
enum C1 {
    Own(RoleProcess),
    Foreign(CommandWorker),
}

impl C1 {
    fn process(&self) -> &RoleProcess {
        match self {
            C1::Own(p) => p,
            C1::Foreign(w) => &w.process,
        }
    }

    async fn stop(self) {
        match self {
            C1::Own(p) => p.stop().await,
            C1::Foreign(w) => w.stop().await,
        }
    }
}

/// The reads a loop sends while every stream is empty, one cycle of them.
pub fn idle_cycle(spec: &LoopSpec) -> Vec<Read> {
    let mut p = Planner::new(spec.clone(), 3);
    let mut out: Vec<Read> = Vec::new();
    for _ in 0..8 {
        let r = p.next();
        if out.first() == Some(&r) {
            break;
        }
        p.got(&[0, 0, 0]);
        out.push(r);
    }
    // A loop that settles into one blocking read repeats only that one.
    if let Some(k) = out.iter().position(|r| r.block == Block::Forever) {
        out.truncate(k + 1);
    }
    out
}

fn block_ms(b: Block) -> f64 {
    match b {
        Block::No => 0.0,
        Block::Ms(ms) => ms,
        Block::Forever => 0.0,
    }
}

/// Where to put the aligned probe: the empty read after which the worker blocks on a stream
/// other than critical for longest (None: the loop blocks on every stream at once, any
/// blocked moment will do), and that blocked read.
pub fn aligned_target(spec: &LoopSpec) -> (Option<Read>, Read) {
    let cycle = idle_cycle(spec);
    let weight = |r: &Read| match r.block {
        Block::No => -1.0,
        Block::Ms(ms) => ms,
        Block::Forever => f64::INFINITY,
    };
    let longest_elsewhere = (1..cycle.len())
        .filter(|k| !cycle[*k].streams.contains(&0) && weight(&cycle[*k]) >= 0.0)
        .max_by(|a, b| weight(&cycle[*a]).total_cmp(&weight(&cycle[*b])).then(b.cmp(a)));
    match longest_elsewhere {
        Some(k) => (Some(cycle[k - 1].clone()), cycle[k].clone()),
        None => {
            let k = cycle.iter().position(|r| weight(r) >= 0.0).unwrap_or(0);
            (None, cycle[k].clone())
        }
    }
}

/// The orchestrator's side of a run: it queues jobs and starts phases; `run` records.
struct Driver<'a> {
    ctx: &'a RunContext<'a>,
    run: JobRun,
    conn: MultiplexedConnection,
    streams: Vec<String>,
    next_id: [u32; 3],
    rng: rand_chacha::ChaCha8Rng,
}

impl Driver<'_> {
    /// `n` jobs of one priority for `phase`, the first and the last traced.
    fn jobs(&mut self, priority: Priority, phase: Phase, n: u32) -> Vec<QueuedJob> {
        (0..n).map(|i| self.job(priority, phase, i == 0 || i + 1 == n)).collect()
    }

    fn job(&mut self, priority: Priority, phase: Phase, traced: bool) -> QueuedJob {
        let n = &mut self.next_id[priority.index()];
        *n += 1;
        let job = format!("{}-{:04}", &priority.name()[..1], n);
        QueuedJob { job, priority, phase, traced, queued_ns: 0 }
    }

    /// XADD every job in one pipeline, each stamped just before; returns their ids.
    async fn queue(&mut self, mut jobs: Vec<QueuedJob>) -> Result<HashSet<String>, Error> {
        let mut pipe = redis::pipe();
        for j in &mut jobs {
            j.queued_ns = crate::clock::now_ns();
            pipe.add_command(j.xadd(&self.streams[j.priority.index()]));
        }
        pipe.query_async::<()>(&mut self.conn).await.context("XADD")?;
        for j in &jobs {
            self.run.tx.record(j.queued_event(Actor::Producer, None));
        }
        Ok(jobs.into_iter().map(|j| j.job).collect())
    }

    /// Until CLIENT LIST shows the worker blocked in XREADGROUP.
    async fn wait_blocked(&mut self, worker: &RoleProcess) -> Result<(), Error> {
        let name = self.ctx.client_name(Actor::Consumer(1));
        let mut conn = self.conn.clone();
        wait_for_client(&mut conn, &name, ClientState::BlockedInXreadgroup, worker).await
    }

    async fn aligned_probe(&mut self, spec: &LoopSpec, worker: &RoleProcess) -> Result<bool, Error> {
        let scale = self.ctx.scale;
        let (after, blocked) = aligned_target(spec);
        if let Some(after) = after {
            let after = describe(&after, scale);
            let empty_read = |ev: &RawEvent| matches!(ev.kind.family::<PriorityEvent>(), Some(PriorityEvent::QueueRead { read, got, .. }) if *read == after && got.iter().all(|n| *n == 0));
            let what = format!("an empty {after}");
            if !self.run.wait_for(&what, empty_read).await {
                return Ok(false);
            }
        }
        self.wait_blocked(worker).await?;
        if !self.run.pause().await {
            return Ok(false);
        }
        let probe = self.job(Priority::Critical, Phase::AlignedProbe, true);
        self.run.phase(PhasePlan::Probe { blocked_in: Some(describe(&blocked, scale)), after_ms: None });
        let ids = self.queue(vec![probe]).await?;
        Ok(self.run.wait_done(&ids).await)
    }

    async fn burst(&mut self, n: u32) -> Result<bool, Error> {
        if !self.run.pause().await {
            return Ok(false);
        }
        let jobs = self.jobs(Priority::Critical, Phase::Burst, n);
        self.run.phase(PhasePlan::Burst { critical: n });
        let ids = self.queue(jobs).await?;
        Ok(self.run.wait_done(&ids).await)
    }

    async fn trickle(&mut self, t: &Trickle) -> Result<bool, Error> {
        if !self.run.pause().await {
            return Ok(false);
        }
        let mut lower = Vec::new();
        for (p, n) in [(Priority::Normal, t.normal), (Priority::Low, t.low)] {
            for i in 0..n {
                lower.push(self.job(p, Phase::Trickle, n <= 3 || i == 0 || i + 1 == n));
            }
        }
        self.run.phase(PhasePlan::Trickle { every_ms: t.every_ms, jobs: [t.critical, t.normal, t.low] });
        let start = tokio::time::Instant::now();
        let mut ids = HashSet::new();
        for k in 0..t.critical {
            let at = start + self.ctx.scale.duration(t.every_ms * k as f64);
            if !self.run.pause_for(at.saturating_duration_since(tokio::time::Instant::now())).await {
                return Ok(false);
            }
            let mut batch = vec![self.job(Priority::Critical, Phase::Trickle, k == 0 || k + 1 == t.critical)];
            if k == 0 {
                // The first critical job goes first, the lower ones right behind it.
                batch.append(&mut lower);
            }
            ids.extend(self.queue(batch).await?);
        }
        Ok(self.run.wait_done(&ids).await)
    }

    async fn random_probes(&mut self, p: &Probes) -> Result<bool, Error> {
        for _ in 0..p.count {
            // A random moment, but never closer than a phase gap to the last job.
            let gap_ms = crate::labs::priority::job_run::PHASE_GAP_MS as f64 / self.ctx.scale.0;
            let after_ms = (self.rng.random::<f64>() * p.max_delay_ms).round().max(gap_ms);
            if !self.run.pause_for(self.ctx.scale.duration(after_ms)).await {
                return Ok(false);
            }
            let probe = self.job(Priority::Critical, Phase::Probe, true);
            self.run.phase(PhasePlan::Probe { blocked_in: None, after_ms: Some(after_ms) });
            let ids = self.queue(vec![probe]).await?;
            if !self.run.wait_done(&ids).await {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl LabProcedure for PrioritySpec {
    fn validate(&mut self) -> Result<(), String> {
        self.worker_loop.validate(3)?;
        if let Some(w) = &self.worker {
            if w.count.is_some_and(|n| n != 1) {
                return Err("setup.worker.count: a priority lab has one worker (C1)".into());
            }
            w.check(1)?;
        }
        if self.cost_ms.array().iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Err("setup.cost_ms: use durations ≥ 0 in ms".into());
        }
        if self.jobs() == 0 {
            return Err("setup: queue some jobs (backlog, aligned_probe, burst, trickle or probes)".into());
        }
        if let Some(t) = &self.trickle {
            if t.critical == 0 || !(t.every_ms.is_finite() && t.every_ms > 0.0) {
                return Err("setup.trickle: use critical ≥ 1 and every_ms > 0".into());
            }
        }
        if let Some(p) = &self.probes {
            if !(p.max_delay_ms.is_finite() && p.max_delay_ms >= 0.0) {
                return Err("setup.probes.max_delay_ms: use a duration ≥ 0 in ms".into());
            }
        }
        if self.patience_ms.is_some_and(|p| !(p.is_finite() && p > 0.0)) {
            return Err("setup.patience_ms: use a duration > 0 in ms".into());
        }
        Ok(())
    }

    /// ordlab's own worker and one from a command line are stepped ([`explored`]).
    fn explorable(&self) -> Result<(), String> {
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<PriorityObserved>, Error> {
        let prefix = ctx.key_prefix();
        let names: Vec<String> = Priority::ALL.iter().map(|p| format!("{prefix}{p}")).collect();
        let mut conn = ctx.redis.clone();
        for s in &names {
            streams::create_group(&mut conn, s, GROUP).await?;
        }
        if let Some(control) = ctx.control {
            let t0_ns = crate::clock::now_ns();
            let (raw, finished) = explored::run(self, ctx, control, &names).await?;
            return self.outcome(ctx, &names, t0_ns, raw, !finished, true).await;
        }
        let mut run = JobRun::new(tokio::time::Instant::now() + self.bound(ctx.scale));
        if let Some(p) = self.patience_ms {
            run = run.with_patience(ctx.scale.duration(p));
        }
        if self.worker.is_some() {
            run = run.with_wire_jobs();
        }
        let producer = crate::connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
        let shared: &RunContext<'_> = ctx;
        let mut d =
            Driver { ctx: shared, run, conn: producer, streams: names.clone(), next_id: [0; 3], rng: shared.rng() };
        let t0_ns = crate::clock::now_ns();
        let backlog = match self.backlog {
            Some(b) => {
                d.run.phase(PhasePlan::Backlog { jobs: b.array() });
                let jobs =
                    Priority::ALL.iter().flat_map(|p| d.jobs(*p, Phase::Backlog, b.array()[p.index()])).collect();
                d.queue(jobs).await?
            }
            None => HashSet::new(),
        };
        let worker = self.start_worker(shared, &names, &d.run.tx).await?;
        let finished = self.phases(&mut d, worker.process(), backlog).await;
        worker.stop().await;
        // A worker that died is the reason the run stopped; it is not a time-out.
        let died = d.run.stopped() == Some(crate::labs::priority::job_run::Stopped::Died);
        let raw = d.run.finish();
        let finished = finished?;
        self.outcome(ctx, &names, t0_ns, raw, !finished && !died, false).await
    }
}

impl PrioritySpec {
    /// A run's outcome from its events and the streams' pending entries (the run's keys are
    /// then deleted).
    async fn outcome(
        &self,
        ctx: &mut RunContext<'_>,
        names: &[String],
        t0_ns: u64,
        raw: Vec<RawEvent>,
        timed_out: bool,
        explored: bool,
    ) -> Result<RunOutcome<PriorityObserved>, Error> {
        let mut pending = 0;
        for s in names {
            pending += streams::pending_count(&mut ctx.redis, s, GROUP).await?;
        }
        ctx.delete_run_keys().await?;
        let count = |f: fn(&EventKind) -> bool| raw.iter().filter(|e| f(&e.kind)).count() as u32;
        let observed = PriorityObserved {
            scale: ctx.scale.0,
            queued: count(|k| matches!(k.family::<PriorityEvent>(), Some(PriorityEvent::JobQueued { .. }))),
            done: count(|k| matches!(k.family::<PriorityEvent>(), Some(PriorityEvent::JobDone { .. }))),
            pending_after_run: pending,
            explored,
        };
        Ok(RunOutcome { t0_ns, raw, timed_out, observed })
    }

    /// The jobs of an explored run: the backlog (queued before the worker starts, named as a
    /// sampled run names them) and the one critical job that arrives while the worker runs.
    /// The backlog is cut to one job more than the loop's largest COUNT per priority: enough
    /// for a read to leave a job behind; more only repeats the same rounds of reads, each
    /// hundreds of steps longer.
    pub(super) fn explored_jobs(&self) -> (Vec<QueuedJob>, QueuedJob) {
        let most = self.worker_loop.largest_count() + 1;
        let backlog = self.backlog.map(|b| b.array()).unwrap_or([0; 3]).map(|n| n.min(most));
        let job = |p: Priority, n: u32, phase: Phase, traced: bool| QueuedJob {
            job: format!("{}-{n:04}", &p.name()[..1]),
            priority: p,
            phase,
            traced,
            queued_ns: 0,
        };
        let queued = Priority::ALL
            .iter()
            .flat_map(|p| {
                let n = backlog[p.index()];
                (1..=n).map(move |i| job(*p, i, Phase::Backlog, i == 1 || i == n))
            })
            .collect();
        let arrival = job(Priority::Critical, backlog[0] + 1, Phase::Probe, true);
        (queued, arrival)
    }
}

impl Judge for PrioritySpec {
    type Observed = PriorityObserved;
    type Facts = PriorityFacts;

    fn faults(&self, _observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        self.worker.iter().flat_map(|w| w.faults.clone()).collect()
    }

    fn judge(&self, run: &RunView<'_, PriorityObserved>) -> RunVerdict {
        if run.observed.explored {
            let all_done = self.final_state(run.observed).iter().all(|i| !i.is_wrong());
            let mut v = health(run.events, run.timed_out).and(super::order_claims::judge(&self.claims, run.events));
            if !all_done {
                v.add(crate::checker::Verdict::Wrong, "a job was never done".to_string());
            }
            return v;
        }
        let m = priority::measure(run.events);
        health(run.events, run.timed_out).and(priority::judge(&self.claims, &m, run.observed.scale))
    }

    fn final_state(&self, observed: &PriorityObserved) -> Vec<FinalItem> {
        let all = observed.queued;
        vec![FinalItem {
            order: None,
            subject: "jobs done".to_string(),
            value: format!("{}/{all}", observed.done),
            should_be: (observed.done != all).then(|| format!("{all}/{all}")),
        }]
    }

    /// The aligned probe: its queueing, and its take (or, never served, the queueing marks
    /// that); the probes at random moments alike.
    fn evidence(&self, run: &RunView<'_, PriorityObserved>) -> Vec<crate::checker::evidence::Evidence> {
        use crate::checker::evidence::{at, Why};
        let mut queued: Vec<(String, usize)> = Vec::new();
        let mut out = Vec::new();
        for (i, e) in run.events.iter().enumerate() {
            match e.kind.family::<PriorityEvent>() {
                Some(PriorityEvent::JobQueued { job, phase: Phase::AlignedProbe | Phase::Probe, .. }) => {
                    queued.push((job, i))
                }
                Some(PriorityEvent::PriorityJobTaken { job, .. }) => {
                    if let Some(k) = queued.iter().position(|(j, _)| *j == job) {
                        let (_, q) = queued.remove(k);
                        out.extend(at(run.events, q, Why::Decisive));
                        out.extend(at(run.events, i, Why::Decisive));
                    }
                }
                _ => {}
            }
        }
        out.extend(queued.into_iter().filter_map(|(_, q)| at(run.events, q, Why::NeverServed)));
        out
    }

    /// An explored run measured no time (its waits are the harness's steps): no facts.
    fn facts(&self, run: &RunView<'_, PriorityObserved>) -> PriorityFacts {
        if run.observed.explored {
            return PriorityFacts::default();
        }
        let [c, n, l] = self.cost_ms.array();
        measure_facts(&priority::measure(run.events), &self.claims, c != n || n != l)
    }
}

impl Present for PrioritySpec {
    fn describe(&self, lang: Lang) -> String {
        let mut parts = vec![loop_phrase(&self.worker_loop, lang)];
        if let Some(w) = &self.worker {
            parts.push(crate::tr!(lang, "worker: `{}`", "worker: `{}`", w.shown()));
        }
        let [c, n, l] = self.cost_ms.array();
        parts.push(match &self.worker {
            // What anyone's program spends is its own (measured in the run's notes).
            Some(_) => crate::tr!(
                lang,
                "work: the worker's own (told {c}/{n}/{l} ms per critical/normal/low job)",
                "xử lý: của chính worker (được báo {c}/{n}/{l} ms mỗi job critical/normal/low)"
            ),
            None => crate::tr!(
                lang,
                "work {c}/{n}/{l} ms per critical/normal/low job",
                "xử lý {c}/{n}/{l} ms mỗi job critical/normal/low"
            ),
        });
        if let Some(b) = self.backlog {
            parts.push(format!("{}: {}", pick(lang, "backlog", "tồn đọng"), counts_phrase(b.array())));
        }
        if self.aligned_probe {
            parts.push(
                pick(lang, "a critical probe at the worst moment", "một job critical thăm dò vào lúc tệ nhất")
                    .to_string(),
            );
        }
        if let Some(n) = self.burst {
            parts.push(crate::tr!(lang, "burst of {n} critical alone", "{n} critical dồn một lúc, không có gì khác"));
        }
        if let Some(t) = &self.trickle {
            let (e, k, lower) = (t.every_ms, t.critical, counts_phrase([0, t.normal, t.low]));
            parts.push(crate::tr!(
                lang,
                "trickle: a critical job every {e} ms × {k}, {lower} at its start",
                "nhỏ giọt: một job critical mỗi {e} ms × {k}, {lower} lúc bắt đầu"
            ));
        }
        if let Some(p) = &self.probes {
            let (k, max) = (p.count, p.max_delay_ms);
            parts.push(crate::tr!(
                lang,
                "{k} probes at random moments (0–{max} ms apart)",
                "{k} job thăm dò vào lúc ngẫu nhiên (cách nhau 0–{max} ms)"
            ));
        }
        if let Some(ms) = self.patience_ms {
            let limit = crate::timeline::patience::PatienceEvent::limit_words(ms);
            parts.push(crate::tr!(
                lang,
                "the lab waits at most {limit} for a phase's jobs",
                "lab chờ các job của một giai đoạn tối đa {limit}"
            ));
        }
        parts.join("; ")
    }

    fn approach(&self) -> String {
        match &self.worker {
            Some(w) => w.shown(),
            None => self.worker_loop.name().to_string(),
        }
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay { wire_read_as_kind_events: self.worker.is_some(), ..TimelineDisplay::default() }
    }

    fn wrong_means(&self, lang: Lang) -> String {
        claims_phrase(&self.claims, lang)
    }

    fn notes(&self, run: &RunView<'_, PriorityObserved>, lang: Lang) -> RunNotes {
        // Explored, a read shows the scenario's BLOCK (a timer step ends it).
        let scale = if run.observed.explored { 1.0 } else { run.observed.scale };
        let cycle: Vec<String> = idle_cycle(&self.worker_loop).iter().map(|r| describe(r, TimeScale(scale))).collect();
        let heading = Line::text(format!("{}: {}", pick(lang, "C1 while idle", "C1 khi rảnh"), cycle.join(" → ")));
        let [c, n, l] = self.cost_ms.array();
        let mut after = phase_lines(run.events, c != n || n != l, lang);
        if self.worker.is_some() {
            let spent = crate::labs::handler_time::spent_ms(
                run.events,
                |e| match e.kind.family::<PriorityEvent>() {
                    Some(PriorityEvent::PriorityJobTaken { job, .. }) => Some(job),
                    _ => None,
                },
                |e| match e.kind.family::<PriorityEvent>() {
                    Some(PriorityEvent::JobDone { job }) => Some(job),
                    _ => None,
                },
            );
            let between = pick(lang, "from its take to its XACK", "từ lúc lấy tới XACK");
            let s = run.observed.scale;
            let told = format!("{}/{}/{} ms (ORDLAB_COST_MS)", c * s, n * s, l * s);
            after.extend(crate::labs::handler_time::lines(&spent, between, &told, lang));
        }
        after.extend(Line::client_libraries(run.events, lang));
        RunNotes { heading: Some(heading), after }
    }

    fn table_row(&self, run: &RunView<'_, PriorityObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        if run.observed.explored {
            return None;
        }
        Some(table_cells(&priority::measure(run.events), lang))
    }

    /// What the seed says about this loop, and what the runs measured.
    fn per_run_lines(&self, runs: &[RunView<'_, PriorityObserved>], lang: Lang) -> Vec<Line> {
        if runs.iter().any(|r| r.observed.explored) {
            return Vec::new(); // the seed's figures are times; an explored run has none
        }
        seed_lines::lines(self, &seed_lines::measures_of(runs), lang)
    }

    /// Run 1's service over time: jobs served so far per priority, and for a weighted claim
    /// jobs served per 100 ms.
    fn charts(&self, runs: &[RunView<'_, PriorityObserved>]) -> Vec<Chart> {
        let Some(first) = runs.first().filter(|r| !r.observed.explored) else { return Vec::new() };
        let mut out = vec![served_chart(first.events)];
        if self.claims.ratio.is_some() {
            out.push(rate_chart(first.events, 100.0 * first.observed.scale));
        }
        out
    }

    /// How long critical and low jobs waited under each variant's loop (min–max over runs).
    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        if variants.iter().any(|v| v.runs.iter().any(|r| r.observed.explored)) {
            return Vec::new(); // an explored run's waits are the harness's steps, not time
        }
        vec![waits_chart(variants)]
    }
}

/// Where the orchestrator started each phase: vertical marks on a time axis.
fn phase_marks(events: &[crate::timeline::Event]) -> Vec<Mark> {
    events
        .iter()
        .filter_map(|e| match e.kind.family::<PriorityEvent>().as_ref() {
            Some(PriorityEvent::PhaseStarted { plan }) => {
                let id = plan.id();
                let label = Words::new(id.label(Lang::En), id.label(Lang::Vi));
                Some(Mark { label, axis: MarkAxis::X, at: e.t_us as f64 / 1000.0 })
            }
            _ => None,
        })
        .collect()
}

fn time_axis() -> Axis {
    Axis { label: Words::new("time since t=0", "thời gian từ t=0"), unit: "ms".into(), scale: Scale::Linear }
}

fn priority_name(p: Priority) -> Words {
    Words::same(p.name())
}

/// Jobs served so far per priority (a flat low line is starvation), at most ~200 steps.
pub fn served_chart(events: &[crate::timeline::Event]) -> Chart {
    let tracks = priority::tracks(events);
    let end = tracks.iter().filter_map(|t| t.taken_us).max().unwrap_or(0) as f64 / 1000.0;
    let windows = priority::taken_per_window(&tracks, (end / 200.0).max(10.0));
    let series = Priority::ALL
        .iter()
        .filter(|p| tracks.iter().any(|t| t.priority == **p))
        .map(|p| {
            let mut total = 0.0;
            let mut points = vec![(0.0, 0.0)];
            for (start, counts) in &windows {
                total += counts[p.index()] as f64;
                points.push((*start, total));
            }
            Series { name: priority_name(*p), style: Style::Step, points, err: None, unmeasured: Vec::new() }
        })
        .collect();
    Chart {
        flags: Vec::new(),
        id: "served".into(),
        title: Words::new("Jobs served so far, per priority", "Số job đã xử lý, theo mức ưu tiên"),
        x: time_axis(),
        y: Axis { label: Words::new("jobs served", "job đã xử lý"), unit: String::new(), scale: Scale::Linear },
        series,
        marks: phase_marks(events),
        note: Some(Words::new(
            "run 1; a vertical line is the start of a phase",
            "lần 1; vạch dọc là lúc bắt đầu một giai đoạn",
        )),
    }
}

/// Jobs served per window of `window_ms` per priority: 10:5:1 while all are backlogged.
pub fn rate_chart(events: &[crate::timeline::Event], window_ms: f64) -> Chart {
    let tracks = priority::tracks(events);
    let windows = priority::taken_per_window(&tracks, window_ms);
    let series = Priority::ALL
        .iter()
        .map(|p| Series {
            name: priority_name(*p),
            style: Style::Line,
            points: windows.iter().map(|(start, c)| (*start, c[p.index()] as f64)).collect(),
            err: None,
            unmeasured: Vec::new(),
        })
        .collect();
    let w = window_ms.round();
    Chart {
        flags: Vec::new(),
        id: "rate".into(),
        title: crate::words!("Jobs served per {w} ms, per priority", "Số job xử lý mỗi {w} ms, theo mức ưu tiên"),
        x: time_axis(),
        y: Axis {
            label: crate::words!("jobs per {w} ms", "job mỗi {w} ms"),
            unit: String::new(),
            scale: Scale::Linear,
        },
        series,
        marks: phase_marks(events),
        note: Some(Words::new("run 1", "lần 1")),
    }
}

/// A critical job's worst wait where the worker had time (a probe, or the trickle's 90th
/// percentile), and low's longest wait (the trickle's low jobs, else the backlog's longest
/// stretch with no low job served): a job never served is the worst, and has no number.
fn critical_and_low(m: &PriorityMeasures) -> CriticalAndLow {
    let probe = m.aligned_probe.clone().into_iter();
    let random = m.random_probes.iter().map(waits_worst);
    let trickle = m.trickle_critical.iter().map(|w| match &w.never_served {
        Some(n) => Wait::Never(n.clone()),
        None => Wait::Served(w.p90_ms),
    });
    let critical = probe.chain(random).chain(trickle).reduce(worse);
    let low =
        m.trickle_lower.as_ref().map(waits_worst).or(m.backlog.as_ref().and_then(|b| b.low_gap_ms.map(Wait::Served)));
    CriticalAndLow { critical, low }
}

/// The longest wait of a phase's jobs: one never served, else the longest served.
fn waits_worst(w: &priority::Waits) -> Wait {
    match &w.never_served {
        Some(n) => Wait::Never(n.clone()),
        None => Wait::Served(w.max_ms),
    }
}

/// The worse of two waits: never served beats any number.
fn worse(a: Wait, b: Wait) -> Wait {
    match (a, b) {
        (Wait::Served(x), Wait::Served(y)) => Wait::Served(x.max(y)),
        (Wait::Never(n), _) | (_, Wait::Never(n)) => Wait::Never(n),
    }
}

/// The two waits a variant is compared on.
struct CriticalAndLow {
    critical: Option<Wait>,
    low: Option<Wait>,
}

/// Per variant: the critical and the low wait of [`critical_and_low`], median of the runs,
/// whiskers from the least to the most (log scale: below 1 ms shows as 1 ms).
pub fn waits_chart(variants: &[VariantRuns<'_, PrioritySpec>]) -> Chart {
    let categories: Vec<Words> = variants.iter().map(|v| Words::same(v.id)).collect();
    let pick_series = |name: Words, which: fn(CriticalAndLow) -> Option<Wait>| {
        let mut points = Vec::new();
        let mut err = Vec::new();
        let mut unmeasured = Vec::new();
        for (i, v) in variants.iter().enumerate() {
            let waits: Vec<Wait> =
                v.runs.iter().filter_map(|r| which(critical_and_low(&priority::measure(r.events)))).collect();
            let mut xs: Vec<f64> = waits.iter().filter_map(Wait::served_ms).map(|x| x.max(1.0)).collect();
            xs.sort_by(f64::total_cmp);
            if let (Some(lo), Some(hi)) = (xs.first(), xs.last()) {
                points.push((i as f64, xs[xs.len() / 2]));
                err.push((*lo, *hi));
            }
            let never: Vec<&NeverServed> = waits.iter().filter_map(Wait::never).collect();
            if let Some(first) = never.first() {
                let (k, n) = (never.len(), waits.len());
                let label = Words::new(
                    format!("{}: {k} of {n} runs", first.label(Lang::En)),
                    format!("{}: {k}/{n} lần", first.label(Lang::Vi)),
                );
                unmeasured.push(Unmeasured { x: i as f64, label });
            }
        }
        Series { name, style: Style::Bars, points, err: Some(err), unmeasured }
    };
    Chart {
        flags: Vec::new(),
        id: "waits".into(),
        title: Words::new(
            "How long critical and low jobs waited, per loop",
            "Job critical và low chờ bao lâu, theo từng vòng lặp",
        ),
        x: Axis { label: Words::new("loop", "vòng lặp"), unit: String::new(), scale: Scale::Categories(categories) },
        y: Axis { label: Words::new("wait", "thời gian chờ"), unit: "ms".into(), scale: Scale::Log10 },
        series: vec![
            pick_series(
                Words::new("critical, worst while the worker had time", "critical, lâu nhất khi worker rảnh"),
                |w| w.critical,
            ),
            pick_series(Words::new("low, longest unserved", "low, lâu nhất chưa được xử lý"), |w| w.low),
        ],
        marks: Vec::new(),
        note: Some(Words::new(
            "median of the runs, whiskers min–max; ✕ at the top: runs in which that job was never served (no wait to draw)",
            "trung vị các lần chạy, râu min–max; ✕ ở trên cùng: các lần job đó không bao giờ được xử lý (không có thời gian chờ để vẽ)",
        )),
    }
}

/// `1 worker, seed-strict loop: XREADGROUP … COUNT 10, BLOCK 100 / 100 / 5000`.
fn loop_phrase(spec: &LoopSpec, lang: Lang) -> String {
    let name = spec.name();
    let detail = match spec {
        LoopSpec::SeedStrict { count, block_ms } => {
            let b: Vec<String> = block_ms.iter().map(|b| b.to_string()).collect();
            format!("COUNT {count}, BLOCK {}", b.join("/"))
        }
        LoopSpec::OneCall { count, block_ms } => format!("COUNT {count}, BLOCK {block_ms}"),
        LoopSpec::ProbeThenBlock { count, .. } => format!("COUNT {count}"),
        LoopSpec::SeedWeighted { weights, block_ms } => format!("{}, BLOCK {block_ms}", weights_text(weights)),
        LoopSpec::FixedWeighted { weights, .. } => weights_text(weights),
    };
    crate::tr!(lang, "1 worker, {name} loop ({detail})", "1 worker, vòng {name} ({detail})")
}

fn weights_text(w: &[u32]) -> String {
    let w: Vec<String> = w.iter().map(|x| x.to_string()).collect();
    format!("COUNT {}", w.join(":"))
}

/// `200 critical, 20 low` (priorities with none left out).
fn counts_phrase(jobs: [u32; 3]) -> String {
    let parts: Vec<String> =
        Priority::ALL.iter().filter(|p| jobs[p.index()] > 0).map(|p| format!("{} {p}", jobs[p.index()])).collect();
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(", ")
    }
}

/// What makes a run wrong, from the claims.
fn claims_phrase(c: &Claims, lang: Lang) -> String {
    let mut parts = Vec::new();
    if c.strict {
        parts.push(pick(lang, "normal/low served before critical", "normal/low được xử lý trước critical").to_string());
    }
    if let Some(r) = c.ratio {
        let (a, b, d) = (r[0], r[1], r[2]);
        let tol = c.ratio_tolerance * 100.0;
        parts.push(crate::tr!(lang, "ratio not {a}:{b}:{d} (±{tol} %)", "tỷ lệ không phải {a}:{b}:{d} (±{tol} %)"));
    }
    if let Some(ms) = c.low_gap_ms {
        parts.push(crate::tr!(lang, "low unserved > {ms} ms", "low không được xử lý > {ms} ms"));
    }
    if let Some(ms) = c.low_wait_ms {
        parts.push(crate::tr!(lang, "low waits > {ms} ms under light traffic", "low chờ > {ms} ms khi tải nhẹ"));
    }
    if let Some(ms) = c.critical_wait_ms {
        parts.push(crate::tr!(lang, "critical waits > {ms} ms", "critical chờ > {ms} ms"));
    }
    let what = if parts.is_empty() {
        pick(lang, "nothing checked", "không kiểm tra gì").to_string()
    } else {
        parts.join(pick(lang, " or ", " hoặc "))
    };
    crate::tr!(lang, "wrong: {what}", "SAI: {what}")
}

fn measure_facts(m: &PriorityMeasures, claims: &Claims, costs_differ: bool) -> PriorityFacts {
    let mut f = PriorityFacts::default();
    if let Some(b) = &m.backlog {
        if claims.strict {
            f.backlog_lower_before_critical = Some(b.lower_before_critical_drained as i64);
        }
        f.served_while_backlogged = b.served_while_all_backlogged.map(|s| s.map(|n| n as i64));
        f.backlog_low_gap_ms = b.low_gap_ms.map(ms);
        if let (Some(w), true) = (b.work_ms_while_all_backlogged, costs_differ) {
            let total: f64 = w.iter().sum();
            if total > 0.0 {
                f.work_share_low_pct = Some(ms(w[2] * 100.0 / total));
            }
        }
    }
    f.aligned_probe_wait_ms = m.aligned_probe.as_ref().and_then(Wait::served_ms).map(ms);
    f.aligned_probe_never_served_ms = m.aligned_probe.as_ref().and_then(Wait::never).map(|n| ms(n.unserved_ms));
    f.burst_critical_jobs_per_s = m.burst_jobs_per_s.map(ms);
    f.trickle_critical_p50_ms = m.trickle_critical.as_ref().map(|w| ms(w.p50_ms));
    f.trickle_critical_p90_ms = m.trickle_critical.as_ref().map(|w| ms(w.p90_ms));
    f.trickle_low_max_wait_ms = m.trickle_lower.as_ref().map(|w| ms(w.max_ms));
    f.probe_p50_ms = m.random_probes.as_ref().map(|w| ms(w.p50_ms));
    f.probe_max_ms = m.random_probes.as_ref().map(|w| ms(w.max_ms));
    f.empty_reads = m.empty_reads as i64;
    f.longest_empty_read_ms = ms(m.longest_empty_read_ms);
    f
}

/// What a priority run measured, phase by phase; a phase the run did not have leaves None.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorityFacts {
    /// Lower-priority jobs served before the critical backlog drained (a strict claim only).
    pub backlog_lower_before_critical: Option<i64>,
    /// Jobs served per priority (critical, normal, low) while all three were backlogged.
    pub served_while_backlogged: Option<[i64; 3]>,
    pub backlog_low_gap_ms: Option<i64>,
    /// The low priority's share of the handler time while all were backlogged, where costs differ.
    pub work_share_low_pct: Option<i64>,
    /// The aligned probe's wait, if it was served.
    pub aligned_probe_wait_ms: Option<i64>,
    /// The aligned probe was never served: how long it had waited unserved when the lab
    /// stopped waiting for it (its worker died, or the lab's patience ran out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aligned_probe_never_served_ms: Option<i64>,
    pub burst_critical_jobs_per_s: Option<i64>,
    pub trickle_critical_p50_ms: Option<i64>,
    pub trickle_critical_p90_ms: Option<i64>,
    pub trickle_low_max_wait_ms: Option<i64>,
    pub probe_p50_ms: Option<i64>,
    pub probe_max_ms: Option<i64>,
    pub empty_reads: i64,
    pub longest_empty_read_ms: i64,
}

impl Facts for PriorityFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut f = Vec::new();
        f.extend(self.backlog_lower_before_critical.map(|n| FactRow::stable("backlog_lower_before_critical", n)));
        if let Some([critical, normal, low]) = self.served_while_backlogged {
            f.push(FactRow::stable("served_critical_while_backlogged", critical));
            f.push(FactRow::stable("served_normal_while_backlogged", normal));
            f.push(FactRow::stable("served_low_while_backlogged", low));
        }
        let measured = [
            ("backlog_low_gap_ms", self.backlog_low_gap_ms),
            ("work_share_low_pct", self.work_share_low_pct),
            ("aligned_probe_wait_ms", self.aligned_probe_wait_ms),
            ("aligned_probe_never_served_ms", self.aligned_probe_never_served_ms),
            ("burst_critical_jobs_per_s", self.burst_critical_jobs_per_s),
            ("trickle_critical_p50_ms", self.trickle_critical_p50_ms),
            ("trickle_critical_p90_ms", self.trickle_critical_p90_ms),
            ("trickle_low_max_wait_ms", self.trickle_low_max_wait_ms),
            ("probe_p50_ms", self.probe_p50_ms),
            ("probe_max_ms", self.probe_max_ms),
        ];
        f.extend(measured.into_iter().filter_map(|(name, n)| n.map(|n| FactRow::measured(name, n))));
        f.push(FactRow::measured("empty_reads", self.empty_reads));
        f.push(FactRow::measured("longest_empty_read_ms", self.longest_empty_read_ms));
        f
    }
}

/// Lines after the timeline: per phase, the order jobs were served and how long they waited.
fn phase_lines(events: &[crate::timeline::Event], costs_differ: bool, lang: Lang) -> Vec<Line> {
    let tracks = priority::tracks(events);
    let m = priority::measure(events);
    let mut out = Vec::new();
    if let Some(b) = &m.backlog {
        out.extend(backlog_lines(&tracks, b, costs_differ, lang));
    }
    match &m.aligned_probe {
        Some(Wait::Served(w)) => {
            let label = pick(lang, "probe at the worst moment: waited", "job thăm dò vào lúc tệ nhất: chờ");
            out.push(Line::text(format!("{label} ")).and(Piece::Ms(ms(*w))));
        }
        Some(Wait::Never(n)) => {
            let label = pick(lang, "probe at the worst moment: ", "job thăm dò vào lúc tệ nhất: ");
            out.push(Line::text(label).and_line(n.words(lang)));
        }
        None => {}
    }
    if let Some(r) = m.burst_jobs_per_s {
        let label = pick(lang, "burst, critical alone", "dồn critical, không có gì khác");
        out.push(Line::text(format!("{label}: ")).and(Piece::Count(ms(r))).and_text(pick(lang, " jobs/s", " job/s")));
    }
    if m.trickle_critical.is_some() {
        // Where low falls among the critical jobs is the point; how many critical jobs come
        // before it depends on a stall of the worker at the trickle's start (a snapshot shows
        // the shape, `[n] critical, [n] low, [n] critical`).
        let label = pick(lang, "trickle served in order", "nhỏ giọt, thứ tự xử lý");
        out.push(order_line(&tracks, Phase::Trickle, label).redacting_numbers());
        if let Some(w) = &m.trickle_critical {
            let label =
                pick(lang, "trickle, critical waited p50 / p90 / max", "nhỏ giọt, critical chờ p50 / p90 / max");
            out.push(waits_line(label, w, lang));
        }
        if let Some(w) = &m.trickle_lower {
            let label = pick(lang, "trickle, normal/low waited up to", "nhỏ giọt, normal/low chờ tới");
            out.push(unserved_after(w, Line::text(format!("{label} ")).and(Piece::Ms(ms(w.max_ms))), lang));
        }
    }
    if let Some(w) = &m.random_probes {
        let label = pick(lang, "probes at random moments waited p50 / max", "job thăm dò lúc ngẫu nhiên chờ p50 / max");
        let line =
            Line::text(format!("{label} ")).and(Piece::Ms(ms(w.p50_ms))).and_text(" / ").and(Piece::Ms(ms(w.max_ms)));
        out.push(unserved_after(w, line, lang));
    }
    let label = pick(lang, "empty reads", "lần đọc rỗng");
    let longest = pick(lang, "the longest", "lâu nhất");
    out.push(
        Line::text(format!("{label}: "))
            .and(Piece::Count(m.empty_reads as i64))
            .and_text(format!(", {longest} "))
            .and(Piece::Ms(ms(m.longest_empty_read_ms))),
    );
    out
}

fn backlog_lines(tracks: &[priority::JobTrack], b: &BacklogMeasures, costs_differ: bool, lang: Lang) -> Vec<Line> {
    let mut out =
        vec![order_line(tracks, Phase::Backlog, pick(lang, "backlog served in order", "tồn đọng, thứ tự xử lý"))];
    if let Some(s) = b.served_while_all_backlogged {
        let backlogged: Vec<Priority> = Priority::ALL
            .into_iter()
            .filter(|p| tracks.iter().any(|t| t.phase == Phase::Backlog && t.priority == *p))
            .collect();
        let counts: Vec<String> = backlogged.iter().map(|p| format!("{} {p}", s[p.index()])).collect();
        let ratio =
            if backlogged.iter().all(|p| s[p.index()] > 0) { format!(" ({})", ratio_text(s)) } else { String::new() };
        let label =
            pick(lang, "served while every backlogged priority had jobs", "đã xử lý khi mọi mức tồn đọng còn job");
        out.push(Line::text(format!("{label}: {}{ratio}", counts.join(", "))));
        if let (Some(w), true) = (b.work_ms_while_all_backlogged, costs_differ) {
            let total: f64 = w.iter().sum::<f64>().max(1e-9);
            let label = pick(
                lang,
                "share of worker time critical : normal : low",
                "tỷ lệ thời gian worker critical : normal : low",
            );
            let pct = |x: f64| Piece::Count(ms(x * 100.0 / total));
            out.push(
                Line::text(format!("{label} "))
                    .and(pct(w[0]))
                    .and_text(" : ")
                    .and(pct(w[1]))
                    .and_text(" : ")
                    .and(pct(w[2]))
                    .and_text(" %"),
            );
        }
    }
    if let Some(g) = b.low_gap_ms {
        let label = pick(
            lang,
            "backlog, the longest time low waited with none served",
            "tồn đọng, thời gian dài nhất low chờ mà không job low nào được xử lý",
        );
        out.push(Line::text(format!("{label}: ")).and(Piece::Ms(ms(g))));
    }
    out
}

/// `10.0 : 5.0 : 1.0` from served counts, relative to the last priority served.
fn ratio_text(s: [u32; 3]) -> String {
    let Some(base) = (0..3).rev().find(|i| s[*i] > 0) else { return "-".into() };
    let r: Vec<String> = s.iter().map(|n| format!("{:.1}", *n as f64 / s[base] as f64)).collect();
    r.join(" : ")
}

/// `backlog served in order: (10 critical, 5 normal, 1 low) × 30`.
fn order_line(tracks: &[priority::JobTrack], phase: Phase, label: &str) -> Line {
    let runs = priority::served_runs(tracks, phase);
    Line::text(format!("{label}: {}", runs_text(&runs)))
}

/// Runs of priorities, a repeating group written once with its count.
pub fn runs_text(runs: &[(Priority, u32)]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let (period, times) = (1..=3)
            .map(|p| {
                let mut k = 1;
                while i + (k + 1) * p <= runs.len() && runs[i..i + p] == runs[i + k * p..i + (k + 1) * p] {
                    k += 1;
                }
                (p, k)
            })
            .filter(|(_, k)| *k > 1)
            .max_by_key(|(p, k)| p * k)
            .unwrap_or((1, 1));
        let group: Vec<String> = runs[i..i + period].iter().map(|(p, n)| format!("{n} {p}")).collect();
        parts.push(if times > 1 { format!("({}) × {times}", group.join(", ")) } else { group.join(", ") });
        i += period * times;
    }
    parts.join(", ")
}

fn waits_line(label: &str, w: &priority::Waits, lang: Lang) -> Line {
    let line = Line::text(format!("{label} "))
        .and(Piece::Ms(ms(w.p50_ms)))
        .and_text(" / ")
        .and(Piece::Ms(ms(w.p90_ms)))
        .and_text(" / ")
        .and(Piece::Ms(ms(w.max_ms)));
    unserved_after(w, line, lang)
}

/// A phase's waits line as it stands when every job was served; when some were not, their
/// count and why (the figures before it are of the served ones), or only that when none was.
fn unserved_after(w: &priority::Waits, served: Line, lang: Lang) -> Line {
    let Some(n) = &w.never_served else { return served };
    let never = w.never;
    let head = if w.any_served() {
        served.and_text(crate::tr!(lang, " (of the served); {never} ", " (trong số đã xử lý); {never} "))
    } else {
        let label = served.0.first().map(|p| match p {
            Piece::Text(t) => t.trim_end().to_string(),
            _ => String::new(),
        });
        Line::text(format!("{}: {never} ", label.unwrap_or_default()))
    };
    head.and_text(pick(lang, "not served, the longest ", "không được xử lý, lâu nhất ")).and_line(n.words(lang))
}

/// Run 1's figures side by side with the other variants'.
fn table_cells(m: &PriorityMeasures, lang: Lang) -> Vec<(String, Line)> {
    let msl = |x: f64| Line(vec![Piece::Ms(ms(x))]);
    let mut cells = Vec::new();
    if let Some(b) = &m.backlog {
        if let Some(s) = b.served_while_all_backlogged {
            cells.push((
                pick(lang, "served c:n:l", "đã xử lý c:n:l").to_string(),
                Line::text(format!("{}:{}:{}", s[0], s[1], s[2])),
            ));
        }
        if let Some(g) = b.low_gap_ms {
            cells.push((pick(lang, "low gap", "low chờ").to_string(), msl(g)));
        }
    }
    match &m.aligned_probe {
        Some(Wait::Served(p)) => cells.push((pick(lang, "worst probe", "thăm dò tệ nhất").to_string(), msl(*p))),
        Some(Wait::Never(n)) => {
            cells.push((pick(lang, "worst probe", "thăm dò tệ nhất").to_string(), Line::text(n.label(lang))))
        }
        None => {}
    }
    if let Some(r) = m.burst_jobs_per_s {
        cells.push((pick(lang, "critical/s", "critical/s").to_string(), Line(vec![Piece::Count(ms(r))])));
    }
    if let Some(w) = &m.trickle_critical {
        cells.push(("p90 critical".to_string(), msl(w.p90_ms)));
    }
    if let Some(w) = &m.trickle_lower {
        cells.push((pick(lang, "low max", "low tối đa").to_string(), msl(w.max_ms)));
    }
    if let Some(w) = &m.random_probes {
        cells.push((pick(lang, "probe p50", "thăm dò p50").to_string(), msl(w.p50_ms)));
    }
    cells
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::priority::*;
    use crate::timeline::vocabulary::Vocabulary;

    fn spec(text: &str) -> LoopSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_aligned_probe_waits_for_the_longest_block_away_from_critical() {
        let s = TimeScale(1.0);
        let (after, blocked) = aligned_target(&spec(r#"kind = "seed-strict""#));
        assert_eq!(describe(&after.unwrap(), s), "XREADGROUP normal COUNT 10 BLOCK 100");
        assert_eq!(describe(&blocked, s), "XREADGROUP low COUNT 10 BLOCK 5000");
        let (after, blocked) = aligned_target(&spec(r#"kind = "seed-weighted""#));
        assert_eq!(describe(&after.unwrap(), s), "XREADGROUP critical COUNT 10 BLOCK 100");
        assert_eq!(describe(&blocked, s), "XREADGROUP normal COUNT 5 BLOCK 100");
        let (after, blocked) = aligned_target(&spec(r#"kind = "probe-then-block""#));
        assert_eq!(
            (after, describe(&blocked, s)),
            (None, "XREADGROUP critical normal low COUNT 1 BLOCK 0".to_string())
        );
        let (after, blocked) = aligned_target(&spec(r#"kind = "one-call""#));
        assert_eq!(
            (after, describe(&blocked, s)),
            (None, "XREADGROUP critical normal low COUNT 10 BLOCK 5000".to_string())
        );
    }

    #[test]
    fn idle_cycles_are_one_round_of_the_loop() {
        let words = |k: &str| -> Vec<String> {
            idle_cycle(&spec(&format!("kind = \"{k}\""))).iter().map(|r| describe(r, TimeScale(1.0))).collect()
        };
        assert_eq!(words("seed-strict").len(), 3);
        assert_eq!(words("one-call").len(), 1);
        assert_eq!(words("fixed-weighted").last().unwrap(), "XREADGROUP critical normal low COUNT 1 BLOCK 0");
        assert_eq!(words("fixed-weighted").len(), 4);
    }

    fn ev(t_ms: f64, kind: EventKind) -> crate::timeline::Event {
        crate::timeline::Event { t_us: (t_ms * 1000.0) as i64, actor: Actor::Consumer(1), kind }
    }

    /// Two critical and one low job of a backlog, a probe that waited 5 s.
    fn small_run() -> Vec<crate::timeline::Event> {
        let queued = |t, job: &str, priority, phase: Phase| {
            ev(t, PriorityEvent::JobQueued { job: job.into(), priority, phase, traced: true, score: None }.event())
        };
        let taken = |t, job: &str, priority, phase: Phase| {
            ev(
                t,
                PriorityEvent::PriorityJobTaken { job: job.into(), priority, phase, traced: true, waited_ms: None }
                    .event(),
            )
        };
        let (c, l) = (Priority::Critical, Priority::Low);
        vec![
            ev(0.0, PriorityEvent::PhaseStarted { plan: PhasePlan::Backlog { jobs: [2, 0, 1] } }.event()),
            queued(0.0, "c-0001", c, Phase::Backlog),
            queued(0.0, "c-0002", c, Phase::Backlog),
            queued(0.0, "l-0001", l, Phase::Backlog),
            taken(5.0, "c-0001", c, Phase::Backlog),
            taken(25.0, "c-0002", c, Phase::Backlog),
            taken(45.0, "l-0001", l, Phase::Backlog),
            ev(
                100.0,
                PriorityEvent::PhaseStarted {
                    plan: PhasePlan::Probe { blocked_in: Some("XREADGROUP low".into()), after_ms: None },
                }
                .event(),
            ),
            queued(100.0, "c-0003", c, Phase::AlignedProbe),
            taken(5100.0, "c-0003", c, Phase::AlignedProbe),
        ]
    }

    #[test]
    fn the_service_charts_count_what_was_taken() {
        let events = small_run();
        let served = served_chart(&events);
        assert_eq!(served.validate(), Ok(()));
        let names: Vec<&str> = served.series.iter().map(|s| s.name.en.as_str()).collect();
        assert_eq!(names, ["critical", "low"], "normal had no job");
        assert_eq!(served.series[0].points.last().unwrap().1, 3.0);
        assert_eq!(served.series[1].points.last().unwrap().1, 1.0);
        let at: Vec<f64> = served.marks.iter().map(|m| m.at).collect();
        assert_eq!(at, [0.0, 100.0]);
        let rate = rate_chart(&events, 100.0);
        assert_eq!(rate.validate(), Ok(()));
        // Window 0–100 ms: 2 critical, 1 low; the probe in window 5100.
        assert_eq!(rate.series[0].points[0], (0.0, 2.0));
        assert_eq!(rate.series[2].points[0], (0.0, 1.0));
        assert_eq!(rate.series[0].points.last().unwrap(), &(5100.0, 1.0));
    }

    #[test]
    fn the_waits_chart_puts_each_loop_side_by_side() {
        let spec: PrioritySpec =
            toml::from_str("loop = { kind = \"seed-strict\" }\ncost_ms = { critical = 2 }").unwrap();
        let events = small_run();
        let observed = PriorityObserved { scale: 1.0, queued: 4, done: 4, pending_after_run: 0, explored: false };
        let view = || RunView { run: 1, events: &events, timed_out: false, observed: &observed };
        let title = Words::same("t");
        let variants = [
            VariantRuns { id: "seed-strict", title: &title, spec: &spec, runs: vec![view(), view()] },
            VariantRuns { id: "other", title: &title, spec: &spec, runs: vec![view()] },
        ];
        let chart = waits_chart(&variants);
        assert_eq!(chart.validate(), Ok(()));
        // Critical: the probe's 5000 ms; low: the backlog's 45 ms without a low job.
        assert_eq!(chart.series[0].points, [(0.0, 5000.0), (1.0, 5000.0)]);
        assert_eq!(chart.series[1].points, [(0.0, 45.0), (1.0, 45.0)]);
        assert_eq!(chart.series[1].err.as_ref().unwrap()[0], (45.0, 45.0));
    }

    #[test]
    fn repeating_groups_are_written_once() {
        use Priority::*;
        let weighted: Vec<(Priority, u32)> = (0..30).flat_map(|_| [(Critical, 10), (Normal, 5), (Low, 1)]).collect();
        assert_eq!(runs_text(&weighted), "(10 critical, 5 normal, 1 low) × 30");
        let one_call = [(Critical, 10), (Low, 10), (Critical, 10), (Low, 10), (Critical, 180)];
        assert_eq!(runs_text(&one_call), "(10 critical, 10 low) × 2, 180 critical");
        assert_eq!(runs_text(&[(Critical, 200), (Low, 20)]), "200 critical, 20 low");
    }
}
