//! The orchestrator's side of a job-queue run (the priority and sorted-set kinds): it records
//! every event the worker processes and the producer send, knows which jobs are done whatever
//! wait saw them, waits for conditions with a deadline, and starts phases.
//!
//! A wait ends early (false) when the lab's patience runs out (the whole run's bound, or a
//! wait's own patience: [`JobRun::with_patience`]) or when a worker died unplanned. Giving up
//! is an event of its own ([`PatienceEvent::GaveUp`]: the limit and the jobs not done), so a
//! job never served reads as "not served within the lab's patience", and the run is judged
//! unknown by [`crate::checker::health`] with that reason, or with the death's.

use crate::labs::patience::PatienceEvent;
use crate::labs::priority::wire::WireJobs;
use crate::priority_queue::PhasePlan;
use crate::priority_queue::PriorityEvent;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::collections::{HashSet, VecDeque};
use std::time::Duration;
use tokio::sync::mpsc;

/// Real milliseconds between a phase's end and the next one's start: twice the redactor's
/// burst window, so a snapshot lists each phase after the last.
pub const PHASE_GAP_MS: u64 = 40;

/// Why a run stopped waiting before its phases were over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A worker died unplanned: nothing more will be served.
    Died,
    /// The lab's patience ran out.
    Patience,
}

pub struct JobRun {
    pub tx: mpsc::UnboundedSender<RawEvent>,
    rx: mpsc::UnboundedReceiver<RawEvent>,
    raw: Vec<RawEvent>,
    /// Jobs a worker has finished.
    pub done: HashSet<String>,
    deadline: tokio::time::Instant,
    /// The whole run's bound, in ms (the patience a wait that reaches the deadline ran out of).
    bound_ms: f64,
    /// How long one wait for jobs may last, if less than the whole run's bound.
    patience: Option<Duration>,
    /// Why the run stopped waiting, once it did.
    stopped: Option<Stopped>,
    /// A worker from a command line: its wire records read as the family's events.
    wire: Option<WireJobs>,
    /// Events read from a wire record, handed out before the next one is received.
    derived: VecDeque<RawEvent>,
}

impl JobRun {
    /// A run that gives up at `deadline`.
    pub fn new(deadline: tokio::time::Instant) -> JobRun {
        let (tx, rx) = mpsc::unbounded_channel();
        let bound_ms = deadline.saturating_duration_since(tokio::time::Instant::now()).as_secs_f64() * 1000.0;
        JobRun {
            tx,
            rx,
            raw: Vec::new(),
            done: HashSet::new(),
            deadline,
            bound_ms,
            patience: None,
            stopped: None,
            wire: None,
            derived: VecDeque::new(),
        }
    }

    /// Each wait for jobs gives up after `patience` (real time), not only at the run's bound.
    pub fn with_patience(mut self, patience: Duration) -> JobRun {
        self.patience = Some(patience);
        self
    }

    /// Why the run stopped waiting, if it did.
    pub fn stopped(&self) -> Option<Stopped> {
        self.stopped
    }

    /// Read a worker's wire records (from a command line) as the family's own events.
    pub fn with_wire_jobs(mut self) -> JobRun {
        self.wire = Some(WireJobs::default());
        self
    }

    /// The orchestrator starts a phase (a timeline line of the runner).
    pub fn phase(&self, plan: PhasePlan) {
        self.tx.emit(Actor::Runner, PriorityEvent::PhaseStarted { plan }.event());
    }

    fn record(&mut self, ev: RawEvent) {
        if let Some(PriorityEvent::JobDone { job }) = ev.kind.family::<PriorityEvent>().as_ref() {
            self.done.insert(job.clone());
        }
        self.raw.push(ev);
    }

