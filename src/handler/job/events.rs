//! The events of a job handler (seed 000's job queue, a job with a stable id handled with an
//! idempotency technique, a dead-letter queue), with their words in both languages and their
//! marks: shared by the idempotency labs' job workers and the seed's production pipeline.

use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::{Causality, Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};

/// What a job queue's processes did with a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobEvent {
    /// The producer sent `XADD` for job `job` (a queue job with a stable id, not an order
    /// event). `reply_lost`: the injected fault made the producer act as if the reply never
    /// came (it will retry). `same_id`: the server answered with an ID it had already given
    /// this job (`XADD … IDMP`: not added again).
    JobPublished { entry_id: String, job: String, attempt: u32, reply_lost: bool, same_id: bool },
    /// A worker got job `job` from the group; `deliveries` is the server's delivery count.
    JobReceived { entry_id: String, job: String, deliveries: u64 },
    /// One command a job handler sent (Redis or SQL) and the server's answer, as the seed's
    /// code sends it: `SET idem:job-1 1 NX EX 86400 → OK`.
    JobStep { job: String, command: String, result: String },
    /// The handler decided not to run the job (it is then acknowledged).
    JobSkipped { job: String, reason: SkipReason },
    /// XACK sent for the job's entry.
    JobAcked { entry_id: String, job: String },
    /// The handler failed; a retryable failure is left pending for a retry.
    JobFailed { job: String, reason: FailReason, retryable: bool },
    /// The job was moved to the dead-letter queue (and acknowledged).
    DeadLettered { job: String, reason: FailReason },
}

/// Why a job handler skipped a job (and acknowledged it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// Its idempotency key (or unique row) exists: `AlreadyProcessed`.
    AlreadyProcessed,
    /// The state it checks says the work is done (`sent`, `completed`).
    AlreadyDone,
}

/// Why a job handler failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailReason {
    /// The partner refused the request (injected 503): nothing happened.
    PartnerRefused,
    /// The partner's reply was lost (injected timeout): the effect may have happened.
    ReplyLost,
    /// Another worker holds the job's lease: leave it pending and look again later.
    LeaseHeld,
    /// The payload does not parse.
    Unparseable,
    /// The job is refused for good (an unknown job type): not worth a retry.
    Rejected,
    /// It failed this many times: given up.
    AttemptsExhausted,
    /// It was delivered this many times without finishing (workers kept dying on it).
    DeliveriesExhausted,
}

