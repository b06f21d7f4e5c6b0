//! The runner loops a lab's variants × runs and calls each variant's procedure with a fresh
//! [`RunContext`]; it knows no lab by name. It also says what every report's header says
//! about where and how the lab ran.

use crate::connect;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::labs::RunContext;
use crate::report::{snapshot, Environment, LabInfo, LabReport, VariantReport};
use crate::scenario::{Scenario, Variant};
use crate::service::{ServiceOptions, Services};
use crate::timeline::live::{self, OnEvent};
use crate::timing::{self, Span, Step};
use redis::aio::MultiplexedConnection;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Progress callback: (variant id, run just finished, runs of the variant).
pub type OnRun = Arc<dyn Fn(&str, u32, u32) + Send + Sync>;

/// How to run a lab.
#[derive(Clone)]
pub struct RunOptions {
    /// Override every variant's number of runs.
    pub runs: Option<u32>,
    /// Cap every variant's number of runs (snapshots: a few runs, but never more than the
    /// lab itself asks for).
    pub max_runs: Option<u32>,
    pub scale: TimeScale,
    pub seed: u64,
    /// Run only this variant.
    pub variant: Option<String>,
    /// The command line, for the report header.
    pub command_line: String,
    /// Called after each run with (variant id, run, runs of the variant).
    pub on_run: Option<OnRun>,
    /// Handed every event of each run as it is recorded, while the run goes on (a
    /// [`live`](crate::timeline::live) tap around each run): what `ordlab serve` streams.
    /// The tap is the process's: set this only where one run goes on at a time.
    pub on_event: Option<OnEvent>,
}

impl RunOptions {
    pub fn new(scale: f64, seed: u64) -> RunOptions {
        RunOptions {
            runs: None,
            max_runs: None,
            scale: TimeScale(scale),
            seed,
            variant: None,
            command_line: String::new(),
            on_run: None,
            on_event: None,
        }
    }

    /// How the snapshot tests and `ordlab diff` run a lab: few runs, a fixed seed and scale.
    pub fn snapshot() -> RunOptions {
        let mut opts = RunOptions::new(snapshot::TIME_SCALE, snapshot::SEED);
        opts.max_runs = Some(snapshot::RUNS);
        opts
    }

    /// Does this invocation run variant `v` (all, or the one `--variant` names)?
    pub fn wants(&self, v: &Variant) -> bool {
        self.variant.as_ref().is_none_or(|only| *only == v.id)
    }

    fn runs_of(&self, asked: u32) -> u32 {
        self.runs.unwrap_or(asked).min(self.max_runs.unwrap_or(u32::MAX))
    }
}

/// Runs labs against one pair of servers.
pub struct Runner<'a> {
    services: &'a Services,
    /// The `ordlab` binary that role processes run (`ordlab __role`).
    exe: PathBuf,
    redis: MultiplexedConnection,
    pg: tokio_postgres::Client,
    /// What each step took ([`timing`]), for `bench --lab-all`.
    spans: Vec<Span>,
}

impl<'a> Runner<'a> {
    /// Connect and create the tables every lab shares.
    pub async fn new(services: &'a Services, exe: PathBuf) -> Result<Runner<'a>, Error> {
        let started = Instant::now();
        let redis = connect::redis(&services.redis_url).await.context("connect")?;
        let pg = connect::postgres(&services.pg_config).await.context("connect")?;
        crate::orders::create_table(&pg).await?;
        let spans = vec![Span { lab: String::new(), step: Step::Connect, ms: timing::ms_since(started) }];
        Ok(Runner { services, exe, redis, pg, spans })
    }

    /// The spans recorded so far, handed over (the runner keeps none).
    pub fn take_spans(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.spans)
    }

    /// The header every report of this invocation carries.
    pub fn environment(&self, opts: &RunOptions) -> Environment {
        let info = &self.services.info;
        Environment {
            ordlab_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("ORDLAB_GIT_COMMIT").to_string(),
            backend: self.services.backend.to_string(),
            redis_version: info.redis_version.clone(),
            redis_server: info.redis_server.clone(),
            postgres_version: info.postgres_version.clone(),
            lock_release: if info.redis.delex {
                "DELEX IFEQ"
            } else {
                "Lua compare-and-delete (no DELEX before Redis 8.4)"
            }
            .to_string(),
            command_line: opts.command_line.clone(),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            seed: opts.seed,
            time_scale: opts.scale.0,
        }
    }

