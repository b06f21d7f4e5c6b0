//! The text report: an environment header, then per variant a title line with the set-up,
//! run 1's timeline in the seed's shape (`t=   2 ms  C1 received 1792591449272-0 created
//! (v=1)`), every run's final status with wrong ones marked, and the count of wrong runs.
//! English by default; Vietnamese follows the wording of the seed's own lab output.

use super::{Environment, LabReport, RunRecord, VariantReport};
use crate::checker::{Outcome, Verdict};
use crate::scenario::{DispatcherKind, Exclusion, Expectation, LabKind, Setup, Strategy, VersionSource};
use crate::timeline::{Event, EventKind};
use std::fmt::Write;

/// Output language of text reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    #[default]
    En,
    Vi,
}

/// How to render.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    pub lang: Lang,
    /// Which run's timeline to print (1-based).
    pub timeline_run: u32,
    /// Snapshot form: values that vary between runs replaced by `[id]`, `[ms]`, … and the
    /// timeline grouped by actor (each process's own order is stable; the interleaving of
    /// near-simultaneous events across processes is not).
    pub redact: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { lang: Lang::En, timeline_run: 1, redact: false }
    }
}

pub fn render(report: &LabReport, opts: &TextOptions) -> String {
    let mut out = String::new();
    header(&mut out, &report.environment, opts);
    let lab = &report.lab;
    let _ = writeln!(out, "\n# {} — {}", lab.id, lab.title);
    let _ = writeln!(out, "{}: {}", w(opts, "source", "nguồn"), lab.source);
    for v in &report.variants {
        out.push('\n');
        variant(&mut out, v, opts);
    }
    side_by_side(&mut out, report, opts);
    out
}

/// For labs over many orders (`load`): one table of every variant's run 1.
fn side_by_side(out: &mut String, report: &LabReport, opts: &TextOptions) {
    let rows: Vec<(&VariantReport, &RunRecord)> = report
        .variants
        .iter()
        .filter_map(|v| v.run_records.first().filter(|r| r.facts.contains_key("throughput_eps")).map(|r| (v, r)))
        .collect();
    if rows.len() < 2 {
        return;
    }
    let n = |r: &RunRecord, k: &str| match r.facts.get(k) {
        Some(_) if opts.redact => "[n]".to_string(),
        Some(x) => x.to_string(),
        None => "-".to_string(),
    };
    let ms = |r: &RunRecord, k: &str| match r.facts.get(k) {
        Some(_) if opts.redact => "[ms]".to_string(),
        Some(x) => format!("{:.1}", *x as f64 / 1000.0),
        None => "-".to_string(),
    };
    let _ =
        writeln!(out, "\n### {}", w(opts, "side by side (run 1 of each variant)", "so sánh (lần 1 của từng biến thể)"));
    let _ = writeln!(
        out,
        "  {:<16} {:>9} {:>10} {:>10} {:>10} {:>13} {:>14}",
        w(opts, "variant", "biến thể"),
        w(opts, "events/s", "event/s"),
        "p50 ms",
        "p99 ms",
        w(opts, "wrong", "sai"),
        w(opts, "producer/s", "producer/s"),
        "redis-bench/s"
    );
    for (v, r) in rows {
        let _ = writeln!(
            out,
            "  {:<16} {:>9} {:>10} {:>10} {:>10} {:>13} {:>14}",
            v.id,
            n(r, "throughput_eps"),
            ms(r, "latency_p50_us"),
            ms(r, "latency_p99_us"),
            format!("{}/{}", n(r, "wrong_orders"), r.final_rows.len()),
            n(r, "producer_alone_xadd_per_s"),
            n(r, "benchmark_xadd_per_s"),
        );
    }
}

fn w<'a>(opts: &TextOptions, en: &'a str, vi: &'a str) -> &'a str {
    match opts.lang {
        Lang::En => en,
        Lang::Vi => vi,
    }
}

fn header(out: &mut String, env: &Environment, opts: &TextOptions) {
    if opts.redact {
        let _ = writeln!(out, "ordlab [version] · backend [backend] · Redis [version] · PostgreSQL [version]");
        let _ = writeln!(
            out,
            "time scale {} · timeline grouped by process (cross-process interleaving varies)",
            env.time_scale
        );
        return;
    }
    let _ = writeln!(
        out,
        "ordlab {} (commit {}) · backend {} · Redis {} · PostgreSQL {} · {}: {}",
        env.ordlab_version,
        env.git_commit,
        env.backend,
        env.redis_version,
        env.postgres_version,
        w(opts, "lock release", "nhả lock"),
        env.lock_release
    );
    let _ = writeln!(
        out,
        "{} · {} · seed {} · time scale {}",
        if env.command_line.is_empty() { "ordlab" } else { &env.command_line },
        env.date,
        env.seed,
        env.time_scale
    );
}

