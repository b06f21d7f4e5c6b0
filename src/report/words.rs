//! The words for every timeline event, in both languages: one line per event, in the shape of
//! the seed's own lab output (`C1 received 1792591449272-0 created (v=1)`). The text report
//! prints them; the lab book's step-through captions reuse them.

mod jobs;
mod list_queue;
mod queue;

pub use jobs::{fail_words, skip_words};

use super::Redactor;
use crate::labs::stream::job_label;
use crate::labs::{Procedure, RunRecord};
use crate::lang::{pick, Lang};
use crate::timeline::{Event, EventKind};

/// How to word a run's events.
#[derive(Clone, Copy, Debug)]
pub struct Wording {
    pub lang: Lang,
    /// The lab has several orders: name the order in every line.
    pub many_orders: bool,
    pub redact: Redactor,
}

/// One timeline line, or None for events the text report leaves to JSON and SVG.
pub fn event_line(e: &Event, w: &Wording) -> Option<String> {
    let a = e.actor;
    let id = |x: &str| w.redact.entry_id(x);
    Some(match &e.kind {
        EventKind::Ready | EventKind::WorkStarted { .. } | EventKind::Acked { .. } => return None,
        EventKind::Published { entry_id, job, attempt } => {
            format!("{a}: {} OK → {}", attempt_label(job, *attempt), id(entry_id))
        }
        EventKind::PublishFailed { job, attempt, retry_in_ms, reason } => {
            publish_failed(a, job, *attempt, *retry_in_ms, reason, w.lang)
        }
        EventKind::Received { entry_id, job: j, deliveries } => {
            let mut line =
                format!("{a} {} {} {}", pick(w.lang, "received", "nhận"), id(entry_id), job_label(j, w.many_orders));
            // A redelivery: same entry ID, the server's delivery count raised.
            if let Some(d) = deliveries.filter(|d| *d > 1) {
                line.push_str(&crate::tr!(w.lang, " (delivery {d}, same ID)", " (lần giao thứ {d}, cùng ID)"));
            }
            line
        }
        EventKind::Queued { entry_id, worker } => {
            let entry = id(entry_id);
            crate::tr!(w.lang, "{a} queued {entry} in queue {worker}", "{a} xếp {entry} vào hàng đợi {worker}")
        }
        EventKind::LockAcquired { .. } | EventKind::LockReleased { .. } => return lock_line(a, &e.kind, w),
        EventKind::Wrote { status, version, rows, order, .. } => wrote(a, *order, status, *version, *rows, w),
        EventKind::Inserted { order, status, version, .. } => {
            let status = status_label(status, *order, w.many_orders);
            format!("{a} {} status={status} version={version} → INSERT 0 1", pick(w.lang, "wrote", "ghi"))
        }
        EventKind::WriteFailed { order, status, error, .. } => {
            let status = status_label(status, *order, w.many_orders);
            crate::tr!(
                w.lang,
                "{a} INSERT status={status} → ERROR: {error} (the change is lost)",
                "{a} INSERT status={status} → LỖI: {error} (thay đổi bị mất)"
            )
        }
        EventKind::Held { entry_id, job: j, waiting_for } => {
            let (entry, job) = (id(entry_id), job_label(j, w.many_orders));
            crate::tr!(
                w.lang,
                "{a} holds {entry} {job} until v={waiting_for} arrives",
                "{a} giữ {entry} {job} chờ v={waiting_for}"
            )
        }
        EventKind::Dropped { entry_id, job: j, reason } => {
            let (entry, job) = (id(entry_id), job_label(j, w.many_orders));
            crate::tr!(w.lang, "{a} drops {entry} {job}: {reason}", "{a} bỏ {entry} {job}: cũ hơn bản đã áp dụng")
        }
        EventKind::GapTimeout { order, missing_version, held_ms } => {
            let held = if w.redact.active() { "[ms]".to_string() } else { format!("{held_ms:.0} ms") };
            crate::tr!(
                w.lang,
                "{a} gap timeout: #{order} v={missing_version} never came after {held}; applies what it holds",
                "{a} hết thời gian chờ #{order} v={missing_version} sau {held}: áp dụng phần đang giữ"
            )
        }
        EventKind::JobQueued { .. } | EventKind::JobDone { .. } => return None,
        EventKind::PhaseStarted { .. } | EventKind::PriorityJobTaken { .. } => return priority_line(e, w),
        EventKind::QueueRead { .. } | EventKind::JobRequeued { .. } => return priority_line(e, w),
        EventKind::Effect { .. }
        | EventKind::JobPublished { .. }
        | EventKind::JobReceived { .. }
        | EventKind::JobStep { .. }
        | EventKind::JobSkipped { .. }
        | EventKind::JobAcked { .. }
        | EventKind::JobFailed { .. }
        | EventKind::DeadLettered { .. } => return jobs::job_line(a, &e.kind, w),
        EventKind::SqlSent { .. }
        | EventKind::SqlDone { .. }
        | EventKind::OutboxRound { .. }
        | EventKind::LagWindow { .. }
        | EventKind::ServerKilled { .. }
        | EventKind::ReplicaPromoted { .. }
        | EventKind::Reconnected { .. }
        | EventKind::Crashed { .. } => return Some(session_line(e, w)),
        EventKind::JobPushed { .. }
        | EventKind::JobsPushed { .. }
        | EventKind::JobTaken { .. }
        | EventKind::JobApplied { .. }
        | EventKind::QueueError { .. }
        | EventKind::WorkerDone { .. }
        | EventKind::SlotMigrating { .. }
        | EventKind::SlotKeysMoved { .. }
        | EventKind::SlotOwned { .. } => return Some(queue::queue_line(e, w)),
        crate::list_queue_events!() => return list_queue::line(e, w),
    })
}

