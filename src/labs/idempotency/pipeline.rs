//! The seed's production queue end to end (seed 000, `production_worker`): three priority
//! streams polled by several worker processes, an idempotent handler, retries by `XAUTOCLAIM`
//! and a dead-letter queue, under a workload of many jobs with retryable and poison failures
//! and planned SIGKILLs. A total-queue check counts every job from the side-effect sink's
//! ledger and the DLQ: done exactly once, or dead-lettered with its reason; nothing else.

mod plan;
mod publish;
mod stats;

pub use plan::{Burst, PlannedJob, Poison, Workload};

use crate::chart::Chart;
use crate::checker::health::health;
use crate::checker::total_queue::{self, DeadLetter, ExpectedFate, JobExpectation, TotalQueue};
use crate::checker::{RunVerdict, Verdict};
use crate::connect;
use crate::error::{Context, Error};
use crate::handler::job::events::JobEvent;
use crate::handler::job::pipeline::PipelineHandler;
use crate::handler::Described;
use crate::labs::consumer_group::drain;
use crate::labs::idempotency::pipeline_worker::PipelineWorkerConfig;
use crate::labs::idempotency::worker_pool::{Pool, WorkerTemplate};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Present, RunContext, RunNotes, RunOutcome, RunView,
    VariantRuns,
};
use crate::lang::{pick, Lang};
use crate::roles::claimer::ReaperSpec;
use crate::roles::priority_loop::LoopSpec;
use crate::roles::RoleConfig;
use crate::side_effect::{SideEffectSink, SinkConfig};
use crate::streams::{self, GROUP};
use crate::timeline::{Actor, EventKind, RawEvent};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// `kind = "pipeline"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    pub handler: PipelineHandler,
    pub polling: LoopSpec,
    /// Reader processes at a time.
    pub workers: u32,
    /// The retry: jobs pending this long are taken back by the claimer.
    pub reaper: ReaperSpec,
    pub workload: Workload,
    /// The dispatch's own work per job (ms, before `--time-scale`).
    pub work_ms: f64,
    /// The partner's time per request (ms, before `--time-scale`).
    pub partner_latency_ms: f64,
    /// After the last arrival, the run ends once no job has finished for this long (ms,
    /// before `--time-scale`): what is left then is stuck for good.
    pub settle_ms: f64,
}

/// What a pipeline run left: the planned jobs, applied effects per job from the sink's
/// ledger, the dead-letter queue, and entries still pending.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineObserved {
    pub jobs: Vec<PlannedJob>,
    /// (job, effect, times applied) for every effect the ledger holds.
    pub applied: Vec<(String, String, u32)>,
    pub dlq: Vec<DeadLetter>,
    pub pending_after_run: i64,
    /// Worker processes started in place of ones that died.
    pub restarts: u32,
}

impl PipelineSpec {
    fn expected(jobs: &[PlannedJob]) -> Vec<JobExpectation> {
        jobs.iter()
            .map(|j| JobExpectation {
                job: j.job.clone(),
                effects: vec![j.effect().to_string()],
                fate: match j.poison {
                    Some(Poison::Unparseable) => ExpectedFate::DeadLetter { reason: "unparseable".into() },
                    Some(Poison::Rejected) => ExpectedFate::DeadLetter { reason: "rejected".into() },
                    None => ExpectedFate::Done,
                },
            })
            .collect()
    }

    pub fn tally(observed: &PipelineObserved) -> TotalQueue {
        let applied = observed.applied.iter().map(|(j, e, n)| ((j.clone(), e.clone()), *n)).collect();
        total_queue::tally(&Self::expected(&observed.jobs), &applied, &observed.dlq)
    }

    fn stream_names(prefix: &str) -> Vec<String> {
        plan::PRIORITIES.iter().map(|p| format!("{prefix}jobs:{p}")).collect()
    }

    fn template(&self, ctx: &RunContext<'_>, jobs: &[PlannedJob], sink: SinkConfig) -> PipelineTemplate {
        let prefix = ctx.key_prefix();
        PipelineTemplate {
            reaper: self.reaper.clone(),
            cfg: PipelineWorkerConfig {
                env: ctx.role_env(0),
                actor: Actor::Consumer(0),
                streams: Self::stream_names(&prefix),
                group: GROUP.to_string(),
                dlq: format!("{prefix}jobs:dlq"),
                client_name: String::new(),
                polling: self.polling.clone(),
                handler: self.handler.clone(),
                work_ms: self.work_ms,
                sink,
                faults: plan::crashes(jobs),
                claim: None,
            },
        }
    }

