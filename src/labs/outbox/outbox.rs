//! The transactional outbox (seed 001, 08g, and its follow-ups): the events are rows of an
//! outbox table, dispatchers publish them to the stream, and consumers apply the stream.
//! Order survives only if publishing is sequential per key; several dispatchers, or one
//! killed between XADD and marking its row, publish an event twice or out of order.

use crate::checker::{final_state::final_state, health::health, RunVerdict};
use crate::connect;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::orders::HandlerWork;
use crate::handler::order::Strategy;
use crate::labs::consumer_group::{drain, drive, read_streams, ConsumerGroup, GroupSpec, Progress};
use crate::labs::order_stream::{self as stream, order_items};
use crate::labs::outbox::delivery;
use crate::explore::control::Probe;
use crate::labs::outbox::dispatcher::{self, Dispatcher, DispatcherConfig, DispatcherKind, DispatcherSpec, Exclusion};
use crate::labs::outbox::table;
use crate::labs::{
    FinalItem, Judge, LabProcedure, Line, NoFacts, Present, RunContext, RunNotes, RunOutcome, RunView, TimelineDisplay,
};
use crate::lang::{pick, Lang};
use crate::orders::{self, EventSpec, OrderRow};
use crate::roles::RoleConfig;
use crate::streams::StreamEntry;
use crate::timeline::{Actor, RawEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// `kind = "outbox"`: `events` are the outbox rows in id order; `outbox` says how they are
/// dispatched; consumers apply the stream with `strategy`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxSpec {
    pub outbox: DispatcherSpec,
    #[serde(default = "stream::one")]
    pub consumers: u32,
    #[serde(default)]
    pub strategy: Strategy,
    #[serde(default)]
    pub cost_ms: BTreeMap<String, f64>,
    pub events: Vec<EventSpec>,
    #[serde(default)]
    pub initial: Option<Vec<OrderRow>>,
}

/// What an outbox run left: the stream, the rows, the outbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxObserved {
    pub stream: Vec<StreamEntry>,
    pub final_rows: Vec<OrderRow>,
    pub outbox_rows: i64,
}

impl OutboxSpec {
    fn initial(&self) -> Vec<OrderRow> {
        self.initial.clone().unwrap_or_else(|| orders::default_initial(&self.events))
    }

    fn orders(&self) -> Vec<i64> {
        orders::orders_of(&self.initial(), &self.events)
    }

    fn bound(&self, scale: TimeScale) -> Duration {
        let work = HandlerWork::new(&self.cost_ms, &self.events);
        let total_work: f64 = self.events.iter().map(|e| work.cost_ms(&e.job())).sum();
        let o = &self.outbox;
        let retries: u32 = o.failing_rows.iter().map(|f| f.attempts).sum();
        let dispatch = o.poll_ms * (retries + 1) as f64 + o.publish_ms.iter().sum::<f64>() * self.events.len() as f64;
        scale.duration((total_work + dispatch) * 3.0) + Duration::from_secs(10)
    }

    /// The server timers that are steps under the explorer: a consumer's lock TTL where it can
    /// run out during the longest job (as in the stream kind).
    fn timers(&self, key_prefix: String) -> crate::explore::timer::Timers {
        let longest_job = self.cost_ms.values().copied().fold(0.0, f64::max);
        let ttl = self.strategy.lock_ttl_ms().is_some_and(|ttl| (ttl as f64) <= longest_job);
        crate::explore::timer::Timers { ttl, key_prefix, ..Default::default() }
    }

