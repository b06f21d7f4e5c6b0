//! The stream lab of seed 001: a producer publishes events to a stream (faults on schedule),
//! consumer processes in one group apply them with a strategy, and each order must end in
//! the status of its last business event. Most labs are this kind with other keys: `lock`,
//! `cas`, `reorder`, `p2`, `shard`, `fanout`, `reorder-buffer`, `state-event`, `redelivery`,
//! `upsert`.

use crate::checker::fates::Intended;
use crate::checker::RunVerdict;
use crate::error::Error;
use crate::fault::Fault;
use crate::labs::ordering::race_lines::{self, LockFirst, RaceRun, TakenBy};
use crate::labs::ordering::redelivery;
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Needs, Piece, Present, RunContext, RunNotes, RunOutcome,
    RunView, TimelineDisplay,
};
use crate::lang::{pick, Lang};
use crate::order_document::Document;
use crate::orders::{self};
use crate::roles::claimer::ReaperSpec;
use crate::timeline::{Event, EventKind};
use serde::{Deserialize, Serialize};

use crate::labs::order_stream::{self, *};
pub use crate::labs::order_stream::{StreamObserved, StreamSpec};

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
        order_stream::validate(self)
    }

    fn needs(&self) -> Needs {
        Needs { worker_command: self.worker.as_ref().map(|w| w.command.clone()), ..Needs::default() }
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<StreamObserved>, Error> {
        order_stream::run(self, ctx).await
    }

    fn explorable(&self) -> Result<(), String> {
        order_stream::explorable(self)
    }
}

impl Judge for StreamSpec {
    type Observed = StreamObserved;
    type Facts = StreamFacts;

    fn faults(&self, _observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        let own = self.faults.iter().cloned();
        own.chain(self.worker.iter().flat_map(|w| w.faults.clone())).collect()
    }

    fn judge(&self, run: &RunView<'_, StreamObserved>) -> RunVerdict {
        order_stream::judge(self, run)
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
            redelivery: (!self.faults.is_empty() || self.reaper.is_some()).then(|| redelivery_facts(run.events)),
        }
    }

    fn intended(&self) -> Option<Vec<Intended>> {
        // What a worker from a command line wrote is judged by the final rows: ordlab does not
        // read its SQL as its own consumer's writes, so it cannot say which event took effect.
        if self.worker.is_some() {
            return None;
        }
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
        match &self.worker {
            Some(w) => parts.push(crate::tr!(lang, "worker: `{}`", "worker: `{}`", w.shown())),
            None => parts.push(self.strategy.describe(lang)),
        }
        parts.extend(self.faults.iter().map(|f| crash_phrase(f, lang)));
        parts.extend(self.reaper.as_ref().map(|r| reaper_phrase(r, lang)));
        parts.extend(publish_fault_phrases(&self.events, lang));
        parts.join("; ")
    }

    fn approach(&self) -> String {
        if let Some(w) = &self.worker {
            return w.shown();
        }
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
        if self.worker.is_some() {
            after.extend(Line::client_libraries(run.events, lang));
        }
        if many && self.orders().len() <= LISTED_ORDERS {
            after.push(last_writes(run.events, lang));
        }
        RunNotes { heading: Some(stream_heading(&run.observed.stream, self.shards, many)), after }
    }
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

/// A consumer's fault in words: a kill right after a receive as the lab has always said it.
fn crash_phrase(f: &Fault, lang: Lang) -> String {
    use crate::fault::{Action, Target, Trigger};
    let Trigger::Event { event, job, .. } = &f.trigger else { return f.label().get(lang).to_string() };
    if event != "received" || f.action != Action::Kill {
        return f.label().get(lang).to_string();
    }
    let at = match (job, f.count.nth, lang) {
        (Some(t), _, _) => t.clone(),
        (None, n, Lang::Vi) => format!("entry thứ {n}"),
        (None, n, Lang::En) => format!("entry no. {n}"),
    };
    let consumer = match f.target {
        Target::Process(crate::timeline::Actor::Consumer(i)) => Some(i),
        _ => None,
    };
    match consumer {
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
    crate::tr!(
        lang,
        "reaper: XAUTOCLAIM min-idle {idle} ms, every {poll} ms",
        "reaper: XAUTOCLAIM min-idle {idle} ms, mỗi {poll} ms"
    )
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
    let parts: Vec<Line> =
        last.iter().map(|(o, t)| Line::text(format!("#{o} t=")).and(Piece::Ms((t + 500) / 1000))).collect();
    Line::text(format!("{}: ", pick(lang, "last write per order", "lần ghi cuối theo đơn")))
        .and_line(Line::join(parts, ", "))
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