    /// The partner's faults and latency.
    async fn prepare(&self, ctx: &RunContext<'_>, jobs: &[PlannedJob]) -> Result<(SinkConfig, SideEffectSink), Error> {
        let sink_cfg = SinkConfig::prepare(&ctx.services.pg_config).await?.for_run(ctx.key_prefix());
        let ledger = SideEffectSink::connect(&sink_cfg).await?;
        ledger.reset().await?;
        for fault in jobs.iter().filter_map(PlannedJob::partner_fault) {
            ledger.add_fault(&fault, ctx.scale).await?;
        }
        for effect in plan::EFFECTS {
            ledger.set_latency(effect, ctx.scale.duration(self.partner_latency_ms)).await?;
        }
        Ok((sink_cfg, ledger))
    }

    fn is_seed(&self) -> bool {
        self.handler.dies_on_unparseable()
    }
}

/// A pipeline worker's config, stamped per process by the pool.
struct PipelineTemplate {
    cfg: PipelineWorkerConfig,
    reaper: ReaperSpec,
}

impl WorkerTemplate for PipelineTemplate {
    fn for_process(&self, ctx: &RunContext<'_>, actor: Actor, index: u32) -> (RoleConfig, String) {
        let mut cfg = self.cfg.clone();
        cfg.env = ctx.role_env(index);
        cfg.actor = actor;
        cfg.client_name = ctx.client_name(actor);
        cfg.claim = (actor == Actor::Reaper).then(|| self.reaper.clone());
        let name = cfg.client_name.clone();
        (RoleConfig::of(&cfg), name)
    }
}

/// What the orchestrator follows while a run goes on: jobs finished
/// (acknowledged or dead-lettered), workers to replace, the last time a job finished.
struct Progress {
    finished: HashSet<String>,
    to_replace: Vec<Actor>,
    last_finish: Instant,
}

impl Progress {
    fn observe(&mut self, ev: &RawEvent) {
        match (&ev.kind, ev.kind.family::<JobEvent>().as_ref()) {
            (_, Some(JobEvent::JobAcked { job, .. })) | (_, Some(JobEvent::DeadLettered { job, .. }))
                if self.finished.insert(job.clone()) =>
            {
                self.last_finish = Instant::now();
            }
            (EventKind::Crashed { .. }, _) => self.to_replace.push(ev.actor),
            _ => {}
        }
    }
}

/// What a pipeline run measured; a latency no job of its priority had is -1.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PipelineFacts {
    pub jobs: i64,
    pub exactly_once: i64,
    pub dead_lettered: i64,
    pub lost: i64,
    pub duplicated: i64,
    pub wrongly_dead: i64,
    pub pending_after_run: i64,
    /// The counts above differ from run to run: the seed's handler kills every process that
    /// takes an unparseable job, the claimer too, and which other jobs it held then, and so
    /// how many are stranded, is the scheduler's.
    pub counts_vary: bool,
    pub restarts: i64,
    pub jobs_per_s: i64,
    pub critical_p50_ms: i64,
    pub critical_p99_ms: i64,
    pub normal_p50_ms: i64,
    pub normal_p99_ms: i64,
    pub low_p50_ms: i64,
    pub low_p99_ms: i64,
}

impl Facts for PipelineFacts {
    fn rows(&self) -> Vec<FactRow> {
        let count = |name, n| FactRow::new(name, n, !self.counts_vary);
        vec![
            FactRow::stable("jobs", self.jobs),
            count("exactly_once", self.exactly_once),
            count("dead_lettered", self.dead_lettered),
            count("lost", self.lost),
            count("duplicated", self.duplicated),
            count("wrongly_dead", self.wrongly_dead),
            count("pending_after_run", self.pending_after_run),
            FactRow::measured("restarts", self.restarts),
            FactRow::measured("jobs_per_s", self.jobs_per_s),
            FactRow::measured("critical_p50_ms", self.critical_p50_ms),
            FactRow::measured("critical_p99_ms", self.critical_p99_ms),
            FactRow::measured("normal_p50_ms", self.normal_p50_ms),
            FactRow::measured("normal_p99_ms", self.normal_p99_ms),
            FactRow::measured("low_p50_ms", self.low_p50_ms),
            FactRow::measured("low_p99_ms", self.low_p99_ms),
        ]
    }
}

