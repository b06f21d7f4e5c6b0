//! A stream of order events, as the kinds that publish order events to consumers share it: the
//! spec (events, consumers, strategy, faults), one run through a consumer group, its verdict,
//! and the words and checks every such kind uses. The `stream` kind is this run as a lab;
//! `load`, `outbox`, `failover`, `cluster` and others reuse its parts.
use crate::checker::exclusion;
use crate::checker::fates::{self, Intended};
use crate::checker::final_state::{documents, final_state};
use crate::checker::{health::health, RunVerdict};
use crate::connect;
use crate::error::{Context, Error};
use crate::fault::{Fault, TimeScale};
use crate::handler::order::Strategy;
use crate::labs::consumer_group::{
    drain, drive, drive_workers, read_streams, ConsumerGroup, GroupSpec, Patience, Progress,
};
use crate::labs::{FinalItem, Line, Piece, Present, RunContext, RunOutcome, RunView};
use crate::lang::{pick, Lang};
use crate::order_document::Document;
use crate::orders::{self, EventSpec, OrderRow};
use crate::orders::{HandlerWork, PublishSchedule};
use crate::roles::claimer::ClaimerBy;
use crate::roles::claimer::ReaperSpec;
use crate::roles::command_worker::WorkerCommand;
use crate::roles::patience::{self, PatienceEvent};
use crate::roles::producer::Producer;
use crate::streams::{self, StreamEntry, GROUP};
use crate::timeline::{Actor, Event, EventKind, Job, RawEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// `kind = "stream"` (the default kind).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// Consumer processes in the group, each with its own connections.
    #[serde(default = "one")]
    pub consumers: u32,
    /// Streams the producer routes to by `order mod shards`; consumer i reads shard
    /// (i-1) mod shards. 1 = one stream.
    #[serde(default = "one")]
    pub shards: u32,
    #[serde(default)]
    pub strategy: Strategy,
    /// Injected handler work in ms per event type (before `--time-scale`).
    #[serde(default)]
    pub cost_ms: BTreeMap<String, f64>,
    /// Published in this order, each on its own schedule.
    #[serde(default)]
    pub events: Vec<EventSpec>,
    /// Rows before each run (default: one row per order at version 0).
    #[serde(default)]
    pub initial: Option<Vec<OrderRow>>,
    /// Bytes of state document each event carries (0: events carry only type and version).
    #[serde(default)]
    pub state_bytes: usize,
    /// Faults of ordlab's own consumers, at the events they report: `{ on = "C1", event =
    /// "received", nth = 3 }` (SIGKILL right after its third receive), `{ event = "received",
    /// job = "created" }` (whoever receives `created`), `{ on = "C1", event = "lock_acquired",
    /// action = { pause_ms = 1500 } }`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// The key before `faults`: read so that a saved run still reads, refused in a scenario.
    #[serde(default, rename = "crash", skip_serializing)]
    pub old_crash: Option<serde_json::Value>,
    /// A claimer process that takes over idle pending entries with XAUTOCLAIM.
    #[serde(default)]
    pub reaper: Option<ReaperSpec>,
    /// Consumers from a command line (anyone's program, recorded at the wire) instead of
    /// ordlab's own: `worker = { command = ["python3", "examples/python/consumer.py"] }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerCommand>,
    /// The order in which the consumers start waiting in XREADGROUP (the first gets the first
    /// entry): `[1, 2]`. Default: drawn from the seed, as real consumers come back at any time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_order: Option<Vec<u32>>,
    /// With a worker from a command line: how long (ms, not time-scaled) it may take to get
    /// ready, to make progress, and to be back waiting for work once every entry is
    /// acknowledged, before the run is cut and judged unknown. Default 15 000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patience_ms: Option<f64>,
}

pub(crate) fn one() -> u32 {
    1
}