/// A lock taken or released; None for any other event.
fn lock_line(a: crate::timeline::Actor, kind: &EventKind, w: &Wording) -> Option<String> {
    let vi = w.lang == Lang::Vi;
    Some(match kind {
        EventKind::LockAcquired { key, tries, ttl_ms, .. } => {
            let n = if w.redact.active() { "[n]".to_string() } else { tries.to_string() };
            let unit = if *tries == 1 && !w.redact.active() { "try" } else { "tries" };
            crate::tr!(
                w.lang,
                "{a} took {key} (SET NX PX {ttl_ms}) after {n} {unit}",
                "{a} lấy được {key} (SET NX PX {ttl_ms}) sau {n} lần thử"
            )
        }
        EventKind::LockReleased { method, released, .. } => {
            let note = match (*released, vi) {
                (0, false) => " (the lock had expired: no longer ours)",
                (0, true) => " (lock đã hết hạn, không còn là của mình)",
                _ => "",
            };
            // How a lock is released depends on the server's version (DELEX since 8.4): a
            // snapshot holds on any supported version.
            let method = if w.redact.active() { "[release]" } else { method.as_str() };
            format!("{a} {}: {method} → {released}{note}", pick(w.lang, "released the lock", "nhả lock"))
        }
        _ => return None,
    })
}

/// A run's timeline as the text report prints it and the lab book steps through it: the
/// events it shows (publishing only where the lab shows it), in print order, each with its
/// line. Both read this one list, so a step's caption is the text report's line.
///
/// `race`: the variant's interleaving across processes is the race it measures; redacted, the
/// timeline is then listed process by process.
pub fn timeline_lines<'a>(
    r: &'a RunRecord,
    procedure: &Procedure,
    w: &Wording,
    race: bool,
) -> Vec<(&'a Event, String)> {
    let show_publish = procedure.shows_publishing();
    // Ordered with every event (a publish orders its receive), then filtered to what is shown.
    let all: Vec<&Event> = r.events.iter().collect();
    let ordered = if race { w.redact.order_by_process(all) } else { w.redact.order(all) };
    ordered
        .into_iter()
        .filter(|e| {
            show_publish
                || !matches!(
                    e.kind,
                    EventKind::Published { .. } | EventKind::PublishFailed { .. } | EventKind::JobPublished { .. }
                )
        })
        .filter_map(|e| event_line(e, w).map(|line| (e, line)))
        .collect()
}

