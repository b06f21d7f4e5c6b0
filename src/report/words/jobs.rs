//! The words for queue-job events (Part 3 and 4 labs: jobs with a stable id, handlers with an
//! idempotency technique, a dead-letter queue), in both languages.

use super::Wording;
use crate::lang::{pick, Lang};
use crate::timeline::{Actor, EffectOutcome, EventKind, FailReason, SkipReason};

/// One timeline line for a job event; None for any other event.
pub(super) fn job_line(a: Actor, kind: &EventKind, w: &Wording) -> Option<String> {
    let lang = w.lang;
    let id = |x: &str| w.redact.entry_id(x);
    Some(match kind {
        EventKind::JobPublished { entry_id, job, attempt, reply_lost, same_id } => {
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
        EventKind::JobReceived { entry_id, job, deliveries } => {
            let mut line = format!("{a} {} {} {job}", pick(lang, "received", "nhận"), id(entry_id));
            if *deliveries > 1 {
                let d = deliveries;
                line.push_str(&crate::tr!(lang, " (delivery {d}, same ID)", " (lần giao thứ {d}, cùng ID)"));
            }
            line
        }
        EventKind::JobStep { command, result, .. } => format!("{a} {command} → {result}"),
        EventKind::JobSkipped { job, reason } => {
            let why = skip_words(*reason, lang);
            crate::tr!(lang, "{a} skips {job}: {why}", "{a} bỏ qua {job}: {why}")
        }
        EventKind::JobAcked { entry_id, job } => format!("{a} XACK {} ({job})", id(entry_id)),
        EventKind::JobFailed { job, reason, retryable } => {
            let why = fail_words(*reason, lang);
            let then = match (retryable, lang) {
                (true, Lang::En) => "left pending for a retry (no XACK)",
                (true, Lang::Vi) => "để pending chờ retry (không XACK)",
                (false, Lang::En) => "not retryable",
                (false, Lang::Vi) => "không retry được",
            };
            crate::tr!(lang, "{a} {job} failed: {why}; {then}", "{a} {job} lỗi: {why}; {then}")
        }
        EventKind::DeadLettered { job, reason } => {
            let why = fail_words(*reason, lang);
            crate::tr!(lang, "{a} moved {job} to the DLQ ({why}) → XACK", "{a} chuyển {job} vào DLQ ({why}) → XACK")
        }
        EventKind::Effect { job, effect, requested_by, idem_key, outcome } => {
            effect_line(*requested_by, job, effect, idem_key.as_deref(), *outcome, lang)
        }
        _ => return None,
    })
}

/// `sink: email for job-3 from C2 → applied`: what the outside party did with a request.
fn effect_line(
    from: crate::timeline::Actor,
    job: &str,
    effect: &str,
    key: Option<&str>,
    outcome: EffectOutcome,
    lang: Lang,
) -> String {
    let key = match key {
        Some(k) => crate::tr!(lang, " (idempotency key {k})", " (khoá idempotency {k})"),
        None => String::new(),
    };
    let what = match outcome {
        EffectOutcome::Applied => pick(lang, "applied", "đã thực hiện"),
        EffectOutcome::Replayed => pick(
            lang,
            "replayed: key seen, first result returned, no second effect",
            "trả lại kết quả lần đầu: khoá đã có, không thực hiện lần hai",
        ),
        EffectOutcome::Refused => pick(lang, "refused (injected partner failure)", "bị từ chối (lỗi đối tác chủ động)"),
    };
    crate::tr!(
        lang,
        "sink: {effect} for {job} from {from}{key} → {what}",
        "sink: {effect} cho {job} từ {from}{key} → {what}"
    )
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
