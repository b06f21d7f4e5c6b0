//! The search over schedules, with no servers: at each point of a run the driver asks which of
//! the processes that can step should step, and the search answers so that, over many runs,
//! every distinct order of conflicting steps is tried once.
//!
//! [`Dfs`] is a stateless depth-first search with sleep sets (Godefroid): a run replays the
//! choices above the deepest open node and branches there; a process whose step commutes with
//! the one just taken stays asleep, so orders that differ only in commuting steps are not run
//! again. `--preemptions K` bounds how often a run switches away from a process that could go
//! on (as loom does). [`Pct`] samples schedules by random priorities with `d − 1` change
//! points (Burckhardt et al.): a bug of depth `d` shows with probability at least
//! `1/(n·k^(d−1))` per run. [`class_key`] names a run's equivalence class (its lexicographic
//! normal form), so the count of classes never depends on how the search got there.

use super::footprint::Footprint;
use super::schedule::{code, Schedule};
use crate::timeline::Actor;
use rand::{Rng, SeedableRng};

/// A process that can take a step now: its next command (entry IDs masked) and what that
/// command may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub actor: Actor,
    pub command: String,
    pub footprint: Footprint,
}

/// A step once it ran: what it touched, and the processes it woke (a blocked read that got
/// the entry this step added), each with what its read then did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    pub actor: Actor,
    pub footprint: Footprint,
    pub woken: Vec<(Actor, Footprint)>,
}

/// What to do at a point of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Take(Actor),
    /// No process can step: the run is over.
    Done,
    /// Every process that can step is asleep: whatever follows was run before, in another order.
    Asleep,
    /// Every process that could step would exceed the preemption bound.
    Bound,
}

/// A replayed run went differently from the run it repeats: the servers or a process did
/// something the schedule does not decide (a timer, a random choice, a race inside a process).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("step {step}: the schedule asks for {expected}, but the run has {found}")]
pub struct Divergence {
    pub step: usize,
    pub expected: String,
    pub found: String,
}

/// How a search answers, run after run.
pub trait Strategy {
    fn choose(&mut self, depth: usize, enabled: &[Candidate]) -> Result<Choice, Divergence>;
    /// The run ended: set up the next one; false when the search is over.
    fn advance(&mut self, steps_taken: usize) -> bool;
}

/// One point of the depth-first search: who could step, who was tried, who is asleep.
#[derive(Debug)]
struct Node {
    enabled: Vec<Candidate>,
    sleep: Vec<Candidate>,
    done: Vec<Candidate>,
    chosen: usize,
    /// The process that took the step before this point.
    prev: Option<Actor>,
    /// Preemptions on the way to this point.
    preemptions: u32,
}

impl Node {
    fn preempts(&self, i: usize) -> bool {
        self.prev.is_some_and(|p| p != self.enabled[i].actor && self.enabled.iter().any(|c| c.actor == p))
    }

    /// The next choice to try: the previous process first (no preemption), then in order.
    fn next_choice(&self, bound: Option<u32>) -> Option<usize> {
        let mut order: Vec<usize> = (0..self.enabled.len()).collect();
        order.sort_by_key(|&i| (Some(self.enabled[i].actor) != self.prev, self.enabled[i].actor));
        order.into_iter().find(|&i| {
            let c = &self.enabled[i];
            let tried = self.done.iter().chain(&self.sleep).any(|s| s.actor == c.actor && s.command == c.command);
            let within = bound.is_none_or(|k| self.preemptions + self.preempts(i) as u32 <= k);
            !tried && within
        })
    }
}

/// Every schedule up to commuting steps (and the preemption bound, if any).
#[derive(Debug, Default)]
pub struct Dfs {
    stack: Vec<Node>,
    bound: Option<u32>,
    /// Some process could not step because of the bound: the search is not exhaustive.
    pub bounded: bool,
}

impl Dfs {
    pub fn new(preemptions: Option<u32>) -> Dfs {
        Dfs { stack: Vec::new(), bound: preemptions, bounded: false }
    }

    fn describe(enabled: &[Candidate]) -> String {
        let parts: Vec<String> = enabled.iter().map(|c| format!("{} {}", code(c.actor), c.command)).collect();
        if parts.is_empty() {
            "no process able to step".into()
        } else {
            parts.join(" | ")
        }
    }
}

