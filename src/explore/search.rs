//! The search over schedules, with no servers: at each point of a run the driver asks which of
//! the processes that can step should step, and the search answers so that, over many runs,
//! every distinct order of conflicting steps is tried once.
//!
//! Three searches answer: [`crate::explore::dpor`], optimal dynamic partial-order reduction
//! (one run per class of schedules, the default); [`crate::explore::sleep_sets`], depth-first
//! search with sleep sets, which `--preemptions K` bounds (as loom does); and [`Pct`], which
//! samples schedules by random priorities with `d − 1` change points (Burckhardt et al.): a bug
//! of depth `d` shows with probability at least `1/(n·k^(d−1))` per run. [`Replay`] follows
//! one schedule. Two steps commute unless [`Event::depends`] says so; [`class_key`] names a
//! run's equivalence class (its lexicographic normal form), so the count of classes never
//! depends on how the search got there.

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
    /// What made the step possible where it might not have been (read): the list a poll
    /// found not empty, the key whose TTL a timer step ends, the flag a waiting process
    /// saw set. Empty for a step any state allows.
    pub guard: Footprint,
}

impl Candidate {
    pub fn new(actor: Actor, command: String, footprint: Footprint) -> Candidate {
        Candidate { actor, command, footprint, guard: Footprint::default() }
    }

    pub fn guarded(self, guard: Footprint) -> Candidate {
        Candidate { guard, ..self }
    }
}

/// A step once it ran: what it touched, and the processes it woke (a blocked read that got
/// the entry this step added), each with what its read then did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    pub actor: Actor,
    pub footprint: Footprint,
    pub woken: Vec<(Actor, Footprint)>,
    /// A step that waits in its server: the queue of waiting clients it joined
    /// ([`super::footprint::waiting_queue`]); not part of the relation.
    pub queued: Footprint,
}

impl Taken {
    pub fn new(actor: Actor, footprint: Footprint, woken: Vec<(Actor, Footprint)>) -> Taken {
        Taken { actor, footprint, woken, queued: Footprint::default() }
    }

    /// This step as the reduction reasons about it, with its candidate (its command and
    /// guard): its wake-ups are part of it (a woken read is answered by the step that woke
    /// it, never on its own).
    pub fn event(&self, candidate: Option<&Candidate>) -> Event {
        let mut footprint = self.footprint.clone();
        for (_, fp) in &self.woken {
            footprint.reads.extend(fp.reads.iter().cloned());
            footprint.writes.extend(fp.writes.iter().cloned());
        }
        Event {
            actor: self.actor,
            woke: self.woken.iter().map(|(a, _)| *a).collect(),
            footprint,
            command: candidate.map(|c| c.command.clone()).unwrap_or_default(),
            guard: candidate.map(|c| c.guard.clone()).unwrap_or_default(),
            queued: self.queued.clone(),
        }
    }
}

/// A step with the wake-ups it caused: the unit the reduction orders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The process the explorer let step.
    pub actor: Actor,
    /// The processes whose waiting command this step answered.
    pub woke: Vec<Actor>,
    /// What the step and its wake-ups touched.
    pub footprint: Footprint,
    /// The step's command as its candidate showed it.
    pub command: String,
    /// What made it possible ([`Candidate::guard`]).
    pub guard: Footprint,
    /// The queue of waiting clients it joined ([`Taken::queued`]).
    pub queued: Footprint,
}

impl Event {
    fn involves(&self, a: Actor) -> bool {
        self.actor == a || self.woke.contains(&a)
    }

    /// The explorer's dependence relation on steps, the one place it is stated: two steps are
    /// dependent (their order can matter) when one process takes part in both (its own
    /// order; a step that woke it is part of its order too) or what they touch conflicts
    /// ([`Footprint::conflicts`]: one writes what the other reads or writes). Every other pair
    /// commutes: either order gives the same state and the same replies.
    pub fn depends(&self, other: &Event) -> bool {
        self.involves(other.actor)
            || other.woke.iter().any(|a| self.involves(*a))
            || self.footprint.conflicts(&other.footprint)
    }

    /// [`Event::depends`], or two waits on one key (which one the server answers first can
    /// depend on their order): what keeps a sleeping process asleep must commute in this
    /// stronger sense too.
    pub fn may_depend(&self, other: &Event) -> bool {
        self.depends(other) || self.queued.conflicts(&other.queued)
    }
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
    /// What to do next, after the steps `taken` so far in this run (each with the wake-ups it
    /// caused), with these processes able to step.
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, Divergence>;
    /// Before [`Strategy::choose`] at the same point, what else the driver sees there.
    fn observe(&mut self, _taken: &[Taken], _seen: Seen) {}
    /// The run ended after the steps `taken`: set up the next one; false when the search is over.
    fn advance(&mut self, taken: &[Taken]) -> bool;
    /// What the search did beyond its runs, for the report (a reduction's counts).
    fn stats(&self) -> SearchStats {
        SearchStats::default()
    }
}

