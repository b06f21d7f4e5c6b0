//! An SVG timeline of one run, drawn to be pasted into a slide: one lane per process, handler
//! work and lock holds as bars, receives, writes, publishes, crashes and SQL statements as
//! labelled marks on a millisecond axis, and the run's final state with its verdict.
//! It is a pure function of the saved report, so any recorded run can be drawn again without
//! servers; the file is self-contained (no scripts, fonts or images from elsewhere).

use super::text::{setup_summary, Lang, TextOptions};
use super::{LabReport, RunRecord, VariantReport};
use crate::checker::Verdict;
use crate::fault::TimeScale;
use crate::timeline::{Actor, Event, EventKind, Job};
use std::collections::HashMap;
use std::fmt::Write;

const WIDTH: f64 = 1280.0;
/// Left edge of the time axis; lane labels sit to its left.
const PLOT_LEFT: f64 = 140.0;
/// Right edge of the time axis; labels may run a little past it, up to `WIDTH - MARGIN`.
const PLOT_RIGHT: f64 = 1220.0;
const MARGIN: f64 = 24.0;
const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', 'DejaVu Sans', sans-serif";
const LABEL_PX: f64 = 14.0;
/// Vertical distance between stacked label rows.
const ROW_H: f64 = 19.0;
/// Height of a handler-work bar; the lock bar is drawn below it.
const WORK_H: f64 = 22.0;
const LOCK_H: f64 = 9.0;

const INK: &str = "#222222";
const MUTED: &str = "#666666";
const GRID: &str = "#e6e6e6";
const RED: &str = "#c62828";
const GREEN: &str = "#2e7d32";
const GREY: &str = "#8a8a8a";
const WORK: &str = "#4c78a8";
const LOCK: &str = "#e8891d";
const WRITE: &str = "#1b3a6b";
const SQL: &str = "#6a3d9a";

/// Render run `run` (1-based) of `variant` as a standalone SVG document.
/// Orders a slide can show: a run over more is drawn for its first orders only.
pub const SVG_MAX_ORDERS: usize = 8;

/// The variant as a slide can show it: for a run over many orders, only the events of its
/// first [`SVG_MAX_ORDERS`] orders (and events that belong to no order), and a title that
/// says so. Other runs are returned unchanged.
pub fn readable_window(v: &VariantReport, run: u32) -> VariantReport {
    let mut out = v.clone();
    let orders = v.setup.orders();
    if orders.len() <= SVG_MAX_ORDERS {
        return out;
    }
    // The first orders, but a wrong run shows some of its wrong orders too.
    let mut shown: Vec<i64> = v
        .run_records
        .iter()
        .filter(|r| r.run == run)
        .flat_map(|r| r.final_rows.iter())
        .filter(|row| v.setup.expected_status(row.order).is_some_and(|want| want != row.status))
        .map(|row| row.order)
        .take(SVG_MAX_ORDERS / 2)
        .collect();
    for o in &orders {
        if shown.len() < SVG_MAX_ORDERS && !shown.contains(o) {
            shown.push(*o);
        }
    }
    shown.sort();
    let order_of = |k: &EventKind| -> Option<i64> {
        match k {
            EventKind::Published { job, .. }
            | EventKind::PublishFailed { job, .. }
            | EventKind::Received { job, .. }
            | EventKind::Held { job, .. }
            | EventKind::Dropped { job, .. } => Some(job.order),
            EventKind::Wrote { order, .. }
            | EventKind::Inserted { order, .. }
            | EventKind::WriteFailed { order, .. }
            | EventKind::GapTimeout { order, .. }
            | EventKind::SqlSent { order, .. }
            | EventKind::SqlDone { order, .. } => Some(*order),
            _ => None,
        }
    };
    for r in out.run_records.iter_mut().filter(|r| r.run == run) {
        // Entry IDs of the shown orders, so work and acks (which carry only the ID) follow.
        let ids: std::collections::HashSet<String> = r
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Received { entry_id, job, .. } if shown.contains(&job.order) => Some(entry_id.clone()),
                _ => None,
            })
            .collect();
        r.events.retain(|e| match (&e.kind, order_of(&e.kind)) {
            (_, Some(o)) => shown.contains(&o),
            (EventKind::WorkStarted { entry_id, .. } | EventKind::Acked { entry_id }, None) => ids.contains(entry_id),
            _ => true,
        });
        r.final_rows.retain(|row| shown.contains(&row.order));
    }
    let listed: Vec<String> = shown.iter().map(|o| format!("#{o}")).collect();
    out.title = format!("{} (orders {} of {})", v.title, listed.join(" "), orders.len());
    out
}

pub fn render(report: &LabReport, variant: &VariantReport, run: u32, lang: Lang) -> String {
    let opts = TextOptions { lang, ..TextOptions::default() };
    let t = |en: &'static str, vi: &'static str| tr(lang, en, vi);
    let title = format!("{} / {} — {} · {} {run}", report.lab.id, variant.id, variant.title, t("run", "lần"));
    let summary = setup_summary(&variant.setup, &opts);
    let mut title_lines: Vec<(String, f64, bool)> = Vec::new();
    for line in wrap(&title, WIDTH - 2.0 * MARGIN, 22.0) {
        title_lines.push((line, 22.0, true));
    }
    for line in wrap(&summary, WIDTH - 2.0 * MARGIN, 16.0) {
        title_lines.push((line, 16.0, false));
    }
    let Some(record) = variant.run_records.iter().find(|r| r.run == run) else {
        let msg = format!("{} {run}: {}", t("run", "lần"), t("not in this report", "không có trong báo cáo này"));
        return missing_run(&title_lines, &msg);
    };
    let scale = TimeScale(report.environment.time_scale);
    let multi_order = variant.setup.orders().len() > 1;
    let timeline = Timeline::build(record, scale, multi_order, lang);
    draw(&title_lines, &timeline, record, variant, lang)
}

fn tr(lang: Lang, en: &'static str, vi: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Vi => vi,
    }
}

// ---------------------------------------------------------------------------------------------
// The run as lanes of bars and marks, in milliseconds.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Glyph {
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

impl Glyph {
    fn color(self) -> &'static str {
        match self {
            Glyph::Received | Glyph::Published => INK,
            Glyph::Wrote | Glyph::Stale => WRITE,
            Glyph::Failed | Glyph::Overwrote | Glyph::Crash | Glyph::Released | Glyph::Expired => RED,
            Glyph::SqlError | Glyph::OutboxFailed => RED,
            Glyph::LockTaken => "#a85a00",
            Glyph::SqlSent | Glyph::SqlDone | Glyph::Outbox => SQL,
            Glyph::Acked => GREY,
        }
    }
}

struct Mark {
    t: f64,
    glyph: Glyph,
    label: Option<String>,
}

enum BarKind {
    /// Handler work of `ms` milliseconds.
    Work { ms: f64 },
    /// A lock held from acquisition to release, or to its TTL expiry if that came first.
    Lock,
    /// Time the actor still believed it held a lock that had already expired.
    LockExpired,
    /// A SQL statement waiting (for a row lock) before its outcome.
    Wait,
}

