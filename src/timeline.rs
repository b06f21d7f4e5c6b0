//! The record of a run: typed events `{t, actor, kind}` from every process, on one clock.
//! Checkers and reporters read only this record (plus the final rows), so a saved run can be
//! re-judged and re-rendered without servers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Who did something. Serialized as a short label: `producer`, `C1`, `D1`, `reaper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Actor {
    /// The orchestrator itself (set-up and checks made outside any role).
    Runner,
    Producer,
    /// Consumer process number `n` (1-based), shown as `C<n>`.
    Consumer(u32),
    /// Outbox dispatcher `n`, shown as `D<n>`.
    Dispatcher(u32),
    Reaper,
    /// A SQL session of a two-session race (`A`, `B`), shown as its letter.
    Session(char),
    /// A list-queue worker process `n` (1-based), shown as `W<n>` (the seed's workers).
    Worker(u32),
    /// Moves due retries back to a list queue.
    Scheduler,
    /// The side-effect sink: the outside party that receives e-mails, charges, API calls.
    Sink,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Runner => f.write_str("runner"),
            Actor::Producer => f.write_str("producer"),
            Actor::Consumer(n) => write!(f, "C{n}"),
            Actor::Dispatcher(n) => write!(f, "D{n}"),
            Actor::Reaper => f.write_str("reaper"),
            Actor::Session(c) => write!(f, "{c}"),
            Actor::Worker(n) => write!(f, "W{n}"),
            Actor::Scheduler => f.write_str("scheduler"),
            Actor::Sink => f.write_str("sink"),
        }
    }
}

impl From<Actor> for String {
    fn from(a: Actor) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for Actor {
    type Error = String;
    fn try_from(s: String) -> Result<Actor, String> {
        let numbered = |prefix: &str| s.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok());
        match s.as_str() {
            "runner" => Ok(Actor::Runner),
            "producer" => Ok(Actor::Producer),
            "reaper" => Ok(Actor::Reaper),
            "scheduler" => Ok(Actor::Scheduler),
            "sink" => Ok(Actor::Sink),
            "A" => Ok(Actor::Session('A')),
            "B" => Ok(Actor::Session('B')),
            _ => numbered("C")
                .map(Actor::Consumer)
                .or_else(|| numbered("D").map(Actor::Dispatcher))
                .or_else(|| numbered("W").map(Actor::Worker))
                .ok_or_else(|| format!("unknown actor {s:?}")),
        }
    }
}

/// One business event as it travels through the stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub order: i64,
    /// Business event type, which is also the status it writes (`created`, `paid`, …).
    #[serde(rename = "type")]
    pub event_type: String,
    /// Business version born with the event (created = 1, paid = 2, shipped = 3).
    pub version: i64,
}

impl Job {
    pub fn new(order: i64, event_type: &str, version: i64) -> Job {
        Job { order, event_type: event_type.to_string(), version }
    }
}

impl fmt::Display for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (v={})", self.event_type, self.version)
    }
}

/// The priority of a job on a priority queue, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Critical,
    Normal,
    Low,
}

impl Priority {
    /// Highest first: index 0 is critical.
    pub const ALL: [Priority; 3] = [Priority::Critical, Priority::Normal, Priority::Low];

