//! The events of seed 003's list queue: pushes, takes, finishes, failures, retries, the
//! dead-letter list, poison payloads, the reaper's requeues, the scheduler's moves, and what a
//! queue's server does to it (a restart on its files, an eviction, a refused push); with their
//! words in both languages and their marks. Shared by the list-queue and durability labs.

use crate::lang::pick;
use crate::timeline::vocabulary::{Causality, Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};

/// Why a job went to the dead-letter list (named on the wire as the seed's worker names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeadLetterReason {
    /// It failed on every attempt it had.
    #[serde(rename = "max attempts")]
    MaxAttempts,
    /// Its payload does not parse.
    #[serde(rename = "poison")]
    Poison,
}

/// What a list queue's processes (and its server) did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ListEvent {
    /// A job was pushed to a list (`list`: `queue:default`); `len` is the list's length after
    /// the push, as the server replied. `gated`: pushed only once the job before it was taken
    /// (the runner pushed it in reaction to that take).
    Pushed {
        job: String,
        list: String,
        len: i64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        gated: bool,
    },
    /// A worker took a job from a list queue (`via`: the command or script), leased until
    /// `lease_ms` from now when it has a lease.
    Taken { job: String, via: String, lease_ms: Option<f64> },
    /// A worker finished a job; `removed` is what LREM returned for its processing entry
    /// (0: the entry was already gone; None: nothing to remove, the job was popped).
    ListJobDone { job: String, removed: Option<i64> },
    /// The handler failed on attempt `attempt` (1-based).
    ListJobFailed { job: String, attempt: u32, error: String },
    /// A failed job was put aside for another attempt: pushed to `to` (`queue:retry`), or
    /// scheduled `delay_ms` later in the delayed set.
    RetryScheduled { job: String, attempt: u32, to: String, delay_ms: Option<f64> },
    /// A job went to the dead-letter list, and why.
    ListDeadLettered { job: String, reason: DeadLetterReason },
    /// A payload that is not a job (it does not parse); the worker then slept `slept_ms`.
    Poison { payload: String, slept_ms: f64 },
    /// The reaper put a job whose lease had run out `expired_ms_ago` back in the queue (None
    /// under the explorer: a timer step ran the lease out, no clock).
    Requeued {
        job: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expired_ms_ago: Option<i64>,
    },
    /// The scheduler moved a due retry back to the queue, `late_ms` after its due time (None
    /// under the explorer: a timer step made it due, no clock).
    MovedDue {
        job: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        late_ms: Option<i64>,
    },
    /// A killed server is up again on its own data files, holding `jobs` jobs, after `load_ms`.
    ServerRestarted { jobs: i64, load_ms: f64 },
    /// The server evicted the key `key` whole, with `jobs` jobs in it (the producer saw its
    /// next push answer a length of 1).
    Evicted { key: String, jobs: i64 },
    /// The server refused a push (`error`, e.g. OOM); `refusals` counts them so far.
    Refused { job: String, error: String, refusals: i64 },
}

impl Vocabulary for ListEvent {
    const KINDS: &'static [&'static str] = &[
        "pushed",
        "taken",
        "list_job_done",
        "list_job_failed",
        "retry_scheduled",
        "list_dead_lettered",
        "poison",
        "requeued",
        "moved_due",
        "server_restarted",
        "evicted",
        "refused",
    ];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        self.list_line(a, w)
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let lang = w.lang;
        let t = |en, vi| pick(lang, en, vi);
        let (glyph, label) = match self {
            ListEvent::Pushed { job, .. } => (Glyph::Published, format!("{} {job}", t("push", "đẩy"))),
            ListEvent::Taken { job, via, .. } => (Glyph::Received, format!("{} {job} ({via})", t("took", "lấy"))),
            ListEvent::ListJobDone { job, removed: Some(0) } => {
                (Glyph::Stale, format!("{} {job}; LREM → 0", t("done", "xong")))
            }
            ListEvent::ListJobDone { job, .. } => (Glyph::Wrote, format!("{} {job}", t("done", "xong"))),
            ListEvent::ListJobFailed { job, attempt, .. } => {
                (Glyph::Failed, format!("{job} {} #{attempt}", t("failed, attempt", "lỗi, lần")))
            }
            ListEvent::RetryScheduled { job, to, .. } => (Glyph::Outbox, format!("{job} → {to}")),
            ListEvent::ListDeadLettered { job, .. } => {
                (Glyph::OutboxFailed, format!("{job} → {}", t("dead letters", "hàng lỗi")))
            }
            ListEvent::Poison { .. } => {
                (Glyph::Failed, t("poison: does not parse", "poison: không parse được").to_string())
            }
            ListEvent::Requeued { job, .. } => (Glyph::Published, format!("{} {job}", t("requeued", "đưa lại"))),
            ListEvent::MovedDue { job, .. } => {
                (Glyph::Published, format!("{job} {}", t("due → queue", "đến hạn → hàng đợi")))
            }
            ListEvent::ServerRestarted { jobs, .. } => (
                Glyph::Published,
                format!("{} ({jobs} {})", t("restarted", "khởi động lại"), t("jobs back", "job còn lại")),
            ),
            ListEvent::Evicted { key, jobs } => {
                (Glyph::Crash, format!("{} {key} ({jobs} {})", t("evicted", "evict"), t("jobs", "job")))
            }
            ListEvent::Refused { error, .. } => (Glyph::Failed, error.clone()),
        };
        Drawing::Mark(glyph, label)
    }

    fn causality(&self) -> Causality {
        match self {
            ListEvent::Pushed { job, gated: true, .. } => Causality::PutsBackAfterAll(job.clone()),
            ListEvent::Pushed { job, .. } | ListEvent::Requeued { job, .. } | ListEvent::MovedDue { job, .. } => {
                Causality::PutsBack(job.clone())
            }
            ListEvent::Taken { job, .. } => Causality::Takes(job.clone()),
            _ => Causality::Free,
        }
    }
}

