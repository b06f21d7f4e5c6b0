//! How a stream consumer applies one order event: do the handler's work, then write the row,
//! possibly guarded by a lock or made conditional on a version. One file per strategy below,
//! each with its options, its write, its words in both languages and what the labs and roles
//! ask of it; `strategies!` lists them, one line each (see [`crate::handler`] for the shape
//! this registry shares with [`super::job`]).
//!
//! In a scenario file a strategy is its name (`strategy = "cas"`) or, with options, a table
//! naming it (`strategy = { kind = "lock", ttl_ms = 500 }`).

pub mod events;

use super::Described;
use crate::error::Error;
use crate::fault::TimeScale;
use crate::lang::Lang;
use crate::timeline::{Actor, EventKind, Job, Sink};
use rand_chacha::ChaCha8Rng;
use redis::aio::MultiplexedConnection;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What every strategy provides. Adding one: a file with a type implementing this and
/// [`Described`] (a struct of its options, or an empty one), and a line in `strategies!`.
/// The methods with a default answer what labs and roles ask of a strategy; a strategy
/// overrides the ones that concern it, in its own file.
#[allow(async_fn_in_trait)] // Consumers run on a single-threaded runtime.
pub trait StrategyKind: Described + Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + 'static {
    /// Apply one delivery: the handler's work, then the write.
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error>;

    /// One line naming what is wrong with the options, for the scenario check.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Set up what the strategy keeps in PostgreSQL besides the orders, empty, before a run.
    async fn prepare(&self, _pg: &tokio_postgres::Client) -> Result<(), Error> {
        Ok(())
    }

    /// Does a consumer process read through one fan-out reader handing entries to workers
    /// (the `fanout` role) rather than apply each entry itself (the `consumer` role)?
    fn reads_through_fanout(&self) -> bool {
        false
    }

    /// Handlers one consumer process runs at once (a fan-out reader's workers).
    fn handlers_per_consumer(&self) -> u32 {
        1
    }

    /// How long a consumer holds an entry waiting for its order's next version, if it holds
    /// entries across reads at all (ms, unscaled).
    fn gap_timeout_ms(&self) -> Option<f64> {
        None
    }

    /// The TTL of the per-order lock held while applying an event, if the strategy takes one.
    fn lock_ttl_ms(&self) -> Option<u64> {
        None
    }

    /// Beyond the handler's work, the longest one event may wait before its write (for a
    /// run's time bound; ms, unscaled).
    fn max_wait_per_event_ms(&self) -> f64 {
        0.0
    }

    /// Can no write of it ever lower a row's version (each write conditional on being newer)?
    fn never_lowers_version(&self) -> bool {
        false
    }
}

macro_rules! strategies {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$ty:ident) = $name:literal, )*) => {
        $( pub mod $module; )*

        /// How a consumer applies an event: one arm per strategy.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Strategy {
            $( $(#[$doc])* $variant($module::$ty), )*
        }

        /// The names a scenario file may give.
        pub const NAMES: &[&str] = &[$( $name ),*];

        impl Strategy {
            /// The name a scenario file gives (`kind` of the table form).
            pub fn name(&self) -> &'static str {
                match self { $( Strategy::$variant(_) => $name, )* }
            }

            /// Parse the name and its options (the table without `kind`).
            fn from_parts(name: &str, options: serde_json::Value) -> Result<Strategy, String> {
                match name {
                    $( $name => serde_json::from_value(options).map(Strategy::$variant).map_err(|e| format!("strategy {name}: {e}")), )*
                    other => Err(format!("unknown strategy {other:?}: use {}", NAMES.join(" | "))),
                }
            }

            /// The options as a table, without `kind` (empty for strategies without options).
            fn options(&self) -> serde_json::Value {
                let v = match self { $( Strategy::$variant(s) => serde_json::to_value(s), )* };
                v.expect("strategy options serialize")
            }

            /// The options of the strategy of type `T`, if it is this one: for the code that
            /// exists only for it (the fan-out role reads its `Fanout`).
            pub fn spec<T: StrategyKind>(&self) -> Option<&T> {
                match self { $( Strategy::$variant(s) => (s as &dyn std::any::Any).downcast_ref::<T>(), )* }
            }

            /// Apply one delivery with this strategy.
            pub async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
                match self { $( Strategy::$variant(s) => s.apply(h, d).await, )* }
            }

            pub async fn prepare(&self, pg: &tokio_postgres::Client) -> Result<(), Error> {
                match self { $( Strategy::$variant(s) => s.prepare(pg).await, )* }
            }

            /// The strategy in one phrase of the set-up line.
            pub fn describe(&self, lang: Lang) -> String {
                match self { $( Strategy::$variant(s) => s.describe(lang), )* }
            }

            /// The strategy in a few words, for the SUMMARY table (English).
            pub fn short(&self) -> String {
                match self { $( Strategy::$variant(s) => s.short(), )* }
            }

            /// See [`StrategyKind::check`].
            pub fn check(&self) -> Result<(), String> {
                match self { $( Strategy::$variant(s) => s.check(), )* }
            }

            /// See [`StrategyKind::reads_through_fanout`].
            pub fn reads_through_fanout(&self) -> bool {
                match self { $( Strategy::$variant(s) => s.reads_through_fanout(), )* }
            }

            /// See [`StrategyKind::handlers_per_consumer`].
            pub fn handlers_per_consumer(&self) -> u32 {
                match self { $( Strategy::$variant(s) => s.handlers_per_consumer(), )* }
            }

            /// See [`StrategyKind::gap_timeout_ms`].
            pub fn gap_timeout_ms(&self) -> Option<f64> {
                match self { $( Strategy::$variant(s) => s.gap_timeout_ms(), )* }
            }

            /// See [`StrategyKind::lock_ttl_ms`].
            pub fn lock_ttl_ms(&self) -> Option<u64> {
                match self { $( Strategy::$variant(s) => s.lock_ttl_ms(), )* }
            }

            /// See [`StrategyKind::max_wait_per_event_ms`].
            pub fn max_wait_per_event_ms(&self) -> f64 {
                match self { $( Strategy::$variant(s) => s.max_wait_per_event_ms(), )* }
            }

            /// See [`StrategyKind::never_lowers_version`].
            pub fn never_lowers_version(&self) -> bool {
                match self { $( Strategy::$variant(s) => s.never_lowers_version(), )* }
            }
        }
    };
}

