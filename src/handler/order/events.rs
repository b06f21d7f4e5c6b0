//! The events of a stream consumer's strategies beyond the core ones: a lock taken and let go,
//! a first row inserted or refused, a reorder buffer holding, dropping or giving up, a fan-out
//! reader queueing an entry for one of its workers. Their words and marks are here, beside them.

use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::{
    job_line_label, job_mark_label, Belongs, Causality, Drawing, Glyph, Vocabulary, Wording,
};
use crate::timeline::{Actor, Job};
use serde::{Deserialize, Serialize};

/// What a strategy did besides receiving, working, writing and acknowledging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HandlerEvent {
    /// Lock taken after `tries` attempts of `SET key token NX PX ttl`, stamped when the reply
    /// arrived; `ttl_ms` as the scenario gives it, `px_ms` as sent (time-scaled), and the
    /// successful SET's round trip (it was sent `round_trip_us` before the stamp).
    LockAcquired {
        key: String,
        tries: u32,
        ttl_ms: u64,
        #[serde(default)]
        px_ms: u64,
        #[serde(default)]
        round_trip_us: i64,
    },
    /// Lock release, stamped when it was sent; `released` is the server's answer (1 ours and
    /// deleted, 0 expired or not ours).
    LockReleased { key: String, method: String, released: i64 },
    /// The handler inserted the order's first row (no row existed).
    Inserted { entry_id: String, order: i64, status: String, version: i64 },
    /// A write the server refused (for example a duplicate key): the event's change is lost.
    WriteFailed { entry_id: String, order: i64, status: String, error: String },
    /// A reorder buffer holds the entry until version `waiting_for` of its order arrives.
    Held { entry_id: String, job: Job, waiting_for: i64 },
    /// A reorder buffer dropped an entry older than what it already applied.
    Dropped { entry_id: String, job: Job, reason: String },
    /// A reorder buffer stopped waiting for a version that never came and applies what it holds.
    GapTimeout { order: i64, missing_version: i64, held_ms: f64 },
    /// A fan-out reader put the entry in the in-memory queue of `worker` (`C1/#42`: the task
    /// of reader C1 for order 42), which applies its queue in order.
    Queued { entry_id: String, worker: String },
}

/// `paid`, or `paid (#42)` when the lab has several orders.
fn status_label(status: &str, order: i64, many: bool) -> String {
    if many {
        format!("{status} (#{order})")
    } else {
        status.to_string()
    }
}

impl Vocabulary for HandlerEvent {
    const KINDS: &'static [&'static str] =
        &["lock_acquired", "lock_released", "inserted", "write_failed", "held", "dropped", "gap_timeout", "queued"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let id = |x: &str| w.redact.entry_id(x);
        Some(match self {
            HandlerEvent::LockAcquired { .. } | HandlerEvent::LockReleased { .. } => return self.lock_line(a, w),
            HandlerEvent::Inserted { order, status, version, .. } => {
                let status = status_label(status, *order, w.many_orders);
                format!("{a} {} status={status} version={version} → INSERT 0 1", pick(w.lang, "wrote", "ghi"))
            }
            HandlerEvent::WriteFailed { order, status, error, .. } => {
                let status = status_label(status, *order, w.many_orders);
                crate::tr!(
                    w.lang,
                    "{a} INSERT status={status} → ERROR: {error} (the change is lost)",
                    "{a} INSERT status={status} → LỖI: {error} (thay đổi bị mất)"
                )
            }
            HandlerEvent::Held { entry_id, job: j, waiting_for } => {
                let (entry, job) = (id(entry_id), job_line_label(j, w.many_orders));
                crate::tr!(
                    w.lang,
                    "{a} holds {entry} {job} until v={waiting_for} arrives",
                    "{a} giữ {entry} {job} chờ v={waiting_for}"
                )
            }
            HandlerEvent::Dropped { entry_id, job: j, reason } => {
                let (entry, job) = (id(entry_id), job_line_label(j, w.many_orders));
                crate::tr!(w.lang, "{a} drops {entry} {job}: {reason}", "{a} bỏ {entry} {job}: cũ hơn bản đã áp dụng")
            }
            HandlerEvent::GapTimeout { order, missing_version, held_ms } => {
                let held = if w.redact.active() { "[ms]".to_string() } else { format!("{held_ms:.0} ms") };
                crate::tr!(
                    w.lang,
                    "{a} gap timeout: #{order} v={missing_version} never came after {held}; applies what it holds",
                    "{a} hết thời gian chờ #{order} v={missing_version} sau {held}: áp dụng phần đang giữ"
                )
            }
            HandlerEvent::Queued { entry_id, worker } => {
                let entry = id(entry_id);
                crate::tr!(w.lang, "{a} queued {entry} in queue {worker}", "{a} xếp {entry} vào hàng đợi {worker}")
            }
        })
    }

    /// A lock taken after another process released it (deleted it: `released` 1) comes after
    /// that release when a snapshot lists a burst by process: the take waited for it.
    fn causality(&self) -> Causality {
        match self {
            HandlerEvent::LockReleased { key, released, .. } if *released > 0 => {
                Causality::PutsBack(format!("lock {key}"))
            }
            HandlerEvent::LockAcquired { key, .. } => Causality::Takes(format!("lock {key}")),
            _ => Causality::Free,
        }
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let (lang, many) = (w.lang, w.many_orders);
        let t = |en, vi| pick(lang, en, vi);
        let prefix = |order: i64| if many { format!("#{order} ") } else { String::new() };
        let (glyph, label) = match self {
            HandlerEvent::LockAcquired { tries, ttl_ms, .. } => {
                let label = match (lang, *tries) {
                    (Lang::En, 1) => "took lock".to_string(),
                    (Lang::En, n) => format!("took lock after {n} tries"),
                    (Lang::Vi, 1) => "lấy được lock".to_string(),
                    (Lang::Vi, n) => format!("lấy được lock sau {n} lần thử"),
                };
                return Drawing::Held { ttl_ms: *ttl_ms, label };
            }
            HandlerEvent::LockReleased { released, .. } => {
                let mark = (*released == 0).then(|| {
                    let label = t("released → 0: expired, not ours", "nhả lock → 0: đã hết hạn, không còn là của mình");
                    (Glyph::Released, label.to_string())
                });
                return Drawing::LetGo { mark };
            }
            HandlerEvent::Inserted { order, status, .. } => {
                (Glyph::Wrote, format!("{} {}{status} (INSERT)", t("wrote", "ghi"), prefix(*order)))
            }
            HandlerEvent::WriteFailed { order, status, .. } => (
                Glyph::Failed,
                format!(
                    "{} {}{status}: {}",
                    t("write", "ghi"),
                    prefix(*order),
                    t("refused (duplicate key), lost", "bị từ chối (trùng khoá), mất")
                ),
            ),
            HandlerEvent::Held { job, waiting_for, .. } => (
                Glyph::Received,
                format!(
                    "{} {}, {} v={waiting_for}",
                    t("held", "giữ"),
                    job_mark_label(job, many),
                    t("waiting for", "chờ")
                ),
            ),
            HandlerEvent::Dropped { job, .. } => {
                (Glyph::Stale, format!("{} {}", t("dropped stale", "bỏ bản cũ"), job_mark_label(job, many)))
            }
            HandlerEvent::GapTimeout { order, missing_version, .. } => (
                Glyph::Failed,
                format!("{} #{order} v={missing_version}", t("gap timeout: gave up on", "hết thời gian chờ: bỏ qua")),
            ),
            HandlerEvent::Queued { worker, .. } => (Glyph::Received, format!("→ queue {worker}")),
        };
        Drawing::Mark(glyph, label)
    }

    fn belongs(&self) -> Belongs {
        match self {
            HandlerEvent::Inserted { order, .. } | HandlerEvent::WriteFailed { order, .. } => Belongs::Order(*order),
            HandlerEvent::GapTimeout { order, .. } => Belongs::Order(*order),
            HandlerEvent::Held { job, .. } | HandlerEvent::Dropped { job, .. } => Belongs::Order(job.order),
            HandlerEvent::Queued { entry_id, .. } => Belongs::Entry(entry_id.clone()),
            // A per-key lock is for the order its key ends with (`…lock:order:42`).
            HandlerEvent::LockAcquired { key, .. } | HandlerEvent::LockReleased { key, .. } => {
                match key.rsplit(':').next().and_then(|o| o.parse().ok()) {
                    Some(order) => Belongs::Order(order),
                    None => Belongs::Everywhere,
                }
            }
        }
    }
}

