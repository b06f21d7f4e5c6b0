use super::*;
use crate::handler::order::{lock::LockSpec, Strategy};
use crate::labs::order_stream::StreamSpec;

const MINIMAL: &str = r#"
id = "demo"
title = "Demo"
source = "new"
runs = 3
[setup]
consumers = 2
cost_ms = { created = 800, paid = 50 }
events = [
  { order = 42, type = "created", version = 1 },
  { order = 42, type = "paid", version = 2 },
]
[expect]
wrong = "all"
"#;

fn stream(p: &Procedure) -> &StreamSpec {
    match p {
        Procedure::Stream(s) => s,
        other => panic!("not a stream lab: {}", other.kind()),
    }
}

#[test]
fn a_file_without_variants_is_one_variant_named_after_the_lab() {
    let s = Scenario::parse(MINIMAL, "demo.toml").unwrap();
    assert_eq!(s.variants.len(), 1);
    let v = &s.variants[0];
    let spec = stream(&v.procedure);
    assert_eq!((v.id.as_str(), v.runs, spec.consumers), ("demo", 3, 2));
    assert_eq!(spec.strategy, Strategy::default());
    assert_eq!(v.expect, Expectation::All);
    assert_eq!(spec.initial(), vec![crate::orders::OrderRow { order: 42, status: "new".into(), version: 0 }]);
    assert_eq!(spec.cost_ms["created"], 800.0);
}

#[test]
fn variants_override_only_what_they_name() {
    let text = format!(
        "{MINIMAL}\n[[variant]]\nid = \"a\"\n\n[[variant]]\nid = \"b\"\nruns = 5\nsetup = {{ consumers = 1, strategy = {{ kind = \"lock\", ttl_ms = 500 }}, cost_ms = {{ paid = 60 }} }}\nexpect = {{ wrong = 0 }}\n"
    );
    let s = Scenario::parse(&text, "demo.toml").unwrap();
    let b = s.variant("b").unwrap();
    let spec = stream(&b.procedure);
    assert_eq!((b.runs, spec.consumers), (5, 1));
    assert_eq!(
        spec.strategy,
        Strategy::Lock(LockSpec { ttl_ms: 500, retry_ms: 20, prework_max_ms: 0, release: Default::default() })
    );
    assert_eq!((spec.cost_ms["paid"], spec.cost_ms["created"]), (60.0, 800.0));
    assert_eq!(b.expect, Expectation::Exactly(0));
    let a = s.variant("a").unwrap();
    assert_eq!((a.runs, stream(&a.procedure).consumers, &a.expect), (3, 2, &Expectation::All));
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let bad = MINIMAL.replace("consumers = 2", "consumers = = 2");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:7:13: "), "{err}");
}

#[test]
fn unknown_set_up_keys_are_named_where_they_are() {
    let bad = MINIMAL.replace("consumers = 2", "consumer = 2");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:7:1: setup: unknown field `consumer`"), "{err}");
    // In a variant's inline set-up: the variant's line.
    let text = format!("{MINIMAL}\n[[variant]]\nid = \"a\"\nsetup = {{ shard = 2 }}\n");
    let err = Scenario::parse(&text, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:18:11: setup: unknown field `shard`"), "{err}");
}

#[test]
fn a_wrong_value_is_located_and_named() {
    let bad = MINIMAL.replace("consumers = 2", "consumers = \"two\"");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:7:13: setup: invalid type: string \"two\""), "{err}");
    let bad = MINIMAL.replace("consumers = 2", "consumers = 2\nstrategy = { kind = \"lock\", ttl = 5 }");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:8:12: setup: strategy lock: unknown field `ttl`"), "{err}");
    let bad = MINIMAL.replace("consumers = 2", "kind = \"streem\"");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.contains("unknown kind \"streem\": use stream | sql-race"), "{err}");
}

#[test]
fn semantic_errors_say_the_fix() {
    let bad = MINIMAL.replace("consumers = 2", "consumers = 0");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert_eq!(err, "x.toml: variant demo: setup.consumers = 0: use at least 1");
    let bad = MINIMAL.replace("wrong = \"all\"", "wrong = \"most\"");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.contains("use \"all\""), "{err}");
    let bad = MINIMAL.replace("consumers = 2", "consumers = 2\nfaults = [{ on = \"C3\", event = \"received\" }]");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.contains("setup.faults: on = \"C3\": use C1 to C2"), "{err}");
}

#[test]
fn the_seed_figure_belongs_to_its_variant() {
    let text = MINIMAL.replace("runs = 3", "runs = 3\nseed = { figure = \"wrong 10/10\", agrees = \"all-wrong\" }");
    let s = Scenario::parse(&text, "x.toml").unwrap();
    assert_eq!(s.variants[0].seed, Some(SeedFigure { figure: "wrong 10/10".into(), agrees: SeedCheck::AllWrong }));
    let with_variants = format!("{text}\n[[variant]]\nid = \"a\"\n");
    let err = Scenario::parse(&with_variants, "x.toml").unwrap_err().to_string();
    assert!(err.contains("gives each variant its own seed"), "{err}");
}

