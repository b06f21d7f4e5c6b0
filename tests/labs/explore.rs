//! `ordlab explore` on real servers: class counts that can be derived by hand, a reduction
//! that keeps disjoint keys apart, every wrong schedule replayed to the same verdict, a worker
//! from a command line stepped at the wire, PCT on a lab too large to enumerate.
//!
//! Nothing here depends on timing: the explorer decides every order, and a replay that went
//! differently is an error (a divergence), never a different verdict by chance.

use super::support;
use ordlab::checker::Verdict;
use ordlab::exploration::{explore, Exploration, ExploreOptions, Schedule, Search};
use ordlab::service::Services;

async fn explored(lab: &str, variant: Option<&str>, search: Search) -> Exploration {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, lab, variant, search).await;
    services.stop().await;
    x
}

async fn explore_on(services: &Services, lab: &str, variant: Option<&str>, search: Search) -> Exploration {
    let lab = ordlab::catalog::find(lab).expect("lab");
    let v = match variant {
        Some(id) => lab.variant(id).expect("variant"),
        None => &lab.variants[0],
    };
    let opts = ExploreOptions { search, ..Default::default() };
    explore(services, support::ordlab_exe(), &lab, v, &opts).await.expect("exploration runs").0
}

/// The first `runs` runs of `lab`'s `variant`'s exhaustive search.
async fn first_runs(services: &Services, lab: &str, variant: &str, runs: usize) -> Exploration {
    let lab = ordlab::catalog::find(lab).expect("lab");
    let v = lab.variant(variant).expect("variant");
    let opts = ExploreOptions { search: exhaustive(), max_schedules: runs, ..Default::default() };
    explore(services, support::ordlab_exe(), &lab, v, &opts).await.expect("explores").0
}

fn exhaustive() -> Search {
    Search::Exhaustive { preemptions: None }
}

/// (classes, wrong, unknown)
fn counts(x: &Exploration) -> (usize, usize, usize) {
    (x.classes.len(), x.count(Verdict::Wrong), x.count(Verdict::Unknown))
}

/// s1: the producer (XADD created, XADD paid) and one consumer (read, update, ack; read, …;
/// read). Only reads and appends are ordered, and a read that waits must be woken by the next
/// append: X1 X2 R R R, X1 R X2 R R, X1 R R·X2 R, R·X1 X2 R R, R·X1 R·X2 R (R· waits) — 5.
#[tokio::test]
async fn s1_has_the_five_classes_counted_by_hand_and_none_is_wrong() {
    let x = explored("s1", None, exhaustive()).await;
    assert_eq!(counts(&x), (5, 0, 0), "{}", ordlab::exploration::render(&x, ordlab::lang::Lang::En));
    assert!(!x.hit_max_schedules);
}

/// Two halves that share no key and no row commute: 2 classes each, 4 in all. A reduction that
/// ordered steps on different streams or rows would count many more.
#[tokio::test]
async fn two_shards_that_share_nothing_have_four_classes() {
    let x = explored("tests/scenarios/explore-two-shards.toml", None, exhaustive()).await;
    assert_eq!(counts(&x), (4, 0, 0), "{}", ordlab::exploration::render(&x, ordlab::lang::Lang::En));
}

/// baseline: 44 classes, 12 wrong (the consumer of `paid` writes first). Every wrong schedule,
/// replayed 10 times on the same servers, ends wrong every time; two right ones end right.
#[tokio::test]
async fn baseline_s_wrong_schedules_replay_wrong_ten_times_out_of_ten() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "baseline", None, exhaustive()).await;
    assert_eq!(counts(&x), (44, 12, 0), "{}", ordlab::exploration::render(&x, ordlab::lang::Lang::En));
    for c in x.wrong() {
        assert!(c.reasons.iter().any(|r| r.contains("expected paid")), "{:?}", c.reasons);
    }
    let right: Vec<_> = x.classes.iter().filter(|c| c.verdict == Verdict::Right).take(2).collect();
    for c in x.wrong().chain(right) {
        let schedule = Schedule::parse(&c.schedule).unwrap();
        for _ in 0..10 {
            let again = explore_on(&services, "baseline", None, Search::Replay(schedule.clone())).await;
            assert_eq!(again.classes.len(), 1);
            assert_eq!((again.classes[0].verdict, &again.classes[0].key), (c.verdict, &c.key), "{}", c.schedule);
        }
    }
    services.stop().await;
}

/// Explored, ordlab's own role processes are kept from one schedule to the next (parked
/// between runs, never started again): baseline's two consumers are started once for all its
/// runs, and the exploration finds exactly what one that starts every run's processes afresh
/// finds (the same runs, classes, schedules, verdicts and steps).
#[tokio::test]
async fn role_processes_are_reused_across_schedules_and_find_the_same_classes() {
    let (reused, fresh) = &explored_reused_and_afresh("baseline").await;
    assert_eq!(reused.role_processes_started, 2, "C1 and C2, each started once for {} runs", reused.runs);
    assert_eq!(fresh.role_processes_started, 2 * fresh.runs, "without reuse, two per run");
    let found = |x: &Exploration| {
        let classes: Vec<_> = x
            .classes
            .iter()
            .map(|c| (c.schedule.clone(), c.key.clone(), c.verdict, c.reasons.clone(), c.steps.clone()))
            .collect();
        (x.runs, x.cut_as_repeats, x.cut_at_bound, classes)
    };
    assert_eq!(found(reused), found(fresh));
    assert_eq!(counts(reused), (44, 12, 0));
}

/// CAS by business version (S5): the same 44 orders of steps as baseline, none wrong.
#[tokio::test]
async fn cas_is_right_in_every_class() {
    let x = explored("cas", Some("s5"), exhaustive()).await;
    assert_eq!(counts(&x), (44, 0, 0));
}

/// S4a, a lock per order: the consumer that retries a taken lock is parked until the holder
/// releases it (no endless schedules); wrong exactly where `paid`'s holder locks first.
#[tokio::test]
async fn the_lock_lab_is_explored_with_its_retries_parked() {
    let x = explored("lock", Some("s4a"), exhaustive()).await;
    assert_eq!(counts(&x), (68, 24, 0), "{}", ordlab::exploration::render(&x, ordlab::lang::Lang::En));
    let retried =
        x.classes.iter().filter(|c| c.steps.iter().any(|s| s.contains(" NX PX ") && s.ends_with("→ (nil)"))).count();
    assert!(retried > 0, "some class has a refused SET NX, retried once its holder released");
}

