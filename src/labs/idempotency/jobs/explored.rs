//! A jobs run under the explorer: the producer, every reader `C<n>` and the claimer connect
//! through their own gated endpoints, so each Redis command and SQL statement they send is a
//! step the explorer orders, and the run ends when its schedule does.
//!
//! Where the lab itself fixes an order, the stepped run keeps it. The producer publishes every
//! job before the readers start: which entry a reader gets is the plan's, not a race, and
//! reads racing the appends would multiply the classes by the ballot number of the reads (429
//! for six jobs) with no verdict that could differ, since a job's effects depend only on the
//! steps of the workers that handle it. A reader killed at its planned point is replaced, as
//! the supervisor does: its successor is registered before it starts and is started once the
//! explorer sees it gone. The claimer polls from the start, its polls steps only when there is
//! an entry to take. An entry becomes idle for it only as a timer step (`N`,
//! [`crate::explore::timer`]): once the worker it was handed to is gone or has left it (asked
//! for more work without acknowledging it: a job that failed), never while a worker still
//! handles it (the min-idle, 500 ms, outlasts every job); and only while every process waits
//! for work, as the sampled run starts its claimer once every job was handled once (a timer
//! that runs out while the claimer handles another entry is the same as one that runs out
//! just before its next poll).
//!
//! Workers from the scenario's command line (`setup.worker`: seed 000's wrapper and multi-step
//! job in Python) take the readers' and the claimer's places, each started through gated
//! endpoints of its own ([`ForeignCrew::start_gated`]); their faults fire at the interposer
//! (a kill at a command's send is a step that ends the process: the command never reaches the
//! server), and their calls to the partner go over HTTP, between two of their steps.
//!
//! The partner (the side-effect sink, its own PostgreSQL connection) is not on the wire the
//! explorer steps, and its calls need not be steps: the verdict reads only how many requests
//! of each job the ledger applied, a count no order of the calls changes; and a call happens
//! while its worker is between two of its steps, so the schedule alone decides which of two
//! calls for one job comes first (and with it which one a planned partner failure hits).

use super::foreign::ForeignCrew;
use super::{publish, JobsSpec, JobsTemplate, Seen, WireJobs};
use crate::connect;
use crate::error::{Context, Error};
use crate::explore::control::ActorUrls;
use crate::explore::timer::Timers;
use crate::explore::Control;
use crate::labs::RunContext;
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::{Actor, RawEvent};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The processes of a stepped run, and the endpoints of those not started yet.
struct Crew<'c> {
    control: &'c Control,
    /// Workers from the scenario's command line (their endpoints are their own, made when
    /// each starts); None: ordlab's own.
    foreign: Option<ForeignCrew>,
    template: JobsTemplate,
    urls: HashMap<Actor, ActorUrls>,
    processes: Vec<RoleProcess>,
    last_reader: u32,
    /// The reader registered to replace each started reader, where the plan kills readers.
    successor: HashMap<Actor, Actor>,
    replaces_killed: bool,
}

impl Crew<'_> {
    /// Register `actor`'s gated endpoints; started only after `after`, when given.
    async fn register(&mut self, ctx: &RunContext<'_>, actor: Actor, after: Option<Actor>) -> Result<(), Error> {
        if self.foreign.is_none() {
            let urls = self.control.endpoints(actor, &ctx.client_name(actor), &ctx.key_prefix()).await?;
            self.urls.insert(actor, urls);
        }
        if let Some(after) = after {
            self.control.dormant(actor, after);
        }
        Ok(())
    }

    /// Register the next reader, to be started after `after`.
    async fn next_reader(&mut self, ctx: &RunContext<'_>, after: Actor) -> Result<Actor, Error> {
        self.last_reader += 1;
        let reader = Actor::Consumer(self.last_reader);
        self.register(ctx, reader, Some(after)).await?;
        Ok(reader)
    }

    /// Start registered `actor` through its endpoints (a reader's replacement registered first).
    async fn start(
        &mut self,
        ctx: &mut RunContext<'_>,
        actor: Actor,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let index = match actor {
            Actor::Consumer(i) => {
                if self.replaces_killed {
                    let next = self.next_reader(ctx, actor).await?;
                    self.successor.insert(actor, next);
                }
                i
            }
            // Seeds 1000+: never a reader's (as in a sampled run).
            _ => 1001,
        };
        if let Some(foreign) = &mut self.foreign {
            return foreign.start_gated(ctx, actor, index, tx).await;
        }
        let urls = &self.urls[&actor];
        let mut cfg = self.template.config(ctx, actor, index);
        (cfg.env.redis_url, cfg.env.pg_config) = (urls.redis_url.clone(), urls.pg_url.clone());
        let process = ctx.spawn(&RoleConfig::of(&cfg), tx.clone())?;
        self.control.watch_exit(actor, process.exit_check());
        self.processes.push(process);
        Ok(())
    }

    async fn stop(self) {
        if let Some(foreign) = self.foreign {
            foreign.stop().await;
        }
        for p in self.processes {
            p.stop().await;
        }
    }
}