    /// 0 for critical, 1 for normal, 2 for low.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A phase of a priority-queue run, as the orchestrator starts it (the words of its timeline
/// line come from these figures).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhasePlan {
    /// Jobs queued at once before the worker starts, per priority (critical, normal, low).
    Backlog { jobs: [u32; 3] },
    /// One critical job while the worker is blocked in `blocked_in` (the worst moment for
    /// a loop that blocks on one stream at a time), or at a random moment (`after_ms`).
    Probe {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocked_in: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_ms: Option<f64>,
    },
    /// Light traffic: `jobs[0]` critical jobs one every `every_ms`, the normal and low ones
    /// at its start.
    Trickle { every_ms: f64, jobs: [u32; 3] },
    /// `critical` critical jobs at once, nothing else queued: how fast critical alone goes.
    Burst { critical: u32 },
    /// Nothing queued for `ms` while the server counts the worker's commands.
    Idle { ms: f64 },
    /// `critical` critical jobs kept waiting for `ms` (one queued for each one taken), `low`
    /// low jobs queued at its start; with `tau_ms`, a job's score is its priority minus its
    /// queueing time in units of `tau_ms` (aging).
    Flood {
        critical: u32,
        low: u32,
        ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tau_ms: Option<f64>,
    },
    /// Worker `by` starts after a crash and takes over the queue.
    Takeover { by: String },
}

impl PhasePlan {
    pub const ALIGNED_PROBE: &'static str = "aligned-probe";
    pub const RANDOM_PROBE: &'static str = "probe";

    /// The short name jobs carry (`phase` of [`EventKind::JobQueued`]).
    pub fn id(&self) -> &'static str {
        match self {
            PhasePlan::Backlog { .. } => "backlog",
            PhasePlan::Probe { blocked_in: Some(_), .. } => Self::ALIGNED_PROBE,
            PhasePlan::Probe { .. } => Self::RANDOM_PROBE,
            PhasePlan::Trickle { .. } => "trickle",
            PhasePlan::Burst { .. } => "burst",
            PhasePlan::Idle { .. } => "idle",
            PhasePlan::Flood { .. } => "flood",
            PhasePlan::Takeover { .. } => "takeover",
        }
    }
}

/// A phase's name as a job line gives it.
pub fn phase_label(phase: &str, lang: crate::lang::Lang) -> &str {
    use crate::lang::Lang;
    match (phase, lang) {
        (_, Lang::En) => phase,
        ("backlog", Lang::Vi) => "tồn đọng",
        ("aligned-probe", Lang::Vi) => "thăm dò lúc tệ nhất",
        ("probe", Lang::Vi) => "thăm dò",
        ("trickle", Lang::Vi) => "nhỏ giọt",
        ("burst", Lang::Vi) => "dồn",
        ("idle", Lang::Vi) => "rảnh",
        ("flood", Lang::Vi) => "dồn dập",
        ("ties", Lang::Vi) => "cùng điểm",
        ("arrivals", Lang::Vi) => "đến lúc ngẫu nhiên",
        (other, Lang::Vi) => other,
    }
}

