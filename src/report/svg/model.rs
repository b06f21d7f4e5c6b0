//! The run as lanes of bars and marks, in milliseconds: one lane per process, in the order
//! producer, consumers, dispatchers, SQL sessions, reaper, runner. Pure: events in, lanes out.

use crate::fault::TimeScale;
use crate::labs::{Procedure, RunRecord};
use crate::lang::{pick, Lang};
use crate::report::words::{timeline_lines, Wording};
use crate::report::Redactor;
use crate::timeline::{Actor, EffectOutcome, Event, EventKind, Job};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Glyph {
    Received,
    Published,
    Failed,
    Wrote,
    Stale,
    Overwrote,
    Crash,
    LockTaken,
    Released,
    Expired,
    SqlSent,
    SqlDone,
    SqlError,
    Outbox,
    OutboxFailed,
    Acked,
}

pub struct Mark {
    pub t: f64,
    pub glyph: Glyph,
    pub label: Option<String>,
    /// The step of the lab book's walk-through that shows it (0: shown from the start).
    pub step: u32,
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

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn job_label(job: &Job, multi_order: bool) -> String {
    if multi_order {
        format!("#{} {} v{}", job.order, job.event_type, job.version)
    } else {
        format!("{} v{}", job.event_type, job.version)
    }
}

fn order_rows(rows: &[i64]) -> String {
    if rows.is_empty() {
        "-".to_string()
    } else {
        rows.iter().map(|r| format!("#{r}")).collect::<Vec<_>>().join(" ")
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
    fn new(record: &RunRecord, procedure: &Procedure) -> StepIndex {
        let wording = Wording { lang: Lang::En, many_orders: procedure.many_orders(), redact: Redactor::NONE };
        let lines = timeline_lines(record, procedure, &wording, false);
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
}

/// The builder's memory while it walks a run's events.
struct Builder {
    steps: StepIndex,
    /// The step of the event being drawn.
    step: u32,
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

impl Timeline {
    pub fn build(record: &RunRecord, scale: TimeScale, procedure: &Procedure, lang: Lang) -> Timeline {
        let multi_order = procedure.many_orders();
        let mut events: Vec<&Event> = record.events.iter().collect();
        events.sort_by_key(|e| e.t_us);
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
            steps: StepIndex::new(record, procedure),
            step: 0,
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
        let step = self.step;
        self.lane(actor).marks.push(Mark { t, glyph, label, step });
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
            EventKind::LockAcquired { tries, ttl_ms, .. } => {
                self.open_locks.insert(e.actor, (at, self.scale.ms_ceil(*ttl_ms) as f64));
                let label = match (lang, *tries) {
                    (Lang::En, 1) => "took lock".to_string(),
                    (Lang::En, n) => format!("took lock after {n} tries"),
                    (Lang::Vi, 1) => "lấy được lock".to_string(),
                    (Lang::Vi, n) => format!("lấy được lock sau {n} lần thử"),
                };
                self.mark(e.actor, at, Glyph::LockTaken, Some(label));
            }
            EventKind::LockReleased { released, .. } => {
                if *released == 0 {
                    let label = pick(
                        lang,
                        "released → 0: expired, not ours",
                        "nhả lock → 0: đã hết hạn, không còn là của mình",
                    );
                    self.mark(e.actor, at, Glyph::Released, Some(label.to_string()));
                }
                if let Some((from, ttl)) = self.open_locks.remove(&e.actor) {
                    self.lock_bar(e.actor, from, at, ttl);
                }
            }
            EventKind::Wrote { entry_id, order, status, version, rows } => {
                self.wrote(e.actor, at, entry_id, *order, status, *version, *rows)
            }
            EventKind::Crashed { planned, detail } => {
                let detail = truncate(detail, 40);
                let label = match (planned, lang) {
                    (true, Lang::En) => format!("CRASHED (injected: {detail})"),
                    (true, Lang::Vi) => format!("CRASH (chủ động: {detail})"),
                    (false, Lang::En) => format!("DIED unexpectedly: {detail}"),
                    (false, Lang::Vi) => format!("chết bất ngờ: {detail}"),
                };
                self.mark(e.actor, at, Glyph::Crash, Some(label));
                if let Some((from, ttl)) = self.open_locks.remove(&e.actor) {
                    // Nobody releases a dead process's lock: it lasts until its TTL.
                    self.lock_bar(e.actor, from, from + ttl, ttl);
                }
            }
            EventKind::SqlDone { outcome, waited_ms, .. } => self.sql_done(e.actor, at, outcome, *waited_ms),
            EventKind::Acked { .. } => self.mark(e.actor, at, Glyph::Acked, None),
            // A read that found nothing: the worker sat blocked on its queues (the seed's
            // `BLOCK 5000` on low shows as a long bar).
            EventKind::QueueRead { got, waited_ms, .. } if *waited_ms >= 1.0 && got.iter().all(|n| *n == 0) => {
                let step = self.steps.at(at - waited_ms);
                self.lane(e.actor).bars.push(Bar { t0: at - waited_ms, t1: at, kind: BarKind::Wait, step });
            }
            EventKind::JobApplied { job, .. } => self.job_applied(e.actor, at, job),
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
        let prefix = |order: i64| if many { format!("#{order} ") } else { String::new() };
        if let Some(mark) = job_mark(kind, lang).or_else(|| cluster_queue_mark(kind, lang, many)) {
            return Some(mark);
        }
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
            EventKind::Inserted { order, status, .. } => {
                (Glyph::Wrote, format!("{} {}{status} (INSERT)", t("wrote", "ghi"), prefix(*order)))
            }
            EventKind::WriteFailed { order, status, .. } => (
                Glyph::Failed,
                format!(
                    "{} {}{status}: {}",
                    t("write", "ghi"),
                    prefix(*order),
                    t("refused (duplicate key), lost", "bị từ chối (trùng khoá), mất")
                ),
            ),
            EventKind::Held { job, waiting_for, .. } => (
                Glyph::Received,
                format!("{} {}, {} v={waiting_for}", t("held", "giữ"), job_label(job, many), t("waiting for", "chờ")),
            ),
            EventKind::Dropped { job, .. } => {
                (Glyph::Stale, format!("{} {}", t("dropped stale", "bỏ bản cũ"), job_label(job, many)))
            }
            EventKind::GapTimeout { order, missing_version, .. } => (
                Glyph::Failed,
                format!("{} #{order} v={missing_version}", t("gap timeout: gave up on", "hết thời gian chờ: bỏ qua")),
            ),
            EventKind::SqlSent { case, statement, .. } => {
                let case = if self.sql_cases > 1 { format!("{} {case}: ", t("case", "ca")) } else { String::new() };
                (Glyph::SqlSent, format!("{case}{}", truncate(statement, 44)))
            }
            EventKind::OutboxRound { round, published, failed, held_back } => {
                outbox_mark(*round, published, failed, held_back, lang)
            }
            EventKind::LagWindow { how } => {
                (Glyph::Failed, format!("{} ({})", t("replica link cut", "cắt link replica"), truncate(how, 40)))
            }
            EventKind::Queued { worker, .. } => (Glyph::Received, format!("→ queue {worker}")),
            EventKind::Effect { job, effect, requested_by, outcome, .. } => {
                effect_mark(job, effect, *requested_by, *outcome, lang)
            }
            EventKind::ServerKilled { server, signal } => (Glyph::Crash, format!("{server} {signal}")),
            EventKind::PriorityJobTaken { job, priority, traced: true, .. } => {
                (Glyph::Received, format!("{} {job} ({priority})", t("took", "lấy")))
            }
            EventKind::PhaseStarted { plan } => {
                (Glyph::Published, crate::timeline::phase_label(plan.id(), lang).to_string())
            }
            EventKind::Reconnected { server } => {
                (Glyph::Published, format!("{} {server}", t("→ new primary:", "→ primary mới:")))
            }
            EventKind::ReplicaPromoted { behind_bytes } => (
                Glyph::Published,
                format!("{} ({behind_bytes} B {})", t("replica promoted", "replica lên primary"), t("behind", "thiếu")),
            ),
            crate::list_queue_events!() => return list_mark(kind, lang),
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

    /// A list-queue job's effect: marked as out of order when a later step of its order was
    /// applied before it.
    fn job_applied(&mut self, actor: Actor, at: f64, job: &Job) {
        let newer = self.applied.get(&job.order).copied();
        self.applied.insert(job.order, newer.map_or(job.version, |n| n.max(job.version)));
        let label = format!("{} {}", pick(self.lang, "applied", "áp dụng"), job_label(job, self.multi_order));
        if newer.is_some_and(|n| n > job.version) {
            let late = pick(self.lang, "after a later step: out of order", "sau một bước sau nó: sai thứ tự");
            self.mark(actor, at, Glyph::Overwrote, Some(format!("{label} {late}")));
        } else {
            self.mark(actor, at, Glyph::Wrote, Some(label));
        }
    }

    fn sql_done(&mut self, actor: Actor, at: f64, outcome: &str, waited_ms: f64) {
        if waited_ms >= 5.0 {
            let step = self.steps.at(at - waited_ms);
            self.lane(actor).bars.push(Bar { t0: at - waited_ms, t1: at, kind: BarKind::Wait, step });
        }
        let waited = if waited_ms < 5.0 {
            String::new()
        } else {
            format!(" {} {} ms", pick(self.lang, "after waiting", "sau khi chờ"), fmt_ms(waited_ms))
        };
        let lower = outcome.to_lowercase();
        let failed = lower.contains("error") || lower.contains("deadlock") || lower.contains("could not");
        let glyph = if failed { Glyph::SqlError } else { Glyph::SqlDone };
        self.mark(actor, at, glyph, Some(format!("→ {}{waited}", truncate(outcome, 40))));
    }

    /// A lock held from `from` until `to`; if its TTL ran out before `to`, the rest is drawn as
    /// time the holder only believed it had the lock, with the expiry marked.
    fn lock_bar(&mut self, actor: Actor, from: f64, to: f64, ttl: f64) {
        let expiry = from + ttl;
        let label = crate::tr!(self.lang, "lock expired (TTL {} ms)", "lock hết hạn (TTL {} ms)", fmt_ms(ttl));
        let (taken, expired) = (self.steps.at(from), self.steps.at(expiry));
        let lane = self.lane(actor);
        if expiry < to {
            lane.bars.push(Bar { t0: from, t1: expiry, kind: BarKind::Lock, step: taken });
            lane.bars.push(Bar { t0: expiry, t1: to, kind: BarKind::LockExpired, step: expired });
            lane.marks.push(Mark { t: expiry, glyph: Glyph::Expired, label: Some(label), step: expired });
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

/// Marks of queue-job events and of the side-effect sink: a glyph and its label.
fn job_mark(kind: &EventKind, lang: Lang) -> Option<(Glyph, String)> {
    let t = |en, vi| pick(lang, en, vi);
    Some(match kind {
        EventKind::JobPublished { job, attempt, reply_lost, .. } => {
            let lost = if *reply_lost { t(" (reply lost)", " (mất phản hồi)") } else { "" };
            let what = if *attempt > 1 { format!("retry {job}") } else { format!("publish {job}") };
            (Glyph::Published, format!("{what}{lost}"))
        }
        EventKind::JobReceived { job, deliveries, .. } => {
            let mut label = format!("{} {job}", t("received", "nhận"));
            if *deliveries > 1 {
                label.push_str(&format!(" ({} {deliveries})", t("delivery", "lần giao")));
            }
            (Glyph::Received, label)
        }
        EventKind::JobStep { command, result, .. } => {
            (Glyph::SqlSent, format!("{} → {}", truncate(command, 36), truncate(result, 16)))
        }
        EventKind::JobSkipped { job, reason } => (
            Glyph::Stale,
            format!("{} {job}: {}", t("skip", "bỏ qua"), crate::report::words::skip_words(*reason, lang)),
        ),
        EventKind::JobFailed { job, reason, .. } => {
            (Glyph::Failed, format!("{job}: {}", crate::report::words::fail_words(*reason, lang)))
        }
        EventKind::DeadLettered { job, .. } => (Glyph::Failed, format!("{job} → DLQ")),
        EventKind::JobAcked { job, .. } => (Glyph::Acked, format!("XACK {job}")),
        EventKind::Effect { job, effect, requested_by, outcome, .. } => {
            let (glyph, what) = match outcome {
                EffectOutcome::Applied => (Glyph::Wrote, t("applied", "đã thực hiện")),
                EffectOutcome::Replayed => (Glyph::Stale, t("replayed, no effect", "trả kết quả cũ, không thực hiện")),
                EffectOutcome::Refused => (Glyph::Failed, t("refused", "bị từ chối")),
            };
            (glyph, format!("{effect} {job} ({requested_by}): {what}"))
        }
        _ => return None,
    })
}

fn outbox_mark(round: u32, published: &[i64], failed: &[i64], held_back: &[i64], lang: Lang) -> (Glyph, String) {
    let (r, p, f, h) = match lang {
        Lang::En => ("round", "published", "failed", "held back"),
        Lang::Vi => ("vòng", "publish", "lỗi", "giữ lại"),
    };
    let mut label = format!("{r} {round}: {p} {}", order_rows(published));
    if !failed.is_empty() {
        label.push_str(&format!("; {f} {}", order_rows(failed)));
    }
    if !held_back.is_empty() {
        label.push_str(&format!("; {h} {}", order_rows(held_back)));
    }
    (if failed.is_empty() { Glyph::Outbox } else { Glyph::OutboxFailed }, label)
}

/// Marks of the list queue on a Redis Cluster: pushes, takes, queue errors, resharding.
fn cluster_queue_mark(kind: &EventKind, lang: Lang, many: bool) -> Option<(Glyph, String)> {
    let t = |en, vi| pick(lang, en, vi);
    Some(match kind {
        EventKind::JobPushed { job, queue, .. } => {
            (Glyph::Published, format!("LPUSH {queue} {}", job_label(job, many)))
        }
        EventKind::JobsPushed { jobs, queues } => {
            (Glyph::Published, format!("LPUSH {jobs} {} → {queues} {}", t("jobs", "job"), t("queues", "hàng đợi")))
        }
        EventKind::JobTaken { job, .. } => (Glyph::Received, format!("{} {}", t("took", "lấy"), job_label(job, many))),
        EventKind::QueueError { command, error, .. } => (Glyph::Failed, format!("{command}: {}", truncate(error, 40))),
        EventKind::WorkerDone { jobs, .. } => {
            (Glyph::Acked, format!("{} {jobs} {}", t("done:", "xong:"), t("jobs", "job")))
        }
        EventKind::SlotMigrating { slot, from, to } => {
            (Glyph::Failed, format!("slot {slot} {} {from} → {to}", t("migrating", "đang chuyển")))
        }
        EventKind::SlotKeysMoved { keys, from, to, .. } => {
            (Glyph::Published, format!("MIGRATE {keys} {} {from} → {to}", t("keys", "key")))
        }
        EventKind::SlotOwned { slot, node } => (Glyph::Published, format!("slot {slot} → {node}")),
        _ => return None,
    })
}

/// Marks of list-queue events (seed 003) on a worker's, the reaper's, the producer's or the
/// runner's lane: a glyph and its label; None for events of other labs.
fn list_mark(kind: &EventKind, lang: Lang) -> Option<(Glyph, String)> {
    let t = |en, vi| pick(lang, en, vi);
    Some(match kind {
        EventKind::Pushed { job, .. } => (Glyph::Published, format!("{} {job}", t("push", "đẩy"))),
        EventKind::Taken { job, via, .. } => (Glyph::Received, format!("{} {job} ({via})", t("took", "lấy"))),
        EventKind::ListJobDone { job, removed: Some(0) } => {
            (Glyph::Stale, format!("{} {job}; LREM → 0", t("done", "xong")))
        }
        EventKind::ListJobDone { job, .. } => (Glyph::Wrote, format!("{} {job}", t("done", "xong"))),
        EventKind::ListJobFailed { job, attempt, .. } => {
            (Glyph::Failed, format!("{job} {} #{attempt}", t("failed, attempt", "lỗi, lần")))
        }
        EventKind::RetryScheduled { job, to, .. } => (Glyph::Outbox, format!("{job} → {to}")),
        EventKind::ListDeadLettered { job, .. } => {
            (Glyph::OutboxFailed, format!("{job} → {}", t("dead letters", "hàng lỗi")))
        }
        EventKind::Poison { .. } => {
            (Glyph::Failed, t("poison: does not parse", "poison: không parse được").to_string())
        }
        EventKind::Requeued { job, .. } => (Glyph::Published, format!("{} {job}", t("requeued", "đưa lại"))),
        EventKind::MovedDue { job, .. } => {
            (Glyph::Published, format!("{job} {}", t("due → queue", "đến hạn → hàng đợi")))
        }
        EventKind::ServerRestarted { jobs, .. } => (
            Glyph::Published,
            format!("{} ({jobs} {})", t("restarted", "khởi động lại"), t("jobs back", "job còn lại")),
        ),
        EventKind::Evicted { key, jobs } => {
            (Glyph::Crash, format!("{} {key} ({jobs} {})", t("evicted", "evict"), t("jobs", "job")))
        }
        EventKind::Refused { error, .. } => (Glyph::Failed, truncate(error, 40)),
        _ => return None,
    })
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