impl Vocabulary for JobEvent {
    const KINDS: &'static [&'static str] =
        &["job_published", "job_received", "job_step", "job_skipped", "job_acked", "job_failed", "dead_lettered"];

    /// A job given up on is what a verdict on jobs counts.
    fn is_key(&self) -> bool {
        matches!(self, JobEvent::DeadLettered { .. } | JobEvent::JobFailed { retryable: false, .. })
    }

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let lang = w.lang;
        let id = |x: &str| w.redact.entry_id(x);
        Some(match self {
            JobEvent::JobPublished { entry_id, job, attempt, reply_lost, same_id } => {
                let what = if *attempt > 1 {
                    crate::tr!(lang, "retry #{} of {job}", "thử lại lần {} {job}", attempt - 1)
                } else {
                    crate::tr!(lang, "publish {job}", "publish {job}")
                };
                let mut line = format!("{a}: {what} OK → {}", id(entry_id));
                if *same_id {
                    line.push_str(pick(
                        lang,
                        " (the same ID: IDMP did not add it again)",
                        " (cùng ID: IDMP không thêm lần nữa)",
                    ));
                }
                if *reply_lost {
                    line.push_str(pick(
                        lang,
                        " — reply lost (injected): the producer will send it again",
                        " — mất phản hồi (chủ động): producer sẽ gửi lại",
                    ));
                }
                line
            }
            JobEvent::JobReceived { entry_id, job, deliveries } => {
                let mut line = format!("{a} {} {} {job}", pick(lang, "received", "nhận"), id(entry_id));
                if *deliveries > 1 {
                    let d = deliveries;
                    line.push_str(&crate::tr!(lang, " (delivery {d}, same ID)", " (lần giao thứ {d}, cùng ID)"));
                }
                line
            }
            JobEvent::JobStep { command, result, .. } => format!("{a} {command} → {result}"),
            JobEvent::JobSkipped { job, reason } => {
                let why = skip_words(*reason, lang);
                crate::tr!(lang, "{a} skips {job}: {why}", "{a} bỏ qua {job}: {why}")
            }
            JobEvent::JobAcked { entry_id, job } => format!("{a} XACK {} ({job})", id(entry_id)),
            JobEvent::JobFailed { job, reason, retryable } => {
                let why = fail_words(*reason, lang);
                let then = match (retryable, lang) {
                    (true, Lang::En) => "left pending for a retry (no XACK)",
                    (true, Lang::Vi) => "để pending chờ retry (không XACK)",
                    (false, Lang::En) => "not retryable",
                    (false, Lang::Vi) => "không retry được",
                };
                crate::tr!(lang, "{a} {job} failed: {why}; {then}", "{a} {job} lỗi: {why}; {then}")
            }
            JobEvent::DeadLettered { job, reason } => {
                let why = fail_words(*reason, lang);
                crate::tr!(lang, "{a} moved {job} to the DLQ ({why}) → XACK", "{a} chuyển {job} vào DLQ ({why}) → XACK")
            }
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let lang = w.lang;
        let t = |en, vi| pick(lang, en, vi);
        let (glyph, label) = match self {
            JobEvent::JobPublished { job, attempt, reply_lost, .. } => {
                let lost = if *reply_lost { t(" (reply lost)", " (mất phản hồi)") } else { "" };
                let what = if *attempt > 1 { format!("retry {job}") } else { format!("publish {job}") };
                (Glyph::Published, format!("{what}{lost}"))
            }
            JobEvent::JobReceived { job, deliveries, .. } => {
                let mut label = format!("{} {job}", t("received", "nhận"));
                if *deliveries > 1 {
                    label.push_str(&format!(" ({} {deliveries})", t("delivery", "lần giao")));
                }
                (Glyph::Received, label)
            }
            JobEvent::JobStep { command, result, .. } => (Glyph::SqlSent, format!("{command} → {result}")),
            JobEvent::JobSkipped { job, reason } => {
                (Glyph::Stale, format!("{} {job}: {}", t("skip", "bỏ qua"), skip_words(*reason, lang)))
            }
            JobEvent::JobFailed { job, reason, .. } => (Glyph::Failed, format!("{job}: {}", fail_words(*reason, lang))),
            JobEvent::DeadLettered { job, .. } => (Glyph::Failed, format!("{job} → DLQ")),
            JobEvent::JobAcked { job, .. } => (Glyph::Acked, format!("XACK {job}")),
        };
        Drawing::Mark(glyph, label)
    }

    fn causality(&self) -> Causality {
        match self {
            JobEvent::JobPublished { entry_id, .. } => Causality::Publishes(entry_id.clone()),
            JobEvent::JobReceived { entry_id, .. } => Causality::Receives(entry_id.clone()),
            _ => Causality::Free,
        }
    }

    fn is_publish(&self) -> bool {
        matches!(self, JobEvent::JobPublished { .. })
    }
}

pub fn skip_words(reason: SkipReason, lang: Lang) -> &'static str {
    match reason {
        SkipReason::AlreadyProcessed => {
            pick(lang, "AlreadyProcessed (the key exists)", "AlreadyProcessed (key đã tồn tại)")
        }
        SkipReason::AlreadyDone => pick(lang, "the state says it is done", "trạng thái nói đã làm xong"),
    }
}

pub fn fail_words(reason: FailReason, lang: Lang) -> &'static str {
    match reason {
        FailReason::PartnerRefused => pick(lang, "the partner refused (503)", "đối tác từ chối (503)"),
        FailReason::ReplyLost => {
            pick(lang, "no reply from the partner (timeout)", "không nhận được phản hồi từ đối tác (timeout)")
        }
        FailReason::LeaseHeld => pick(lang, "another worker holds its lease", "worker khác đang giữ lease"),
        FailReason::Unparseable => pick(lang, "the payload does not parse", "payload không parse được"),
        FailReason::Rejected => pick(lang, "rejected: unknown job type", "bị từ chối: loại job không biết"),
        FailReason::AttemptsExhausted => pick(lang, "it failed too many times", "lỗi quá nhiều lần"),
        FailReason::DeliveriesExhausted => {
            pick(lang, "delivered too many times without finishing", "được giao quá nhiều lần mà không xong")
        }
    }
}
