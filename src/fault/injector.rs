//! The one injector every party consults: the interposer at each command boundary, ordlab's
//! own roles at their named points and timeline events, the side-effect partner at each
//! request, the explorer at each step it releases. It holds one process's (or one party's)
//! faults with their counts, and answers which of them fire at what that party just saw.
//!
//! Deciding is all it does: the party that asked carries the actions out (a role kills
//! itself, the interposer withholds a reply, the runner restarts a server) and records
//! [`Fired::event`] on its timeline.

use super::declare::{Fault, Target};
use super::event::FaultEvent;
use super::trigger::{Occurrence, Trigger};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, RawEvent, Sink};
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// One fault with what it has seen so far.
#[derive(Debug)]
struct Armed {
    fault: Fault,
    /// Occurrences its trigger matched.
    seen: AtomicU32,
    /// Times it fired.
    fired: AtomicU32,
}

/// The faults of one process or party, and their counts.
#[derive(Debug)]
pub struct Injector {
    armed: Vec<Armed>,
    /// The run's seed, for faults with a probability.
    rng: Mutex<rand_chacha::ChaCha8Rng>,
}

impl Default for Injector {
    fn default() -> Injector {
        Injector::new(Vec::new(), 0)
    }
}

/// A fault that fires now.
#[derive(Clone, Debug, PartialEq)]
pub struct Fired {
    pub fault: Fault,
    /// The how-many-th match of its trigger this is (1-based).
    pub occurrence: u32,
}

impl Fired {
    /// The fault as it hit `hit`: aimed at it where it named no process.
    fn as_hit(&self, hit: Actor) -> Fault {
        let target = match self.fault.target {
            Target::Any | Target::Index(_) => Target::Process(hit),
            t => t,
        };
        Fault { target, ..self.fault.clone() }
    }

    /// Its timeline event, as `hit`'s.
    pub fn event(&self, hit: Actor) -> crate::timeline::EventKind {
        FaultEvent::FaultFired { fault: self.as_hit(hit), occurrence: self.occurrence }.event()
    }

    /// Record it on `sink` as `hit`'s event, now.
    pub fn announce(&self, sink: &dyn Sink, hit: Actor) {
        sink.record(RawEvent::now(hit, self.event(hit)));
    }

    /// Its end (a pause over, refusals over, a server back), as `hit`'s event.
    pub fn over(&self, hit: Actor) -> crate::timeline::EventKind {
        FaultEvent::FaultOver { fault: self.as_hit(hit) }.event()
    }
}

