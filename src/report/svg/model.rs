//! The run as lanes of bars and marks, in milliseconds: one lane per process, in the order
//! producer, consumers, dispatchers, SQL sessions, reaper, runner. Pure: events in, lanes out.

use crate::fault::TimeScale;
use crate::labs::{Procedure, RunRecord};
use crate::lang::{pick, Lang};
use crate::report::words::{crash_words, timeline_lines_of, Wording};
use crate::report::Redactor;
pub use crate::timeline::vocabulary::Glyph;
use crate::timeline::vocabulary::{job_mark_label as job_label, Drawing};
use crate::timeline::{Actor, EffectOutcome, Event, EventKind, Job, SqlStatus};
use std::collections::HashMap;

pub struct Mark {
    pub t: f64,
    pub glyph: Glyph,
    pub label: Option<String>,
    /// The step of the lab book's walk-through that shows it (0: shown from the start).
    pub step: u32,
    /// Drawn for an event the run's verdict rests on ([`crate::labs::key_events`]): its
    /// label is the last one a crowded lane leaves out.
    pub key: bool,
}

pub enum BarKind {
    /// Handler work of `ms` milliseconds.
    Work { ms: f64 },
    /// A lock held from acquisition to release, or to its TTL expiry if that came first.
    Lock,
    /// Time the actor still believed it held a lock that had already expired.
    LockExpired,
    /// A SQL statement waiting (for a row lock) before its outcome.
    Wait,
}

pub struct Bar {
    pub t0: f64,
    pub t1: f64,
    pub kind: BarKind,
    /// The step that shows it: the one at or before its start.
    pub step: u32,
}

pub struct Lane {
    pub actor: Actor,
    /// When the process reported ready, if it did.
    pub ready: Option<f64>,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
}

pub struct Timeline {
    pub lanes: Vec<Lane>,
    /// Steps of the walk-through: the text report's timeline lines.
    pub steps: u32,
    /// Axis domain in ms.
    pub start: f64,
    pub end: f64,
}

impl Timeline {
    pub fn has_bar(&self, f: fn(&BarKind) -> bool) -> bool {
        self.lanes.iter().any(|l| l.bars.iter().any(|b| f(&b.kind)))
    }

    pub fn has(&self, g: Glyph) -> bool {
        self.lanes.iter().any(|l| l.marks.iter().any(|m| m.glyph == g))
    }
}

/// Lane order on the page: producer, consumers, dispatchers, SQL sessions, reaper, runner.
fn lane_rank(a: Actor) -> (u8, u32) {
    match a {
        Actor::Producer => (0, 0),
        Actor::Consumer(n) => (1, n),
        Actor::Dispatcher(n) => (2, n),
        Actor::Session(c) => (3, c as u32),
        Actor::Worker(n) => (1, n),
        Actor::Reaper => (4, 0),
        Actor::Scheduler => (4, 1),
        Actor::Sink => (5, 0),
        Actor::Runner => (6, 0),
    }
}