/// redelivery, plain: the consumer that gets `created` is killed right after its read (a step
/// of its own program, then it is gone); the entry goes idle for the claimer only as a timer
/// step (N), never by the clock. 48 classes, 24 wrong: the redelivered `created` written after
/// `paid`. The shortest wrong schedule replays to the same class and verdict 10 times.
#[tokio::test]
async fn redelivery_is_explored_with_the_claimer_s_min_idle_as_a_step() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "redelivery", Some("plain"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (48, 24, 0), "{text}");
    assert!(!x.hit_max_schedules, "{text}");
    for c in x.wrong() {
        let idle = c.steps.iter().position(|s| s.starts_with("N XCLAIM") && s.contains(" IDLE "));
        let claimed = c.steps.iter().position(|s| s.starts_with("R XAUTOCLAIM") && s.contains("1 entry e1"));
        assert!(idle.is_some() && claimed > idle, "the claim follows the timer step: {:?}", c.steps);
    }
    let c = x.shortest_wrong().expect("a wrong class");
    let schedule = Schedule::parse(&c.schedule).unwrap();
    for _ in 0..10 {
        let again = explore_on(&services, "redelivery", Some("plain"), Search::Replay(schedule.clone())).await;
        assert_eq!((again.classes[0].verdict, &again.classes[0].key), (c.verdict, &c.key), "{}", c.schedule);
    }
    services.stop().await;
}

/// A reorder buffer's gap timeout is a step (`N CLIENT UNBLOCK C1 TIMEOUT`): the consumer holds
/// paid in a read that blocks for the timeout, and the step ends that wait. 9 classes, none
/// wrong; created is dropped exactly in the classes where the timeout runs out (4), and a
/// dropped schedule replays dropped 5 times out of 5. With the timeout left to the clock the
/// explorer never ends the wait: no class drops anything.
#[tokio::test]
async fn a_reorder_buffer_s_gap_timeout_is_a_step() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "reorder-buffer", Some("gap-timeout"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (9, 0, 0), "{text}");
    let dropped = |c: &ordlab::exploration::ExploredClass| c.fates.as_ref().is_some_and(|f| f.dropped > 0);
    let timed_out =
        |c: &ordlab::exploration::ExploredClass| c.steps.iter().any(|s| s.starts_with("N CLIENT UNBLOCK C1 TIMEOUT"));
    assert_eq!(x.classes.iter().filter(|c| dropped(c)).count(), 4, "{text}");
    for c in &x.classes {
        assert_eq!(dropped(c), timed_out(c), "dropped exactly where the timeout ran out: {:?}", c.steps);
    }
    assert!(text.contains("events: lost in 0, dropped in 4, applied twice in 0 of 9 classes"), "{text}");
    let c = x.classes.iter().find(|c| dropped(c)).unwrap();
    let schedule = Schedule::parse(&c.schedule).unwrap();
    for _ in 0..5 {
        let again =
            explore_on(&services, "reorder-buffer", Some("gap-timeout"), Search::Replay(schedule.clone())).await;
        assert_eq!(&again.classes[0].key, &c.key, "{}", c.schedule);
        assert!(dropped(&again.classes[0]), "{}: {:?}", c.schedule, again.classes[0].steps);
    }
    services.stop().await;
}

/// S4c's TTL (500 ms) is shorter than the created job (800 ms): its expiry is a step. Replayed:
/// C1 locks for `created`, the TTL runs out (N), C2 locks and writes `paid`, C1 writes
/// `created` over it and its release finds the lock gone — the seed's S4c story, counted as an
/// overlap after the TTL ran out, not as a broken lock.
#[test]
fn s4c_s_lock_expiry_is_a_step_a_schedule_can_place() {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .args(["run", "lock", "--variant", "s4c", "--backend", "local", "--schedule", "Px2.C1x2.N.C2x6.C1x4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The report starts with the schedule it replays.
    assert!(stdout.starts_with("schedule Px2.C1x2.N.C2x6.C1x4 ("), "{stdout}");
    assert!(stdout.contains("runner [redis 0] PEXPIRE lock:order:42 0 → 1"), "{stdout}");
    assert!(stdout.contains("→ 0 (the lock had expired"), "{stdout}");
    assert!(stdout.contains("(taken / overlapped after the TTL ran out / overlapped, lock broken): 2/1/0"), "{stdout}");
    assert!(stdout.contains("order 42 ended created (v=1), expected paid"), "{stdout}");
}

const OUTBOX_ONE: &str = "tests/scenarios/explore-outbox-one.toml";

fn one_preemption() -> Search {
    Search::Exhaustive { preemptions: Some(1) }
}

/// Two outbox dispatchers and one row, no exclusion, at most one preemption: every statement
/// of both dispatchers (poll, re-check, XADD, mark) is a step. 12 classes, 6 wrong: where
/// each re-checks the row before the other marks it, both publish it and it is applied
/// twice. The shortest wrong schedule replays to the same class and verdict 5 times.
#[tokio::test]
async fn two_outbox_dispatchers_without_exclusion_send_the_same_row_twice() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, OUTBOX_ONE, Some("no-exclusion"), one_preemption()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (12, 6, 0), "{text}");
    for c in x.wrong() {
        assert!(c.reasons.iter().any(|r| r.contains("applied 2 times")), "{:?}", c.reasons);
        assert_eq!(c.steps.iter().filter(|s| s.starts_with('D') && s.contains(" XADD ")).count(), 2, "{:?}", c.steps);
    }
    let c = x.shortest_wrong().expect("a wrong class");
    let schedule = Schedule::parse(&c.schedule).unwrap();
    for _ in 0..5 {
        let again = explore_on(&services, OUTBOX_ONE, Some("no-exclusion"), Search::Replay(schedule.clone())).await;
        assert_eq!((again.classes[0].verdict, &again.classes[0].key), (c.verdict, &c.key), "{}", c.schedule);
    }
    services.stop().await;
}

