//! The words for every timeline event, in both languages: one line per event, in the shape of
//! the seed's own lab output (`C1 received 1792591449272-0 created (v=1)`). The text report
//! prints them; the lab book's step-through captions reuse them.

pub use crate::timeline::vocabulary::Wording;

use crate::labs::{Procedure, RunRecord};
use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::job_line_label;
use crate::timeline::{Actor, EffectOutcome, Event, EventKind};
use std::collections::BTreeMap;

/// One timeline line, or None for events the text report leaves to JSON and SVG.
pub fn event_line(e: &Event, w: &Wording) -> Option<String> {
    let a = e.actor;
    let id = |x: &str| w.redact.entry_id(x);
    Some(match &e.kind {
        EventKind::Ready | EventKind::WorkStarted { .. } | EventKind::Acked { .. } => return None,
        EventKind::Published { entry_id, job, attempt } => {
            format!("{a}: {} OK → {}", attempt_label(job, *attempt), id(entry_id))
        }
        EventKind::PublishFailed { job, attempt, retry_in_ms, cause, .. } => {
            publish_failed(a, job, *attempt, *retry_in_ms, *cause, w.lang)
        }
        EventKind::Received { entry_id, job: j, deliveries } => {
            let mut line = format!(
                "{a} {} {} {}",
                pick(w.lang, "received", "nhận"),
                id(entry_id),
                job_line_label(j, w.many_orders)
            );
            // A redelivery: same entry ID, the server's delivery count raised.
            if let Some(d) = deliveries.filter(|d| *d > 1) {
                line.push_str(&crate::tr!(w.lang, " (delivery {d}, same ID)", " (lần giao thứ {d}, cùng ID)"));
            }
            line
        }
        EventKind::Wrote { status, version, rows, order, .. } => wrote(a, *order, status, *version, *rows, w),
        EventKind::Effect { job, effect, requested_by, idem_key, outcome } => {
            effect_line(*requested_by, job, effect, idem_key.as_deref(), *outcome, w.lang)
        }
        EventKind::ServerCommand { args, .. } if crate::interposer::is_handshake(args) => return None,
        EventKind::ServerCommand { .. } => command_line(e, w),
        EventKind::SqlSent { .. }
        | EventKind::SqlDone { .. }
        | EventKind::ServerKilled { .. }
        | EventKind::Reconnected { .. }
        | EventKind::Crashed { .. } => session_line(e, w),
        EventKind::Family(f) => return crate::labs::VOCABULARIES.describe(f)?.line(a, w),
    })
}

/// Stream entry IDs (`1796128672352-0`) in a recorded command or reply: redacted, `[id]`.
fn redact_ids(text: &str, w: &Wording) -> String {
    if !w.redact.active() {
        return text.to_string();
    }
    static ID: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let id = ID.get_or_init(|| regex::Regex::new(r"\b\d{6,}-\d+\b").expect("a valid pattern"));
    id.replace_all(text, "[id]").into_owned()
}

