//! A priority queue in one sorted set (seed 000): the score is the priority, a worker takes
//! the highest with `ZPOPMAX`. Each variant runs one experiment on it:
//!
//! - **ties**: the seed's own payloads, ten payments of score 100 queued A1…A10, then its
//!   email (50) and analytics (10) jobs — which order do equal scores come out in?
//! - **crash**: the worker is SIGKILLed right after its first pop; a second worker takes over
//!   — is the popped job lost (there is no pending list), and does a leased pop keep it?
//! - **arrivals**: the worker idles, then jobs arrive at random moments — how long does each
//!   wait, and how many commands does the idle worker send (the server's own count)?
//! - **flood**: critical jobs kept waiting while low jobs wait too — does low starve, and
//!   does aging (score = priority − queueing time / τ) end it?
//!
//! Lost jobs are counted on the server: queued, minus the worker's `done` set, minus what is
//! left in the queue and the processing set.

mod seed_lines;

use crate::chart::{Axis, Chart, Mark, MarkAxis, Scale, Series, Style};
use crate::checker::health::health;
use crate::checker::RunVerdict;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::labs::priority::job_run::JobRun;
use crate::labs::priority::zset_checker::{self as zset, IdleCount, QueuedMember, ZsetClaims, ZsetMeasures};
use crate::labs::priority::zset_worker::{PopSpec, ZsetKeys, ZsetWorkerConfig};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
    VariantRuns,
};
use crate::lang::{pick, Lang, Words};
use crate::priority_queue::PerPriority;
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{Phase, PhasePlan, Priority};
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use rand::Rng;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// `kind = "zset"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZsetSpec {
    /// How the worker takes a job.
    pub pop: PopSpec,
    /// Handler work per job in ms, per priority.
    pub cost_ms: PerPriority<f64>,
    pub experiment: Experiment,
    #[serde(default)]
    pub claims: ZsetClaims,
}

/// The experiment a run makes.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Experiment {
    /// The seed's payloads: `payments` payment jobs (score 100, `order_id` A1, A2, …, queued
    /// in that order), then its email (50) and analytics (10) jobs; then the worker starts.
    Ties { payments: u32 },
    /// `jobs` critical jobs queued; worker C1 dies (SIGKILL) right after its first pop; C2
    /// starts once C1 is dead and works until nothing is left to take.
    Crash { jobs: u32 },
    /// The worker idles `idle_ms` (the server counts its commands), then `count` critical
    /// jobs arrive, each a seeded random 0–`max_delay_ms` after the last was done.
    Arrivals { idle_ms: f64, count: u32, max_delay_ms: f64 },
    /// `critical` critical jobs and `low` low jobs queued, then for `ms` a new critical job
    /// for each one taken; with `tau_ms`, scores age (priority − queueing time / τ).
    Flood {
        critical: u32,
        low: u32,
        ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tau_ms: Option<f64>,
    },
}

impl Experiment {
    pub fn name(&self) -> &'static str {
        match self {
            Experiment::Ties { .. } => "ties",
            Experiment::Crash { .. } => "crash",
            Experiment::Arrivals { .. } => "arrivals",
            Experiment::Flood { .. } => "flood",
        }
    }
}

/// What a sorted-set run left on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZsetObserved {
    pub scale: f64,
    pub queued: u32,
    /// Jobs in the run's `done` set.
    pub done: u32,
    /// Members left in the queue and the processing set.
    pub left: u32,
    /// The members of a ties run, in the order queued.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<QueuedMember>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleCount>,
}

impl ZsetObserved {
    pub fn lost(&self) -> i64 {
        self.queued as i64 - self.done as i64 - self.left as i64
    }
}

/// The seed's scores: payment 100, email 50, analytics 10.
fn base_score(p: Priority) -> f64 {
    match p {
        Priority::Critical => 100.0,
        Priority::Normal => 50.0,
        Priority::Low => 10.0,
    }
}

impl ZsetSpec {
    fn worker(&self, ctx: &RunContext<'_>, keys: &ZsetKeys, index: u32, crash: bool) -> RoleConfig {
        RoleConfig::of(&ZsetWorkerConfig {
            env: ctx.role_env(index),
            index,
            client_name: ctx.client_name(Actor::Consumer(index)),
            keys: keys.clone(),
            pop: self.pop.clone(),
            cost_ms: self.cost_ms.array(),
            crash_after_pops: crash.then_some(1),
        })
    }

    /// A generous bound: every job's work and a poll or lease each, the experiment's own
    /// times, tripled, plus 15 s.
    fn bound(&self, scale: TimeScale) -> Duration {
        let wait = match &self.pop {
            PopSpec::PollSleep { sleep_ms } => *sleep_ms,
            PopSpec::Bzpopmax => 0.0,
            PopSpec::Reliable { lease_ms, sleep_ms } => lease_ms + sleep_ms,
        };
        let cost = self.cost_ms.array().iter().copied().fold(0.0, f64::max);
        let ms = match &self.experiment {
            Experiment::Ties { payments } => (*payments + 2) as f64 * (cost + wait),
            Experiment::Crash { jobs } => *jobs as f64 * (cost + wait) + wait,
            Experiment::Arrivals { idle_ms, count, max_delay_ms } => {
                idle_ms + *count as f64 * (max_delay_ms + cost + wait)
            }
            Experiment::Flood { critical, low, ms, .. } => {
                ms + ms / cost.max(1.0) * cost + (critical + low) as f64 * (cost + wait)
            }
        };
        scale.duration(ms * 3.0) + Duration::from_secs(15)
    }
}

