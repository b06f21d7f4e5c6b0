//! The record of a run: typed events `{t, actor, kind}` from every process, on one clock.
//! Checkers and reporters read only this record (plus the final rows), so a saved run can be
//! re-judged and re-rendered without servers.

pub mod live;
pub mod vocabulary;

use crate::lang::Words;
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

/// What happened: the core vocabulary every lab shares (a process ready, killed or gone, a
/// publish, a receive, handler work, a write, an ack, an SQL statement and its result, a
/// server command and its reply, a side effect at the partner). Every other event belongs to
/// a vocabulary of its own ([`vocabulary::Vocabulary`]) and travels as [`EventKind::Family`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A consumer process is connected and about to block in XREADGROUP.
    Ready,
    /// The producer sent XADD and the entry was accepted.
    Published { entry_id: String, job: Job, attempt: u32 },
    /// A publish attempt failed (an injected fault, or the primary died under it: `cause`);
    /// `retry_in_ms` is the scheduled retry, if any; `reason` is the failure as the role
    /// worded it.
    PublishFailed {
        job: Job,
        attempt: u32,
        retry_in_ms: Option<f64>,
        reason: String,
        #[serde(default, skip_serializing_if = "PublishFailure::is_injected")]
        cause: PublishFailure,
    },
    /// A consumer got an entry from the group. `deliveries` is the server's delivery count when known.
    Received { entry_id: String, job: Job, deliveries: Option<u64> },
    /// Handler work (an injected sleep standing in for an API call or a DB write) begins.
    WorkStarted { entry_id: String, ms: f64 },
    /// The handler wrote the row. `version` is shown for strategies that write one conditionally.
    Wrote { entry_id: String, order: i64, status: String, version: Option<i64>, rows: u64 },
    /// XACK sent for the entry.
    Acked { entry_id: String },
    /// The process died. `planned` tells an injected crash from an unplanned one; `by_runner`,
    /// a planned SIGKILL the runner sent when it saw another event (so it follows that event).
    Crashed {
        planned: bool,
        /// Where or why, in English (an unplanned crash's error text is only in English).
        detail: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        by_runner: bool,
        /// The same in Vietnamese, for a crash point ordlab names itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail_vi: Option<String>,
    },
    /// A SQL session sent a statement (it may then wait for a row lock).
    SqlSent { case: u32, order: i64, statement: String },
    /// The statement's outcome (`UPDATE 1`, `COMMIT`, or the server's error) and how long it waited.
    SqlDone {
        case: u32,
        order: i64,
        outcome: String,
        waited_ms: f64,
        #[serde(default, skip_serializing_if = "SqlStatus::is_done")]
        status: SqlStatus,
    },
    /// One command a process sent to a server on one of its connections, and the reply, as a
    /// protocol-level recorder sees it (`XREADGROUP … → 1 entry`).
    ///
    /// A stream read's reply (`XREADGROUP`, `XCLAIM`, `XAUTOCLAIM`) also lists the entries the
    /// server handed over, with their fields: a delivery, as a consumer's `received` is.
    ServerCommand {
        server: ServerKind,
        connection: u32,
        args: Vec<String>,
        reply: String,
        error: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        entries: Vec<WireEntry>,
        /// From the command's send to its reply, where the interposer stamps both (Redis).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_trip_us: Option<i64>,
    },
    /// A server process was killed (`server`: `primary`, `replica`, `redis`; `signal`: e.g. SIGKILL).
    ServerKilled { server: String, signal: String },
    /// A role lost its primary and found the new one (`server`: `replica`, promoted), where
    /// it goes on; a consumer first re-reads its own pending entries there.
    Reconnected { server: String },
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
    /// An event of a vocabulary of its own (a lab family's or a shared module's).
    #[serde(untagged)]
    Family(FamilyEvent),
}

/// Why a process died.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashCause {
    /// It killed itself at its planned point (an injected fault).
    Injected,
    /// The runner SIGKILLed it as planned when it saw another event (so it follows that event).
    KilledByRunner,
    /// Nobody planned it: the run cannot be judged.
    Unplanned,
}

/// Whether an SQL statement succeeded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SqlStatus {
    /// The server answered with a command tag (`UPDATE 1`, `COMMIT`).
    #[default]
    Done,
    /// The server answered with an error.
    Failed,
}

impl SqlStatus {
    pub fn is_done(&self) -> bool {
        *self == SqlStatus::Done
    }
}

/// Which server a recorded command went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    Redis,
    Postgres,
}

/// A stream entry as a stream read's reply carried it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireEntry {
    pub id: String,
    pub fields: Vec<(String, String)>,
}

impl WireEntry {
    /// The order event it carries, in ordlab's entry format (`order`, `type`, `version`).
    pub fn job(&self) -> Option<Job> {
        let field = |name: &str| self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        Some(Job::new(field("order")?.parse().ok()?, field("type")?, field("version")?.parse().ok()?))
    }
}

