//! Depth-first search with sleep sets (Godefroid): a run replays the choices above the deepest
//! open point and branches there; a process whose step commutes with the one just taken stays
//! asleep, so orders that differ only in commuting steps are not run to their end again (they
//! are cut short as asleep). It is what `--preemptions K` bounds (how often a run switches
//! away from a process that could go on, as loom does), and what the optimal reduction
//! ([`crate::explore::dpor`]) is compared with.

use super::search::{describe, Candidate, Choice, Divergence, SearchStats, Strategy, Taken};
use crate::timeline::Actor;

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
pub struct SleepSets {
    stack: Vec<Node>,
    bound: Option<u32>,
    /// Some process could not step because of the bound: the search is not exhaustive.
    pub bounded: bool,
}

impl SleepSets {
    pub fn new(preemptions: Option<u32>) -> SleepSets {
        SleepSets { stack: Vec::new(), bound: preemptions, bounded: false }
    }
}

impl Strategy for SleepSets {
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, Divergence> {
        let depth = taken.len();
        if let Some(node) = self.stack.get(depth) {
            if node.enabled != enabled {
                let (expected, found) = (describe(&node.enabled), describe(enabled));
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

    fn stats(&self) -> SearchStats {
        SearchStats { bounded: self.bounded, ..SearchStats::default() }
    }

    fn advance(&mut self, _taken: &[Taken]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::footprint::Footprint;
    use crate::explore::toy::{every_interleaving, run_all, write};

    const A: Actor = Actor::Consumer(1);
    const B: Actor = Actor::Consumer(2);

    #[test]
    fn the_preemption_bound_cuts_the_search_and_says_so() {
        let p = vec![(A, vec![write("k"), write("k")]), (B, vec![write("k"), write("k")])];
        assert_eq!(every_interleaving(&p).classes.len(), 6);
        let mut dfs = SleepSets::new(Some(0));
        // No preemption: one process runs to its end, then the other: A A B B, B B A A.
        assert_eq!(run_all(&p, &mut dfs).classes.len(), 2);
        assert!(dfs.bounded);
        // One preemption adds A B B A and B A A B.
        assert_eq!(run_all(&p, &mut SleepSets::new(Some(1))).classes.len(), 4);
        assert_eq!(run_all(&p, &mut SleepSets::new(None)).classes.len(), 6);
    }

    #[test]
    fn a_changed_run_is_a_divergence() {
        let c = |a, cmd: &str| Candidate::new(a, cmd.into(), Footprint::of(vec![], vec!["r:k".into()]));
        let step = |a| Taken::new(a, Footprint::of(vec!["r:k".into()], vec![]), Vec::new());
        let mut dfs = SleepSets::new(None);
        assert_eq!(dfs.choose(&[], &[c(A, "GET k"), c(B, "GET k")]), Ok(Choice::Take(A)));
        assert_eq!(dfs.choose(&[step(A)], &[c(B, "GET k")]), Ok(Choice::Take(B)));
        assert_eq!(dfs.choose(&[step(A), step(B)], &[]), Ok(Choice::Done));
        assert!(dfs.advance(&[step(A), step(B)]));
        let e = dfs.choose(&[], &[c(A, "SET k"), c(B, "GET k")]).unwrap_err();
        assert_eq!(e.step, 1);
    }
}