pub fn fmt_ms(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// Which step of the walk-through shows an event: its own line's number if the text report
/// prints it, else the number of lines at or before its time.
struct StepIndex {
    line_of: HashMap<*const Event, u32>,
    /// When each line's event happened, in µs, in line order.
    times: Vec<i64>,
}

impl StepIndex {
    fn new(events: &[Event], procedure: &Procedure) -> StepIndex {
        let wording = Wording { lang: Lang::En, many_orders: procedure.many_orders(), redact: Redactor::NONE };
        let lines = timeline_lines_of(events, procedure, &wording, false);
        let line_of = lines.iter().enumerate().map(|(i, (e, _))| (*e as *const Event, i as u32 + 1)).collect();
        StepIndex { line_of, times: lines.iter().map(|(e, _)| e.t_us).collect() }
    }

    fn of(&self, e: &Event) -> u32 {
        self.line_of.get(&(e as *const Event)).copied().unwrap_or_else(|| self.at(e.t_us as f64 / 1000.0))
    }

    /// Lines at or before `ms`.
    fn at(&self, ms: f64) -> u32 {
        self.times.iter().filter(|t| **t as f64 / 1000.0 <= ms + 1e-9).count() as u32
    }

    /// The first line at or after `ms` (the last line if none is): what happened in between
    /// two lines, and is no line of its own (a lock's TTL running out), shows with the next.
    fn from(&self, ms: f64) -> u32 {
        let before = self.times.iter().filter(|t| (**t as f64 / 1000.0) < ms - 1e-9).count() as u32;
        (before + 1).min(self.times.len() as u32)
    }
}

/// The builder's memory while it walks a run's events.
struct Builder {
    steps: StepIndex,
    /// The step of the event being drawn.
    step: u32,
    /// The event being drawn is a key event.
    key: bool,
    lanes: Vec<Lane>,
    /// Lock taken per actor: (from, TTL) in ms.
    open_locks: HashMap<Actor, (f64, f64)>,
    /// Highest business version applied so far, per order.
    applied: HashMap<i64, i64>,
    /// The job behind each entry ID.
    jobs: HashMap<String, Job>,
    /// SQL race cases present (labels name the case when several).
    sql_cases: usize,
    scale: TimeScale,
    multi_order: bool,
    lang: Lang,
}

/// Server commands kept on a focused slide on either side of a crash or a lab's own step.
const AROUND: usize = 2;

/// A focused slide (a library's hundreds of polls and heartbeats): every event but the server
/// commands, and those only next to a crash or a lab's own step (a family event).
fn around_faults(events: Vec<&Event>) -> Vec<&Event> {
    let is_fault = |e: &Event| matches!(e.kind, EventKind::Crashed { .. } | EventKind::Family(_));
    let commands: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::ServerCommand { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut keep = vec![true; events.len()];
    for &i in &commands {
        keep[i] = false;
    }
    let faults: Vec<usize> = events.iter().enumerate().filter(|(_, e)| is_fault(e)).map(|(i, _)| i).collect();
    for i in faults {
        let before = commands.iter().rev().filter(|&&c| c < i).take(AROUND);
        let after = commands.iter().filter(|&&c| c > i).take(AROUND);
        for &c in before.chain(after) {
            let EventKind::ServerCommand { args, .. } = &events[c].kind else { continue };
            keep[c] = !crate::interposer::is_handshake(args);
        }
    }
    events.into_iter().zip(keep).filter(|(_, k)| *k).map(|(e, _)| e).collect()
}

impl Timeline {
    /// The lanes of `record`'s events; `keys` (indices into its events) are the events its
    /// verdict rests on.
    pub fn build(record: &RunRecord, scale: TimeScale, procedure: &Procedure, lang: Lang, keys: &[usize]) -> Timeline {
        Timeline::of_events(&record.events, scale, procedure, lang, keys)
    }

    /// The lanes of a run's events alone (a run still going on).
    pub fn of_events(all: &[Event], scale: TimeScale, procedure: &Procedure, lang: Lang, keys: &[usize]) -> Timeline {
        let multi_order = procedure.many_orders();
        let key_events: std::collections::HashSet<*const Event> =
            keys.iter().filter_map(|&k| all.get(k)).map(|e| e as *const Event).collect();
        let mut events: Vec<&Event> = all.iter().collect();
        events.sort_by_key(|e| e.t_us);
        if procedure.timeline().focus_on_faults {
            events = around_faults(events);
        }
        let jobs = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Received { entry_id, job, .. } | EventKind::Published { entry_id, job, .. } => {
                    Some((entry_id.clone(), job.clone()))
                }
                _ => None,
            })
            .collect();
        let mut cases: Vec<u32> = events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::SqlSent { case, .. } | EventKind::SqlDone { case, .. } => Some(case),
                _ => None,
            })
            .collect();
        cases.sort_unstable();
        cases.dedup();
        let mut b = Builder {
            steps: StepIndex::new(all, procedure),
            step: 0,
            key: false,
            lanes: Vec::new(),
            open_locks: HashMap::new(),
            applied: HashMap::new(),
            jobs,
            sql_cases: cases.len(),
            scale,
            multi_order,
            lang,
        };
        for e in events {
            b.step = b.steps.of(e);
            b.key = key_events.contains(&(e as *const Event));
            b.event(e);
        }
        b.finish()
    }
}