strategies! {
    /// `UPDATE … WHERE id=$id`: last writer wins.
    Plain(plain::Plain) = "plain",
    /// `UPDATE … WHERE id=$id AND version < $v`.
    Cas(cas::CasSpec) = "cas",
    /// Plain UPDATE inside a per-order Redis lock.
    Lock(lock::LockSpec) = "lock",
    /// `INSERT … ON CONFLICT (id) DO UPDATE … WHERE orders.version < EXCLUDED.version`.
    Upsert(conditional_upsert::ConditionalUpsert) = "upsert",
    /// CAS UPDATE, and if it matched nothing, INSERT a little later (check-then-act).
    UpdateThenInsert(update_then_insert::UpdateThenInsertSpec) = "update-then-insert",
    /// Events carry the whole state; keep the newest.
    State(state::KeepNewestState) = "state",
    /// Events carry a change; apply it to the stored document, optionally only if newer.
    Delta(delta::Delta) = "delta",
    /// Hold an order's events until the next expected version arrives.
    ReorderBuffer(reorder_buffer::ReorderBufferSpec) = "reorder-buffer",
    /// Remember applied events in a table in the same transaction.
    Idempotent(idempotent::Idempotent) = "idempotent",
    /// S3: one reader hands entries to a worker per order.
    Fanout(fanout::Fanout) = "fanout",
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Plain(plain::Plain {})
    }
}

impl Serialize for Strategy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut options = self.options();
        match options.as_object_mut() {
            Some(m) if !m.is_empty() => {
                m.insert("kind".into(), self.name().into());
                options.serialize(s)
            }
            _ => s.serialize_str(self.name()),
        }
    }
}

impl<'de> Deserialize<'de> for Strategy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let (name, options) = match value {
            serde_json::Value::String(name) => (name, serde_json::Value::Object(Default::default())),
            serde_json::Value::Object(mut m) => match m.remove("kind") {
                Some(serde_json::Value::String(name)) => (name, serde_json::Value::Object(m)),
                _ => {
                    return Err(serde::de::Error::custom(format!(
                        "a strategy table needs kind = \"…\" ({})",
                        NAMES.join(" | ")
                    )))
                }
            },
            _ => return Err(serde::de::Error::custom(format!("strategy: use a name ({})", NAMES.join(" | ")))),
        };
        Strategy::from_parts(&name, options).map_err(serde::de::Error::custom)
    }
}

/// What a strategy may use while applying an event.
pub struct Handler<'a> {
    pub actor: Actor,
    pub redis: &'a mut MultiplexedConnection,
    pub pg: &'a tokio_postgres::Client,
    pub sink: &'a dyn Sink,
    pub scale: TimeScale,
    pub rng: &'a mut ChaCha8Rng,
    /// Prefix of every Redis key of this run (isolation); reports show keys without it.
    pub key_prefix: &'a str,
    /// The server has `DELEX key IFEQ token` (Redis ≥ 8.4).
    pub has_delex: bool,
}

/// One entry as the consumer received it.
pub struct Delivery<'a> {
    pub entry_id: &'a str,
    pub job: &'a Job,
    /// Injected handler work in unscaled ms.
    pub cost_ms: f64,
    /// What the entry carries beyond order, type and version.
    pub payload: &'a Payload,
}

/// What an entry carries beyond order, type and version: a state event's whole document
/// (field `state`), or a delta event's change (field `change`, an item as JSON).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    pub state: Option<String>,
    pub change: Option<String>,
}

impl Payload {
    pub fn of(entry: &redis::streams::StreamId) -> Payload {
        Payload { state: entry.get("state"), change: entry.get("change") }
    }
}

