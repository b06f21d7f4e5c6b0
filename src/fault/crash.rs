//! Planned crashes: a role process announces the crash on its timeline and kills itself with
//! SIGKILL at a named point (no ack, no cleanup, no rollback message), so the run is not judged
//! unknown. The orchestrator tracks who crashed to know when nothing more can happen.

use crate::lang::Words;
use crate::timeline::{Actor, EventKind, Job, RawEvent, Sink};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// A consumer kills itself right after receiving an entry, before applying or acknowledging
/// it: the first entry of type `event` (any type if absent) that is at least its
/// `entries`-th entry received (1 if absent). `consumer` names which one; without it, the
/// crash follows the event: whichever consumer receives it dies (which consumer that is
/// depends on the order in which they wait, drawn per run).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<u32>,
    /// Where in the loop: only `receive` (after XREADGROUP returned it, before XACK).
    pub after: CrashPoint,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    Receive,
}

impl CrashSpec {
    /// Does consumer `index`, which has just received its `received`-th entry `job`, crash now?
    pub fn fires(&self, index: u32, received: u32, job: &Job) -> bool {
        self.consumer.is_none_or(|c| c == index)
            && self.event.as_ref().is_none_or(|t| *t == job.event_type)
            && received >= self.entries.unwrap_or(1)
    }
}

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
    fn a_crash_fires_at_its_event_and_count_only() {
        let c =
            CrashSpec { consumer: Some(1), after: CrashPoint::Receive, event: Some("created".into()), entries: None };
        let job = |t: &str| Job::new(42, t, 1);
        assert!(c.fires(1, 1, &job("created")));
        assert!(!c.fires(2, 1, &job("created")) && !c.fires(1, 1, &job("paid")));
        let n = CrashSpec { consumer: Some(1), after: CrashPoint::Receive, event: None, entries: Some(3) };
        assert!(!n.fires(1, 2, &job("paid")) && n.fires(1, 3, &job("paid")));
        // Without a consumer the crash follows the event: whoever receives created dies.
        let any =
            CrashSpec { consumer: None, after: CrashPoint::Receive, event: Some("created".into()), entries: None };
        assert!(any.fires(1, 1, &job("created")) && any.fires(2, 1, &job("created")) && !any.fires(2, 1, &job("paid")));
    }

    #[test]
    fn entries_pending_in_a_dead_consumer_settle_the_run() {
        let raw = |actor, kind| RawEvent { mono_ns: 0, actor, kind };
        let job = Job::new(42, "created", 1);
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