/// What the driver sees at a point besides who can step.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    /// The commands held by processes that cannot step now (a poll with nothing to take).
    pub waiting: &'a [Candidate],
    /// The guards that hold now (as reads): a list with something to take, a timer armed.
    pub open: &'a Footprint,
}

/// What a search counts of itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SearchStats {
    /// Orders the reduction planned (a race reversed) that the run could not follow: the
    /// process it named could not step there.
    pub unfollowed: usize,
    /// Some order was not run for the preemption bound.
    pub bounded: bool,
    /// The share of the search done, estimated after the last run (where it can tell).
    pub covered: Option<f64>,
}

/// The processes able to step, for an error: `C1 GET k | C2 SET k v`.
pub(crate) fn describe(enabled: &[Candidate]) -> String {
    let parts: Vec<String> = enabled.iter().map(|c| format!("{} {}", code(c.actor), c.command)).collect();
    if parts.is_empty() {
        "no process able to step".into()
    } else {
        parts.join(" | ")
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
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, Divergence> {
        let depth = taken.len();
        let actor = match self.schedule.0.get(depth) {
            Some(&a) if enabled.iter().any(|c| c.actor == a) => a,
            Some(&a) => {
                return Err(Divergence {
                    step: depth + 1,
                    expected: format!("a step of {}", code(a)),
                    found: format!(
                        "{} ready to step: {}",
                        if enabled.len() == 1 { "one process" } else { "these processes" },
                        describe(enabled)
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

    fn advance(&mut self, _taken: &[Taken]) -> bool {
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
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, Divergence> {
        let depth = taken.len();
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

    fn advance(&mut self, taken: &[Taken]) -> bool {
        self.steps = self.steps.max(taken.len());
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

    const A: Actor = Actor::Consumer(1);
    const B: Actor = Actor::Consumer(2);

    /// `n` steps taken (what they were does not matter to a replay).
    fn after(n: usize) -> Vec<Taken> {
        vec![Taken::new(A, Footprint::default(), Vec::new()); n]
    }

    #[test]
    fn class_keys_ignore_the_order_of_commuting_steps() {
        let t = |a, w: &[&str]| Taken::new(a, fp(w), Vec::new());
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
            Taken::new(A, read, Vec::new()),
            Taken::new(B, fp(&["r:s#entries"]), vec![(A, woken_fp)]),
            Taken::new(A, fp(&["pg:t"]), Vec::new()),
        ];
        assert_eq!(class_key(&steps), "C1.C2.C1~.C1");
    }

    #[test]
    fn a_replay_takes_its_turns_and_names_a_missing_one() {
        let c = |a| Candidate::new(a, "x".into(), fp(&["r:k"]));
        let mut r = Replay::new(Schedule(vec![B, A]));
        assert_eq!(r.choose(&after(0), &[c(A), c(B)]), Ok(Choice::Take(B)));
        assert_eq!(r.choose(&after(1), &[c(A), c(B)]), Ok(Choice::Take(A)));
        assert_eq!(r.choose(&after(2), &[c(A), c(B)]), Ok(Choice::Take(A)), "after the string: the previous process");
        assert_eq!(r.choose(&after(3), &[]), Ok(Choice::Done));
        let mut r = Replay::new(Schedule(vec![B]));
        let e = r.choose(&after(0), &[c(A)]).unwrap_err();
        assert_eq!(e.step, 1);
        assert!(e.expected.contains("C2"), "{e}");
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
                    .filter_map(|(a, s)| s.get(pc[a]).map(|w| Candidate::new(*a, String::new(), fp(w))))
                    .collect();
                match pct.choose(&after(depth), &enabled).unwrap() {
                    Choice::Take(a) => {
                        order.push(a);
                        *pc.get_mut(&a).unwrap() += 1;
                    }
                    _ => break,
                }
            }
            found += (order.iter().position(|a| *a == B) == Some(5)) as u32;
            if !pct.advance(&after(order.len())) {
                break;
            }
        }
        assert!(found > 0);
        assert!(pct.bound(2) >= 1.0 / 22.0, "bound {}", pct.bound(2));
    }
}