/// What a stream run left on the servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamObserved {
    /// The streams as XRANGE returned them after the run: the log's own order.
    pub stream: Vec<StreamEntry>,
    pub final_rows: Vec<OrderRow>,
    /// Mean bytes of an entry's fields with the state document, and without it (what a delta
    /// event would carry), on the server's copy; when events carry state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_bytes: Option<(i64, i64)>,
    /// Entries delivered and never acknowledged (XPENDING), when a consumer crashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_after_run: Option<i64>,
    /// Each order's stored document, where the events change documents (P4). Saved as a list
    /// of (order, document) pairs: inside the tagged `Observed`, serde cannot read a map's
    /// integer keys back from JSON's string keys.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "documents_as_pairs")]
    pub documents: Option<BTreeMap<i64, Document>>,
    /// Consumer indices in the order they started waiting in XREADGROUP (longest first),
    /// drawn from the seed: Redis gives the first entry to the first of them.
    #[serde(default)]
    pub waiting_order: Vec<u32>,
}

impl StreamSpec {
    pub fn initial(&self) -> Vec<OrderRow> {
        self.initial.clone().unwrap_or_else(|| orders::default_initial(&self.events))
    }

    pub fn orders(&self) -> Vec<i64> {
        orders::orders_of(&self.initial(), &self.events)
    }

    pub fn work(&self) -> HandlerWork {
        HandlerWork::new(&self.cost_ms, &self.events)
    }

    pub(crate) fn group_spec(&self) -> GroupSpec<'_> {
        GroupSpec {
            consumers: self.consumers,
            shards: self.shards,
            strategy: &self.strategy,
            work: self.work(),
            faults: &self.faults,
            reaper: self.reaper.as_ref(),
            follow_primary: &[],
            worker: self.worker.as_ref(),
            waiting_order: self.waiting_order.as_deref(),
            patience_ms: self.patience_ms,
        }
    }

    /// A generous bound on a run: everything it could wait for, tripled, plus 10 s. Only a
    /// hung run reaches it (its verdict is then unknown).
    pub(crate) fn bound(&self, scale: TimeScale) -> Duration {
        let work = self.work();
        let total_work: f64 = self.events.iter().map(|e| work.cost_ms(&e.job())).sum();
        let publish = self
            .events
            .iter()
            .map(|e| e.at_ms.unwrap_or(0.0) + PublishSchedule(e).last_offset_ms())
            .fold(0.0, f64::max);
        let lock_waits = self.strategy.max_wait_per_event_ms() * self.events.len() as f64;
        scale.duration((total_work + publish + lock_waits) * 3.0) + Duration::from_secs(10)
    }

    /// How long a run with workers from a command line stays quiet, every worker waiting for
    /// work, before it is over with entries unacknowledged: a claimer's min-idle and three of
    /// its polls (it may have one to claim), or a moment.
    pub(crate) fn quiet(&self, scale: TimeScale) -> Duration {
        let claim = self.reaper.as_ref().map_or(0.0, |r| r.min_idle_ms + 3.0 * r.poll_ms);
        scale.duration(claim) + Duration::from_millis(if self.reaper.is_some() { 300 } else { 100 })
    }

    /// The event whose receiver the report names per run (the set-up's first, `#42 created`
    /// with several orders): where two or more consumers wait for a few orders.
    pub(crate) fn raced_event(&self) -> Option<(&EventSpec, String)> {
        let first = self.events.first().filter(|_| self.consumers > 1 && self.orders().len() <= LISTED_ORDERS)?;
        let label = if self.timeline().many_orders {
            format!("#{} {}", first.order, first.event_type)
        } else {
            first.event_type.clone()
        };
        Some((first, label))
    }

    /// The set-up's newest event (highest version): `paid`.
    pub(crate) fn newest_event(&self) -> Option<&EventSpec> {
        self.events.iter().max_by_key(|e| e.version)
    }

    /// Can a lock of `ttl_ms` run out while a job holds it?
    pub(crate) fn lock_may_expire(&self, ttl_ms: u64) -> bool {
        let work = self.work();
        // A consumer paused while it holds the lock (a fault) holds it that much longer.
        let paused = paused_ms(&self.faults);
        self.events.iter().any(|e| work.cost_ms(&e.job()) + paused >= ttl_ms as f64)
    }

    /// What the servers say after the run, before its keys are deleted.
    pub(crate) async fn server_facts(
        &self,
        ctx: &mut RunContext<'_>,
        streams: &[String],
    ) -> Result<(Option<(i64, i64)>, Option<i64>), Error> {
        let sizes = if self.state_bytes > 0 { Some(entry_sizes(&mut ctx.redis, streams).await?) } else { None };
        let pending = if !self.faults.is_empty() || self.reaper.is_some() {
            let mut n = 0;
            for s in streams {
                n += streams::pending_count(&mut ctx.redis, s, GROUP).await?;
            }
            Some(n)
        } else {
            None
        };
        Ok((sizes, pending))
    }
}