impl ListEvent {
    /// The line for a list-queue event.
    fn list_line(&self, a: Actor, w: &Wording) -> Option<String> {
        let l = w.lang;
        Some(match self {
            ListEvent::Pushed { job, list, len, .. } => {
                let len = w.redact.count(len);
                crate::tr!(l, "{a}: push {job} → {list} (length {len})", "{a}: đẩy {job} → {list} (độ dài {len})")
            }
            ListEvent::Taken { job, via, lease_ms } => match lease_ms {
                Some(ms) => {
                    crate::tr!(
                        l,
                        "{a} took {job} ({via}), leased for {ms} ms",
                        "{a} lấy {job} ({via}), giữ lease {ms} ms"
                    )
                }
                None => crate::tr!(l, "{a} took {job} ({via})", "{a} lấy {job} ({via})"),
            },
            ListEvent::ListJobDone { job, removed } => match removed {
                Some(0) => crate::tr!(
                    l,
                    "{a} finished {job}; LREM → 0: its entry was already gone",
                    "{a} xong {job}; LREM → 0: entry của nó đã không còn"
                ),
                Some(n) => crate::tr!(l, "{a} finished {job}; LREM → {n}", "{a} xong {job}; LREM → {n}"),
                None => crate::tr!(l, "{a} finished {job}", "{a} xong {job}"),
            },
            ListEvent::ListJobFailed { job, attempt, error } => crate::tr!(
                l,
                "{a}: {job} failed on attempt {attempt}: {error}",
                "{a}: {job} lỗi ở lần thử {attempt}: {error}"
            ),
            ListEvent::RetryScheduled { job, attempt, to, delay_ms } => match delay_ms {
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
            ListEvent::ListDeadLettered { job, reason } => {
                let reason = Self::reason_words(*reason, w);
                crate::tr!(l, "{a}: {job} → dead-letter list ({reason})", "{a}: {job} → hàng đợi lỗi ({reason})")
            }
            ListEvent::Poison { payload, slept_ms } => {
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
            ListEvent::Requeued { job, expired_ms_ago: Some(ms) } => {
                let ago = w.redact.ms(*ms);
                crate::tr!(
                    l,
                    "{a}: lease of {job} ran out {ago} ago → back in the queue",
                    "{a}: lease của {job} hết hạn {ago} trước → đưa lại vào hàng đợi"
                )
            }
            ListEvent::Requeued { job, expired_ms_ago: None } => crate::tr!(
                l,
                "{a}: lease of {job} ran out (a timer step) → back in the queue",
                "{a}: lease của {job} hết hạn (một bước timer) → đưa lại vào hàng đợi"
            ),
            ListEvent::MovedDue { job, late_ms: Some(ms) } => {
                let late = w.redact.ms(*ms);
                crate::tr!(l, "{a}: {job} due → queue ({late} late)", "{a}: {job} đến hạn → hàng đợi (trễ {late})")
            }
            ListEvent::MovedDue { job, late_ms: None } => {
                crate::tr!(l, "{a}: {job} due (a timer step) → queue", "{a}: {job} đến hạn (một bước timer) → hàng đợi")
            }
            _ => return self.server_line(a, w),
        })
    }

    /// Lines of the labs that own a server: a restart after a kill, an eviction, a refusal.
    fn server_line(&self, a: Actor, w: &Wording) -> Option<String> {
        let l = w.lang;
        Some(match self {
            ListEvent::ServerRestarted { jobs, load_ms } => {
                let (jobs, load) = (w.redact.count(jobs), w.redact.ms(load_ms.round() as i64));
                crate::tr!(
                    l,
                    "{a}: redis-server restarted on the same files, answering after {load}: {jobs} jobs in the queue",
                    "{a}: redis-server khởi động lại trên cùng file dữ liệu, trả lời sau {load}: {jobs} job trong hàng đợi"
                )
            }
            ListEvent::Evicted { key, jobs } => {
                let jobs = w.redact.count(jobs);
                crate::tr!(
                    l,
                    "{a}: the server evicted {key} whole, with {jobs} queued jobs in it (the next push answered length 1)",
                    "{a}: server xoá (evict) nguyên key {key}, cùng {jobs} job đang chờ trong đó (lần đẩy sau trả về độ dài 1)"
                )
            }
            ListEvent::Refused { job, error, refusals } => {
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

    fn reason_words(reason: DeadLetterReason, w: &Wording) -> &'static str {
        match reason {
            DeadLetterReason::Poison => pick(w.lang, "poison: does not parse", "poison: không parse được"),
            DeadLetterReason::MaxAttempts => pick(w.lang, "max attempts reached", "hết số lần thử"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_letter_reason_reads_and_writes_as_the_seed_names_it() {
        let e = ListEvent::ListDeadLettered { job: "job-1".into(), reason: DeadLetterReason::MaxAttempts };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"{"kind":"list_dead_lettered","job":"job-1","reason":"max attempts"}"#);
        assert_eq!(serde_json::from_str::<ListEvent>(&json).unwrap(), e);
        assert_eq!(serde_json::to_value(DeadLetterReason::Poison).unwrap(), "poison");
    }
}
