//! The orchestrator's side of a job-queue run (the priority and sorted-set kinds): it records
//! every event the worker processes and the producer send, knows which jobs are done whatever
//! wait saw them, waits for conditions with a deadline, and starts phases.
//!
//! A wait ends early (false) at the deadline or when a worker died unplanned: the run is then
//! judged unknown by [`crate::checker::health`].

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

pub struct JobRun {
    pub tx: mpsc::UnboundedSender<RawEvent>,
    rx: mpsc::UnboundedReceiver<RawEvent>,
    raw: Vec<RawEvent>,
    /// Jobs a worker has finished.
    pub done: HashSet<String>,
    deadline: tokio::time::Instant,
    /// A worker from a command line: its wire records read as the family's events.
    wire: Option<WireJobs>,
    /// Events read from a wire record, handed out before the next one is received.
    derived: VecDeque<RawEvent>,
}

impl JobRun {
    /// A run that gives up at `deadline`.
    pub fn new(deadline: tokio::time::Instant) -> JobRun {
        let (tx, rx) = mpsc::unbounded_channel();
        JobRun { tx, rx, raw: Vec::new(), done: HashSet::new(), deadline, wire: None, derived: VecDeque::new() }
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

    /// The next event, recorded; None at the deadline or when a worker died unplanned.
    pub async fn next_event(&mut self) -> Option<&RawEvent> {
        self.next_event_until(self.deadline).await.flatten()
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
                return (until < self.deadline).then_some(None);
            }
        };
        if let Some(w) = &mut self.wire {
            self.derived.extend(w.translate(&ev));
        }
        let died = matches!(ev.kind, EventKind::Crashed { planned: false, .. });
        self.record(ev);
        (!died).then(|| Some(self.raw.last().expect("just pushed")))
    }

    /// Wait until every job in `jobs` is done; false if the run had to give up.
    pub async fn wait_done(&mut self, jobs: &HashSet<String>) -> bool {
        while !jobs.is_subset(&self.done) {
            if self.next_event().await.is_none() {
                return false;
            }
        }
        true
    }

    /// Wait for an event that `wanted` accepts; false if the run had to give up.
    pub async fn wait_for(&mut self, mut wanted: impl FnMut(&RawEvent) -> bool) -> bool {
        loop {
            match self.next_event().await {
                Some(ev) if wanted(ev) => return true,
                Some(_) => {}
                None => return false,
            }
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