/// The same with `FOR UPDATE SKIP LOCKED` on the key's earliest pending row, every order (no
/// bound): the other dispatcher skips the row while it is held (its empty polls parked), so
/// none of the 260 classes publishes it twice; one run per class.
#[tokio::test]
async fn two_outbox_dispatchers_with_skip_locked_never_send_a_row_twice() {
    let x = explored(OUTBOX_ONE, Some("skip-locked"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!((counts(&x), x.runs), ((260, 0, 0), 260), "{text}");
    let skipped_while_held = |steps: &[String]| {
        let at = |who: &str, what: &str| steps.iter().position(|s| s.starts_with(who) && s.contains(what));
        let held = at("D1", "SKIP LOCKED → SELECT 1");
        let skipped = at("D2", "SKIP LOCKED → SELECT 0");
        let committed = at("D1", "COMMIT");
        held.is_some() && held < skipped && skipped < committed
    };
    assert!(x.classes.iter().any(|c| skipped_while_held(&c.steps)), "D2 skips the row D1 holds: {text}");
}

/// outbox-multi is explored on its file's `[explore]` set-up (2 rows of order 42), not its 7
/// sampled rows, and the report says so; replaying one of its schedules runs the same set-up.
#[tokio::test]
async fn a_lab_with_an_explore_set_up_is_explored_on_it_and_says_so() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let (lab, v) = ("outbox-multi", "advisory-lock");
    let x = first_runs(&services, lab, v, 3).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert!(
        text.contains(
            "on the lab's smaller set-up for explore ([explore] in its file), not the sampled one: 2 rows of order 42"
        ),
        "{text}"
    );
    let rows = |x: &Exploration| {
        x.classes
            .iter()
            .map(|c| serde_json::to_value(&c.record.observed).unwrap()["outbox_rows"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&x), [2, 2, 2], "{text}");
    let schedule = Schedule::parse(&x.classes[1].schedule).unwrap();
    let again = explore_on(&services, lab, Some(v), Search::Replay(schedule)).await;
    services.stop().await;
    assert_eq!((rows(&again), &again.classes[0].key), (vec![serde_json::json!(2)], &x.classes[1].key));
}

/// `lab`'s first variant explored twice: its processes reused (ordlab's own parked, a Python
/// worker forked), then every run's started afresh.
async fn explored_reused_and_afresh(lab: &str) -> (Exploration, Exploration) {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let lab = ordlab::catalog::find(lab).expect("lab");
    let mut explored = Vec::new();
    for reuse_processes in [true, false] {
        let opts = ExploreOptions { search: exhaustive(), reuse_processes, ..Default::default() };
        let x = explore(&services, support::ordlab_exe(), &lab, &lab.variants[0], &opts).await.expect("explores").0;
        explored.push(x);
    }
    services.stop().await;
    let fresh = explored.pop().expect("two");
    (explored.pop().expect("two"), fresh)
}

/// The example Python consumer (redis-py, psycopg 3), stepped at the wire, has s1's 5 classes;
/// each run's worker is forked from one interpreter that imported redis-py and psycopg once
/// (`service::fork_server`), and finds exactly what a `python3` started afresh every run finds
/// (the same runs, classes, schedules, verdicts and steps).
#[tokio::test]
async fn a_python_worker_is_stepped_at_the_wire_like_ordlab_s_own() {
    let missing = super::foreign_workers::missing(&super::foreign_workers::PYTHON);
    if !support::has_runtime("python3 with redis-py and psycopg", missing) {
        return;
    }
    let (forked, fresh) = &explored_reused_and_afresh("tests/scenarios/explore-python-s1.toml").await;
    let text = ordlab::exploration::render(forked, ordlab::lang::Lang::En);
    assert_eq!(counts(forked), (5, 0, 0), "{text}");
    assert!(
        forked.classes[0].steps.iter().any(|s| s.starts_with("C1 UPDATE ordlab.orders")),
        "{:?}",
        forked.classes[0].steps
    );
    assert_eq!((forked.workers_forked, fresh.workers_forked), (forked.runs, 0), "one fork per run, none afresh");
    let found = |x: &Exploration| {
        let classes: Vec<_> =
            x.classes.iter().map(|c| (c.schedule.clone(), c.key.clone(), c.verdict, c.steps.clone())).collect();
        (x.runs, x.cut_as_repeats, classes)
    };
    assert_eq!(found(forked), found(fresh));
}

/// Twenty orders, two consumers: far too many orders of steps to enumerate. PCT (depth 3, a
/// fixed seed, so the same schedules every time) finds a wrong one, and says its bound.
#[tokio::test]
async fn pct_finds_a_wrong_schedule_of_a_lab_too_large_to_enumerate() {
    let x =
        explored("tests/scenarios/explore-twenty-orders.toml", None, Search::Pct { depth: 3, schedules: 30, seed: 1 })
            .await;
    assert!(x.count(Verdict::Wrong) > 0, "{}", ordlab::exploration::render(&x, ordlab::lang::Lang::En));
    assert!(x.pct_bound.is_some_and(|p| p > 0.0 && p < 1e-3), "{:?}", x.pct_bound);
    assert!(ordlab::exploration::render(&x, ordlab::lang::Lang::En).contains("probability ≥"));
}

/// What cannot be explored, and a schedule that does not fit, are one line and exit 2, before
/// any server starts (for the former) or with every server stopped.
#[test]
fn bad_explorations_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["explore", "priority-zset", "--variant", "ties"],
            "cannot be explored: one worker at a time (crash: C2 starts once C1 is dead) on a queue filled before it starts: no two processes race",
        ),
        (
            &["explore", "foreign-priority", "--variant", "python-strict-seed-redis"],
            "cannot be explored: it races a clock of its own (a client's socket timeout)",
        ),
        (
            &["explore", "list-retry", "--variant", "seed-poison-with-reaper"],
            "cannot be explored: setup.jobs[] with a reaper: a refused or poison job comes back at every lease",
        ),
        (
            &["explore", "tests/scenarios/explore-slow-every-delivery.toml"],
            "cannot be explored: job-000001 takes 1500 ms at every delivery, not less than the 500 ms lease",
        ),
        (&["explore", "lock"], "choose one with --variant"),
        (&["run", "baseline", "--schedule", "P.Q1"], "names no process"),
        (&["run", "baseline", "--schedule", "C3", "--backend", "local"], "asks for a step of C3"),
    ];
    for (args, says) in cases {
        let out = support::ordlab(tmp.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.contains("using local servers")).collect();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(lines[0].starts_with("ordlab: ") && lines[0].contains(says), "{args:?}: {stderr}");
    }
    assert!(support::entries(tmp.path()).is_empty(), "left behind: {:?}", support::entries(tmp.path()));
}