/// What happened. Each variant is one line (or one mark) of a timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A consumer process is connected and about to block in XREADGROUP.
    Ready,
    /// The producer sent XADD and the entry was accepted.
    Published { entry_id: String, job: Job, attempt: u32 },
    /// A publish attempt failed (injected fault); `retry_in_ms` is the scheduled retry, if any.
    PublishFailed { job: Job, attempt: u32, retry_in_ms: Option<f64>, reason: String },
    /// A consumer got an entry from the group. `deliveries` is the server's delivery count when known.
    Received { entry_id: String, job: Job, deliveries: Option<u64> },
    /// Handler work (an injected sleep standing in for an API call or a DB write) begins.
    WorkStarted { entry_id: String, ms: f64 },
    /// Lock taken after `tries` attempts of `SET key token NX PX ttl`, stamped when the reply
    /// arrived; `ttl_ms` as the scenario gives it, `px_ms` as sent (time-scaled), and the
    /// successful SET's round trip (it was sent `round_trip_us` before the stamp).
    LockAcquired {
        key: String,
        tries: u32,
        ttl_ms: u64,
        #[serde(default)]
        px_ms: u64,
        #[serde(default)]
        round_trip_us: i64,
    },
    /// Lock release, stamped when it was sent; `released` is the server's answer (1 ours and
    /// deleted, 0 expired or not ours).
    LockReleased { key: String, method: String, released: i64 },
    /// The handler wrote the row. `version` is shown for strategies that write one conditionally.
    Wrote { entry_id: String, order: i64, status: String, version: Option<i64>, rows: u64 },
    /// The handler inserted the order's first row (no row existed).
    Inserted { entry_id: String, order: i64, status: String, version: i64 },
    /// A write the server refused (for example a duplicate key): the event's change is lost.
    WriteFailed { entry_id: String, order: i64, status: String, error: String },
    /// A reorder buffer holds the entry until version `waiting_for` of its order arrives.
    Held { entry_id: String, job: Job, waiting_for: i64 },
    /// A reorder buffer dropped an entry older than what it already applied.
    Dropped { entry_id: String, job: Job, reason: String },
    /// A reorder buffer stopped waiting for a version that never came and applies what it holds.
    GapTimeout { order: i64, missing_version: i64, held_ms: f64 },
    /// A fan-out reader put the entry in the in-memory queue of `worker` (`C1/#42`: the task
    /// of reader C1 for order 42), which applies its queue in order.
    Queued { entry_id: String, worker: String },
    /// XACK sent for the entry.
    Acked { entry_id: String },
    /// The process died. `planned` tells an injected crash from an unplanned one.
    Crashed { planned: bool, detail: String },
    /// A SQL session sent a statement (it may then wait for a row lock).
    SqlSent { case: u32, order: i64, statement: String },
    /// The statement's outcome (`UPDATE 1`, `COMMIT`, or the server's error) and how long it waited.
    SqlDone { case: u32, order: i64, outcome: String, waited_ms: f64 },
    /// One polling round of an outbox dispatcher: rows published, failed, and held back
    /// behind an earlier failure of the same key.
    OutboxRound { round: u32, published: Vec<i64>, failed: Vec<i64>, held_back: Vec<i64> },
    /// The replica stops receiving the primary's replication stream (`how`: the mechanism).
    LagWindow { how: String },
    /// A server process was killed (`server`: `primary` or `replica`, `signal`: e.g. SIGKILL).
    ServerKilled { server: String, signal: String },
    /// The replica became the primary (`REPLICAOF NO ONE`), `behind_bytes` of replication
    /// stream short of the dead primary.
    ReplicaPromoted { behind_bytes: i64 },
    /// The orchestrator starts a phase of a priority-queue run.
    PhaseStarted { plan: PhasePlan },
    /// A job was put on its priority queue (a stream per priority, or a sorted set with
    /// `score`). `traced` jobs get a line of their own in the text timeline; the others are
    /// counted in the notes.
    JobQueued {
        job: String,
        priority: Priority,
        phase: String,
        #[serde(default)]
        traced: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        score: Option<f64>,
    },
    /// A worker's read of `queues` (up to `count` jobs from each) returned `got[i]` jobs from
    /// `queues[i]` after waiting `waited_ms` (a blocked read returns when something arrives or
    /// its BLOCK ends). `read` is the command as sent.
    QueueRead { read: String, queues: Vec<Priority>, count: u32, got: Vec<u32>, waited_ms: f64 },
    /// A worker starts handling a priority job it took, `waited_ms` after the job was queued
    /// (when the job says when that was).
    PriorityJobTaken {
        job: String,
        priority: Priority,
        phase: String,
        #[serde(default)]
        traced: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited_ms: Option<f64>,
    },
    /// The worker finished the job (and acknowledged it, on a stream).
    JobDone { job: String },
    /// A job's lease ended before it was done: it is back in the queue, to be taken again.
    JobRequeued { job: String },
    /// The producer pushed a job onto a list queue (`LPUSH`); `queue` is the queue's hash tag.
    JobPushed { job_id: String, job: Job, queue: String },
    /// The producer pushed `jobs` jobs onto `queues` list queues at once (one LPUSH each).
    JobsPushed { jobs: u64, queues: u32 },
    /// A worker moved a job from its list queue to its processing list (`BLMOVE`).
    JobTaken { job_id: String, job: Job, queue: String },
    /// A worker recorded the job's effect (`RPUSH` onto its queue's applied list).
    JobApplied { job_id: String, job: Job, queue: String },
    /// A queue command failed; the worker sleeps `sleep_ms`, then tries again (the seed's
    /// `catch`). A job it held stays in its processing list.
    QueueError { command: String, error: String, sleep_ms: f64 },
    /// A worker took its stop marker: `jobs` done, `cpu_ms` of its own CPU time. Stamped at
    /// its last job.
    WorkerDone { jobs: u64, cpu_ms: f64 },
    /// Resharding: hash slot `slot` set IMPORTING on master `to`, MIGRATING on `from`.
    SlotMigrating { slot: u16, from: String, to: String },
    /// The slot's `keys` keys moved from `from` to `to` with MIGRATE.
    SlotKeysMoved { slot: u16, keys: u64, from: String, to: String },
    /// `CLUSTER SETSLOT <slot> NODE` on every master: `node` owns the slot.
    SlotOwned { slot: u16, node: String },
    /// A role lost its primary and found the new one (`server`: `replica`, promoted), where
    /// it goes on; a consumer first re-reads its own pending entries there.
    Reconnected { server: String },
    /// A job was pushed to a list (`list`: `queue:default`); `len` is the list's length after
    /// the push, as the server replied.
    Pushed { job: String, list: String, len: i64 },
    /// A worker took a job from a list queue (`via`: the command or script), leased until
    /// `lease_ms` from now when it has a lease.
    Taken { job: String, via: String, lease_ms: Option<f64> },
    /// A worker finished a job; `removed` is what LREM returned for its processing entry
    /// (0: the entry was already gone; None: nothing to remove, the job was popped).
    ListJobDone { job: String, removed: Option<i64> },
    /// The handler failed on attempt `attempt` (1-based).
    ListJobFailed { job: String, attempt: u32, error: String },
    /// A failed job was put aside for another attempt: pushed to `to` (`queue:retry`), or
    /// scheduled `delay_ms` later in the delayed set.
    RetryScheduled { job: String, attempt: u32, to: String, delay_ms: Option<f64> },
    /// A job went to the dead-letter list (`reason`: `max attempts`, `poison`).
    ListDeadLettered { job: String, reason: String },
    /// A payload that is not a job (it does not parse); the worker then slept `slept_ms`.
    Poison { payload: String, slept_ms: f64 },
    /// The reaper put a job whose lease had run out `expired_ms_ago` back in the queue.
    Requeued { job: String, expired_ms_ago: i64 },
    /// The scheduler moved a due retry back to the queue, `late_ms` after its due time.
    MovedDue { job: String, late_ms: i64 },
    /// A killed server is up again on its own data files, holding `jobs` jobs, after `load_ms`.
    ServerRestarted { jobs: i64, load_ms: f64 },
    /// The server evicted the key `key` whole, with `jobs` jobs in it (the producer saw its
    /// next push answer a length of 1).
    Evicted { key: String, jobs: i64 },
    /// The server refused a push (`error`, e.g. OOM); `refusals` counts them so far.
    Refused { job: String, error: String, refusals: i64 },
    /// The side-effect sink received a request for `effect` of `job` from `requested_by`
    /// (placed at the moment the caller sent it) and `outcome` is what it did.
    Effect {
        job: String,
        effect: String,
        requested_by: Actor,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idem_key: Option<String>,
        outcome: EffectOutcome,
    },
    /// The producer sent `XADD` for job `job` (a queue job with a stable id, not an order
    /// event). `reply_lost`: the injected fault made the producer act as if the reply never
    /// came (it will retry). `same_id`: the server answered with an ID it had already given
    /// this job (`XADD … IDMP`: not added again).
    JobPublished { entry_id: String, job: String, attempt: u32, reply_lost: bool, same_id: bool },
    /// A worker got job `job` from the group; `deliveries` is the server's delivery count.
    JobReceived { entry_id: String, job: String, deliveries: u64 },
    /// One command a job handler sent (Redis or SQL) and the server's answer, as the seed's
    /// code sends it: `SET idem:job-1 1 NX EX 86400 → OK`.
    JobStep { job: String, command: String, result: String },
    /// The handler decided not to run the job (it is then acknowledged).
    JobSkipped { job: String, reason: SkipReason },
    /// XACK sent for the job's entry.
    JobAcked { entry_id: String, job: String },
    /// The handler failed; a retryable failure is left pending for a retry.
    JobFailed { job: String, reason: FailReason, retryable: bool },
    /// The job was moved to the dead-letter queue (and acknowledged).
    DeadLettered { job: String, reason: FailReason },
}

