//! Optimal dynamic partial-order reduction (Abdulla, Aronis, Jonsson, Sagonas, POPL 2014): one
//! run per class of schedules, none cut short. After each run the search looks for its races
//! (two dependent steps of different processes with nothing ordering them in between) and,
//! for each, plans the run that reverses it: the steps that do not depend on the first, then
//! the second. A plan goes into the wakeup tree ([`WakeupTree`]) of the point before the first
//! step, unless a process asleep there could begin it (that class was run) or a planned order
//! already begins with it.
//!
//! A process can be unable to step for a while (waiting in a server, parked on a retry, not
//! started, a timer not armed): the step after which it can step again is ordered before its
//! next step (its *enabler*), so a race with that step is never reversed. A process that could
//! have taken a step and could not after another's (a poll whose item another took) races
//! with that step; a poll held at the end that was never possible races with the last step
//! that wrote what it waits for. A reversal that needs a guard (a list not empty, a timer
//! armed) that did not hold there is not planned: the driver says which guards held at each
//! point ([`Seen::open`]). [`Mode::Source`]
//! plans only a first step per race (source sets, the same paper's Algorithm 1): runs it
//! cannot finish without repeating a class are cut short as asleep.

use super::footprint::Footprint;
use super::search::{describe, Candidate, Choice, Divergence, Event, SearchStats, Seen, Strategy, Taken};
use super::wakeup::{initials, weak_initial, WakeupTree};
use crate::timeline::Actor;

/// How races are reversed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Wakeup trees: the whole reversing sequence is planned (one run per class).
    Optimal,
    /// Source sets: only a process that can begin the reversing sequence.
    Source,
}

/// One point of the current run.
#[derive(Debug)]
struct Node {
    enabled: Vec<Candidate>,
    /// Held commands of processes that could not step here.
    waiting: Vec<Candidate>,
    /// The guards that held here.
    open: Footprint,
    /// The process this run takes here.
    taken: Actor,
    /// Processes whose next step here was run from here (or above, commuting since): what
    /// begins with it was run.
    sleep: Vec<Event>,
    /// Orders still to run from here, after the one being run.
    wut: WakeupTree,
    /// The rest of the planned order being run, for the points below.
    below: WakeupTree,
    /// Processes run from here (source sets: what the backtrack set holds).
    done: Vec<Actor>,
}

/// The search: a stack of the current run's points, each with what is still to run from it.
#[derive(Debug)]
pub struct Dpor {
    mode: Mode,
    stack: Vec<Node>,
    /// Who could step where the run ended (none when it is done; asleep ones when cut short).
    last_enabled: Vec<Candidate>,
    /// Held commands that could not step, and guards that held, at the point being chosen.
    waiting: Vec<Candidate>,
    open: Footprint,
    stats: SearchStats,
}

impl Dpor {
    pub fn new(mode: Mode) -> Dpor {
        Dpor {
            mode,
            stack: Vec::new(),
            last_enabled: Vec::new(),
            waiting: Vec::new(),
            open: Footprint::default(),
            stats: SearchStats::default(),
        }
    }

    /// A process to take where no order is planned: the previous one if it can go on (no
    /// switch), else the first that can; none awake: None.
    fn free_choice(enabled: &[Candidate], sleep: &[Event], prev: Option<Actor>) -> Option<Actor> {
        let awake = |a: Actor| !sleep.iter().any(|s| s.actor == a);
        let mut actors: Vec<Actor> = enabled.iter().map(|c| c.actor).filter(|a| awake(*a)).collect();
        actors.sort_by_key(|a| (Some(*a) != prev, *a));
        actors.first().copied()
    }