/// The set-up in one line, derived from the data so an edited scenario describes itself.
pub fn setup_summary(s: &Setup, opts: &TextOptions) -> String {
    let vi = opts.lang == Lang::Vi;
    match (s.kind, &s.sql_race) {
        (LabKind::SqlRace, Some(r)) => {
            return if vi {
                format!(
                    "2 session, A giữ khoá dòng {} ms rồi COMMIT, B tới sau {} ms; CAS theo version nghiệp vụ",
                    r.hold_ms, r.b_after_ms
                )
            } else {
                format!("2 sessions, A holds the row lock {} ms before COMMIT, B arrives after {} ms; CAS on the business version", r.hold_ms, r.b_after_ms)
            };
        }
        (LabKind::Failover, _) if s.failover.is_some() => {
            let f = s.failover.as_ref().unwrap();
            let strategy = match (&s.strategy, vi) {
                (Strategy::Plain, false) => "plain UPDATE",
                (Strategy::Plain, true) => "UPDATE thường",
                (_, false) => "CAS on the business version",
                (_, true) => "CAS theo version nghiệp vụ",
            };
            return if vi {
                format!(
                    "primary + 1 replica bất đồng bộ, {} order × created/paid mỗi {} ms, cắt link replica sau {} event, kill -9 primary sau {}, {} consumer, {strategy}",
                    f.orders, f.publish_every_ms, f.cut_after, f.kill_after, s.consumers
                )
            } else {
                format!(
                    "primary + 1 async replica, {} orders × created/paid every {} ms, replica link cut after {} events, primary SIGKILLed after {}, {} consumers, {strategy}",
                    f.orders, f.publish_every_ms, f.cut_after, f.kill_after, s.consumers
                )
            };
        }
        (LabKind::OutboxRollback, _) => {
            return w(
                opts,
                "one transaction: UPDATE orders + INSERT INTO outbox, then ROLLBACK",
                "một transaction: UPDATE orders + INSERT INTO outbox, rồi ROLLBACK",
            )
            .to_string();
        }
        _ => {}
    }
    let mut parts = Vec::new();
    if let (LabKind::Outbox, Some(o)) = (s.kind, &s.outbox) {
        let order = match o.dispatcher {
            DispatcherKind::Naive => "ORDER BY id",
            DispatcherKind::PerKey => "ORDER BY aggregate_id, id",
        };
        let fails: Vec<String> = o
            .failing_rows
            .iter()
            .map(|f| {
                if vi {
                    format!("row {} lỗi {} lần đầu", f.row, f.attempts)
                } else {
                    format!("row {} fails {}×", f.row, f.attempts)
                }
            })
            .collect();
        let fails = if fails.is_empty() { String::new() } else { format!(", {}", fails.join(", ")) };
        parts.push(if vi {
            format!("dispatcher {order}, poll mỗi {} ms{fails}", o.poll_ms)
        } else {
            format!("dispatcher {order}, polls every {} ms{fails}", o.poll_ms)
        });
        if o.dispatchers > 1 {
            let how = match (o.exclusion, vi) {
                (Exclusion::None, false) => "no exclusion",
                (Exclusion::None, true) => "không loại trừ",
                (Exclusion::SkipLocked, _) => "FOR UPDATE SKIP LOCKED",
                (Exclusion::AdvisoryLock, _) => "pg_try_advisory_xact_lock",
            };
            let latency: Vec<String> =
                (1..=o.dispatchers).map(|i| format!("D{i} {} ms", o.publish_latency_ms(i))).collect();
            parts.push(if vi {
                format!("{} dispatcher, {how}, trễ trước XADD: {}", o.dispatchers, latency.join(", "))
            } else {
                format!("{} dispatchers, {how}, latency before XADD: {}", o.dispatchers, latency.join(", "))
            });
        }
        if let Some(row) = o.crash_after_xadd_of_row {
            parts.push(if vi {
                format!("dispatcher bị SIGKILL sau XADD row {row}, trước khi đánh dấu; một dispatcher mới tiếp quản")
            } else {
                format!("dispatcher SIGKILLed after XADD of row {row}, before marking it; a new dispatcher takes over")
            });
        }
    }
    parts.push(match (s.consumers, opts.lang) {
        (1, Lang::En) => "1 consumer".to_string(),
        (1, Lang::Vi) => "1 consumer duy nhất".to_string(),
        (n, Lang::En) => format!("{n} consumers in parallel ({n} processes)"),
        (n, Lang::Vi) => format!("{n} consumer song song ({n} process)"),
    });
    let mut types: Vec<&str> = Vec::new();
    for e in &s.events {
        if !types.contains(&e.event_type.as_str()) {
            types.push(&e.event_type);
        }
    }
    let costs: Vec<String> = types.iter().map(|t| format!("{t} {} ms", s.cost_of(t))).collect();
    if s.cost_ms.values().any(|c| *c > 0.0) {
        parts.push(costs.join(", "));
    }
    parts.push(match (&s.strategy, opts.lang) {
        (Strategy::Plain, Lang::En) => "plain UPDATE".into(),
        (Strategy::Plain, Lang::Vi) => "UPDATE thường".into(),
        (Strategy::Idempotent, Lang::En) => "idempotent (processed table, ON CONFLICT DO NOTHING)".into(),
        (Strategy::Idempotent, Lang::Vi) => "idempotent (bảng processed, ON CONFLICT DO NOTHING)".into(),
        (Strategy::Fanout, Lang::En) => {
            "fan-out: one reader, an in-memory queue and a worker per order, plain UPDATE".into()
        }
        (Strategy::Fanout, Lang::Vi) => {
            "fan-out: một reader, mỗi đơn một hàng đợi trong bộ nhớ và một worker, UPDATE thường".into()
        }
        (Strategy::Cas { version: VersionSource::Business }, Lang::En) => "CAS on the business version".into(),
        (Strategy::Cas { version: VersionSource::Business }, Lang::Vi) => "CAS theo version nghiệp vụ".into(),
        (Strategy::Cas { version: VersionSource::EntryId }, Lang::En) => "CAS on the entry ID (ms*100000+seq)".into(),
        (Strategy::Cas { version: VersionSource::EntryId }, Lang::Vi) => "CAS theo entry ID (ms*100000+seq)".into(),
        (Strategy::Upsert, Lang::En) => "conditional upsert (INSERT … ON CONFLICT DO UPDATE … WHERE version <)".into(),
        (Strategy::Upsert, Lang::Vi) => "upsert có điều kiện (INSERT … ON CONFLICT DO UPDATE … WHERE version <)".into(),
        (Strategy::UpdateThenInsert { gap_ms }, Lang::En) => format!("UPDATE, and if no row INSERT {gap_ms} ms later"),
        (Strategy::UpdateThenInsert { gap_ms }, Lang::Vi) => {
            format!("UPDATE, không có dòng thì INSERT sau {gap_ms} ms")
        }
        (Strategy::State, Lang::En) => format!("events carry the full state ({} B), keep the newest", s.state_bytes),
        (Strategy::State, Lang::Vi) => {
            format!("sự kiện mang toàn bộ trạng thái ({} B), giữ bản mới nhất", s.state_bytes)
        }
        (Strategy::ReorderBuffer { gap_timeout_ms }, Lang::En) => {
            format!("reorder buffer per order (gap timeout {gap_timeout_ms} ms), then plain UPDATE")
        }
        (Strategy::ReorderBuffer { gap_timeout_ms }, Lang::Vi) => {
            format!("bộ đệm sắp xếp lại theo đơn (chờ tối đa {gap_timeout_ms} ms), rồi UPDATE thường")
        }
        (Strategy::Lock(l), lang) => {
            let mut t = match lang {
                Lang::En => format!("per-key lock SET NX PX {}, retry every {} ms", l.ttl_ms, l.retry_ms),
                Lang::Vi => format!("lock theo khoá SET NX PX {}, thử lại mỗi {} ms", l.ttl_ms, l.retry_ms),
            };
            if l.prework_max_ms > 0 {
                let _ = write!(
                    t,
                    "{}",
                    match lang {
                        Lang::En => format!(", 0–{} ms random work first", l.prework_max_ms),
                        Lang::Vi => format!(", làm việc ngẫu nhiên 0–{} ms trước", l.prework_max_ms),
                    }
                );
            }
            t
        }
    });
    if let Some(c) = &s.crash {
        let at = match (&c.event, c.entries) {
            (Some(t), _) => t.clone(),
            (None, n) if vi => format!("entry thứ {}", n.unwrap_or(1)),
            (None, n) => format!("entry no. {}", n.unwrap_or(1)),
        };
        parts.push(if vi {
            format!("C{} bị SIGKILL ngay sau khi nhận {at}, trước XACK", c.consumer)
        } else {
            format!("C{} SIGKILLed right after receiving {at}, before XACK", c.consumer)
        });
    }
    if let Some(r) = &s.reaper {
        parts.push(if vi {
            format!("reaper: XAUTOCLAIM min-idle {} ms, mỗi {} ms", r.min_idle_ms, r.poll_ms)
        } else {
            format!("reaper: XAUTOCLAIM min-idle {} ms, every {} ms", r.min_idle_ms, r.poll_ms)
        });
    }
    for e in s.events.iter().filter(|e| e.fail_attempts > 0) {
        parts.push(match opts.lang {
            Lang::En => {
                format!("publish {} fails {}× (retry {} ms, ×{})", e.event_type, e.fail_attempts, e.retry_ms, e.backoff)
            }
            Lang::Vi => format!(
                "publish {} lỗi {} lần (retry {} ms, x{})",
                e.event_type, e.fail_attempts, e.retry_ms, e.backoff
            ),
        });
    }
    parts.join("; ")
}

