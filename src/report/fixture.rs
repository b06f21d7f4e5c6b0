//! Hand-written reports for the renderers' unit tests: small, and each shows one race.

use crate::checker::{Expectation, Outcome, RunVerdict, Verdict};
use crate::handler::order::events::HandlerEvent;
use crate::labs::order_stream::StreamObserved;
use crate::labs::{Observed, RunRecord};
use crate::orders::OrderRow;
use crate::report::{Environment, LabInfo, LabReport, VariantReport};
use crate::streams::StreamEntry;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, Event, EventKind, Job};

pub(crate) fn job(t: &str, v: i64) -> Job {
    Job::new(42, t, v)
}

pub(crate) fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
    Event { t_us: t_ms * 1000, actor, kind }
}

/// The baseline race with a short lock: C1's lock expires, C2 writes paid, C1 overwrites it.
pub(crate) fn lock_race(verdict: Verdict) -> LabReport {
    let procedure = crate::scenario::setup_from_toml(
        r#"consumers = 2
strategy = { kind = "lock", ttl_ms = 1000, retry_ms = 20 }
cost_ms = { created = 800, paid = 50 }
events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#,
    )
    .unwrap();
    let (c1, c2, p) = (Actor::Consumer(1), Actor::Consumer(2), Actor::Producer);
    let lock = |tries| {
        HandlerEvent::LockAcquired { key: "lock:order:42".into(), tries, ttl_ms: 1000, px_ms: 1000, round_trip_us: 100 }
            .event()
    };
    let release =
        |released| HandlerEvent::LockReleased { key: "lock:order:42".into(), method: "Lua".into(), released }.event();
    let wrote = |id: &str, status: &str| EventKind::Wrote {
        entry_id: id.into(),
        order: 42,
        status: status.into(),
        version: None,
        rows: 1,
    };
    let events = vec![
        ev(-3, c1, EventKind::Ready),
        ev(-2, c2, EventKind::Ready),
        ev(0, p, EventKind::Published { entry_id: "1-0".into(), job: job("created", 1), attempt: 1 }),
        ev(0, p, EventKind::Published { entry_id: "1-1".into(), job: job("paid", 2), attempt: 1 }),
        ev(0, c1, EventKind::Received { entry_id: "1-0".into(), job: job("created", 1), deliveries: None }),
        ev(0, c2, EventKind::Received { entry_id: "1-1".into(), job: job("paid", 2), deliveries: None }),
        ev(0, c1, lock(1)),
        ev(0, c1, EventKind::WorkStarted { entry_id: "1-0".into(), ms: 800.0 }),
        ev(502, c2, lock(25)),
        ev(502, c2, EventKind::WorkStarted { entry_id: "1-1".into(), ms: 50.0 }),
        ev(552, c2, wrote("1-1", "paid")),
        ev(552, c2, release(1)),
        ev(552, c2, EventKind::Acked { entry_id: "1-1".into() }),
        ev(800, c1, wrote("1-0", "created")),
        ev(800, c1, release(0)),
        ev(800, c1, EventKind::Acked { entry_id: "1-0".into() }),
    ];
    let observed = Observed::Stream(StreamObserved {
        stream: vec![
            StreamEntry { shard: 0, entry_id: "1-0".into(), job: job("created", 1) },
            StreamEntry { shard: 0, entry_id: "1-1".into(), job: job("paid", 2) },
        ],
        final_rows: vec![OrderRow { order: 42, status: "created".into(), version: 1 }],
        entry_bytes: None,
        pending_after_run: None,
        documents: None,
        waiting_order: vec![],
    });
    let run =
        RunRecord { run: 1, events, timed_out: false, observed, verdict: RunVerdict { verdict, reasons: vec![] } };
    LabReport {
        schema_version: crate::SCHEMA_VERSION,
        environment: Environment {
            ordlab_version: "0.1.0".into(),
            git_commit: "abc".into(),
            backend: "local".into(),
            redis_version: "7".into(),
            redis_server: String::new(),
            postgres_version: "15".into(),
            lock_release: "Lua".into(),
            command_line: String::new(),
            date: "2026-01-01T00:00:00Z".into(),
            seed: 1,
            // TTL 1000 ms at half speed: the lock lasts 500 ms on the run's clock.
            time_scale: 0.5,
        },
        lab: LabInfo {
            id: "lock".into(),
            title: "Lock".into(),
            source: "new".into(),
            description: None,
            question: None,
            family: None,
        },
        variants: vec![VariantReport {
            id: "s4c".into(),
            title: "S4c: <short> TTL & \"quotes\"".into(),
            procedure,
            runs: 1,
            wrong: u32::from(verdict == Verdict::Wrong),
            unknown: 0,
            expected: Expectation::All,
            dropped: 0,
            expected_dropped: Expectation::None,
            outcome: Outcome::Matched,
            planned_runs: 1,
            scheduler_race: false,
            timer_race: false,
            seed: None,
            skipped: None,
            run_records: vec![run],
            drawn_events_before_cap: None,
        }],
        from_all_runs: None,
    }
}

/// A minimal XML well-formedness check: balanced tags, quoted attributes, known entities.
pub(crate) fn assert_well_formed(xml: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    let check_text = |text: &str| {
        let mut t = text;
        while let Some(i) = t.find('&') {
            let end = t[i..].find(';').unwrap_or_else(|| panic!("bare & in {t:?}"));
            let entity = &t[i + 1..i + end];
            assert!(
                matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos") || entity.starts_with('#'),
                "unknown entity &{entity};"
            );
            t = &t[i + end..];
        }
        assert!(!text.contains('>') || !text.contains('<'), "stray angle bracket in {text:?}");
    };
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open]);
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched </{name}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        assert!(!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-'), "bad name {name:?}");
        let mut seen = Vec::new();
        loop {
            attrs = attrs.trim_start();
            if attrs.is_empty() {
                break;
            }
            let (key, after) = attrs.split_once('=').unwrap_or_else(|| panic!("attribute without value: {attrs:?}"));
            assert!(after.starts_with('"'), "unquoted attribute {key}");
            let end = after[1..].find('"').expect("unterminated attribute") + 1;
            let value = &after[1..end];
            assert!(!value.contains('<'), "< in attribute {key}");
            check_text(value);
            assert!(!seen.contains(&key), "duplicate attribute {key} in <{name}>");
            seen.push(key);
            attrs = &after[end + 1..];
        }
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    check_text(rest);
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
}