impl LabProcedure for PipelineSpec {
    fn validate(&mut self) -> Result<(), String> {
        crate::labs::order_stream::check_consumers(self.workers).map_err(|e| e.replace("consumers", "workers"))?;
        self.workload.validate()?;
        if self.reaper.min_idle_ms <= 0.0 || self.settle_ms <= self.reaper.min_idle_ms {
            return Err("setup.reaper.min_idle_ms must be > 0 and setup.settle_ms larger than it".into());
        }
        if let Some(lease_ms) = self.handler.lease_ms() {
            if lease_ms >= self.reaper.min_idle_ms {
                return Err("setup.handler.lease_ms must be shorter than setup.reaper.min_idle_ms".into());
            }
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<PipelineObserved>, Error> {
        let jobs = plan::generate(&self.workload, ctx.seed);
        let (sink_cfg, ledger) = self.prepare(ctx, &jobs).await?;
        let names = Self::stream_names(&ctx.key_prefix());
        for s in &names {
            streams::create_group(&mut ctx.redis, s, GROUP).await?;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let template = self.template(ctx, &jobs, sink_cfg);
        let dlq_name = template.cfg.dlq.clone();
        let mut pool = Pool::start(ctx, template, self.workers, &tx).await?;
        pool.start_claimer(ctx, &tx).await?;
        let producer = connect::redis(&ctx.services.redis_url).await.context("producer connect")?;
        let last_at = jobs.last().map_or(0.0, |j| j.at_ms);
        let deadline = Instant::now() + ctx.scale.duration(last_at * 3.0 + 60_000.0);
        let settle = ctx.scale.duration(self.settle_ms);
        let t0_ns = crate::clock::now_ns();
        let publish = publish::publish(producer, names.clone(), jobs.clone(), ctx.scale, Arc::new(tx.clone()));
        tokio::pin!(publish);
        let mut p = Progress { finished: HashSet::new(), to_replace: Vec::new(), last_finish: Instant::now() };
        let (mut raw, mut published, mut restarts) = (Vec::new(), false, 0u32);
        let finished = loop {
            if published && (p.finished.len() == jobs.len() || p.last_finish.elapsed() >= settle) {
                break true;
            }
            let wake = if published { (p.last_finish + settle).min(deadline) } else { deadline };
            tokio::select! {
                r = &mut publish, if !published => { r?; published = true; p.last_finish = Instant::now(); }
                ev = rx.recv() => match ev {
                    Some(ev) => { p.observe(&ev); raw.push(ev); }
                    None => break false,
                },
                _ = tokio::time::sleep_until(wake) => if Instant::now() >= deadline { break false },
            }
            for dead in std::mem::take(&mut p.to_replace) {
                restarts += 1;
                pool.replace(ctx, dead, &tx)?;
            }
        };
        pool.stop().await;
        drop(tx);
        drain(rx, &mut raw);
        let mut pending_after_run = 0;
        for s in &names {
            pending_after_run += streams::pending_count(&mut ctx.redis, s, GROUP).await?;
        }
        let dlq = read_dlq(&mut ctx.redis, &dlq_name).await?;
        let applied = total_queue::effects_per_job(&ledger.records().await?)
            .into_iter()
            .map(|((job, effect), n)| (job, effect, n))
            .collect();
        ledger.reset().await?;
        ctx.delete_run_keys().await?;
        let observed = PipelineObserved { jobs, applied, dlq, pending_after_run, restarts };
        Ok(RunOutcome { t0_ns, raw, timed_out: !finished, observed })
    }
}

impl Judge for PipelineSpec {
    type Observed = PipelineObserved;
    type Facts = PipelineFacts;

    fn faults(&self, observed: &PipelineObserved) -> Vec<crate::fault::Fault> {
        plan::faults(&observed.jobs)
    }
    /// Wrong when a job is not done exactly once and not in the DLQ with its reason.
    fn judge(&self, run: &RunView<'_, PipelineObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out);
        let t = Self::tally(run.observed).verdict();
        if t.verdict == Verdict::Wrong {
            for r in t.reasons {
                v.add(Verdict::Wrong, r);
            }
        }
        v
    }

    fn final_state(&self, observed: &PipelineObserved) -> Vec<FinalItem> {
        let t = Self::tally(observed);
        let item = |subject: &str, n: usize| FinalItem {
            order: None,
            subject: subject.to_string(),
            value: n.to_string(),
            should_be: (n != 0).then(|| "0".to_string()),
        };
        vec![
            item("jobs lost", t.lost.len()),
            item("jobs duplicated", t.duplicated.len()),
            item("jobs dead for the wrong reason", t.wrongly_dead.len()),
            item("jobs done and dead", t.done_and_dead.len()),
        ]
    }

    fn facts(&self, run: &RunView<'_, PipelineObserved>) -> PipelineFacts {
        let t = Self::tally(run.observed);
        let l = stats::latencies(run.events);
        let ms = |p: usize, q: f64| l.quantile_us(p, q).map_or(-1, |us| (us as f64 / 1000.0).round() as i64);
        PipelineFacts {
            jobs: t.jobs as i64,
            exactly_once: t.exactly_once as i64,
            dead_lettered: t.dead_lettered as i64,
            lost: t.lost.len() as i64,
            duplicated: t.duplicated.len() as i64,
            wrongly_dead: t.wrongly_dead.len() as i64,
            pending_after_run: run.observed.pending_after_run,
            counts_vary: self.is_seed(),
            restarts: run.observed.restarts as i64,
            jobs_per_s: l.throughput(),
            critical_p50_ms: ms(0, 0.5),
            critical_p99_ms: ms(0, 0.99),
            normal_p50_ms: ms(1, 0.5),
            normal_p99_ms: ms(1, 0.99),
            low_p50_ms: ms(2, 0.5),
            low_p99_ms: ms(2, 0.99),
        }
    }
}

impl Present for PipelineSpec {
    fn describe(&self, lang: Lang) -> String {
        describe(self, lang)
    }

    fn approach(&self) -> String {
        self.handler.short()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(
            lang,
            "a job not done exactly once and not in the DLQ with its reason (lost, duplicated, or dead for the wrong reason)",
            "có job không xong đúng một lần và không nằm trong DLQ với đúng lý do (mất, lặp, hoặc vào DLQ sai lý do)",
        )
        .to_string()
    }

    fn notes(&self, run: &RunView<'_, PipelineObserved>, lang: Lang) -> RunNotes {
        let t = Self::tally(run.observed);
        let unparseable: Vec<&PlannedJob> =
            run.observed.jobs.iter().filter(|j| j.poison == Some(Poison::Unparseable)).collect();
        let in_dlq = unparseable.iter().filter(|j| run.observed.dlq.iter().any(|d| d.job == j.job)).count();
        let line = crate::tr!(
            lang,
            "unparseable payloads in the DLQ: {in_dlq} of {}; jobs duplicated: {}",
            "payload không parse được nằm trong DLQ: {in_dlq} / {}; job bị lặp: {}",
            unparseable.len(),
            t.duplicated.len()
        );
        RunNotes { heading: None, after: vec![Line::text(line)] }
    }

    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        let per: Vec<(&str, stats::Latencies)> =
            variants.iter().filter_map(|v| Some((v.id, stats::latencies(v.runs.first()?.events)))).collect();
        if per.is_empty() {
            return Vec::new();
        }
        vec![stats::latency_chart(&per)]
    }
}

/// The dead-letter stream: (job, reason) per entry.
async fn read_dlq(conn: &mut redis::aio::MultiplexedConnection, dlq: &str) -> Result<Vec<DeadLetter>, Error> {
    let reply: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg(dlq).arg("-").arg("+").query_async(conn).await.context("XRANGE dlq")?;
    Ok(reply.ids.iter().filter_map(|e| Some(DeadLetter { job: e.get("job")?, reason: e.get("reason")? })).collect())
}

fn describe(s: &PipelineSpec, lang: Lang) -> String {
    let w = &s.workload;
    let handler = s.handler.describe(lang);
    crate::tr!(
        lang,
        "{handler}; {} workers; retry: XAUTOCLAIM min-idle {} ms; {} jobs at {}/s (+{} low at once), {} unparseable, {} unknown type, {} refused, {} reply lost, {} SIGKILLs at each crash point",
        "{handler}; {} worker; retry: XAUTOCLAIM min-idle {} ms; {} job với {}/s (+{} low cùng lúc), {} không parse được, {} sai loại, {} bị từ chối, {} mất phản hồi, {} SIGKILL ở mỗi điểm crash",
        s.workers,
        s.reaper.min_idle_ms,
        w.jobs,
        w.rate_per_s,
        w.burst.as_ref().map_or(0, |b| b.low_jobs),
        w.unparseable,
        w.rejected,
        w.refused,
        w.reply_lost,
        w.crashes_per_point
    )
}