fn variant(out: &mut String, v: &VariantReport, opts: &TextOptions) {
    let _ = writeln!(out, "### {}: {}; {}", v.id, v.title, setup_summary(&v.setup, opts));
    if opts.redact && v.scheduler_race {
        let _ = writeln!(out, "  [timeline: decided by the OS scheduler, differs run to run]");
    } else if let Some(r) = v.run_records.iter().find(|r| r.run == opts.timeline_run) {
        timeline(out, r, &v.setup, opts);
    }
    let probabilistic = matches!(v.expected, Expectation::Some | Expectation::Any);
    // A measured-only or at-least-one count differs between runs of the lab: redact it.
    let unstable = opts.redact && probabilistic;
    let finals: Vec<String> = v
        .run_records
        .iter()
        .map(|r| if unstable { "[status]".to_string() } else { final_status(r, opts.redact) })
        .collect();
    let _ = writeln!(out, "  {}: {}", w(opts, "final status per run", "status cuối từng lần"), finals.join(" "));
    if v.setup.outbox.as_ref().is_some_and(|o| o.checks_delivery()) {
        // Several dispatchers or a crash: what the stream and the side effects say, per run.
        let per_run: Vec<String> = v
            .run_records
            .iter()
            .map(|r| {
                let s = crate::checker::stream_stats(&r.stream);
                let twice = crate::checker::side_effects(&r.stream, &r.events).values().filter(|e| e.len() > 1).count();
                format!("{}/{}/{}", s.duplicates, s.out_of_order_pairs, twice)
            })
            .collect();
        let label = w(
            opts,
            "duplicates/out-of-order pairs in the stream/events applied twice, per run",
            "bản trùng/cặp sai thứ tự trong stream/event bị áp dụng hai lần, từng lần",
        );
        let _ = writeln!(out, "  {label}: {}", per_run.join(" "));
    }
    for r in v.run_records.iter().filter(|r| !r.facts.is_empty()) {
        let facts: Vec<String> = r
            .facts
            .iter()
            .map(|(k, n)| format!("{k}={}", if opts.redact { "[n]".to_string() } else { n.to_string() }))
            .collect();
        let _ = writeln!(
            out,
            "  {} ({} {}): {}",
            w(opts, "measured", "đo được"),
            w(opts, "run", "lần"),
            r.run,
            facts.join(", ")
        );
    }
    let expected = expected_statuses(&v.setup, opts);
    let k = if unstable { "[k]".to_string() } else { v.wrong.to_string() };
    let interval = if probabilistic && !opts.redact {
        let (lo, hi) = super::wilson_95(v.wrong, v.runs - v.unknown);
        format!(" ({} {:.0}–{:.0} %)", w(opts, "95 % interval", "khoảng tin cậy 95 %"), lo * 100.0, hi * 100.0)
    } else {
        String::new()
    };
    let delivery = v.setup.outbox.as_ref().is_some_and(|o| o.checks_delivery());
    let _ = match (opts.lang, delivery) {
        (Lang::En, false) => writeln!(out, "  → wrong final state (not {expected}): {k}/{} runs{interval}", v.runs),
        (Lang::Vi, false) => {
            writeln!(out, "  → SAI trạng thái cuối (không phải {expected}): {k}/{} lần{interval}", v.runs)
        }
        (Lang::En, true) => writeln!(
            out,
            "  → wrong (final state not {expected}, or an event applied twice): {k}/{} runs{interval}",
            v.runs
        ),
        (Lang::Vi, true) => writeln!(
            out,
            "  → SAI (trạng thái cuối không phải {expected}, hoặc một event bị áp dụng hai lần): {k}/{} lần{interval}",
            v.runs
        ),
    };
    // Why the first wrong run is wrong, in the checker's words (they name entry IDs, so the
    // snapshot leaves them out).
    if let Some(r) = v.run_records.iter().find(|r| r.verdict.verdict == Verdict::Wrong).filter(|_| !opts.redact) {
        let _ = writeln!(
            out,
            "  {} ({} {}): {}",
            w(opts, "why", "vì sao"),
            w(opts, "run", "lần"),
            r.run,
            r.verdict.reasons.join("; ")
        );
    }
    if v.unknown > 0 {
        let _ = match opts.lang {
            Lang::En => writeln!(out, "  → could not judge: {}/{} runs", v.unknown, v.runs),
            Lang::Vi => writeln!(out, "  → không kết luận được: {}/{} lần", v.unknown, v.runs),
        };
    }
    let outcome = match (v.outcome, opts.lang) {
        (Outcome::Matched, Lang::En) => "matches",
        (Outcome::Matched, Lang::Vi) => "khớp",
        (Outcome::Mismatched, Lang::En) => "DOES NOT MATCH",
        (Outcome::Mismatched, Lang::Vi) => "KHÔNG KHỚP",
        (Outcome::Inconclusive, Lang::En) => "INCONCLUSIVE",
        (Outcome::Inconclusive, Lang::Vi) => "CHƯA KẾT LUẬN",
    };
    // With a snapshot's few runs, an at-least-one count can miss by chance: the outcome is
    // only meaningful over the lab's full runs.
    let outcome = if unstable { "[outcome]" } else { outcome };
    let _ = match opts.lang {
        Lang::En => writeln!(out, "  expected wrong: {} → {outcome}", v.expected),
        Lang::Vi => writeln!(out, "  kỳ vọng số lần sai: {} → {outcome}", v.expected),
    };
}