/// Lines of SQL sessions, outbox rounds, servers and crashes.
fn session_line(e: &Event, w: &Wording) -> String {
    let a = e.actor;
    let vi = w.lang == Lang::Vi;
    match &e.kind {
        EventKind::SqlSent { statement, .. } => format!("{a} {statement}"),
        EventKind::SqlDone { outcome, waited_ms, .. } => {
            let waited = if w.redact.active() || *waited_ms < 5.0 {
                String::new()
            } else {
                crate::tr!(w.lang, " after waiting {waited_ms:.0} ms", " sau khi chờ {waited_ms:.0} ms")
            };
            format!("{a} → {outcome}{waited}")
        }
        EventKind::OutboxRound { round, published, failed, held_back } => {
            outbox_round(a, *round, published, failed, held_back, w.lang)
        }
        EventKind::LagWindow { how } => crate::tr!(
            w.lang,
            "{a}: the replica stops receiving the replication stream ({how}); the primary still takes writes and acks",
            "{a}: replica ngừng nhận luồng replication ({how}); primary vẫn nhận ghi và ack"
        ),
        EventKind::ServerKilled { server, signal } => {
            crate::tr!(w.lang, "{a}: {signal} → the {server} dies", "{a}: {signal} → {server} chết")
        }
        EventKind::ReplicaPromoted { behind_bytes } => {
            let b = w.redact.count(behind_bytes);
            crate::tr!(
                w.lang,
                "{a}: REPLICAOF NO ONE → the replica is the primary now, {b} bytes of replication stream short",
                "{a}: REPLICAOF NO ONE → replica lên làm primary, thiếu {b} byte luồng replication"
            )
        }
        EventKind::Reconnected { server } => match a {
            crate::timeline::Actor::Producer => crate::tr!(
                w.lang,
                "{a}: the primary is gone; goes on at the {server}, the new primary",
                "{a}: primary mất; chuyển sang {server}, primary mới"
            ),
            _ => crate::tr!(
                w.lang,
                "{a}: the primary is gone; goes on at the {server}, the new primary, reading its own pending entries first",
                "{a}: primary mất; chuyển sang {server}, primary mới, đọc lại các entry đang chờ của mình trước"
            ),
        },
        EventKind::Crashed { planned, detail } => match (planned, vi) {
            (true, false) => format!("{a} CRASHED (injected: {detail})"),
            (true, true) => format!("{a} CRASH (chủ động: {detail})"),
            (false, false) => format!("{a} DIED unexpectedly: {detail}"),
            (false, true) => format!("{a} chết bất ngờ: {detail}"),
        },
        _ => String::new(),
    }
}

/// Lines of priority-queue runs: a phase the orchestrator starts, a traced job a worker
/// takes, a lease that ended (None for reads and untraced jobs, counted in the notes).
fn priority_line(e: &Event, w: &Wording) -> Option<String> {
    let a = e.actor;
    Some(match &e.kind {
        EventKind::PhaseStarted { plan } => phase_line(a, plan, w),
        EventKind::PriorityJobTaken { traced: false, .. } => return None,
        EventKind::PriorityJobTaken { job, priority, phase, waited_ms, .. } => {
            let phase = crate::timeline::phase_label(phase, w.lang);
            let waited = match waited_ms {
                Some(ms) => {
                    let ms = w.redact.ms(ms.round() as i64);
                    crate::tr!(w.lang, " after {ms} in the queue", " sau {ms} trong hàng đợi")
                }
                None => String::new(),
            };
            crate::tr!(
                w.lang,
                "{a} took {job} ({priority}, {phase}){waited}",
                "{a} lấy {job} ({priority}, {phase}){waited}"
            )
        }
        EventKind::JobRequeued { job } => crate::tr!(
            w.lang,
            "{a}: the lease of {job} ended before it was done: back in the queue",
            "{a}: lease của {job} hết hạn khi chưa xong: trả lại hàng đợi"
        ),
        _ => return None,
    })
}

