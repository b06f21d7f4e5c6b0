//! A lab is a declarative TOML file: what to set up, what to publish, what should come out.
//! This module parses it (errors carry line and column) and resolves its variants, each a
//! complete set-up obtained by laying the variant's keys over the file's shared ones.
//!
//! ```toml
//! id = "baseline"
//! title = "The bug: two consumers in parallel"
//! source = "seed 001, 08a-baseline"
//! runs = 10
//!
//! [setup]
//! consumers = 2
//! strategy = "plain"                       # plain | cas | lock | idempotent
//! cost_ms = { created = 800, paid = 50 }   # injected handler work per event type
//! events = [
//!   { order = 42, type = "created", version = 1 },
//!   { order = 42, type = "paid", version = 2 },
//! ]
//!
//! [expect]
//! wrong = "all"                            # all | none | some | any | a number
//!
//! [[variant]]                              # optional: each overrides runs, setup, expect
//! id = "three-consumers"
//! setup = { consumers = 3 }
//! ```

use crate::timeline::Job;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a scenario file could not be used. Every message is one line naming the fix.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}:{line}:{column}: {message}")]
    Syntax { path: String, line: usize, column: usize, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("cannot read scenario file {path}: {source}")]
    Read { path: String, source: std::io::Error },
}

// ---------------------------------------------------------------------------------------------
// The file as written. Every set-up key is optional so a variant can override just one.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    id: String,
    title: String,
    source: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    setup: SetupPatch,
    #[serde(default)]
    expect: Option<ExpectPatch>,
    #[serde(default)]
    variant: Vec<VariantFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    scheduler_race: bool,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    setup: SetupPatch,
    #[serde(default)]
    expect: Option<ExpectPatch>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupPatch {
    kind: Option<LabKind>,
    sql_race: Option<SqlRaceSpec>,
    outbox: Option<OutboxSpec>,
    failover: Option<FailoverSpec>,
    generate: Option<GenerateSpec>,
    consumers: Option<u32>,
    strategy: Option<StrategyKind>,
    lock: Option<LockSpec>,
    cas_version: Option<VersionSource>,
    insert_gap_ms: Option<f64>,
    gap_timeout_ms: Option<f64>,
    shards: Option<u32>,
    state_bytes: Option<usize>,
    crash: Option<CrashSpec>,
    reaper: Option<ReaperSpec>,
    cost_ms: Option<BTreeMap<String, f64>>,
    events: Option<Vec<EventSpec>>,
    initial: Option<Vec<OrderRow>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectPatch {
    wrong: Expectation,
}

// ---------------------------------------------------------------------------------------------
// The resolved model the runner uses.

/// A lab: one file, one or more variants.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub id: String,
    pub title: String,
    /// Where the lab comes from: seed file and section, or "new".
    pub source: String,
    pub description: Option<String>,
    /// The file it was read from (None for a built-in read from memory).
    #[serde(skip)]
    pub path: Option<PathBuf>,
    pub variants: Vec<Variant>,
}

/// One complete experiment: set-up, number of runs, expected outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub id: String,
    pub title: String,
    pub runs: u32,
    pub setup: Setup,
    pub expect: Expectation,
    /// Who goes first is decided by the OS scheduler (e.g. two consumers racing for a lock):
    /// the timeline differs from run to run, so snapshots leave it out.
    pub scheduler_race: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// What kind of experiment: a stream with consumers (default), two racing SQL sessions,
    /// an outbox dispatcher feeding the stream, or an outbox transaction rolled back.
    #[serde(default)]
    pub kind: LabKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_race: Option<SqlRaceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<OutboxSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverSpec>,
    /// Consumer processes in the group, each with its own connections.
    pub consumers: u32,
    /// Streams the producer routes to by `order mod shards`; consumer i reads shard
    /// (i-1) mod shards. 1 = one stream.
    #[serde(default = "one")]
    pub shards: u32,
    /// Bytes of state document each event carries (0: events carry only type and version).
    #[serde(default)]
    pub state_bytes: usize,
    /// Where `events` came from when generated (the `load` lab); such runs also measure
    /// throughput and latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<GenerateSpec>,
    pub strategy: Strategy,
    /// Injected handler work in milliseconds per event type (before `--time-scale`).
    pub cost_ms: BTreeMap<String, f64>,
    /// Published in this order, each on its own schedule.
    pub events: Vec<EventSpec>,
    /// Rows present before each run.
    pub initial: Vec<OrderRow>,
    /// A consumer that kills itself (SIGKILL) at a named point (`redelivery`, `fanout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashSpec>,
    /// A claimer process that takes over idle pending entries with `XAUTOCLAIM` (`redelivery`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaper: Option<ReaperSpec>,
}