struct Bar {
    t0: f64,
    t1: f64,
    kind: BarKind,
}

struct Lane {
    actor: Actor,
    /// When the process reported ready, if it did.
    ready: Option<f64>,
    bars: Vec<Bar>,
    marks: Vec<Mark>,
}

struct Timeline {
    lanes: Vec<Lane>,
    /// Axis domain in ms.
    start: f64,
    end: f64,
}

/// Lane order on the page: producer, consumers, dispatchers, SQL sessions, reaper, runner.
fn lane_rank(a: Actor) -> (u8, u32) {
    match a {
        Actor::Producer => (0, 0),
        Actor::Consumer(n) => (1, n),
        Actor::Dispatcher(n) => (2, n),
        Actor::Session(c) => (3, c as u32),
        Actor::Reaper => (4, 0),
        Actor::Runner => (5, 0),
    }
}

fn ms(t_us: i64) -> f64 {
    t_us as f64 / 1000.0
}

fn fmt_ms(v: f64) -> String {
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

impl Timeline {
    fn build(record: &RunRecord, scale: TimeScale, multi_order: bool, lang: Lang) -> Timeline {
        let t = |en: &'static str, vi: &'static str| tr(lang, en, vi);
        let mut events: Vec<&Event> = record.events.iter().collect();
        events.sort_by_key(|e| e.t_us);

        // The job behind each entry: from the consumer that received it, else from the stream.
        let mut jobs: HashMap<&str, &Job> = record.stream.iter().map(|s| (s.entry_id.as_str(), &s.job)).collect();
        for e in &events {
            if let EventKind::Received { entry_id, job, .. } = &e.kind {
                jobs.insert(entry_id.as_str(), job);
            }
        }
        let sql_cases: Vec<u32> = {
            let mut c: Vec<u32> = events
                .iter()
                .filter_map(|e| match e.kind {
                    EventKind::SqlSent { case, .. } | EventKind::SqlDone { case, .. } => Some(case),
                    _ => None,
                })
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        };

        let mut lanes: Vec<Lane> = Vec::new();
        let mut open_locks: HashMap<Actor, (f64, f64)> = HashMap::new();
        // Highest business version applied so far, per order.
        let mut applied: HashMap<i64, i64> = HashMap::new();
        for e in &events {
            let at = ms(e.t_us);
            let idx = match lanes.iter().position(|l| l.actor == e.actor) {
                Some(i) => i,
                None => {
                    lanes.push(Lane { actor: e.actor, ready: None, bars: Vec::new(), marks: Vec::new() });
                    lanes.len() - 1
                }
            };
            let Lane { ready, bars, marks, .. } = &mut lanes[idx];
            let mut mark = |glyph: Glyph, label: Option<String>| marks.push(Mark { t: at, glyph, label });
            match &e.kind {
                EventKind::Ready => {
                    *ready = Some(ready.map_or(at, |r: f64| r.min(at)));
                }
                EventKind::Published { job, attempt, .. } => {
                    let what = if *attempt == 1 {
                        format!("publish {} OK", job_label(job, multi_order))
                    } else {
                        format!("retry #{} {} OK", attempt - 1, job.event_type)
                    };
                    mark(Glyph::Published, Some(what));
                }
                EventKind::PublishFailed { job, attempt, .. } => {
                    let what = if *attempt == 1 {
                        format!("publish {}", job_label(job, multi_order))
                    } else {
                        format!("retry #{} {}", attempt - 1, job.event_type)
                    };
                    mark(Glyph::Failed, Some(format!("{what} {}", t("FAILED", "LỖI"))));
                }
                EventKind::Received { job, deliveries, .. } => {
                    let mut label = format!("{} {}", t("received", "nhận"), job_label(job, multi_order));
                    if let Some(d) = deliveries.filter(|d| *d > 1) {
                        let _ = write!(label, " ({} {d})", t("delivery", "lần giao"));
                    }
                    mark(Glyph::Received, Some(label));
                }
                EventKind::WorkStarted { ms: work, .. } => {
                    bars.push(Bar { t0: at, t1: at + work.max(0.0), kind: BarKind::Work { ms: *work } });
                }
                EventKind::LockAcquired { tries, ttl_ms, .. } => {
                    let ttl = scale.ms_ceil(*ttl_ms) as f64;
                    open_locks.insert(e.actor, (at, ttl));
                    let label = match (lang, *tries) {
                        (Lang::En, 1) => "took lock".to_string(),
                        (Lang::En, n) => format!("took lock after {n} tries"),
                        (Lang::Vi, 1) => "lấy được lock".to_string(),
                        (Lang::Vi, n) => format!("lấy được lock sau {n} lần thử"),
                    };
                    mark(Glyph::LockTaken, Some(label));
                }
                EventKind::LockReleased { released, .. } => {
                    if *released == 0 {
                        let label =
                            t("released → 0: expired, not ours", "nhả lock → 0: đã hết hạn, không còn là của mình");
                        mark(Glyph::Released, Some(label.to_string()));
                    }
                    if let Some((from, ttl)) = open_locks.remove(&e.actor) {
                        push_lock(bars, marks, from, at, ttl, lang);
                    }
                }
                EventKind::Wrote { entry_id, order, status, version, rows } => {
                    let prefix = if multi_order { format!("#{order} ") } else { String::new() };
                    let job_version = jobs.get(entry_id.as_str()).map(|j| j.version);
                    if *rows == 0 && version.is_some() {
                        let label = format!("{prefix}{status}: {}", t("stale, skipped", "bản cũ, bỏ qua"));
                        mark(Glyph::Stale, Some(label));
                    } else if *rows == 0 {
                        mark(Glyph::Stale, Some(format!("{} {prefix}{status} → UPDATE 0", t("wrote", "ghi"))));
                    } else {
                        let newer = applied.get(order).copied();
                        let overwrote = matches!((job_version, newer), (Some(v), Some(n)) if v < n);
                        if let Some(v) = job_version {
                            applied.insert(*order, newer.map_or(v, |n| n.max(v)));
                        }
                        if overwrote {
                            let label = format!(
                                "{} {prefix}{status}: {}",
                                t("wrote", "ghi"),
                                t("overwrote a newer state", "đè lên trạng thái mới hơn")
                            );
                            mark(Glyph::Overwrote, Some(label));
                        } else {
                            mark(Glyph::Wrote, Some(format!("{} {prefix}{status}", t("wrote", "ghi"))));
                        }
                    }
                }
                EventKind::Acked { .. } => mark(Glyph::Acked, None),
                EventKind::Inserted { order, status, .. } => {
                    let prefix = if multi_order { format!("#{order} ") } else { String::new() };
                    mark(Glyph::Wrote, Some(format!("{} {prefix}{status} (INSERT)", t("wrote", "ghi"))));
                }
                EventKind::WriteFailed { order, status, .. } => {
                    let prefix = if multi_order { format!("#{order} ") } else { String::new() };
                    let label = format!(
                        "{} {prefix}{status}: {}",
                        t("write", "ghi"),
                        t("refused (duplicate key), lost", "bị từ chối (trùng khoá), mất")
                    );
                    mark(Glyph::Failed, Some(label));
                }
                EventKind::Held { job, waiting_for, .. } => {
                    let label = format!(
                        "{} {}, {} v={waiting_for}",
                        t("held", "giữ"),
                        job_label(job, multi_order),
                        t("waiting for", "chờ")
                    );
                    mark(Glyph::Received, Some(label));
                }
                EventKind::Dropped { job, .. } => {
                    let label = format!("{} {}", t("dropped stale", "bỏ bản cũ"), job_label(job, multi_order));
                    mark(Glyph::Stale, Some(label));
                }
                EventKind::GapTimeout { order, missing_version, .. } => {
                    let label = format!(
                        "{} #{order} v={missing_version}",
                        t("gap timeout: gave up on", "hết thời gian chờ: bỏ qua")
                    );
                    mark(Glyph::Failed, Some(label));
                }
                EventKind::Crashed { planned, detail } => {
                    let detail = truncate(detail, 40);
                    let label = match (planned, lang) {
                        (true, Lang::En) => format!("CRASHED (injected: {detail})"),
                        (true, Lang::Vi) => format!("CRASH (chủ động: {detail})"),
                        (false, Lang::En) => format!("DIED unexpectedly: {detail}"),
                        (false, Lang::Vi) => format!("chết bất ngờ: {detail}"),
                    };
                    mark(Glyph::Crash, Some(label));
                    if let Some((from, ttl)) = open_locks.remove(&e.actor) {
                        // Nobody releases a dead process's lock: it lasts until its TTL.
                        push_lock(bars, marks, from, from + ttl, ttl, lang);
                    }
                }
                EventKind::SqlSent { case, statement, .. } => {
                    let case =
                        if sql_cases.len() > 1 { format!("{} {case}: ", t("case", "ca")) } else { String::new() };
                    mark(Glyph::SqlSent, Some(format!("{case}{}", truncate(statement, 44))));
                }
                EventKind::SqlDone { outcome, waited_ms, .. } => {
                    if *waited_ms >= 5.0 {
                        bars.push(Bar { t0: at - waited_ms, t1: at, kind: BarKind::Wait });
                    }
                    let waited = if *waited_ms < 5.0 {
                        String::new()
                    } else {
                        format!(" {} {} ms", t("after waiting", "sau khi chờ"), fmt_ms(*waited_ms))
                    };
                    let lower = outcome.to_lowercase();
                    let glyph = if lower.contains("error") || lower.contains("deadlock") || lower.contains("could not")
                    {
                        Glyph::SqlError
                    } else {
                        Glyph::SqlDone
                    };
                    mark(glyph, Some(format!("→ {}{waited}", truncate(outcome, 40))));
                }
                EventKind::OutboxRound { round, published, failed, held_back } => {
                    let (r, p, f, h) = match lang {
                        Lang::En => ("round", "published", "failed", "held back"),
                        Lang::Vi => ("vòng", "publish", "lỗi", "giữ lại"),
                    };
                    let mut label = format!("{r} {round}: {p} {}", order_rows(published));
                    if !failed.is_empty() {
                        let _ = write!(label, "; {f} {}", order_rows(failed));
                    }
                    if !held_back.is_empty() {
                        let _ = write!(label, "; {h} {}", order_rows(held_back));
                    }
                    let glyph = if failed.is_empty() { Glyph::Outbox } else { Glyph::OutboxFailed };
                    mark(glyph, Some(label));
                }
                EventKind::LagWindow { how } => mark(
                    Glyph::Failed,
                    Some(format!("{} ({})", t("replica link cut", "cắt link replica"), truncate(how, 40))),
                ),
                EventKind::Queued { worker, .. } => {
                    mark(Glyph::Received, Some(format!("{} {worker}", t("→ worker", "→ worker"))))
                }
                EventKind::ServerKilled { server, signal } => mark(Glyph::Crash, Some(format!("{server} {signal}"))),
                EventKind::ReplicaPromoted { behind_bytes } => mark(
                    Glyph::Published,
                    Some(format!(
                        "{} ({behind_bytes} B {})",
                        t("replica promoted", "replica lên primary"),
                        t("behind", "thiếu")
                    )),
                ),
            }
        }
        // Locks never released (the run ended first): drawn until their TTL ran out.
        let mut still_open: Vec<(Actor, (f64, f64))> = open_locks.into_iter().collect();
        still_open.sort_by_key(|(a, _)| lane_rank(*a));
        for (actor, (from, ttl)) in still_open {
            if let Some(lane) = lanes.iter_mut().find(|l| l.actor == actor) {
                push_lock(&mut lane.bars, &mut lane.marks, from, from + ttl, ttl, lang);
            }
        }
        lanes.sort_by_key(|l| lane_rank(l.actor));

        let starts = lanes.iter().flat_map(|l| l.marks.iter().map(|m| m.t).chain(l.bars.iter().map(|b| b.t0)));
        let start = starts.fold(0.0_f64, f64::min);
        let ends = lanes.iter().flat_map(|l| {
            l.marks.iter().map(|m| m.t).chain(l.bars.iter().map(|b| b.t1)).chain(l.ready.iter().copied())
        });
        let last = ends.fold(start, f64::max);
        let end = start + ((last - start) * 1.02).max(10.0);
        Timeline { lanes, start, end }
    }
}

/// A lock held from `from` until `to`; if its TTL ran out before `to`, the rest is drawn as
/// time the holder only believed it had the lock, with the expiry marked.
fn push_lock(bars: &mut Vec<Bar>, marks: &mut Vec<Mark>, from: f64, to: f64, ttl: f64, lang: Lang) {
    let expiry = from + ttl;
    if expiry < to {
        bars.push(Bar { t0: from, t1: expiry, kind: BarKind::Lock });
        bars.push(Bar { t0: expiry, t1: to, kind: BarKind::LockExpired });
        let label = match lang {
            Lang::En => format!("lock expired (TTL {} ms)", fmt_ms(ttl)),
            Lang::Vi => format!("lock hết hạn (TTL {} ms)", fmt_ms(ttl)),
        };
        marks.push(Mark { t: expiry, glyph: Glyph::Expired, label: Some(label) });
    } else {
        bars.push(Bar { t0: from, t1: to, kind: BarKind::Lock });
    }
}

// ---------------------------------------------------------------------------------------------
// Layout: label rows, axis ticks, text widths.

/// Rough advance width of text in a sans-serif font, erring wide so labels do not collide.
fn text_width(s: &str, px: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            ' ' => 0.32,
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | '(' | ')' | '[' | ']' => 0.3,
            'f' | 't' | 'r' | 'I' => 0.42,
            'm' | 'w' | 'M' | 'W' => 0.92,
            '0'..='9' => 0.64,
            c if c.is_uppercase() => 0.72,
            '→' | '—' | '✕' | '✓' | '×' | '…' => 0.84,
            _ => 0.6,
        })
        .sum();
    em * px
}