/// Why a job handler skipped a job (and acknowledged it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// Its idempotency key (or unique row) exists: `AlreadyProcessed`.
    AlreadyProcessed,
    /// The state it checks says the work is done (`sent`, `completed`).
    AlreadyDone,
}

/// Why a job handler failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailReason {
    /// The partner refused the request (injected 503): nothing happened.
    PartnerRefused,
    /// The partner's reply was lost (injected timeout): the effect may have happened.
    ReplyLost,
    /// Another worker holds the job's lease: leave it pending and look again later.
    LeaseHeld,
    /// The payload does not parse.
    Unparseable,
    /// The job is refused for good (an unknown job type): not worth a retry.
    Rejected,
    /// It failed this many times: given up.
    AttemptsExhausted,
    /// It was delivered this many times without finishing (workers kept dying on it).
    DeliveriesExhausted,
}

/// What the side-effect sink did with one request (see `crate::side_effect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectOutcome {
    /// The effect happened (the caller may still have been told it failed: a lost reply).
    Applied,
    /// Same idempotency key as an earlier request: its result returned, nothing happened.
    Replayed,
    /// Injected failure before anything happened.
    Refused,
}

/// The events of list-queue labs (seed 003) as one pattern, for the places that word or draw
/// them in a file of their own: `list_queue_events!() => …`.
#[macro_export]
macro_rules! list_queue_events {
    () => {
        $crate::timeline::EventKind::Pushed { .. }
            | $crate::timeline::EventKind::Taken { .. }
            | $crate::timeline::EventKind::ListJobDone { .. }
            | $crate::timeline::EventKind::ListJobFailed { .. }
            | $crate::timeline::EventKind::RetryScheduled { .. }
            | $crate::timeline::EventKind::ListDeadLettered { .. }
            | $crate::timeline::EventKind::Poison { .. }
            | $crate::timeline::EventKind::Requeued { .. }
            | $crate::timeline::EventKind::MovedDue { .. }
            | $crate::timeline::EventKind::ServerRestarted { .. }
            | $crate::timeline::EventKind::Evicted { .. }
            | $crate::timeline::EventKind::Refused { .. }
    };
}