    /// The point after `taken`'s last step: its sleep set and the order planned through it.
    fn open(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Option<Node> {
        let (sleep, below, prev) = match (self.stack.last_mut(), taken.last()) {
            (Some(parent), Some(step)) => {
                let event = step.event(candidate_of(&parent.enabled, parent.taken));
                // A sleeping process stays asleep while what it would do commutes with the
                // step taken and its next step is still the one it was (its command the same).
                let sleep = parent
                    .sleep
                    .iter()
                    .filter(|s| !s.may_depend(&event))
                    .filter(|s| enabled.iter().any(|c| c.actor == s.actor && c.command == s.command))
                    .cloned()
                    .collect();
                (sleep, std::mem::take(&mut parent.below), Some(step.actor))
            }
            _ => (Vec::new(), WakeupTree::default(), None),
        };
        let mut wut = below;
        let can_step = |e: &Event| enabled.iter().any(|c| c.actor == e.actor);
        let (planned, dropped) = wut.take_first(can_step);
        self.stats.unfollowed += dropped;
        let (taken, below) = match planned {
            Some((e, sub)) => (e.actor, sub),
            None => (Dpor::free_choice(enabled, &sleep, prev)?, WakeupTree::default()),
        };
        let (waiting, open) = (std::mem::take(&mut self.waiting), std::mem::take(&mut self.open));
        Some(Node { enabled: enabled.to_vec(), waiting, open, taken, sleep, wut, below, done: Vec::new() })
    }

    /// How much of the search is done, estimated from the current run's points: at each, the
    /// share of its branches (run, being run, planned) already run, each point's share scaled
    /// by the branches above it. Planned branches grow as races are found, so while the search
    /// goes on this can only overstate what was done.
    fn covered(&self) -> f64 {
        let (mut done, mut scale) = (0.0, 1.0);
        for node in &self.stack {
            let total = (node.done.len() + 1 + node.wut.firsts().count()) as f64;
            done += scale * node.done.len() as f64 / total;
            scale /= total;
        }
        done + scale
    }

    /// Plan the reversal of every race of the run `taken`: between two of its steps; between
    /// a step and the candidate of a process it left unable to step (a take that emptied the
    /// list a poll was about to take from, a release that disarmed a timer); and between a
    /// poll that was never possible after its process's last step (its item gone before it
    /// got there) and the competing poll that took last.
    fn plan(&mut self, taken: &[Taken]) {
        let n = taken.len().min(self.stack.len());
        let mut events: Vec<Event> =
            (0..n).map(|k| taken[k].event(candidate_of(&self.stack[k].enabled, self.stack[k].taken))).collect();
        let mut nodes: Vec<(&[Candidate], &[Candidate])> =
            self.stack[..n].iter().map(|node| (node.enabled.as_slice(), node.waiting.as_slice())).collect();
        nodes.push((&self.last_enabled, &self.waiting));
        let enabled: Vec<Vec<Actor>> = nodes.iter().map(|(c, _)| c.iter().map(|c| c.actor).collect()).collect();
        let mut open: Vec<&Footprint> = self.stack[..n].iter().map(|node| &node.open).collect();
        open.push(&self.open);
        let mut plans: Vec<(usize, Vec<Event>)> =
            disabled(&events, &nodes).into_iter().map(|(i, d)| (i, vec![d])).collect();
        let mut at: Vec<usize> = (0..n).collect();
        for (point, candidate) in never_possible(&events, &nodes) {
            events.push(Event::pending(candidate));
            at.push(point);
        }
        let order = Order::of(&events, n, &enabled, &at);
        let mut races = order.races(&events, n);
        races.extend(guard_races(&events, n, &open, &races));
        for (i, j) in races {
            if !order.before(i, j) || !reversible(&events, &open, i, j) {
                continue;
            }
            let mut v: Vec<Event> = (i + 1..n).filter(|&k| !order.before(i, k)).map(|k| events[k].clone()).collect();
            v.push(events[j].clone());
            plans.push((i, v));
        }
        for (i, v) in plans {
            self.insert(i, v);
        }
    }

    /// Plan `v` at point `i`, as the mode does.
    fn insert(&mut self, i: usize, v: Vec<Event>) {
        let node = &mut self.stack[i];
        match self.mode {
            Mode::Optimal => {
                // A sleeping process that can begin `v`: its class was run (the paper's check).
                if !node.sleep.iter().any(|s| weak_initial(s, &v)) {
                    node.wut.insert(&v);
                }
            }
            Mode::Source => {
                let firsts = initials(&v);
                let planned =
                    |a: &Actor| node.done.contains(a) || node.taken == *a || node.wut.firsts().any(|e| e.actor == *a);
                if firsts.iter().any(planned) {
                    return;
                }
                let awake = firsts.iter().find(|a| !node.sleep.iter().any(|s| s.actor == **a));
                if let Some(e) = awake.and_then(|a| v.iter().find(|e| e.actor == *a)) {
                    node.wut.insert(std::slice::from_ref(e));
                }
            }
        }
    }
}

impl Event {
    /// A step a process holds and has not taken, as its candidate shows it.
    fn pending(c: &Candidate) -> Event {
        Event {
            actor: c.actor,
            woke: Vec::new(),
            footprint: c.footprint.clone(),
            command: c.command.clone(),
            guard: c.guard.clone(),
            queued: Footprint::default(),
        }
    }
}

/// The candidates steps left unable to step: at each point `i`, a process that could step
/// there (not the one that stepped, nor one it woke) and could not after, or whose step
/// changed (a timer disarmed for another), when its step conflicts with step `i`.
fn disabled(events: &[Event], nodes: &[(&[Candidate], &[Candidate])]) -> Vec<(usize, Event)> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        for c in nodes[i].0 {
            let gone = !nodes[i + 1].0.iter().any(|d| d.actor == c.actor && d.command == c.command);
            if c.actor != e.actor && !e.woke.contains(&c.actor) && gone && e.footprint.conflicts(&c.footprint) {
                out.push((i, Event::pending(c)));
            }
        }
    }
    out
}