fn phase_line(a: crate::timeline::Actor, plan: &crate::timeline::PhasePlan, w: &Wording) -> String {
    use crate::timeline::PhasePlan;
    let counts = |jobs: &[u32; 3]| {
        let parts: Vec<String> = crate::timeline::Priority::ALL
            .iter()
            .filter(|p| jobs[p.index()] > 0)
            .map(|p| format!("{} {p}", jobs[p.index()]))
            .collect();
        parts.join(", ")
    };
    match plan {
        PhasePlan::Backlog { jobs } => {
            let c = counts(jobs);
            crate::tr!(
                w.lang,
                "{a}: backlog queued before the worker starts: {c}",
                "{a}: tồn đọng xếp hàng trước khi worker chạy: {c}"
            )
        }
        PhasePlan::Probe { blocked_in: Some(read), .. } => crate::tr!(
            w.lang,
            "{a}: probe: 1 critical job while C1 is blocked in {read}",
            "{a}: thăm dò: 1 job critical trong lúc C1 đang bị block trong {read}"
        ),
        PhasePlan::Probe { after_ms, .. } => {
            let after = after_ms.unwrap_or(0.0);
            crate::tr!(
                w.lang,
                "{a}: probe: 1 critical job, {after} ms after the last one was done",
                "{a}: thăm dò: 1 job critical, {after} ms sau khi job trước xong"
            )
        }
        PhasePlan::Trickle { every_ms, jobs } => {
            let (k, lower) = (jobs[0], counts(&[0, jobs[1], jobs[2]]));
            let lower = if lower.is_empty() {
                String::new()
            } else {
                crate::tr!(w.lang, "; {lower} at its start", "; {lower} lúc bắt đầu")
            };
            crate::tr!(
                w.lang,
                "{a}: trickle: a critical job every {every_ms} ms × {k}{lower}",
                "{a}: nhỏ giọt: một job critical mỗi {every_ms} ms × {k}{lower}"
            )
        }
        PhasePlan::Burst { critical } => crate::tr!(
            w.lang,
            "{a}: burst: {critical} critical at once, nothing else queued",
            "{a}: dồn: {critical} critical cùng lúc, không còn gì khác trong hàng đợi"
        ),
        PhasePlan::Idle { ms } => crate::tr!(
            w.lang,
            "{a}: idle: nothing queued for {ms} ms; the server counts C1's commands",
            "{a}: rảnh: không có job nào trong {ms} ms; server đếm lệnh của C1"
        ),
        PhasePlan::Flood { critical, low, ms, tau_ms } => {
            let aging = match tau_ms {
                Some(tau) => crate::tr!(
                    w.lang,
                    "; score = priority − t_queued / {tau} ms (aging)",
                    "; score = mức ưu tiên − t_xếp_hàng / {tau} ms (aging)"
                ),
                None => String::new(),
            };
            crate::tr!(
                w.lang,
                "{a}: flood: {critical} critical kept waiting for {ms} ms (one queued for each taken), {low} low at its start{aging}",
                "{a}: dồn dập: luôn giữ {critical} critical chờ trong {ms} ms (lấy một thêm một), {low} low lúc bắt đầu{aging}"
            )
        }
        PhasePlan::Takeover { by } => crate::tr!(
            w.lang,
            "{a}: {by} starts and takes over the queue (as a process manager restarts a dead worker)",
            "{a}: {by} khởi động và tiếp quản hàng đợi (như trình quản lý tiến trình khởi động lại worker đã chết)"
        ),
    }
}

/// `publish created (v=1)` for a first attempt, `retry #1 created` for a later one.
fn attempt_label(job: &crate::timeline::Job, attempt: u32) -> String {
    if attempt == 1 {
        format!("publish {job}")
    } else {
        format!("retry #{} {}", attempt - 1, job.event_type)
    }
}

