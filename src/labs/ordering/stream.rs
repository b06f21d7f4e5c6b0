//! The stream lab of seed 001: a producer publishes events to a stream (faults on schedule),
//! consumer processes in one group apply them with a strategy, and each order must end in
//! the status of its last business event. Most labs are this kind with other keys: `lock`,
//! `cas`, `reorder`, `p2`, `shard`, `fanout`, `reorder-buffer`, `state-event`, `redelivery`,
//! `upsert`.

use crate::labs::consumer_group::{drain, drive, read_streams, ConsumerGroup, GroupSpec, Progress};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
    TimelineDisplay,
};
use crate::labs::ordering::race_lines::{self, LockFirst, RaceRun, TakenBy};
use crate::checker::fates::{self, Intended};
use crate::checker::final_state::{documents, final_state};
use crate::checker::{health::health, RunVerdict};
use crate::labs::ordering::{exclusion, redelivery};
use crate::order_document::Document;
use crate::connect;
use crate::error::{Context, Error};
use crate::fault::{CrashSpec, HandlerWork, PublishSchedule, TimeScale};
use crate::orders::{self, EventSpec, OrderRow};
use crate::lang::{pick, Lang};
use crate::roles::claimer::ReaperSpec;
use crate::roles::producer::Producer;
use crate::handler::order::Strategy;
use crate::streams::{self, StreamEntry, GROUP};
use crate::timeline::{Event, EventKind, Job, RawEvent};
use tokio::sync::mpsc;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

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
    /// A consumer that kills itself (SIGKILL) at a named point.
    #[serde(default)]
    pub crash: Option<CrashSpec>,
    /// A claimer process that takes over idle pending entries with XAUTOCLAIM.
    #[serde(default)]
    pub reaper: Option<ReaperSpec>,
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

    fn group_spec(&self) -> GroupSpec<'_> {
        GroupSpec {
            consumers: self.consumers,
            shards: self.shards,
            strategy: &self.strategy,
            work: self.work(),
            crash: self.crash.as_ref(),
            reaper: self.reaper.as_ref(),
            follow_primary: &[],
        }
    }

    /// A generous bound on a run: everything it could wait for, tripled, plus 10 s. Only a
    /// hung run reaches it (its verdict is then unknown).
    fn bound(&self, scale: TimeScale) -> Duration {
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

    /// The event whose receiver the report names per run (the set-up's first, `#42 created`
    /// with several orders): where two or more consumers wait for a few orders.
    fn raced_event(&self) -> Option<(&EventSpec, String)> {
        let first = self.events.first().filter(|_| self.consumers > 1 && self.orders().len() <= LISTED_ORDERS)?;
        let label = if self.timeline().many_orders {
            format!("#{} {}", first.order, first.event_type)
        } else {
            first.event_type.clone()
        };
        Some((first, label))
    }

    /// The set-up's newest event (highest version): `paid`.
    fn newest_event(&self) -> Option<&EventSpec> {
        self.events.iter().max_by_key(|e| e.version)
    }

    /// Can a lock of `ttl_ms` run out while a job holds it?
    fn lock_may_expire(&self, ttl_ms: u64) -> bool {
        let work = self.work();
        self.events.iter().any(|e| work.cost_ms(&e.job()) >= ttl_ms as f64)
    }

    /// What the servers say after the run, before its keys are deleted.
    async fn server_facts(
        &self,
        ctx: &mut RunContext<'_>,
        streams: &[String],
    ) -> Result<(Option<(i64, i64)>, Option<i64>), Error> {
        let sizes = if self.state_bytes > 0 { Some(entry_sizes(&mut ctx.redis, streams).await?) } else { None };
        let pending = if self.crash.is_some() || self.reaper.is_some() {
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

/// What a stream run measured; every figure is the same in every run of the variant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamFacts {
    /// Bytes of one stream entry that carries the order's state (where the lab measures it).
    pub entry_bytes: Option<i64>,
    /// How many bytes more than the same entry without the state.
    pub delta_entry_bytes: Option<i64>,
    /// Entries still pending in the group after the run (where the lab counts them).
    pub pending_after_run: Option<i64>,
    /// Redelivery, where consumers crash or a reaper claims.
    pub redelivery: Option<RedeliveryFacts>,
}

/// Entries delivered again after a crash or a claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedeliveryFacts {
    /// Entries received again under the same ID.
    pub redelivered_same_id: i64,
    /// The highest delivery count a claim reported, if any did.
    pub claimed_delivery_count: Option<i64>,
    /// Entries published and never received.
    pub never_delivered: i64,
}

impl Facts for StreamFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = Vec::new();
        rows.extend(self.entry_bytes.map(|n| FactRow::stable("entry_bytes", n)));
        rows.extend(self.delta_entry_bytes.map(|n| FactRow::stable("delta_entry_bytes", n)));
        rows.extend(self.pending_after_run.map(|n| FactRow::stable("pending_after_run", n)));
        if let Some(r) = &self.redelivery {
            rows.push(FactRow::stable("redelivered_same_id", r.redelivered_same_id));
            rows.extend(r.claimed_delivery_count.map(|n| FactRow::stable("claimed_delivery_count", n)));
            rows.push(FactRow::stable("never_delivered", r.never_delivered));
        }
        rows
    }
}