impl Strategy for Dfs {
    fn choose(&mut self, depth: usize, enabled: &[Candidate]) -> Result<Choice, Divergence> {
        if let Some(node) = self.stack.get(depth) {
            if node.enabled != enabled {
                let (expected, found) = (Dfs::describe(&node.enabled), Dfs::describe(enabled));
                return Err(Divergence { step: depth + 1, expected, found });
            }
            return Ok(Choice::Take(node.enabled[node.chosen].actor));
        }
        if enabled.is_empty() {
            return Ok(Choice::Done);
        }
        let (sleep, prev, preemptions) = match self.stack.last() {
            None => (Vec::new(), None, 0),
            Some(p) => {
                let taken = &p.enabled[p.chosen];
                let sleep = p
                    .sleep
                    .iter()
                    .chain(&p.done)
                    .filter(|s| s.actor != taken.actor && !s.footprint.conflicts(&taken.footprint))
                    .filter(|s| enabled.contains(s))
                    .cloned()
                    .collect();
                (sleep, Some(taken.actor), p.preemptions + p.preempts(p.chosen) as u32)
            }
        };
        let mut node = Node { enabled: enabled.to_vec(), sleep, done: Vec::new(), chosen: 0, prev, preemptions };
        let Some(i) = node.next_choice(self.bound) else {
            let unbounded = node.next_choice(None).is_some();
            self.bounded |= unbounded;
            return Ok(if unbounded { Choice::Bound } else { Choice::Asleep });
        };
        node.chosen = i;
        let actor = node.enabled[i].actor;
        self.stack.push(node);
        Ok(Choice::Take(actor))
    }

    fn advance(&mut self, _steps: usize) -> bool {
        while let Some(node) = self.stack.last_mut() {
            let tried = node.enabled[node.chosen].clone();
            node.done.push(tried);
            if let Some(i) = node.next_choice(self.bound) {
                node.chosen = i;
                return true;
            }
            if node.next_choice(None).is_some() {
                self.bounded = true;
            }
            self.stack.pop();
        }
        false
    }
}

/// Replay one schedule exactly; after its last turn, the run goes on in the search's first
/// order (the previous process first), so a prefix is a valid schedule too.
#[derive(Debug)]
pub struct Replay {
    schedule: Schedule,
    prev: Option<Actor>,
}

impl Replay {
    pub fn new(schedule: Schedule) -> Replay {
        Replay { schedule, prev: None }
    }
}

impl Strategy for Replay {
    fn choose(&mut self, depth: usize, enabled: &[Candidate]) -> Result<Choice, Divergence> {
        let actor = match self.schedule.0.get(depth) {
            Some(&a) if enabled.iter().any(|c| c.actor == a) => a,
            Some(&a) => {
                return Err(Divergence {
                    step: depth + 1,
                    expected: format!("a step of {}", code(a)),
                    found: format!(
                        "{} ready to step: {}",
                        if enabled.len() == 1 { "one process" } else { "these processes" },
                        Dfs::describe(enabled)
                    ),
                })
            }
            None if enabled.is_empty() => return Ok(Choice::Done),
            None => match self.prev.filter(|p| enabled.iter().any(|c| c.actor == *p)) {
                Some(p) => p,
                None => enabled.iter().map(|c| c.actor).min().expect("not empty"),
            },
        };
        if enabled.is_empty() {
            return Ok(Choice::Done);
        }
        self.prev = Some(actor);
        Ok(Choice::Take(actor))
    }

    fn advance(&mut self, _steps: usize) -> bool {
        false
    }
}

/// Probabilistic concurrency testing: `runs` schedules, each from random priorities and
/// `depth − 1` points where the running process drops below every other.
#[derive(Debug)]
pub struct Pct {
    rng: rand_chacha::ChaCha8Rng,
    pub depth: u32,
    runs_left: u32,
    /// Steps a run takes (the largest seen so far): where change points are drawn.
    pub steps: usize,
    priorities: Vec<(Actor, u64)>,
    change_points: Vec<usize>,
}

impl Pct {
    pub fn new(depth: u32, runs: u32, seed: u64, steps_guess: usize) -> Pct {
        let mut p = Pct {
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            depth: depth.max(1),
            runs_left: runs.max(1),
            steps: steps_guess.max(1),
            priorities: Vec::new(),
            change_points: Vec::new(),
        };
        p.draw();
        p
    }