#[test]
fn a_negative_duration_is_refused_where_it_is() {
    let at = MINIMAL.replace("type = \"paid\", version = 2 }", "type = \"paid\", version = 2, at_ms = -5 }");
    let err = Scenario::parse(&at, "x.toml").unwrap_err().to_string();
    assert_eq!(err, "x.toml:11:53: setup: at_ms = -5: a duration cannot be negative: use 0 or more milliseconds");
    let cost = MINIMAL.replace("paid = 50", "paid = -0.5");
    let err = Scenario::parse(&cost, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:8:") && err.contains("cost_ms = -0.5: a duration cannot be negative"), "{err}");
    // In a variant's set-up, laid over the file's: the variant's line.
    let text =
        format!("{MINIMAL}\n[[variant]]\nid = \"a\"\nsetup = {{ strategy = {{ kind = \"lock\", retry_ms = -20 }} }}\n");
    let err = Scenario::parse(&text, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:18:") && err.contains("retry_ms = -20"), "{err}");
    assert!(Scenario::parse(&MINIMAL.replace("paid = 50", "paid = 0"), "x.toml").is_ok(), "zero is a duration");
}

#[test]
fn a_consumer_s_pause_is_refused_by_the_explorer_in_one_line_and_counts_for_the_lock_s_expiry() {
    let with = |faults: &str| {
        let text = MINIMAL.replace("consumers = 2\n", &format!("consumers = 2\nstrategy = {{ kind = \"lock\", ttl_ms = 500 }}\ncost_ms = {{ created = 50, paid = 50 }}\n{faults}\n"));
        let text = text.replacen("cost_ms = { created = 800, paid = 50 }\n", "", 1);
        stream(&Scenario::parse(&text, "demo.toml").unwrap().variants[0].procedure).clone()
    };
    let plain = with("");
    assert!(crate::labs::order_stream::explorable(&plain).is_ok() && !plain.lock_may_expire(500));
    let paused = with(r#"faults = [{ event = "lock_acquired", job = "created", action = { pause_ms = 1000 } }]"#);
    assert!(crate::labs::order_stream::explorable(&paused).unwrap_err().contains("pause"));
    assert!(paused.lock_may_expire(500), "50 ms of work and a 1000 ms pause outlive a 500 ms TTL");
}

#[test]
fn a_plain_del_release_reads_and_is_refused_for_a_worker_from_a_command_line() {
    let own = MINIMAL.replace("consumers = 2\n", "consumers = 2\nstrategy = { kind = \"lock\", release = \"del\" }\n");
    let spec = stream(&Scenario::parse(&own, "demo.toml").unwrap().variants[0].procedure).clone();
    assert_eq!(spec.strategy.spec::<LockSpec>().map(|l| l.release), Some(crate::handler::order::lock::Release::Del));
    let worker = own.replace("[expect]", "worker = { command = [\"python3\", \"w.py\"] }\n[expect]");
    let err = Scenario::parse(&worker, "demo.toml").unwrap_err().to_string();
    assert!(err.contains("release = \"del\""), "{err}");
}

/// `[explore]`: the set-up `ordlab explore` runs, laid over each variant's; a mistake in it
/// is located in it.
#[test]
fn an_explore_set_up_is_laid_over_each_variant_s() {
    let text = format!(
        "{MINIMAL}\n[[variant]]\nid = \"a\"\n\n[[variant]]\nid = \"b\"\nsetup = {{ consumers = 3 }}\n\n[explore]\nsetup = {{ events = [{{ order = 42, type = \"created\", version = 1 }}] }}\nwhy = \"one event\"\n"
    );
    let s = Scenario::parse(&text, "demo.toml").unwrap();
    let b = s.variant("b").unwrap();
    assert_eq!(stream(&b.procedure).events.len(), 2, "sampled on its own set-up");
    let explored = b.as_explored();
    let spec = stream(&explored.procedure);
    assert_eq!((spec.events.len(), spec.consumers), (1, 3), "the explore set-up over the variant's");
    assert_eq!(b.explore_setup.as_ref().unwrap().why.get(crate::lang::Lang::En), "one event");
    // A variant's own `explore` is laid over its set-up instead of the file's.
    let own = text.replace(
        "setup = { consumers = 3 }\n",
        "setup = { consumers = 3 }\nexplore = { setup = { consumers = 1 }, why = \"one consumer\" }\n",
    );
    let s = Scenario::parse(&own, "demo.toml").unwrap();
    let b = s.variant("b").unwrap();
    let explored = b.as_explored();
    let spec = stream(&explored.procedure);
    assert_eq!((spec.events.len(), spec.consumers), (2, 1));
    assert_eq!(b.explore_setup.as_ref().unwrap().why.get(crate::lang::Lang::En), "one consumer");
    assert_eq!(stream(&s.variant("a").unwrap().as_explored().procedure).events.len(), 1, "the file's");
    let plain = Scenario::parse(MINIMAL, "demo.toml").unwrap();
    assert!(plain.variants[0].explore_setup.is_none());
    assert_eq!(stream(&plain.variants[0].as_explored().procedure).events.len(), 2);
    let bad = text.replace("setup = { events", "setup = { consumer = 1, events");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:24:11: setup: unknown field `consumer`"), "{err}");
    let bad = text.replace("why = \"one event\"", "");
    let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
    assert!(err.starts_with("x.toml:23:1: "), "at [explore]: {err}");
}