    /// The next event before `until` (Some(None) when `until` came first); None at the deadline
    /// or when a worker died unplanned.
    pub async fn next_event_until(&mut self, until: tokio::time::Instant) -> Option<Option<&RawEvent>> {
        if let Some(ev) = self.derived.pop_front() {
            self.record(ev);
            return Some(self.raw.last());
        }
        let ev = tokio::select! {
            ev = self.rx.recv() => ev?,
            _ = tokio::time::sleep_until(until.min(self.deadline)) => {
                if until < self.deadline {
                    return Some(None);
                }
                self.stopped.get_or_insert(Stopped::Patience);
                return None;
            }
        };
        if let Some(w) = &mut self.wire {
            self.derived.extend(w.translate(&ev));
        }
        let died = matches!(ev.kind, EventKind::Crashed { planned: false, .. });
        self.record(ev);
        if died {
            self.stopped.get_or_insert(Stopped::Died);
            return None;
        }
        Some(Some(self.raw.last().expect("just pushed")))
    }

    /// When a wait that starts now gives up: at its patience, or at the run's bound.
    fn wait_until(&self) -> (tokio::time::Instant, f64) {
        match self.patience {
            Some(p) if tokio::time::Instant::now() + p < self.deadline => {
                (tokio::time::Instant::now() + p, p.as_secs_f64() * 1000.0)
            }
            _ => (self.deadline, self.bound_ms),
        }
    }

    /// The lab stops waiting for `waiting_for`: a timeline line says so, with the limit.
    fn give_up(&mut self, patience_ms: f64, waiting_for: Vec<String>) {
        self.stopped.get_or_insert(Stopped::Patience);
        let kind = PatienceEvent::GaveUp { patience_ms, waiting_for }.event();
        self.record(RawEvent::now(Actor::Runner, kind));
    }

    /// Wait until every job in `jobs` is done; false if the run had to give up.
    pub async fn wait_done(&mut self, jobs: &HashSet<String>) -> bool {
        let (until, patience_ms) = self.wait_until();
        while !jobs.is_subset(&self.done) {
            if let Some(Some(_)) = self.next_event_until(until).await {
                continue;
            }
            if self.stopped != Some(Stopped::Died) {
                let mut missing: Vec<String> = jobs.difference(&self.done).cloned().collect();
                missing.sort();
                self.give_up(patience_ms, missing);
            }
            return false;
        }
        true
    }

    /// Wait for an event that `wanted` accepts; false if the run had to give up. `what` names
    /// it when the lab's patience runs out first.
    pub async fn wait_for(&mut self, what: &str, mut wanted: impl FnMut(&RawEvent) -> bool) -> bool {
        let (until, patience_ms) = self.wait_until();
        loop {
            match self.next_event_until(until).await {
                Some(Some(ev)) if wanted(ev) => return true,
                Some(Some(_)) => continue,
                _ => {}
            }
            if self.stopped != Some(Stopped::Died) {
                self.give_up(patience_ms, vec![what.to_string()]);
            }
            return false;
        }
    }

    /// Record events for [`PHASE_GAP_MS`] (real time: a snapshot's burst window is real).
    pub async fn pause(&mut self) -> bool {
        self.pause_for(Duration::from_millis(PHASE_GAP_MS)).await
    }

    /// Record events for `d`; false if the run had to give up.
    pub async fn pause_for(&mut self, d: Duration) -> bool {
        let until = tokio::time::Instant::now() + d;
        loop {
            match self.next_event_until(until).await {
                Some(Some(_)) => {}
                Some(None) => return true,
                None => return false,
            }
        }
    }

    /// Every event, once every process that sends them is stopped.
    pub fn finish(self) -> Vec<RawEvent> {
        let JobRun { tx, mut rx, mut raw, mut wire, derived, .. } = self;
        drop(tx);
        raw.extend(derived);
        while let Ok(ev) = rx.try_recv() {
            let derived = wire.as_mut().map(|w| w.translate(&ev)).unwrap_or_default();
            raw.push(ev);
            raw.extend(derived);
        }
        raw
    }
}