/// A server command and its reply, as a protocol recorder saw it: `C1 [redis 1] XACK s g 1-0
/// → 1`; arguments past the sixth are elided.
fn command_line(e: &Event, w: &Wording) -> String {
    let EventKind::ServerCommand { server, connection, args, reply, error, round_trip_us, .. } = &e.kind else {
        return String::new();
    };
    // A statement that waited (on a lock) says how long: its duration, send to reply.
    let waited = match (server, round_trip_us) {
        (crate::timeline::ServerKind::Postgres, Some(us)) if *us >= crate::pg_locks::THRESHOLD.as_micros() as i64 => {
            format!(" ({} {})", pick(w.lang, "after", "sau"), w.redact.ms((*us as f64 / 1000.0).round() as i64))
        }
        _ => String::new(),
    };
    let server = match server {
        crate::timeline::ServerKind::Redis => "redis",
        crate::timeline::ServerKind::Postgres => "postgres",
    };
    // Which release a worker sends (DELEX on Redis ≥ 8.4, else EVAL) is the server's: a
    // snapshot says `[release]`, as for ordlab's own consumer.
    let release = w.redact.active().then(|| crate::checker::exclusion::wire_release_key(args)).flatten();
    let shown = match (server, release) {
        // `UPDATE ordlab.orders SET status = $1 … WHERE id = $3 [paid, 2, 42] → UPDATE 1`
        ("postgres", _) => match args.split_first() {
            Some((sql, [])) => sql.clone(),
            Some((sql, params)) => format!("{sql} [{}]", params.join(", ")),
            None => String::new(),
        },
        (_, Some(key)) => format!("[release] {key}"),
        _ => {
            let mut shown: Vec<&str> = args.iter().take(6).map(String::as_str).collect();
            if args.len() > 6 {
                shown.push("…");
            }
            shown.join(" ")
        }
    };
    let err = if *error { pick(w.lang, "ERROR ", "LỖI ") } else { "" };
    let line = format!("{} [{server} {connection}] {shown} → {err}{reply}{waited}", e.actor);
    redact_ids(&line, w)
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
    let (show_publish, show_wire) = (procedure.shows_publishing(), !procedure.wire_read_as_kind_events());
    // Ordered with every event (a publish orders its receive), then filtered to what is shown.
    let all: Vec<&Event> = r.events.iter().collect();
    let ordered = if race { w.redact.order_by_process(all) } else { w.redact.order(all) };
    let lines = ordered
        .into_iter()
        .filter(|e| show_wire || !matches!(e.kind, EventKind::ServerCommand { .. }))
        .filter_map(|e| shown_line(e, show_publish, w).map(|line| (e, line)))
        .collect();
    fold_lock_tries(lines, w)
}

/// The line of `e` where a timeline shows it: None for events the text report leaves out, and
/// for publishing unless `show_publish` (the lab's [`Procedure::shows_publishing`]). What
/// [`timeline_lines`] lists, one event at a time (`ordlab serve` streams them so).
pub fn shown_line(e: &Event, show_publish: bool, w: &Wording) -> Option<String> {
    let publishing = match &e.kind {
        EventKind::Published { .. } | EventKind::PublishFailed { .. } => true,
        EventKind::Family(f) => crate::labs::VOCABULARIES.describe(f).is_some_and(|d| d.is_publish()),
        _ => false,
    };
    if publishing && !show_publish {
        return None;
    }
    event_line(e, w)
}

/// The key of a worker's `SET key token … NX` at the wire, and whether it took the key (`OK`)
/// or found it held (`(nil)`).
fn set_nx(e: &Event) -> Option<(&str, bool)> {
    let EventKind::ServerCommand { args, reply, error: false, .. } = &e.kind else { return None };
    let nx = args.first()?.eq_ignore_ascii_case("SET") && args.iter().skip(3).any(|a| a.eq_ignore_ascii_case("NX"));
    match reply.as_str() {
        "OK" if nx => Some((args.get(1)?, true)),
        "(nil)" if nx => Some((args.get(1)?, false)),
        _ => None,
    }
}

/// A lock's `SET … NX PX <ms>` (the seed's lock loop), as opposed to a one-shot `SET … NX EX`
/// (an idempotency key).
fn is_lock_try(e: &Event) -> bool {
    matches!(&e.kind, EventKind::ServerCommand { args, .. } if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case("PX")))
}