/// Polls held at the end that were never possible after their process's last step: the
/// point where each was last held, and its candidate.
fn never_possible<'a>(events: &[Event], nodes: &[(&'a [Candidate], &'a [Candidate])]) -> Vec<(usize, &'a Candidate)> {
    let Some((_, last)) = nodes.last() else { return Vec::new() };
    let mut out = Vec::new();
    for c in last.iter().filter(|c| !c.guard.reads.is_empty()) {
        let from = events.iter().rposition(|e| e.actor == c.actor || e.woke.contains(&c.actor)).map_or(0, |k| k + 1);
        if !(from..nodes.len()).any(|m| nodes[m].0.iter().any(|d| d.actor == c.actor)) {
            out.push((nodes.len() - 1, c));
        }
    }
    out
}

/// Races on a guard: a guarded step (a poll) took what the last writer of its guard left (an
/// item a take put back); it could as well have taken what was there before, where the guard
/// already held: before the latest writer at whose point it held (the poll that took that
/// item). Returns those pairs not among `races` already.
fn guard_races(events: &[Event], n: usize, open: &[&Footprint], races: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (j, e) in events.iter().enumerate() {
        let guard = &e.guard.reads;
        if guard.is_empty() {
            continue;
        }
        let writes = |k: usize| events[k].footprint.writes.iter().any(|w| guard.iter().any(|g| g.overlaps(w)));
        let held = |k: usize| guard.iter().all(|g| open[k].reads.iter().any(|o| o.overlaps(g)));
        let found = (0..j.min(n)).rev().filter(|&k| writes(k)).find(|&k| held(k) || events[k].actor == e.actor);
        if let Some(k) = found.filter(|&k| events[k].actor != e.actor && !events[k].woke.contains(&e.actor)) {
            if !races.contains(&(k, j)) {
                out.push((k, j));
            }
        }
    }
    out
}

/// `actor`'s candidate at a point.
fn candidate_of(enabled: &[Candidate], actor: Actor) -> Option<&Candidate> {
    enabled.iter().find(|c| c.actor == actor)
}

impl Strategy for Dpor {
    fn choose(&mut self, taken: &[Taken], enabled: &[Candidate]) -> Result<Choice, Divergence> {
        let depth = taken.len();
        if let Some(node) = self.stack.get_mut(depth) {
            node.waiting = std::mem::take(&mut self.waiting);
            node.open = std::mem::take(&mut self.open);
            if node.enabled != enabled {
                let (expected, found) = (describe(&node.enabled), describe(enabled));
                return Err(Divergence { step: depth + 1, expected, found });
            }
            return Ok(Choice::Take(node.taken));
        }
        if enabled.is_empty() {
            self.last_enabled.clear();
            return Ok(Choice::Done);
        }
        match self.open(taken, enabled) {
            Some(node) => {
                let actor = node.taken;
                self.stack.push(node);
                Ok(Choice::Take(actor))
            }
            None => {
                self.last_enabled = enabled.to_vec();
                Ok(Choice::Asleep)
            }
        }
    }

    fn observe(&mut self, _taken: &[Taken], seen: Seen) {
        self.waiting = seen.waiting.to_vec();
        self.open = seen.open.clone();
    }

    fn advance(&mut self, taken: &[Taken]) -> bool {
        self.plan(taken);
        self.stack.truncate(taken.len());
        self.stats.covered = Some(self.covered());
        while let Some(d) = self.stack.len().checked_sub(1) {
            let node = &mut self.stack[d];
            let event = taken[d].event(candidate_of(&node.enabled, node.taken));
            node.sleep.push(event);
            node.done.push(node.taken);
            let enabled = node.enabled.clone();
            let (planned, dropped) = node.wut.take_first(|e| enabled.iter().any(|c| c.actor == e.actor));
            self.stats.unfollowed += dropped;
            if let Some((e, sub)) = planned {
                node.taken = e.actor;
                node.below = sub;
                return true;
            }
            self.stack.pop();
        }
        false
    }