    /// Dispatchers as tasks of the orchestrator, each with its own connections.
    async fn dispatcher_tasks(
        &self,
        ctx: &RunContext<'_>,
        stream: &str,
        sink: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Vec<Dispatcher>, Error> {
        let mut out = Vec::new();
        for index in 1..=self.outbox.dispatchers {
            let actor = Actor::Dispatcher(index);
            let (pg_url, redis_url) = match ctx.control {
                // Under the explorer: through its gated endpoints. It polls by design: parked
                // on a poll that found nothing new, it waits for work.
                Some(c) => {
                    let urls = c.endpoints(actor, &ctx.client_name(actor), &ctx.key_prefix()).await?;
                    c.poller(actor);
                    if !self.outbox.failing_rows.is_empty() {
                        // It counts its own attempts at a failing row: its next poll reads the
                        // same rows and acts differently, a step while rows are pending.
                        let table = format!("{}.outbox", connect::SCHEMA);
                        let probe = Probe::Rows { table, condition: dispatcher::PENDING.to_string() };
                        c.poll_when(vec![dispatcher::pending_sql(self.outbox.dispatcher)], probe);
                    }
                    (urls.pg_url, urls.redis_url)
                }
                None => (ctx.services.pg_config.clone(), ctx.services.redis_url.clone()),
            };
            out.push(Dispatcher {
                pg: connect::postgres(&pg_url).await.context("dispatcher connect")?,
                redis: connect::redis(&redis_url).await.context("dispatcher connect")?,
                stream: stream.to_string(),
                spec: self.outbox.clone(),
                scale: ctx.scale,
                sink: Arc::new(sink.clone()),
                index,
                may_crash: false,
            });
        }
        Ok(out)
    }

    /// Publish every row: by tasks, or, for a planned crash, by processes of their own.
    async fn dispatch(
        &self,
        ctx: &RunContext<'_>,
        tasks: Vec<Dispatcher>,
        stream: String,
        sink: mpsc::UnboundedSender<RawEvent>,
        t0_ns: u64,
    ) -> Result<(), Error> {
        if self.outbox.crash_after_xadd_of_row.is_some() {
            let spec = self.outbox.clone();
            let cfg = DispatcherConfig {
                env: ctx.role_env(1),
                index: 1,
                stream,
                spec,
                may_crash: true,
                first_round_ns: Some(t0_ns),
            };
            if let Some(c) = ctx.control {
                return dispatcher_processes_controlled(c, ctx, cfg, sink, self.timers(ctx.key_prefix())).await;
            }
            return dispatcher_processes(ctx, cfg, sink, t0_ns).await;
        }
        if let Some(c) = ctx.control {
            return dispatch_controlled(c, tasks, t0_ns, self.timers(ctx.key_prefix())).await;
        }
        // Dropped with the future (deadline): every dispatcher task is aborted.
        let mut set = tokio::task::JoinSet::new();
        for mut d in tasks {
            set.spawn(async move { d.run(t0_ns).await });
        }
        while let Some(done) = set.join_next().await {
            done.expect("dispatcher task does not panic")?;
        }
        Ok(())
    }
}

impl LabProcedure for OutboxSpec {
    fn validate(&mut self) -> Result<(), String> {
        stream::check_consumers(self.consumers)?;
        stream::check_costs(&self.cost_ms)?;
        stream::check_events(&self.events)?;
        if self.outbox.dispatchers == 0 {
            return Err("setup.outbox.dispatchers = 0: use at least 1".into());
        }
        if self.outbox.crash_after_xadd_of_row.is_some() && self.outbox.dispatchers != 1 {
            return Err(
                "setup.outbox.crash_after_xadd_of_row needs dispatchers = 1 (one crashes, one takes over)".into()
            );
        }
        self.initial = Some(self.initial());
        Ok(())
    }