    /// Run every variant of a lab (or the one `opts.variant` names).
    pub async fn run_lab(&mut self, lab: &Scenario, opts: &RunOptions) -> Result<LabReport, Error> {
        let mut variants = Vec::new();
        for v in lab.variants.iter().filter(|v| opts.wants(v)) {
            variants.push(self.run_variant(lab, v, opts).await?);
        }
        Ok(self.lab_report(lab, variants, opts))
    }

    /// Run one variant of `lab` its number of runs, one after the other.
    pub async fn run_variant(
        &mut self,
        lab: &Scenario,
        v: &Variant,
        opts: &RunOptions,
    ) -> Result<VariantReport, Error> {
        if let Some(why) = v.procedure.missing(&self.services.info) {
            return Ok(VariantReport::skipped(v, why));
        }
        let runs = opts.runs_of(v.runs);
        let mut records = Vec::new();
        let variant_started = Instant::now();
        for run in 1..=runs {
            let tapped = opts.on_event.clone().map(live::tap);
            records.push(self.run_once(lab, v, run, opts).await?);
            drop(tapped);
            if let Some(cb) = &opts.on_run {
                cb(&v.id, run, runs);
            }
        }
        let report = VariantReport::tally(v, records);
        self.spans.push(Span { lab: lab.id.clone(), step: Step::Variant, ms: timing::ms_since(variant_started) });
        Ok(report)
    }

    /// Run `v` once, as its run number `run`. A run that fails (a worker that does not start)
    /// leaves none of its keys behind.
    pub async fn run_once(
        &mut self,
        lab: &Scenario,
        v: &Variant,
        run: u32,
        opts: &RunOptions,
    ) -> Result<crate::labs::RunRecord, Error> {
        let mut ctx = RunContext {
            services: self.services,
            exe: &self.exe,
            redis: self.redis.clone(),
            pg: &self.pg,
            scale: opts.scale,
            lab: &lab.id,
            variant: &v.id,
            run,
            seed: opts.seed,
            nonce: &self.services.nonce,
            control: None,
            roles: None,
        };
        let started = Instant::now();
        let record = v.procedure.run_once(&mut ctx).await;
        if record.is_err() {
            let _ = ctx.delete_run_keys().await;
        }
        let record = record?;
        let step = Step::Run { own_ms: timing::own_span_ms(&record.events) };
        self.spans.push(Span { lab: lab.id.clone(), step, ms: timing::ms_since(started) });
        Ok(record)
    }

    /// One run of `v` under the explorer's `control`: handler work takes no time (time scale
    /// 0), every process steps when the explorer says. Every schedule is run 1 of the variant
    /// (the same keys, deleted after each run, and the same seeds: a process's random choices,
    /// such as a lock token, are the same in every schedule, so only the order differs).
    pub async fn run_controlled(
        &mut self,
        lab: &Scenario,
        v: &Variant,
        seed: u64,
        control: &crate::explore::Control,
        roles: &crate::roles::reuse::RolePool,
    ) -> Result<crate::labs::RunRecord, Error> {
        let run = 1;
        let mut ctx = RunContext {
            services: self.services,
            exe: &self.exe,
            redis: self.redis.clone(),
            pg: &self.pg,
            scale: TimeScale(0.0),
            lab: &lab.id,
            variant: &v.id,
            run,
            seed,
            nonce: &self.services.nonce,
            control: Some(control),
            roles: Some(roles),
        };
        v.procedure.run_once(&mut ctx).await
    }

    /// The lab's report over its variants' reports, with this runner's environment.
    pub fn lab_report(&self, lab: &Scenario, variants: Vec<VariantReport>, opts: &RunOptions) -> LabReport {
        LabReport {
            schema_version: crate::SCHEMA_VERSION,
            environment: self.environment(opts),
            lab: LabInfo {
                id: lab.id.clone(),
                title: lab.title.clone(),
                source: lab.source.clone(),
                description: lab.description.clone(),
                question: lab.question.clone(),
                family: lab.family.clone(),
            },
            variants,
            from_all_runs: None,
        }
    }
}

/// Run `lab` as its snapshot test does, on fresh servers stopped before returning: what the
/// snapshot tests and `ordlab diff` both call.
pub async fn run_as_snapshot(lab: &Scenario, services: &ServiceOptions, exe: PathBuf) -> Result<LabReport, Error> {
    let services = Services::start(services).await?;
    let report = async {
        let mut runner = Runner::new(&services, exe).await?;
        runner.run_lab(lab, &RunOptions::snapshot()).await
    }
    .await;
    services.stop().await;
    report
}
