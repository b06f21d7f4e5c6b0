//! The events a run's verdict rests on: the moments a picture of the run must show (a window
//! around each, when the timeline is too long to draw whole), found in the record alone. What
//! every kind shares is read here (a process that died unplanned, the lab giving up, a fault
//! that fired, a command a client gave up on or a reply for nobody, a lock wait, a change never
//! committed); a kind adds its own through `Judge::evidence` (a probe never served, the write
//! that made the final state wrong).

use crate::interposer::connections::{ClosedBy, ConnectionEvent};
use crate::timeline::{Actor, Event, EventKind};

/// One moment of a run that its verdict rests on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The event's index in the run's events.
    pub index: usize,
    pub t_us: i64,
    pub actor: Actor,
    pub why: Why,
}

/// Why the moment matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// A process died unplanned.
    Died,
    /// The lab's patience ran out.
    GaveUp,
    /// A declared fault fired.
    Fault,
    /// A client gave up on a command (no reply), or its reply came for nobody.
    GaveUpOnCommand,
    /// A statement waited on a lock (the harness saw it).
    LockWait,
    /// A write never committed.
    Uncommitted,
    /// A job queued and never served (a kind's own).
    NeverServed,
    /// A kind's own: the step that made its final state what it is.
    Decisive,
}

/// The moments every kind's verdict may rest on, in the order of the events.
pub fn common(events: &[Event]) -> Vec<Evidence> {
    let uncommitted: Vec<(Actor, i64)> = super::transactions::open_at_end(events)
        .iter()
        .flat_map(|t| t.writes.iter().map(move |w| (t.actor, w.t_us)))
        .collect();
    let mut out = Vec::new();
    for (index, e) in events.iter().enumerate() {
        let why = match &e.kind {
            EventKind::Crashed { planned: false, .. } => Some(Why::Died),
            EventKind::Family(f) => match f.kind() {
                "gave_up" => Some(Why::GaveUp),
                "fault_fired" => Some(Why::Fault),
                "lock_wait_seen" => Some(Why::LockWait),
                _ => match e.kind.family::<ConnectionEvent>() {
                    Some(ConnectionEvent::NoReply { by: ClosedBy::Client | ClosedBy::Server, .. })
                    | Some(ConnectionEvent::ReplyForNobody { .. }) => Some(Why::GaveUpOnCommand),
                    _ => None,
                },
            },
            EventKind::ServerCommand { .. } if uncommitted.contains(&(e.actor, e.t_us)) => Some(Why::Uncommitted),
            _ => None,
        };
        if let Some(why) = why {
            out.push(Evidence { index, t_us: e.t_us, actor: e.actor, why });
        }
    }
    out
}

/// `index`'s event as evidence of `why`.
pub fn at(events: &[Event], index: usize, why: Why) -> Option<Evidence> {
    events.get(index).map(|e| Evidence { index, t_us: e.t_us, actor: e.actor, why })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::vocabulary::Vocabulary as _;

    #[test]
    fn deaths_give_ups_and_given_up_commands_are_what_a_verdict_rests_on() {
        let c1 = Actor::Consumer(1);
        let gave_up = crate::labs::patience::PatienceEvent::GaveUp { patience_ms: 1.0, waiting_for: vec![] };
        let no_reply = ConnectionEvent::NoReply {
            server: crate::timeline::ServerKind::Redis,
            connection: 1,
            args: vec!["XREADGROUP".into()],
            waited_ms: 5000.0,
            by: ClosedBy::Client,
        };
        let cut = ConnectionEvent::NoReply {
            server: crate::timeline::ServerKind::Redis,
            connection: 2,
            args: vec!["XREADGROUP".into()],
            waited_ms: 9.0,
            by: ClosedBy::Ordlab,
        };
        let events = vec![
            Event { t_us: 1, actor: c1, kind: EventKind::Ready },
            Event { t_us: 5000, actor: c1, kind: no_reply.event() },
            Event { t_us: 5001, actor: c1, kind: EventKind::died("exit status: 1", vec![]) },
            Event { t_us: 6000, actor: Actor::Runner, kind: gave_up.event() },
            Event { t_us: 6001, actor: c1, kind: cut.event() },
        ];
        let whys: Vec<(usize, Why)> = common(&events).iter().map(|e| (e.index, e.why)).collect();
        assert_eq!(whys, [(1, Why::GaveUpOnCommand), (2, Why::Died), (3, Why::GaveUp)]);
    }
}
