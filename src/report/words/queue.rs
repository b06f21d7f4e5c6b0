//! Lines of list-queue workers and of a cluster's slot migration: what was pushed, taken and
//! applied on which queue (named by its hash tag), failed commands, and each step of moving a
//! hash slot between masters.

use super::Wording;
use crate::labs::stream::job_label;
use crate::timeline::{Event, EventKind};

pub fn queue_line(e: &Event, w: &Wording) -> String {
    let a = e.actor;
    let lang = w.lang;
    let job = |id: &str, j| format!("{id} {}", job_label(j, w.many_orders));
    match &e.kind {
        EventKind::JobPushed { job_id, job: j, queue } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} LPUSH {queue} {j}", "{a} đẩy {j} vào {queue} (LPUSH)")
        }
        EventKind::JobsPushed { jobs, queues } => crate::tr!(
            lang,
            "{a} LPUSH {jobs} jobs onto {queues} queue(s), one command per queue, then a stop marker per worker",
            "{a} đẩy {jobs} job vào {queues} hàng đợi (mỗi hàng đợi một lệnh LPUSH), rồi một dấu dừng cho mỗi worker"
        ),
        EventKind::JobTaken { job_id, job: j, queue } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} took {j} from {queue} (BLMOVE)", "{a} lấy {j} từ {queue} (BLMOVE)")
        }
        EventKind::JobApplied { job_id, job: j, .. } => {
            let j = job(job_id, j);
            crate::tr!(lang, "{a} applied {j}", "{a} áp dụng {j}")
        }
        EventKind::QueueError { command, error, sleep_ms } => crate::tr!(
            lang,
            "{a} {command} → ERROR {error}; sleeps {sleep_ms} ms and tries again (the seed's catch)",
            "{a} {command} → LỖI {error}; ngủ {sleep_ms} ms rồi thử lại (catch của seed)"
        ),
        EventKind::WorkerDone { jobs, cpu_ms } => {
            let (n, cpu) = (w.redact.count(jobs), w.redact.count(format!("{cpu_ms:.0}")));
            crate::tr!(
                lang,
                "{a} took its stop marker: {n} jobs done, {cpu} ms of its own CPU",
                "{a} lấy dấu dừng: xong {n} job, {cpu} ms CPU của chính nó"
            )
        }
        EventKind::SlotMigrating { slot, from, to } => crate::tr!(
            lang,
            "{a}: CLUSTER SETSLOT {slot} IMPORTING on {to}, MIGRATING on {from}: keys {from} still holds are served there, new keys go to {to} (ASK)",
            "{a}: CLUSTER SETSLOT {slot} IMPORTING trên {to}, MIGRATING trên {from}: key {from} còn giữ vẫn do {from} phục vụ, key mới sang {to} (ASK)"
        ),
        EventKind::SlotKeysMoved { slot, keys, from, to } => {
            let n = w.redact.count(keys);
            crate::tr!(lang, "{a}: MIGRATE {n} keys of slot {slot} {from} → {to}", "{a}: MIGRATE {n} key của slot {slot} {from} → {to}")
        }
        EventKind::SlotOwned { slot, node } => crate::tr!(
            lang,
            "{a}: CLUSTER SETSLOT {slot} NODE {node} on every master: the old owner answers MOVED from now on",
            "{a}: CLUSTER SETSLOT {slot} NODE {node} trên mọi master: từ giờ chủ cũ trả lời MOVED"
        ),
        _ => String::new(),
    }
}