/// A worker's lock tries at the wire, folded as ordlab's own consumer's line is: its failed
/// `SET … NX` tries (someone held the key) are left out and the one that took the key says
/// how many it took; a process that never took it keeps its first try, with the count. A
/// single try says nothing more — except a lock's in a snapshot, where the count is redacted
/// (`[n]`), since how many tries a lock took depends on the run.
fn fold_lock_tries<'a>(lines: Vec<(&'a Event, String)>, w: &Wording) -> Vec<(&'a Event, String)> {
    let mut out: Vec<Option<(&'a Event, String)>> = Vec::with_capacity(lines.len());
    // (process, key) → (where its first failed try is in `out`, failed tries so far)
    let mut failing: BTreeMap<(Actor, String), (usize, u32)> = BTreeMap::new();
    for (e, line) in lines {
        match set_nx(e) {
            Some((key, false)) => {
                let f = failing.entry((e.actor, key.to_string())).or_insert((out.len(), 0));
                f.1 += 1;
                out.push((f.1 == 1).then_some((e, line)));
            }
            Some((key, true)) => {
                let (first, failed) = failing.remove(&(e.actor, key.to_string())).unwrap_or((usize::MAX, 0));
                if let Some(slot) = out.get_mut(first) {
                    *slot = None;
                }
                // One try that took the key (an idempotency key's SET NX) is just its line.
                if failed == 0 && !(w.redact.active() && is_lock_try(e)) {
                    out.push(Some((e, line)));
                    continue;
                }
                let (n, unit) = (w.redact.count(failed + 1), tries_unit(failed + 1, w));
                let after = crate::tr!(w.lang, "after {n} {unit}", "sau {n} lần thử");
                out.push(Some((e, format!("{line} ({after})"))));
            }
            None => out.push(Some((e, line))),
        }
    }
    // A single refused try (someone else's key, not retried) is just its line too.
    for (first, failed) in failing.into_values() {
        let Some(Some((e, line))) = out.get_mut(first) else { continue };
        if failed > 1 || (w.redact.active() && is_lock_try(e)) {
            let (n, unit) = (w.redact.count(failed), tries_unit(failed, w));
            line.push_str(&crate::tr!(w.lang, " ({n} {unit}, never took it)", " ({n} lần thử, không lấy được)"));
        }
    }
    out.into_iter().flatten().collect()
}

fn tries_unit(n: u32, w: &Wording) -> &'static str {
    if n == 1 && !w.redact.active() {
        "try"
    } else {
        "tries"
    }
}

/// Lines of SQL sessions, outbox rounds, servers and crashes.
fn session_line(e: &Event, w: &Wording) -> String {
    let a = e.actor;
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
        EventKind::ServerKilled { server, signal } => {
            crate::tr!(w.lang, "{a}: {signal} → the {server} dies", "{a}: {signal} → {server} chết")
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
        EventKind::Crashed { .. } => format!("{a} {}", crash_words(&e.kind, w.lang).unwrap_or_default()),
        _ => String::new(),
    }
}

