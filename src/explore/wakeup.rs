//! A wakeup tree (Abdulla, Aronis, Jonsson, Sagonas, "Optimal dynamic partial order
//! reduction", POPL 2014): at one point of the search, the orders still to be run from there,
//! each a sequence of steps, kept so that no two of them begin the same way up to commuting
//! steps. A sequence is added only where no planned one already begins with it, which is what
//! makes every run of the search a class of its own.
//!
//! A step is an [`Event`]: the process that took it, those it woke, what they touched. Whether
//! a process can go first in a sequence is [`weak_initial`]: its first step there depends on
//! nothing before it, or it takes no step there and its next one commutes with them all.

use super::search::Event;
use crate::timeline::Actor;

/// The orders still to run from one point: each child is a process's next step there, with
/// the orders to run after it; children are run in order, first added first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WakeupTree {
    children: Vec<(Event, WakeupTree)>,
}

impl WakeupTree {
    /// A tree of one sequence.
    pub fn chain(v: &[Event]) -> WakeupTree {
        let mut tree = WakeupTree::default();
        if let Some((first, rest)) = v.split_first() {
            tree.children.push((first.clone(), WakeupTree::chain(rest)));
        }
        tree
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The processes of the first steps, in the order they will be run.
    pub fn firsts(&self) -> impl Iterator<Item = &Event> {
        self.children.iter().map(|(e, _)| e)
    }

    /// Take out the first child that `can_step` allows, with the orders after it; the children
    /// before it, which cannot step, are dropped and counted.
    pub fn take_first(&mut self, can_step: impl Fn(&Event) -> bool) -> (Option<(Event, WakeupTree)>, usize) {
        let mut dropped = 0;
        while !self.children.is_empty() {
            let (e, sub) = self.children.remove(0);
            if can_step(&e) {
                return (Some((e, sub)), dropped);
            }
            dropped += 1;
        }
        (None, dropped)
    }

    /// Plan `v` unless a planned order begins with it already (up to commuting steps): walk down
    /// the children that can go first in `v`, taking their steps out of it, and where none
    /// can, add what is left of `v` as the last child. Reaching a leaf means a planned order
    /// is a prefix of `v` (its run covers `v`'s class). Returns whether `v` was added.
    pub fn insert(&mut self, v: &[Event]) -> bool {
        let mut node = self;
        let mut v = v.to_vec();
        let mut root = true;
        loop {
            if v.is_empty() || (!root && node.children.is_empty()) {
                return false;
            }
            match node.children.iter().position(|(e, _)| weak_initial(e, &v)) {
                Some(i) => {
                    let actor = node.children[i].0.actor;
                    if let Some(k) = v.iter().position(|e| e.actor == actor) {
                        v.remove(k);
                    }
                    node = &mut node.children[i].1;
                    root = false;
                }
                None => {
                    node.children.extend(WakeupTree::chain(&v).children);
                    return true;
                }
            }
        }
    }

    /// How many sequences (leaves) are planned.
    pub fn leaves(&self) -> usize {
        self.children.iter().map(|(_, sub)| if sub.is_empty() { 1 } else { sub.leaves() }).sum()
    }
}

/// Can the process of `next` (its next step) go first in some order equivalent to an
/// extension of `v`? Yes when its first step in `v` depends on no step before it there, or,
/// when it takes no step in `v`, its next step commutes with every step of `v`.
pub fn weak_initial(next: &Event, v: &[Event]) -> bool {
    match v.iter().position(|e| e.actor == next.actor) {
        Some(k) => !v[..k].iter().any(|e| e.depends(&v[k])),
        None => !v.iter().any(|e| e.depends(next) || e.woke.contains(&next.actor)),
    }
}

/// The processes that can go first in `v` itself (their first step depends on nothing before it).
pub fn initials(v: &[Event]) -> Vec<Actor> {
    let mut out: Vec<Actor> = Vec::new();
    for (k, e) in v.iter().enumerate() {
        if !out.contains(&e.actor) && !v[..k].iter().any(|d| d.actor == e.actor || d.depends(e)) {
            out.push(e.actor);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::footprint::Footprint;

    const A: Actor = Actor::Consumer(1);
    const B: Actor = Actor::Consumer(2);
    const C: Actor = Actor::Consumer(3);

    fn ev(actor: Actor, writes: &[&str]) -> Event {
        Event {
            actor,
            woke: Vec::new(),
            footprint: Footprint::of(vec![], writes.iter().map(|w| w.to_string()).collect()),
            command: String::new(),
            guard: Footprint::default(),
            queued: Footprint::default(),
        }
    }

    #[test]
    fn a_process_goes_first_when_nothing_before_its_step_depends_on_it() {
        let v = [ev(A, &["x"]), ev(B, &["y"]), ev(C, &["x"])];
        assert!(weak_initial(&ev(A, &["x"]), &v));
        assert!(weak_initial(&ev(B, &["y"]), &v), "B's step commutes with A's before it");
        assert!(!weak_initial(&ev(C, &["x"]), &v), "C's step follows A's on x");
        assert!(weak_initial(&ev(Actor::Producer, &["z"]), &v), "no step in v, and it commutes with all");
        assert!(!weak_initial(&ev(Actor::Producer, &["y"]), &v), "no step in v, but it meets B's");
        assert_eq!(initials(&v), vec![A, B]);
    }

    #[test]
    fn a_sequence_a_planned_one_begins_with_is_not_planned_again() {
        let mut t = WakeupTree::default();
        assert!(t.insert(&[ev(B, &["x"]), ev(A, &["x"])]));
        // The same steps with a commuting one first: B's step can go first, then A's.
        assert!(!t.insert(&[ev(C, &["z"]), ev(B, &["x"]), ev(A, &["x"])]), "C's step commutes: the same class");
        assert_eq!(t.leaves(), 1);
        // A different order of the conflicting steps is a new branch, run after the first.
        assert!(t.insert(&[ev(A, &["x"]), ev(B, &["x"])]));
        assert_eq!(t.leaves(), 2);
        assert_eq!(t.firsts().map(|e| e.actor).collect::<Vec<_>>(), vec![B, A]);
        let (first, dropped) = t.take_first(|e| e.actor == A);
        assert_eq!((first.map(|(e, _)| e.actor), dropped), (Some(A), 1), "B cannot step: dropped and counted");
    }

    #[test]
    fn a_longer_sequence_under_a_planned_prefix_grows_its_branch() {
        let mut t = WakeupTree::default();
        assert!(t.insert(&[ev(B, &["x"])]));
        // A leaf is a planned order that covers every extension of it.
        assert!(!t.insert(&[ev(B, &["x"]), ev(A, &["x"])]));
        let mut t = WakeupTree::chain(&[ev(B, &["x"]), ev(C, &["y"])]);
        assert!(t.insert(&[ev(B, &["x"]), ev(A, &["y"])]), "after B: A's step on y, not C's");
        assert_eq!(t.leaves(), 2);
        assert_eq!(t.firsts().count(), 1, "both begin with B's step");
    }
}
