//! The cluster lab's report lines: where each queue lives, each throughput point (jobs/s,
//! each master's share of the queue commands and busy time, the ceiling), each master's load,
//! and how a slot move went. Values that vary between runs are marked so snapshots redact them.

use crate::cluster_queue::ClusterEvent;
use crate::labs::cluster::cluster::{gaps, ClusterObserved, Measures, PointObserved, ReshardObserved};
use crate::labs::{Line, Piece};
use crate::lang::{pick, Lang};
use crate::service::cluster::stats::NodeCounters;
use crate::timeline::{Event, EventKind};

/// `queue {shard-0}: slot 4971 on master A, 60 jobs took effect, 0 left in its lists`; for
/// keys without a common tag, their two slots (which depend on the run's key prefix).
pub(super) fn queue_lines(p: &PointObserved, counts: bool, lang: Lang) -> Vec<Line> {
    p.queues
        .iter()
        .map(|q| {
            if q.processing_slot != q.slot {
                let (a, b) = (Piece::Count(q.slot as i64), Piece::Count(q.processing_slot as i64));
                return Line::text(pick(lang, "queue:default is in slot ", "queue:default ở slot "))
                    .and(a)
                    .and_text(pick(lang, ", processing:default in slot ", ", processing:default ở slot "))
                    .and(b)
                    .and_text(pick(
                        lang,
                        ": no command may name both (CROSSSLOT)",
                        ": không lệnh nào được dùng cả hai (CROSSSLOT)",
                    ));
            }
            let (tag, slot, master) = (&q.tag, q.slot, &q.master);
            let line = Line::text(crate::tr!(
                lang,
                "queue {tag}: slot {slot} on master {master}",
                "hàng đợi {tag}: slot {slot} trên master {master}"
            ));
            if !counts {
                return line;
            }
            line.and_text(", ")
                .and(Piece::Count(q.applied.len() as i64))
                .and_text(pick(lang, " jobs took effect, ", " job có hiệu lực, "))
                .and(Piece::Count((q.left_in_queue + q.left_in_processing) as i64))
                .and_text(pick(lang, " left in its lists", " còn trong các list"))
        })
        .collect()
}

/// `A/B/C 0/100/0 %`: one number per master.
fn per_master(values: &[f64]) -> Line {
    Line::join(values.iter().map(|v| Line(vec![Piece::Count(v.round() as i64)])).collect(), "/").and_text(" %")
}

/// One point of a throughput run: `3 workers: 8707 jobs/s · queue commands per master
/// A/B/C 0/100/0 % · main thread busy 0/22/0 % · ceiling 39736 jobs/s · 146 orders out of order`.
pub(super) fn point_line(p: &PointObserved, m: &Measures, late: usize, lang: Lang) -> Line {
    let names: Vec<&str> = p.masters.iter().map(|x| x.name.as_str()).collect();
    let names = names.join("/");
    let workers = match (m.workers, lang) {
        (1, Lang::En) => "1 worker: ".to_string(),
        (n, Lang::En) => format!("{n} workers: "),
        (n, Lang::Vi) => format!("{n} worker: "),
    };
    Line::text(workers)
        .and(Piece::Count(m.jobs_per_s))
        .and_text(crate::tr!(lang, " jobs/s · queue commands {names} ", " job/s · lệnh hàng đợi {names} "))
        .and_line(per_master(&m.shares))
        .and_text(pick(lang, " · main thread busy ", " · luồng chính bận "))
        .and_line(per_master(&m.busy))
        .and_text(pick(lang, " · ceiling ", " · trần "))
        .and(Piece::Count(m.ceiling_jobs_per_s))
        .and_text(pick(lang, " jobs/s · ", " job/s · "))
        .and(Piece::Count(late as i64))
        .and_text(pick(lang, " orders out of order", " đơn sai thứ tự"))
}

/// `master A (slots 0-5460): 33 % of the queue commands, main thread 9 % busy`.
pub(super) fn master_lines(p: &PointObserved, m: &Measures, lang: Lang) -> Vec<Line> {
    p.masters
        .iter()
        .enumerate()
        .map(|(i, master)| {
            let ranges: Vec<String> = master.slots.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            let (name, ranges) = (&master.name, ranges.join(","));
            Line::text(crate::tr!(lang, "master {name} (slots {ranges}): ", "master {name} (slot {ranges}): "))
                .and(Piece::Count(m.shares.get(i).copied().unwrap_or(0.0).round() as i64))
                .and_text(pick(
                    lang,
                    " % of the queue commands, main thread ",
                    " % lệnh của hàng đợi, luồng chính bận ",
                ))
                .and(Piece::Count(m.busy.get(i).copied().unwrap_or(0.0).round() as i64))
                .and_text(pick(lang, " % busy", " %"))
        })
        .collect()
}

