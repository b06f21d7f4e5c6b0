//! The steps a library lab places besides its wire faults, each at a moment it can name, never
//! by timing: jobs enqueued while a worker's command is held at the interposer (its `hold`),
//! jobs enqueued the moment another job's handler starts (the sink's answer to its `start`
//! waits), and a worker stopped (SIGKILL or SIGTERM) at a job's start.
//!
//! The enqueue command runs again for those jobs, through an interposer of the producer's, so
//! the timeline shows its commands between the held command and its release.

use super::{HoldAt, LibrarySpec, OnStart, StopSignal, When};
use crate::fault::trigger::command_word;
use crate::fault::Occurrence;
use crate::interposer::{Held, WorkerTap};
use crate::labs::library::adapter::{run_once, Call};
use crate::labs::library::events::LibraryEvent;
use crate::roles::command_worker::Signaller;
use crate::side_effect::http::{Observer, Performed};
use crate::timeline::vocabulary::Vocabulary;
use crate::timeline::{Actor, RawEvent};
use futures::FutureExt;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::mpsc;

/// Where the adapter's commands run: what [`Call`] borrows, owned.
pub struct Place {
    pub library: String,
    pub redis_url: String,
    pub pg_config: String,
    pub env: Vec<(String, String)>,
}

/// The placed steps of one run, shared by the sink's observer, the workers' gates and the run.
pub struct Stage {
    place: OnceLock<Place>,
    enqueue: Vec<String>,
    /// Each job's entry of `ORDLAB_JOBS`, in the lab's order.
    jobs: Vec<(String, serde_json::Value)>,
    /// Jobs enqueued when the key's handler starts.
    at_start: BTreeMap<String, Vec<String>>,
    /// Jobs enqueued while a held command waits.
    at_hold: Vec<String>,
    /// The scenario's workers (by index) started when a job starts, and where to say so.
    starts_at: BTreeMap<String, Vec<usize>>,
    starts: mpsc::UnboundedSender<usize>,
    /// The scenario's worker `W<n>` stopped when its job starts.
    on_start: BTreeMap<u32, OnStart>,
    /// Each worker's signaller and its side of the interposer (whose faults a job's start,
    /// end or planned failure may trigger).
    workers: Mutex<BTreeMap<u32, (Signaller, Arc<WorkerTap>)>>,
    /// Steps done (each is done once).
    done: Mutex<BTreeSet<String>>,
    tx: mpsc::UnboundedSender<RawEvent>,
    /// Why a step could not be done (an enqueue that failed): the run fails with it.
    errors: Mutex<Vec<crate::error::Error>>,
}