    fn draw(&mut self) {
        self.priorities.clear();
        self.change_points = (1..self.depth).map(|_| self.rng.random_range(0..self.steps)).collect();
    }

    fn priority(&mut self, actor: Actor) -> u64 {
        if let Some((_, p)) = self.priorities.iter().find(|(a, _)| *a == actor) {
            return *p;
        }
        // Initial priorities lie above every change point's (1..depth).
        let p = self.depth as u64 + self.rng.random_range(0..1_000_000u64);
        self.priorities.push((actor, p));
        p
    }

    /// The lower bound on finding a bug of this depth in one run, for `processes` processes.
    pub fn bound(&self, processes: usize) -> f64 {
        1.0 / (processes.max(1) as f64 * (self.steps as f64).powi(self.depth as i32 - 1))
    }
}

impl Strategy for Pct {
    fn choose(&mut self, depth: usize, enabled: &[Candidate]) -> Result<Choice, Divergence> {
        if enabled.is_empty() {
            return Ok(Choice::Done);
        }
        let mut best: Option<(u64, Actor)> = None;
        for c in enabled {
            let p = self.priority(c.actor);
            if best.is_none_or(|(bp, _)| p > bp) {
                best = Some((p, c.actor));
            }
        }
        let (_, actor) = best.expect("not empty");
        if let Some(i) = self.change_points.iter().position(|&k| k == depth) {
            let low = (i + 1) as u64;
            if let Some(slot) = self.priorities.iter_mut().find(|(a, _)| *a == actor) {
                slot.1 = low;
            }
        }
        Ok(Choice::Take(actor))
    }

    fn advance(&mut self, steps_taken: usize) -> bool {
        self.steps = self.steps.max(steps_taken);
        self.runs_left -= 1;
        self.draw();
        self.runs_left > 0
    }
}

/// The name of a run's class: its steps (and the wake-ups they caused) in lexicographic
/// normal form. Two runs have the same key exactly when one becomes the other by swapping
/// adjacent steps of different processes that do not conflict.
pub fn class_key(steps: &[Taken]) -> String {
    struct Step {
        actor: Actor,
        footprint: Footprint,
        woken: bool,
    }
    let mut all = Vec::new();
    for t in steps {
        all.push(Step { actor: t.actor, footprint: t.footprint.clone(), woken: false });
        for (a, fp) in &t.woken {
            all.push(Step { actor: *a, footprint: fp.clone(), woken: true });
        }
    }
    let before = |i: usize, j: usize| all[i].actor == all[j].actor || all[i].footprint.conflicts(&all[j].footprint);
    let mut emitted = vec![false; all.len()];
    let mut key = Vec::with_capacity(all.len());
    for _ in 0..all.len() {
        let next = (0..all.len())
            .filter(|&j| !emitted[j] && (0..j).all(|i| emitted[i] || !before(i, j)))
            .min_by_key(|&j| (all[j].actor, j))
            .expect("a partial order always has a minimal step");
        emitted[next] = true;
        key.push(format!("{}{}", code(all[next].actor), if all[next].woken { "~" } else { "" }));
    }
    key.join(".")
}

#[cfg(test)]
mod tests {
    use super::super::footprint::Resource;
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn fp(writes: &[&str]) -> Footprint {
        Footprint { reads: BTreeSet::new(), writes: writes.iter().map(|w| Resource(w.to_string())).collect() }
    }