/// The set-up's events as the fates checker reads them.
pub(crate) fn intended_of(events: &[EventSpec]) -> Vec<Intended> {
    events.iter().map(|e| Intended { order: e.order, version: e.version, event_type: e.event_type.clone() }).collect()
}

/// Many orders are summarised: listing fifty statuses helps nobody.
pub const LISTED_ORDERS: usize = 5;

pub(crate) fn shard_of(order: i64, shards: u32) -> u32 {
    order.rem_euclid(shards as i64) as u32
}

pub(crate) fn shard_of_actor(actor: crate::timeline::Actor, shards: u32) -> u32 {
    match actor {
        crate::timeline::Actor::Consumer(i) => (i - 1) % shards,
        _ => 0,
    }
}

pub(crate) fn check_consumers(n: u32) -> Result<(), String> {
    if n == 0 {
        return Err("setup.consumers = 0: use at least 1".into());
    }
    Ok(())
}

pub(crate) fn check_costs(cost_ms: &BTreeMap<String, f64>) -> Result<(), String> {
    match cost_ms.iter().find(|(_, c)| !c.is_finite() || **c < 0.0) {
        Some((t, c)) => Err(format!("setup.cost_ms.{t} = {c}: use a duration ≥ 0 in ms")),
        None => Ok(()),
    }
}

pub(crate) fn check_events(events: &[EventSpec]) -> Result<(), String> {
    if events.is_empty() {
        return Err("setup.events is empty: list at least one event to publish".into());
    }
    Ok(())
}

/// `2 consumers in parallel (2 processes)`.
pub(crate) fn consumers_phrase(n: u32, lang: Lang) -> String {
    match (n, lang) {
        (1, Lang::En) => "1 consumer".to_string(),
        (1, Lang::Vi) => "1 consumer duy nhất".to_string(),
        (n, Lang::En) => format!("{n} consumers in parallel ({n} processes)"),
        (n, Lang::Vi) => format!("{n} consumer song song ({n} process)"),
    }
}

/// `created 800 ms, paid 50 ms`, in the order the types first appear; None without work.
pub(crate) fn costs_phrase(cost_ms: &BTreeMap<String, f64>, events: &[EventSpec]) -> Option<String> {
    if !cost_ms.values().any(|c| *c > 0.0) {
        return None;
    }
    let mut types: Vec<&str> = Vec::new();
    for e in events {
        if !types.contains(&e.event_type.as_str()) {
            types.push(&e.event_type);
        }
    }
    let work = HandlerWork::new(cost_ms, &[]);
    Some(types.iter().map(|t| format!("{t} {} ms", work.of_type(t))).collect::<Vec<_>>().join(", "))
}

pub(crate) fn publish_fault_phrases(events: &[EventSpec], lang: Lang) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.fail_attempts > 0)
        .map(|e| {
            let (t, n, r, b) = (&e.event_type, e.fail_attempts, e.retry_ms, e.backoff);
            crate::tr!(
                lang,
                "publish {t} fails {n}× (retry {r} ms, ×{b})",
                "publish {t} lỗi {n} lần (retry {r} ms, x{b})"
            )
        })
        .collect()
}