/// Consumer `consumer` announces a planned crash and kills itself with SIGKILL right after
/// receiving an entry, before applying or acknowledging it: the first entry of type `event`
/// (any type if absent) that is at least its `entries`-th entry received (1 if absent).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    pub consumer: u32,
    /// Where in the loop: only `receive` (after XREADGROUP returned it, before XACK).
    pub after: CrashPoint,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    Receive,
}

impl CrashSpec {
    /// Does consumer `index`, which has just received its `received`-th entry `job`, crash now?
    pub fn fires(&self, index: u32, received: u32, job: &Job) -> bool {
        index == self.consumer
            && self.event.as_ref().is_none_or(|t| *t == job.event_type)
            && received >= self.entries.unwrap_or(1)
    }
}

/// The claimer (actor `reaper`): every `poll_ms` it sends `XAUTOCLAIM … <min_idle_ms> 0-0
/// COUNT 1`, and applies and acknowledges what it gets.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReaperSpec {
    pub min_idle_ms: f64,
    #[serde(default = "ReaperSpec::default_poll")]
    pub poll_ms: f64,
}

impl ReaperSpec {
    fn default_poll() -> f64 {
        50.0
    }
}

/// The shape of an experiment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabKind {
    /// A producer publishes `events` to a stream; consumer processes apply them.
    #[default]
    Stream,
    /// Two PostgreSQL sessions race on one row per case (`sql_race`).
    SqlRace,
    /// `events` are rows of an outbox table; a dispatcher publishes them to the stream
    /// (`outbox`), one consumer applies the stream.
    Outbox,
    /// The state change and its outbox row in one transaction, rolled back: neither remains.
    OutboxRollback,
    /// A primary and an asynchronous replica; the primary dies while the replica is behind
    /// and the replica is promoted (`failover`).
    Failover,
}

/// The failover procedure (see [`crate::failover`]). Events are generated unless listed:
/// `orders` orders, every `created` (v=1) first, then every `paid` (v=2), one every
/// `publish_every_ms`. The replica's link is cut after `cut_after` published events; the
/// primary is killed after `kill_after`, once its consumers have acknowledged everything;
/// the rest is published to the promoted replica.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailoverSpec {
    #[serde(default = "FailoverSpec::default_orders")]
    pub orders: u32,
    #[serde(default = "FailoverSpec::default_every")]
    pub publish_every_ms: f64,
    pub cut_after: u32,
    pub kill_after: u32,
}

impl FailoverSpec {
    fn default_orders() -> u32 {
        50
    }
    fn default_every() -> f64 {
        2.0
    }

    /// `created` for every order, then `paid` for every order, evenly paced.
    pub fn events(&self) -> Vec<EventSpec> {
        let jobs = ["created", "paid"]
            .iter()
            .enumerate()
            .flat_map(|(i, t)| (1..=self.orders as i64).map(move |o| (o, t.to_string(), i as i64 + 1)));
        jobs.enumerate()
            .map(|(n, (order, event_type, version))| EventSpec {
                order,
                event_type,
                version,
                at_ms: Some(n as f64 * self.publish_every_ms),
                fail_attempts: 0,
                retry_ms: EventSpec::default_retry(),
                backoff: EventSpec::default_backoff(),
                cost_ms: None,
            })
            .collect()
    }
}

/// Two sessions, one row per case (seed 001, 08d): A updates with CAS and holds the row lock
/// `hold_ms` before committing; B sends its CAS update `b_after_ms` after A's.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlRaceSpec {
    #[serde(default = "SqlRaceSpec::default_hold")]
    pub hold_ms: f64,
    #[serde(default = "SqlRaceSpec::default_b_after")]
    pub b_after_ms: f64,
    pub cases: Vec<SqlRaceCase>,
}