/// `ordlab list --explorable`: one line per lab variant, steppable or why not (what
/// `just explore` prints for the variants it leaves out), with no servers started.
#[test]
fn every_variant_says_whether_the_explorer_can_step_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path()).args(["list", "--explorable"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |pair: &str| text.lines().find(|l| l.split('\t').next() == Some(pair)).map(str::to_string);
    assert_eq!(
        line("priority-strict:seed-strict").as_deref(),
        Some("priority-strict:seed-strict\tsteppable"),
        "{text}"
    );
    assert_eq!(line("foreign-priority:python-strict").as_deref(), Some("foreign-priority:python-strict\tsteppable"));
    let refused = line("foreign-priority:python-strict-seed-redis").unwrap_or_default();
    assert!(refused.contains("\tnot steppable: it races a clock of its own"), "{refused}");
    let fanout = line("fanout:order-kept").unwrap_or_default();
    assert!(fanout.contains("\tnot steppable: a fan-out reader's workers"), "{fanout}");
    let zset = line("priority-zset:ties").unwrap_or_default();
    assert!(zset.contains("\tnot steppable: one worker at a time"), "{zset}");
    let flood = line("priority-zset:flood").unwrap_or_default();
    assert!(flood.contains("\tnot steppable: its question is one of time"), "{flood}");
    let labs = ordlab::catalog::all().expect("catalog");
    let variants: usize = labs.iter().map(|l| l.variants.len()).sum();
    assert_eq!(text.lines().count(), variants, "one line per variant");
    assert!(support::entries(tmp.path()).is_empty(), "left behind: {:?}", support::entries(tmp.path()));
}

/// `--out` saves the exploration (gzip JSON) and its text; `ordlab check` re-judges every
/// class with no servers and finds no verdict changed; the lab book shows it.
#[test]
fn an_exploration_is_saved_and_re_judged_without_servers() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = support::ordlab(tmp.path())
        .args(["explore", "s1", "--backend", "local", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let saved = out_dir.join("explore-s1-s1.json.gz");
    let text = std::fs::read_to_string(out_dir.join("explore-s1-s1.txt")).unwrap();
    assert!(text.contains("explored: 0 of 5 classes wrong"), "{text}");
    let check = support::ordlab(tmp.path()).arg("check").arg(&saved).output().unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&check.stderr));
    assert!(stdout.contains("re-judged 5 classes: 0 changed"), "{stdout}");
    let explored = ordlab::report::html::explored::load(tmp.path().join("out").parent().unwrap());
    assert!(explored.is_empty(), "the lab book reads DIR/explore/, not DIR");
    std::fs::create_dir(tmp.path().join("explore")).unwrap();
    std::fs::rename(&saved, tmp.path().join("explore/explore-s1-s1.json.gz")).unwrap();
    let explored = ordlab::report::html::explored::load(tmp.path());
    assert_eq!((explored.len(), explored[0].classes.len()), (1, 5));
}

/// idempotency check-state-race: two workers, one copy of job-7 each (SELECT status, push,
/// UPDATE … 'sent'). 10 classes: the two reads in either order, times the SELECT/UPDATE orders
/// (both SELECTs before both UPDATEs, in either UPDATE order, or one UPDATE before the other's
/// SELECT), or one worker takes both copies. Wrong exactly where both SELECTs come before
/// either UPDATE: 2 × 2 = 4. The shortest wrong schedule replays to the same class and verdict
/// 5 times.
#[tokio::test]
async fn check_state_race_is_wrong_where_both_checks_come_before_either_mark() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "idempotency", Some("check-state-race"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (10, 4, 0), "{text}");
    for c in x.wrong() {
        assert!(c.reasons.iter().any(|r| r.contains("job-7 push (2 copies): applied 2 times")), "{:?}", c.reasons);
        let last_check = c.steps.iter().rposition(|s| s.contains(" SELECT status FROM ordlab.notifications"));
        let first_mark = c.steps.iter().position(|s| s.contains(" UPDATE ordlab.notifications"));
        assert!(last_check < first_mark, "both check before either marks: {:?}", c.steps);
    }
    let c = x.shortest_wrong().expect("a wrong class");
    let schedule = Schedule::parse(&c.schedule).unwrap();
    for _ in 0..5 {
        let again =
            explore_on(&services, "idempotency", Some("check-state-race"), Search::Replay(schedule.clone())).await;
        assert_eq!((again.classes[0].verdict, &again.classes[0].key), (c.verdict, &c.key), "{}", c.schedule);
    }
    services.stop().await;
}

/// The same race with the seed's SET NX claim: 6 classes (the two reads in either order,
/// times which claim comes first, or one worker takes both copies), none wrong: one claim sets
/// the key, the other finds it, in every order.
#[tokio::test]
async fn a_set_nx_claim_is_right_in_every_order_of_the_same_race() {
    let x = explored("tests/scenarios/explore-set-nx-race.toml", None, exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (6, 0, 0), "{text}");
    for c in &x.classes {
        let claims: Vec<&String> = c.steps.iter().filter(|s| s.contains(" SET job:done:job-7 1 NX EX ")).collect();
        let won = claims.iter().filter(|s| s.ends_with("→ OK")).count();
        assert_eq!((claims.len(), won), (2, 1), "one claim sets the key, the other finds it: {:?}", c.steps);
    }
}