/// What a stepped run recorded: its events, what it saw of them, whether it ended with its
/// schedule (not at the deadline).
pub(super) struct SteppedRun {
    pub raw: Vec<RawEvent>,
    pub seen: Seen,
    pub finished: bool,
}

/// Run the jobs under `control`: the claimer polling, the producer publishing, then the
/// readers, until the schedule is over.
pub(super) async fn run(
    spec: &JobsSpec,
    ctx: &mut RunContext<'_>,
    control: &Control,
    (template, stream, sink): (JobsTemplate, &str, crate::side_effect::SinkConfig),
    tx: &mpsc::UnboundedSender<RawEvent>,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
) -> Result<SteppedRun, Error> {
    let replaces_killed =
        spec.jobs.iter().any(|j| j.crash.is_some()) || spec.worker.as_ref().is_some_and(|w| !w.faults.is_empty());
    let foreign = match &spec.worker {
        Some(w) => {
            let what = (stream, spec.partner.effect.as_str(), &spec.reaper);
            Some(ForeignCrew::idle(w, what, sink).await?)
        }
        None => None,
    };
    let mut crew = Crew {
        foreign,
        control,
        template,
        urls: HashMap::new(),
        processes: Vec::new(),
        last_reader: 0,
        successor: HashMap::new(),
        replaces_killed,
    };
    // Every script a handler may call is on the server before the run: whether its first
    // EVALSHA gets NOSCRIPT (and a SCRIPT LOAD step) must not depend on the runs before.
    for script in crate::handler::job::SCRIPTS {
        let _: String =
            redis::cmd("SCRIPT").arg("LOAD").arg(*script).query_async(&mut ctx.redis).await.context("SCRIPT LOAD")?;
    }
    let producer_urls =
        control.endpoints(Actor::Producer, &ctx.client_name(Actor::Producer), &ctx.key_prefix()).await?;
    let producer = connect::redis(&producer_urls.redis_url).await.context("producer connect")?;
    crew.register(ctx, Actor::Reaper, None).await?;
    crew.start(ctx, Actor::Reaper, tx).await?;
    control.idle_poller(Actor::Reaper);
    control.ready(Actor::Reaper).await?;
    let mut first = Vec::new();
    for _ in 0..spec.workers {
        first.push(crew.next_reader(ctx, Actor::Producer).await?);
    }
    control.set_timers(Timers {
        // A key's TTL shorter than the claimer's min-idle runs out as a step (a lease), once
        // every process waits for work: before the retry, never during a job.
        ttl: spec.technique.key_ttl().is_some_and(|(_, ttl)| ttl < spec.reaper.min_idle_ms),
        idle_group: Some(crate::streams::GROUP.to_string()),
        idle_while_working: false,
        idle_once_left: true,
        idle_when_all_wait: true,
        block_timeout: false,
        leases: None,
        leases_outlasted: Vec::new(),
        due: None,
        polling_streams: Vec::new(),
        key_prefix: ctx.key_prefix(),
    });
    control.begin();
    let publish =
        publish::publish(producer, stream.to_string(), spec.jobs.clone(), spec.idmp.is_some(), Arc::new(tx.clone()));
    tokio::pin!(publish);
    // Under the explorer the run takes as long as its schedule: the deadline only catches a fault.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let (mut raw, mut seen, mut wire, mut published) = (Vec::new(), Seen::default(), WireJobs::default(), false);
    let finished = loop {
        tokio::select! {
            r = &mut publish, if !published => {
                r?;
                published = true;
                control.finished(Actor::Producer);
                for reader in &first {
                    crew.start(ctx, *reader, tx).await?;
                }
            }
            ev = rx.recv() => match ev {
                Some(ev) => seen.take(ev, &mut wire, &mut raw),
                None => break false,
            },
            _ = control.over() => break true,
            _ = tokio::time::sleep_until(deadline) => break false,
        }
        for dead in std::mem::take(&mut seen.to_replace) {
            if let Some(next) = crew.successor.remove(&dead) {
                crew.start(ctx, next, tx).await?;
            }
        }
    };
    crew.stop().await;
    Ok(SteppedRun { raw, seen, finished })
}
