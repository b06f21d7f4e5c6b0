//! A list-queue run under the explorer: the producer, every worker `W<n>` and the reaper
//! connect through their own gated endpoints, so each Redis command they send (and each
//! worker's call to the side-effect sink, a statement on its gated PostgreSQL endpoint) is a
//! step the explorer orders; the run ends when its schedule does.
//!
//! Handler work takes no time: the lab's costs (W1's 5000 ms, W2's 300 ms) are not waits, so
//! the explorer tries every order of the workers' steps, a fast W1 as well as a slow one. The
//! e-mail is a step of its own, the sink's `perform_effect` statement on the worker's
//! PostgreSQL endpoint: a worker killed mid-job is one whose held step is the e-mail, one
//! killed after it has sent it. The sink's statement changes no state that a Redis step reads,
//! so it commutes with every step but the kill's.
//!
//! Where the lab fixes an order, the stepped run keeps it: W1 starts first, and with
//! `stagger` each next worker starts and the job marked `after_taken` is pushed only once a
//! take has taken a job (the lab's way to give W1 the first copy and W2 the second; the
//! explorer wakes them at that take, [`Wake::Took`]). A worker's take — the lease fetch (a
//! script cannot block: it polls) or a blocking `BRPOP`/`BRPOPLPUSH`/`BLMOVE` — and the
//! reaper's look at expired leases are steps only when they can take something (a job in the
//! queue, a lease run out, [`Probe`]): a poll that finds nothing changes nothing, and a blocking
//! take held until the queue has a job never waits in the server (the push that gives it one
//! comes first, and the take, released, answers at once).
//!
//! A worker from the scenario's command line (`setup.worker`, seed 003's Node worker) is
//! stepped the same way: it gets its own gated endpoints when it starts (the interposer records
//! its commands, its faults fire there), and its replacement is registered before it. Its call
//! to the side-effect partner goes over HTTP, not through its endpoints: not a step, it comes
//! between the worker's take and its next command, which the explorer waits for.
//!
//! The planned kill (`kill = { worker = 1, after_done_by = 2 }`) is a step boundary the
//! explorer orders (a fault whose trigger is W2's step: [`kill_after_step`]): once W2's finishing script (LREM + ZREM) is answered,
//! W1 takes no further step and the lab kills it, as a sampled run does when W2 says it is
//! done. That step conflicts with every step of W1, so the search runs W1's e-mail and its
//! LREM on either side of it. A planned crash (`faults = [...]`) is the worker's own, at its
//! point in its own steps, and a worker that dies of one is replaced (`restart`) by a
//! successor registered before and started once the explorer sees it gone, as the jobs kind
//! does.
//!
//! A lease runs out as a timer step (actor `N`, `ZADD leases XX CH 0 <entry>`,
//! [`crate::explore::timer`]), never by the clock: the worker's lease is
//! [`crate::fault::NEVER_BY_THE_CLOCK_MS`] long. Leases run out in the order they were taken,
//! and only while every process waits for work (workers with nothing to fetch, the reaper with
//! nothing to reap, a killed worker gone): in the sampled lab a lease outlasts every job but
//! the killed worker's (W2's 300 ms job in a 3000 ms lease; W1 is killed before its lease
//! could run out), and a lease that runs out while the reaper puts back another is the same
//! as one that runs out just before its next look. A job whose first delivery outlasts its
//! lease (lease-slow-handler's 1500 ms in a 500 ms lease) is the exception: its lease can also
//! run out at any point while a worker works on it, once ([`ListQueueSpec::leases_outlasted`]).
//! Variants where a lease could run out at every delivery are refused (see
//! [`ListQueueSpec::explorable`]).