/// `paid`, `#42 paid, #43 paid`, or `each order's last event` for many orders.
pub(crate) fn expected_label(events: &[EventSpec], lang: Lang) -> String {
    let want = orders::expected_statuses(events);
    if want.len() > LISTED_ORDERS {
        return pick(lang, "each order's last event", "sự kiện cuối của từng đơn").to_string();
    }
    if want.len() == 1 {
        return want.values().next().cloned().unwrap_or_default();
    }
    want.iter().map(|(o, s)| format!("#{o} {s}")).collect::<Vec<_>>().join(", ")
}

/// One item per row, with what it should have been where it differs.
pub(crate) fn order_items(expected: &BTreeMap<i64, String>, rows: &[OrderRow]) -> Vec<FinalItem> {
    rows.iter()
        .map(|r| FinalItem {
            order: Some(r.order),
            subject: format!("#{}", r.order),
            value: r.status.clone(),
            should_be: expected.get(&r.order).filter(|want| **want != r.status).cloned(),
        })
        .collect()
}

/// `stream: <id> created (v=1), <id> paid (v=2)`, one list per shard.
pub(crate) fn stream_heading(stream: &[StreamEntry], shards: u32, many: bool) -> Line {
    let lists: Vec<Line> = (0..shards)
        .map(|k| {
            let entries: Vec<Line> = stream
                .iter()
                .filter(|s| s.shard == k)
                .map(|s| {
                    Line(vec![Piece::EntryId(s.entry_id.clone()), Piece::Text(format!(" {}", job_label(&s.job, many)))])
                })
                .collect();
            let list = Line::join(entries, ", ");
            if shards > 1 {
                Line::text(format!("s{k}: ")).and_line(list)
            } else {
                list
            }
        })
        .collect();
    Line::text("stream: ").and_line(Line::join(lists, "; "))
}

/// A job as the timeline names it: with its order when the lab has several.
pub(crate) fn job_label(j: &Job, many_orders: bool) -> String {
    if many_orders {
        format!("#{} {j}", j.order)
    } else {
        j.to_string()
    }
}

/// Where publishing failed: per order, from its first publish attempt to its last event in
/// the stream (`#42 +420 ms`). None when every publish succeeded first time.
pub(crate) fn publish_delays(events: &[Event], lang: Lang) -> Option<Line> {
    if !events.iter().any(|e| matches!(e.kind, EventKind::PublishFailed { .. })) {
        return None;
    }
    let mut spans: Vec<(i64, i64, i64)> = Vec::new(); // (order, first try, last published), in µs
    for e in events {
        let (order, published) = match &e.kind {
            EventKind::Published { job, .. } => (job.order, true),
            EventKind::PublishFailed { job, .. } => (job.order, false),
            _ => continue,
        };
        match spans.iter_mut().find(|s| s.0 == order) {
            Some(s) => {
                s.1 = s.1.min(e.t_us);
                if published {
                    s.2 = s.2.max(e.t_us);
                }
            }
            None => spans.push((order, e.t_us, if published { e.t_us } else { i64::MIN })),
        }
    }
    let parts: Vec<Line> = spans
        .iter()
        .map(|(o, first, last)| match *last {
            i64::MIN => Line::text(format!("#{o} never")),
            last => Line::text(format!("#{o} +")).and(Piece::Ms((last - first + 500) / 1000)),
        })
        .collect();
    let label = pick(
        lang,
        "publish delay (first try → last event in the stream)",
        "độ trễ publish (lần thử đầu → sự kiện cuối vào stream)",
    );
    Some(Line::text(format!("{label}: ")).and_line(Line::join(parts, ", ")))
}