/// What a `crashed` event says, in `lang`, without its actor (`CRASHED (injected: …)`):
/// the text report's line and the timeline's label.
pub fn crash_words(kind: &EventKind, lang: Lang) -> Option<String> {
    let EventKind::Crashed { planned, .. } = kind else { return None };
    let detail = kind.crash_detail(lang).unwrap_or_default();
    Some(match (planned, lang) {
        (true, Lang::En) => format!("CRASHED (injected: {detail})"),
        (true, Lang::Vi) => format!("CRASH (chủ động: {detail})"),
        (false, Lang::En) => format!("DIED unexpectedly: {detail}"),
        (false, Lang::Vi) => format!("chết bất ngờ: {detail}"),
    })
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
    cause: crate::timeline::PublishFailure,
    lang: Lang,
) -> String {
    let what = attempt_label(job, attempt);
    if cause == crate::timeline::PublishFailure::PrimaryGone {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Redactor;
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

    #[test]
    fn a_worker_s_failed_lock_tries_fold_into_the_one_that_took_it() {
        let set = |t_us, who, reply: &str| Event {
            t_us,
            actor: Actor::Consumer(who),
            kind: EventKind::ServerCommand {
                server: crate::timeline::ServerKind::Redis,
                connection: 1,
                args: ["SET", "lock:order:42", "tok", "PX", "5000", "NX"].map(String::from).to_vec(),
                reply: reply.into(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
        };
        let events = [
            set(1, 1, "OK"),
            set(2, 2, "(nil)"),
            set(3, 2, "(nil)"),
            set(4, 2, "OK"),
            set(5, 3, "(nil)"),
            set(6, 4, "(nil)"),
            set(7, 4, "(nil)"),
        ];
        let w = wording(Lang::En, Redactor::NONE);
        let lines: Vec<(&Event, String)> = events.iter().map(|e| (e, event_line(e, &w).unwrap())).collect();
        let shown: Vec<String> = fold_lock_tries(lines.clone(), &w).into_iter().map(|(_, l)| l).collect();
        let set_line = "[redis 1] SET lock:order:42 tok PX 5000 NX";
        assert_eq!(
            shown,
            [
                // One try is just its line (an idempotency key's SET NX is not a retried lock).
                format!("C1 {set_line} → OK"),
                format!("C2 {set_line} → OK (after 3 tries)"),
                format!("C3 {set_line} → (nil)"),
                format!("C4 {set_line} → (nil) (2 tries, never took it)"),
            ]
        );
        let redacted = fold_lock_tries(lines, &wording(Lang::Vi, Redactor::SNAPSHOT));
        assert!(redacted[1].1.ends_with("→ OK (sau [n] lần thử)"), "{redacted:?}");
        // In a snapshot a lock's tries are counted even when it took one: the count varies.
        assert!(redacted[0].1.ends_with("→ OK (sau [n] lần thử)"), "{redacted:?}");
        // The release a worker sends depends on the server's version: a snapshot hides which.
        let mut release = set(6, 1, "1");
        if let EventKind::ServerCommand { args, .. } = &mut release.kind {
            *args = ["DELEX", "lock:order:42", "IFEQ", "tok"].map(String::from).to_vec();
        }
        assert_eq!(event_line(&release, &w).unwrap(), "C1 [redis 1] DELEX lock:order:42 IFEQ tok → 1");
        let snapshot = wording(Lang::En, Redactor::SNAPSHOT);
        assert_eq!(event_line(&release, &snapshot).unwrap(), "C1 [redis 1] [release] lock:order:42 → 1");
    }

    #[test]
    fn a_recorded_server_command_is_one_line_with_its_connection_and_reply() {
        use crate::timeline::ServerKind;
        let e = Event {
            t_us: 0,
            actor: Actor::Worker(1),
            kind: EventKind::ServerCommand {
                server: ServerKind::Redis,
                connection: 2,
                args: ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"].map(String::from).to_vec(),
                reply: "1 entry 1796128672352-0 type=paid".into(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
        };
        assert_eq!(
            event_line(&e, &wording(Lang::En, Redactor::NONE)).unwrap(),
            "W1 [redis 2] XREADGROUP GROUP g c1 COUNT 1 … → 1 entry 1796128672352-0 type=paid"
        );
        assert_eq!(
            event_line(&e, &wording(Lang::En, Redactor::SNAPSHOT)).unwrap(),
            "W1 [redis 2] XREADGROUP GROUP g c1 COUNT 1 … → 1 entry [id] type=paid",
            "an entry ID is redacted in a snapshot"
        );
        let command = |server, args: &[&str], reply: &str| Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::ServerCommand {
                server,
                connection: 1,
                args: args.iter().map(|a| a.to_string()).collect(),
                reply: reply.into(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
        };
        let sql = command(ServerKind::Postgres, &["UPDATE t SET s = $1 WHERE id = $2", "paid", "42"], "UPDATE 1");
        assert_eq!(
            event_line(&sql, &wording(Lang::En, Redactor::NONE)).unwrap(),
            "C1 [postgres 1] UPDATE t SET s = $1 WHERE id = $2 [paid, 42] → UPDATE 1"
        );
        let hello = command(ServerKind::Redis, &["HELLO", "3"], "{…}");
        assert_eq!(event_line(&hello, &wording(Lang::En, Redactor::NONE)), None, "a handshake is left out");
        let name = command(ServerKind::Redis, &["CLIENT", "SETINFO", "LIB-NAME", "redis-py"], "OK");
        let version = command(ServerKind::Redis, &["CLIENT", "SETINFO", "LIB-VER", "8.1.0"], "OK");
        assert_eq!(crate::interposer::client_libraries(&[hello, name, version, sql]), ["C1 redis-py 8.1.0 (RESP3)"]);
    }

    #[test]
    fn a_family_event_is_worded_by_its_vocabulary() {
        use crate::list_queue::events::ListEvent;
        use crate::timeline::vocabulary::Vocabulary;
        let e = Event {
            t_us: 0,
            actor: Actor::Worker(2),
            kind: ListEvent::Taken { job: "job-1".into(), via: "BLMOVE".into(), lease_ms: None }.event(),
        };
        assert_eq!(event_line(&e, &wording(Lang::En, Redactor::NONE)).unwrap(), "W2 took job-1 (BLMOVE)");
        assert_eq!(event_line(&e, &wording(Lang::Vi, Redactor::NONE)).unwrap(), "W2 lấy job-1 (BLMOVE)");
    }
}