/// Many orders are summarised: listing fifty statuses helps nobody.
const LISTED_ORDERS: usize = 5;

fn expected_statuses(s: &Setup, opts: &TextOptions) -> String {
    let orders = s.orders();
    if orders.len() > LISTED_ORDERS {
        return w(opts, "each order's last event", "sự kiện cuối của từng đơn").to_string();
    }
    let statuses: Vec<String> = orders
        .iter()
        .filter_map(|o| {
            s.expected_status(*o).map(|st| if orders.len() == 1 { st.to_string() } else { format!("#{o} {st}") })
        })
        .collect();
    statuses.join(", ")
}

fn final_status(r: &RunRecord, redact: bool) -> String {
    let mark = if r.verdict.verdict == Verdict::Wrong {
        "✕"
    } else if r.verdict.verdict == Verdict::Unknown {
        "?"
    } else {
        ""
    };
    match r.final_rows.as_slice() {
        [one] => format!("{}{mark}", one.status),
        rows if rows.len() > LISTED_ORDERS => {
            let wrong = r.verdict.reasons.iter().filter(|x| x.contains(" ended ")).count();
            // How many of a thousand orders go wrong varies run to run; none is stable.
            let wrong = if redact && wrong > 0 { "[n]".to_string() } else { wrong.to_string() };
            format!("{wrong}/{}-wrong{mark}", rows.len())
        }
        rows => {
            let all: Vec<String> = rows.iter().map(|row| format!("#{}:{}", row.order, row.status)).collect();
            format!("{}{mark}", all.join("/"))
        }
    }
}