/// Ideal end of a run in ms: each consumer does its injected work back to back, starting each
/// job no earlier than its scheduled publish time; the largest end over consumers.
pub fn critical_path_ms(specs: &[EventSpec], work: &HandlerWork, events: &[Event], scale: f64) -> f64 {
    use std::collections::HashMap;
    let mut publish_ms: HashMap<&str, f64> = HashMap::new();
    for e in events {
        if let EventKind::Published { entry_id, job, attempt } = &e.kind {
            let spec = specs
                .iter()
                .find(|s| s.order == job.order && s.event_type == job.event_type && s.version == job.version);
            let at = spec.map(|s| {
                let first = s.at_ms.unwrap_or(0.0);
                if *attempt > 1 {
                    first + PublishSchedule(s).retry_offset_ms(*attempt)
                } else {
                    first
                }
            });
            publish_ms.insert(entry_id, at.unwrap_or(0.0) * scale);
        }
    }
    let mut free_at: HashMap<crate::timeline::Actor, f64> = HashMap::new();
    for e in events {
        if let EventKind::Received { entry_id, job, .. } = &e.kind {
            let ready = publish_ms.get(entry_id.as_str()).copied().unwrap_or(0.0);
            let start = free_at.get(&e.actor).copied().unwrap_or(0.0).max(ready);
            free_at.insert(e.actor, start + work.cost_ms(job) * scale);
        }
    }
    free_at.values().copied().fold(0.0, f64::max)
}

/// Mean bytes of an entry's fields, with its state document and without it.
async fn entry_sizes(conn: &mut redis::aio::MultiplexedConnection, streams: &[String]) -> Result<(i64, i64), Error> {
    let (mut with_state, mut delta, mut n) = (0usize, 0usize, 0usize);
    for s in streams {
        let reply: redis::streams::StreamRangeReply =
            redis::cmd("XRANGE").arg(s).arg("-").arg("+").query_async(conn).await.context("XRANGE")?;
        for e in &reply.ids {
            for (field, value) in &e.map {
                let len = field.len() + redis::from_redis_value_ref::<String>(value).map(|v| v.len()).unwrap_or(0);
                with_state += len;
                if field != "state" {
                    delta += len;
                }
            }
            n += 1;
        }
    }
    let mean = |x: usize| x.checked_div(n).unwrap_or(0) as i64;
    Ok((mean(with_state), mean(delta)))
}