impl Injector {
    /// `faults`, each counted from zero; `seed` draws the faults that have a probability.
    pub fn new(faults: Vec<Fault>, seed: u64) -> Injector {
        let armed = faults
            .into_iter()
            .map(|fault| Armed { fault, seen: AtomicU32::new(0), fired: AtomicU32::new(0) })
            .collect();
        Injector { armed, rng: Mutex::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed)) }
    }

    pub fn is_empty(&self) -> bool {
        self.armed.is_empty()
    }

    /// The faults it holds, as declared.
    pub fn faults(&self) -> impl Iterator<Item = &Fault> {
        self.armed.iter().map(|a| &a.fault)
    }

    /// Every fault whose trigger matches `occurrence` counts it; those whose count (and
    /// probability) let it fire now are returned, in the order they were declared.
    pub fn fire(&self, occurrence: &Occurrence<'_>) -> Vec<Fired> {
        let mut out = Vec::new();
        for a in &self.armed {
            if !a.fault.trigger.matches(occurrence, a.fault.process()) {
                continue;
            }
            let k = a.seen.fetch_add(1, Ordering::SeqCst) + 1;
            if !a.fault.count.fires(k, a.fired.load(Ordering::SeqCst)) {
                continue;
            }
            if let Some(p) = a.fault.probability {
                if self.rng.lock().expect("not poisoned").random::<f64>() >= p {
                    continue;
                }
            }
            a.fired.fetch_add(1, Ordering::SeqCst);
            out.push(Fired { fault: a.fault.clone(), occurrence: k });
        }
        out
    }

    /// The faults under a time trigger, with their moment (ms after the start, unscaled),
    /// earliest first: whoever runs the clock fires them ([`Injector::fire`] with
    /// [`Occurrence::Time`]).
    pub fn moments(&self) -> Vec<f64> {
        let mut at: Vec<f64> = self
            .armed
            .iter()
            .filter_map(|a| match a.fault.trigger {
                Trigger::Time { after_ms } => Some(after_ms),
                _ => None,
            })
            .collect();
        at.sort_by(f64::total_cmp);
        at.dedup();
        at
    }

    /// Does any fault of this injector want the process's clock skewable (a skew action)?
    pub fn skews(&self) -> bool {
        self.armed.iter().any(|a| matches!(a.fault.action, super::Action::SkewMs(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Action, Moment};
    use crate::timeline::ServerKind;

    fn read(by: Actor, moment: Moment) -> (Vec<String>, Actor, Moment) {
        (vec!["XREADGROUP".to_string(), "GROUP".into()], by, moment)
    }

    #[test]
    fn the_nth_matching_command_at_its_moment_fires_once() {
        let inj = Injector::new(vec![Fault::kill_at(Target::Any, "xreadgroup", 2, Moment::Reply)], 1);
        let at = |(args, by, moment): &(Vec<String>, Actor, Moment)| {
            inj.fire(&Occurrence::Command { by: *by, server: ServerKind::Redis, args, moment: *moment }).len()
        };
        let w1 = Actor::Worker(1);
        assert_eq!(at(&read(w1, Moment::Send)), 0, "send is not counted");
        assert_eq!(at(&read(w1, Moment::Reply)), 0, "first reply");
        assert_eq!(at(&(vec!["XACK".into()], w1, Moment::Reply)), 0, "another command");
        assert_eq!(at(&read(w1, Moment::Reply)), 1, "second reply");
        assert_eq!(at(&read(w1, Moment::Reply)), 0, "only once");
    }

    #[test]
    fn faults_compose_and_each_counts_for_itself() {
        let kill = Fault::kill_at(Target::Any, "SET", 2, Moment::Send);
        let pause = Fault { action: Action::PauseMs(10.0), count: crate::fault::Count::first(2), ..kill.clone() };
        let pause = Fault { count: crate::fault::Count { nth: 1, ..pause.count }, ..pause };
        let inj = Injector::new(vec![kill, pause], 1);
        let set = vec!["SET".to_string()];
        let occ =
            Occurrence::Command { by: Actor::Consumer(1), server: ServerKind::Redis, args: &set, moment: Moment::Send };
        let fired: Vec<Vec<Action>> =
            (0..3).map(|_| inj.fire(&occ).into_iter().map(|f| f.fault.action).collect()).collect();
        assert_eq!(fired, [vec![Action::PauseMs(10.0)], vec![Action::Kill, Action::PauseMs(10.0)], vec![]]);
    }

    #[test]
    fn a_sampled_fault_fires_as_its_seed_draws_and_the_same_seed_draws_the_same() {
        let f = Fault {
            probability: Some(0.5),
            count: crate::fault::Count { nth: 1, every: Some(1), times: None },
            ..Fault::at_event(Target::Any, "received", None, Action::Kill)
        };
        let draws = |seed| {
            let inj = Injector::new(vec![f.clone()], seed);
            let occ = Occurrence::Event { by: Actor::Consumer(1), event: "received", job: None, delivery: None };
            (0..200).map(|_| inj.fire(&occ).len()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        let n: usize = draws(7).iter().sum();
        // Binomial(200, 0.5): outside 60..=140 has odds below 1e-8.
        assert!((60..=140).contains(&n), "{n}");
    }

    #[test]
    fn a_fired_fault_s_event_names_the_process_it_hit() {
        let f = Fault::kill_at(Target::Index(2), "SET", 1, Moment::Send);
        let fired = Fired { fault: f, occurrence: 1 };
        let e = fired.event(Actor::Worker(2)).family::<FaultEvent>().unwrap();
        let FaultEvent::FaultFired { fault, .. } = e else { panic!() };
        assert_eq!(fault.target, Target::Process(Actor::Worker(2)));
    }
}