/// idempotency incr: a worker SIGKILLed at each of three points, each replaced by the next
/// reader (C2, C3, C4) once the explorer sees it gone; the three entries it left go idle for
/// the claimer only as timer steps (N), once every process waits, and the claimer takes each
/// after its step: 5 classes (the ballot orders of three timers and three claims), every one
/// wrong as sampled (job-2 and job-3 counted twice).
#[tokio::test]
async fn a_killed_job_worker_is_replaced_and_its_entry_claimed_after_a_timer_step() {
    let x = explored("idempotency", Some("incr"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (5, 5, 0), "{text}");
    for c in &x.classes {
        for reader in ["C2", "C3", "C4"] {
            assert!(c.steps.iter().any(|s| s.starts_with(&format!("{reader} XREADGROUP"))), "{reader}: {:?}", c.steps);
        }
        let at = |f: &dyn Fn(&str) -> bool| -> Vec<usize> {
            c.steps.iter().enumerate().filter(|(_, s)| f(s)).map(|(i, _)| i).collect()
        };
        let timers = at(&|s| s.starts_with("N XCLAIM"));
        let claims = at(&|s| s.starts_with("R XAUTOCLAIM") && s.contains(" 1 entry "));
        assert_eq!((timers.len(), claims.len()), (3, 3), "{:?}", c.steps);
        assert!(timers.iter().zip(&claims).all(|(t, c)| t < c), "each claim follows its timer step: {:?}", c.steps);
        let last_read = c.steps.iter().rposition(|s| s.starts_with("C4 XREADGROUP")).unwrap();
        assert!(timers[0] > last_read, "no entry goes idle before every reader waits: {:?}", c.steps);
    }
}

/// list-crash lrem-identical: W1 takes the first copy, the second is pushed and W2 takes it,
/// W1 is killed once W2's LREM + ZREM is answered. By hand, the orders of W1's e-mail and LREM
/// (its take, the push, W2's take can go only one way round; W1's poll takes the second copy
/// if it comes before W2's): W1 done before W2's take, then W1 takes the second copy (1) or W2
/// does (2); W1's LREM after W2's take and before its LREM (3); W1 killed holding its LREM,
/// its e-mail sent (4); W1 killed holding its e-mail (5), the only one wrong: W2's LREM took
/// the shared lease, so nothing puts the copy back. lrem-token: the same 5 orders, the copy
/// put back by the reaper after a timer step, never lost; the one wrong is W1 killed between
/// its e-mail and its LREM, whose copy is then sent again. The wrong schedule replays wrong
/// 10 times out of 10.
#[tokio::test]
async fn lrem_identical_loses_the_killed_worker_s_copy_in_one_order_of_five() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "list-crash", Some("lrem-identical"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (5, 1, 0), "{text}");
    let wrong: Vec<_> = x.wrong().collect();
    assert_eq!(wrong[0].schedule, "P.W1.P.W2x3", "{text}");
    assert!(wrong[0].reasons.iter().any(|r| r.contains("lost")), "{:?}", wrong[0].reasons);
    assert!(!wrong[0].steps.iter().any(|s| s.starts_with("W1 SELECT")), "killed before its e-mail: {text}");
    let schedule = Schedule::parse(&wrong[0].schedule).unwrap();
    for _ in 0..10 {
        let again = explore_on(&services, "list-crash", Some("lrem-identical"), Search::Replay(schedule.clone())).await;
        assert_eq!((again.classes[0].verdict, &again.classes[0].key), (Verdict::Wrong, &wrong[0].key));
    }
    let t = explore_on(&services, "list-crash", Some("lrem-token"), exhaustive()).await;
    let text = ordlab::exploration::render(&t, ordlab::lang::Lang::En);
    assert_eq!(counts(&t), (5, 1, 0), "{text}");
    for c in &t.classes {
        assert!(!c.reasons.iter().any(|r| r.contains("lost")), "a token's copy is never lost: {text}");
        let step = |who: &str, keys: &str| c.steps.iter().any(|s| s.starts_with(who) && s.contains(keys));
        // W1 is killed with its copy in hand when W2 took the other and W1 never ran its LREM.
        let w1_lrem = step("W1 EVALSHA", " 2 processing:default leases:default ");
        if step("W2 EVALSHA", " 4 queue:default ") && !w1_lrem {
            let at = |p: &str| c.steps.iter().position(|s| s.starts_with(p));
            let (timer, reap) = (at("N ZADD leases:default XX CH 0 1|"), at("R EVALSHA"));
            assert!(timer.is_some() && timer < reap, "W1's lease runs out, then the reaper puts it back: {c:?}");
        }
    }
    let twice: Vec<_> = t.wrong().collect();
    assert!(twice[0].reasons.iter().any(|r| r.contains("duplicated")), "{:?}", twice[0].reasons);
    assert!(twice[0].steps.iter().any(|s| s.starts_with("W1 SELECT")), "killed after its e-mail: {text}");
    services.stop().await;
}

/// list-crash lease-reaper: W1 dies after its take and W2 replaces it; the 5 classes are the
/// places of the two later pushes among the takes (both before W1's take; one before and the
/// other before or after W2's first take; both after W1's, the last before or after W2's
/// first take); in each the lease runs out as a timer step once W2 waits for work, and the job
/// comes back once.
#[tokio::test]
async fn a_killed_list_worker_s_lease_runs_out_as_a_step_and_its_job_comes_back() {
    let x = explored("list-crash", Some("lease-reaper"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (5, 0, 0), "{text}");
    for c in &x.classes {
        let timers = c.steps.iter().filter(|s| s.starts_with("N ZADD leases:default")).count();
        assert_eq!(timers, 1, "{:?}", c.steps);
    }
}

/// list-crash lease-slow-handler: job-000001's first delivery outlasts its lease, so its lease
/// runs out (a step `N`) at any point while a worker works on it, and where the reaper puts it
/// back before the worker's LREM + ZREM, a worker takes it again and its e-mail goes twice.
/// The first 40 runs of the search (all 388 are compared by `every_explored…`).
#[tokio::test]
async fn a_lease_that_outlasts_its_job_runs_out_while_the_worker_works() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = first_runs(&services, "list-crash", "lease-slow-handler", 40).await;
    services.stop().await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert!(x.smaller_setup.is_some() && x.runs == x.classes.len(), "{text}");
    let mid_job = |c: &ordlab::exploration::ExploredClass| {
        let at = |p: &dyn Fn(&String) -> bool| c.steps.iter().position(p);
        let ran_out = at(&|s| s.starts_with("N ZADD leases:default XX CH 0 {\"id\":\"job-000001\""));
        let finished =
            at(&|s| s.starts_with("W") && s.contains(" 2 processing:default leases:default {\"id\":\"job-000001\""));
        ran_out.is_some() && ran_out < finished
    };
    let twice = x.wrong().filter(|c| mid_job(c) && c.reasons.iter().any(|r| r.contains("job-000001 email ×2"))).count();
    assert!(twice > 0, "{text}");
}