/// `Option<BTreeMap<i64, Document>>` as `[[order, document], …]` in JSON.
mod documents_as_pairs {
    use crate::order_document::Document;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(map: &Option<BTreeMap<i64, Document>>, s: S) -> Result<S::Ok, S::Error> {
        map.as_ref().map(|m| m.iter().collect::<Vec<_>>()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<i64, Document>>, D::Error> {
        Ok(Option::<Vec<(i64, Document)>>::deserialize(d)?.map(|pairs| pairs.into_iter().collect()))
    }
}

/// ordlab's own consumers take faults at the events they report, and only a kill or a pause.
fn check_consumer_faults(faults: &[Fault], consumers: u32) -> Result<(), String> {
    use crate::fault::{Action, Target, Trigger};
    for f in faults {
        match f.target {
            Target::Process(crate::timeline::Actor::Consumer(i)) if !(1..=consumers).contains(&i) => {
                return Err(format!("setup.faults: on = \"C{i}\": use C1 to C{consumers}"));
            }
            Target::Any | Target::Process(crate::timeline::Actor::Consumer(_)) => {}
            _ => return Err("setup.faults: ordlab's own consumers are C1, C2, …: on = \"C1\" (or no on: any)".into()),
        }
        if !matches!(f.trigger, Trigger::Event { .. }) || !matches!(f.action, Action::Kill | Action::PauseMs(_)) {
            return Err("setup.faults: ordlab's own consumers take a kill or a pause at an event they report: { on = \"C1\", event = \"received\", action = \"kill\" }".into());
        }
    }
    Ok(())
}

/// Check a spec before any server starts (the rules the types cannot express).
pub fn validate(spec: &mut StreamSpec) -> Result<(), String> {
    if spec.old_crash.as_ref().is_some_and(|c| !c.is_null()) {
        return Err("setup.crash is now setup.faults: faults = [{ on = \"C1\", event = \"received\", job = \"created\" }] (README: A new fault)".into());
    }
    if let Some(w) = &spec.worker {
        if let Some(n) = w.count {
            spec.consumers = n;
        }
        w.check(spec.consumers)?;
        if !spec.faults.is_empty() {
            return Err("setup.faults is for ordlab's own consumers: with setup.worker, declare setup.worker.faults = [{ worker = 1, command = \"XREADGROUP\", at = \"reply\" }]".into());
        }
    }
    check_consumers(spec.consumers)?;
    if let Some(order) = &spec.waiting_order {
        let mut sorted = order.clone();
        sorted.sort();
        if sorted != (1..=spec.consumers).collect::<Vec<_>>() {
            return Err(format!(
                "setup.waiting_order = {order:?}: list each consumer 1 to {} once, the first to wait first",
                spec.consumers
            ));
        }
    }
    if spec.patience_ms.is_some_and(|p| !p.is_finite() || p <= 0.0) {
        return Err("setup.patience_ms: give a time in ms > 0".into());
    }
    let del = spec
        .strategy
        .spec::<crate::handler::order::lock::LockSpec>()
        .is_some_and(|l| l.release == crate::handler::order::lock::Release::Del);
    if del && spec.worker.is_some() {
        return Err("strategy.release = \"del\" is ordlab's own consumer's: a worker from a command line releases its lock its own way".into());
    }
    if spec.reaper.as_ref().is_some_and(|r| r.by == ClaimerBy::Worker) && spec.worker.is_none() {
        return Err(
            "setup.reaper.by = \"worker\" needs setup.worker: the claimer is a process of the worker's command".into(),
        );
    }
    if spec.shards == 0 {
        return Err("setup.shards = 0: use at least 1".into());
    }
    check_costs(&spec.cost_ms)?;
    check_events(&spec.events)?;
    spec.strategy.check()?;
    check_consumer_faults(&spec.faults, spec.consumers)?;
    spec.initial = Some(spec.initial());
    Ok(())
}

/// Run the order events once through a consumer group: publish them, let the consumers apply
/// them, read what the servers hold.
pub async fn run(spec: &StreamSpec, ctx: &mut RunContext<'_>) -> Result<RunOutcome<StreamObserved>, Error> {
    orders::reset(ctx.pg, &spec.initial()).await?;
    spec.strategy.prepare(ctx.pg).await?;
    let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
    let group = ConsumerGroup::start(ctx, &spec.group_spec(), &tx).await?;
    let (streams, waiting_order) = (group.streams.clone(), group.waiting_order.clone());
    let producer_url = match ctx.control {
        Some(c) => c.endpoints(Actor::Producer, &ctx.client_name(Actor::Producer), &ctx.key_prefix()).await?.redis_url,
        None => ctx.services.redis_url.clone(),
    };
    let producer = Producer {
        redis: connect::redis(&producer_url).await.context("producer connect")?,
        streams: streams.clone(),
        state_bytes: spec.state_bytes,
        scale: ctx.scale,
        sink: Arc::new(tx.clone()),
    };
    // Under the explorer the run takes as long as its schedule: the deadline only catches a fault.
    let bound = if ctx.control.is_some() { std::time::Duration::from_secs(120) } else { spec.bound(ctx.scale) };
    let deadline = tokio::time::Instant::now() + bound;
    let t0_ns = crate::clock::now_ns();
    let (mut raw, mut progress) = (Vec::new(), Progress::default());
    let shards = spec.shards;
    let control = ctx.control;
    let ctx_prefix = ctx.key_prefix();
    let publish = async {
        let Some(c) = control else { return producer.publish_all(&spec.events, t0_ns).await };
        c.set_timers(timers(spec, ctx_prefix.clone()));
        c.begin();
        // A schedule may end while the producer's XADD is still held: then it is over too.
        let published = tokio::select! {
            p = producer.publish_all(&spec.events, t0_ns) => p,
            _ = c.over() => return Ok(()),
        };
        c.finished(Actor::Producer);
        c.over().await;
        published
    };
    let over = |ev: Option<&RawEvent>, done: bool| {
        if let Some(ev) = ev {
            progress.observe(ev, |o| shard_of(o, shards), |a| shard_of_actor(a, shards));
        }
        // Under the explorer, the schedule's end is the run's (the publisher waits for it).
        done && (control.is_some() || progress.over(done, spec.events.len(), spec.consumers, spec.reaper.is_some()))
    };
    let timed_out = if spec.worker.is_some() && control.is_none() {
        // Workers from a command line: judged only once they are back waiting for work.
        let wait = Patience { deadline, patience: patience::of(spec.patience_ms), quiet: spec.quiet(ctx.scale) };
        let mut conn = ctx.redis.clone();
        drive_workers(publish, &mut rx, &mut raw, &group, &mut conn, wait, over).await?.1
    } else {
        drive(publish, &mut rx, &mut raw, deadline, over).await?.is_none()
    };
    group.stop().await;
    drop((tx, producer));
    drain(rx, &mut raw);
    if let Some(c) = control {
        raw.extend(c.take_events());
    }
    let stream = read_streams(&mut ctx.redis, &streams).await?;
    let (entry_bytes, pending_after_run) = spec.server_facts(ctx, &streams).await?;
    ctx.delete_run_keys().await?;
    let final_rows = orders::final_rows(ctx.pg, &spec.orders()).await?;
    let documents = match orders::expected_documents(&spec.events) {
        Some(_) => Some(orders::final_documents(ctx.pg, &spec.orders()).await?),
        None => None,
    };
    let observed = StreamObserved { stream, final_rows, entry_bytes, pending_after_run, documents, waiting_order };
    Ok(RunOutcome { t0_ns, raw, timed_out, observed })
}

/// What keeps a stream lab from being stepped by the explorer: a fan-out reader (its tasks'
/// commands share a connection at once) and a pause. A lock's TTL that
/// can run out mid-job, a claimer's min-idle and a reorder buffer's gap timeout are steps
/// ([`timers`]); a consumer killed at its planned point (after a receive, or at a worker's
/// command boundary) is a step of its own program, and then done.
pub fn explorable(spec: &StreamSpec) -> Result<(), String> {
    if spec.strategy.reads_through_fanout() {
        return Err("a fan-out reader's workers are tasks of one process that write at once on its connection \
                    (a pipeline), which the explorer does not step one command at a time yet"
            .into());
    }
    // A pause stops a process for a span of time, which is no step the explorer releases: the
    // stopped consumer would hold its step until the explorer gives up on it.
    match paused_ms(&spec.faults) > 0.0 {
        true => Err("a consumer's pause (SIGSTOP for a time) is no step the explorer controls yet; \
                     the lock lab's s4c explores a lock that runs out mid-job"
            .into()),
        false => Ok(()),
    }
}

/// How long ordlab's own consumers are paused by the faults, in all (ms, before the scale).
fn paused_ms(faults: &[Fault]) -> f64 {
    faults
        .iter()
        .filter_map(|f| match f.action {
            crate::fault::Action::PauseMs(ms) => Some(ms),
            _ => None,
        })
        .sum()
}

/// The server timers that are steps under the explorer: a lock's TTL where it can run out
/// during the longest job (where it cannot, as in S4a, it never does), and the claimer's
/// min-idle for an entry whose consumer is gone (or any entry, where the min-idle is no longer
/// than the longest job); a reorder buffer's gap timeout, wherever it holds an entry.
fn timers(spec: &StreamSpec, key_prefix: String) -> crate::explore::timer::Timers {
    let longest_job = spec.cost_ms.values().copied().fold(0.0, f64::max);
    let ttl = spec.strategy.lock_ttl_ms().is_some_and(|ttl| (ttl as f64) <= longest_job);
    let idle_group = spec.reaper.as_ref().map(|_| crate::streams::GROUP.to_string());
    let idle_while_working = spec.reaper.as_ref().is_some_and(|r| r.min_idle_ms <= longest_job);
    let block_timeout = spec.strategy.gap_timeout_ms().is_some();
    crate::explore::timer::Timers {
        ttl,
        idle_group,
        idle_while_working,
        idle_once_left: false,
        idle_when_all_wait: false,
        block_timeout,
        leases: None,
        leases_outlasted: Vec::new(),
        due: None,
        polling_streams: Vec::new(),
        key_prefix,
    }
}

/// The verdict of a recorded run: the final state (and documents), the lock's mutual
/// exclusion, and every event's fate.
pub fn judge(spec: &StreamSpec, run: &RunView<'_, StreamObserved>) -> RunVerdict {
    let expected = orders::expected_statuses(&spec.events);
    let mut v = health(run.events, run.timed_out);
    // A worker from a command line cut before it was back waiting for work may not have made
    // its last write: its final state says nothing (the run is unknown, never wrong for it).
    let cut = spec.worker.is_some() && (run.timed_out || PatienceEvent::in_events(run.events));
    if !cut {
        v = v.and(final_state(&expected, &run.observed.final_rows));
        v = v.and(left_pending(spec, run.observed));
    }
    if spec.strategy.lock_ttl_ms().is_some() {
        v = v.and(exclusion::check(run.events).verdict());
    }
    if let Some(want) = orders::expected_documents(&spec.events) {
        v = v.and(documents(&want, run.observed.documents.as_ref().unwrap_or(&BTreeMap::new())));
    }
    v.and(fates::unexpected_verdict(&fates::fates(&intended_of(&spec.events), run.events)))
}

/// Where the worker's own command claims: an entry still pending after the run was delivered
/// and never handled to the end, and its claimer did not take it over.
fn left_pending(spec: &StreamSpec, observed: &StreamObserved) -> RunVerdict {
    let mut v = RunVerdict::right();
    let claims = spec.worker.is_some() && spec.reaper.as_ref().is_some_and(|r| r.by == ClaimerBy::Worker);
    if let Some(n) = observed.pending_after_run.filter(|n| claims && *n > 0) {
        let idle = spec.reaper.as_ref().map_or(0.0, |r| r.min_idle_ms);
        v.add(
            crate::checker::Verdict::Wrong,
            format!(
                "{n} {} left pending after the run: delivered, never acknowledged, and not taken over by the worker's claimer (idle over {idle} ms)",
                if n == 1 { "entry" } else { "entries" }
            ),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Actor;

    fn ev(t_us: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us, actor, kind }
    }

    fn s1_run() -> Vec<Event> {
        let c1 = Actor::Consumer(1);
        let job = |t: &str, v| Job::new(42, t, v);
        vec![
            ev(-500, c1, EventKind::Ready),
            ev(0, Actor::Producer, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
            ev(300, c1, EventKind::Received { entry_id: "1-0".into(), job: job("created", 1), deliveries: None }),
            ev(400, Actor::Producer, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
            ev(805_000, c1, EventKind::Acked { entry_id: "1-0".into() }),
            ev(805_100, c1, EventKind::Received { entry_id: "1-1".into(), job: job("paid", 2), deliveries: None }),
            ev(858_000, c1, EventKind::Acked { entry_id: "1-1".into() }),
        ]
    }

    #[test]
    fn one_consumer_does_both_jobs_back_to_back() {
        let specs = [EventSpec::new(42, "created", 1), EventSpec::new(42, "paid", 2)];
        let work = HandlerWork::new(&BTreeMap::from([("created".into(), 800.0), ("paid".into(), 50.0)]), &specs);
        assert_eq!(critical_path_ms(&specs, &work, &s1_run(), 1.0), 850.0);
        assert_eq!(critical_path_ms(&specs, &work, &s1_run(), 0.5), 425.0);
    }
}