use super::{observe, Crew, CrewMember, Progress, Step};
use crate::error::{Context, Error};
use crate::explore::control::{kill_after_step, Probe, Wake};
use crate::explore::timer::Timers;
use crate::explore::Control;
use crate::labs::list_queue::list_queue::{ListQueueSpec, PushEnd};
use crate::list_queue::Take;
use crate::labs::RunContext;
use crate::list_queue as lq;
use crate::list_queue::events::ListEvent;
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, RawEvent, Sink};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// `EVALSHA <sha>`: the first words of every call of `script`.
fn script_words(script: &str) -> Vec<String> {
    vec!["EVALSHA".to_string(), redis::Script::new(script).get_hash().to_string()]
}

/// The first words of a worker's take: the lease script's `EVALSHA <sha>`, or the blocking
/// take on the queue (`BRPOP queue:default`, `BRPOPLPUSH queue:default …`). A blocking take is
/// held until the queue has a job, so it never waits in the server: released, it takes at once.
fn take_words(spec: &ListQueueSpec, queue: &str) -> Vec<String> {
    match spec.take {
        Take::Lease => script_words(lq::FETCH),
        Take::Brpop => vec!["BRPOP".into(), queue.to_string()],
        Take::Brpoplpush => vec!["BRPOPLPUSH".into(), queue.to_string()],
        Take::Blmove => vec!["BLMOVE".into(), queue.to_string()],
    }
}

/// A key of the queue as the processes' commands show it (without the run's prefix).
fn short(key: &str, prefix: &str) -> String {
    key.strip_prefix(prefix).unwrap_or(key).to_string()
}

/// The workers started so far and the successors registered for them.
struct Workers<'c> {
    control: &'c Control,
    /// `W<n>` → its gated Redis and PostgreSQL URLs, registered before it starts (ordlab's own).
    urls: HashMap<u32, crate::explore::control::ActorUrls>,
    /// The workers registered so far.
    registered: std::collections::BTreeSet<u32>,
    /// They come from the scenario's command line (their endpoints are their own).
    foreign: bool,
    last: u32,
    /// The worker registered to replace each started worker, where the lab restarts them.
    successor: HashMap<u32, u32>,
}

impl Workers<'_> {
    /// Register `W<n+1>`'s endpoints, dormant until `wake` (None: started now).
    async fn register(&mut self, ctx: &RunContext<'_>, wake: Option<Wake>) -> Result<u32, Error> {
        self.last += 1;
        let (index, actor) = (self.last, Actor::Worker(self.last));
        if !self.foreign {
            // A worker from a command line gets its gated endpoints when it starts.
            let urls = self.control.endpoints(actor, &ctx.client_name(actor), &ctx.key_prefix()).await?;
            self.urls.insert(index, urls);
        }
        if let Some(wake) = wake {
            self.control.dormant_until(actor, wake);
        }
        self.control.poller(actor);
        self.registered.insert(index);
        Ok(index)
    }

    /// Start registered `W<index>` through its endpoints (its successor registered first).
    async fn start(
        &mut self,
        spec: &ListQueueSpec,
        ctx: &mut RunContext<'_>,
        crew: &mut Crew,
        index: u32,
    ) -> Result<(), Error> {
        if spec.restart {
            let next = self.register(ctx, Some(Wake::Done(Actor::Worker(index)))).await?;
            self.successor.insert(index, next);
        }
        if self.foreign {
            return crew.start_foreign(spec, ctx, index).await;
        }
        let urls = &self.urls[&index];
        let mut cfg = crew.worker_config(spec, ctx, index);
        cfg.env.redis_url = urls.redis_url.clone();
        cfg.env.pg_config = urls.pg_url.clone();
        // The e-mail goes through the worker's gated PostgreSQL endpoint: a step.
        cfg.sink.pg_config = urls.pg_url.clone();
        let process = ctx.spawn(&RoleConfig::of(&cfg), crew.tx.clone())?;
        self.control.watch_exit(Actor::Worker(index), process.exit_check());
        crew.place(index, CrewMember::Own(process));
        Ok(())
    }
}