impl SqlRaceSpec {
    fn default_hold() -> f64 {
        1000.0
    }
    fn default_b_after() -> f64 {
        300.0
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlRaceCase {
    /// The row this case races on (each case has its own).
    pub order: i64,
    pub a: EventRef,
    pub b: EventRef,
    #[serde(default)]
    pub b_isolation: Isolation,
}

/// An event by type and business version.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EventRef {
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: i64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    #[default]
    ReadCommitted,
    RepeatableRead,
}

impl Isolation {
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
        }
    }
}

/// An outbox dispatcher: which rows it takes in what order, how often it polls, and which
/// rows fail to publish on their first attempts.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxSpec {
    pub dispatcher: DispatcherKind,
    #[serde(default = "OutboxSpec::default_poll")]
    pub poll_ms: f64,
    #[serde(default)]
    pub failing_rows: Vec<FailingRow>,
    /// How many dispatchers poll the same outbox at once, each with its own connections
    /// (`outbox-multi`). Default 1.
    #[serde(default = "OutboxSpec::default_dispatchers", skip_serializing_if = "OutboxSpec::is_one")]
    pub dispatchers: u32,
    /// How concurrent dispatchers keep out of each other's way (`outbox-multi`).
    #[serde(default, skip_serializing_if = "Exclusion::is_none")]
    pub exclusion: Exclusion,
    /// Latency before each XADD, per dispatcher (`[D1, D2, …]`, ms before `--time-scale`;
    /// missing entries are 0): a slow network to the broker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish_ms: Vec<f64>,
    /// The dispatcher (its own OS process) is killed with SIGKILL right after the XADD of this
    /// outbox row, before marking it published; a new dispatcher process then takes over
    /// (`outbox-crash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_after_xadd_of_row: Option<i64>,
}

impl OutboxSpec {
    fn default_poll() -> f64 {
        200.0
    }
    fn default_dispatchers() -> u32 {
        1
    }
    fn is_one(n: &u32) -> bool {
        *n == 1
    }
    /// Latency before each XADD of dispatcher `index` (1-based), unscaled ms.
    pub fn publish_latency_ms(&self, index: u32) -> f64 {
        self.publish_ms.get(index as usize - 1).copied().unwrap_or(0.0)
    }
    /// Several dispatchers or a crash: the stream may hold an event twice or out of order, so
    /// the checker also counts duplicates, out-of-order pairs and side effects.
    pub fn checks_delivery(&self) -> bool {
        self.dispatchers > 1 || self.crash_after_xadd_of_row.is_some()
    }
}

/// How several dispatchers share one outbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exclusion {
    /// Each polls the pending rows with no locking at all.
    #[default]
    None,
    /// A dispatcher takes a key only if `FOR UPDATE SKIP LOCKED` locks the key's earliest
    /// pending row; it publishes and marks the key's rows before COMMIT.
    SkipLocked,
    /// A dispatcher takes a key only if `pg_try_advisory_xact_lock(aggregate_id)` succeeds.
    AdvisoryLock,
}

