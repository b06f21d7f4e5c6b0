//! The list queue on a Redis Cluster (seed 003 past one node): its events (jobs pushed, taken
//! and applied per queue, named by its hash tag; failed queue commands; a worker's stop; each
//! step of moving a hash slot between masters), with their words in both languages and their
//! marks. Shared by the cluster lab, its workers and its slot-migration fault.

use crate::lang::pick;
use crate::timeline::vocabulary::{job_line_label, job_mark_label, Belongs, Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, Job};
use serde::{Deserialize, Serialize};

/// What a cluster queue's processes did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClusterEvent {
    /// The producer pushed a job onto a list queue (`LPUSH`); `queue` is the queue's hash tag.
    JobPushed { job_id: String, job: Job, queue: String },
    /// The producer pushed `jobs` jobs onto `queues` list queues at once (one LPUSH each).
    JobsPushed { jobs: u64, queues: u32 },
    /// A worker moved a job from its list queue to its processing list (`BLMOVE`).
    JobTaken { job_id: String, job: Job, queue: String },
    /// A worker recorded the job's effect (`RPUSH` onto its queue's applied list).
    JobApplied { job_id: String, job: Job, queue: String },
    /// A queue command failed; the worker sleeps `sleep_ms`, then tries again (the seed's
    /// `catch`). A job it held stays in its processing list.
    QueueError { command: String, error: String, sleep_ms: f64 },
    /// A worker took its stop marker: `jobs` done, `cpu_ms` of its own CPU time. Stamped at
    /// its last job.
    WorkerDone { jobs: u64, cpu_ms: f64 },
    /// Resharding: hash slot `slot` set IMPORTING on master `to`, MIGRATING on `from`.
    SlotMigrating { slot: u16, from: String, to: String },
    /// The slot's `keys` keys moved from `from` to `to` with MIGRATE.
    SlotKeysMoved { slot: u16, keys: u64, from: String, to: String },
    /// `CLUSTER SETSLOT <slot> NODE` on every master: `node` owns the slot.
    SlotOwned { slot: u16, node: String },
}