/// The reason of a `publish_failed` when the primary died under the XADD (the `failover` lab).
pub const PRIMARY_GONE: &str = "the primary is gone";

/// The `crashed` detail of a worker the runner SIGKILLs when it sees another event (a list
/// lab's planned kill): the kill follows what the runner saw, and a snapshot lists it so.
pub const KILLED_BY_RUNNER: &str = "SIGKILL from the runner, mid-job";

/// A timeline line as it travels from a process: stamped with raw monotonic nanoseconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RawEvent {
    pub mono_ns: u64,
    pub actor: Actor,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl RawEvent {
    pub fn now(actor: Actor, kind: EventKind) -> RawEvent {
        RawEvent { mono_ns: crate::clock::now_ns(), actor, kind }
    }

    /// Place the event on the run's clock (t=0 at producer start).
    pub fn at(self, t0_ns: u64) -> Event {
        let t_us = (self.mono_ns as i128 - t0_ns as i128) / 1000;
        Event { t_us: t_us as i64, actor: self.actor, kind: self.kind }
    }
}

/// A timeline line on the run's clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Microseconds since the producer started (negative for set-up before it).
    pub t_us: i64,
    pub actor: Actor,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// Whole milliseconds, rounded to nearest, as the timeline prints them.
    pub fn t_ms(&self) -> i64 {
        (self.t_us as f64 / 1000.0).round() as i64
    }
}