/// Greedy word wrap to a pixel width.
fn wrap(text: &str, max_px: f64, px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if !line.is_empty() && text_width(&candidate, px) > max_px {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A tick step of 1, 2, 2.5 or 5 × 10^k giving at most ten intervals over `span`.
fn tick_step(span: f64) -> f64 {
    let mut magnitude = 10f64.powf((span / 10.0).max(1e-9).log10().floor());
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * magnitude;
            if span / step <= 10.0 {
                return step;
            }
        }
        magnitude *= 10.0;
    }
}

/// Where a label goes: a row (0 = nearest the lane line) above or below, and its anchor.
struct Placed {
    mark: usize,
    above: bool,
    row: usize,
    /// Text starts at the mark (true) or ends there (false, near the right edge).
    start_anchor: bool,
}

/// Put each label in the first row, alternating above and below the lane line, where it
/// overlaps no label already there.
fn place_labels(marks: &[Mark], x: &dyn Fn(f64) -> f64) -> Vec<Placed> {
    let mut order: Vec<usize> = (0..marks.len()).filter(|i| marks[*i].label.is_some()).collect();
    order.sort_by(|a, b| marks[*a].t.total_cmp(&marks[*b].t));
    // rows[k]: occupied intervals of slot k, slots going above 0, below 0, above 1, below 1, …
    let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut placed = Vec::new();
    for i in order {
        let label = marks[i].label.as_deref().unwrap_or_default();
        let w = text_width(label, LABEL_PX);
        let mx = x(marks[i].t);
        let start_anchor = mx + 5.0 + w <= WIDTH - MARGIN;
        let span = if start_anchor { (mx - 2.0, mx + 5.0 + w) } else { (mx - 5.0 - w, mx + 2.0) };
        let fits = |row: &Vec<(f64, f64)>| row.iter().all(|(a, b)| span.1 + 6.0 <= *a || *b + 6.0 <= span.0);
        let slot = match rows.iter().position(fits) {
            Some(s) => s,
            None => {
                rows.push(Vec::new());
                rows.len() - 1
            }
        };
        rows[slot].push(span);
        placed.push(Placed { mark: i, above: slot % 2 == 0, row: slot / 2, start_anchor });
    }
    placed
}