/// Load the queue's scripts once, so every `EVALSHA` of a step finds its script (a `NOSCRIPT`
/// and its reload would be steps that depend on which process called first).
async fn load_scripts(ctx: &mut RunContext<'_>) -> Result<(), Error> {
    for script in [lq::FETCH, lq::ACK, lq::REQUEUE_EXPIRED, lq::RETRY_LATER, lq::DEAD_LETTER, lq::MOVE_DUE] {
        let _: String =
            redis::cmd("SCRIPT").arg("LOAD").arg(script).query_async(&mut ctx.redis).await.context("SCRIPT LOAD")?;
    }
    Ok(())
}

/// Start the reaper through its gated endpoints, polling only when a lease has run out.
async fn start_reaper(
    spec: &ListQueueSpec,
    ctx: &RunContext<'_>,
    control: &Control,
    crew: &Crew,
) -> Result<Option<RoleProcess>, Error> {
    let Some(mut cfg) = super::supervisor_config(spec, ctx, &crew.keys) else { return Ok(None) };
    let urls = control.endpoints(Actor::Reaper, &cfg.client_name, &ctx.key_prefix()).await?;
    cfg.env.redis_url = urls.redis_url;
    let process = ctx.spawn(&RoleConfig::of(&cfg), crew.tx.clone())?;
    control.poller(Actor::Reaper);
    let leases = short(&crew.keys.leases, &ctx.key_prefix());
    if spec.reaper.is_some() {
        control.poll_when(script_words(lq::REQUEUE_EXPIRED), Probe::DueMember(leases));
    }
    if spec.scheduler.is_some() {
        // A delayed retry comes due as a timer step (its due time set to 0).
        let delayed = short(&crew.keys.delayed, &ctx.key_prefix());
        control.poll_when(script_words(lq::MOVE_DUE), Probe::DueMember(delayed));
    }
    control.ready(Actor::Reaper).await?;
    Ok(Some(process))
}

/// The producer: push the jobs in order, each job marked `after_taken` once a take has taken
/// the job before it (`takes` counts the takes the run has seen); then it is done.
async fn produce(
    spec: &ListQueueSpec,
    control: &Control,
    mut producer: redis::aio::MultiplexedConnection,
    queue: String,
    fetch: Vec<String>,
    mut takes: watch::Receiver<u32>,
    tx: mpsc::UnboundedSender<RawEvent>,
) -> Result<(), Error> {
    let cmd = match spec.push {
        PushEnd::Rpush => "RPUSH",
        PushEnd::Lpush => "LPUSH",
    };
    for job in &spec.jobs {
        if job.after_taken {
            let seen = *takes.borrow();
            control.dormant_until(Actor::Producer, Wake::Took(None, fetch.clone()));
            takes.wait_for(|n| *n > seen).await.map_err(|_| Error::Explore("the run ended before a take".into()))?;
        }
        let sent = crate::clock::now_ns();
        let len: i64 = redis::cmd(cmd).arg(&queue).arg(job.payload()).query_async(&mut producer).await.context(cmd)?;
        let kind =
            ListEvent::Pushed { job: job.label(), list: "queue:default".into(), len, gated: job.after_taken }.event();
        tx.record(RawEvent { mono_ns: sent, actor: Actor::Producer, kind });
    }
    control.finished(Actor::Producer);
    Ok(())
}

