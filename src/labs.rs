//! Lab families and their kinds. A family is a folder (`labs/<family>/`) with its kinds, and
//! the roles, checkers, charts and events only it uses; `lab_families!` below names each family
//! and its kinds, once, and is the only place that does.
//!
//! A kind is a spec (the keys of its scenario `[setup]`) that implements [`LabProcedure`] (how
//! it runs), [`Judge`] (what a run observed and its verdict, pure) and [`Present`] (its words in
//! both languages); a family's `FAMILY` lists its events ([`VOCABULARIES`]) and processes
//! ([`ROLES`]). What several families share lives here (the core: procedure, context, record,
//! consumer_group, order_stream) or in a shared module of the crate, never in a sibling kind.

mod consumer_group;
mod context;
pub mod cross_table;
pub mod handler_time;
pub mod key_events;
pub mod order_stream;
mod procedure;
mod record;

pub use crate::lang::{Line, Piece};
pub use context::RunContext;
pub use procedure::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Needs, NoFacts, Present, RunNotes, RunOutcome, RunView,
    TimelineDisplay, VariantRuns,
};
pub use record::RunRecord;

use crate::chart::Chart;
use crate::checker::{RunVerdict, Verdict};
use crate::error::Error;
use crate::lang::{Lang, Words};
use crate::roles::{role, RoleEntry, RoleRegistry};
use crate::timeline::vocabulary::{entry, Entry, Registry};
use serde::{Deserialize, Serialize};

/// The vocabularies and roles that several families share; each family lists its own in its
/// [`Family`] (its module's `FAMILY`).
const SHARED_VOCABULARIES: &[Entry] = &[
    entry::<crate::handler::order::events::HandlerEvent>(),
    entry::<crate::handler::job::events::JobEvent>(),
    entry::<crate::priority_queue::PriorityEvent>(),
    entry::<crate::list_queue::events::ListEvent>(),
    entry::<crate::cluster_queue::ClusterEvent>(),
    entry::<crate::interposer::limits::WireEvent>(),
    entry::<crate::interposer::connections::ConnectionEvent>(),
    entry::<crate::pg_locks::LockEvent>(),
    entry::<crate::timeline::patience::PatienceEvent>(),
    entry::<crate::fault::FaultEvent>(),
    entry::<crate::roles::patience::PatienceEvent>(),
];

const SHARED_ROLES: &[RoleEntry] = &[
    role::<crate::roles::consumer::ConsumerConfig>(),
    role::<crate::roles::claimer::ClaimerConfig>(),
    role::<crate::roles::cluster_worker::ClusterWorkerConfig>(),
];

/// What a family adds to the registries besides its kinds: the events and the roles only it
/// uses.
pub struct Family {
    pub vocabularies: &'static [Entry],
    pub roles: &'static [RoleEntry],
    /// The tables it draws over many labs' variants (the library matrix), for the report.
    pub tables: &'static [TableOf],
}

/// A family's table over many labs' variants: None where none of them is the family's.
pub type TableOf = fn(&[cross_table::VariantRef<'_>]) -> Option<cross_table::CrossTable>;

impl Family {
    /// A family with no events or roles of its own.
    pub const NOTHING_OF_ITS_OWN: Family = Family { vocabularies: &[], roles: &[], tables: &[] };
}

/// Why a `[setup]` table does not make a spec: the key path where it went wrong, if known,
/// and serde's message (which names an unknown or missing key).
#[derive(Debug)]
pub struct SetupError {
    pub path: Vec<String>,
    pub message: String,
}

/// Deserialize a spec from a merged `[setup]` table, keeping the path of an error.
fn parse_spec<P: Judge>(setup: toml::Value) -> Result<P, SetupError> {
    serde_path_to_error::deserialize(setup).map_err(|e| SetupError {
        path: e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                _ => None,
            })
            .collect(),
        message: e.inner().message().trim().replace('\n', " "),
    })
}

/// One variant of a lab as the charts that compare variants read it.
pub struct VariantOf<'a> {
    pub id: &'a str,
    pub title: &'a Words,
    pub procedure: &'a Procedure,
    pub records: &'a [RunRecord],
}

fn view<'a, O>(record: &'a RunRecord, observed: &'a O) -> RunView<'a, O> {
    RunView { run: record.run, events: &record.events, timed_out: record.timed_out, observed }
}