    fn stats(&self) -> SearchStats {
        self.stats
    }
}

/// Can step `j` go before step `i` at all? Not when step `i` wrote what made step `j`
/// possible (its guard: a list's item, a key's TTL) and that did not hold before step `i`
/// (`open`: the guards that held at each point): no step between them writes it without being
/// ordered after step `i`, so it would not hold where `j` is moved to. (A process that could
/// not step at `i` for another reason is let go by its enabler, which is then before `j` in
/// the reversing sequence, or the race is not immediate.)
fn reversible(events: &[Event], open: &[&Footprint], i: usize, j: usize) -> bool {
    let guard = &events[j].guard.reads;
    let writes_guard = events[i].footprint.writes.iter().any(|w| guard.iter().any(|g| g.overlaps(w)));
    !writes_guard || guard.iter().all(|g| open[i].reads.iter().any(|o| o.overlaps(g)))
}

/// The happens-before order of one run's steps: a step is before another when they are
/// dependent ([`Event::depends`]), or the first is what let the second's process step again
/// (its enabler), or through a chain of those. Pending steps (after the `n` taken) come last,
/// each after what it depends on; none is before another.
struct Order {
    /// For each step, the steps before it, as bits.
    before: Vec<Vec<u64>>,
    enabler: Vec<Option<usize>>,
}

impl Order {
    /// `enabled[m]`: the processes that could step at point `m` (before step `m`; the last,
    /// after every step); `at[j]`: the point where step `j` was taken (or could have been).
    fn of(events: &[Event], n: usize, enabled: &[Vec<Actor>], at: &[usize]) -> Order {
        let total = events.len();
        let words = total.div_ceil(64).max(1);
        let enabler: Vec<Option<usize>> = (0..total)
            .map(|j| match enabled[at[j]].contains(&events[j].actor) {
                true => enabler_of(events, n, enabled, j, at[j]),
                false => None, // pending, and it could not step: nothing let it
            })
            .collect();
        let mut before = vec![vec![0u64; words]; total];
        for j in 0..total {
            for i in (0..j.min(n)).rev() {
                if before[j][i / 64] >> (i % 64) & 1 == 1 {
                    continue;
                }
                if events[i].depends(&events[j]) || enabler[j] == Some(i) {
                    let (lo, hi) = before.split_at_mut(j);
                    for (w, x) in hi[0].iter_mut().zip(&lo[i]) {
                        *w |= x;
                    }
                    hi[0][i / 64] |= 1 << (i % 64);
                }
            }
        }
        Order { before, enabler }
    }

    fn before(&self, i: usize, j: usize) -> bool {
        self.before[j][i / 64] >> (i % 64) & 1 == 1
    }

    /// The run's reversible races, `(i, j)`: a step taken `i` and a later step `j` (taken or
    /// pending) of another process whose footprints conflict, `i` before `j` with no step
    /// taken ordered between them, `i` not what let `j`'s process step, and `j`'s process not
    /// woken by `i`.
    fn races(&self, events: &[Event], n: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for j in 0..events.len() {
            for i in 0..j.min(n) {
                let (a, b) = (&events[i], &events[j]);
                let race = a.actor != b.actor
                    && !a.woke.contains(&b.actor)
                    && a.footprint.conflicts(&b.footprint)
                    && self.enabler[j] != Some(i)
                    && self.before(i, j)
                    && !(i + 1..j.min(n)).any(|k| self.before(i, k) && self.before(k, j));
                if race {
                    out.push((i, j));
                }
            }
        }
        out
    }
}

/// The step after which step `j`'s process could step again, if it could not for a while
/// since its last step taken (or since the run began): the last point before `j`'s (`at`),
/// after the process's previous step, where it could not step. (`n`: the steps taken.)
fn enabler_of(events: &[Event], n: usize, enabled: &[Vec<Actor>], j: usize, at: usize) -> Option<usize> {
    let q = events[j].actor;
    let prev = events[..j.min(n)].iter().rposition(|e| e.actor == q || e.woke.contains(&q));
    let from = prev.map_or(0, |p| p + 1);
    (from..at).rev().find(|&m| !enabled[m].contains(&q))
}

#[cfg(test)]
mod tests;
