//! Marks of list-queue events (seed 003) on a worker's, the reaper's or the producer's lane.

use super::model::Glyph;
use crate::lang::{pick, Lang};
use crate::timeline::EventKind;

/// A glyph and its label for a list-queue event; None for events of other labs.
pub fn mark(kind: &EventKind, lang: Lang) -> Option<(Glyph, String)> {
    let t = |en, vi| pick(lang, en, vi);
    Some(match kind {
        EventKind::Pushed { job, .. } => (Glyph::Published, format!("{} {job}", t("push", "đẩy"))),
        EventKind::Taken { job, via, .. } => (Glyph::Received, format!("{} {job} ({via})", t("took", "lấy"))),
        EventKind::JobDone { job, removed: Some(0) } => {
            (Glyph::Stale, format!("{} {job}; LREM → 0", t("done", "xong")))
        }
        EventKind::JobDone { job, .. } => (Glyph::Wrote, format!("{} {job}", t("done", "xong"))),
        EventKind::JobFailed { job, attempt, .. } => {
            (Glyph::Failed, format!("{job} {} #{attempt}", t("failed, attempt", "lỗi, lần")))
        }
        EventKind::RetryScheduled { job, to, .. } => (Glyph::Outbox, format!("{job} → {to}")),
        EventKind::DeadLettered { job, .. } => {
            (Glyph::OutboxFailed, format!("{job} → {}", t("dead letters", "hàng lỗi")))
        }
        EventKind::Poison { .. } => {
            (Glyph::Failed, t("poison: does not parse", "poison: không parse được").to_string())
        }
        EventKind::Requeued { job, .. } => (Glyph::Published, format!("{} {job}", t("requeued", "đưa lại"))),
        EventKind::MovedDue { job, .. } => {
            (Glyph::Published, format!("{job} {}", t("due → queue", "đến hạn → hàng đợi")))
        }
        _ => return None,
    })
}