fn timeline(out: &mut String, r: &RunRecord, setup: &Setup, opts: &TextOptions) {
    // As in the seed: publish lines only where publishing has a schedule or faults worth seeing.
    let show_publish = setup.events.iter().any(|e| e.at_ms.is_some() || e.fail_attempts > 0);
    let id = |e: &str| if opts.redact { "[id]".to_string() } else { e.to_string() };
    let many = setup.orders().len() > 1;
    // One list per shard: each shard's order is the log's; across shards there is none.
    let stream: Vec<String> = (0..setup.shards)
        .map(|k| {
            let entries: Vec<String> = r
                .stream
                .iter()
                .filter(|s| s.shard == k)
                .map(|s| format!("{} {}", id(&s.entry_id), job(&s.job, many)))
                .collect();
            if setup.shards > 1 {
                format!("s{k}: {}", entries.join(", "))
            } else {
                entries.join(", ")
            }
        })
        .collect();
    if setup.kind == LabKind::Stream || setup.kind == LabKind::Outbox {
        let _ = writeln!(out, "{} {} — stream: {}", w(opts, "run", "lần"), r.run, stream.join("; "));
    } else {
        let _ = writeln!(out, "{} {}", w(opts, "run", "lần"), r.run);
    }
    let mut events: Vec<&Event> = r
        .events
        .iter()
        .filter(|e| show_publish || !matches!(e.kind, EventKind::Published { .. } | EventKind::PublishFailed { .. }))
        .filter(|e| line(e, many, opts).is_some())
        .collect();
    if opts.redact {
        events.sort_by_key(|e| e.actor);
    }
    // A run over many orders has thousands of lines: show its start and end; the JSON has all.
    let (head, tail) = (40, 10);
    let omitted = events.len().saturating_sub(head + tail + 1);
    for (i, e) in events.iter().enumerate() {
        if omitted > 0 && i == head {
            let _ = writeln!(
                out,
                "  … {omitted} {}",
                w(opts, "more lines (every event is in the JSON)", "dòng nữa (mọi sự kiện có trong JSON)")
            );
        }
        if omitted > 0 && i >= head && i < head + omitted {
            continue;
        }
        let t = if opts.redact { "t=[ms]".to_string() } else { format!("t={:>4} ms", e.t_ms()) };
        let _ = writeln!(out, "  {t}  {}", line(e, many, opts).unwrap());
    }
    if let Some(delays) = publish_delays(r, opts) {
        let _ = writeln!(out, "  {delays}");
    }
    if many && setup.kind == LabKind::Stream && setup.orders().len() <= LISTED_ORDERS {
        let _ = writeln!(out, "  {}", last_writes(r, opts));
    }
}