/// How the reshard went: the stall against the other queues, the redirections the masters
/// answered, when each step happened and when the moved queue's next job took effect, and the
/// client's retry policy.
pub(super) fn reshard_lines(o: &ClusterObserved, r: &ReshardObserved, events: &[Event], lang: Lang) -> Vec<Line> {
    let (tag, slot, from, to) = (&r.tag, r.slot, &r.from, &r.to);
    let (stall, other) = gaps(events, tag);
    let sum =
        |f: fn(&NodeCounters) -> u64| o.points.iter().flat_map(|p| &p.masters).map(|m| f(&m.counters) as i64).sum();
    let mut lines = vec![Line::text(crate::tr!(
        lang,
        "slot {slot} ({tag}) moved {from} → {to} while the workers ran: longest gap between its jobs ",
        "slot {slot} ({tag}) chuyển {from} → {to} khi worker đang chạy: khoảng trống dài nhất giữa các job của nó "
    ))
    .and(Piece::MsFromUs(stall))
    .and_text(pick(lang, " ms (other queues: ", " ms (hàng đợi khác: "))
    .and(Piece::MsFromUs(other))
    .and_text(pick(lang, " ms); the masters answered ASK ", " ms); các master đã trả lời ASK "))
    .and(Piece::Count(sum(|c| c.ask)))
    .and_text(", MOVED ")
    .and(Piece::Count(sum(|c| c.moved)))
    .and_text(", TRYAGAIN ")
    .and(Piece::Count(sum(|c| c.tryagain)))];
    lines.extend(reshard_story(r, events, lang));
    lines
}

/// The moved queue around the move: when each step happened, what was pushed meanwhile, and
/// when its next job took effect.
fn reshard_story(r: &ReshardObserved, events: &[Event], lang: Lang) -> Option<Line> {
    let at = |f: &dyn Fn(&EventKind) -> bool| events.iter().find(|e| f(&e.kind)).map(|e| e.t_us);
    let migrating = at(&|k| matches!(k.family::<ClusterEvent>(), Some(ClusterEvent::SlotMigrating { .. })))?;
    let keys = at(&|k| matches!(k.family::<ClusterEvent>(), Some(ClusterEvent::SlotKeysMoved { .. })))?;
    let owned = at(&|k| matches!(k.family::<ClusterEvent>(), Some(ClusterEvent::SlotOwned { .. })))?;
    let ours = |e: &Event, applied: bool| match e.kind.family::<ClusterEvent>().as_ref() {
        Some(ClusterEvent::JobPushed { queue, .. }) => !applied && *queue == r.tag,
        Some(ClusterEvent::JobApplied { queue, .. }) => applied && *queue == r.tag,
        _ => false,
    };
    let pushed = events.iter().filter(|e| (migrating..owned).contains(&e.t_us) && ours(e, false)).count();
    let next = events.iter().find(|e| e.t_us >= owned && ours(e, true)).map(|e| e.t_us);
    let (tag, to) = (&r.tag, &r.to);
    let line = Line::text(crate::tr!(
        lang,
        "{tag} during the move: MIGRATING at t=",
        "{tag} trong lúc chuyển: MIGRATING lúc t="
    ))
    .and(Piece::Ms(migrating / 1000))
    .and_text(pick(lang, ", MIGRATE at t=", ", MIGRATE lúc t="))
    .and(Piece::Ms(keys / 1000))
    .and_text(crate::tr!(lang, ", NODE {to} at t=", ", NODE {to} lúc t="))
    .and(Piece::Ms(owned / 1000))
    .and_text("; ")
    .and(Piece::Count(pushed as i64))
    .and_text(pick(lang, " jobs pushed to it in between", " job được đẩy vào trong lúc đó"));
    Some(match next {
        Some(t) => line
            .and_text(pick(
                lang,
                "; its first job after the move took effect at t=",
                "; job đầu tiên sau khi chuyển có hiệu lực lúc t=",
            ))
            .and(Piece::Ms(t / 1000)),
        None => line,
    })
}