fn publish_failed(
    a: crate::timeline::Actor,
    job: &crate::timeline::Job,
    attempt: u32,
    retry_in_ms: Option<f64>,
    reason: &str,
    lang: Lang,
) -> String {
    let what = attempt_label(job, attempt);
    if reason == crate::timeline::PRIMARY_GONE {
        return crate::tr!(
            lang,
            "{a}: {what} FAILED: the primary is gone (no reply); retried on the new primary",
            "{a}: {what} LỖI: primary mất (không có trả lời); gửi lại ở primary mới"
        );
    }
    let retry = match (retry_in_ms, attempt) {
        (Some(ms), 1) => crate::tr!(lang, " → retry in {ms} ms", " → hẹn retry sau {ms} ms"),
        (Some(ms), _) => {
            crate::tr!(lang, " → retry in {ms} ms more (backoff)", " → hẹn retry sau {ms} ms nữa (backoff)")
        }
        (None, _) => String::new(),
    };
    crate::tr!(
        lang,
        "{a}: {what} FAILED (injected network blip){retry}",
        "{a}: {what} LỖI (giả lập network blip){retry}"
    )
}

/// `paid`, or `paid (#42)` when the lab has several orders.
fn status_label(status: &str, order: i64, many: bool) -> String {
    if many {
        format!("{status} (#{order})")
    } else {
        status.to_string()
    }
}

fn wrote(a: crate::timeline::Actor, order: i64, status: &str, version: Option<i64>, rows: u64, w: &Wording) -> String {
    let status = status_label(status, order, w.many_orders);
    let v = version.map(|v| format!(" version={}", w.redact.version(v))).unwrap_or_default();
    let stale = match (rows, version.is_some(), w.lang) {
        (0, true, Lang::En) => " (skipped: stale)",
        (0, true, Lang::Vi) => " (bỏ qua: bản cũ)",
        _ => "",
    };
    // A delta that adds an item (`+book`) writes the item, not a status.
    let what = match status.strip_prefix('+') {
        Some(item) => format!("item {item}"),
        None => format!("status={status}"),
    };
    format!("{a} {} {what}{v} → UPDATE {rows}{stale}", pick(w.lang, "wrote", "ghi"))
}

fn outbox_round(
    a: crate::timeline::Actor,
    round: u32,
    published: &[i64],
    failed: &[i64],
    held_back: &[i64],
    lang: Lang,
) -> String {
    let rows = |v: &[i64]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        }
    };
    let (r, p, f, h) = match lang {
        Lang::En => ("round", "published rows", "failed rows", "held back rows"),
        Lang::Vi => ("vòng", "publish row", "lỗi row", "giữ lại row"),
    };
    let mut line = format!("{a} {r} {round}: {p} {} · {f} {}", rows(published), rows(failed));
    if !held_back.is_empty() {
        line.push_str(&format!(" · {h} {}", rows(held_back)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Actor, Job};

    fn wording(lang: Lang, redact: Redactor) -> Wording {
        Wording { lang, many_orders: false, redact }
    }

    #[test]
    fn the_seed_shape_in_both_languages() {
        let e = Event {
            t_us: 2000,
            actor: Actor::Consumer(1),
            kind: EventKind::Received { entry_id: "1-0".into(), job: Job::new(42, "created", 1), deliveries: Some(2) },
        };
        assert_eq!(
            event_line(&e, &wording(Lang::En, Redactor::NONE)).unwrap(),
            "C1 received 1-0 created (v=1) (delivery 2, same ID)"
        );
        assert_eq!(
            event_line(&e, &wording(Lang::Vi, Redactor::SNAPSHOT)).unwrap(),
            "C1 nhận [id] created (v=1) (lần giao thứ 2, cùng ID)"
        );
        let w = Event {
            t_us: 0,
            actor: Actor::Consumer(2),
            kind: EventKind::Wrote {
                entry_id: "1-1".into(),
                order: 42,
                status: "created".into(),
                version: Some(1),
                rows: 0,
            },
        };
        assert_eq!(
            event_line(&w, &wording(Lang::En, Redactor::NONE)).unwrap(),
            "C2 wrote status=created version=1 → UPDATE 0 (skipped: stale)"
        );
        let acked = Event { t_us: 0, actor: Actor::Consumer(2), kind: EventKind::Acked { entry_id: "1-1".into() } };
        assert_eq!(event_line(&acked, &wording(Lang::En, Redactor::NONE)), None);
    }
}