impl Exclusion {
    fn is_none(&self) -> bool {
        *self == Exclusion::None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatcherKind {
    /// `ORDER BY id`, a failed row is skipped and retried next round.
    Naive,
    /// `ORDER BY aggregate_id, id`, a failed row holds back later rows of its key only.
    PerKey,
}

/// Outbox row `row` (1-based id) fails its first `attempts` publish attempts.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailingRow {
    pub row: i64,
    pub attempts: u32,
}

/// How a consumer applies an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Strategy {
    /// `UPDATE orders SET status=$s, version=$v WHERE id=$id`: last writer wins.
    Plain,
    /// `UPDATE … WHERE id=$id AND version < $v`: a stale event changes nothing.
    Cas { version: VersionSource },
    /// Plain UPDATE inside a per-order Redis lock.
    Lock(LockSpec),
    /// The first event may find no row: `INSERT … ON CONFLICT (id) DO UPDATE … WHERE
    /// orders.version < EXCLUDED.version`, one atomic statement.
    Upsert,
    /// The naive first write: CAS UPDATE, and if it matched nothing, INSERT after
    /// `gap_ms` (the check-then-act window). Two first events can both decide to insert.
    UpdateThenInsert { gap_ms: f64 },
    /// Events carry the whole state and its version; the consumer keeps only the newest
    /// (`UPDATE … SET status, version, state … WHERE version < $v`).
    State,
    /// Hold an order's events until the next expected version arrives, then apply them in
    /// version order; after `gap_timeout_ms` stop waiting for a missing version.
    ReorderBuffer { gap_timeout_ms: f64 },
    /// `INSERT INTO processed (order, version) ON CONFLICT DO NOTHING` and the UPDATE in one
    /// transaction: a redelivered event changes nothing the second time.
    Idempotent,
    /// S3: one reader per process hands each entry to an in-memory queue per order; a worker
    /// task per order applies its queue in order (plain UPDATE) and acknowledges.
    Fanout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
enum StrategyKind {
    Plain,
    Cas,
    Lock,
    Upsert,
    UpdateThenInsert,
    State,
    ReorderBuffer,
    Idempotent,
    Fanout,
}

fn one() -> u32 {
    1
}

/// Many orders instead of a hand-written list (the `load` lab): `orders` orders, each with
/// one event per type in `types` (versions 1, 2, …), published interleaved order by order.
/// A `slow_share` of the orders have a slow first event (`slow_ms`, an external call); every
/// other event costs `fast_ms`. Which orders are slow is fixed by their id (a hash), so every
/// strategy sees the same workload.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateSpec {
    pub orders: u32,
    #[serde(default = "GenerateSpec::default_types")]
    pub types: Vec<String>,
    pub slow_share: f64,
    pub slow_ms: f64,
    pub fast_ms: f64,
}

impl GenerateSpec {
    fn default_types() -> Vec<String> {
        vec!["created".into(), "paid".into()]
    }

    /// Is `order`'s first event slow? A multiplicative hash spreads the slow orders evenly.
    pub fn is_slow(&self, order: i64) -> bool {
        let h = (order as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (h % 10_000) < (self.slow_share * 10_000.0) as u64
    }

    pub fn events(&self) -> Vec<EventSpec> {
        let mut out = Vec::new();
        for order in 1..=self.orders as i64 {
            for (i, t) in self.types.iter().enumerate() {
                let cost = if i == 0 && self.is_slow(order) { self.slow_ms } else { self.fast_ms };
                out.push(EventSpec {
                    order,
                    event_type: t.clone(),
                    version: i as i64 + 1,
                    at_ms: None,
                    fail_attempts: 0,
                    retry_ms: EventSpec::default_retry(),
                    backoff: EventSpec::default_backoff(),
                    cost_ms: Some(cost),
                });
            }
        }
        out
    }
}

/// Which number CAS compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// The business version carried in the event (born with it at the source).
    #[default]
    Business,
    /// The stream entry ID as a number, `ms * 100000 + seq` (born at XADD time).
    EntryId,
}

/// Per-key lock: `SET lock:order:<id> <token> NX PX <ttl_ms>`, retried every `retry_ms`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    #[serde(default = "LockSpec::default_ttl")]
    pub ttl_ms: u64,
    #[serde(default = "LockSpec::default_retry")]
    pub retry_ms: u64,
    /// Random work before taking the lock, uniform in `[0, prework_max_ms]` (seeded RNG).
    #[serde(default)]
    pub prework_max_ms: u64,
}

impl LockSpec {
    fn default_ttl() -> u64 {
        5000
    }
    fn default_retry() -> u64 {
        20
    }
}

impl Default for LockSpec {
    fn default() -> Self {
        LockSpec { ttl_ms: Self::default_ttl(), retry_ms: Self::default_retry(), prework_max_ms: 0 }
    }
}

/// One event to publish and when.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub order: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: i64,
    /// First publish attempt, in ms after producer start; default: right after the previous one.
    #[serde(default)]
    pub at_ms: Option<f64>,
    /// Injected publish failures: the first `fail_attempts` attempts fail (a network blip).
    #[serde(default)]
    pub fail_attempts: u32,
    /// Delay before the first retry; each later retry waits `backoff` times longer.
    #[serde(default = "EventSpec::default_retry")]
    pub retry_ms: f64,
    #[serde(default = "EventSpec::default_backoff")]
    pub backoff: f64,
    /// Handler work for this event only, overriding `cost_ms` of its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ms: Option<f64>,
}