// ---------------------------------------------------------------------------------------------
// Drawing.

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn header(out: &mut String, height: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="{}" font-size="{LABEL_PX}" role="img">"#,
        esc(FONT)
    );
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(
        out,
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fdf0e0"/><line x1="0" y1="0" x2="0" y2="6" stroke="{LOCK}" stroke-width="2.5"/></pattern></defs>"##
    );
    let _ = writeln!(out, r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#);
}

fn title_block(out: &mut String, lines: &[(String, f64, bool)]) -> f64 {
    let mut y = MARGIN;
    for (text, px, bold) in lines {
        y += px * 1.25;
        let (weight, color) = if *bold { ("bold", INK) } else { ("normal", MUTED) };
        let _ = writeln!(
            out,
            r#"<text x="{MARGIN}" y="{y:.1}" font-size="{px}" font-weight="{weight}" fill="{color}">{}</text>"#,
            esc(text)
        );
    }
    y
}

fn missing_run(title_lines: &[(String, f64, bool)], msg: &str) -> String {
    let mut body = String::new();
    let y = title_block(&mut body, title_lines) + 40.0;
    let _ = writeln!(body, r#"<text x="{MARGIN}" y="{y:.1}" font-size="18" fill="{RED}">{}</text>"#, esc(msg));
    let mut out = String::new();
    header(&mut out, y + MARGIN, title_lines.first().map(|l| l.0.as_str()).unwrap_or_default());
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// The mark's glyph centred on (x, y).
fn glyph(out: &mut String, g: Glyph, x: f64, y: f64) {
    let c = g.color();
    let _ = match g {
        Glyph::Received => writeln!(
            out,
            r#"<path class="mark received" d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{c}" stroke="white" stroke-width="1"/>"#,
            x - 6.0,
            y - 8.0,
            x + 6.0,
            y - 8.0,
            x,
            y + 2.0
        ),
        Glyph::Published => writeln!(
            out,
            r#"<path class="mark published" d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{GREEN}" stroke="white" stroke-width="1"/>"#,
            x - 6.0,
            y + 6.0,
            x + 6.0,
            y + 6.0,
            x,
            y - 6.0
        ),
        Glyph::Failed => writeln!(
            out,
            r#"<path class="mark failed" d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{c}" stroke-width="3.5" stroke-linecap="round"/>"#,
            x - 6.0,
            y - 6.0,
            x + 6.0,
            y + 6.0,
            x - 6.0,
            y + 6.0,
            x + 6.0,
            y - 6.0
        ),
        Glyph::Crash => writeln!(
            out,
            r#"<path class="mark crash" d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{c}" stroke="white" stroke-width="1"/>"#,
            x + 4.0,
            y - 15.0,
            x - 8.0,
            y + 3.0,
            x - 1.0,
            y + 3.0,
            x - 4.0,
            y + 15.0,
            x + 8.0,
            y - 3.0,
            x + 1.0,
            y - 3.0
        ),
        Glyph::Wrote | Glyph::Overwrote => writeln!(
            out,
            r#"<circle class="mark {}" cx="{x:.1}" cy="{y:.1}" r="7" fill="{c}" stroke="white" stroke-width="1.5"/>"#,
            if g == Glyph::Wrote { "wrote" } else { "overwrote" }
        ),
        Glyph::Stale => writeln!(
            out,
            r#"<circle class="mark stale" cx="{x:.1}" cy="{y:.1}" r="6" fill="white" stroke="{c}" stroke-width="2.5"/>"#
        ),
        Glyph::LockTaken => writeln!(
            out,
            r#"<rect class="mark lock" x="{:.1}" y="{:.1}" width="3" height="{:.1}" fill="{c}"/>"#,
            x - 1.5,
            y + WORK_H / 2.0 - 2.0,
            LOCK_H + 6.0
        ),
        Glyph::Released => writeln!(
            out,
            r#"<path class="mark released" d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{c}" stroke-width="3" stroke-linecap="round"/>"#,
            x - 5.0,
            y + WORK_H / 2.0 + 0.5,
            x + 5.0,
            y + WORK_H / 2.0 + LOCK_H + 3.5,
            x - 5.0,
            y + WORK_H / 2.0 + LOCK_H + 3.5,
            x + 5.0,
            y + WORK_H / 2.0 + 0.5
        ),
        Glyph::Expired => writeln!(
            out,
            r#"<line class="mark expired" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-width="2" stroke-dasharray="4 3"/>"#,
            y - WORK_H / 2.0 - 4.0,
            y + WORK_H / 2.0 + LOCK_H + 6.0
        ),
        Glyph::SqlSent => writeln!(
            out,
            r#"<rect class="mark sql" x="{:.1}" y="{:.1}" width="11" height="11" fill="white" stroke="{c}" stroke-width="2.5"/>"#,
            x - 5.5,
            y - 5.5
        ),
        Glyph::SqlDone | Glyph::SqlError => writeln!(
            out,
            r#"<rect class="mark sql" x="{:.1}" y="{:.1}" width="11" height="11" fill="{c}" stroke="white" stroke-width="1"/>"#,
            x - 5.5,
            y - 5.5
        ),
        Glyph::Outbox | Glyph::OutboxFailed => writeln!(
            out,
            r#"<path class="mark outbox" d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{c}" stroke="white" stroke-width="1"/>"#,
            y - 8.0,
            x + 8.0,
            y + 8.0,
            x - 8.0
        ),
        Glyph::Acked => writeln!(
            out,
            r#"<line class="mark acked" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/>"#,
            y - 5.0,
            y + 5.0
        ),
    };
}

struct LaneLayout {
    /// y of the lane line.
    y: f64,
    top: f64,
    bottom: f64,
    labels: Vec<Placed>,
}

fn draw(
    title_lines: &[(String, f64, bool)],
    tl: &Timeline,
    record: &RunRecord,
    variant: &VariantReport,
    lang: Lang,
) -> String {
    let t = |en: &'static str, vi: &'static str| tr(lang, en, vi);
    let x = |ms: f64| PLOT_LEFT + (ms - tl.start) / (tl.end - tl.start) * (PLOT_RIGHT - PLOT_LEFT);
    let mut body = String::new();
    let title_bottom = title_block(&mut body, title_lines);

    // Lanes: each as tall as its label rows need.
    let mut layouts = Vec::new();
    let mut y = title_bottom + 24.0;
    let plot_top = y;
    for lane in &tl.lanes {
        let labels = place_labels(&lane.marks, &x);
        let rows_above = labels.iter().filter(|p| p.above).map(|p| p.row + 1).max().unwrap_or(0) as f64;
        let rows_below = labels.iter().filter(|p| !p.above).map(|p| p.row + 1).max().unwrap_or(0) as f64;
        let top = y;
        let line_y = top + 8.0 + WORK_H / 2.0 + 8.0 + rows_above * ROW_H;
        let bottom = line_y + WORK_H / 2.0 + LOCK_H + 10.0 + rows_below * ROW_H + 6.0;
        layouts.push(LaneLayout { y: line_y, top, bottom, labels });
        y = bottom;
    }
    let plot_bottom = y + 4.0;

    // Grid and axis.
    let step = tick_step(tl.end - tl.start);
    let mut tick = (tl.start / step).ceil() * step;
    let axis_y = plot_bottom;
    let _ = writeln!(body, r#"<g class="axis" font-size="14" fill="{MUTED}">"#);
    while tick <= tl.end + 1e-9 {
        let tx = x(tick);
        let stroke = if tick.abs() < 1e-9 { "#bdbdbd" } else { GRID };
        let _ = writeln!(
            body,
            r#"<line x1="{tx:.1}" y1="{plot_top:.1}" x2="{tx:.1}" y2="{axis_y:.1}" stroke="{stroke}" stroke-width="1"/>"#
        );
        let _ = writeln!(
            body,
            r#"<text x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            axis_y + 20.0,
            fmt_ms(tick)
        );
        tick += step;
    }
    let _ = writeln!(
        body,
        r#"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="{MUTED}" stroke-width="1"/>"#
    );
    let _ = writeln!(
        body,
        r#"<text x="{PLOT_RIGHT}" y="{:.1}" text-anchor="end">{}</text>"#,
        axis_y + 40.0,
        esc(t("ms since the producer started", "ms kể từ khi producer bắt đầu"))
    );
    let _ = writeln!(body, "</g>");

    // Lanes.
    for (i, (lane, lay)) in tl.lanes.iter().zip(&layouts).enumerate() {
        let _ = writeln!(body, r#"<g class="lane" data-actor="{}">"#, esc(&lane.actor.to_string()));
        if i % 2 == 1 {
            let _ = writeln!(
                body,
                r##"<rect x="{MARGIN}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#f7f7f7"/>"##,
                lay.top,
                WIDTH - 2.0 * MARGIN,
                lay.bottom - lay.top
            );
        }
        let _ = writeln!(
            body,
            r#"<text x="{:.1}" y="{:.1}" font-size="18" font-weight="bold" fill="{INK}" text-anchor="end">{}</text>"#,
            PLOT_LEFT - 16.0,
            lay.y + 6.0,
            esc(&lane.actor.to_string())
        );
        let from = lane.ready.map_or(tl.start, |r| r.max(tl.start));
        let _ = writeln!(
            body,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{PLOT_RIGHT}" y2="{:.1}" stroke="#9e9e9e" stroke-width="1.5"/>"##,
            x(from),
            lay.y,
            lay.y
        );
        if lane.ready.is_some() {
            let _ = writeln!(
                body,
                r##"<line class="ready" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#9e9e9e" stroke-width="2"/>"##,
                x(from),
                lay.y - 6.0,
                x(from),
                lay.y + 6.0
            );
        }
        for bar in &lane.bars {
            let (x0, x1) = (x(bar.t0), x(bar.t1));
            let w = (x1 - x0).max(2.0);
            match bar.kind {
                BarKind::Work { ms } => {
                    let _ = writeln!(
                        body,
                        r#"<rect class="work" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="{WORK_H}" rx="3" fill="{WORK}" fill-opacity="0.85" data-ms="{}"/>"#,
                        lay.y - WORK_H / 2.0,
                        fmt_ms(ms)
                    );
                    let label = format!("{} ms", fmt_ms(ms));
                    if text_width(&label, LABEL_PX) + 8.0 < w {
                        let _ = writeln!(
                            body,
                            r#"<text x="{:.1}" y="{:.1}" font-size="{LABEL_PX}" fill="white" text-anchor="middle">{}</text>"#,
                            x0 + w / 2.0,
                            lay.y + 4.5,
                            esc(&label)
                        );
                    }
                }
                BarKind::Lock => {
                    let _ = writeln!(
                        body,
                        r#"<rect class="lock" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="{LOCK_H}" fill="url(#hatch)" stroke="{LOCK}" stroke-width="1.5"/>"#,
                        lay.y + WORK_H / 2.0 + 2.0
                    );
                }
                BarKind::LockExpired => {
                    let _ = writeln!(
                        body,
                        r#"<rect class="lock-expired" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="{LOCK_H}" fill="none" stroke="{RED}" stroke-width="1.5" stroke-dasharray="5 3"/>"#,
                        lay.y + WORK_H / 2.0 + 2.0
                    );
                }
                BarKind::Wait => {
                    let _ = writeln!(
                        body,
                        r##"<rect class="wait" x="{x0:.2}" y="{:.1}" width="{w:.2}" height="8" fill="#eadcf3" stroke="{SQL}" stroke-width="1" stroke-dasharray="2 2"/>"##,
                        lay.y - 4.0
                    );
                }
            }
        }
        // Leaders first, then glyphs, then labels, so text stays on top.
        let label_y = |p: &Placed| {
            if p.above {
                lay.y - WORK_H / 2.0 - 8.0 - p.row as f64 * ROW_H
            } else {
                lay.y + WORK_H / 2.0 + LOCK_H + 6.0 + LABEL_PX + p.row as f64 * ROW_H
            }
        };
        for p in &lay.labels {
            let m = &lane.marks[p.mark];
            let mx = x(m.t);
            let ly = label_y(p);
            let (y1, y2) = if p.above { (ly - LABEL_PX + 2.0, lay.y) } else { (lay.y, ly - LABEL_PX + 2.0) };
            if p.row > 0 || !p.above {
                let _ = writeln!(
                    body,
                    r#"<line x1="{mx:.1}" y1="{y1:.1}" x2="{mx:.1}" y2="{y2:.1}" stroke="{}" stroke-width="1" stroke-opacity="0.5"/>"#,
                    m.glyph.color()
                );
            }
        }
        // Acks under everything else: they often share a millisecond with the write.
        let (acks, others): (Vec<&Mark>, Vec<&Mark>) = lane.marks.iter().partition(|m| m.glyph == Glyph::Acked);
        for m in acks.into_iter().chain(others) {
            glyph(&mut body, m.glyph, x(m.t), lay.y);
        }
        for p in &lay.labels {
            let m = &lane.marks[p.mark];
            let mx = x(m.t);
            let (lx, anchor) = if p.start_anchor { (mx + 4.0, "start") } else { (mx - 4.0, "end") };
            let strong = matches!(m.glyph, Glyph::Overwrote | Glyph::Crash | Glyph::Released | Glyph::Failed);
            let _ = writeln!(
                body,
                r#"<text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{}"{} stroke="white" stroke-width="3" paint-order="stroke">{}</text>"#,
                label_y(p),
                m.glyph.color(),
                if strong { r#" font-weight="bold""# } else { "" },
                esc(m.label.as_deref().unwrap_or_default())
            );
        }
        let _ = writeln!(body, "</g>");
    }

    // Footer: legend on the left, final state and verdict on the right.
    let footer_y = axis_y + 70.0;
    let (final_left, badge_bottom) = final_state(&mut body, record, variant, footer_y, lang);
    let legend_bottom = if final_left - MARGIN >= 420.0 {
        legend(&mut body, tl, footer_y, final_left - 28.0, lang)
    } else {
        legend(&mut body, tl, badge_bottom + 28.0, WIDTH - MARGIN, lang)
    };
    let height = (legend_bottom.max(badge_bottom) + MARGIN).ceil();

    let mut out = String::new();
    header(&mut out, height, title_lines.first().map(|l| l.0.as_str()).unwrap_or_default());
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// A key to the marks present in this run, wrapped within the left part of the footer.
fn legend(out: &mut String, tl: &Timeline, y0: f64, max_x: f64, lang: Lang) -> f64 {
    let t = |en: &'static str, vi: &'static str| tr(lang, en, vi);
    let has_bar = |f: fn(&BarKind) -> bool| tl.lanes.iter().any(|l| l.bars.iter().any(|b| f(&b.kind)));
    let has = |g: Glyph| tl.lanes.iter().any(|l| l.marks.iter().any(|m| m.glyph == g));
    let mut items: Vec<(&str, &'static str)> = Vec::new();
    if has_bar(|k| matches!(k, BarKind::Work { .. })) {
        items.push(("work", t("handler work", "xử lý")));
    }
    if has_bar(|k| matches!(k, BarKind::Lock)) {
        items.push(("lock", t("lock held", "giữ lock")));
    }
    if has_bar(|k| matches!(k, BarKind::LockExpired)) {
        items.push(("lock-expired", t("lock already expired", "lock đã hết hạn")));
    }
    if has_bar(|k| matches!(k, BarKind::Wait)) {
        items.push(("wait", t("waiting", "chờ")));
    }
    let glyphs: [(Glyph, &'static str); 9] = [
        (Glyph::Received, t("received", "nhận")),
        (Glyph::Published, t("publish OK", "publish OK")),
        (Glyph::Failed, t("publish failed", "publish lỗi")),
        (Glyph::Wrote, t("wrote", "ghi")),
        (Glyph::Stale, t("stale, skipped", "bản cũ, bỏ qua")),
        (Glyph::Overwrote, t("overwrote a newer state", "đè lên trạng thái mới hơn")),
        (Glyph::Crash, t("crash", "crash")),
        (Glyph::SqlSent, t("SQL sent / done", "SQL gửi / xong")),
        (Glyph::Outbox, t("outbox round", "vòng outbox")),
    ];
    let mut keyed: Vec<(Glyph, &'static str)> = Vec::new();
    for (g, label) in glyphs {
        let present = match g {
            Glyph::SqlSent => has(Glyph::SqlSent) || has(Glyph::SqlDone) || has(Glyph::SqlError),
            Glyph::Outbox => has(Glyph::Outbox) || has(Glyph::OutboxFailed),
            g => has(g),
        };
        if present {
            keyed.push((g, label));
        }
    }
    let (mut lx, mut ly) = (MARGIN, y0);
    let mut advance = |w: f64| {
        if lx + w > max_x && lx > MARGIN {
            lx = MARGIN;
            ly += 26.0;
        }
        let at = (lx, ly);
        lx += w + 22.0;
        at
    };
    let _ = writeln!(out, r#"<g class="legend" font-size="14" fill="{MUTED}">"#);
    for (kind, label) in items {
        let (bx, by) = advance(36.0 + text_width(label, 14.0));
        let _ = match kind {
            "work" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="14" rx="2" fill="{WORK}" fill-opacity="0.85"/>"#,
                by - 12.0
            ),
            "lock" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="{LOCK_H}" fill="url(#hatch)" stroke="{LOCK}" stroke-width="1.5"/>"#,
                by - 9.0
            ),
            "lock-expired" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="{LOCK_H}" fill="none" stroke="{RED}" stroke-width="1.5" stroke-dasharray="5 3"/>"#,
                by - 9.0
            ),
            _ => writeln!(
                out,
                r##"<rect x="{bx:.1}" y="{:.1}" width="28" height="8" fill="#eadcf3" stroke="{SQL}" stroke-width="1" stroke-dasharray="2 2"/>"##,
                by - 9.0
            ),
        };
        let _ = writeln!(out, r#"<text x="{:.1}" y="{by:.1}">{}</text>"#, bx + 36.0, esc(label));
    }
    for (g, label) in keyed {
        let (gx, gy) = advance(22.0 + text_width(label, 14.0));
        glyph(out, g, gx + 8.0, gy - 5.0);
        let _ = writeln!(out, r#"<text x="{:.1}" y="{gy:.1}">{}</text>"#, gx + 22.0, esc(label));
    }
    let _ = writeln!(out, "</g>");
    ly + 8.0
}

/// The run's final rows and the verdict badge, right-aligned; returns their left edge and bottom.
fn final_state(out: &mut String, r: &RunRecord, v: &VariantReport, y0: f64, lang: Lang) -> (f64, f64) {
    let t = |en: &'static str, vi: &'static str| tr(lang, en, vi);
    let rows: Vec<String> = if r.final_rows.is_empty() {
        vec![t("no row", "không có dòng nào").to_string()]
    } else {
        r.final_rows
            .iter()
            .map(|row| {
                let mut s = format!("#{} = {}", row.order, row.status);
                if let Some(exp) = v.setup.expected_status(row.order).filter(|e| *e != row.status) {
                    let _ = write!(s, " ({} {exp})", t("should be", "đúng ra là"));
                }
                s
            })
            .collect()
    };
    // More than three rows do not fit beside the badge: name only the wrong ones.
    let wrong: Vec<String> = r
        .final_rows
        .iter()
        .filter(|row| v.setup.expected_status(row.order).is_some_and(|e| e != row.status))
        .map(|row| format!("#{} = {}", row.order, row.status))
        .collect();
    let mut text = if rows.len() > 3 {
        let n = r.final_rows.len();
        match (wrong.is_empty(), lang) {
            (true, Lang::En) => format!("final: all {n} orders right"),
            (true, Lang::Vi) => format!("cuối: cả {n} đơn đúng"),
            (false, Lang::En) => format!("final: {} of {n} wrong ({})", wrong.len(), wrong.join(", ")),
            (false, Lang::Vi) => format!("cuối: {} trên {n} đơn sai ({})", wrong.len(), wrong.join(", ")),
        }
    } else {
        format!("{}: {}", t("final", "cuối"), rows.join(", "))
    };
    if r.timed_out {
        let _ = write!(text, " · {}", t("timed out", "hết giờ"));
    }
    let (badge, color, class) = match r.verdict.verdict {
        Verdict::Wrong => (t("✕ WRONG", "✕ SAI"), RED, "wrong"),
        Verdict::Right => (t("✓ RIGHT", "✓ ĐÚNG"), GREEN, "right"),
        Verdict::Unknown => (t("? UNKNOWN", "? CHƯA RÕ"), GREY, "unknown"),
    };
    let badge_w = text_width(badge, 20.0) + 28.0;
    let right = WIDTH - MARGIN;
    let bx = right - badge_w;
    let _ = writeln!(
        out,
        r#"<text class="final" x="{:.1}" y="{y0:.1}" font-size="18" fill="{INK}" text-anchor="end">{}</text>"#,
        bx - 14.0,
        esc(&text)
    );
    let _ = writeln!(
        out,
        r#"<g class="badge {class}"><rect x="{bx:.1}" y="{:.1}" width="{badge_w:.1}" height="34" rx="17" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="20" font-weight="bold" fill="white" text-anchor="middle">{}</text></g>"#,
        y0 - 24.0,
        bx + badge_w / 2.0,
        y0 - 0.5,
        esc(badge)
    );
    (bx - 14.0 - text_width(&text, 18.0), y0 + 12.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::{Outcome, RunVerdict};
    use crate::report::{Environment, LabInfo, StreamEntry};
    use crate::scenario::{Expectation, OrderRow, Setup};

    fn job(t: &str, v: i64) -> Job {
        Job { order: 42, event_type: t.into(), version: v }
    }

    fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us: t_ms * 1000, actor, kind }
    }

    /// The baseline race with a short lock: C1's lock expires, C2 writes paid, C1 overwrites it.
    fn report(verdict: Verdict) -> LabReport {
        let setup = Setup::from_toml(
            r#"consumers = 2
strategy = "lock"
lock = { ttl_ms = 1000, retry_ms = 20 }
cost_ms = { created = 800, paid = 50 }
events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#,
        )
        .unwrap();
        let (c1, c2, p) = (Actor::Consumer(1), Actor::Consumer(2), Actor::Producer);
        let lock = |tries| EventKind::LockAcquired { key: "lock:order:42".into(), tries, ttl_ms: 1000 };
        let release =
            |released| EventKind::LockReleased { key: "lock:order:42".into(), method: "Lua".into(), released };
        let wrote = |id: &str, status: &str| EventKind::Wrote {
            entry_id: id.into(),
            order: 42,
            status: status.into(),
            version: None,
            rows: 1,
        };
        let events = vec![
            ev(-3, c1, EventKind::Ready),
            ev(-2, c2, EventKind::Ready),
            ev(0, p, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
            ev(0, p, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
            ev(0, c1, EventKind::Received { entry_id: "1-0".into(), job: job("created", 1), deliveries: None }),
            ev(0, c2, EventKind::Received { entry_id: "1-1".into(), job: job("paid", 2), deliveries: None }),
            ev(0, c1, lock(1)),
            ev(0, c1, EventKind::WorkStarted { entry_id: "1-0".into(), ms: 800.0 }),
            ev(502, c2, lock(25)),
            ev(502, c2, EventKind::WorkStarted { entry_id: "1-1".into(), ms: 50.0 }),
            ev(552, c2, wrote("1-1", "paid")),
            ev(552, c2, release(1)),
            ev(552, c2, EventKind::Acked { entry_id: "1-1".into() }),
            ev(800, c1, wrote("1-0", "created")),
            ev(800, c1, release(0)),
            ev(800, c1, EventKind::Acked { entry_id: "1-0".into() }),
        ];
        let run = RunRecord {
            facts: Default::default(),
            run: 1,
            stream: vec![
                StreamEntry { shard: 0, entry_id: "1-0".into(), job: job("created", 1) },
                StreamEntry { shard: 0, entry_id: "1-1".into(), job: job("paid", 2) },
            ],
            events,
            final_rows: vec![OrderRow { order: 42, status: "created".into(), version: 1 }],
            outbox_rows: None,
            timed_out: false,
            verdict: RunVerdict { verdict, reasons: vec![] },
        };
        LabReport {
            schema_version: 1,
            environment: Environment {
                ordlab_version: "0.1.0".into(),
                git_commit: "abc".into(),
                backend: "local".into(),
                redis_version: "7".into(),
                postgres_version: "15".into(),
                lock_release: "Lua".into(),
                command_line: String::new(),
                date: "2026-01-01T00:00:00Z".into(),
                seed: 1,
                // TTL 1000 ms at half speed: the lock lasts 500 ms on the run's clock.
                time_scale: 0.5,
            },
            lab: LabInfo { id: "lock".into(), title: "Lock".into(), source: "new".into(), description: None },
            variants: vec![VariantReport {
                id: "s4c".into(),
                title: "S4c: <short> TTL & \"quotes\"".into(),
                setup,
                runs: 1,
                wrong: u32::from(verdict == Verdict::Wrong),
                unknown: 0,
                expected: Expectation::All,
                outcome: Outcome::Matched,
                scheduler_race: false,
                run_records: vec![run],
            }],
        }
    }

    /// A minimal XML well-formedness check: balanced tags, quoted attributes, known entities.
    fn assert_well_formed(xml: &str) {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = xml;
        let check_text = |text: &str| {
            let mut t = text;
            while let Some(i) = t.find('&') {
                let end = t[i..].find(';').unwrap_or_else(|| panic!("bare & in {t:?}"));
                let entity = &t[i + 1..i + end];
                assert!(
                    matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos") || entity.starts_with('#'),
                    "unknown entity &{entity};"
                );
                t = &t[i + end..];
            }
            assert!(!text.contains('>') || !text.contains('<'), "stray angle bracket in {text:?}");
        };
        while let Some(open) = rest.find('<') {
            check_text(&rest[..open]);
            let close = rest[open..].find('>').expect("unclosed tag") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched </{name}>");
                continue;
            }
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, mut attrs) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
            assert!(!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-'), "bad name {name:?}");
            let mut seen = Vec::new();
            loop {
                attrs = attrs.trim_start();
                if attrs.is_empty() {
                    break;
                }
                let (key, after) =
                    attrs.split_once('=').unwrap_or_else(|| panic!("attribute without value: {attrs:?}"));
                assert!(after.starts_with('"'), "unquoted attribute {key}");
                let end = after[1..].find('"').expect("unterminated attribute") + 1;
                let value = &after[1..end];
                assert!(!value.contains('<'), "< in attribute {key}");
                check_text(value);
                assert!(!seen.contains(&key), "duplicate attribute {key} in <{name}>");
                seen.push(key);
                attrs = &after[end + 1..];
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        check_text(rest);
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    }

    fn attr(tag: &str, name: &str) -> f64 {
        let key = format!(" {name}=\"");
        let start = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
        tag[start..].split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn one_lane_per_actor_in_lane_order() {
        let r = report(Verdict::Wrong);
        let svg = render(&r, &r.variants[0], 1, Lang::En);
        let lanes: Vec<&str> =
            svg.split("<g class=\"lane\" data-actor=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
        assert_eq!(lanes, ["producer", "C1", "C2"]);
    }

    #[test]
    fn work_bars_are_proportional_to_their_duration() {
        let r = report(Verdict::Wrong);
        let svg = render(&r, &r.variants[0], 1, Lang::En);
        let bars: Vec<&str> = svg.lines().filter(|l| l.starts_with("<rect class=\"work\"")).collect();
        assert_eq!(bars.len(), 2, "one bar per work_started");
        let (long, short) = (attr(bars[0], "width"), attr(bars[1], "width"));
        assert!((long / short - 16.0).abs() < 0.01, "800 ms vs 50 ms: {long} / {short}");
        assert!(attr(bars[1], "x") > attr(bars[0], "x"));
    }

    #[test]
    fn an_expired_lock_and_an_overwrite_are_marked() {
        let r = report(Verdict::Wrong);
        let svg = render(&r, &r.variants[0], 1, Lang::En);
        assert!(svg.contains("lock expired (TTL 500 ms)"), "TTL scaled by the time scale");
        assert!(svg.contains("released → 0: expired, not ours"));
        assert!(svg.contains("class=\"lock-expired\""));
        assert!(svg.contains("wrote created: overwrote a newer state"));
        assert!(svg.contains(">wrote paid<"));
        assert!(svg.contains("took lock after 25 tries"));
    }

    #[test]
    fn the_verdict_badge_follows_the_run() {
        let r = report(Verdict::Wrong);
        let svg = render(&r, &r.variants[0], 1, Lang::En);
        assert!(svg.contains(r#"class="badge wrong""#) && svg.contains("✕ WRONG"));
        assert!(svg.contains("final: #42 = created (should be paid)"));
        let vi = render(&r, &r.variants[0], 1, Lang::Vi);
        assert!(vi.contains("✕ SAI") && vi.contains("cuối: #42") && vi.contains("nhận created v1"));
        let r = report(Verdict::Right);
        assert!(render(&r, &r.variants[0], 1, Lang::En).contains("✓ RIGHT"));
        let r = report(Verdict::Unknown);
        assert!(render(&r, &r.variants[0], 1, Lang::Vi).contains(r#"class="badge unknown""#));
    }

    #[test]
    fn output_is_well_formed_and_escaped() {
        let r = report(Verdict::Wrong);
        for lang in [Lang::En, Lang::Vi] {
            let svg = render(&r, &r.variants[0], 1, lang);
            assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
            assert!(!svg.contains("<script") && !svg.contains("href"));
            assert!(svg.contains("&lt;short&gt; TTL &amp; &quot;quotes&quot;"));
            assert_well_formed(&svg);
        }
        let missing = render(&r, &r.variants[0], 9, Lang::En);
        assert_well_formed(&missing);
        assert!(missing.contains("run 9: not in this report"));
    }

    #[test]
    fn labels_at_the_same_time_do_not_overlap() {
        let marks: Vec<Mark> = (0..4)
            .map(|i| Mark { t: 100.0, glyph: Glyph::Received, label: Some(format!("label number {i}")) })
            .collect();
        let placed = place_labels(&marks, &|t| t);
        let mut slots: Vec<(bool, usize)> = placed.iter().map(|p| (p.above, p.row)).collect();
        slots.sort();
        slots.dedup();
        assert_eq!(slots.len(), 4, "each label in its own row");
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(880.0), 100.0);
        assert_eq!(tick_step(1850.0), 200.0);
        assert_eq!(tick_step(2300.0), 250.0);
        assert_eq!(tick_step(45.0), 5.0);
    }

    #[test]
    fn sql_and_outbox_events_get_labelled_marks() {
        let mut r = report(Verdict::Right);
        let run = &mut r.variants[0].run_records[0];
        run.events = vec![
            ev(0, Actor::Session('A'), EventKind::SqlSent { case: 1, order: 42, statement: "BEGIN".into() }),
            ev(
                120,
                Actor::Session('B'),
                EventKind::SqlDone { case: 1, order: 42, outcome: "UPDATE 1".into(), waited_ms: 110.0 },
            ),
            ev(
                200,
                Actor::Dispatcher(1),
                EventKind::OutboxRound { round: 1, published: vec![42], failed: vec![43], held_back: vec![] },
            ),
        ];
        let svg = render(&r, &r.variants[0], 1, Lang::En);
        assert_well_formed(&svg);
        for needle in
            ["BEGIN", "→ UPDATE 1 after waiting 110 ms", "round 1: published #42; failed #43", "class=\"wait\""]
        {
            assert!(svg.contains(needle), "{needle}");
        }
        let lanes = svg.matches("<g class=\"lane\"").count();
        assert_eq!(lanes, 3);
    }
}