/// An event of a [`vocabulary::Vocabulary`]: its `kind` tag and its other fields, exactly as
/// the vocabulary serialized them (so the JSON of a run reads as before).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FamilyEvent {
    kind: String,
    #[serde(flatten)]
    fields: serde_json::Map<String, serde_json::Value>,
}

impl FamilyEvent {
    /// A vocabulary's event in the record's form.
    pub fn encode<V: Serialize>(v: &V) -> FamilyEvent {
        match serde_json::to_value(v) {
            Ok(serde_json::Value::Object(mut fields)) => {
                let kind = match fields.remove("kind") {
                    Some(serde_json::Value::String(k)) => k,
                    _ => panic!("a vocabulary's events are tagged with a string `kind`"),
                };
                FamilyEvent { kind, fields }
            }
            _ => panic!("a vocabulary's events serialize to objects"),
        }
    }

    /// Its `kind` tag.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The typed event, if it is one of `V`'s.
    pub fn decode<V: vocabulary::Vocabulary>(&self) -> Option<V> {
        if !V::KINDS.contains(&self.kind.as_str()) {
            return None;
        }
        let mut fields = self.fields.clone();
        fields.insert("kind".into(), serde_json::Value::String(self.kind.clone()));
        serde_json::from_value(serde_json::Value::Object(fields)).ok()
    }
}

impl EventKind {
    /// The `kind` tags of the core events, which no vocabulary may use.
    pub const CORE_KINDS: &'static [&'static str] = &[
        "ready",
        "published",
        "publish_failed",
        "received",
        "work_started",
        "wrote",
        "acked",
        "crashed",
        "sql_sent",
        "sql_done",
        "server_command",
        "server_killed",
        "reconnected",
        "effect",
    ];

    /// The event as one of vocabulary `V`'s, if it is.
    pub fn family<V: vocabulary::Vocabulary>(&self) -> Option<V> {
        match self {
            EventKind::Family(f) => f.decode(),
            _ => None,
        }
    }

    /// Why a process died, for a `crashed` event.
    pub fn crash_cause(&self) -> Option<CrashCause> {
        match self {
            EventKind::Crashed { by_runner: true, .. } => Some(CrashCause::KilledByRunner),
            EventKind::Crashed { planned: true, .. } => Some(CrashCause::Injected),
            EventKind::Crashed { .. } => Some(CrashCause::Unplanned),
            _ => None,
        }
    }

    /// A crash the runner caused: a planned SIGKILL it sent when it saw another event.
    pub fn killed_by_runner(detail: Words) -> EventKind {
        EventKind::Crashed { planned: true, detail: detail.en, by_runner: true, detail_vi: Some(detail.vi) }
    }

    /// The order-event entries this event says a process was handed: its own consumer's
    /// `received`, or the entries of a stream read seen at the wire.
    pub fn delivered(&self) -> Vec<(String, Job)> {
        match self {
            EventKind::Received { entry_id, job, .. } => vec![(entry_id.clone(), job.clone())],
            EventKind::ServerCommand { entries, error: false, .. } => {
                entries.iter().filter_map(|e| Some((e.id.clone(), e.job()?))).collect()
            }
            _ => Vec::new(),
        }
    }

    /// A crash: planned (injected) or not.
    pub fn crashed(planned: bool, detail: impl Into<String>) -> EventKind {
        EventKind::Crashed { planned, detail: detail.into(), by_runner: false, detail_vi: None }
    }

    /// A planned crash at a point ordlab names, in both languages.
    pub fn crashed_at(detail: Words) -> EventKind {
        EventKind::Crashed { planned: true, detail: detail.en, by_runner: false, detail_vi: Some(detail.vi) }
    }

    /// A crash's detail in `lang`: the Vietnamese one where the crash has it.
    pub fn crash_detail(&self, lang: crate::lang::Lang) -> Option<&str> {
        match self {
            EventKind::Crashed { detail_vi: Some(vi), .. } if lang == crate::lang::Lang::Vi => Some(vi),
            EventKind::Crashed { detail, .. } => Some(detail),
            _ => None,
        }
    }
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

/// Why a publish attempt failed (`cause` of [`EventKind::PublishFailed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PublishFailure {
    /// A fault the lab injected (its JSON leaves `cause` out).
    #[default]
    Injected,
    /// The primary died under the XADD (the `failover` lab): no reply.
    PrimaryGone,
}

impl PublishFailure {
    pub fn is_injected(&self) -> bool {
        *self == PublishFailure::Injected
    }
}

/// The `reason` of a `publish_failed` whose cause is [`PublishFailure::PrimaryGone`].
pub const PRIMARY_GONE: &str = "the primary is gone";