    /// A toy system: each process runs its list of steps (each writing the named resources),
    /// no blocking. Returns (complete runs, distinct classes, distinct final "states"); runs
    /// cut short because every process able to step was asleep are not counted.
    fn explore(programs: &[(Actor, Vec<Vec<&str>>)], strategy: &mut dyn Strategy) -> (usize, BTreeSet<String>, usize) {
        let mut runs = 0;
        let mut classes = BTreeSet::new();
        let mut outcomes = BTreeSet::new();
        loop {
            let mut pc: BTreeMap<Actor, usize> = programs.iter().map(|(a, _)| (*a, 0)).collect();
            let mut taken = Vec::new();
            // The "state": for each resource, the writers in order.
            let mut state: BTreeMap<String, Vec<Actor>> = BTreeMap::new();
            let mut complete = false;
            for depth in 0.. {
                let enabled: Vec<Candidate> = programs
                    .iter()
                    .filter_map(|(a, steps)| {
                        steps.get(pc[a]).map(|w| Candidate {
                            actor: *a,
                            command: format!("step {}", pc[a]),
                            footprint: fp(w),
                        })
                    })
                    .collect();
                match strategy.choose(depth, &enabled).unwrap() {
                    Choice::Take(a) => {
                        let c = enabled.iter().find(|c| c.actor == a).unwrap().clone();
                        for r in &c.footprint.writes {
                            state.entry(r.0.clone()).or_default().push(a);
                        }
                        taken.push(Taken { actor: a, footprint: c.footprint, woken: Vec::new() });
                        *pc.get_mut(&a).unwrap() += 1;
                    }
                    Choice::Done => {
                        complete = true;
                        break;
                    }
                    Choice::Asleep | Choice::Bound => break,
                }
            }
            if complete {
                runs += 1;
                classes.insert(class_key(&taken));
                outcomes.insert(format!("{state:?}"));
            }
            if !strategy.advance(taken.len()) {
                return (runs, classes, outcomes.len());
            }
        }
    }

    const A: Actor = Actor::Consumer(1);
    const B: Actor = Actor::Consumer(2);

    #[test]
    fn steps_on_disjoint_keys_are_one_class_run_once() {
        let programs = [(A, vec![vec!["r:a"], vec!["r:a"]]), (B, vec![vec!["r:b"], vec!["r:b"]])];
        let (runs, classes, _) = explore(&programs, &mut Dfs::new(None));
        assert_eq!(classes.len(), 1);
        assert_eq!(runs, 1, "sleep sets complete one order of commuting steps (the others are cut as repeats)");
    }

    #[test]
    fn a_two_process_race_on_one_key_has_every_order() {
        // Two steps each, all on one key: C(4,2) = 6 orders, all distinct.
        let programs = [(A, vec![vec!["r:k"], vec!["r:k"]]), (B, vec![vec!["r:k"], vec!["r:k"]])];
        let (runs, classes, outcomes) = explore(&programs, &mut Dfs::new(None));
        assert_eq!(classes.len(), 6);
        assert_eq!(runs, 6);
        assert_eq!(outcomes, 6);
    }

    #[test]
    fn a_mixed_program_counts_orders_of_its_conflicts_only() {
        // A: write k, write a; B: write b, write k. Only the two writes of k are ordered:
        // 2 classes (A's k first or B's), whatever the other steps do.
        let programs = [(A, vec![vec!["r:k"], vec!["r:a"]]), (B, vec![vec!["r:b"], vec!["r:k"]])];
        let (runs, classes, outcomes) = explore(&programs, &mut Dfs::new(None));
        assert_eq!(classes.len(), 2);
        assert_eq!(outcomes, 2);
        assert_eq!(runs, 2, "no order is run twice");
    }

    #[test]
    fn the_preemption_bound_cuts_the_search_and_says_so() {
        let programs = [(A, vec![vec!["r:k"], vec!["r:k"]]), (B, vec![vec!["r:k"], vec!["r:k"]])];
        let mut dfs = Dfs::new(Some(0));
        let (_, classes, _) = explore(&programs, &mut dfs);
        // No preemption: one process runs to its end, then the other: A A B B, B B A A.
        assert_eq!(classes.len(), 2);
        assert!(dfs.bounded);
        let mut dfs = Dfs::new(Some(1));
        let (_, classes, _) = explore(&programs, &mut dfs);
        // One preemption adds A B B A and B A A B.
        assert_eq!(classes.len(), 4);
    }

    #[test]
    fn class_keys_ignore_the_order_of_commuting_steps() {
        let t = |a, w: &[&str]| Taken { actor: a, footprint: fp(w), woken: Vec::new() };
        let one = [t(A, &["r:a"]), t(B, &["r:b"]), t(B, &["r:k"]), t(A, &["r:k"])];
        let two = [t(B, &["r:b"]), t(A, &["r:a"]), t(B, &["r:k"]), t(A, &["r:k"])];
        let other = [t(A, &["r:a"]), t(A, &["r:k"]), t(B, &["r:b"]), t(B, &["r:k"])];
        assert_eq!(class_key(&one), class_key(&two));
        assert_ne!(class_key(&one), class_key(&other));
    }