    /// Poll rounds and publish latency take no time under the explorer (each poll is a step;
    /// a poll that found nothing new is parked until another step changes the outbox); a
    /// lock's TTL that can run out mid-job is a step. With an injected publish failure the
    /// dispatcher counts its attempts at the row, state the wire does not show: its poll is a
    /// step while rows are pending ([`Probe::Rows`]), never parked, so the row succeeds at a
    /// later poll. A planned dispatcher crash is stepped: the new dispatcher process is
    /// started once the explorer sees the first gone.
    fn explorable(&self) -> Result<(), String> {
        if self.strategy.gap_timeout_ms().is_some() {
            return Err("its reorder buffer's gap timeout is a timer the explorer does not schedule yet".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<OutboxObserved>, Error> {
        orders::reset(ctx.pg, &self.initial()).await?;
        self.strategy.prepare(ctx.pg).await?;
        table::fill(ctx.pg, &self.events).await?;
        let work = HandlerWork::new(&self.cost_ms, &self.events);
        let spec = GroupSpec {
            consumers: self.consumers,
            shards: 1,
            strategy: &self.strategy,
            work,
            faults: &[],
            reaper: None,
            follow_primary: &[],
            worker: None,
            waiting_order: None,
            patience_ms: None,
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let group = ConsumerGroup::start(ctx, &spec, &tx).await?;
        let stream = group.streams[0].clone();
        let tasks = match self.outbox.crash_after_xadd_of_row {
            Some(_) => Vec::new(),
            None => self.dispatcher_tasks(ctx, &stream, &tx).await?,
        };
        // Under the explorer the run takes as long as its schedule: the deadline only catches a fault.
        let bound = if ctx.control.is_some() { Duration::from_secs(120) } else { self.bound(ctx.scale) };
        let deadline = tokio::time::Instant::now() + bound;
        let t0_ns = crate::clock::now_ns();
        let (mut raw, mut progress) = (Vec::new(), Progress::default());
        let publish = self.dispatch(ctx, tasks, stream.clone(), tx.clone(), t0_ns);
        let controlled = ctx.control.is_some();
        let finished = drive(publish, &mut rx, &mut raw, deadline, |ev, done| {
            if let Some(ev) = ev {
                progress.observe(ev, |_| 0, |_| 0);
            }
            // Under the explorer, the schedule's end is the run's (the dispatch waits for it).
            done && (controlled || progress.over(done, self.events.len(), self.consumers, false))
        })
        .await?;
        group.stop().await;
        drop(tx);
        drain(rx, &mut raw);
        if let Some(c) = ctx.control {
            raw.extend(c.take_events());
        }
        let stream = read_streams(&mut ctx.redis, &[stream]).await?;
        ctx.delete_run_keys().await?;
        let observed = OutboxObserved {
            stream,
            final_rows: orders::final_rows(ctx.pg, &self.orders()).await?,
            outbox_rows: table::row_count(ctx.pg).await?,
        };
        Ok(RunOutcome { t0_ns, raw, timed_out: finished.is_none(), observed })
    }
}

impl Judge for OutboxSpec {
    type Observed = OutboxObserved;
    type Facts = NoFacts;

    fn judge(&self, run: &RunView<'_, OutboxObserved>) -> RunVerdict {
        let expected = orders::expected_statuses(&self.events);
        let v = health(run.events, run.timed_out).and(final_state(&expected, &run.observed.final_rows));
        if self.outbox.checks_delivery() {
            v.and(delivery::delivery(&run.observed.stream, run.events))
        } else {
            v
        }
    }

    fn intended(&self) -> Option<Vec<crate::checker::fates::Intended>> {
        Some(stream::intended_of(&self.events))
    }

    fn final_state(&self, observed: &OutboxObserved) -> Vec<FinalItem> {
        order_items(&orders::expected_statuses(&self.events), &observed.final_rows)
    }

    fn facts(&self, _run: &RunView<'_, OutboxObserved>) -> NoFacts {
        NoFacts
    }
}

impl Present for OutboxSpec {
    fn describe(&self, lang: Lang) -> String {
        let mut parts = vec![dispatcher_phrase(&self.outbox, lang)];
        parts.extend(several_phrase(&self.outbox, lang));
        if let Some(row) = self.outbox.crash_after_xadd_of_row {
            parts.push(crate::tr!(
                lang,
                "dispatcher SIGKILLed after XADD of row {row}, before marking it; a new dispatcher takes over",
                "dispatcher bị SIGKILL sau XADD row {row}, trước khi đánh dấu; một dispatcher mới tiếp quản"
            ));
        }
        parts.push(stream::consumers_phrase(self.consumers, lang));
        parts.extend(stream::costs_phrase(&self.cost_ms, &self.events));
        parts.push(self.strategy.describe(lang));
        parts.join("; ")
    }

    fn approach(&self) -> String {
        let d = match self.outbox.dispatcher {
            DispatcherKind::Naive => "naive dispatcher",
            DispatcherKind::PerKey => "per-key dispatcher",
        };
        format!("{d}, {}", self.strategy.short())
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let expected = stream::expected_label(&self.events, lang);
        if self.outbox.checks_delivery() {
            crate::tr!(
                lang,
                "wrong (final state not {expected}, or an event applied twice)",
                "SAI (trạng thái cuối không phải {expected}, hoặc một event bị áp dụng hai lần)"
            )
        } else {
            crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
        }
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay {
            many_orders: self.orders().len() > 1,
            // A dispatcher killed while the consumer applies what it published: where the kill falls
            // among the consumer's writes is the scheduler's.
            processes_interleave_freely: self.outbox.crash_after_xadd_of_row.is_some(),
            ..TimelineDisplay::default()
        }
    }

    fn notes(&self, run: &RunView<'_, OutboxObserved>, lang: Lang) -> RunNotes {
        let many = self.orders().len() > 1;
        RunNotes {
            heading: Some(stream::stream_heading(&run.observed.stream, 1, many)),
            after: stream::publish_delays(run.events, lang).into_iter().collect(),
        }
    }

    fn per_run_lines(&self, runs: &[RunView<'_, OutboxObserved>], lang: Lang) -> Vec<Line> {
        if !self.outbox.checks_delivery() {
            return Vec::new();
        }
        // Several dispatchers or a crash: what the stream and the side effects say, per run.
        let per_run: Vec<String> = runs
            .iter()
            .map(|r| {
                let s = delivery::stream_stats(&r.observed.stream);
                let twice = delivery::applied_twice(&r.observed.stream, r.events);
                format!("{}/{}/{}", s.duplicates, s.out_of_order_pairs, twice)
            })
            .collect();
        let label = pick(
            lang,
            "duplicates/out-of-order pairs in the stream/events applied twice, per run",
            "bản trùng/cặp sai thứ tự trong stream/event bị áp dụng hai lần, từng lần",
        );
        vec![Line::text(format!("{label}: {}", per_run.join(" ")))]
    }
}

/// `dispatcher ORDER BY id, polls every 200 ms, row 1 fails 2×`.
fn dispatcher_phrase(o: &DispatcherSpec, lang: Lang) -> String {
    let order = match o.dispatcher {
        DispatcherKind::Naive => "ORDER BY id",
        DispatcherKind::PerKey => "ORDER BY aggregate_id, id",
    };
    let fails: String = o
        .failing_rows
        .iter()
        .map(|f| {
            let (row, n) = (f.row, f.attempts);
            crate::tr!(lang, ", row {row} fails {n}×", ", row {row} lỗi {n} lần đầu")
        })
        .collect();
    let poll = o.poll_ms;
    crate::tr!(
        lang,
        "dispatcher {order}, polls every {poll} ms{fails}",
        "dispatcher {order}, poll mỗi {poll} ms{fails}"
    )
}

/// `2 dispatchers, no exclusion, latency before XADD: D1 300 ms, D2 20 ms`.
fn several_phrase(o: &DispatcherSpec, lang: Lang) -> Option<String> {
    if o.dispatchers <= 1 {
        return None;
    }
    let how = match o.exclusion {
        Exclusion::None => pick(lang, "no exclusion", "không loại trừ"),
        Exclusion::SkipLocked => "FOR UPDATE SKIP LOCKED",
        Exclusion::AdvisoryLock => "pg_try_advisory_xact_lock",
    };
    let latency: Vec<String> = (1..=o.dispatchers).map(|i| format!("D{i} {} ms", o.publish_latency_ms(i))).collect();
    let (n, latency) = (o.dispatchers, latency.join(", "));
    Some(crate::tr!(
        lang,
        "{n} dispatchers, {how}, latency before XADD: {latency}",
        "{n} dispatcher, {how}, trễ trước XADD: {latency}"
    ))
}

/// Dispatchers as processes, one after the other: D1 runs until it exits; after a planned
/// crash D2 takes over at the run's next polling round, and so on (at most 5).
async fn dispatcher_processes(
    ctx: &RunContext<'_>,
    mut cfg: DispatcherConfig,
    sink: mpsc::UnboundedSender<RawEvent>,
    t0_ns: u64,
) -> Result<(), Error> {
    let poll_ns = ctx.scale.duration(cfg.spec.poll_ms).as_nanos().max(1) as u64;
    loop {
        let mut child = ctx.spawn(&RoleConfig::of(&cfg.clone()), sink.clone())?;
        // Done (status 0) or died unplanned (the watcher recorded it): no one takes over.
        if child.wait().await != Some(true) || cfg.index >= 5 {
            return Ok(());
        }
        let elapsed = crate::clock::now_ns().saturating_sub(t0_ns);
        cfg.first_round_ns = Some(t0_ns + (elapsed / poll_ns + 1) * poll_ns);
        cfg.index += 1;
        cfg.may_crash = false;
    }
}

/// Under the explorer, the planned crash: D1 (a process through gated endpoints of its own) dies
/// after its XADD of the row, before marking it; D2, registered before, is started once the
/// explorer sees D1 gone (the next polling round is a step like any other: what matters is
/// which of its steps come before or after the consumers'), and runs until the schedule is over.
async fn dispatcher_processes_controlled(
    c: &crate::explore::Control,
    ctx: &RunContext<'_>,
    mut cfg: DispatcherConfig,
    sink: mpsc::UnboundedSender<RawEvent>,
    timers: crate::explore::timer::Timers,
) -> Result<(), Error> {
    let (first, next) = (Actor::Dispatcher(1), Actor::Dispatcher(2));
    let mut urls = Vec::new();
    for actor in [first, next] {
        urls.push(c.endpoints(actor, &ctx.client_name(actor), &ctx.key_prefix()).await?);
        c.poller(actor);
    }
    c.dormant(next, first);
    c.set_timers(timers);
    let mut children = Vec::new();
    for (actor, urls) in [first, next].into_iter().zip(urls) {
        (cfg.env.redis_url, cfg.env.pg_config) = (urls.redis_url, urls.pg_url);
        let mut child = ctx.spawn(&RoleConfig::of(&cfg.clone()), sink.clone())?;
        c.watch_exit(actor, child.exit_check());
        if actor == first {
            c.begin();
            // Done (status 0) or died unplanned: no one takes over.
            let took_over = tokio::select! {
                planned = child.wait() => planned == Some(true),
                _ = c.over() => {
                    child.stop().await;
                    return Ok(());
                }
            };
            // It has exited (and its watcher is done): nothing to stop.
            if !took_over {
                break;
            }
        } else {
            children.push(child);
        }
        cfg.index += 1;
        cfg.may_crash = false;
        cfg.first_round_ns = None;
    }
    c.over().await;
    for child in children {
        child.stop().await;
    }
    Ok(())
}

/// Under the explorer: every dispatcher steps when the explorer says; one that found nothing
/// left to publish is finished, and the run lasts until the schedule is over (a schedule may
/// end while a dispatcher's statement is still held: then it is over too).
async fn dispatch_controlled(
    c: &crate::explore::Control,
    tasks: Vec<Dispatcher>,
    t0_ns: u64,
    timers: crate::explore::timer::Timers,
) -> Result<(), Error> {
    c.set_timers(timers);
    c.begin();
    let runs = tasks.into_iter().map(|mut d| async move {
        let done = d.run(t0_ns).await;
        c.finished(Actor::Dispatcher(d.index));
        done
    });
    tokio::select! {
        all = futures::future::join_all(runs) => all.into_iter().collect::<Result<Vec<()>, Error>>()?,
        _ = c.over() => return Ok(()),
    };
    c.over().await;
    Ok(())
}