/// list-crash's blocking takes are steps: a worker's `BRPOP` (`BRPOPLPUSH`) is held while the
/// queue is empty and released only when a push has given it something, so it never waits in
/// the server and every class ends with W2 waiting on an empty queue. The 5 classes are where
/// the two later pushes come among W1's takes (as in lease-reaper); W1 dies after taking
/// job-000001 in each, so BRPOP loses it and the seed's processing list keeps it stuck: every
/// class wrong. The seed's LIFO (RPUSH with BRPOPLPUSH): wrong unless every job is taken before
/// the next one is pushed, 4 of 5.
#[tokio::test]
async fn a_blocking_take_is_a_step_released_once_the_queue_has_a_job() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    for (variant, take, wrong) in
        [("brpop", "BRPOP", 5), ("seed-brpoplpush", "BRPOPLPUSH", 5), ("seed-lifo", "BRPOPLPUSH", 4)]
    {
        let x = explore_on(&services, "list-crash", Some(variant), exhaustive()).await;
        let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
        assert_eq!(counts(&x), (5, wrong, 0), "{variant}: {text}");
        assert_eq!((x.runs, x.cut_as_repeats), (5, 0), "one run per class: {text}");
        for c in &x.classes {
            let takes: Vec<&String> =
                c.steps.iter().filter(|s| s.contains(&format!(" {take} queue:default"))).collect();
            assert!(!takes.is_empty(), "{variant}: {:?}", c.steps);
            assert!(takes.iter().all(|s| !s.ends_with("→ (nil)")), "a take released on an empty queue: {takes:?}");
        }
    }
    services.stop().await;
}

/// foreign-list: seed 003's Node worker (ioredis), a worker from a command line, is stepped as
/// ordlab's own is: its BRPOPLPUSH held until the queue has a job, the interposer's kill at the
/// reply to its first one (the job moved to processing, never seen by W1), its replacement W2
/// started once W1 is gone. The same 5 classes as ordlab's own worker, each wrong (the job W1
/// was given is stuck in processing: its e-mail never goes), and without the kill none.
#[tokio::test]
async fn a_list_worker_from_a_command_line_is_stepped_like_ordlab_s_own() {
    if !support::has_runtime("node with ioredis (cd examples/node && npm install)", super::foreign_list::node_missing())
    {
        return;
    }
    let services = Services::start(&support::local()).await.expect("local servers start");
    for (variant, wrong) in [("node-killed-after-take", 5), ("node-no-crash", 0)] {
        let x = explore_on(&services, "foreign-list", Some(variant), exhaustive()).await;
        let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
        assert_eq!(counts(&x), (5, wrong, 0), "{variant}: {text}");
        assert_eq!((x.runs, x.cut_as_repeats), (5, 0), "one run per class: {text}");
        for c in &x.classes {
            let w1: Vec<&String> = c.steps.iter().filter(|s| s.starts_with("W1 ")).collect();
            match wrong {
                0 => assert!(w1.iter().any(|s| s.starts_with("W1 LREM processing:default")), "{:?}", c.steps),
                _ => assert_eq!(w1.len(), 1, "W1 dies at its first take's reply: {:?}", c.steps),
            }
        }
    }
    services.stop().await;
}

/// foreign-jobs: seed 000's wrapper and multi-step job in Python (readers and claimer alike) are
/// stepped as ordlab's own job worker is, and each explored verdict is ordlab's own: killed at
/// the reply to the wrapper's SET NX, the job is lost (the claimer's SET NX finds the key); killed
/// at the send of the multi-step job's second SET, that SET never reaches the server (a step with
/// no reply that ends the process) and the retry's UPDATE finds the order completed. The schedule
/// replays.
#[tokio::test]
async fn a_job_worker_from_a_command_line_is_stepped_and_agrees_with_ordlab_s_own() {
    let missing = super::foreign_workers::missing(&super::foreign_workers::PYTHON);
    if !support::has_runtime("python3 with redis-py and psycopg", missing) {
        return;
    }
    let services = Services::start(&support::local()).await.expect("local servers start");
    for (python, ordlab) in
        [("python-wrapper-crash", "ordlab-wrapper-crash"), ("python-multistep-crash", "ordlab-multistep-crash")]
    {
        let x = explore_on(&services, "foreign-jobs", Some(python), exhaustive()).await;
        let own = explore_on(&services, "foreign-jobs", Some(ordlab), exhaustive()).await;
        let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
        assert_eq!(counts(&x), (1, 1, 0), "{python}: {text}");
        assert_eq!(counts(&x), counts(&own), "{python} against {ordlab}");
        let steps = &x.classes[0].steps;
        assert!(steps.iter().any(|s| s.starts_with("R XAUTOCLAIM")), "the claimer retries: {steps:?}");
        if python == "python-multistep-crash" {
            assert!(
                steps
                    .iter()
                    .any(|s| s.starts_with("C1 SET api:inventory:42") && s.contains("no reply: the process died")),
                "{steps:?}"
            );
        }
        let c = &x.classes[0];
        let again =
            explore_on(&services, "foreign-jobs", Some(python), Search::Replay(Schedule::parse(&c.schedule).unwrap()))
                .await;
        assert_eq!((again.classes[0].verdict, &again.classes[0].key), (c.verdict, &c.key), "{}", c.schedule);
    }
    services.stop().await;
}

/// list-retry backoff-dlq: a delayed retry comes due as a timer step (`N ZADD queue:delayed XX
/// CH 0 <payload>`: the worker's delay is never run out by the clock), and the scheduler's move
/// is a step only once something is due. job-000001 is refused twice (2 retries), job-000002
/// every time (3 retries, then the dead-letter list after 4 attempts): 5 timer steps in every
/// class, each followed by the scheduler's move; the 132 classes are where the producer's six
/// pushes come among the worker's steps, and none is wrong. The seed's queue:retry (nothing
/// reads it) loses the refused jobs in each of its 132.
#[tokio::test]
async fn a_delayed_retry_comes_due_as_a_timer_step() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "list-retry", Some("backoff-dlq"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (132, 0, 0), "{text}");
    assert_eq!(x.runs, 132, "one run per class: {text}");
    for c in &x.classes {
        let due: Vec<usize> = c
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.starts_with("N ZADD queue:delayed XX CH 0"))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(due.len(), 5, "{:?}", c.steps);
        for i in due {
            assert!(
                c.steps[i + 1..]
                    .iter()
                    .any(|s| s.starts_with("R EVALSHA") && s.contains("queue:delayed queue:default")),
                "{:?}",
                c.steps
            );
        }
    }
    let seed = explore_on(&services, "list-retry", Some("seed-retry-list"), exhaustive()).await;
    assert_eq!(counts(&seed), (132, 132, 0), "{}", ordlab::exploration::render(&seed, ordlab::lang::Lang::En));
    services.stop().await;
}