    #[test]
    fn a_wake_up_stays_after_the_step_that_caused_it() {
        // A's read blocked (touching entries), B's append woke it; A's next step follows.
        let read = Footprint { reads: [Resource("r:s#entries".into())].into(), writes: BTreeSet::new() };
        let mut woken_fp = fp(&["r:s#cursor"]);
        woken_fp.reads.insert(Resource("r:s#entries".into()));
        let steps = [
            Taken { actor: A, footprint: read, woken: Vec::new() },
            Taken { actor: B, footprint: fp(&["r:s#entries"]), woken: vec![(A, woken_fp)] },
            Taken { actor: A, footprint: fp(&["pg:t"]), woken: Vec::new() },
        ];
        assert_eq!(class_key(&steps), "C1.C2.C1~.C1");
    }

    #[test]
    fn a_replay_takes_its_turns_and_names_a_missing_one() {
        let c = |a| Candidate { actor: a, command: "x".into(), footprint: fp(&["r:k"]) };
        let mut r = Replay::new(Schedule(vec![B, A]));
        assert_eq!(r.choose(0, &[c(A), c(B)]), Ok(Choice::Take(B)));
        assert_eq!(r.choose(1, &[c(A), c(B)]), Ok(Choice::Take(A)));
        assert_eq!(r.choose(2, &[c(A), c(B)]), Ok(Choice::Take(A)), "after the string: the previous process");
        assert_eq!(r.choose(3, &[]), Ok(Choice::Done));
        let mut r = Replay::new(Schedule(vec![B]));
        let e = r.choose(0, &[c(A)]).unwrap_err();
        assert_eq!(e.step, 1);
        assert!(e.expected.contains("C2"), "{e}");
    }

    #[test]
    fn a_changed_run_is_a_divergence() {
        let c = |a, cmd: &str| Candidate { actor: a, command: cmd.into(), footprint: fp(&["r:k"]) };
        let mut dfs = Dfs::new(None);
        assert_eq!(dfs.choose(0, &[c(A, "GET k"), c(B, "GET k")]), Ok(Choice::Take(A)));
        assert_eq!(dfs.choose(1, &[c(B, "GET k")]), Ok(Choice::Take(B)));
        assert_eq!(dfs.choose(2, &[]), Ok(Choice::Done));
        assert!(dfs.advance(2));
        let e = dfs.choose(0, &[c(A, "SET k"), c(B, "GET k")]).unwrap_err();
        assert_eq!(e.step, 1);
    }

    #[test]
    fn pct_finds_a_depth_two_bug_within_its_bound() {
        // The bug: B's one step comes right after A's fifth of ten (A must start above B and
        // drop below it at step 5): depth 2. 200 runs at p ≥ 1/(2·11) per run miss it with
        // odds (1 − 1/22)^200 < 1e-4, and the seed is fixed, so the test cannot fail by chance.
        let programs = [(A, (0..10).map(|_| vec!["r:k"]).collect::<Vec<_>>()), (B, vec![vec!["r:k"]])];
        let mut found = 0;
        let mut pct = Pct::new(2, 200, 7, 11);
        loop {
            let mut pc: BTreeMap<Actor, usize> = programs.iter().map(|(a, _)| (*a, 0)).collect();
            let mut order = Vec::new();
            for depth in 0.. {
                let enabled: Vec<Candidate> = programs
                    .iter()
                    .filter_map(|(a, s)| {
                        s.get(pc[a]).map(|w| Candidate { actor: *a, command: String::new(), footprint: fp(w) })
                    })
                    .collect();
                match pct.choose(depth, &enabled).unwrap() {
                    Choice::Take(a) => {
                        order.push(a);
                        *pc.get_mut(&a).unwrap() += 1;
                    }
                    _ => break,
                }
            }
            found += (order.iter().position(|a| *a == B) == Some(5)) as u32;
            if !pct.advance(order.len()) {
                break;
            }
        }
        assert!(found > 0);
        assert!(pct.bound(2) >= 1.0 / 22.0, "bound {}", pct.bound(2));
    }
}