impl EventSpec {
    fn default_retry() -> f64 {
        500.0
    }
    fn default_backoff() -> f64 {
        2.0
    }
    pub fn job(&self) -> Job {
        Job { order: self.order, event_type: self.event_type.clone(), version: self.version }
    }
}

/// A row of `orders`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OrderRow {
    pub order: i64,
    pub status: String,
    pub version: i64,
}

/// How many runs should end in a wrong final state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// Every run wrong: the bug is deterministic.
    All,
    /// No run wrong: the fix holds.
    None,
    /// At least one run wrong (for a race that happens often enough to never miss in n runs).
    Some,
    /// Not asserted: the figure is measured and reported only.
    Any,
    /// Exactly k runs wrong.
    Exactly(u32),
}

impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            Count(u32),
        }
        match Raw::deserialize(d)? {
            Raw::Count(k) => Ok(Expectation::Exactly(k)),
            Raw::Word(w) => match w.as_str() {
                "all" => Ok(Expectation::All),
                "none" => Ok(Expectation::None),
                "some" => Ok(Expectation::Some),
                "any" => Ok(Expectation::Any),
                _ => Err(serde::de::Error::custom(format!(
                    "expect.wrong = {w:?}: use \"all\", \"none\", \"some\", \"any\" or a number"
                ))),
            },
        }
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Expectation::All => s.serialize_str("all"),
            Expectation::None => s.serialize_str("none"),
            Expectation::Some => s.serialize_str("some"),
            Expectation::Any => s.serialize_str("any"),
            Expectation::Exactly(k) => s.serialize_u32(*k),
        }
    }
}

impl Expectation {
    /// Does `wrong` out of `runs` meet the expectation?
    pub fn holds(&self, wrong: u32, runs: u32) -> bool {
        match self {
            Expectation::All => wrong == runs,
            Expectation::None => wrong == 0,
            Expectation::Some => wrong > 0,
            Expectation::Any => true,
            Expectation::Exactly(k) => wrong == *k,
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::All => f.write_str("all"),
            Expectation::None => f.write_str("none"),
            Expectation::Some => f.write_str("some"),
            Expectation::Any => f.write_str("any (measured only)"),
            Expectation::Exactly(k) => write!(f, "exactly {k}"),
        }
    }
}

impl Setup {
    /// A set-up from the body of a scenario file's `[setup]` table, with the file format's
    /// defaults: for tests and tools that need one without a whole lab.
    pub fn from_toml(setup_table: &str) -> Result<Setup, ScenarioError> {
        let text = format!(
            "id = \"setup\"\ntitle = \"setup\"\nsource = \"inline\"\n[expect]\nwrong = \"any\"\n[setup]\n{setup_table}"
        );
        Ok(Scenario::parse(&text, "[setup]")?.variants.remove(0).setup)
    }

    /// The status the run must end in for `order`: the type of its highest-versioned event.
    pub fn expected_status(&self, order: i64) -> Option<&str> {
        if self.kind == LabKind::OutboxRollback {
            // A rolled-back transaction leaves the row as it was.
            return self.initial.iter().find(|r| r.order == order).map(|r| r.status.as_str());
        }
        self.events.iter().filter(|e| e.order == order).max_by_key(|e| e.version).map(|e| e.event_type.as_str())
    }

    /// Orders the lab touches, in first-seen order.
    pub fn orders(&self) -> Vec<i64> {
        let mut seen = Vec::new();
        for o in self.initial.iter().map(|r| r.order).chain(self.events.iter().map(|e| e.order)) {
            if !seen.contains(&o) {
                seen.push(o);
            }
        }
        seen
    }

    /// Injected handler work for an event type, in ms before scaling.
    pub fn cost_of(&self, event_type: &str) -> f64 {
        self.cost_ms.get(event_type).copied().unwrap_or(0.0)
    }

    /// Injected handler work for one job: its event's own `cost_ms`, else its type's.
    pub fn cost_for(&self, job: &Job) -> f64 {
        self.events
            .iter()
            .find(|e| e.order == job.order && e.event_type == job.event_type && e.version == job.version)
            .and_then(|e| e.cost_ms)
            .unwrap_or_else(|| self.cost_of(&job.event_type))
    }

