//! Could the run be judged at all? A run that hit its deadline, in which a process died
//! without announcing a planned crash, whose worker sent a frame over a server's limit (the
//! interposer closed that connection), or whose worker was cut when it ran out of patience
//! (stopped mid-entry), is unknown: its final state may be an accident.

use super::{RunVerdict, Verdict};
use crate::interposer::limits::WireEvent;
use crate::roles::patience::PatienceEvent;
use crate::timeline::{Event, EventKind};

pub fn health(events: &[Event], timed_out: bool) -> RunVerdict {
    let mut v = RunVerdict::right();
    if timed_out {
        v.add(Verdict::Unknown, "the run timed out before every entry was acknowledged");
    }
    for e in events {
        match &e.kind {
            EventKind::Crashed { planned: false, detail, .. } => {
                v.add(Verdict::Unknown, format!("{} died unplanned: {detail}", e.actor));
            }
            EventKind::Family(f) => {
                if let Some(refused) = f.decode::<WireEvent>() {
                    v.add(Verdict::Unknown, refused.reason(e.actor));
                }
                if let Some(cut) = f.decode::<PatienceEvent>() {
                    v.add(Verdict::Unknown, cut.reason(e.actor));
                }
            }
            _ => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Actor;

    fn crash(planned: bool) -> Event {
        Event { t_us: 0, actor: Actor::Consumer(1), kind: EventKind::crashed(planned, "x") }
    }

    #[test]
    fn timeouts_and_unplanned_deaths_are_unknown_planned_crashes_are_not() {
        assert_eq!(health(&[], false), RunVerdict::right());
        assert_eq!(health(&[], true).verdict, Verdict::Unknown);
        assert_eq!(health(&[crash(false)], false).reasons, ["C1 died unplanned: x"]);
        assert_eq!(health(&[crash(true)], false), RunVerdict::right());
    }

    #[test]
    fn a_frame_refused_at_the_wire_makes_the_run_unknown_naming_the_limit() {
        use crate::interposer::limits::Breach;
        use crate::timeline::vocabulary::Vocabulary as _;
        let kind = Breach::RedisBulk { len: "1099511627776".into() }.event(1).event();
        let v = health(&[Event { t_us: 0, actor: Actor::Consumer(1), kind }], false);
        assert_eq!(v.verdict, Verdict::Unknown);
        assert!(v.reasons[0].starts_with("C1 sent a bulk of 1099511627776 bytes"), "{:?}", v.reasons);
        assert!(v.reasons[0].contains("proto-max-bulk-len"), "{:?}", v.reasons);
    }
}