impl Builder {
    fn lane(&mut self, actor: Actor) -> &mut Lane {
        let idx = match self.lanes.iter().position(|l| l.actor == actor) {
            Some(i) => i,
            None => {
                self.lanes.push(Lane { actor, ready: None, bars: Vec::new(), marks: Vec::new() });
                self.lanes.len() - 1
            }
        };
        &mut self.lanes[idx]
    }

    fn mark(&mut self, actor: Actor, t: f64, glyph: Glyph, label: Option<String>) {
        let (step, key) = (self.step, self.key);
        self.lane(actor).marks.push(Mark { t, glyph, label, step, key });
    }

    fn event(&mut self, e: &Event) {
        let at = e.t_us as f64 / 1000.0;
        let lang = self.lang;
        match &e.kind {
            EventKind::Ready => {
                let lane = self.lane(e.actor);
                lane.ready = Some(lane.ready.map_or(at, |r| r.min(at)));
            }
            EventKind::WorkStarted { ms, .. } => {
                let (t1, step) = (at + ms.max(0.0), self.step);
                self.lane(e.actor).bars.push(Bar { t0: at, t1, kind: BarKind::Work { ms: *ms }, step });
            }
            EventKind::Wrote { entry_id, order, status, version, rows } => {
                self.wrote(e.actor, at, entry_id, *order, status, *version, *rows)
            }
            EventKind::Crashed { .. } => {
                // The crash point's whole name: a long label is wrapped, never shortened.
                let label = crash_words(&e.kind, lang).unwrap_or_default();
                self.mark(e.actor, at, Glyph::Crash, Some(label));
                if let Some((from, ttl)) = self.open_locks.remove(&e.actor) {
                    // Nobody releases a dead process's lock: it lasts until its TTL.
                    self.lock_bar(e.actor, from, from + ttl, ttl);
                }
            }
            EventKind::SqlDone { outcome, waited_ms, status, .. } => {
                self.sql_done(e.actor, at, outcome, *waited_ms, *status)
            }
            EventKind::Acked { .. } => self.mark(e.actor, at, Glyph::Acked, None),
            EventKind::Family(f) => {
                let w = Wording { lang, many_orders: self.multi_order, redact: Redactor::NONE };
                if let Some(d) = crate::labs::VOCABULARIES.describe(f) {
                    self.drawing(e.actor, at, d.drawing(&w));
                }
            }
            other => {
                if let Some((glyph, label)) = self.labelled(other) {
                    self.mark(e.actor, at, glyph, Some(label));
                }
            }
        }
    }