/// priority-strict: the seed's loop blocks on one stream at a time, its BLOCKs run out as timer
/// steps (`N CLIENT UNBLOCK C1 TIMEOUT`), going round the loop once per change. The critical
/// arrival lands at every point of C1's loop: where C1 is blocked on normal or on low, it waits
/// until that read runs out (4 of 14 classes; one of them the seed's BLOCK 5000 on low). The
/// corrected loop blocks on all three streams at once: the arrival wakes it, never wrong. The
/// one-call loop's first read returns 10 critical jobs and 10 low ones beside each other:
/// low is taken while the critical job it left waits, in every class.
#[tokio::test]
async fn a_priority_loop_s_block_times_run_out_as_timer_steps() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let seed = explore_on(&services, "priority-strict", Some("seed-strict"), exhaustive()).await;
    let text = ordlab::exploration::render(&seed, ordlab::lang::Lang::En);
    assert_eq!(counts(&seed), (14, 4, 0), "{text}");
    assert_eq!(seed.runs, 14, "one run per class: {text}");
    let reasons: Vec<&str> = seed.wrong().flat_map(|c| c.reasons.iter().map(|r| r.as_str())).collect();
    let normal = "critical c-0012 waited until `XREADGROUP normal COUNT 10 BLOCK 100` ran out of time (a read that does not cover critical)";
    assert_eq!(reasons.iter().filter(|r| **r == normal).count(), 3, "{text}");
    let low = "critical c-0012 waited until `XREADGROUP low COUNT 10 BLOCK 5000` ran out of time (a read that does not cover critical)";
    assert_eq!(reasons.iter().filter(|r| **r == low).count(), 1, "{text}");
    for c in seed.wrong() {
        assert!(c.steps.iter().any(|s| s == "N CLIENT UNBLOCK C1 TIMEOUT → 1"), "{:?}", c.steps);
    }
    let fixed = explore_on(&services, "priority-strict", Some("probe-then-block"), exhaustive()).await;
    let text = ordlab::exploration::render(&fixed, ordlab::lang::Lang::En);
    assert_eq!(counts(&fixed), (7, 0, 0), "{text}");
    let one_call = explore_on(&services, "priority-strict", Some("one-call"), exhaustive()).await;
    let text = ordlab::exploration::render(&one_call, ordlab::lang::Lang::En);
    assert_eq!(counts(&one_call), (6, 6, 0), "{text}");
    assert!(
        one_call
            .classes
            .iter()
            .all(|c| c.reasons.iter().any(|r| r.starts_with("not strict: l-0001 taken while c-0011 waited"))),
        "{text}"
    );
    services.stop().await;
}

/// foreign-priority: the seed's strict loop in Python (redis-py) is stepped at the wire like
/// ordlab's own worker: told a time scale that makes its BLOCKs last until a timer step, its
/// reads and XACKs read as the family's events. Same classes, same wrong ones, same reasons.
#[tokio::test]
async fn a_priority_worker_from_a_command_line_is_stepped_and_agrees_with_ordlab_s_own() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let own = explore_on(&services, "foreign-priority", Some("ordlab-strict"), exhaustive()).await;
    let python = explore_on(&services, "foreign-priority", Some("python-strict"), exhaustive()).await;
    let text = ordlab::exploration::render(&python, ordlab::lang::Lang::En);
    assert_eq!(counts(&python), (14, 4, 0), "{text}");
    assert_eq!(counts(&own), counts(&python), "{}", ordlab::exploration::render(&own, ordlab::lang::Lang::En));
    let reasons = |x: &Exploration| {
        let mut r: Vec<String> = x.wrong().flat_map(|c| c.reasons.clone()).collect();
        r.sort();
        r
    };
    assert_eq!(reasons(&own), reasons(&python), "{text}");
    services.stop().await;
}

/// idempotency lease: the lease key's TTL (400 ms, shorter than the claimer's 500 ms min-idle)
/// runs out as a timer step (`N PEXPIRE lease:job-1 0`), once every process waits for work:
/// before the claimer's retry, never during a job, as in the sampled lab. The 42 classes are
/// those of the other jobs variants; every one is wrong where the sampled runs are (job-2,
/// killed after its e-mail, and job-5, whose reply was lost, send it twice once their lease has
/// run out), and none with the partner's idempotency key (sink-key).
#[tokio::test]
async fn a_lease_s_ttl_runs_out_as_a_timer_step_before_the_retry() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let x = explore_on(&services, "idempotency", Some("lease"), exhaustive()).await;
    let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
    assert_eq!(counts(&x), (42, 42, 0), "{text}");
    for c in &x.classes {
        let expired = c.steps.iter().position(|s| s.starts_with("N PEXPIRE lease:job-1 0"));
        let retried = c.steps.iter().position(|s| s.starts_with("R SET lease:job-1 ") && s.ends_with("→ OK"));
        assert!(expired.is_some() && retried > expired, "the lease runs out before the retry takes it: {:?}", c.steps);
        assert!(c.reasons.iter().any(|r| r.contains("job-2") && r.contains("applied 2 times")), "{:?}", c.reasons);
    }
    let fixed = explore_on(&services, "idempotency", Some("sink-key"), exhaustive()).await;
    assert_eq!(counts(&fixed), (42, 0, 0), "{}", ordlab::exploration::render(&fixed, ordlab::lang::Lang::En));
    services.stop().await;
}

/// outbox naive and per-key: the dispatcher counts its own attempts at row 1 (its first two
/// fail, injected), state the wire does not show, so its poll is a step while rows are pending,
/// never parked as a retry that changes nothing: row 1 goes out at the third poll in every
/// class. The naive dispatcher publishes 42 created after 42 paid: wrong in all 42 classes
/// (where the consumer's steps come among the dispatcher's); per-key holds 42's later rows back:
/// right in all 42.
#[tokio::test]
async fn a_dispatcher_that_counts_its_attempts_polls_until_its_failing_row_goes_out() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    for (variant, wrong) in [("naive", 42), ("per-key", 0)] {
        let x = explore_on(&services, "outbox", Some(variant), exhaustive()).await;
        let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
        assert_eq!(counts(&x), (42, wrong, 0), "{variant}: {text}");
        for c in &x.classes {
            let polls =
                c.steps.iter().filter(|s| s.starts_with("D1 SELECT") && s.contains("published_at IS NULL")).count();
            let row1 = c.steps.iter().filter(|s| s.starts_with("D1 XADD orders * order 42 type created")).count();
            assert!(polls >= 3 && row1 == 1, "{variant}: three polls, row 1 once: {:?}", c.steps);
        }
    }
    services.stop().await;
}

