//! The reduction on hand-made programs and on many small random ones, held to every
//! interleaving: the same classes (and outcomes), one run each, none cut short.

use super::{Dpor, Mode};
use crate::explore::search::Strategy;
use crate::explore::sleep_sets::SleepSets;
use crate::explore::toy::{
    every_interleaving, random_program, read, run_all, run_once, touch, write, Found, Op, Program,
};
use crate::timeline::Actor;

const A: Actor = Actor::Consumer(1);
const B: Actor = Actor::Consumer(2);
const C: Actor = Actor::Consumer(3);

fn optimal(p: &Program) -> Found {
    run_all(p, &mut Dpor::new(Mode::Optimal))
}

/// Held to the truth: the same classes and outcomes, one complete run per class.
fn exactly_once(p: &Program) -> Found {
    let truth = every_interleaving(p);
    let found = optimal(p);
    assert_eq!(found.classes, truth.classes, "{p:?}");
    assert_eq!(found.outcomes, truth.outcomes, "{p:?}");
    assert_eq!((found.complete, found.asleep), (truth.classes.len(), 0), "one run per class: {p:?}");
    found
}

#[test]
fn steps_on_disjoint_resources_are_one_run() {
    let p = vec![(A, vec![write("a"), write("a")]), (B, vec![write("b"), write("b")])];
    let found = exactly_once(&p);
    assert_eq!(found.classes.len(), 1);
}

#[test]
fn a_race_on_one_resource_is_every_order_once() {
    // Two steps each, all on one resource: C(4,2) = 6 orders, all distinct.
    let p = vec![(A, vec![write("k"), write("k")]), (B, vec![write("k"), write("k")])];
    assert_eq!(exactly_once(&p).classes.len(), 6);
    // Reads of it commute: only the orders of the writes count.
    let p = vec![(A, vec![write("k"), read("k")]), (B, vec![read("k"), read("k")]), (C, vec![write("j")])];
    let found = exactly_once(&p);
    assert_eq!(found.classes.len(), 3, "B's two reads before, around or after A's write; A's read commutes with them");
}

/// Sleep sets alone (the search before this one) run the commuting orders again until every
/// process left is asleep: runs cut short as repeats. The optimal reduction runs each class
/// once and cuts none.
#[test]
fn sleep_sets_alone_repeat_runs_the_optimal_reduction_does_not() {
    let p = vec![
        (A, vec![write("a"), write("k"), write("a")]),
        (B, vec![write("b"), write("k"), write("b")]),
        (C, vec![write("c")]),
    ];
    let truth = every_interleaving(&p);
    let sleep = run_all(&p, &mut SleepSets::new(None));
    assert_eq!(sleep.classes, truth.classes);
    assert!(sleep.asleep > 0, "sleep sets cut {} runs short", sleep.asleep);
    assert!(sleep.runs() > truth.classes.len(), "{} runs for {} classes", sleep.runs(), truth.classes.len());
    let found = exactly_once(&p);
    assert_eq!(found.runs(), 2, "the two orders of the writes of k");
}

/// Source sets plan one first step per race and can be led by a free choice into an order
/// that was run: the run is cut short. Wakeup trees plan the whole reversing sequence.
#[test]
fn source_sets_alone_cut_runs_that_wakeup_trees_do_not() {
    // The POPL 2014 paper's example of the kind: p writes x; q reads y, then x; r writes y.
    let p = vec![(A, vec![write("x")]), (B, vec![read("y"), read("x")]), (C, vec![write("y")])];
    let truth = every_interleaving(&p);
    let source = run_all(&p, &mut Dpor::new(Mode::Source));
    assert_eq!(source.classes, truth.classes);
    assert!(source.asleep > 0, "source sets alone: {} runs, {} cut short", source.runs(), source.asleep);
    exactly_once(&p);
}

/// A step that can go only after another's write (a parked retry, a dormant process) is never
/// planned before it: its race with the write that let it go is not reversed.
#[test]
fn a_step_is_never_planned_before_what_let_it_go() {
    let p = vec![(A, vec![write("flag"), write("k")]), (B, vec![Op::Await("flag"), write("k")])];
    let found = exactly_once(&p);
    assert_eq!(found.classes.len(), 2, "B's write of k before or after A's");
    let p = vec![(A, vec![write("flag"), read("flag")]), (B, vec![Op::Await("flag"), write("flag")])];
    exactly_once(&p);
}

/// A take that blocks is answered by the put that wakes it, inside the put's step; two takers
/// blocked on one queue are served first come, first served, so their waits are ordered.
#[test]
fn blocked_takes_are_woken_by_puts_in_the_order_they_waited() {
    let p = vec![(A, vec![Op::Take("q"), write("a")]), (B, vec![Op::Take("q")]), (C, vec![Op::Put("q"), Op::Put("q")])];
    let found = exactly_once(&p);
    assert!(found.classes.len() >= 6, "{:?}", found.classes);
    let woken_first = |who: &str| found.classes.iter().any(|k| k.contains(&format!("C3.{who}~")));
    assert!(woken_first("C1") && woken_first("C2"), "either taker can be the one the first put wakes");
}