/// The orchestrator's side of a sorted-set run.
struct ZDriver<'a> {
    ctx: &'a RunContext<'a>,
    spec: &'a ZsetSpec,
    run: JobRun,
    conn: MultiplexedConnection,
    keys: ZsetKeys,
    t0_ns: u64,
    next_id: [u32; 3],
    workers: Vec<RoleProcess>,
    members: Vec<QueuedMember>,
    idle: Option<IdleCount>,
}

/// A job to queue: its id, priority, the member as stored, its score.
struct Job {
    id: String,
    priority: Priority,
    member: String,
}

impl ZDriver<'_> {
    fn job(&mut self, priority: Priority, phase: Phase, traced: bool) -> Job {
        let n = &mut self.next_id[priority.index()];
        *n += 1;
        let id = format!("{}-{:04}", &priority.name()[..1], n);
        let member = serde_json::json!({ "job": id, "priority": priority.name(), "phase": phase, "traced": traced, "queued_ns": crate::clock::now_ns() });
        Job { id, priority, member: member.to_string() }
    }

    /// The score of a job queued now: its priority, aged by `tau_ms` if given.
    fn score(&self, p: Priority, tau_ms: Option<f64>) -> f64 {
        let since_ms = (crate::clock::now_ns() - self.t0_ns) as f64 / 1e6;
        match tau_ms {
            Some(tau) => base_score(p) - since_ms / (tau * self.ctx.scale.0),
            None => base_score(p),
        }
    }

    /// ZADD every job (in one pipeline, in this order) and record it as queued, stamped
    /// before the ZADD (a worker may take it before the reply is back).
    async fn queue(
        &mut self,
        jobs: Vec<(Job, f64)>,
        phase: Phase,
        traced: impl Fn(&Job) -> bool,
    ) -> Result<HashSet<String>, Error> {
        let queued_ns = crate::clock::now_ns();
        let mut pipe = redis::pipe();
        for (j, score) in &jobs {
            pipe.cmd("ZADD").arg(&self.keys.queue).arg(*score).arg(&j.member).ignore();
        }
        pipe.query_async::<()>(&mut self.conn).await.context("ZADD")?;
        let mut ids = HashSet::new();
        for (j, score) in jobs {
            let kind = PriorityEvent::JobQueued {
                job: j.id.clone(),
                priority: j.priority,
                phase,
                traced: traced(&j),
                score: Some(score),
            }
            .event();
            self.run.tx.record(RawEvent { mono_ns: queued_ns, actor: Actor::Producer, kind });
            ids.insert(j.id);
        }
        Ok(ids)
    }

    fn spawn(&mut self, index: u32, crash: bool) -> Result<(), Error> {
        let cfg = self.spec.worker(self.ctx, &self.keys, index, crash);
        self.workers.push(self.ctx.spawn(&cfg, self.run.tx.clone())?);
        Ok(())
    }

    /// Until the last worker is idle: blocked in BZPOPMAX, or back from a pop that found
    /// nothing.
    async fn wait_idle(&mut self) -> Result<bool, Error> {
        let worker = self.workers.last().expect("a worker was started");
        let actor = worker.actor();
        if self.spec.pop == PopSpec::Bzpopmax {
            let name = self.ctx.client_name(actor);
            let mut conn = self.conn.clone();
            wait_for_client(&mut conn, &name, ClientState::Blocked, worker).await?;
            return Ok(true);
        }
        Ok(self.run.wait_for("an empty read of the worker", |ev| ev.actor == actor && matches!(ev.kind.family::<PriorityEvent>(), Some(PriorityEvent::QueueRead { got, .. }) if *got == [0])).await)
    }

    async fn ties(&mut self, payments: u32) -> Result<bool, Error> {
        let seed_job =
            |p: Priority, id: &str, member: String| (Job { id: id.to_string(), priority: p, member }, base_score(p));
        let mut jobs: Vec<(Job, f64)> = (1..=payments)
            .map(|i| {
                seed_job(Priority::Critical, &format!("A{i}"), format!(r#"{{"type":"payment","order_id":"A{i}"}}"#))
            })
            .collect();
        jobs.push(seed_job(Priority::Normal, "U5", r#"{"type":"email","user_id":"U5"}"#.to_string()));
        jobs.push(seed_job(Priority::Low, "2026-06-01", r#"{"type":"analytics","date":"2026-06-01"}"#.to_string()));
        self.members =
            jobs.iter().map(|(j, s)| QueuedMember { job: j.id.clone(), member: j.member.clone(), score: *s }).collect();
        self.run.phase(PhasePlan::Backlog { jobs: [payments, 1, 1] });
        let ids = self.queue(jobs, Phase::Ties, |_| true).await?;
        self.spawn(1, false)?;
        Ok(self.run.wait_done(&ids).await)
    }

    async fn crash(&mut self, n: u32) -> Result<bool, Error> {
        let jobs: Vec<(Job, f64)> =
            (0..n).map(|_| (self.job(Priority::Critical, Phase::Backlog, true), 100.0)).collect();
        self.run.phase(PhasePlan::Backlog { jobs: [n, 0, 0] });
        self.queue(jobs, Phase::Backlog, |_| true).await?;
        self.spawn(1, true)?;
        let first = self.workers[0].actor();
        if !self
            .run
            .wait_for("the planned crash", |ev| {
                ev.actor == first && matches!(ev.kind, EventKind::Crashed { planned: true, .. })
            })
            .await
        {
            return Ok(false);
        }
        if !self.run.pause().await {
            return Ok(false);
        }
        self.run.phase(PhasePlan::Takeover { by: Actor::Consumer(2).to_string() });
        self.spawn(2, false)?;
        self.until_nothing_left().await
    }

    /// Until nothing is left to take (queue and processing set empty, no event for 100 ms).
    async fn until_nothing_left(&mut self) -> Result<bool, Error> {
        loop {
            let quiet = match self.run.next_event_until(tokio::time::Instant::now() + Duration::from_millis(100)).await
            {
                Some(ev) => ev.is_none(),
                None => return Ok(false),
            };
            if quiet && self.left().await? == 0 {
                return Ok(true);
            }
        }
    }

    async fn left(&mut self) -> Result<u32, Error> {
        let (q, p): (u32, u32) = redis::pipe()
            .cmd("ZCARD")
            .arg(&self.keys.queue)
            .cmd("ZCARD")
            .arg(&self.keys.processing)
            .query_async(&mut self.conn)
            .await
            .context("ZCARD")?;
        Ok(q + p)
    }

    async fn arrivals(&mut self, idle_ms: f64, count: u32, max_delay_ms: f64) -> Result<bool, Error> {
        self.spawn(1, false)?;
        if !self.wait_idle().await? || !self.run.pause().await {
            return Ok(false);
        }
        self.run.phase(PhasePlan::Idle { ms: idle_ms });
        let before = commands(&mut self.conn).await?;
        let started = tokio::time::Instant::now();
        if !self.run.pause_for(self.ctx.scale.duration(idle_ms)).await {
            return Ok(false);
        }
        let commands = commands(&mut self.conn).await? - before;
        self.idle = Some(IdleCount { ms: started.elapsed().as_secs_f64() * 1000.0, commands });
        let mut rng = self.ctx.rng();
        for _ in 0..count {
            let gap_ms = crate::labs::priority::job_run::PHASE_GAP_MS as f64 / self.ctx.scale.0;
            let after_ms = (rng.random::<f64>() * max_delay_ms).round().max(gap_ms);
            if !self.run.pause_for(self.ctx.scale.duration(after_ms)).await {
                return Ok(false);
            }
            let job = self.job(Priority::Critical, Phase::Probe, true);
            self.run.phase(PhasePlan::Probe { blocked_in: None, after_ms: Some(after_ms) });
            let ids = self.queue(vec![(job, 100.0)], Phase::Probe, |_| true).await?;
            if !self.run.wait_done(&ids).await {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn flood(&mut self, critical: u32, low: u32, ms: f64, tau_ms: Option<f64>) -> Result<bool, Error> {
        self.run.phase(PhasePlan::Flood { critical, low, ms, tau_ms });
        let mut jobs = Vec::new();
        for i in 0..critical {
            let j = self.job(Priority::Critical, Phase::Flood, i == 0);
            jobs.push((j, self.score(Priority::Critical, tau_ms)));
        }
        for _ in 0..low {
            let j = self.job(Priority::Low, Phase::Flood, true);
            jobs.push((j, self.score(Priority::Low, tau_ms)));
        }
        let mut ids = self.queue(jobs, Phase::Flood, |_| true).await?;
        self.spawn(1, false)?;
        let until = tokio::time::Instant::now() + self.ctx.scale.duration(ms);
        loop {
            let taken_critical = match self.run.next_event_until(until).await {
                Some(Some(ev)) => matches!(
                    ev.kind.family::<PriorityEvent>(),
                    Some(PriorityEvent::PriorityJobTaken { priority: Priority::Critical, .. })
                ),
                Some(None) => break,
                None => return Ok(false),
            };
            if taken_critical {
                // One new critical job for each one taken: the flood never runs dry.
                let j = self.job(Priority::Critical, Phase::Flood, false);
                let score = self.score(Priority::Critical, tau_ms);
                ids.extend(self.queue(vec![(j, score)], Phase::Flood, |_| false).await?);
            }
        }
        Ok(self.run.wait_done(&ids).await)
    }
}

/// Every command the server has run, except INFO (the orchestrator's own way of asking).
async fn commands(conn: &mut MultiplexedConnection) -> Result<i64, Error> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.context("INFO commandstats")?;
    Ok(commands_in(&info))
}

/// Sum of `calls=` over `cmdstat_*` lines, INFO itself left out.
pub fn commands_in(info: &str) -> i64 {
    info.lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<i64>().ok())
        .sum()
}

impl LabProcedure for ZsetSpec {
    /// Not stepped, and nothing to step: no two of its processes race, or its question is one
    /// of time.
    fn explorable(&self) -> Result<(), String> {
        Err(match self.experiment {
            Experiment::Ties { .. } | Experiment::Crash { .. } => "one worker at a time (crash: C2 starts once C1 is dead) on a queue filled before it starts: no two processes race, so there is no order of theirs to explore; its question is what the server does (the order equal scores come out in, a popped job's fate when its worker is killed)",
            Experiment::Arrivals { .. } | Experiment::Flood { .. } => "its question is one of time (how long a job waits for a polling worker, whether low jobs starve while critical ones keep coming, aging by queueing time), which explore takes out: there waits and handler work take no time",
        }
        .into())
    }

    fn validate(&mut self) -> Result<(), String> {
        if self.cost_ms.array().iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Err("setup.cost_ms: use durations ≥ 0 in ms".into());
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        match (&self.pop, &self.experiment) {
            (PopSpec::PollSleep { sleep_ms }, _) | (PopSpec::Reliable { sleep_ms, .. }, _) if !positive(*sleep_ms) => {
                return Err("setup.pop.sleep_ms: use a duration > 0 in ms".into())
            }
            (PopSpec::Reliable { lease_ms, .. }, _) if !positive(*lease_ms) => {
                return Err("setup.pop.lease_ms: use a duration > 0 in ms".into())
            }
            (_, Experiment::Ties { payments: 0 }) | (_, Experiment::Crash { jobs: 0 }) => {
                return Err("setup.experiment: queue at least one job".into())
            }
            (_, Experiment::Flood { tau_ms: Some(t), .. }) if !positive(*t) => {
                return Err("setup.experiment.tau_ms: use a duration > 0 in ms".into())
            }
            _ => {}
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<ZsetObserved>, Error> {
        let keys = ZsetKeys::new(&ctx.key_prefix());
        let producer = crate::connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
        let run = JobRun::new(tokio::time::Instant::now() + self.bound(ctx.scale));
        let shared: &RunContext<'_> = ctx;
        let t0_ns = crate::clock::now_ns();
        let mut d = ZDriver {
            ctx: shared,
            spec: self,
            run,
            conn: producer,
            keys: keys.clone(),
            t0_ns,
            next_id: [0; 3],
            workers: Vec::new(),
            members: Vec::new(),
            idle: None,
        };
        let finished = match &self.experiment {
            Experiment::Ties { payments } => d.ties(*payments).await,
            Experiment::Crash { jobs } => d.crash(*jobs).await,
            Experiment::Arrivals { idle_ms, count, max_delay_ms } => d.arrivals(*idle_ms, *count, *max_delay_ms).await,
            Experiment::Flood { critical, low, ms, tau_ms } => d.flood(*critical, *low, *ms, *tau_ms).await,
        };
        for w in std::mem::take(&mut d.workers) {
            w.stop().await;
        }
        let left = d.left().await;
        let ZDriver { run, mut conn, members, idle, .. } = d;
        // A worker that died is the reason the run stopped; it is not a time-out.
        let died = run.stopped() == Some(crate::labs::priority::job_run::Stopped::Died);
        let raw = run.finish();
        let (finished, left) = (finished?, left?);
        let done: u32 = redis::cmd("SCARD").arg(&keys.done).query_async(&mut conn).await.context("SCARD")?;
        ctx.delete_run_keys().await?;
        let queued = raw
            .iter()
            .filter(|e| matches!(e.kind.family::<PriorityEvent>(), Some(PriorityEvent::JobQueued { .. })))
            .count() as u32;
        let observed = ZsetObserved { scale: ctx.scale.0, queued, done, left, members, idle };
        Ok(RunOutcome { t0_ns, raw, timed_out: !finished && !died, observed })
    }
}

impl Judge for ZsetSpec {
    type Observed = ZsetObserved;
    type Facts = ZsetFacts;

    fn judge(&self, run: &RunView<'_, ZsetObserved>) -> RunVerdict {
        let m = measures(run);
        health(run.events, run.timed_out).and(zset::judge(&self.claims, &m, run.observed.scale))
    }

    /// Jobs lost (how many a flood queues depends on the worker's pace: not shown).
    fn final_state(&self, observed: &ZsetObserved) -> Vec<FinalItem> {
        let lost = observed.lost();
        let value = format!("{lost}-lost");
        vec![FinalItem {
            order: None,
            subject: "jobs".into(),
            value,
            should_be: (lost != 0).then(|| "0-lost".to_string()),
        }]
    }

    fn facts(&self, run: &RunView<'_, ZsetObserved>) -> ZsetFacts {
        measure_facts(&measures(run))
    }
}

impl Present for ZsetSpec {
    fn describe(&self, lang: Lang) -> String {
        let pop = match &self.pop {
            PopSpec::PollSleep { sleep_ms } => {
                crate::tr!(lang, "ZPOPMAX, sleep {sleep_ms} ms when empty", "ZPOPMAX, rỗng thì sleep {sleep_ms} ms")
            }
            PopSpec::Bzpopmax => "BZPOPMAX jobs 0".to_string(),
            PopSpec::Reliable { lease_ms, .. } => crate::tr!(
                lang,
                "Lua pop into a processing set with a {lease_ms} ms lease; expired leases go back",
                "Lua pop vào tập processing với lease {lease_ms} ms; lease hết hạn thì trả lại"
            ),
        };
        let [c, n, l] = self.cost_ms.array();
        let work = crate::tr!(
            lang,
            "work {c}/{n}/{l} ms per critical/normal/low job",
            "xử lý {c}/{n}/{l} ms mỗi job critical/normal/low"
        );
        let experiment = match &self.experiment {
            Experiment::Ties { payments } => crate::tr!(
                lang,
                "the seed's payloads: {payments} payments (score 100) queued A1…A{payments}, an email (50), an analytics job (10)",
                "payload của bài: {payments} payment (score 100) xếp hàng A1…A{payments}, một email (50), một analytics (10)"
            ),
            Experiment::Crash { jobs } => crate::tr!(
                lang,
                "{jobs} critical jobs; C1 SIGKILLed right after its first pop, then C2 takes over",
                "{jobs} job critical; C1 bị SIGKILL ngay sau lần pop đầu, rồi C2 tiếp quản"
            ),
            Experiment::Arrivals { idle_ms, count, max_delay_ms } => crate::tr!(
                lang,
                "idle {idle_ms} ms, then {count} jobs at random moments (0–{max_delay_ms} ms apart)",
                "rảnh {idle_ms} ms, rồi {count} job đến lúc ngẫu nhiên (cách nhau 0–{max_delay_ms} ms)"
            ),
            Experiment::Flood { critical, low, ms, tau_ms } => {
                let aging = match tau_ms {
                    Some(t) => crate::tr!(lang, "aging: score = priority − t_queued / {t} ms", "aging: score = mức ưu tiên − t_xếp_hàng / {t} ms"),
                    None => pick(lang, "no aging", "không aging").to_string(),
                };
                crate::tr!(
                    lang,
                    "flood: {critical} critical kept waiting for {ms} ms, {low} low at its start; {aging}",
                    "dồn dập: luôn có {critical} critical chờ trong {ms} ms, {low} low lúc bắt đầu; {aging}"
                )
            }
        };
        format!("1 worker, {pop}; {work}; {experiment}")
    }

    fn approach(&self) -> String {
        format!("{} / {}", self.pop.name(), self.experiment.name())
    }

    fn wrong_means(&self, lang: Lang) -> String {
        claims_phrase(&self.claims, lang)
    }

    fn notes(&self, run: &RunView<'_, ZsetObserved>, lang: Lang) -> RunNotes {
        let heading = Line::text(format!("C1: {}", self.pop.command(TimeScale(run.observed.scale))));
        RunNotes { heading: Some(heading), after: measure_lines(&measures(run), lang) }
    }

    fn table_row(&self, run: &RunView<'_, ZsetObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        Some(table_cells(&measures(run), lang))
    }

    /// What the seed says about this experiment, and what the runs measured.
    fn per_run_lines(&self, runs: &[RunView<'_, ZsetObserved>], lang: Lang) -> Vec<Line> {
        let all: Vec<ZsetMeasures> = runs.iter().map(measures).collect();
        seed_lines::lines(self, &all, lang)
    }

    /// A flood: each job's wait against when it was taken (run 1).
    fn charts(&self, runs: &[RunView<'_, ZsetObserved>]) -> Vec<Chart> {
        match (&self.experiment, runs.first()) {
            (Experiment::Flood { tau_ms, .. }, Some(first)) => {
                vec![flood_chart(first.events, *tau_ms, first.observed.scale)]
            }
            _ => Vec::new(),
        }
    }

    /// The arrival variants side by side: how long a job waited, and what the idle worker
    /// cost the server.
    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        let arrivals: Vec<&VariantRuns<'_, Self>> =
            variants.iter().filter(|v| matches!(v.spec.experiment, Experiment::Arrivals { .. })).collect();
        if arrivals.is_empty() {
            return Vec::new();
        }
        vec![arrivals_chart(&arrivals, ArrivalFigure::Wait), arrivals_chart(&arrivals, ArrivalFigure::IdleCommands)]
    }
}

/// Each job's wait (ms) against when it was taken, low and critical apart; with aging, a
/// line where low outranks new critical jobs: (100 − 10) × τ.
pub fn flood_chart(events: &[crate::timeline::Event], tau_ms: Option<f64>, scale: f64) -> Chart {
    let tracks = crate::labs::priority::served::tracks(events);
    let series = [Priority::Critical, Priority::Low]
        .iter()
        .map(|p| {
            let mut points: Vec<(f64, f64)> = tracks
                .iter()
                .filter(|t| t.priority == *p)
                .filter_map(|t| Some((t.taken_us? as f64 / 1000.0, t.wait_ms()?)))
                .collect();
            // Keep a slide readable: every k-th point of a long series.
            let k = points.len().div_ceil(200).max(1);
            points = points.into_iter().step_by(k).collect();
            Series { name: Words::same(p.name()), style: Style::Points, points, err: None, unmeasured: Vec::new() }
        })
        .collect();
    let marks = tau_ms
        .map(|tau| {
            let at = (base_score(Priority::Critical) - base_score(Priority::Low)) * tau * scale;
            vec![Mark { label: Words::new("aging bound 90 τ", "giới hạn aging 90 τ"), axis: MarkAxis::Y, at }]
        })
        .unwrap_or_default();
    Chart {
        flags: Vec::new(),
        id: "flood-waits".into(),
        title: Words::new(
            "How long each job waited, by when it was taken",
            "Mỗi job đã chờ bao lâu, theo lúc được lấy",
        ),
        x: Axis {
            label: Words::new("taken at (since t=0)", "lúc được lấy (từ t=0)"),
            unit: "ms".into(),
            scale: Scale::Linear,
        },
        y: Axis { label: Words::new("wait", "thời gian chờ"), unit: "ms".into(), scale: Scale::Linear },
        series,
        marks,
        note: Some(Words::new("run 1", "lần 1")),
    }
}

#[derive(Clone, Copy)]
enum ArrivalFigure {
    Wait,
    IdleCommands,
}

/// Bars per arrival variant (median of its runs, whiskers min–max): the arrivals' median
/// wait, or the idle worker's commands per second.
fn arrivals_chart(variants: &[&VariantRuns<'_, ZsetSpec>], figure: ArrivalFigure) -> Chart {
    let mut points = Vec::new();
    let mut err = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let mut xs: Vec<f64> = v
            .runs
            .iter()
            .filter_map(|r| {
                let m = measures(r);
                match figure {
                    ArrivalFigure::Wait => m.arrivals.map(|w| w.p50_ms),
                    ArrivalFigure::IdleCommands => m.idle.map(|i| i.per_s()),
                }
            })
            .collect();
        xs.sort_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (xs.first(), xs.last()) {
            points.push((i as f64, xs[xs.len() / 2]));
            err.push((*lo, *hi));
        }
    }
    let (id, title, y, unit) = match figure {
        ArrivalFigure::Wait => (
            "arrival-wait",
            Words::new(
                "How long an arriving job waited for the worker (median)",
                "Job mới đến chờ worker bao lâu (trung vị)",
            ),
            Words::new("wait", "thời gian chờ"),
            "ms",
        ),
        ArrivalFigure::IdleCommands => (
            "idle-commands",
            Words::new(
                "Commands the idle worker sent (INFO commandstats)",
                "Số lệnh worker gửi khi rảnh (INFO commandstats)",
            ),
            Words::new("commands per second", "lệnh mỗi giây"),
            "",
        ),
    };
    let name = match figure {
        ArrivalFigure::Wait => Words::new("median wait", "thời gian chờ trung vị"),
        ArrivalFigure::IdleCommands => Words::new("commands per second", "lệnh mỗi giây"),
    };
    Chart {
        flags: Vec::new(),
        id: id.into(),
        title,
        x: Axis {
            label: Words::new("how the worker waits", "cách worker chờ"),
            unit: String::new(),
            scale: Scale::Categories(variants.iter().map(|v| Words::same(v.id)).collect()),
        },
        y: Axis { label: y, unit: unit.into(), scale: Scale::Linear },
        series: vec![Series { name, style: Style::Bars, points, err: Some(err), unmeasured: Vec::new() }],
        marks: Vec::new(),
        note: Some(Words::new("median of the runs, whiskers min–max", "trung vị các lần chạy, râu min–max")),
    }
}

fn measures(run: &RunView<'_, ZsetObserved>) -> ZsetMeasures {
    let o = run.observed;
    zset::measure(run.events, &o.members, o.lost(), o.idle)
}

fn claims_phrase(c: &ZsetClaims, lang: Lang) -> String {
    let mut parts = Vec::new();
    if c.fifo_ties {
        parts.push(
            pick(lang, "equal scores not in the order queued", "cùng score mà không theo thứ tự xếp hàng").to_string(),
        );
    }
    if c.no_loss {
        parts.push(pick(lang, "a job lost", "mất job").to_string());
    }
    if let Some(ms) = c.max_wait_ms {
        parts.push(crate::tr!(lang, "a job waits > {ms} ms", "job chờ > {ms} ms"));
    }
    if let Some(n) = c.idle_commands_per_s {
        parts.push(crate::tr!(lang, "> {n} commands/s while idle", "> {n} lệnh/s khi rảnh"));
    }
    if let Some(ms) = c.low_wait_ms {
        parts.push(crate::tr!(lang, "low waits > {ms} ms", "low chờ > {ms} ms"));
    }
    let what = if parts.is_empty() {
        pick(lang, "nothing checked", "không kiểm tra gì").to_string()
    } else {
        parts.join(pick(lang, " or ", " hoặc "))
    };
    crate::tr!(lang, "wrong: {what}", "SAI: {what}")
}

fn ms(x: f64) -> i64 {
    x.round() as i64
}

fn measure_facts(m: &ZsetMeasures) -> ZsetFacts {
    ZsetFacts {
        ties_fifo: m.ties.as_ref().map(|t| t.is_fifo()),
        ties_reverse_byte_order: m.ties.as_ref().map(|t| t.is_reverse_bytes()),
        lost: m.lost,
        taken_twice: m.taken_twice as i64,
        arrival_wait_p50_ms: m.arrivals.as_ref().map(|w| ms(w.p50_ms)),
        arrival_wait_max_ms: m.arrivals.as_ref().map(|w| ms(w.max_ms)),
        idle_commands_per_s: m.idle.as_ref().map(|i| ms(i.per_s())),
        flood_low_max_wait_ms: m.flood_low.as_ref().map(|w| ms(w.max_ms)),
    }
}

/// What a sorted-set run measured; a phase the run did not have leaves None.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ZsetFacts {
    /// Equal scores were taken in the order they were queued.
    pub ties_fifo: Option<bool>,
    /// Equal scores were taken by member bytes, greatest first.
    pub ties_reverse_byte_order: Option<bool>,
    /// Jobs queued and neither done nor left on the server.
    pub lost: i64,
    /// Jobs taken by two workers (printed only when some were).
    pub taken_twice: i64,
    pub arrival_wait_p50_ms: Option<i64>,
    pub arrival_wait_max_ms: Option<i64>,
    pub idle_commands_per_s: Option<i64>,
    pub flood_low_max_wait_ms: Option<i64>,
}

impl Facts for ZsetFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut f = Vec::new();
        f.extend(self.ties_fifo.map(|b| FactRow::stable("ties_fifo", i64::from(b))));
        f.extend(self.ties_reverse_byte_order.map(|b| FactRow::stable("ties_reverse_byte_order", i64::from(b))));
        f.push(FactRow::stable("lost", self.lost));
        if self.taken_twice > 0 {
            f.push(FactRow::stable("taken_twice", self.taken_twice));
        }
        let measured = [
            ("arrival_wait_p50_ms", self.arrival_wait_p50_ms),
            ("arrival_wait_max_ms", self.arrival_wait_max_ms),
            ("idle_commands_per_s", self.idle_commands_per_s),
            ("flood_low_max_wait_ms", self.flood_low_max_wait_ms),
        ];
        f.extend(measured.into_iter().filter_map(|(name, n)| n.map(|n| FactRow::measured(name, n))));
        f
    }
}

fn measure_lines(m: &ZsetMeasures, lang: Lang) -> Vec<Line> {
    let mut out = Vec::new();
    if let Some(t) = &m.ties {
        out.push(Line::text(format!("{}: {}", pick(lang, "taken in order", "thứ tự lấy"), head(&t.taken, lang))));
        out.push(Line::text(format!(
            "{}: {}",
            pick(lang, "queued in order (FIFO)", "thứ tự xếp hàng (FIFO)"),
            head(&t.fifo, lang)
        )));
        let rule = match (t.is_reverse_bytes(), lang) {
            (true, Lang::En) => "= highest score first, equal scores by member bytes, greatest first (ZPOPMAX's rule)",
            (true, Lang::Vi) => {
                "= score cao trước, cùng score thì theo byte của member, lớn trước (quy tắc của ZPOPMAX)"
            }
            (false, Lang::En) => "≠ the byte order of the members",
            (false, Lang::Vi) => "≠ thứ tự byte của member",
        };
        out.push(Line::text(format!("{}: {rule}", pick(lang, "taken order", "thứ tự lấy"))));
    }
    let lost =
        pick(lang, "jobs lost (queued − done − left on the server)", "job bị mất (đã xếp − đã xong − còn trên server)");
    out.push(Line::text(format!("{lost}: {}", m.lost)));
    if let Some(w) = &m.arrivals {
        let label = pick(lang, "arrivals waited p50 / max", "job đến chờ p50 / max");
        out.push(
            Line::text(format!("{label} ")).and(Piece::Ms(ms(w.p50_ms))).and_text(" / ").and(Piece::Ms(ms(w.max_ms))),
        );
    }
    if let Some(i) = &m.idle {
        let label = pick(
            lang,
            "commands of the idle worker (INFO commandstats)",
            "lệnh của worker lúc rảnh (INFO commandstats)",
        );
        let per_s = pick(lang, "per second", "mỗi giây");
        out.push(Line::text(format!("{label}: ")).and(Piece::Count(ms(i.per_s()))).and_text(format!(" {per_s}")));
    }
    if let Some(w) = &m.flood_low {
        let label = pick(lang, "flood, low waited up to", "dồn dập, low chờ tới");
        out.push(Line::text(format!("{label} ")).and(Piece::Ms(ms(w.max_ms))));
    }
    if let Some(w) = &m.flood_critical {
        let label = pick(lang, "flood, critical waited p50 / max", "dồn dập, critical chờ p50 / max");
        out.push(
            Line::text(format!("{label} ")).and(Piece::Ms(ms(w.p50_ms))).and_text(" / ").and(Piece::Ms(ms(w.max_ms))),
        );
    }
    out
}

/// The first dozen of a list, then how many more.
fn head(items: &[String], lang: Lang) -> String {
    const SHOWN: usize = 12;
    if items.len() <= SHOWN {
        return items.join(", ");
    }
    let more = items.len() - SHOWN;
    format!("{}, … {}", items[..SHOWN].join(", "), crate::tr!(lang, "({more} more)", "({more} nữa)"))
}

/// The same columns for every variant ("-" where the experiment does not measure it), so
/// the side-by-side table lines up.
fn table_cells(m: &ZsetMeasures, lang: Lang) -> Vec<(String, Line)> {
    let none = || Line::text("-");
    let msl = |x: f64| Line(vec![Piece::Ms(ms(x))]);
    let fifo = m.ties.as_ref().map_or_else(none, |t| Line::text(if t.is_fifo() { "yes" } else { "no" }));
    vec![
        (pick(lang, "lost", "mất").to_string(), Line::text(m.lost.to_string())),
        ("FIFO".to_string(), fifo),
        (pick(lang, "wait p50", "chờ p50").to_string(), m.arrivals.as_ref().map_or_else(none, |w| msl(w.p50_ms))),
        (pick(lang, "wait max", "chờ max").to_string(), m.arrivals.as_ref().map_or_else(none, |w| msl(w.max_ms))),
        (
            pick(lang, "idle cmd/s", "lệnh/s rảnh").to_string(),
            m.idle.map_or_else(none, |i| Line(vec![Piece::Count(ms(i.per_s()))])),
        ),
        (pick(lang, "low max", "low tối đa").to_string(), m.flood_low.as_ref().map_or_else(none, |w| msl(w.max_ms))),
    ]
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::zset::*;
    use crate::timeline::Event;

    fn ev(t_ms: f64, kind: EventKind) -> Event {
        Event { t_us: (t_ms * 1000.0) as i64, actor: Actor::Consumer(1), kind }
    }

    fn job(t_queued: f64, t_taken: f64, id: &str, priority: Priority, phase: Phase) -> [Event; 2] {
        [
            ev(
                t_queued,
                PriorityEvent::JobQueued { job: id.into(), priority, phase, traced: true, score: None }.event(),
            ),
            ev(
                t_taken,
                PriorityEvent::PriorityJobTaken { job: id.into(), priority, phase, traced: true, waited_ms: None }
                    .event(),
            ),
        ]
    }

    #[test]
    fn the_flood_chart_marks_the_aging_bound() {
        let mut events = Vec::new();
        events.extend(job(0.0, 15.0, "c-0001", Priority::Critical, Phase::Flood));
        events.extend(job(0.0, 1246.0, "l-0001", Priority::Low, Phase::Flood));
        let chart = flood_chart(&events, Some(10.0), 1.0);
        assert_eq!(chart.validate(), Ok(()));
        assert_eq!(chart.series[1].points, [(1246.0, 1246.0)]);
        assert_eq!(chart.marks[0].at, 900.0);
        assert!(flood_chart(&events, None, 1.0).marks.is_empty());
    }

    #[test]
    fn arrival_variants_are_compared_on_wait_and_idle_commands() {
        let spec: ZsetSpec = toml::from_str(
            "pop = { kind = \"bzpopmax\" }\ncost_ms = {}\nexperiment = { kind = \"arrivals\", idle_ms = 1000, count = 1, max_delay_ms = 10 }",
        )
        .unwrap();
        let events: Vec<Event> = job(0.0, 3.0, "c-0001", Priority::Critical, Phase::Probe).into();
        let observed = ZsetObserved {
            scale: 1.0,
            queued: 1,
            done: 1,
            left: 0,
            members: Vec::new(),
            idle: Some(IdleCount { ms: 1000.0, commands: 0 }),
        };
        let title = Words::same("t");
        let v = VariantRuns {
            id: "bzpopmax",
            title: &title,
            spec: &spec,
            runs: vec![RunView { run: 1, events: &events, timed_out: false, observed: &observed }],
        };
        let charts = ZsetSpec::compare(&[v]);
        assert_eq!(charts.len(), 2);
        assert!(charts.iter().all(|c| c.validate().is_ok()));
        assert_eq!(charts[0].series[0].points, [(0.0, 3.0)]);
        assert_eq!(charts[1].series[0].points, [(0.0, 0.0)]);
    }

    #[test]
    fn commands_are_summed_from_commandstats_without_info() {
        let info = "# Commandstats\r\ncmdstat_zpopmax:calls=12,usec=40,usec_per_call=3.33,rejected_calls=0,failed_calls=0\r\ncmdstat_info:calls=7,usec=1\r\ncmdstat_client|list:calls=3,usec=9\r\n";
        assert_eq!(crate::labs::priority::zset::commands_in(info), 15);
    }
}