impl Stage {
    /// The stage, and where the run learns which of the scenario's workers to start now.
    pub fn new(
        spec: &LibrarySpec,
        enqueue: Vec<String>,
        jobs: Vec<(String, serde_json::Value)>,
        tx: mpsc::UnboundedSender<RawEvent>,
    ) -> (Arc<Stage>, mpsc::UnboundedReceiver<usize>) {
        let mut at_start: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut at_hold = Vec::new();
        for j in &spec.jobs {
            match &j.when {
                Some(When::Start(first)) => at_start.entry(first.clone()).or_default().push(j.key.clone()),
                Some(When::Hold) => at_hold.push(j.key.clone()),
                None => {}
            }
        }
        let on_start = spec
            .workers
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.on_start.clone().map(|s| (i as u32 + 1, s)))
            .collect();
        let mut starts_at: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, w) in spec.workers.iter().enumerate() {
            if let Some(job) = &w.starts_at {
                starts_at.entry(job.clone()).or_default().push(i);
            }
        }
        let (starts, to_start) = mpsc::unbounded_channel();
        let stage = Arc::new(Stage {
            place: OnceLock::new(),
            starts_at,
            starts,
            enqueue,
            jobs,
            at_start,
            at_hold,
            on_start,
            workers: Mutex::default(),
            done: Mutex::default(),
            tx,
            errors: Mutex::default(),
        });
        (stage, to_start)
    }

    /// Where the adapter's commands run (set once the sink's URL is known).
    pub fn set_place(&self, place: Place) {
        let _ = self.place.set(place);
    }

    pub fn place(&self) -> &Place {
        self.place.get().expect("the place is set before any step")
    }

    /// Run the enqueue command for `keys` (all jobs when None) as `actor`, through an
    /// interposer whose exchanges go to the run's timeline.
    pub async fn enqueue(&self, keys: Option<&[String]>, actor: Actor) -> Result<(), crate::error::Error> {
        let place = self.place();
        let chosen: Vec<serde_json::Value> = self
            .jobs
            .iter()
            .filter(|(k, _)| keys.is_none_or(|keys| keys.contains(k)))
            .map(|(_, v)| v.clone())
            .collect();
        let mut env = place.env.clone();
        env.retain(|(k, _)| k != "ORDLAB_JOBS");
        env.push(("ORDLAB_JOBS".into(), serde_json::Value::Array(chosen).to_string()));
        let call =
            Call { library: &place.library, redis_url: &place.redis_url, pg_config: &place.pg_config, env: &env };
        run_once(&call, "enqueue", &self.enqueue, actor, Some(self.tx.clone())).await.map(|_| ())
    }

    /// The jobs enqueued with the others, before the run.
    pub fn first_jobs(&self, spec: &LibrarySpec) -> Vec<String> {
        spec.jobs.iter().filter(|j| j.when.is_none()).map(|j| j.key.clone()).collect()
    }

    /// Worker `W<n>` can be signalled, and its faults asked, from now on.
    pub fn register(&self, n: u32, signaller: Signaller, tap: Arc<WorkerTap>) {
        self.workers.lock().unwrap().insert(n, (signaller, tap));
    }

    /// Has worker `W<n>`'s handler started a job? (It fetched: it is past its first wait.)
    pub fn at_work(&self, n: u32) -> bool {
        self.done.lock().unwrap().contains(&format!("at-work:{n}"))
    }

    /// The first step not done yet of these: true once, to whoever asks first.
    fn first_time(&self, step: String) -> bool {
        self.done.lock().unwrap().insert(step)
    }

    fn failed(&self, e: crate::error::Error) {
        self.errors.lock().unwrap().push(e);
    }

    /// The first step that could not be done, if any.
    pub fn error(&self) -> Option<crate::error::Error> {
        self.errors.lock().unwrap().drain(..).next()
    }

    fn emit(&self, actor: Actor, e: LibraryEvent) {
        let _ = self.tx.send(RawEvent::now(actor, e.event()));
    }

    /// The sink's observer: each effect a worker's handler reports (`start`, `end`, `fail`) is
    /// a named point of that worker's run, where its faults may fire (`{ event = "start", job =
    /// "job-1", action = { pause_ms = 2500 } }`); at a job's first start, its `when = { start
    /// }` jobs are enqueued and its worker stopped as the lab says; all before the handler
    /// hears back.
    pub fn observer(self: &Arc<Stage>) -> Observer {
        let stage = self.clone();
        Arc::new(move |p: Performed| {
            let stage = stage.clone();
            async move { stage.on_effect(p).await }.boxed()
        })
    }

    async fn on_effect(&self, p: Performed) {
        if let Actor::Worker(n) = p.actor {
            let tap = self.workers.lock().unwrap().get(&n).map(|(_, t)| t.clone());
            if let Some(tap) = tap {
                tap.at(&Occurrence::Event { by: p.actor, event: &p.effect, job: Some(&p.job), delivery: None });
            }
        }
        if p.effect != crate::labs::library::checker::START {
            return;
        }
        if let Actor::Worker(n) = p.actor {
            self.first_time(format!("at-work:{n}"));
        }
        let first = self.first_time(format!("start:{}", p.job));
        for &i in self.starts_at.get(&p.job).filter(|_| first).into_iter().flatten() {
            let _ = self.starts.send(i);
        }
        if let Some(jobs) = self.at_start.get(&p.job).filter(|_| first) {
            match self.enqueue(Some(jobs), Actor::Producer).await {
                Ok(()) => {
                    self.emit(Actor::Producer, LibraryEvent::EnqueuedAtStart { job: p.job.clone(), jobs: jobs.clone() })
                }
                Err(e) => self.failed(e),
            }
        }
        let Actor::Worker(n) = p.actor else { return };
        let Some(stop) = self.on_start.get(&n).filter(|s| s.job == p.job) else { return };
        if !self.first_time(format!("stop:{n}")) {
            return;
        }
        let Some(signaller) = self.workers.lock().unwrap().get(&n).map(|(s, _)| s.clone()) else { return };
        match stop.signal {
            StopSignal::Term => {
                self.emit(p.actor, LibraryEvent::Stopped { signal: "SIGTERM".into(), job: p.job.clone() });
                signaller.send(nix::sys::signal::Signal::SIGTERM);
            }
        }
    }

    /// Serve a worker's gate: every command goes on at once, but the `nth` one `hold` names
    /// waits until the `when = "hold"` jobs are enqueued.
    pub fn serve_gate(self: &Arc<Stage>, actor: Actor, hold: HoldAt, mut gate: mpsc::UnboundedReceiver<Held>) {
        let stage = self.clone();
        tokio::spawn(async move {
            let mut armed: HashSet<(bool, u32)> = HashSet::new();
            let mut seen = 0;
            while let Some(held) = gate.recv().await {
                let word = command_word(held.server, &held.args).unwrap_or_default();
                let conn = (held.server == crate::timeline::ServerKind::Redis, held.connection);
                if hold.after.as_ref().is_some_and(|a| a.eq_ignore_ascii_case(word)) {
                    armed.insert(conn);
                }
                let named = hold.command.eq_ignore_ascii_case(word) && (hold.after.is_none() || armed.remove(&conn));
                if named {
                    seen += 1;
                }
                if !named || seen != hold.nth {
                    let _ = held.release.send(());
                    continue;
                }
                let stage = stage.clone();
                let command = held.args.first().cloned().unwrap_or_default();
                tokio::spawn(async move {
                    let jobs = stage.at_hold.clone();
                    stage.emit(actor, LibraryEvent::CommandHeld { command: command.clone(), jobs: jobs.clone() });
                    if let Err(e) = stage.enqueue(Some(&jobs), Actor::Producer).await {
                        stage.failed(e);
                    }
                    stage.emit(actor, LibraryEvent::CommandReleased { command });
                    let _ = held.release.send(());
                });
            }
        });
    }
}
