//! A planned crash carried out by the process itself: it announces the crash on its timeline
//! and kills itself with SIGKILL (no ack, no cleanup, no rollback message), so the run is not
//! judged unknown. The orchestrator tracks who crashed to know when nothing more can happen.

use crate::lang::Words;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::collections::{HashMap, HashSet};

/// Announce a planned crash of `actor` and kill this process with SIGKILL. Never returns.
pub fn crash_now(sink: &dyn Sink, actor: Actor, detail: Words) -> ! {
    sink.emit(actor, EventKind::crashed_at(detail));
    let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
    loop {
        std::thread::park();
    }
}

/// What the orchestrator knows of planned consumer crashes while a run goes on.
#[derive(Debug, Default)]
pub struct PlannedCrashes {
    /// Consumers (by index) that announced a planned crash.
    crashed: HashSet<u32>,
    /// Who received each entry ID last.
    received_by: HashMap<String, u32>,
}

impl PlannedCrashes {
    pub fn observe(&mut self, ev: &RawEvent) {
        let Actor::Consumer(i) = ev.actor else { return };
        match &ev.kind {
            EventKind::Crashed { planned: true, .. } => {
                self.crashed.insert(i);
            }
            kind => {
                for (entry_id, _) in kind.delivered() {
                    self.received_by.insert(entry_id, i);
                }
            }
        }
    }

    /// With no claimer, once everything is published: is there nothing left that anyone can
    /// still acknowledge? True when every consumer is dead, or when every entry not
    /// acknowledged is pending in a dead consumer. Entries are `(shard, entry ID)`.
    pub fn settled(&self, published: &HashSet<(u32, String)>, acked: &HashSet<(u32, String)>, consumers: u32) -> bool {
        if self.crashed.is_empty() {
            return false;
        }
        self.crashed.len() as u32 >= consumers
            || published
                .iter()
                .all(|p| acked.contains(p) || self.received_by.get(&p.1).is_some_and(|c| self.crashed.contains(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_pending_in_a_dead_consumer_settle_the_run() {
        let raw = |actor, kind| RawEvent { mono_ns: 0, actor, kind };
        let job = crate::timeline::Job::new(42, "created", 1);
        let published: HashSet<(u32, String)> = [(0, "1-0".to_string()), (0, "1-1".to_string())].into();
        let acked: HashSet<(u32, String)> = [(0, "1-1".to_string())].into();
        let mut c = PlannedCrashes::default();
        c.observe(&raw(Actor::Consumer(1), EventKind::Received { entry_id: "1-0".into(), job, deliveries: None }));
        assert!(!c.settled(&published, &acked, 2), "nobody crashed yet");
        c.observe(&raw(Actor::Consumer(1), EventKind::crashed(true, "x")));
        assert!(c.settled(&published, &acked, 2));
        assert!(!c.settled(&published, &HashSet::new(), 2), "1-1 can still be acknowledged by C2");
        assert!(c.settled(&published, &HashSet::new(), 1), "no live consumer");
    }
}
