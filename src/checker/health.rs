//! Could the run be judged at all? A run that hit its deadline, or in which a process died
//! without announcing a planned crash, is unknown: its final state may be an accident.

use super::{RunVerdict, Verdict};
use crate::timeline::{Event, EventKind};

pub fn health(events: &[Event], timed_out: bool) -> RunVerdict {
    let mut v = RunVerdict::right();
    if timed_out {
        v.add(Verdict::Unknown, "the run timed out before every entry was acknowledged");
    }
    for e in events {
        if let EventKind::Crashed { planned: false, detail, .. } = &e.kind {
            v.add(Verdict::Unknown, format!("{} died unplanned: {detail}", e.actor));
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
}