    /// Marks that need no memory of earlier events: a glyph and its label.
    fn labelled(&self, kind: &EventKind) -> Option<(Glyph, String)> {
        let (lang, many) = (self.lang, self.multi_order);
        let t = |en, vi| pick(lang, en, vi);
        let _prefix = |order: i64| if many { format!("#{order} ") } else { String::new() };
        Some(match kind {
            EventKind::Published { job, attempt, .. } if *attempt == 1 => {
                (Glyph::Published, format!("publish {} OK", job_label(job, many)))
            }
            EventKind::Published { job, attempt, .. } => {
                (Glyph::Published, format!("retry #{} {} OK", attempt - 1, job.event_type))
            }
            EventKind::PublishFailed { job, attempt, .. } => {
                let what = if *attempt == 1 {
                    format!("publish {}", job_label(job, many))
                } else {
                    format!("retry #{} {}", attempt - 1, job.event_type)
                };
                (Glyph::Failed, format!("{what} {}", t("FAILED", "LỖI")))
            }
            EventKind::Received { job, deliveries, .. } => {
                let mut label = format!("{} {}", t("received", "nhận"), job_label(job, many));
                if let Some(d) = deliveries.filter(|d| *d > 1) {
                    label.push_str(&format!(" ({} {d})", t("delivery", "lần giao")));
                }
                (Glyph::Received, label)
            }
            EventKind::SqlSent { case, statement, .. } => {
                let case = if self.sql_cases > 1 { format!("{} {case}: ", t("case", "ca")) } else { String::new() };
                (Glyph::SqlSent, format!("{case}{}", statement))
            }
            EventKind::Effect { job, effect, requested_by, outcome, .. } => {
                effect_mark(job, effect, *requested_by, *outcome, lang)
            }
            EventKind::ServerKilled { server, signal } => (Glyph::Crash, format!("{server} {signal}")),
            EventKind::Reconnected { server } => {
                (Glyph::Published, format!("{} {server}", t("→ new primary:", "→ primary mới:")))
            }
            EventKind::ServerCommand { args, reply, error, .. } => {
                let glyph = if *error { Glyph::SqlError } else { Glyph::SqlSent };
                let command = args.first().map(String::as_str).unwrap_or("?");
                (glyph, format!("{command} → {}", whole_tokens(reply)))
            }
            _ => return None,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn wrote(
        &mut self,
        actor: Actor,
        at: f64,
        entry_id: &str,
        order: i64,
        status: &str,
        version: Option<i64>,
        rows: u64,
    ) {
        let t = |en, vi| pick(self.lang, en, vi);
        let prefix = if self.multi_order { format!("#{order} ") } else { String::new() };
        let job_version = self.jobs.get(entry_id).map(|j| j.version);
        let (glyph, label) = if rows == 0 && version.is_some() {
            (Glyph::Stale, format!("{prefix}{status}: {}", t("stale, skipped", "bản cũ, bỏ qua")))
        } else if rows == 0 {
            (Glyph::Stale, format!("{} {prefix}{status} → UPDATE 0", t("wrote", "ghi")))
        } else {
            let newer = self.applied.get(&order).copied();
            let overwrote = matches!((job_version, newer), (Some(v), Some(n)) if v < n);
            if let Some(v) = job_version {
                self.applied.insert(order, newer.map_or(v, |n| n.max(v)));
            }
            if overwrote {
                (
                    Glyph::Overwrote,
                    format!(
                        "{} {prefix}{status}: {}",
                        t("wrote", "ghi"),
                        t("overwrote a newer state", "đè lên trạng thái mới hơn")
                    ),
                )
            } else {
                (Glyph::Wrote, format!("{} {prefix}{status}", t("wrote", "ghi")))
            }
        };
        self.mark(actor, at, glyph, Some(label));
    }

    /// What a family event adds to its lane.
    fn drawing(&mut self, actor: Actor, at: f64, d: Drawing) {
        match d {
            Drawing::Nothing => {}
            Drawing::Mark(glyph, label) => self.mark(actor, at, glyph, Some(label)),
            Drawing::Waited { waited_ms } => {
                let step = self.steps.at(at - waited_ms);
                self.lane(actor).bars.push(Bar { t0: at - waited_ms, t1: at, kind: BarKind::Wait, step });
            }
            Drawing::Held { ttl_ms, label } => {
                self.open_locks.insert(actor, (at, self.scale.ms_ceil(ttl_ms) as f64));
                self.mark(actor, at, Glyph::LockTaken, Some(label));
            }
            Drawing::LetGo { mark } => {
                if let Some((glyph, label)) = mark {
                    self.mark(actor, at, glyph, Some(label));
                }
                if let Some((from, ttl)) = self.open_locks.remove(&actor) {
                    self.lock_bar(actor, from, at, ttl);
                }
            }
            Drawing::Applied { order, version, label } => self.applied(actor, at, order, version, label),
        }
    }

    /// An order's step applied: marked as out of order when a later step of its order was
    /// applied before it.
    fn applied(&mut self, actor: Actor, at: f64, order: i64, version: i64, label: String) {
        let newer = self.applied.get(&order).copied();
        self.applied.insert(order, newer.map_or(version, |n| n.max(version)));
        if newer.is_some_and(|n| n > version) {
            let late = pick(self.lang, "after a later step: out of order", "sau một bước sau nó: sai thứ tự");
            self.mark(actor, at, Glyph::Overwrote, Some(format!("{label} {late}")));
        } else {
            self.mark(actor, at, Glyph::Wrote, Some(label));
        }
    }

    fn sql_done(&mut self, actor: Actor, at: f64, outcome: &str, waited_ms: f64, status: SqlStatus) {
        if waited_ms >= 5.0 {
            let step = self.steps.at(at - waited_ms);
            self.lane(actor).bars.push(Bar { t0: at - waited_ms, t1: at, kind: BarKind::Wait, step });
        }
        let waited = if waited_ms < 5.0 {
            String::new()
        } else {
            format!(" {} {} ms", pick(self.lang, "after waiting", "sau khi chờ"), fmt_ms(waited_ms))
        };
        let glyph = match status {
            SqlStatus::Failed => Glyph::SqlError,
            SqlStatus::Done => Glyph::SqlDone,
        };
        self.mark(actor, at, glyph, Some(format!("→ {outcome}{waited}")));
    }

    /// A lock held from `from` until `to`; if its TTL ran out before `to`, the rest is drawn as
    /// time the holder only believed it had the lock, with the expiry marked.
    fn lock_bar(&mut self, actor: Actor, from: f64, to: f64, ttl: f64) {
        let expiry = from + ttl;
        let label = crate::tr!(self.lang, "lock expired (TTL {} ms)", "lock hết hạn (TTL {} ms)", fmt_ms(ttl));
        let (taken, expired) = (self.steps.at(from), self.steps.from(expiry));
        let lane = self.lane(actor);
        if expiry < to {
            lane.bars.push(Bar { t0: from, t1: expiry, kind: BarKind::Lock, step: taken });
            lane.bars.push(Bar { t0: expiry, t1: to, kind: BarKind::LockExpired, step: expired });
            lane.marks.push(Mark { t: expiry, glyph: Glyph::Expired, label: Some(label), step: expired, key: true });
        } else {
            lane.bars.push(Bar { t0: from, t1: to, kind: BarKind::Lock, step: taken });
        }
    }

    /// Locks never released (the run ended first) last until their TTL; lanes in page order;
    /// the axis spans every mark and bar.
    fn finish(mut self) -> Timeline {
        let mut still_open: Vec<(Actor, (f64, f64))> = self.open_locks.drain().collect();
        still_open.sort_by_key(|(a, _)| lane_rank(*a));
        for (actor, (from, ttl)) in still_open {
            self.lock_bar(actor, from, from + ttl, ttl);
        }
        let mut lanes = self.lanes;
        lanes.sort_by_key(|l| lane_rank(l.actor));
        let starts = lanes.iter().flat_map(|l| l.marks.iter().map(|m| m.t).chain(l.bars.iter().map(|b| b.t0)));
        let start = starts.fold(0.0_f64, f64::min);
        let ends =
            lanes.iter().flat_map(|l| l.marks.iter().map(|m| m.t).chain(l.bars.iter().map(|b| b.t1)).chain(l.ready));
        let last = ends.fold(start, f64::max);
        let end = start + ((last - start) * 1.02).max(10.0);
        Timeline { lanes, steps: self.steps.times.len() as u32, start, end }
    }
}

/// A reply as recorded, where the wire cut a long value short (`{"id":"job-1","name":"send_…`),
/// kept to its whole tokens (`{"id":"job-1", …`): a label never ends in a cut word.
pub fn whole_tokens(reply: &str) -> String {
    let Some(kept) = reply.strip_suffix('…').filter(|k| !k.is_empty() && !k.ends_with(' ')) else {
        return reply.to_string();
    };
    match kept.rfind([' ', ',']) {
        Some(at) => format!("{} …", kept[..=at].trim_end()),
        None => "…".to_string(),
    }
}

/// The sink's mark: what the outside party did with one request.
fn effect_mark(job: &str, effect: &str, requested_by: Actor, outcome: EffectOutcome, lang: Lang) -> (Glyph, String) {
    let t = |en: &'static str, vi: &'static str| pick(lang, en, vi);
    let (glyph, what) = match outcome {
        EffectOutcome::Applied => (Glyph::Wrote, t("applied", "đã thực hiện")),
        EffectOutcome::Replayed => (Glyph::Stale, t("replayed, no effect", "trả kết quả cũ, không thực hiện")),
        EffectOutcome::Refused => (Glyph::Failed, t("refused", "bị từ chối")),
    };
    (glyph, format!("{effect} {job} ({requested_by}): {what}"))
}
