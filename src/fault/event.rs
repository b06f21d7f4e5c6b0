//! Every fault that fires is a timeline event: which declared fault (the whole fault, so a
//! saved run is re-judged without its scenario's help), whom it hit, when, and the how-many-th
//! occurrence of its trigger it was. A fault with a duration (a pause, a refusal, a restart)
//! also records its end.
//!
//! A declared fault that must fire and never did makes the run unknown ([`unfired`]): the lab
//! did not show what it says it shows.

use super::declare::Fault;
use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, Event};
use serde::{Deserialize, Serialize};

/// What the fault layer did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultEvent {
    /// `fault` fired at the `occurrence`-th match of its trigger.
    FaultFired { fault: Fault, occurrence: u32 },
    /// A fault with a duration is over: the paused process continues (SIGCONT), new
    /// connections are accepted again, the restarted server answers.
    FaultOver { fault: Fault },
}

impl Vocabulary for FaultEvent {
    const KINDS: &'static [&'static str] = &["fault_fired", "fault_over"];

    fn line(&self, _actor: Actor, w: &Wording) -> Option<String> {
        Some(match self {
            FaultEvent::FaultFired { fault, .. } => {
                format!("{} {}", pick(w.lang, "fault:", "lỗi cài sẵn:"), fault.label().get(w.lang))
            }
            FaultEvent::FaultOver { fault } => {
                format!("{} {}", pick(w.lang, "fault over:", "hết lỗi cài sẵn:"), fault.label().get(w.lang))
            }
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        match self {
            FaultEvent::FaultFired { fault, .. } => {
                Drawing::Mark(Glyph::Failed, fault.action.words().get(w.lang).to_string())
            }
            FaultEvent::FaultOver { .. } => Drawing::Nothing,
        }
    }
}

/// The declared faults (of those that must fire) that no `fault_fired` event of `events`
/// shows, each as the reason that makes its run unknown. A fault declared twice must fire twice.
pub fn unfired(declared: &[Fault], events: &[Event]) -> Vec<String> {
    let mut fired: Vec<Fault> = events
        .iter()
        .filter_map(|e| match e.kind.family::<FaultEvent>() {
            Some(FaultEvent::FaultFired { fault, .. }) => Some(fault),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for f in declared.iter().filter(|f| f.must_fire()) {
        match fired.iter().position(|g| same_fault(g, f)) {
            Some(i) => {
                fired.remove(i);
            }
            None => out.push(format!("the fault {} never fired", f.label().en)),
        }
    }
    out
}

/// Is `fired` (as its event records it, a group's `worker = n` resolved to the process) the
/// declared fault `declared`?
fn same_fault(fired: &Fault, declared: &Fault) -> bool {
    use super::declare::Target;
    fired == declared
        || matches!(declared.target, Target::Index(_) | Target::Any)
            && Fault { target: declared.target, ..fired.clone() } == *declared
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Moment, Target};

    fn fired(f: &Fault) -> Event {
        Event {
            t_us: 0,
            actor: Actor::Worker(1),
            kind: FaultEvent::FaultFired { fault: f.clone(), occurrence: 1 }.event(),
        }
    }

    #[test]
    fn the_events_decode_back_and_word_their_fault() {
        let f = Fault::kill_at(Target::Process(Actor::Worker(1)), "BLPOP", 1, Moment::Reply);
        crate::timeline::vocabulary::check_kinds(&[
            FaultEvent::FaultFired { fault: f.clone(), occurrence: 1 },
            FaultEvent::FaultOver { fault: f.clone() },
        ]);
        let w = Wording { lang: crate::lang::Lang::En, many_orders: false, redact: Default::default() };
        let line = FaultEvent::FaultFired { fault: f, occurrence: 1 }.line(Actor::Worker(1), &w);
        assert_eq!(line.as_deref(), Some("fault: W1: SIGKILL at the reply to its BLPOP #1"));
    }

    #[test]
    fn a_declared_fault_that_never_fired_is_named_and_a_group_s_index_matches_its_process() {
        let any = Fault::kill_at(Target::Index(2), "SET", 1, Moment::Send);
        let w2 = any.resolved(Actor::Worker(2));
        assert!(unfired(std::slice::from_ref(&any), &[fired(&w2)]).is_empty());
        let reasons = unfired(&[any.clone(), any.clone()], &[fired(&w2)]);
        assert_eq!(reasons, ["the fault process 2: SIGKILL at the send of its SET #1 never fired"]);
        let sampled = Fault { probability: Some(0.5), ..any };
        assert!(unfired(&[sampled], &[]).is_empty(), "a sampled fault may not fire");
        let other = Fault::kill_at(Target::Process(Actor::Worker(1)), "SET", 1, Moment::Send);
        assert_eq!(unfired(&[other], &[fired(&w2)]).len(), 1, "W2's kill is not W1's");
    }
}