/// The `crashed` detail of a worker the runner SIGKILLs when it sees another event (a list
/// lab's planned kill): the kill follows what the runner saw, and a snapshot lists it so.
pub fn killed_by_runner_mid_job() -> Words {
    Words::new("SIGKILL from the runner, mid-job", "SIGKILL từ runner, giữa job")
}

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
    /// The order the event is about, if it is a core event that names one.
    pub fn order(&self) -> Option<i64> {
        use EventKind as K;
        match self {
            K::Published { job, .. } | K::PublishFailed { job, .. } | K::Received { job, .. } => Some(job.order),
            K::Wrote { order, .. } | K::SqlSent { order, .. } | K::SqlDone { order, .. } => Some(*order),
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

/// What a role process does with each event it has just reported, if anything: the fault
/// layer's hook (a fault may fire at a timeline event), installed once per process.
static ON_RECORD: std::sync::OnceLock<fn(&RawEvent)> = std::sync::OnceLock::new();

/// Call `hook` with every event this process reports through [`StdoutSink`], after it is out.
pub fn on_record(hook: fn(&RawEvent)) {
    let _ = ON_RECORD.set(hook);
}

impl Sink for StdoutSink {
    fn record(&self, event: RawEvent) {
        use std::io::Write;
        let line = serde_json::to_string(&event).expect("events always serialize");
        {
            let mut out = std::io::stdout().lock();
            // If the orchestrator is gone there is nobody to report to: stop this process.
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                std::process::exit(3);
            }
        }
        if let Some(hook) = ON_RECORD.get() {
            hook(&event);
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
        live::observe(&event);
        // The receiver lives as long as the run; after it, late events are of no interest.
        let _ = self.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_crash_point_reads_in_both_languages_and_an_old_record_in_english() {
        use crate::lang::Lang;
        let named = EventKind::crashed_at(Words::new("after taking job-1", "sau khi lấy job-1"));
        assert_eq!(named.crash_detail(Lang::En), Some("after taking job-1"));
        assert_eq!(named.crash_detail(Lang::Vi), Some("sau khi lấy job-1"));
        let json = serde_json::to_string(&named).unwrap();
        assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap().crash_detail(Lang::Vi), Some("sau khi lấy job-1"));
        // A record written before crashes had a Vietnamese detail, and an error's text.
        let old: EventKind = serde_json::from_str(r#"{"kind":"crashed","planned":true,"detail":"x y"}"#).unwrap();
        assert_eq!(old.crash_detail(Lang::Vi), Some("x y"));
        assert!(!serde_json::to_string(&EventKind::crashed(false, "boom")).unwrap().contains("detail_vi"));
        assert_eq!(EventKind::Ready.crash_detail(Lang::En), None);
    }

    #[test]
    fn core_kinds_are_the_core_tags() {
        let job = Job::new(42, "created", 1);
        let samples = [
            EventKind::Ready,
            EventKind::Published { entry_id: "1-0".into(), job: job.clone(), attempt: 1 },
            EventKind::PublishFailed {
                job: job.clone(),
                attempt: 1,
                retry_in_ms: None,
                reason: "r".into(),
                cause: PublishFailure::Injected,
            },
            EventKind::Received { entry_id: "1-0".into(), job, deliveries: None },
            EventKind::WorkStarted { entry_id: "1-0".into(), ms: 1.0 },
            EventKind::Wrote { entry_id: "1-0".into(), order: 42, status: "paid".into(), version: None, rows: 1 },
            EventKind::Acked { entry_id: "1-0".into() },
            EventKind::crashed(true, "x"),
            EventKind::SqlSent { case: 1, order: 42, statement: "BEGIN".into() },
            EventKind::SqlDone {
                case: 1,
                order: 42,
                outcome: "COMMIT".into(),
                waited_ms: 0.0,
                status: SqlStatus::Done,
            },
            EventKind::ServerCommand {
                server: ServerKind::Redis,
                connection: 1,
                args: vec!["PING".into()],
                reply: "PONG".into(),
                error: false,
                entries: Vec::new(),
                round_trip_us: None,
            },
            EventKind::ServerKilled { server: "redis".into(), signal: "SIGKILL".into() },
            EventKind::Reconnected { server: "replica".into() },
            EventKind::Effect {
                job: "job-1".into(),
                effect: "email".into(),
                requested_by: Actor::Consumer(1),
                idem_key: None,
                outcome: EffectOutcome::Applied,
            },
        ];
        let tags: Vec<String> =
            samples.iter().map(|k| serde_json::to_value(k).unwrap()["kind"].as_str().unwrap().to_string()).collect();
        assert_eq!(tags, EventKind::CORE_KINDS);
        for k in samples {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), k, "{json}");
        }
    }

    #[test]
    fn an_event_of_a_vocabulary_reads_back_as_it_was_written() {
        let json = r#"{"t_us":5,"actor":"W1","kind":"taken","job":"j1","via":"BLMOVE","lease_ms":null}"#;
        let e: Event = serde_json::from_str(json).unwrap();
        assert!(matches!(&e.kind, EventKind::Family(f) if f.kind() == "taken"));
        // The same JSON (its fields may come back in another order).
        let again: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(again, serde_json::from_str::<serde_json::Value>(json).unwrap());
        assert_eq!(serde_json::from_value::<Event>(again).unwrap(), e);
    }

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