impl LabProcedure for StreamSpec {
    fn validate(&mut self) -> Result<(), String> {
        check_consumers(self.consumers)?;
        if self.shards == 0 {
            return Err("setup.shards = 0: use at least 1".into());
        }
        check_costs(&self.cost_ms)?;
        check_events(&self.events)?;
        self.strategy.check()?;
        if let Some(i) = self.crash.as_ref().and_then(|c| c.consumer) {
            if !(1..=self.consumers).contains(&i) {
                return Err(format!("setup.crash.consumer = {i}: use 1 to {}", self.consumers));
            }
        }
        self.initial = Some(self.initial());
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<StreamObserved>, Error> {
        orders::reset(ctx.pg, &self.initial()).await?;
        self.strategy.prepare(ctx.pg).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let group = ConsumerGroup::start(ctx, &self.group_spec(), &tx).await?;
        let (streams, waiting_order) = (group.streams.clone(), group.waiting_order.clone());
        let producer = Producer {
            redis: connect::redis(&ctx.services.redis_url).await.context("producer connect")?,
            streams: streams.clone(),
            state_bytes: self.state_bytes,
            scale: ctx.scale,
            sink: Arc::new(tx.clone()),
        };
        let deadline = tokio::time::Instant::now() + self.bound(ctx.scale);
        let t0_ns = crate::clock::now_ns();
        let (mut raw, mut progress) = (Vec::new(), Progress::default());
        let shards = self.shards;
        let publish = producer.publish_all(&self.events, t0_ns);
        let finished = drive(publish, &mut rx, &mut raw, deadline, |ev, done| {
            if let Some(ev) = ev {
                progress.observe(ev, |o| shard_of(o, shards), |a| shard_of_actor(a, shards));
            }
            progress.over(done, self.events.len(), self.consumers, self.reaper.is_some())
        })
        .await?;
        group.stop().await;
        drop((tx, producer));
        drain(rx, &mut raw);
        let stream = read_streams(&mut ctx.redis, &streams).await?;
        let (entry_bytes, pending_after_run) = self.server_facts(ctx, &streams).await?;
        ctx.delete_run_keys().await?;
        let final_rows = orders::final_rows(ctx.pg, &self.orders()).await?;
        let documents = match orders::expected_documents(&self.events) {
            Some(_) => Some(orders::final_documents(ctx.pg, &self.orders()).await?),
            None => None,
        };
        let observed = StreamObserved { stream, final_rows, entry_bytes, pending_after_run, documents, waiting_order };
        Ok(RunOutcome { t0_ns, raw, timed_out: finished.is_none(), observed })
    }
}

impl Judge for StreamSpec {
    type Observed = StreamObserved;
    type Facts = StreamFacts;

    fn judge(&self, run: &RunView<'_, StreamObserved>) -> RunVerdict {
        let expected = orders::expected_statuses(&self.events);
        let mut v = health(run.events, run.timed_out).and(final_state(&expected, &run.observed.final_rows));
        if self.strategy.lock_ttl_ms().is_some() {
            v = v.and(exclusion::check(run.events).verdict());
        }
        if let Some(want) = orders::expected_documents(&self.events) {
            v = v.and(documents(&want, run.observed.documents.as_ref().unwrap_or(&BTreeMap::new())));
        }
        v.and(fates::unexpected_verdict(&fates::fates(&intended_of(&self.events), run.events)))
    }

    fn final_state(&self, observed: &StreamObserved) -> Vec<FinalItem> {
        order_items(&orders::expected_statuses(&self.events), &observed.final_rows)
    }

    fn facts(&self, run: &RunView<'_, StreamObserved>) -> StreamFacts {
        let (entry_bytes, delta_entry_bytes) = run.observed.entry_bytes.unzip();
        StreamFacts {
            entry_bytes,
            delta_entry_bytes,
            pending_after_run: run.observed.pending_after_run,
            redelivery: (self.crash.is_some() || self.reaper.is_some()).then(|| redelivery_facts(run.events)),
        }
    }

