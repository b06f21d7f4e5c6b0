//! ordlab's own roles consult the injector in their own process: at every timeline event they
//! report (a hook on their stdout sink: `received`, `lock_acquired`, `work_started`, …) and at
//! the named points of a handler that are no event (`after-claim`, `after-effect`, `before-ack`,
//! `after-take`). A fault that fires is announced on the role's timeline and carried out by the
//! role itself: it SIGKILLs itself, or stops itself for a while.
//!
//! One injector per process, installed when the role starts ([`install`]): a role process runs
//! one role at a time (a process reused by the explorer installs the next run's anew).

use super::injector::{Fired, Injector};
use super::process::pause_self;
use super::trigger::Occurrence;
use super::{Action, Fault, TimeScale};
use crate::lang::Words;
use crate::timeline::{Actor, EventKind, RawEvent, Sink, StdoutSink};
use std::sync::{Arc, Mutex};

/// The run's faults of this process, with the run's time scale.
type Installed = Arc<(Injector, TimeScale)>;

static INJECTOR: Mutex<Option<Installed>> = Mutex::new(None);

/// This process's faults for the run that starts (counted from zero): consulted at each event
/// it reports and at each named point.
pub fn install(faults: &[Fault], seed: u64, scale: TimeScale) {
    let installed = (!faults.is_empty()).then(|| Arc::new((Injector::new(faults.to_vec(), seed), scale)));
    *INJECTOR.lock().unwrap_or_else(|p| p.into_inner()) = installed;
    crate::timeline::on_record(at_event);
}

fn installed() -> Option<Installed> {
    INJECTOR.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The faults that fire now at named point `point` of `actor`'s handling of `job` (counted,
/// not carried out: see [`carry_out`]).
pub fn due(actor: Actor, point: &str, job: Option<&str>, delivery: Option<u64>) -> Vec<Fired> {
    let Some(installed) = installed() else { return Vec::new() };
    installed.0.fire(&Occurrence::Event { by: actor, event: point, job, delivery })
}

/// At named point `point`: every fault that fires is carried out; a kill's announcement
/// says `kill_words` (where in the handler it died).
pub fn at_point(actor: Actor, point: &str, job: Option<&str>, delivery: Option<u64>, kill_words: impl Fn() -> Words) {
    for fired in due(actor, point, job, delivery) {
        carry_out(&fired, actor, kill_words());
    }
}

/// Announce `fired` on this process's timeline and carry it out: a kill never returns (the
/// announcement of the crash says `kill_words`), a pause returns when the process runs again.
pub fn carry_out(fired: &Fired, actor: Actor, kill_words: Words) {
    fired.announce(&StdoutSink, actor);
    match fired.fault.action {
        Action::Kill => super::crash_now(&StdoutSink, actor, kill_words),
        Action::PauseMs(ms) => {
            let scale = installed().map_or(TimeScale::REAL, |i| i.1);
            if let Err(e) = pause_self(scale.duration(ms)) {
                StdoutSink.emit(actor, EventKind::crashed(false, e.to_string()));
            }
            StdoutSink.record(RawEvent::now(actor, fired.over(actor)));
        }
        // Checked before the run: a role's named points carry a kill or a pause.
        _ => {}
    }
}

/// The hook on every event the process reports.
fn at_event(event: &RawEvent) {
    let Some(installed) = installed() else { return };
    let injector = &installed.0;
    if event.kind.family::<super::FaultEvent>().is_some() || matches!(event.kind, EventKind::Crashed { .. }) {
        return;
    }
    let (tag, job, delivery) = described(&event.kind);
    let occurrence = Occurrence::Event { by: event.actor, event: &tag, job: job.as_deref(), delivery };
    for fired in injector.fire(&occurrence) {
        carry_out(&fired, event.actor, kill_words(&event.kind, &tag));
    }
}

/// An event's `kind` tag, the job it is about (a job's name, or an order event's type) and the
/// delivery count it carries, as its JSON says.
fn described(kind: &EventKind) -> (String, Option<String>, Option<u64>) {
    let json = serde_json::to_value(kind).unwrap_or_default();
    let tag = json.get("kind").and_then(|k| k.as_str()).unwrap_or_default().to_string();
    let job = match json.get("job") {
        Some(serde_json::Value::String(j)) => Some(j.clone()),
        Some(serde_json::Value::Object(o)) => o.get("type").and_then(|t| t.as_str()).map(str::to_string),
        _ => None,
    };
    let delivery = ["deliveries", "delivery"].iter().find_map(|k| json.get(*k).and_then(|d| d.as_u64()));
    (tag, job, delivery)
}

/// Where a role that kills itself at `tag` died: a consumer's receive in its own words.
fn kill_words(kind: &EventKind, tag: &str) -> Words {
    match kind {
        EventKind::Received { job, .. } => {
            let t = &job.event_type;
            Words::new(format!("after receiving {t}, before XACK"), format!("sau khi nhận {t}, trước XACK"))
        }
        _ => Words::new(format!("right after its {tag}"), format!("ngay sau {tag}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Job;

    #[test]
    fn an_event_says_its_tag_its_job_and_its_delivery() {
        let received =
            EventKind::Received { entry_id: "1-0".into(), job: Job::new(42, "created", 1), deliveries: Some(2) };
        assert_eq!(described(&received), ("received".into(), Some("created".into()), Some(2)));
        assert_eq!(described(&EventKind::Ready), ("ready".into(), None, None));
        assert_eq!(kill_words(&received, "received").en, "after receiving created, before XACK");
    }
}