    /// The stream shard an order is routed to.
    pub fn shard_of(&self, order: i64) -> u32 {
        order.rem_euclid(self.shards as i64) as u32
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing and resolution.

impl Scenario {
    /// Read and resolve a scenario file.
    pub fn from_path(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Read { path: path.display().to_string(), source })?;
        let mut s = Scenario::parse(&text, &path.display().to_string())?;
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Parse scenario text; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            ScenarioError::Syntax {
                path: origin.to_string(),
                line,
                column,
                message: e.message().trim().replace('\n', " "),
            }
        })?;
        resolve(file, origin)
    }

    pub fn variant(&self, id: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.id == id)
    }
}

fn resolve(file: ScenarioFile, origin: &str) -> Result<Scenario, ScenarioError> {
    let invalid = |message: String| ScenarioError::Invalid { path: origin.to_string(), message };
    if !is_id(&file.id) {
        return Err(invalid(format!("id {:?}: use lowercase letters, digits and '-'", file.id)));
    }
    let base_variant = VariantFile {
        id: file.id.clone(),
        title: None,
        scheduler_race: false,
        runs: None,
        setup: SetupPatch::default(),
        expect: None,
    };
    let variant_files = if file.variant.is_empty() { vec![base_variant] } else { file.variant };
    let mut variants = Vec::new();
    for v in variant_files {
        if !is_id(&v.id) {
            return Err(invalid(format!("variant id {:?}: use lowercase letters, digits and '-'", v.id)));
        }
        if variants.iter().any(|x: &Variant| x.id == v.id) {
            return Err(invalid(format!("variant id {:?} appears twice: give each variant its own id", v.id)));
        }
        let setup = resolve_setup(&file.setup, &v.setup).map_err(|m| invalid(format!("variant {}: {m}", v.id)))?;
        let expect = v.expect.or_else(|| file.expect.clone()).map(|e| e.wrong).ok_or_else(|| {
            invalid(format!(
                "variant {}: no expected outcome: add [expect] wrong = \"all\" | \"none\" | \"some\" | \"any\"",
                v.id
            ))
        })?;
        let runs = v.runs.or(file.runs).unwrap_or(10);
        if runs == 0 {
            return Err(invalid(format!("variant {}: runs = 0: use at least 1", v.id)));
        }
        variants.push(Variant {
            title: v.title.unwrap_or_else(|| file.title.clone()),
            id: v.id,
            runs,
            setup,
            expect,
            scheduler_race: v.scheduler_race,
        });
    }
    Ok(Scenario {
        id: file.id,
        title: file.title,
        source: file.source,
        description: file.description,
        path: None,
        variants,
    })
}