    fn intended(&self) -> Option<Vec<Intended>> {
        Some(intended_of(&self.events))
    }

    fn critical_path_ms(&self, events: &[Event], scale: f64) -> Option<f64> {
        let ms = critical_path_ms(&self.events, &self.work(), events, scale);
        (ms > 0.0).then_some(ms)
    }
}

impl Present for StreamSpec {
    fn describe(&self, lang: Lang) -> String {
        let mut parts = vec![consumers_phrase(self.consumers, lang)];
        if self.shards > 1 {
            let n = self.shards;
            parts.push(crate::tr!(lang, "{n} shards by order id", "{n} shard theo mã đơn"));
        }
        parts.extend(costs_phrase(&self.cost_ms, &self.events));
        if self.state_bytes > 0 {
            let b = self.state_bytes;
            parts.push(crate::tr!(lang, "events carry a {b} B state document", "event mang tài liệu trạng thái {b} B"));
        }
        parts.push(self.strategy.describe(lang));
        parts.extend(self.crash.as_ref().map(|c| crash_phrase(c, lang)));
        parts.extend(self.reaper.as_ref().map(|r| reaper_phrase(r, lang)));
        parts.extend(publish_fault_phrases(&self.events, lang));
        parts.join("; ")
    }

    fn approach(&self) -> String {
        if self.shards > 1 {
            format!("{} shards, {}", self.shards, self.strategy.short())
        } else if self.consumers == 1 {
            format!("1 consumer, {}", self.strategy.short())
        } else {
            self.strategy.short()
        }
    }

    fn wrong_means(&self, lang: Lang) -> String {
        if let Some(docs) = orders::expected_documents(&self.events) {
            let want: Vec<String> = docs.iter().map(|(o, d)| format!("#{o} {}", document_summary(d))).collect();
            let want = want.join("; ");
            return crate::tr!(lang, "wrong final document (not {want})", "SAI tài liệu cuối (không phải {want})");
        }
        let expected = expected_label(&self.events, lang);
        crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay {
            shows_publishing: self.events.iter().any(|e| e.at_ms.is_some() || e.fail_attempts > 0),
            many_orders: self.orders().len() > 1,
            // With a lock, each consumer's lines are fixed by the seed (it received its event, took
            // the lock, wrote, released); who goes first is the race.
            per_process_stable: self.strategy.lock_ttl_ms().is_some(),
            ..TimelineDisplay::default()
        }
    }

    fn per_run_lines(&self, runs: &[RunView<'_, StreamObserved>], lang: Lang) -> Vec<Line> {
        let runs = race_runs(runs);
        let mut lines = Vec::new();
        if let Some((first, label)) = self.raced_event() {
            lines.push(TakenBy::new(&runs, first.order, first.version, &label).line(lang));
        }
        if let (Some(ttl_ms), Some(last)) = (self.strategy.lock_ttl_ms(), self.newest_event()) {
            lines.push(LockFirst::new(&runs, &last.event_type).line(lang));
            lines.push(race_lines::exclusion_line(&runs, self.lock_may_expire(ttl_ms), lang));
        }
        lines
    }

    fn summary_note(&self, runs: &[RunView<'_, StreamObserved>]) -> Option<String> {
        let runs = race_runs(runs);
        let (first, label) = self.raced_event()?;
        let mut note = TakenBy::new(&runs, first.order, first.version, &label).sentence(Lang::En);
        if note.is_empty() {
            return None;
        }
        if let (Some(_), Some(last)) = (self.strategy.lock_ttl_ms(), self.newest_event()) {
            note = format!("{note}; {}", LockFirst::new(&runs, &last.event_type).sentence(Lang::En));
        }
        Some(note)
    }

    fn notes(&self, run: &RunView<'_, StreamObserved>, lang: Lang) -> RunNotes {
        let many = self.orders().len() > 1;
        let mut after = Vec::new();
        if run.observed.waiting_order.len() > 1 {
            after.push(race_lines::waiting_line(&run.observed.waiting_order, lang));
        }
        for (order, doc) in run.observed.documents.iter().flatten() {
            after.push(document_line(*order, doc, lang));
        }
        after.extend(publish_delays(run.events, lang));
        if many && self.orders().len() <= LISTED_ORDERS {
            after.push(last_writes(run.events, lang));
        }
        RunNotes { heading: Some(stream_heading(&run.observed.stream, self.shards, many)), after }
    }
}

/// The set-up's events as the fates checker reads them.
pub(crate) fn intended_of(events: &[EventSpec]) -> Vec<Intended> {
    events.iter().map(|e| Intended { order: e.order, version: e.version, event_type: e.event_type.clone() }).collect()
}

fn race_runs<'a>(runs: &[RunView<'a, StreamObserved>]) -> Vec<RaceRun<'a>> {
    runs.iter().map(|r| r.events).collect()
}