/// Many small random programs (three processes, up to three steps, writes, reads, awaits, puts
/// and takes on up to three resources): every one held to every interleaving. Source sets and
/// sleep sets find the same classes too, with more runs.
#[test]
fn random_programs_are_explored_one_run_per_class() {
    random_programs(0..120, 3);
}

/// The same on longer programs and more of them (a minute in a release build):
/// `cargo test --release --lib many_random_programs -- --ignored`.
#[test]
#[ignore]
fn many_random_programs_are_explored_one_run_per_class() {
    random_programs(1000..3000, 4);
}

fn random_programs(seeds: std::ops::Range<u64>, len: usize) {
    let mut runs = [0usize; 3];
    let mut classes = 0;
    for seed in seeds {
        let p = random_program(seed, 3, len, 3);
        let truth = every_interleaving(&p);
        classes += truth.classes.len();
        runs[0] += exactly_once(&p).runs();
        let source = run_all(&p, &mut Dpor::new(Mode::Source));
        assert_eq!(source.classes, truth.classes, "source sets, seed {seed}: {p:?}");
        runs[1] += source.runs();
        let sleep = run_all(&p, &mut SleepSets::new(None));
        assert_eq!(sleep.classes, truth.classes, "sleep sets, seed {seed}: {p:?}");
        runs[2] += sleep.runs();
    }
    eprintln!("{classes} classes: optimal {} runs, source sets {}, sleep sets {}", runs[0], runs[1], runs[2]);
    assert_eq!(runs[0], classes);
    assert!(runs[1] <= classes * 12 / 10, "source sets: {} runs for {classes} classes", runs[1]);
    assert!(runs[2] > runs[1], "sleep sets: {} runs, source sets {}", runs[2], runs[1]);
}

/// A poll that is no step while its queue is empty: where another process takes the one item
/// first, it never steps at all, and the race is with the step it could have taken.
#[test]
fn a_poll_left_idle_by_another_s_take_is_a_race_too() {
    let p = vec![(A, vec![Op::Put("q"), Op::Poll("q")]), (B, vec![Op::Poll("q")])];
    let found = exactly_once(&p);
    assert_eq!(found.classes.len(), 2, "A or B takes the item: {:?}", found.classes);
    let p = vec![
        (A, vec![Op::Put("q"), write("k")]),
        (B, vec![Op::Poll("q"), write("k")]),
        (C, vec![Op::Poll("q"), write("k")]),
    ];
    exactly_once(&p);
}

/// A producer that pushes its second job once a worker took the first, a second worker that
/// starts then too:
/// the push commutes with the first worker's next steps, and moved before them it lets the
/// second worker take the job while the first still works (list-crash's classes).
#[test]
fn a_step_another_lets_go_is_planned_after_what_lets_it_go() {
    let p = vec![
        (A, vec![Op::Put("q"), Op::Await("took"), Op::Put("q")]),
        // The worker's ack touches the queue's bookkeeping, as its fetch does.
        (B, vec![Op::Poll("q"), write("took"), write("mail"), write("q")]),
        // The second worker starts once the first took a job.
        (C, vec![Op::Await("took"), Op::Poll("q"), write("mail"), write("q")]),
    ];
    let found = exactly_once(&p);
    assert!(found.classes.len() >= 5, "{:?}", found.classes);
}

#[test]
fn a_touch_that_reads_and_writes_orders_with_both() {
    let p = vec![(A, vec![touch(&["x"], &["y"])]), (B, vec![write("x")]), (C, vec![read("y")])];
    let found = exactly_once(&p);
    assert_eq!(found.classes.len(), 4);
}

/// The share of the search done, estimated after each run: below one until the last run,
/// one there.
#[test]
fn the_share_covered_reaches_one_at_the_last_run_only() {
    let p = vec![(A, vec![write("k"), write("k")]), (B, vec![write("k"), write("k")]), (C, vec![write("k")])];
    let mut dpor = Dpor::new(Mode::Optimal);
    let mut shares = Vec::new();
    loop {
        let run = run_once(&p, &mut dpor);
        let more = dpor.advance(&run.taken);
        shares.push(dpor.stats().covered.expect("the optimal search estimates its share"));
        if !more {
            break;
        }
    }
    assert_eq!(shares.len(), 30, "5!/(2!·2!·1!) orders");
    let (last, before) = shares.split_last().expect("runs");
    assert!((last - 1.0).abs() < 1e-9, "{shares:?}");
    assert!(before.iter().all(|s| *s > 0.0 && *s < 1.0), "{shares:?}");
}