/// A job as the timeline names it: with its order when the lab has several.
fn job(j: &crate::timeline::Job, many_orders: bool) -> String {
    if many_orders {
        format!("#{} {j}", j.order)
    } else {
        j.to_string()
    }
}

/// Where publishing failed: per order, from its first publish attempt to its last event in
/// the stream (`#42 +420 ms`). None when every publish succeeded first time.
fn publish_delays(r: &RunRecord, opts: &TextOptions) -> Option<String> {
    if !r.events.iter().any(|e| matches!(e.kind, EventKind::PublishFailed { .. })) {
        return None;
    }
    let mut spans: Vec<(i64, i64, i64)> = Vec::new(); // (order, first try, last published), in µs
    for e in &r.events {
        let (order, published) = match &e.kind {
            EventKind::Published { job, .. } => (job.order, true),
            EventKind::PublishFailed { job, .. } => (job.order, false),
            _ => continue,
        };
        match spans.iter_mut().find(|s| s.0 == order) {
            Some(s) => {
                s.1 = s.1.min(e.t_us);
                if published {
                    s.2 = s.2.max(e.t_us);
                }
            }
            None => spans.push((order, e.t_us, if published { e.t_us } else { i64::MIN })),
        }
    }
    let parts: Vec<String> = spans
        .iter()
        .map(|(o, first, last)| {
            let ms =
                if *last == i64::MIN { "never".to_string() } else { format!("+{} ms", (last - first + 500) / 1000) };
            format!("#{o} {}", if opts.redact { "+[ms]".to_string() } else { ms })
        })
        .collect();
    Some(format!(
        "{}: {}",
        w(
            opts,
            "publish delay (first try → last event in the stream)",
            "độ trễ publish (lần thử đầu → sự kiện cuối vào stream)"
        ),
        parts.join(", ")
    ))
}