fn resolve_setup(base: &SetupPatch, over: &SetupPatch) -> Result<Setup, String> {
    let consumers = over.consumers.or(base.consumers).unwrap_or(1);
    if consumers == 0 {
        return Err("setup.consumers = 0: use at least 1".into());
    }
    let kind = over.strategy.or(base.strategy).unwrap_or(StrategyKind::Plain);
    let strategy = match kind {
        StrategyKind::Plain => Strategy::Plain,
        StrategyKind::Cas => Strategy::Cas { version: over.cas_version.or(base.cas_version).unwrap_or_default() },
        StrategyKind::Lock => Strategy::Lock(over.lock.clone().or_else(|| base.lock.clone()).unwrap_or_default()),
        StrategyKind::Upsert => Strategy::Upsert,
        StrategyKind::UpdateThenInsert => {
            Strategy::UpdateThenInsert { gap_ms: over.insert_gap_ms.or(base.insert_gap_ms).unwrap_or(20.0) }
        }
        StrategyKind::State => Strategy::State,
        StrategyKind::ReorderBuffer => {
            Strategy::ReorderBuffer { gap_timeout_ms: over.gap_timeout_ms.or(base.gap_timeout_ms).unwrap_or(1000.0) }
        }
        StrategyKind::Idempotent => Strategy::Idempotent,
        StrategyKind::Fanout => Strategy::Fanout,
    };
    let shards = over.shards.or(base.shards).unwrap_or(1);
    if shards == 0 {
        return Err("setup.shards = 0: use at least 1".into());
    }
    let state_bytes = over.state_bytes.or(base.state_bytes).unwrap_or(0);
    let mut cost_ms = base.cost_ms.clone().unwrap_or_default();
    cost_ms.extend(over.cost_ms.clone().unwrap_or_default());
    if let Some((t, c)) = cost_ms.iter().find(|(_, c)| !c.is_finite() || **c < 0.0) {
        return Err(format!("setup.cost_ms.{t} = {c}: use a duration ≥ 0 in ms"));
    }
    let kind = over.kind.or(base.kind).unwrap_or_default();
    let sql_race = over.sql_race.clone().or_else(|| base.sql_race.clone());
    let outbox = over.outbox.clone().or_else(|| base.outbox.clone());
    let failover = over.failover.clone().or_else(|| base.failover.clone());
    let mut events = over.events.clone().or_else(|| base.events.clone()).unwrap_or_default();
    let generate = over.generate.clone().or_else(|| base.generate.clone());
    if let Some(g) = &generate {
        if g.orders == 0 || g.types.is_empty() || !(0.0..=1.0).contains(&g.slow_share) {
            return Err("setup.generate: use orders ≥ 1, at least one type, 0 ≤ slow_share ≤ 1".into());
        }
        events = g.events();
    }
    match kind {
        LabKind::SqlRace => {
            let race = sql_race.as_ref().ok_or("setup.kind = \"sql-race\" needs setup.sql_race = { cases = [...] }")?;
            // The events of a race are its cases' statements: the checker expects each row to
            // end at its highest version.
            events = race
                .cases
                .iter()
                .flat_map(|c| [(c.order, &c.a), (c.order, &c.b)])
                .map(|(order, e)| EventSpec {
                    order,
                    event_type: e.event_type.clone(),
                    version: e.version,
                    at_ms: None,
                    fail_attempts: 0,
                    retry_ms: EventSpec::default_retry(),
                    backoff: EventSpec::default_backoff(),
                    cost_ms: None,
                })
                .collect();
        }
        LabKind::Failover => {
            let f = failover
                .as_ref()
                .ok_or("setup.kind = \"failover\" needs setup.failover = { cut_after = …, kill_after = … }")?;
            if events.is_empty() {
                events = f.events();
            }
            if !(1..=events.len() as u32).contains(&f.cut_after)
                || !(f.cut_after + 1..=events.len() as u32).contains(&f.kill_after)
            {
                return Err(format!(
                    "setup.failover: use 1 ≤ cut_after ({}) < kill_after ({}) ≤ the number of events ({})",
                    f.cut_after,
                    f.kill_after,
                    events.len()
                ));
            }
        }
        LabKind::Outbox if outbox.is_none() => {
            return Err("setup.kind = \"outbox\" needs setup.outbox = { dispatcher = \"naive\" | \"per-key\" }".into());
        }
        LabKind::Outbox => {
            let spec = outbox.as_ref().expect("checked above");
            if spec.dispatchers == 0 {
                return Err("setup.outbox.dispatchers = 0: use at least 1".into());
            }
            if spec.crash_after_xadd_of_row.is_some() && spec.dispatchers != 1 {
                return Err(
                    "setup.outbox.crash_after_xadd_of_row needs dispatchers = 1 (one crashes, one takes over)".into()
                );
            }
        }
        _ => {}
    }
    if events.is_empty() {
        return Err("setup.events is empty: list at least one event to publish".into());
    }
    let default_initial = || {
        let mut rows: Vec<OrderRow> = Vec::new();
        for e in &events {
            if !rows.iter().any(|r| r.order == e.order) {
                rows.push(OrderRow { order: e.order, status: "new".into(), version: 0 });
            }
        }
        rows
    };
    let initial = over.initial.clone().or_else(|| base.initial.clone()).unwrap_or_else(default_initial);
    let crash = over.crash.clone().or_else(|| base.crash.clone());
    if let Some(c) = &crash {
        if !(1..=consumers).contains(&c.consumer) {
            return Err(format!("setup.crash.consumer = {}: use 1 to {consumers}", c.consumer));
        }
    }
    let reaper = over.reaper.clone().or_else(|| base.reaper.clone());
    Ok(Setup {
        kind,
        sql_race,
        outbox,
        failover,
        consumers,
        shards,
        state_bytes,
        generate,
        strategy,
        cost_ms,
        events,
        initial,
        crash,
        reaper,
    })
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
id = "demo"
title = "Demo"
source = "new"
runs = 3
[setup]
consumers = 2
cost_ms = { created = 800, paid = 50 }
events = [
  { order = 42, type = "created", version = 1 },
  { order = 42, type = "paid", version = 2 },
]
[expect]
wrong = "all"
"#;

    #[test]
    fn a_file_without_variants_is_one_variant_named_after_the_lab() {
        let s = Scenario::parse(MINIMAL, "demo.toml").unwrap();
        assert_eq!(s.variants.len(), 1);
        let v = &s.variants[0];
        assert_eq!((v.id.as_str(), v.runs, v.setup.consumers), ("demo", 3, 2));
        assert_eq!(v.setup.strategy, Strategy::Plain);
        assert_eq!(v.expect, Expectation::All);
        assert_eq!(v.setup.initial, vec![OrderRow { order: 42, status: "new".into(), version: 0 }]);
        assert_eq!(v.setup.expected_status(42), Some("paid"));
        assert_eq!(v.setup.cost_of("created"), 800.0);
    }

    #[test]
    fn variants_override_only_what_they_name() {
        let text = format!(
            "{MINIMAL}\n[[variant]]\nid = \"a\"\n\n[[variant]]\nid = \"b\"\nruns = 5\nsetup = {{ consumers = 1, strategy = \"lock\", lock = {{ ttl_ms = 500 }}, cost_ms = {{ paid = 60 }} }}\nexpect = {{ wrong = 0 }}\n"
        );
        let s = Scenario::parse(&text, "demo.toml").unwrap();
        let b = s.variant("b").unwrap();
        assert_eq!((b.runs, b.setup.consumers), (5, 1));
        assert_eq!(b.setup.strategy, Strategy::Lock(LockSpec { ttl_ms: 500, retry_ms: 20, prework_max_ms: 0 }));
        assert_eq!(b.setup.cost_of("paid"), 60.0);
        assert_eq!(b.setup.cost_of("created"), 800.0);
        assert_eq!(b.expect, Expectation::Exactly(0));
        let a = s.variant("a").unwrap();
        assert_eq!((a.runs, a.setup.consumers, &a.expect), (3, 2, &Expectation::All));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let bad = MINIMAL.replace("consumers = 2", "consumers = = 2");
        let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(err.starts_with("x.toml:7:13: "), "{err}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let bad = MINIMAL.replace("consumers = 2", "consumer = 2");
        let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(err.starts_with("x.toml:7:1: ") && err.contains("consumer"), "{err}");
    }

    #[test]
    fn semantic_errors_say_the_fix() {
        let bad = MINIMAL.replace("consumers = 2", "consumers = 0");
        let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
        assert_eq!(err, "x.toml: variant demo: setup.consumers = 0: use at least 1");
        let bad = MINIMAL.replace("wrong = \"all\"", "wrong = \"most\"");
        let err = Scenario::parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(err.contains("use \"all\""), "{err}");
    }

    #[test]
    fn expectations_hold_or_not() {
        assert!(Expectation::All.holds(3, 3) && !Expectation::All.holds(2, 3));
        assert!(Expectation::None.holds(0, 3) && !Expectation::None.holds(1, 3));
        assert!(Expectation::Some.holds(1, 3) && !Expectation::Some.holds(0, 3));
        assert!(Expectation::Any.holds(0, 3) && Expectation::Exactly(2).holds(2, 3));
    }

    #[test]
    fn a_crash_fires_at_its_event_and_count_only() {
        let c = CrashSpec { consumer: 1, after: CrashPoint::Receive, event: Some("created".into()), entries: None };
        let job = |t: &str| Job { order: 42, event_type: t.into(), version: 1 };
        assert!(c.fires(1, 1, &job("created")));
        assert!(!c.fires(2, 1, &job("created")) && !c.fires(1, 1, &job("paid")));
        let n = CrashSpec { consumer: 1, after: CrashPoint::Receive, event: None, entries: Some(3) };
        assert!(!n.fires(1, 2, &job("paid")) && n.fires(1, 3, &job("paid")));
        let text = MINIMAL.replace(
            "consumers = 2",
            "consumers = 2\ncrash = { consumer = 3, after = \"receive\" }\nreaper = { min_idle_ms = 300 }",
        );
        let err = Scenario::parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("setup.crash.consumer = 3"), "{err}");
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncđe", 6), (2, 3));
        assert_eq!(line_col("x", 0), (1, 1));
    }
}