impl Vocabulary for ClusterEvent {
    const KINDS: &'static [&'static str] = &[
        "job_pushed",
        "jobs_pushed",
        "job_taken",
        "job_applied",
        "queue_error",
        "worker_done",
        "slot_migrating",
        "slot_keys_moved",
        "slot_owned",
    ];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let lang = w.lang;
        let job = |id: &str, j| format!("{id} {}", job_line_label(j, w.many_orders));
        Some(match self {
        ClusterEvent::JobPushed { job_id, job: j, queue } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} LPUSH {queue} {j}", "{a} đẩy {j} vào {queue} (LPUSH)")
        }
        ClusterEvent::JobsPushed { jobs, queues } => crate::tr!(
            lang,
            "{a} LPUSH {jobs} jobs onto {queues} queue(s), one command per queue, then a stop marker per worker",
            "{a} đẩy {jobs} job vào {queues} hàng đợi (mỗi hàng đợi một lệnh LPUSH), rồi một dấu dừng cho mỗi worker"
        ),
        ClusterEvent::JobTaken { job_id, job: j, queue } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} took {j} from {queue} (BLMOVE)", "{a} lấy {j} từ {queue} (BLMOVE)")
        }
        ClusterEvent::JobApplied { job_id, job: j, .. } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} applied {j}", "{a} áp dụng {j}")
        }
        ClusterEvent::QueueError { command, error, sleep_ms } => crate::tr!(
            lang,
            "{a} {command} → ERROR {error}; sleeps {sleep_ms} ms and tries again (the seed's catch)",
            "{a} {command} → LỖI {error}; ngủ {sleep_ms} ms rồi thử lại (catch của seed)"
        ),
        ClusterEvent::WorkerDone { jobs, cpu_ms } => {
            let (n, cpu) = (w.redact.count(jobs), w.redact.count(format!("{cpu_ms:.0}")));
            crate::tr!(
                lang,
                "{a} took its stop marker: {n} jobs done, {cpu} ms of its own CPU",
                "{a} lấy dấu dừng: xong {n} job, {cpu} ms CPU của chính nó"
            )
        }
        ClusterEvent::SlotMigrating { slot, from, to } => crate::tr!(
            lang,
            "{a}: CLUSTER SETSLOT {slot} IMPORTING on {to}, MIGRATING on {from}: keys {from} still holds are served there, new keys go to {to} (ASK)",
            "{a}: CLUSTER SETSLOT {slot} IMPORTING trên {to}, MIGRATING trên {from}: key {from} còn giữ vẫn do {from} phục vụ, key mới sang {to} (ASK)"
        ),
        ClusterEvent::SlotKeysMoved { slot, keys, from, to } => {
            let n = w.redact.count(keys);
            crate::tr!(lang, "{a}: MIGRATE {n} keys of slot {slot} {from} → {to}", "{a}: MIGRATE {n} key của slot {slot} {from} → {to}")
        }
        ClusterEvent::SlotOwned { slot, node } => crate::tr!(
            lang,
            "{a}: CLUSTER SETSLOT {slot} NODE {node} on every master: the old owner answers MOVED from now on",
            "{a}: CLUSTER SETSLOT {slot} NODE {node} trên mọi master: từ giờ chủ cũ trả lời MOVED"
        ),
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let (lang, many) = (w.lang, w.many_orders);
        let t = |en, vi| pick(lang, en, vi);
        let (glyph, label) = match self {
            ClusterEvent::JobApplied { job, .. } => {
                let label = format!("{} {}", t("applied", "áp dụng"), job_mark_label(job, many));
                return Drawing::Applied { order: job.order, version: job.version, label };
            }
            ClusterEvent::JobPushed { job, queue, .. } => {
                (Glyph::Published, format!("LPUSH {queue} {}", job_mark_label(job, many)))
            }
            ClusterEvent::JobsPushed { jobs, queues } => {
                let queues_word = if *queues == 1 { t("queue", "hàng đợi") } else { t("queues", "hàng đợi") };
                (Glyph::Published, format!("LPUSH {jobs} {} → {queues} {queues_word}", t("jobs", "job")))
            }
            ClusterEvent::JobTaken { job, .. } => {
                (Glyph::Received, format!("{} {}", t("took", "lấy"), job_mark_label(job, many)))
            }
            ClusterEvent::QueueError { command, error, .. } => (Glyph::Failed, format!("{command}: {error}")),
            ClusterEvent::WorkerDone { jobs, .. } => {
                (Glyph::Acked, format!("{} {jobs} {}", t("done:", "xong:"), t("jobs", "job")))
            }
            ClusterEvent::SlotMigrating { slot, from, to } => {
                (Glyph::Failed, format!("slot {slot} {} {from} → {to}", t("migrating", "đang chuyển")))
            }
            ClusterEvent::SlotKeysMoved { keys, from, to, .. } => {
                (Glyph::Published, format!("MIGRATE {keys} {} {from} → {to}", t("keys", "key")))
            }
            ClusterEvent::SlotOwned { slot, node } => (Glyph::Published, format!("slot {slot} → {node}")),
        };
        Drawing::Mark(glyph, label)
    }

    /// A resharding's steps are what its verdict is about.
    fn is_key(&self) -> bool {
        matches!(
            self,
            ClusterEvent::SlotMigrating { .. } | ClusterEvent::SlotKeysMoved { .. } | ClusterEvent::SlotOwned { .. }
        )
    }

    fn belongs(&self) -> Belongs {
        match self {
            ClusterEvent::JobPushed { job, .. }
            | ClusterEvent::JobTaken { job, .. }
            | ClusterEvent::JobApplied { job, .. } => Belongs::Order(job.order),
            _ => Belongs::Everywhere,
        }
    }
}