/// The runs among `records` whose observation is of the kind `pick` accepts, as views.
fn views<'a, O>(records: &'a [RunRecord], pick: impl Fn(&'a Observed) -> Option<&'a O>) -> Vec<RunView<'a, O>> {
    records.iter().filter_map(|r| pick(&r.observed).map(|o| view(r, o))).collect()
}

/// A lab kind as one arm of [`Procedure`] and [`Observed`]: typed access to a spec, what its
/// runs observed and what they measured, for code (and tests) that know the kind.
pub trait Kind: LabProcedure {
    /// The spec, if `procedure` is of this kind.
    fn spec_of(procedure: &Procedure) -> Option<&Self>;
    /// What the run observed, if `observed` is of this kind.
    fn observed_of(observed: &Observed) -> Option<&Self::Observed>;
}

/// A record whose observation belongs to another kind: only a hand-edited results file.
fn mismatch(record: &RunRecord) -> RunVerdict {
    let mut v = RunVerdict::right();
    v.add(Verdict::Unknown, format!("run {} records a {} run, not this kind", record.run, record.observed.kind()));
    v
}

/// A run's verdict: the kind's judgement, with a reason for each fault it declares that never
/// fired. A right run with such a fault is unknown (it did not show what the lab says it shows:
/// never a silent right); a wrong one stays wrong (its final state is wrong whatever fired:
/// a job lost before its fault's point never reaches it).
fn judged<P: Judge>(p: &P, run: &RunView<'_, P::Observed>) -> RunVerdict {
    let mut v = p.judge(run);
    let unfired = crate::fault::unfired(&p.faults(run.observed), run.events);
    if !unfired.is_empty() {
        v.reasons.extend(unfired);
        if v.verdict != Verdict::Wrong {
            v.verdict = Verdict::Unknown;
        }
    }
    v
}

