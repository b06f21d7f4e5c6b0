//! Timeline lines of list-queue events (seed 003): pushes, takes, finishes, failures, retries,
//! the dead-letter list, poison payloads, the reaper's requeues and the scheduler's moves.

use super::Wording;
use crate::lang::pick;
use crate::timeline::{Event, EventKind};

/// The line for a list-queue event; None for events of other labs.
pub fn line(e: &Event, w: &Wording) -> Option<String> {
    let a = e.actor;
    let l = w.lang;
    Some(match &e.kind {
        EventKind::Pushed { job, list, len } => {
            let len = w.redact.count(len);
            crate::tr!(l, "{a}: push {job} → {list} (length {len})", "{a}: đẩy {job} → {list} (độ dài {len})")
        }
        EventKind::Taken { job, via, lease_ms } => match lease_ms {
            Some(ms) => {
                crate::tr!(l, "{a} took {job} ({via}), leased for {ms} ms", "{a} lấy {job} ({via}), giữ lease {ms} ms")
            }
            None => crate::tr!(l, "{a} took {job} ({via})", "{a} lấy {job} ({via})"),
        },
        EventKind::ListJobDone { job, removed } => match removed {
            Some(0) => crate::tr!(
                l,
                "{a} finished {job}; LREM → 0: its entry was already gone",
                "{a} xong {job}; LREM → 0: entry của nó đã không còn"
            ),
            Some(n) => crate::tr!(l, "{a} finished {job}; LREM → {n}", "{a} xong {job}; LREM → {n}"),
            None => crate::tr!(l, "{a} finished {job}", "{a} xong {job}"),
        },
        EventKind::ListJobFailed { job, attempt, error } => crate::tr!(
            l,
            "{a}: {job} failed on attempt {attempt}: {error}",
            "{a}: {job} lỗi ở lần thử {attempt}: {error}"
        ),
        EventKind::RetryScheduled { job, attempt, to, delay_ms } => match delay_ms {
            Some(ms) => crate::tr!(
                l,
                "{a}: {job} retry #{attempt} scheduled in {ms} ms ({to})",
                "{a}: hẹn thử lại {job} lần {attempt} sau {ms} ms ({to})"
            ),
            None => crate::tr!(
                l,
                "{a}: {job} pushed to {to} for retry #{attempt}, no delay",
                "{a}: đẩy {job} vào {to} để thử lại lần {attempt}, không chờ"
            ),
        },
        EventKind::ListDeadLettered { job, reason } => {
            let reason = reason_words(reason, w);
            crate::tr!(l, "{a}: {job} → dead-letter list ({reason})", "{a}: {job} → hàng đợi lỗi ({reason})")
        }
        EventKind::Poison { payload, slept_ms } => {
            let tail = if *slept_ms > 0.0 {
                crate::tr!(
                    l,
                    "; sleeps {slept_ms} ms, the entry stays in processing",
                    "; ngủ {slept_ms} ms, entry vẫn nằm trong processing"
                )
            } else {
                String::new()
            };
            crate::tr!(
                l,
                "{a}: payload does not parse ({payload}){tail}",
                "{a}: payload không parse được ({payload}){tail}"
            )
        }
        EventKind::Requeued { job, expired_ms_ago } => {
            let ago = w.redact.ms(*expired_ms_ago);
            crate::tr!(
                l,
                "{a}: lease of {job} ran out {ago} ago → back in the queue",
                "{a}: lease của {job} hết hạn {ago} trước → đưa lại vào hàng đợi"
            )
        }
        EventKind::MovedDue { job, late_ms } => {
            let late = w.redact.ms(*late_ms);
            crate::tr!(l, "{a}: {job} due → queue ({late} late)", "{a}: {job} đến hạn → hàng đợi (trễ {late})")
        }
        _ => return server_line(e, w),
    })
}

/// Lines of the labs that own a server: a restart after a kill, an eviction, a refusal.
fn server_line(e: &Event, w: &Wording) -> Option<String> {
    let a = e.actor;
    let l = w.lang;
    Some(match &e.kind {
        EventKind::ServerRestarted { jobs, load_ms } => {
            let (jobs, load) = (w.redact.count(jobs), w.redact.ms(load_ms.round() as i64));
            crate::tr!(
                l,
                "{a}: redis-server restarted on the same files, answering after {load}: {jobs} jobs in the queue",
                "{a}: redis-server khởi động lại trên cùng file dữ liệu, trả lời sau {load}: {jobs} job trong hàng đợi"
            )
        }
        EventKind::Evicted { key, jobs } => {
            let jobs = w.redact.count(jobs);
            crate::tr!(
                l,
                "{a}: the server evicted {key} whole, with {jobs} queued jobs in it (the next push answered length 1)",
                "{a}: server xoá (evict) nguyên key {key}, cùng {jobs} job đang chờ trong đó (lần đẩy sau trả về độ dài 1)"
            )
        }
        EventKind::Refused { job, error, refusals } => {
            let n = w.redact.count(refusals);
            // Which push is the first refused depends on the server's memory accounting.
            let job = if w.redact.active() { "job-[n]" } else { job.as_str() };
            crate::tr!(
                l,
                "{a}: push {job} refused: {error} (refusal no. {n}; the producer knows)",
                "{a}: đẩy {job} bị từ chối: {error} (lần từ chối thứ {n}; producer biết điều đó)"
            )
        }
        _ => return None,
    })
}

fn reason_words(reason: &str, w: &Wording) -> String {
    match reason {
        "poison" => pick(w.lang, "poison: does not parse", "poison: không parse được").to_string(),
        "max attempts" => pick(w.lang, "max attempts reached", "hết số lần thử").to_string(),
        other => other.to_string(),
    }
}