/// Run the list queue under `control`: reaper, producer and the first workers, then until the
/// schedule is over. Returns the events and whether the run ended with its schedule.
pub(super) async fn run(
    spec: &ListQueueSpec,
    ctx: &mut RunContext<'_>,
    control: &Control,
    crew: &mut Crew,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
) -> Result<(Vec<RawEvent>, bool), Error> {
    load_scripts(ctx).await?;
    let prefix = ctx.key_prefix();
    let reaper = start_reaper(spec, ctx, control, crew).await?;
    let queue_short = short(&crew.keys.queue, &prefix);
    let fetch = take_words(spec, &queue_short);
    control.poll_when(fetch.clone(), Probe::NonEmptyList(queue_short.clone()));
    let producer_urls = control.endpoints(Actor::Producer, &ctx.client_name(Actor::Producer), &prefix).await?;
    let producer = crate::connect::redis(&producer_urls.redis_url).await.context("producer connect")?;
    let mut workers = Workers {
        control,
        urls: HashMap::new(),
        registered: Default::default(),
        foreign: spec.worker.is_some(),
        last: 0,
        successor: HashMap::new(),
    };
    let first = if spec.stagger { 1 } else { spec.workers };
    let mut started = Vec::new();
    for i in 1..=spec.workers {
        let wake = (i > first).then(|| Wake::Took(Some(Actor::Worker(i - 1)), fetch.clone()));
        let index = workers.register(ctx, wake).await?;
        if i <= first {
            started.push(index);
        }
    }
    for index in started {
        workers.start(spec, ctx, crew, index).await?;
    }
    if let Some(k) = spec.kill {
        let (victim, by) = (Actor::Worker(k.worker), Actor::Worker(k.after_done_by));
        control.kill_after(kill_after_step(victim, by, &script_words(lq::ACK)));
    }
    let leases = spec.reaper.map(|_| short(&crew.keys.leases, &prefix));
    let due = spec.scheduler.map(|_| short(&crew.keys.delayed, &prefix));
    let leases_outlasted = if leases.is_some() { spec.leases_outlasted() } else { Vec::new() };
    control.set_timers(Timers {
        leases,
        leases_outlasted,
        due,
        idle_when_all_wait: true,
        key_prefix: prefix.clone(),
        ..Timers::default()
    });
    control.begin();
    let (takes_tx, takes) = watch::channel(0u32);
    let produce = produce(spec, control, producer, crew.keys.queue.clone(), fetch.clone(), takes, crew.tx.clone());
    tokio::pin!(produce);
    // Under the explorer the run takes as long as its schedule: the deadline only catches a fault.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let (mut raw, mut p, mut produced) = (Vec::new(), Progress::default(), false);
    let finished = loop {
        tokio::select! {
            r = &mut produce, if !produced => { r?; produced = true; }
            ev = rx.recv() => {
                let Some(ev) = ev else { break false };
                let list = ev.kind.family::<ListEvent>();
                let step = observe(spec, &ev, list.as_ref(), &mut p);
                let took = list.as_ref().is_some_and(|e| matches!(e, ListEvent::Taken { .. }));
                let actor = ev.actor;
                raw.push(ev);
                if took {
                    takes_tx.send_modify(|n| *n += 1);
                    next_staggered(spec, ctx, crew, &mut workers, actor).await?;
                }
                match step {
                    Step::Kill(index) => crew.kill(index).await,
                    Step::Restart => {
                        let Actor::Worker(dead) = actor else { continue };
                        if let Some(next) = workers.successor.remove(&dead) {
                            workers.start(spec, ctx, crew, next).await?;
                        }
                    }
                    Step::Push | Step::Nothing => {}
                }
            }
            _ = control.over() => break true,
            _ = tokio::time::sleep_until(deadline) => break false,
        }
    };
    for w in std::mem::take(&mut crew.workers).into_iter().flatten() {
        w.stop().await;
    }
    if let Some(r) = reaper {
        r.stop().await;
    }
    Ok((raw, finished))
}

/// With `stagger`, the worker after `taker` starts once `taker` took its first job (the
/// explorer woke it at that take).
async fn next_staggered(
    spec: &ListQueueSpec,
    ctx: &mut RunContext<'_>,
    crew: &mut Crew,
    workers: &mut Workers<'_>,
    taker: Actor,
) -> Result<(), Error> {
    let Actor::Worker(n) = taker else { return Ok(()) };
    let next = n + 1;
    let registered_dormant = spec.stagger && next <= spec.workers && crew.workers.get(next as usize - 1).is_none();
    if registered_dormant && workers.registered.contains(&next) {
        workers.start(spec, ctx, crew, next).await?;
    }
    Ok(())
}