/// Place raw events on the run's clock (t=0 at `t0_ns`), in time order; ties keep their
/// arrival order.
pub fn place(raw: Vec<RawEvent>, t0_ns: u64) -> Vec<Event> {
    let mut events: Vec<Event> = raw.into_iter().map(|e| e.at(t0_ns)).collect();
    events.sort_by_key(|e| e.t_us);
    events
}

impl EventKind {
    /// The order the event is about, if it names one.
    pub fn order(&self) -> Option<i64> {
        use EventKind as K;
        match self {
            K::Published { job, .. } | K::PublishFailed { job, .. } | K::Received { job, .. } => Some(job.order),
            K::Held { job, .. } | K::Dropped { job, .. } => Some(job.order),
            K::Wrote { order, .. } | K::Inserted { order, .. } | K::WriteFailed { order, .. } => Some(*order),
            K::GapTimeout { order, .. } | K::SqlSent { order, .. } | K::SqlDone { order, .. } => Some(*order),
            K::JobPushed { job, .. } | K::JobTaken { job, .. } | K::JobApplied { job, .. } => Some(job.order),
            _ => None,
        }
    }
}

/// Where a role sends its events: stdout in a child process, a channel in the orchestrator.
pub trait Sink: Send + Sync {
    fn record(&self, event: RawEvent);

    fn emit(&self, actor: Actor, kind: EventKind) {
        self.record(RawEvent::now(actor, kind));
    }
}

/// Events as JSON lines on stdout: how a child process reports to the orchestrator.
pub struct StdoutSink;

impl Sink for StdoutSink {
    fn record(&self, event: RawEvent) {
        use std::io::Write;
        let line = serde_json::to_string(&event).expect("events always serialize");
        let mut out = std::io::stdout().lock();
        // If the orchestrator is gone there is nobody to report to: stop this process.
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            std::process::exit(3);
        }
    }
}

/// Keeps nothing: for measurements that need a role's work but not its timeline.
pub struct NullSink;

impl Sink for NullSink {
    fn record(&self, _event: RawEvent) {}
}

impl Sink for tokio::sync::mpsc::UnboundedSender<RawEvent> {
    fn record(&self, event: RawEvent) {
        // The receiver lives as long as the run; after it, late events are of no interest.
        let _ = self.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actor_labels_round_trip() {
        for a in [
            Actor::Runner,
            Actor::Producer,
            Actor::Consumer(2),
            Actor::Dispatcher(1),
            Actor::Reaper,
            Actor::Session('B'),
            Actor::Worker(3),
            Actor::Scheduler,
            Actor::Sink,
        ] {
            assert_eq!(Actor::try_from(a.to_string()).unwrap(), a);
        }
        assert!(Actor::try_from("X1".to_string()).is_err());
    }

    #[test]
    fn event_json_is_flat_and_tagged() {
        let e = Event { t_us: 1500, actor: Actor::Consumer(1), kind: EventKind::Acked { entry_id: "1-0".into() } };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"{"t_us":1500,"actor":"C1","kind":"acked","entry_id":"1-0"}"#);
        assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), e);
        assert_eq!(e.t_ms(), 2);
    }

    #[test]
    fn raw_event_is_placed_relative_to_t0() {
        let raw = RawEvent { mono_ns: 5_000_000, actor: Actor::Producer, kind: EventKind::Ready };
        assert_eq!(raw.clone().at(2_000_000).t_us, 3000);
        assert_eq!(raw.at(6_000_000).t_us, -1000);
    }
}