/// `paid, book 2500 + pen 500 = 3000`.
fn document_summary(doc: &Document) -> String {
    let items: Vec<String> = doc.items.iter().map(|(name, cents)| format!("{name} {cents}")).collect();
    let items = if items.is_empty() { "-".to_string() } else { items.join(" + ") };
    format!("{}, {items} = {}", doc.status, doc.total)
}

/// `stored document #42: paid, book 2500 + pen 500 = 3000`.
fn document_line(order: i64, doc: &Document, lang: Lang) -> Line {
    let label = pick(lang, "stored document", "tài liệu đã lưu");
    Line::text(format!("{label} #{order}: {}", document_summary(doc)))
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

fn crash_phrase(c: &CrashSpec, lang: Lang) -> String {
    let at = match (&c.event, c.entries, lang) {
        (Some(t), _, _) => t.clone(),
        (None, n, Lang::Vi) => format!("entry thứ {}", n.unwrap_or(1)),
        (None, n, Lang::En) => format!("entry no. {}", n.unwrap_or(1)),
    };
    match c.consumer {
        Some(i) => crate::tr!(
            lang,
            "C{i} SIGKILLed right after receiving {at}, before XACK",
            "C{i} bị SIGKILL ngay sau khi nhận {at}, trước XACK"
        ),
        None => crate::tr!(
            lang,
            "the consumer that receives {at} is SIGKILLed right after, before XACK",
            "consumer nhận {at} bị SIGKILL ngay sau đó, trước XACK"
        ),
    }
}

fn reaper_phrase(r: &ReaperSpec, lang: Lang) -> String {
    let (idle, poll) = (r.min_idle_ms, r.poll_ms);
    crate::tr!(lang, "reaper: XAUTOCLAIM min-idle {idle} ms, every {poll} ms", "reaper: XAUTOCLAIM min-idle {idle} ms, mỗi {poll} ms")
}

pub(crate) fn publish_fault_phrases(events: &[EventSpec], lang: Lang) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.fail_attempts > 0)
        .map(|e| {
            let (t, n, r, b) = (&e.event_type, e.fail_attempts, e.retry_ms, e.backoff);
            crate::tr!(lang, "publish {t} fails {n}× (retry {r} ms, ×{b})", "publish {t} lỗi {n} lần (retry {r} ms, x{b})")
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
                .map(|s| Line(vec![Piece::EntryId(s.entry_id.clone()), Piece::Text(format!(" {}", job_label(&s.job, many)))]))
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

/// When each order was last written: the head-of-line blocking of a shard shows here.
pub(crate) fn last_writes(events: &[Event], lang: Lang) -> Line {
    let mut last: Vec<(i64, i64)> = Vec::new();
    for e in events {
        if let EventKind::Wrote { order, .. } = &e.kind {
            match last.iter_mut().find(|(o, _)| o == order) {
                Some(x) => x.1 = x.1.max(e.t_us),
                None => last.push((*order, e.t_us)),
            }
        }
    }
    last.sort();
    let parts: Vec<Line> = last.iter().map(|(o, t)| Line::text(format!("#{o} t=")).and(Piece::Ms((t + 500) / 1000))).collect();
    Line::text(format!("{}: ", pick(lang, "last write per order", "lần ghi cuối theo đơn"))).and_line(Line::join(parts, ", "))
}

/// Redelivery read from the timeline: entries the claimer got under an ID a consumer had
/// received, the highest delivery count the server gave it, and entries nobody received.
pub(crate) fn redelivery_facts(events: &[Event]) -> RedeliveryFacts {
    let again = redelivery::redelivered(events);
    RedeliveryFacts {
        redelivered_same_id: again.len() as i64,
        claimed_delivery_count: again.iter().filter_map(|r| r.deliveries).max().map(|max| max as i64),
        never_delivered: redelivery::never_delivered(events) as i64,
    }
}

/// Ideal end of a run in ms: each consumer does its injected work back to back, starting each
/// job no earlier than its scheduled publish time; the largest end over consumers.
pub fn critical_path_ms(specs: &[EventSpec], work: &HandlerWork, events: &[Event], scale: f64) -> f64 {
    use std::collections::HashMap;
    let mut publish_ms: HashMap<&str, f64> = HashMap::new();
    for e in events {
        if let EventKind::Published { entry_id, job, attempt } = &e.kind {
            let spec = specs.iter().find(|s| s.order == job.order && s.event_type == job.event_type && s.version == job.version);
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

#[cfg(test)]
mod tests {
    use crate::labs::ordering::stream::*;
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