impl HandlerEvent {
    /// A lock taken or released.
    fn lock_line(&self, a: Actor, w: &Wording) -> Option<String> {
        let vi = w.lang == Lang::Vi;
        Some(match self {
            HandlerEvent::LockAcquired { key, tries, ttl_ms, .. } => {
                let n = if w.redact.active() { "[n]".to_string() } else { tries.to_string() };
                let unit = if *tries == 1 && !w.redact.active() { "try" } else { "tries" };
                crate::tr!(
                    w.lang,
                    "{a} took {key} (SET NX PX {ttl_ms}) after {n} {unit}",
                    "{a} lấy được {key} (SET NX PX {ttl_ms}) sau {n} lần thử"
                )
            }
            HandlerEvent::LockReleased { method, released, .. } => {
                let del = method == "DEL";
                let note = match (*released, vi, del) {
                    (0, false, false) => " (the lock had expired: no longer ours)",
                    (0, true, false) => " (lock đã hết hạn, không còn là của mình)",
                    // A plain DEL says only whether a key was there, whoever's it was.
                    (0, false, true) => " (the key was gone: expired, or deleted by another)",
                    (0, true, true) => " (key đã không còn: hết hạn, hoặc bị người khác xoá)",
                    _ => "",
                };
                // How a lock is released depends on the server's version (DELEX since 8.4): a
                // snapshot holds on any supported version.
                let method = if w.redact.active() && !del { "[release]" } else { method.as_str() };
                format!("{a} {}: {method} → {released}{note}", pick(w.lang, "released the lock", "nhả lock"))
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::vocabulary::check_kinds;

    #[test]
    fn kinds_match_the_enum() {
        let job = Job::new(42, "paid", 2);
        check_kinds(&[
            HandlerEvent::LockAcquired { key: "k".into(), tries: 1, ttl_ms: 1, px_ms: 1, round_trip_us: 1 },
            HandlerEvent::LockReleased { key: "k".into(), method: "DEL".into(), released: 1 },
            HandlerEvent::Inserted { entry_id: "1-0".into(), order: 1, status: "s".into(), version: 1 },
            HandlerEvent::WriteFailed { entry_id: "1-0".into(), order: 1, status: "s".into(), error: "e".into() },
            HandlerEvent::Held { entry_id: "1-0".into(), job: job.clone(), waiting_for: 1 },
            HandlerEvent::Dropped { entry_id: "1-0".into(), job, reason: "r".into() },
            HandlerEvent::GapTimeout { order: 1, missing_version: 1, held_ms: 1.0 },
            HandlerEvent::Queued { entry_id: "1-0".into(), worker: "C1/#42".into() },
        ]);
    }
}
