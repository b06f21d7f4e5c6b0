use super::layout::{place_labels, tick_step};
use super::model::{Glyph, Mark};
use super::*;
use crate::checker::{Expectation, Outcome, RunVerdict, Verdict};
use crate::labs::stream::StreamObserved;
use crate::labs::{Observed, RunRecord};
use crate::orders::OrderRow;
use crate::report::{Environment, LabInfo, VariantReport};
use crate::streams::StreamEntry;
use crate::timeline::{Actor, Event, EventKind, Job};

fn job(t: &str, v: i64) -> Job {
    Job::new(42, t, v)
}

fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
    Event { t_us: t_ms * 1000, actor, kind }
}

/// The baseline race with a short lock: C1's lock expires, C2 writes paid, C1 overwrites it.
fn report(verdict: Verdict) -> LabReport {
    let procedure = crate::scenario::setup_from_toml(
        r#"consumers = 2
strategy = { kind = "lock", ttl_ms = 1000, retry_ms = 20 }
cost_ms = { created = 800, paid = 50 }
events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#,
    )
    .unwrap();
    let (c1, c2, p) = (Actor::Consumer(1), Actor::Consumer(2), Actor::Producer);
    let lock = |tries| EventKind::LockAcquired { key: "lock:order:42".into(), tries, ttl_ms: 1000 };
    let release = |released| EventKind::LockReleased { key: "lock:order:42".into(), method: "Lua".into(), released };
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
            outcome: Outcome::Matched,
            scheduler_race: false,
            seed: None,
            skipped: None,
            run_records: vec![run],
        }],
    }
}

/// A minimal XML well-formedness check: balanced tags, quoted attributes, known entities.
fn assert_well_formed(xml: &str) {
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

fn attr(tag: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    tag[start..].split('"').next().unwrap().parse().unwrap()
}

#[test]
fn one_lane_per_actor_in_lane_order() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    let lanes: Vec<&str> =
        svg.split("<g class=\"lane\" data-actor=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    assert_eq!(lanes, ["producer", "C1", "C2"]);
}

#[test]
fn work_bars_are_proportional_to_their_duration() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    let bars: Vec<&str> = svg.lines().filter(|l| l.starts_with("<rect class=\"work\"")).collect();
    assert_eq!(bars.len(), 2, "one bar per work_started");
    let (long, short) = (attr(bars[0], "width"), attr(bars[1], "width"));
    assert!((long / short - 16.0).abs() < 0.01, "800 ms vs 50 ms: {long} / {short}");
    assert!(attr(bars[1], "x") > attr(bars[0], "x"));
}

#[test]
fn an_expired_lock_and_an_overwrite_are_marked() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert!(svg.contains("lock expired (TTL 500 ms)"), "TTL scaled by the time scale");
    assert!(svg.contains("released → 0: expired, not ours"));
    assert!(svg.contains("class=\"lock-expired\""));
    assert!(svg.contains("wrote created: overwrote a newer state"));
    assert!(svg.contains(">wrote paid<"));
    assert!(svg.contains("took lock after 25 tries"));
}

#[test]
fn the_verdict_badge_follows_the_run() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert!(svg.contains(r#"class="badge wrong""#) && svg.contains("✕ WRONG"));
    assert!(svg.contains("final: #42 = created (should be paid)"));
    let vi = render(&r, &r.variants[0], 1, Lang::Vi);
    assert!(vi.contains("✕ SAI") && vi.contains("cuối: #42") && vi.contains("nhận created v1"));
    let r = report(Verdict::Right);
    assert!(render(&r, &r.variants[0], 1, Lang::En).contains("✓ RIGHT"));
    let r = report(Verdict::Unknown);
    assert!(render(&r, &r.variants[0], 1, Lang::Vi).contains(r#"class="badge unknown""#));
}

#[test]
fn output_is_well_formed_and_escaped() {
    let r = report(Verdict::Wrong);
    for lang in [Lang::En, Lang::Vi] {
        let svg = render(&r, &r.variants[0], 1, lang);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(!svg.contains("<script") && !svg.contains("href"));
        assert!(svg.contains("&lt;short&gt; TTL &amp; &quot;quotes&quot;"));
        assert_well_formed(&svg);
    }
    let missing = render(&r, &r.variants[0], 9, Lang::En);
    assert_well_formed(&missing);
    assert!(missing.contains("run 9: not in this report"));
}

#[test]
fn labels_at_the_same_time_do_not_overlap() {
    let marks: Vec<Mark> =
        (0..4).map(|i| Mark { t: 100.0, glyph: Glyph::Received, label: Some(format!("label number {i}")) }).collect();
    let placed = place_labels(&marks, &|t| t);
    let mut slots: Vec<(bool, usize)> = placed.iter().map(|p| (p.above, p.row)).collect();
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), 4, "each label in its own row");
}

#[test]
fn ticks_are_round_numbers() {
    assert_eq!(tick_step(880.0), 100.0);
    assert_eq!(tick_step(1850.0), 200.0);
    assert_eq!(tick_step(2300.0), 250.0);
    assert_eq!(tick_step(45.0), 5.0);
}

#[test]
fn sql_and_outbox_events_get_labelled_marks() {
    let mut r = report(Verdict::Right);
    let run = &mut r.variants[0].run_records[0];
    run.events = vec![
        ev(0, Actor::Session('A'), EventKind::SqlSent { case: 1, order: 42, statement: "BEGIN".into() }),
        ev(
            120,
            Actor::Session('B'),
            EventKind::SqlDone { case: 1, order: 42, outcome: "UPDATE 1".into(), waited_ms: 110.0 },
        ),
        ev(
            200,
            Actor::Dispatcher(1),
            EventKind::OutboxRound { round: 1, published: vec![42], failed: vec![43], held_back: vec![] },
        ),
    ];
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert_well_formed(&svg);
    for needle in ["BEGIN", "→ UPDATE 1 after waiting 110 ms", "round 1: published #42; failed #43", "class=\"wait\""]
    {
        assert!(svg.contains(needle), "{needle}");
    }
    let lanes = svg.matches("<g class=\"lane\"").count();
    assert_eq!(lanes, 3);
}