/// The families, each a module of its own, and their kinds, one line each: what `lab_kinds!`
/// turns into the enums and dispatch below.
macro_rules! lab_families {
    ($( $(#[$fdoc:meta])* $family:ident { $( $(#[$doc:meta])* $kind:ident($module:ident::$spec:ident) = $name:literal, )* } )*) => {
        $( $(#[$fdoc])* pub mod $family; )*

        /// The families by module name (a scenario's `family` is the same with `-` for `_`).
        pub const FAMILY_NAMES: &[&str] = &[$( stringify!($family) ),*];

        /// Every vocabulary of events beyond the core ones ([`crate::timeline::EventKind`]): the
        /// reporters word and draw any event through it, and match on none of them.
        pub static VOCABULARIES: Registry = Registry(&[SHARED_VOCABULARIES, $( $family::FAMILY.vocabularies, )*]);

        /// Every role a lab can start as a process of its own: `ordlab __role` finds a child's
        /// role here by the name in its config.
        pub static ROLES: RoleRegistry = RoleRegistry(&[SHARED_ROLES, $( $family::FAMILY.roles, )*]);

        /// Every family's tables over many labs' variants.
        static TABLES: &[&[TableOf]] = &[$( $family::FAMILY.tables, )*];

        /// The tables the families draw over `variants` (every variant of every lab at hand).
        pub fn cross_tables(variants: &[cross_table::VariantRef<'_>]) -> Vec<cross_table::CrossTable> {
            TABLES.iter().flat_map(|t| t.iter()).filter_map(|table| table(variants)).collect()
        }
        lab_kinds! { $( $( $(#[$doc])* $kind($family::$module::$spec) = $name, )* )* }
    };
}

macro_rules! lab_kinds {
    ($( $(#[$doc:meta])* $kind:ident($($path:ident)::+) = $name:literal, )*) => {

        /// A lab procedure and its spec: one arm per kind.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum Procedure {
            $( $(#[$doc])* #[serde(rename = $name)] $kind($($path)::+), )*
        }

        /// What one run observed, typed by its procedure.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum Observed {
            $( #[serde(rename = $name)] $kind(<$($path)::+ as Judge>::Observed), )*
        }

        $(
            impl Kind for $($path)::+ {
                fn spec_of(procedure: &Procedure) -> Option<&Self> {
                    match procedure {
                        Procedure::$kind(p) => Some(p),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn observed_of(observed: &Observed) -> Option<&Self::Observed> {
                    match observed {
                        Observed::$kind(o) => Some(o),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )*

        impl Observed {
            pub fn kind(&self) -> &'static str {
                match self { $( Observed::$kind(_) => $name, )* }
            }
        }

        impl Procedure {
            /// Every kind, by the name a scenario gives in `kind = "…"`.
            pub const KINDS: &'static [&'static str] = &[$( $name ),*];

            pub fn kind(&self) -> &'static str {
                match self { $( Procedure::$kind(_) => $name, )* }
            }

            /// The spec of `kind` from a merged `[setup]` table (without `kind`).
            pub fn from_setup(kind: &str, setup: toml::Value) -> Result<Procedure, SetupError> {
                match kind {
                    $( $name => Ok(Procedure::$kind(parse_spec(setup)?)), )*
                    other => Err(SetupError {
                        path: vec!["kind".into()],
                        message: format!("unknown kind {other:?}: use {}", Self::KINDS.join(" | ")),
                    }),
                }
            }

            pub fn validate(&mut self) -> Result<(), String> {
                match self { $( Procedure::$kind(p) => p.validate(), )* }
            }

            /// Run once and judge the run.
            pub async fn run_once(&self, ctx: &mut RunContext<'_>) -> Result<RunRecord, Error> {
                match self { $( Procedure::$kind(p) => {
                    let out = p.run(ctx).await?;
                    let events = crate::timeline::place(out.raw, out.t0_ns);
                    let verdict = judged(p, &RunView { run: ctx.run, events: &events, timed_out: out.timed_out, observed: &out.observed });
                    Ok(RunRecord { run: ctx.run, events, timed_out: out.timed_out, observed: Observed::$kind(out.observed), verdict })
                } )* }
            }

            /// Can `explore` step this variant? Err: why not, in one line.
            pub fn explorable(&self) -> Result<(), String> {
                match self { $( Procedure::$kind(p) => p.explorable(), )* }
            }

            pub fn needs(&self) -> Needs {
                match self { $( Procedure::$kind(p) => p.needs(), )* }
            }

            pub fn missing(&self, server: &crate::service::ServerInfo) -> Option<String> {
                match self { $( Procedure::$kind(p) => p.missing(server), )* }
            }

            pub fn judge(&self, record: &RunRecord) -> RunVerdict {
                match self { $( Procedure::$kind(p) => with_view(p, record, |o| judged(p, o)).unwrap_or_else(|| mismatch(record)), )* }
            }

            /// The events `record`'s verdict rests on, in event order: the moments every kind
            /// shares (a death, the lab giving up, a fault, a command given up on, a lock wait,
            /// a change never committed) and the kind's own. What a picture of the run must show.
            pub fn evidence(&self, record: &RunRecord) -> Vec<crate::checker::evidence::Evidence> {
                let mut all = crate::checker::evidence::common(&record.events);
                match self { $( Procedure::$kind(p) => all.extend(with_view(p, record, |o| p.evidence(o)).unwrap_or_default()), )* }
                all.sort_by_key(|e| (e.index, e.why));
                all.dedup_by_key(|e| e.index);
                all
            }

            /// The events `record`'s verdict rests on, by index, the most important first: the
            /// kind's key events (see [`Judge::key_events`]), then its [`Self::evidence`] (a death,
            /// a fault, a command given up on, a lock wait) not already among them. What a picture
            /// draws its windows around.
            pub fn key_events(&self, record: &RunRecord) -> Vec<usize> {
                let mut keys = match self { $( Procedure::$kind(p) => with_view(p, record, |o| p.key_events(o)).unwrap_or_default(), )* };
                for e in self.evidence(record) {
                    if !keys.contains(&e.index) {
                        keys.push(e.index);
                    }
                }
                keys
            }

            pub fn final_state(&self, record: &RunRecord) -> Vec<FinalItem> {
                match self { $( Procedure::$kind(p) => with_view(p, record, |o| p.final_state(o.observed)).unwrap_or_default(), )* }
            }

            /// What `record` measured, typed: None where the procedure or the record is of
            /// another kind than `P`.
            pub fn facts_of<P: Kind>(&self, record: &RunRecord) -> Option<P::Facts> {
                let spec = P::spec_of(self)?;
                with_view(spec, record, |run| spec.facts(run))
            }

            /// What `record` measured, as the rows a report prints (`name=value`).
            pub fn fact_rows(&self, record: &RunRecord) -> Vec<FactRow> {
                match self { $( Procedure::$kind(p) => with_view(p, record, |o| p.facts(o).rows()).unwrap_or_default(), )* }
            }

            pub fn intended(&self) -> Option<Vec<crate::checker::fates::Intended>> {
                match self { $( Procedure::$kind(p) => p.intended(), )* }
            }

            /// What became of every intended event in `record`; None where the lab delivers
            /// nothing through a queue.
            pub fn fates(&self, record: &RunRecord) -> Option<crate::checker::fates::Fates> {
                self.intended().map(|i| crate::checker::fates::fates(&i, &record.events))
            }

            pub fn critical_path_ms(&self, record: &RunRecord, scale: f64) -> Option<f64> {
                match self { $( Procedure::$kind(p) => p.critical_path_ms(&record.events, scale), )* }
            }

            pub fn describe(&self, lang: Lang) -> String {
                match self { $( Procedure::$kind(p) => p.describe(lang), )* }
            }

            pub fn approach(&self) -> String {
                match self { $( Procedure::$kind(p) => p.approach(), )* }
            }

            pub fn wrong_means(&self, lang: Lang) -> String {
                match self { $( Procedure::$kind(p) => p.wrong_means(lang), )* }
            }

            /// How the run's timeline is shown (see [`TimelineDisplay`]).
            pub fn timeline(&self) -> TimelineDisplay {
                match self { $( Procedure::$kind(p) => p.timeline(), )* }
            }

            pub fn notes(&self, record: &RunRecord, lang: Lang) -> RunNotes {
                match self { $( Procedure::$kind(p) => with_view(p, record, |o| p.notes(o, lang)).unwrap_or_default(), )* }
            }

            pub fn per_run_lines(&self, records: &[RunRecord], lang: Lang) -> Vec<Line> {
                match self { $( Procedure::$kind(p) => p.per_run_lines(&views(records, <$($path)::+ as Kind>::observed_of), lang), )* }
            }

            pub fn summary_note(&self, records: &[RunRecord]) -> Option<String> {
                match self { $( Procedure::$kind(p) => p.summary_note(&views(records, <$($path)::+ as Kind>::observed_of)), )* }
            }

            pub fn table_row(&self, record: &RunRecord, lang: Lang) -> Option<Vec<(String, Line)>> {
                match self { $( Procedure::$kind(p) => with_view(p, record, |o| p.table_row(o, lang)).flatten(), )* }
            }

            /// The variant's own charts (see [`Present::charts`]).
            pub fn charts(&self, records: &[RunRecord]) -> Vec<Chart> {
                match self { $( Procedure::$kind(p) => p.charts(&views(records, <$($path)::+ as Kind>::observed_of)), )* }
            }

            /// Charts comparing the variants of one lab, by the kind of its first variant
            /// (see [`Present::compare`]); variants of another kind are left out.
            pub fn compare_charts(variants: &[VariantOf<'_>]) -> Vec<Chart> {
                let Some(first) = variants.first() else { return Vec::new() };
                match first.procedure { $( Procedure::$kind(_) => compare::<$($path)::+>(variants), )* }
            }
        }
    };
}

/// `f` of `record` seen as a run of `spec`'s kind; None where it is of another kind.
fn with_view<P: Kind, T>(_spec: &P, record: &RunRecord, f: impl FnOnce(&RunView<'_, P::Observed>) -> T) -> Option<T> {
    P::observed_of(&record.observed).map(|o| f(&view(record, o)))
}

/// [`Present::compare`] of the variants whose spec is of kind `P`.
fn compare<P: Kind>(variants: &[VariantOf<'_>]) -> Vec<Chart> {
    let runs: Vec<VariantRuns<'_, P>> = variants
        .iter()
        .filter_map(|v| {
            P::spec_of(v.procedure).map(|spec| VariantRuns {
                id: v.id,
                title: v.title,
                spec,
                runs: views(v.records, P::observed_of),
            })
        })
        .collect();
    P::compare(&runs)
}

/// The [`TimelineDisplay`] choices one by one, for callers that read one.
impl Procedure {
    pub fn shows_publishing(&self) -> bool {
        self.timeline().shows_publishing
    }

    pub fn many_orders(&self) -> bool {
        self.timeline().many_orders
    }

    pub fn processes_interleave_freely(&self) -> bool {
        self.timeline().processes_interleave_freely
    }

    pub fn per_process_stable(&self) -> bool {
        self.timeline().per_process_stable
    }

    pub fn wire_read_as_kind_events(&self) -> bool {
        self.timeline().wire_read_as_kind_events
    }
}

lab_families! {
    /// Order events on a stream, applied by consumers with a strategy (and two SQL sessions).
    ordering {
        /// A producer publishes events to a stream; consumer processes apply them with a strategy.
        Stream(stream::StreamSpec) = "stream",
        /// Two PostgreSQL sessions race on one row per case.
        SqlRace(sql_race::SqlRaceSpec) = "sql-race",
    }
    /// What a failover does to delivery: a promoted replica, lost and redelivered entries.
    delivery {
        /// A primary and an asynchronous replica; the primary dies, the replica is promoted.
        Failover(failover::FailoverSpec) = "failover",
    }
    /// The transactional outbox: the state change and its row in one transaction, dispatchers.
    outbox {
        /// Outbox rows published to the stream by dispatchers; consumers apply the stream.
        Outbox(outbox::OutboxSpec) = "outbox",
        /// The state change and its outbox row in one transaction, rolled back.
        OutboxRollback(outbox_rollback::OutboxRollbackSpec) = "outbox-rollback",
    }
    /// Many orders at once: throughput, latency and the limits of one reader.
    load {
        /// Many orders, every strategy side by side: throughput, latency, wrong orders.
        Load(load::LoadSpec) = "load",
        /// One fan-out reader, more and more workers: where the reader becomes the limit.
        ReaderCeiling(reader_ceiling::ReaderCeilingSpec) = "reader-ceiling",
    }
    /// Seed 000's priority queues: a stream per priority, or one sorted set.
    priority {
        /// One stream per priority and a worker polling them with a strict or weighted loop.
        Priority(priority::PrioritySpec) = "priority",
        /// One sorted set, the score as the priority, a worker popping the highest.
        Zset(zset::ZsetSpec) = "zset",
    }
    /// Seed 000's jobs with side effects: idempotency techniques and the production pipeline.
    idempotency {
        /// Jobs with side effects under at-least-once delivery: an idempotency technique, crashes
        /// at named points, a partner that fails; effects counted in the side-effect sink.
        Jobs(jobs::JobsSpec) = "jobs",
        /// The seed's production queue end to end: priority streams, several workers, retries, a
        /// DLQ; every job counted once from the sink's ledger and the DLQ.
        Pipeline(pipeline::PipelineSpec) = "pipeline",
    }
    /// Seed 003's list queue: a processing list, leases, retries, and more workers.
    list_queue {
        /// Seed 003's list queue: workers, a processing list, leases, retries, poison payloads.
        ListQueue(list_queue::ListQueueSpec) = "list-queue",
        /// 1, 2, 4, 8 worker processes on a list or a stream group: where more stop helping, and why.
        QueueScale(queue_scale::QueueScaleSpec) = "queue-scale",
    }
    /// What a Redis that holds a queue keeps: after a crash, and when its memory is full.
    durability {
        /// A steady producer, redis-server SIGKILLed and restarted on its own files.
        Persistence(persistence::PersistenceSpec) = "persistence",
        /// A Redis that is also a cache fills up while the queue grows, under a maxmemory policy.
        Eviction(eviction::EvictionSpec) = "eviction",
    }
    /// Real job-queue libraries (RQ, Celery, BullMQ, …) at pinned versions as the system under test.
    library {
        /// A library's own client, worker processes and state, a fault at a named command.
        Library(job_queue::LibrarySpec) = "library",
    }
    /// Seed 003's list queue past one node: a Redis Cluster.
    cluster {
        /// A list queue on a Redis Cluster: one key on one master, hash tags, order per key,
        /// a hash slot moved while workers run.
        Cluster(cluster::ClusterSpec) = "cluster",
    }
}

#[cfg(test)]
mod tests {
    use crate::timeline::EventKind;

    #[test]
    fn every_event_kind_and_role_has_one_owner() {
        assert_eq!(super::VOCABULARIES.clashes(), Vec::<&str>::new());
        assert_eq!(super::ROLES.clashes(), Vec::<&str>::new());
        for k in super::VOCABULARIES.kinds() {
            assert!(!EventKind::CORE_KINDS.contains(&k), "{k} is a core event's tag");
        }
    }
}
