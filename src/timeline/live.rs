//! A live tap on the events this process records: while a tap is set, every event a run's
//! channels carry is also handed to it at the moment it is recorded, long before the run ends.
//! `ordlab serve` sets one around a run (through [`RunOptions::on_event`](crate::runner::RunOptions))
//! to stream the run's timeline into the page while the run goes on.
//!
//! One tap at a time per process (serve runs one variant at a time); with none set, recording
//! an event costs one atomic load more.

use super::RawEvent;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What a tap does with each event, called on the task that records it: keep it short (send
/// it on a channel).
pub type OnEvent = Arc<dyn Fn(&RawEvent) + Send + Sync>;

static TAPPED: AtomicBool = AtomicBool::new(false);
static TAP: Mutex<Option<OnEvent>> = Mutex::new(None);

/// A set tap; dropping it removes the tap.
#[must_use = "the tap is removed when this is dropped"]
pub struct Tapped(());

/// Hand every event recorded from now on to `on_event`, until the returned guard drops. A tap
/// set before is replaced.
pub fn tap(on_event: OnEvent) -> Tapped {
    *TAP.lock().unwrap_or_else(|e| e.into_inner()) = Some(on_event);
    TAPPED.store(true, Ordering::SeqCst);
    Tapped(())
}

impl Drop for Tapped {
    fn drop(&mut self) {
        TAPPED.store(false, Ordering::SeqCst);
        *TAP.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Called where a run's events are recorded (the orchestrator's event channels).
pub(crate) fn observe(event: &RawEvent) {
    if !TAPPED.load(Ordering::Relaxed) {
        return;
    }
    let tap = TAP.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(on_event) = tap {
        on_event(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Actor, EventKind, Sink};

    #[test]
    fn a_tap_sees_each_recorded_event_while_it_is_set() {
        // Other tests record events at the same time: this one counts only its own.
        let mine = |n: u32| EventKind::crashed(false, format!("live tap test {n}"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<RawEvent>();
        tx.emit(Actor::Consumer(1), mine(1));
        let kept = seen.clone();
        let tapped = tap(Arc::new(move |e: &RawEvent| {
            if matches!(&e.kind, EventKind::Crashed { detail, .. } if detail.starts_with("live tap test")) {
                kept.lock().unwrap().push(e.actor);
            }
        }));
        tx.emit(Actor::Consumer(2), mine(2));
        drop(tapped);
        tx.emit(Actor::Consumer(3), mine(3));
        assert_eq!(*seen.lock().unwrap(), vec![Actor::Consumer(2)], "only while the tap is set");
        let mut delivered = 0;
        while rx.try_recv().is_ok() {
            delivered += 1;
        }
        assert_eq!(delivered, 3, "the run's own channel still gets every event");
    }
}
