//! A toy system for the searches' unit tests: processes each run a short program of steps on
//! named resources, with what makes the real ones hard: a step that waits for another's write
//! before it can go (a parked retry), a take that blocks on an empty queue until a put wakes it
//! (a blocked read), the wake-up carried by the put's step, a poll that is no step while its
//! queue is empty (and can be left idle for good once another took the item). [`run_all`] drives a search over
//! it as the explorer drives a lab; [`every_interleaving`] is the truth it is held to.

use super::footprint::Footprint;
use super::search::{class_key, Candidate, Choice, Strategy, Taken};
use crate::timeline::Actor;
use std::collections::{BTreeMap, BTreeSet};

/// One step of a toy program.
#[derive(Clone, Debug)]
pub enum Op {
    /// Read and write these resources.
    Touch(Vec<&'static str>, Vec<&'static str>),
    /// Can go only once the resource was written (by anyone); then reads it.
    Await(&'static str),
    /// Put an item into a queue, waking its first blocked taker.
    Put(&'static str),
    /// Take an item from a queue, or wait (blocked) until a put wakes it.
    Take(&'static str),
    /// Take an item from a queue; no step while it is empty (a poll that waits for work).
    Poll(&'static str),
}

pub type Program = Vec<(Actor, Vec<Op>)>;

pub fn touch(reads: &[&'static str], writes: &[&'static str]) -> Op {
    Op::Touch(reads.to_vec(), writes.to_vec())
}

pub fn write(r: &'static str) -> Op {
    Op::Touch(vec![], vec![r])
}

pub fn read(r: &'static str) -> Op {
    Op::Touch(vec![r], vec![])
}

fn fp(reads: &[&str], writes: &[&str]) -> Footprint {
    Footprint::of(reads.iter().map(|r| r.to_string()).collect(), writes.iter().map(|w| w.to_string()).collect())
}

/// What one toy run did.
#[derive(Debug, Default)]
pub struct ToyRun {
    pub taken: Vec<Taken>,
    pub end: Option<Choice>,
    /// Every resource's writers in order, and what each read saw: the run's outcome.
    pub outcome: String,
}

#[derive(Default)]
struct State {
    pc: BTreeMap<Actor, usize>,
    written: BTreeMap<String, Vec<Actor>>,
    queues: BTreeMap<String, usize>,
    /// Blocked takers per queue, first blocked first.
    waiting: BTreeMap<String, Vec<Actor>>,
    blocked: BTreeSet<Actor>,
    /// What each process's reads saw, in its order.
    seen: BTreeMap<Actor, Vec<String>>,
}

impl State {
    fn can_step(&self, actor: Actor, op: &Op) -> bool {
        !self.blocked.contains(&actor)
            && match op {
                Op::Await(r) => self.written.contains_key(*r),
                Op::Poll(q) => self.queues.get(*q).is_some_and(|n| *n > 0),
                _ => true,
            }
    }

    /// Step `actor`'s `op`: what it touched, whom it woke, the queue it joined.
    fn step(&mut self, actor: Actor, op: &Op) -> (Footprint, Vec<(Actor, Footprint)>, Footprint) {
        let (fp, woken) = self.touch(actor, op);
        let queued = match op {
            Op::Take(q) if self.blocked.contains(&actor) => Footprint::of(vec![], vec![format!("{q}#waiters")]),
            _ => Footprint::default(),
        };
        (fp, woken, queued)
    }

    fn touch(&mut self, actor: Actor, op: &Op) -> (Footprint, Vec<(Actor, Footprint)>) {
        *self.pc.get_mut(&actor).expect("a process") += 1;
        match op {
            Op::Touch(reads, writes) => {
                for r in reads {
                    let saw = format!("{r}={:?}", self.written.get(*r));
                    self.seen.entry(actor).or_default().push(saw);
                }
                for w in writes {
                    self.written.entry(w.to_string()).or_default().push(actor);
                }
                (fp(reads, writes), Vec::new())
            }
            Op::Await(r) => (fp(&[r], &[]), Vec::new()),
            Op::Put(q) => {
                self.written.entry(q.to_string()).or_default().push(actor);
                let woken = match self.waiting.get_mut(*q).filter(|w| !w.is_empty()) {
                    Some(w) => {
                        let taker = w.remove(0);
                        self.blocked.remove(&taker);
                        self.written.entry(q.to_string()).or_default().push(taker);
                        vec![(taker, fp(&[], &[q]))]
                    }
                    None => {
                        *self.queues.entry(q.to_string()).or_default() += 1;
                        Vec::new()
                    }
                };
                (fp(&[], &[q]), woken)
            }
            Op::Poll(q) => {
                *self.queues.get_mut(*q).expect("a poll steps on a queue with items") -= 1;
                self.written.entry(q.to_string()).or_default().push(actor);
                (fp(&[], &[q]), Vec::new())
            }
            Op::Take(q) => {
                let n = self.queues.entry(q.to_string()).or_default();
                if *n > 0 {
                    *n -= 1;
                    self.written.entry(q.to_string()).or_default().push(actor);
                    (fp(&[], &[q]), Vec::new())
                } else {
                    self.waiting.entry(q.to_string()).or_default().push(actor);
                    self.blocked.insert(actor);
                    // As the explorer sees a wait in a server: a read (the queue it joined apart).
                    (fp(&[q], &[]), Vec::new())
                }
            }
        }
    }
}

/// One run of `program` under `strategy`.
pub fn run_once(program: &Program, strategy: &mut dyn Strategy) -> ToyRun {
    let mut state = State { pc: program.iter().map(|(a, _)| (*a, 0)).collect(), ..State::default() };
    let mut run = ToyRun::default();
    loop {
        let held: Vec<(Candidate, bool)> = program
            .iter()
            .filter_map(|(a, ops)| {
                let op = ops.get(state.pc[a])?;
                let footprint = match op {
                    Op::Touch(r, w) => fp(r, w),
                    Op::Await(r) => fp(&[r], &[]),
                    Op::Put(q) | Op::Take(q) | Op::Poll(q) => fp(&[], &[q]),
                };
                let guard = match op {
                    Op::Await(r) | Op::Poll(r) => fp(&[r], &[]),
                    _ => Footprint::default(),
                };
                let c = Candidate::new(*a, format!("{op:?} #{}", state.pc[a]), footprint).guarded(guard);
                (!state.blocked.contains(a)).then(|| (c, state.can_step(*a, op)))
            })
            .collect();
        let waiting: Vec<Candidate> = held.iter().filter(|(_, can)| !can).map(|(c, _)| c.clone()).collect();
        let enabled: Vec<Candidate> = held.into_iter().filter(|(_, can)| *can).map(|(c, _)| c).collect();
        // A flag holds once written; a queue while it has items.
        let queue = |k: &String| state.queues.contains_key(k) || state.waiting.contains_key(k);
        let written = state.written.keys().filter(|k| !queue(k)).cloned();
        let items = state.queues.iter().filter(|(_, n)| **n > 0).map(|(q, _)| q.clone());
        let open = Footprint::of(written.chain(items).collect(), vec![]);
        strategy.observe(&run.taken, super::search::Seen { waiting: &waiting, open: &open });
        match strategy.choose(&run.taken, &enabled).expect("a toy run never diverges") {
            Choice::Take(a) => {
                let op = &program.iter().find(|(p, _)| *p == a).expect("a process").1[state.pc[&a]];
                let (footprint, woken, queued) = state.step(a, op);
                run.taken.push(Taken { actor: a, footprint, woken, queued });
            }
            end => {
                run.end = Some(end);
                break;
            }
        }
    }
    run.outcome = format!("{:?} {:?}", state.written, state.seen);
    run
}

/// What a whole search found.
#[derive(Debug, Default)]
pub struct Found {
    /// Runs that ended with every process done (or blocked for good).
    pub complete: usize,
    /// Runs cut short as repeats (every process able to step asleep).
    pub asleep: usize,
    /// Runs cut short by the preemption bound (every process awake would exceed it).
    pub bounded: usize,
    pub classes: BTreeSet<String>,
    pub outcomes: BTreeSet<String>,
}

impl Found {
    pub fn runs(&self) -> usize {
        self.complete + self.asleep + self.bounded
    }
}

/// Every run `strategy` makes of `program`.
pub fn run_all(program: &Program, strategy: &mut dyn Strategy) -> Found {
    let mut found = Found::default();
    for _ in 0..100_000 {
        let run = run_once(program, strategy);
        match run.end {
            Some(Choice::Done) => {
                found.complete += 1;
                found.classes.insert(class_key(&run.taken));
                found.outcomes.insert(run.outcome);
            }
            Some(Choice::Asleep) => found.asleep += 1,
            Some(Choice::Bound) => found.bounded += 1,
            other => panic!("a toy run ends done, asleep or at the bound, not {other:?}"),
        }
        if !strategy.advance(&run.taken) {
            return found;
        }
    }
    panic!("a toy search of 100 000 runs: it does not end");
}

/// Every interleaving of `program`, no reduction at all: the classes and outcomes a search
/// must find.
pub fn every_interleaving(program: &Program) -> Found {
    let mut all = Every { path: Vec::new() };
    run_all(program, &mut all)
}

/// A search that takes every choice at every point.
struct Every {
    /// At each point of the current run: the index chosen and how many there were.
    path: Vec<(usize, usize)>,
}

impl Strategy for Every {
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, super::search::Divergence> {
        if enabled.is_empty() {
            return Ok(Choice::Done);
        }
        let d = taken.len();
        if d == self.path.len() {
            self.path.push((0, enabled.len()));
        }
        Ok(Choice::Take(enabled[self.path[d].0].actor))
    }

    fn advance(&mut self, _taken: &[Taken]) -> bool {
        while let Some((i, n)) = self.path.pop() {
            if i + 1 < n {
                self.path.push((i + 1, n));
                return true;
            }
        }
        false
    }
}

/// A small random program: `procs` processes of up to `len` steps over `resources`
/// resources, some of them awaits, puts and takes. Deterministic in `seed`.
pub fn random_program(seed: u64, procs: u32, len: usize, resources: usize) -> Program {
    use rand::{Rng, SeedableRng};
    const NAMES: [&str; 4] = ["x", "y", "z", "w"];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let names = &NAMES[..resources.clamp(1, 4)];
    let pick = |rng: &mut rand_chacha::ChaCha8Rng| names[rng.random_range(0..names.len())];
    let mut program = Vec::new();
    // Takes and polls of one queue are not mixed: a poll left waiting is reversed only with a
    // competing poll (the explorer's polls compete with polls: dpor::last_competitor).
    let polls = rng.random_bool(0.5);
    for p in 1..=procs {
        let mut ops = Vec::new();
        for _ in 0..rng.random_range(1..=len) {
            let op = match rng.random_range(0..11) {
                0..=3 => write(pick(&mut rng)),
                4..=5 => read(pick(&mut rng)),
                6 => touch(&[pick(&mut rng)], &[pick(&mut rng)]),
                7 => Op::Await(pick(&mut rng)),
                8 => Op::Put("q"),
                9..=10 if polls => Op::Poll("q"),
                _ => Op::Take("q"),
            };
            ops.push(op);
        }
        program.push((Actor::Consumer(p), ops));
    }
    program
}