/// outbox-crash: D1, a process, dies after its XADD of row 2 and before marking it; D2,
/// registered before, starts once the explorer sees D1 gone and publishes row 2 again. In each
/// of the 132 classes (where the consumer's steps come among the dispatchers') 42 paid is in the
/// stream twice: applied twice by the plain consumer, absorbed by the idempotent one.
#[tokio::test]
async fn a_crashed_dispatcher_s_replacement_starts_once_it_is_gone() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    for (variant, wrong) in [("plain-consumer", 132), ("idempotent-consumer", 0)] {
        let x = explore_on(&services, "outbox-crash", Some(variant), exhaustive()).await;
        let text = ordlab::exploration::render(&x, ordlab::lang::Lang::En);
        assert_eq!(counts(&x), (132, wrong, 0), "{variant}: {text}");
        for c in &x.classes {
            let paid = |d: &str| {
                c.steps.iter().filter(|s| s.starts_with(&format!("{d} XADD orders * order 42 type paid"))).count()
            };
            let d1_last = c.steps.iter().rposition(|s| s.starts_with("D1 "));
            let d2_first = c.steps.iter().position(|s| s.starts_with("D2 "));
            assert_eq!((paid("D1"), paid("D2")), (1, 1), "{:?}", c.steps);
            assert!(d2_first > d1_last, "D2 only once D1 is gone: {:?}", c.steps);
        }
    }
    services.stop().await;
}

/// The optimal reduction (wakeup trees) against the search it replaced (sleep sets over
/// depth-first search), on the same servers: the same classes (by key), each with the same
/// verdict, one run per class and none cut short, where sleep sets repeat runs. On a stream
/// lab with blocked reads and a reorder buffer's timeout step, a jobs lab with a killed worker
/// and a claimer, and a list lab with dormant producer, polls left idle and a planned kill.
#[tokio::test]
async fn the_optimal_reduction_finds_the_classes_sleep_sets_find_once_each() {
    use ordlab::exploration::Reduction;
    let services = Services::start(&support::local()).await.expect("local servers start");
    let variants = [
        ("reorder-buffer", "gap-timeout"),
        ("idempotency", "check-state-race"),
        ("list-crash", "lrem-identical"),
        ("list-crash", "lease-after-effect"),
    ];
    for (lab_id, variant) in variants {
        let lab = ordlab::catalog::find(lab_id).expect("lab");
        let v = lab.variant(variant).expect("variant");
        let mut found = Vec::new();
        for reduction in [Reduction::SleepSets, Reduction::Optimal] {
            let opts = ExploreOptions { search: exhaustive(), reduction, ..Default::default() };
            found.push(explore(&services, support::ordlab_exe(), &lab, v, &opts).await.expect("explores").0);
        }
        let (old, new) = (&found[0], &found[1]);
        let classes = |x: &Exploration| {
            x.classes.iter().map(|c| (c.key.clone(), c.verdict)).collect::<std::collections::BTreeMap<_, _>>()
        };
        let text = ordlab::exploration::render(new, ordlab::lang::Lang::En);
        assert_eq!(classes(new), classes(old), "{lab_id}/{variant}: {text}");
        // (A planned order the run could not follow is dropped for the next: it costs no run.)
        assert_eq!((new.runs, new.cut_as_repeats), (new.classes.len(), 0), "{lab_id}/{variant}: {text}");
        assert!(
            old.runs > old.classes.len(),
            "{lab_id}/{variant}: sleep sets ran {} for {}",
            old.runs,
            old.classes.len()
        );
    }
    services.stop().await;
}

/// Every variant `just explore` explores (scripts/explore-all.sh: all without a bound), explored
/// again and held to its saved exploration in results/explore/: the same classes (by key),
/// each with the same verdict, one run per class. Where the saved one stopped at
/// --max-schedules, its classes are all found again, and more. Minutes in a debug build:
/// `cargo test --release --test labs explore::every_explored -- --ignored` (the results are
/// regenerated by the release build, so this is how a change to the search is checked
/// against them before they are).
#[tokio::test]
#[ignore]
async fn every_explored_variant_keeps_its_saved_classes() {
    let script = std::fs::read_to_string("scripts/explore-all.sh").expect("scripts/explore-all.sh");
    // Its two lists: `pairs`, and `large` (explored with a higher --max-schedules).
    let list = |name: &str| {
        script.split(&format!("\n{name}=(")).nth(1).and_then(|rest| rest.split(')').next()).map(str::to_string)
    };
    let pairs: Vec<(String, String)> =
        [list("pairs").expect("a pairs=( … ) list"), list("large").expect("a large=( … ) list")]
            .iter()
            .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter_map(|p| p.split_once(':').map(|(l, v)| (l.to_string(), v.to_string())))
            .collect();
    assert!(pairs.len() > 30, "{pairs:?}");
    let text_only: Vec<String> =
        list("text_only").expect("a text_only=( … ) list").split_whitespace().map(str::to_string).collect();
    let services = Services::start(&support::local()).await.expect("local servers start");
    let mut failures = Vec::new();
    for (lab_id, variant) in &pairs {
        let path = std::path::Path::new("results/explore").join(format!("explore-{lab_id}-{variant}.json.gz"));
        if text_only.contains(&format!("{lab_id}:{variant}")) {
            continue; // its classes are not kept (results/ under 3 MB)
        }
        let Some(Ok(saved)) = ordlab::exploration::load(&path) else {
            panic!("{}: no saved exploration", path.display())
        };
        let lab = ordlab::catalog::find(lab_id).expect("lab");
        let v = lab.variant(variant).expect("variant");
        let opts = ExploreOptions { search: exhaustive(), max_schedules: 20_000, ..Default::default() };
        let Ok((x, _)) = explore(&services, support::ordlab_exe(), &lab, v, &opts).await else {
            failures.push(format!("{lab_id}/{variant}: the exploration failed"));
            continue;
        };
        let keys = |x: &Exploration| {
            x.classes.iter().map(|c| (c.key.clone(), c.verdict)).collect::<std::collections::BTreeSet<_>>()
        };
        let (old, new) = (keys(&saved), keys(&x));
        let line = format!(
            "{lab_id}/{variant}: saved {} classes from {} runs{}, now {} from {} runs",
            saved.classes.len(),
            saved.runs,
            if saved.hit_max_schedules { " (stopped at --max-schedules)" } else { "" },
            x.classes.len(),
            x.runs
        );
        eprintln!("{line}");
        let same = if saved.hit_max_schedules { old.is_subset(&new) } else { old == new };
        if !same || x.runs != x.classes.len() || x.hit_max_schedules {
            failures.push(line);
        }
    }
    services.stop().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