/// When each order was last written: the head-of-line blocking of a shard shows here.
fn last_writes(r: &RunRecord, opts: &TextOptions) -> String {
    let mut last: Vec<(i64, i64)> = Vec::new();
    for e in &r.events {
        if let EventKind::Wrote { order, .. } = &e.kind {
            match last.iter_mut().find(|(o, _)| o == order) {
                Some(x) => x.1 = x.1.max(e.t_us),
                None => last.push((*order, e.t_us)),
            }
        }
    }
    last.sort();
    let parts: Vec<String> = last
        .iter()
        .map(|(o, t)| if opts.redact { format!("#{o} t=[ms]") } else { format!("#{o} t={} ms", (t + 500) / 1000) })
        .collect();
    format!("{}: {}", w(opts, "last write per order", "lần ghi cuối theo đơn"), parts.join(", "))
}

/// One timeline line, or None for events the text report leaves to JSON and SVG.
fn line(e: &Event, many: bool, opts: &TextOptions) -> Option<String> {
    let id = |x: &str| if opts.redact { "[id]".to_string() } else { x.to_string() };
    let vi = opts.lang == Lang::Vi;
    let a = e.actor;
    Some(match &e.kind {
        EventKind::Ready | EventKind::WorkStarted { .. } | EventKind::Acked { .. } => return None,
        EventKind::Published { entry_id, job, attempt } => {
            let what = if *attempt == 1 {
                format!("publish {job}")
            } else {
                format!("retry #{} {}", attempt - 1, job.event_type)
            };
            format!("{a}: {what} OK → {}", id(entry_id))
        }
        EventKind::PublishFailed { job, attempt, retry_in_ms, .. } => {
            let what = if *attempt == 1 {
                format!("publish {job}")
            } else {
                format!("retry #{} {}", attempt - 1, job.event_type)
            };
            let retry = match (retry_in_ms, *attempt, vi) {
                (Some(ms), 1, false) => format!(" → retry in {ms} ms"),
                (Some(ms), _, false) => format!(" → retry in {ms} ms more (backoff)"),
                (Some(ms), 1, true) => format!(" → hẹn retry sau {ms} ms"),
                (Some(ms), _, true) => format!(" → hẹn retry sau {ms} ms nữa (backoff)"),
                (None, _, _) => String::new(),
            };
            if vi {
                format!("{a}: {what} LỖI (giả lập network blip){retry}")
            } else {
                format!("{a}: {what} FAILED (injected network blip){retry}")
            }
        }
        EventKind::Received { entry_id, job: j, deliveries } => {
            let mut line = format!("{a} {} {} {}", if vi { "nhận" } else { "received" }, id(entry_id), job(j, many));
            // A redelivery: same entry ID, the server's delivery count raised.
            if let Some(d) = deliveries.filter(|d| *d > 1) {
                line.push_str(&if vi {
                    format!(" (lần giao thứ {d}, cùng ID)")
                } else {
                    format!(" (delivery {d}, same ID)")
                });
            }
            line
        }
        EventKind::Queued { entry_id, worker } => {
            if vi {
                format!("{a} xếp {} vào hàng đợi của worker {worker}", id(entry_id))
            } else {
                format!("{a} queued {} for worker {worker}", id(entry_id))
            }
        }
        EventKind::LockAcquired { key, tries, ttl_ms } => {
            let tries_s = if opts.redact { "[n]".to_string() } else { tries.to_string() };
            if vi {
                format!("{a} lấy được {key} (SET NX PX {ttl_ms}) sau {tries_s} lần thử")
            } else {
                format!(
                    "{a} took {key} (SET NX PX {ttl_ms}) after {tries_s} {}",
                    if *tries == 1 && !opts.redact { "try" } else { "tries" }
                )
            }
        }
        EventKind::LockReleased { method, released, .. } => {
            let note = match (*released, vi) {
                (0, false) => " (the lock had expired: no longer ours)",
                (0, true) => " (lock đã hết hạn, không còn là của mình)",
                _ => "",
            };
            format!("{a} {}: {method} → {released}{note}", if vi { "nhả lock" } else { "released the lock" })
        }
        EventKind::Wrote { status, version, rows, order, .. } => {
            let status = if many { format!("{status} (#{order})") } else { status.clone() };
            let v = version
                .map(|v| {
                    format!(" version={}", if opts.redact && v > 1_000_000 { "[v]".to_string() } else { v.to_string() })
                })
                .unwrap_or_default();
            let stale = match (*rows, version.is_some(), vi) {
                (0, true, false) => " (skipped: stale)",
                (0, true, true) => " (bỏ qua: bản cũ)",
                _ => "",
            };
            format!("{a} {} status={status}{v} → UPDATE {rows}{stale}", if vi { "ghi" } else { "wrote" })
        }
        EventKind::Inserted { order, status, version, .. } => {
            let status = if many { format!("{status} (#{order})") } else { status.clone() };
            format!("{a} {} status={status} version={version} → INSERT 0 1", if vi { "ghi" } else { "wrote" })
        }
        EventKind::WriteFailed { order, status, error, .. } => {
            let status = if many { format!("{status} (#{order})") } else { status.clone() };
            if vi {
                format!("{a} INSERT status={status} → LỖI: {error} (thay đổi bị mất)")
            } else {
                format!("{a} INSERT status={status} → ERROR: {error} (the change is lost)")
            }
        }
        EventKind::Held { entry_id, job: j, waiting_for } => {
            if vi {
                format!("{a} giữ {} {} chờ v={waiting_for}", id(entry_id), job(j, many))
            } else {
                format!("{a} holds {} {} until v={waiting_for} arrives", id(entry_id), job(j, many))
            }
        }
        EventKind::Dropped { entry_id, job: j, reason } => {
            if vi {
                format!("{a} bỏ {} {}: cũ hơn bản đã áp dụng", id(entry_id), job(j, many))
            } else {
                format!("{a} drops {} {}: {reason}", id(entry_id), job(j, many))
            }
        }
        EventKind::GapTimeout { order, missing_version, held_ms } => {
            let held = if opts.redact { "[ms]".to_string() } else { format!("{held_ms:.0} ms") };
            if vi {
                format!("{a} hết thời gian chờ #{order} v={missing_version} sau {held}: áp dụng phần đang giữ")
            } else {
                format!("{a} gap timeout: #{order} v={missing_version} never came after {held}; applies what it holds")
            }
        }
        EventKind::SqlSent { statement, .. } => format!("{a} {statement}"),
        EventKind::SqlDone { outcome, waited_ms, .. } => {
            let waited = if opts.redact || *waited_ms < 5.0 {
                String::new()
            } else if vi {
                format!(" sau khi chờ {waited_ms:.0} ms")
            } else {
                format!(" after waiting {waited_ms:.0} ms")
            };
            format!("{a} → {outcome}{waited}")
        }
        EventKind::OutboxRound { round, published, failed, held_back } => {
            let rows = |v: &Vec<i64>| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    v.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
                }
            };
            let (r, p, f, h) = if vi {
                ("vòng", "publish row", "lỗi row", "giữ lại row")
            } else {
                ("round", "published rows", "failed rows", "held back rows")
            };
            let mut line = format!("{a} {r} {round}: {p} {} · {f} {}", rows(published), rows(failed));
            if !held_back.is_empty() {
                line.push_str(&format!(" · {h} {}", rows(held_back)));
            }
            line
        }
        EventKind::LagWindow { how } => {
            if vi {
                format!("{a}: replica ngừng nhận luồng replication ({how}); primary vẫn nhận ghi và ack")
            } else {
                format!("{a}: the replica stops receiving the replication stream ({how}); the primary still takes writes and acks")
            }
        }
        EventKind::ServerKilled { server, signal } => {
            if vi {
                format!("{a}: {signal} → {server} chết")
            } else {
                format!("{a}: {signal} → the {server} dies")
            }
        }
        EventKind::ReplicaPromoted { behind_bytes } => {
            let b = if opts.redact { "[n]".to_string() } else { behind_bytes.to_string() };
            if vi {
                format!("{a}: REPLICAOF NO ONE → replica lên làm primary, thiếu {b} byte luồng replication")
            } else {
                format!("{a}: REPLICAOF NO ONE → the replica is the primary now, {b} bytes of replication stream short")
            }
        }
        EventKind::Crashed { planned, detail } => match (planned, vi) {
            (true, false) => format!("{a} CRASHED (injected: {detail})"),
            (true, true) => format!("{a} CRASH (chủ động: {detail})"),
            (false, false) => format!("{a} DIED unexpectedly: {detail}"),
            (false, true) => format!("{a} chết bất ngờ: {detail}"),
        },
    })
}