impl Handler<'_> {
    fn emit(&self, kind: EventKind) {
        self.sink.emit(self.actor, kind);
    }

    /// Record a write of `rows` rows; `version` is shown for conditional writes.
    fn wrote(&self, d: &Delivery<'_>, version: Option<i64>, rows: u64) {
        self.emit(EventKind::Wrote {
            entry_id: d.entry_id.to_string(),
            order: d.job.order,
            status: d.job.event_type.clone(),
            version,
            rows,
        });
    }

    /// The handler's own work: the injected sleep standing in for an API call or a DB write.
    async fn work(&self, d: &Delivery<'_>) {
        self.emit(EventKind::WorkStarted { entry_id: d.entry_id.to_string(), ms: d.cost_ms * self.scale.0 });
        self.scale.sleep(d.cost_ms).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_value: &str) -> Result<Strategy, String> {
        #[derive(Deserialize)]
        struct W {
            strategy: Strategy,
        }
        toml::from_str::<W>(&format!("strategy = {toml_value}"))
            .map(|w| w.strategy)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_name_or_a_table_with_kind() {
        assert_eq!(parse("\"plain\"").unwrap(), Strategy::default());
        let lock = parse("{ kind = \"lock\", ttl_ms = 500 }").unwrap();
        assert_eq!(
            lock,
            Strategy::Lock(lock::LockSpec {
                ttl_ms: 500,
                retry_ms: 20,
                prework_max_ms: 0,
                release: Default::default()
            })
        );
        assert_eq!(parse("\"lock\"").unwrap(), Strategy::Lock(lock::LockSpec::default()));
    }

    #[test]
    fn bad_strategies_say_what_to_write() {
        assert!(parse("\"lok\"").unwrap_err().starts_with("unknown strategy \"lok\": use plain | cas"));
        let e = parse("{ kind = \"lock\", ttl = 5 }").unwrap_err();
        assert!(e.starts_with("strategy lock: unknown field `ttl`"), "{e}");
        assert!(parse("{ ttl_ms = 5 }").unwrap_err().contains("needs kind"));
        assert!(parse("{ kind = \"plain\", x = 1 }").unwrap_err().starts_with("strategy plain: unknown field `x`"));
    }

    #[test]
    fn a_worker_from_a_command_line_is_told_the_lock_ordlab_s_own_consumer_takes() {
        let lock = lock::LockSpec { ttl_ms: 500, retry_ms: 20, prework_max_ms: 30, release: Default::default() };
        let env = lock.worker_env("run7:", crate::fault::TimeScale(0.5), false);
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("ORDLAB_LOCK_PREFIX", "run7:lock:order:"),
                ("ORDLAB_LOCK_PREWORK_MAX_MS", "15"),
                ("ORDLAB_LOCK_RELEASE", "EVAL"),
                ("ORDLAB_LOCK_RETRY_MS", "10"),
                ("ORDLAB_LOCK_TTL_MS", "250"),
            ]
        );
        assert_eq!(lock.worker_env("", crate::fault::TimeScale(1.0), true)["ORDLAB_LOCK_RELEASE"], "DELEX");
    }

    #[test]
    fn labs_ask_the_strategy_not_its_name() {
        let fanout = parse("{ kind = \"fanout\", workers = 3 }").unwrap();
        assert!(fanout.reads_through_fanout() && fanout.handlers_per_consumer() == 3);
        assert_eq!(fanout.spec::<fanout::Fanout>().map(|f| f.workers), Some(3));
        assert!(parse("{ kind = \"fanout\", workers = 0 }").unwrap().check().is_err());
        let lock = parse("{ kind = \"lock\", ttl_ms = 500, prework_max_ms = 20 }").unwrap();
        assert_eq!((lock.lock_ttl_ms(), lock.max_wait_per_event_ms()), (Some(500), 520.0));
        assert!(lock.spec::<fanout::Fanout>().is_none() && !lock.reads_through_fanout());
        assert_eq!(parse("\"reorder-buffer\"").unwrap().gap_timeout_ms(), Some(1000.0));
        assert!(parse("\"cas\"").unwrap().never_lowers_version() && !Strategy::default().never_lowers_version());
        let plain = Strategy::default();
        assert_eq!((plain.lock_ttl_ms(), plain.gap_timeout_ms(), plain.handlers_per_consumer()), (None, None, 1));
    }

    #[test]
    fn serialized_as_written() {
        assert_eq!(serde_json::to_string(&Strategy::default()).unwrap(), "\"plain\"");
        let s = Strategy::ReorderBuffer(reorder_buffer::ReorderBufferSpec { gap_timeout_ms: 500.0 });
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#"{"gap_timeout_ms":500.0,"kind":"reorder-buffer"}"#);
        assert_eq!(serde_json::from_str::<Strategy>(&json).unwrap(), s);
        for name in NAMES {
            let s: Strategy = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(s.name(), *name);
        }
    }
}
