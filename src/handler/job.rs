//! How a job handler keeps a job's side effects to one: the seed's four techniques (a `SET NX`
//! claim, a unique row, an absolute write, a state check), its idempotent wrapper and
//! multi-step job as written, the anti-patterns it warns about, and the corrections (a lease
//! that becomes "done" only after the effect, the partner's own idempotency key).
//! `techniques!` lists them, one line each (see [`crate::handler`] for the shape this registry
//! shares with [`super::order`]); each is a type in the file of its family (the seed's
//! sections: one key per job in `claim`, the worker's database in `state`, Redis values in
//! `counter`, `lease`, `multistep`), with its options, its steps and its words. The pipeline
//! lab's `handle_message` ([`pipeline`]) is a handler of the same family with a richer answer
//! (ack, leave pending, dead-letter).
//!
//! Each technique is a faithful port of the seed's Python, step by step, on a [`JobRun`]: every
//! command it sends is on the timeline with the server's answer, its effects go to the
//! side-effect sink (or to a Redis counter for the `INCR`/`SET` techniques), and it passes the
//! named crash points where a planned SIGKILL can stop it.
//!
//! In a scenario file a technique is a table naming it:
//! `technique = { kind = "set-nx", ttl_ms = 86400000 }`.

mod claim;
mod counter;
pub mod events;
mod lease;
mod multistep;
pub mod pipeline;
mod state;

/// The Lua scripts a technique may call (`EVALSHA`): loaded before a stepped run.
pub const SCRIPTS: &[&str] = &[lease::RELEASE];

pub use multistep::MultistepForm;
pub use state::create_tables_sql;

use super::Described;
use crate::error::{Context, Error};
use crate::fault::{HandlerPoint, TimeScale};
use crate::handler::job::events::JobEvent;
use crate::handler::job::events::{FailReason, SkipReason};
use crate::lang::Lang;
use crate::side_effect::{EffectRequest, SideEffectSink, SinkError};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, StdoutSink};
use redis::aio::MultiplexedConnection;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What every technique provides. Adding one: a type implementing this and [`Described`]
/// (a struct of its options, `{}` without any, `#[serde(deny_unknown_fields)]`) in its
/// family's file, and a line in `techniques!`. The methods with a default answer what the
/// job labs ask of a technique; a technique overrides the ones that concern it.
#[allow(async_fn_in_trait)] // Workers run on a single-threaded runtime.
pub trait TechniqueKind: Described + Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned {
    /// Handle one delivery of `run.job`.
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error>;

    /// The effects one job asks for, in the order it asks for them: the columns the lab
    /// counts. `effect` is the partner's effect, the one effect of most techniques.
    fn effects(&self, effect: &str) -> Vec<String> {
        vec![effect.to_string()]
    }

    /// Does it read or write the worker's own database (tables to reset per run)?
    fn uses_database(&self) -> bool {
        false
    }

    /// The TTL of the key it sets, as its option names it (`("ttl_ms", 86400000.0)`); None
    /// when it sets none. Whether the key can run out during a run decides whether the
    /// explorer can step it.
    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        None
    }

    /// The status the job is meant to leave its order's row in (`completed`), where it writes
    /// one: the final state the verdict reads besides the effects. None: it writes no order.
    fn order_status_after(&self) -> Option<&'static str> {
        None
    }
}

macro_rules! techniques {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$ty:ident) = $name:literal, )*) => {
        /// A technique and its options: one arm per technique.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum Technique {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($module::$ty), )*
        }

        /// The names a scenario file may give (`kind`).
        pub const NAMES: &[&str] = &[$( $name ),*];

        impl Technique {
            /// The name a scenario file gives (`kind`).
            pub fn name(&self) -> &'static str {
                match self { $( Technique::$variant(_) => $name, )* }
            }

            /// Handle one delivery of `run.job` with this technique.
            pub async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
                match self { $( Technique::$variant(t) => t.handle(run).await, )* }
            }

            /// See [`TechniqueKind::effects`].
            pub fn effects(&self, effect: &str) -> Vec<String> {
                match self { $( Technique::$variant(t) => t.effects(effect), )* }
            }

            /// See [`TechniqueKind::uses_database`].
            pub fn uses_database(&self) -> bool {
                match self { $( Technique::$variant(t) => t.uses_database(), )* }
            }

            /// See [`TechniqueKind::key_ttl`].
            pub fn key_ttl(&self) -> Option<(&'static str, f64)> {
                match self { $( Technique::$variant(t) => t.key_ttl(), )* }
            }

            /// See [`TechniqueKind::order_status_after`].
            pub fn order_status_after(&self) -> Option<&'static str> {
                match self { $( Technique::$variant(t) => t.order_status_after(), )* }
            }

            /// The technique in one phrase of the set-up line.
            pub fn describe(&self, lang: Lang) -> String {
                match self { $( Technique::$variant(t) => t.describe(lang), )* }
            }

            /// The technique in a few words, for the SUMMARY table (English).
            pub fn short(&self) -> String {
                match self { $( Technique::$variant(t) => t.short(), )* }
            }
        }
    };
}

techniques! {
    /// No protection: the effect, then XACK.
    NoProtection(claim::NoProtection) = "none",
    /// The seed's `send_email`: `SET job:done:<id> 1 NX EX ttl`, then the effect.
    SetNx(claim::SetNx) = "set-nx",
    /// Anti-pattern: check the key, the effect, then `SET … NX` (the seed: "SET NX sau side-effect").
    SetNxAfterEffect(claim::SetNxAfterEffect) = "set-nx-after-effect",
    /// The seed's `process_order`: `INSERT … ON CONFLICT DO NOTHING RETURNING`, then the effect.
    DbUnique(state::DbUnique) = "db-unique",
    /// The seed's `idempotent` context manager: `SET idem:<id> 1 NX EX ttl`, the effect, `DEL`
    /// on an exception (`delete_on_failure = false`: the anti-pattern that keeps the key).
    Wrapper(claim::Wrapper) = "wrapper",
    /// The seed's `mark_notification_sent`: read the status, the effect, then mark it sent.
    CheckState(state::CheckState) = "check-state",
    /// Corrected: `SET lease:<id> <token> NX PX lease_ms`, the effect, then `SET lease:<id> done`;
    /// with `sink_key`, the partner's idempotency key (the job id) on the effect too.
    Lease(lease::Lease) = "lease",
    /// The seed's `track_view_bad`: `INCR views:<id>`.
    Incr(counter::Incr) = "incr",
    /// The seed's `set_user_status`: `SET status:<id> shipped`.
    AbsoluteSet(counter::AbsoluteSet) = "absolute-set",
    /// The seed's `track_view_safe`: `SET view:done:<id> 1 NX EX ttl`, then `INCR`.
    IncrGuarded(counter::IncrGuarded) = "incr-guarded",
    /// Anti-pattern: `INCR views:<id>`, then the e-mail, in one retried job.
    IncrThenEmail(counter::IncrThenEmail) = "incr-then-email",
    /// Anti-pattern: one `SET NX` key for a job of two effects (charge, then e-mail).
    OneKeyMultistep(claim::OneKeyMultistep) = "one-key-multistep",
    /// The seed's `complete_order_job` (DB step first, then e-mail and partner API, each
    /// behind a `SET NX` key) as written, or with its early return removed, or corrected.
    Multistep(multistep::Multistep) = "multistep",
}

impl Technique {
    /// Effects kept in Redis (a counter or a value), not sent to the sink.
    pub fn is_redis_effect(effect: &str) -> bool {
        matches!(effect, "views" | "status")
    }
}

/// What a handler did with a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    Done,
    /// Nothing to do (already processed or done): acknowledged.
    Skipped(SkipReason),
    /// Left pending for a retry (or, in a pipeline, dead-lettered when not retryable).
    Failed(FailReason),
}

/// `1 row`, `0 rows`: what a RETURNING query gave back.
fn rows(n: usize) -> String {
    if n == 1 {
        "1 row".to_string()
    } else {
        format!("{n} rows")
    }
}

/// `EX 86400` when the TTL is whole seconds, `PX 500` otherwise: what the command says.
fn ttl_args(ms: u64) -> (&'static str, u64) {
    if ms % 1000 == 0 {
        ("EX", ms / 1000)
    } else {
        ("PX", ms)
    }
}

/// `EX 86400` or `PX 500`, as the set-up line names a TTL.
fn ttl_phrase(ms: f64) -> String {
    let (unit, n) = ttl_args(ms as u64);
    format!("{unit} {n}")
}

/// One delivery of one job, as a technique sees it: the connections, the job, and the
/// helpers that put every command and its answer on the timeline.
pub struct JobRun<'a> {
    pub actor: Actor,
    pub job: &'a str,
    /// The server's delivery count for this entry.
    pub deliveries: u64,
    /// The order a multi-step job completes.
    pub order: i64,
    /// The partner's effect for one-effect techniques (`email`).
    pub effect: &'a str,
    pub redis: &'a mut MultiplexedConnection,
    pub pg: &'a tokio_postgres::Client,
    pub sink: &'a SideEffectSink,
    /// Prefix of every Redis key of the run; timeline lines show keys without it.
    pub key_prefix: &'a str,
    pub scale: TimeScale,
    /// This process's lease token.
    pub token: &'a str,
    /// Leave the commands off the timeline (runs of thousands of jobs).
    pub quiet: bool,
}

impl JobRun<'_> {
    fn emit(&self, kind: EventKind) {
        use crate::timeline::Sink;
        StdoutSink.emit(self.actor, kind);
    }

    /// Put a command and its answer on the timeline.
    pub fn step(&self, command: String, result: impl Into<String>) {
        if self.quiet {
            return;
        }
        self.emit(JobEvent::JobStep { job: self.job.to_string(), command, result: result.into() }.event());
    }

    pub fn skipped(&self, reason: SkipReason) -> Handled {
        self.emit(JobEvent::JobSkipped { job: self.job.to_string(), reason }.event());
        Handled::Skipped(reason)
    }

    /// A named point of the handler: the process's faults there fire (a planned SIGKILL).
    pub fn crash_point(&self, point: HandlerPoint) {
        crate::fault::role::at_point(self.actor, point.name(), Some(self.job), Some(self.deliveries), || {
            point.detail()
        });
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.key_prefix)
    }

    /// `SET key value NX EX|PX ttl`: true when it was set.
    pub async fn set_nx(&mut self, key: &str, value: &str, ttl_ms: f64) -> Result<bool, Error> {
        // A server timer: under the explorer it runs out only as its timer step.
        let (unit, n) = ttl_args(self.scale.timer_ms(ttl_ms as u64));
        let reply: Option<String> = redis::cmd("SET")
            .arg(self.full_key(key))
            .arg(value)
            .arg("NX")
            .arg(unit)
            .arg(n)
            .query_async(self.redis)
            .await
            .context("SET NX")?;
        self.step(format!("SET {key} {value} NX {unit} {n}"), if reply.is_some() { "OK" } else { "nil" });
        Ok(reply.is_some())
    }

    /// `SET key value` (no TTL).
    pub async fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let _: () =
            redis::cmd("SET").arg(self.full_key(key)).arg(value).query_async(self.redis).await.context("SET")?;
        self.step(format!("SET {key} {value}"), "OK");
        Ok(())
    }

    pub async fn get(&mut self, key: &str) -> Result<Option<String>, Error> {
        let v: Option<String> =
            redis::cmd("GET").arg(self.full_key(key)).query_async(self.redis).await.context("GET")?;
        self.step(format!("GET {key}"), v.clone().unwrap_or_else(|| "nil".into()));
        Ok(v)
    }

    pub async fn exists(&mut self, key: &str) -> Result<bool, Error> {
        let n: i64 = redis::cmd("EXISTS").arg(self.full_key(key)).query_async(self.redis).await.context("EXISTS")?;
        self.step(format!("EXISTS {key}"), n.to_string());
        Ok(n > 0)
    }

    pub async fn del(&mut self, key: &str) -> Result<(), Error> {
        let n: i64 = redis::cmd("DEL").arg(self.full_key(key)).query_async(self.redis).await.context("DEL")?;
        self.step(format!("DEL {key}"), n.to_string());
        Ok(())
    }

    pub async fn incr(&mut self, key: &str) -> Result<i64, Error> {
        let n: i64 = redis::cmd("INCR").arg(self.full_key(key)).query_async(self.redis).await.context("INCR")?;
        self.step(format!("INCR {key}"), n.to_string());
        Ok(n)
    }

    /// Ask the partner for `effect`. A partner failure (refused, reply lost) is the
    /// handler's exception: Err(reason).
    pub async fn effect(&self, effect: &str, idem_key: Option<&str>) -> Result<Result<(), FailReason>, Error> {
        let deliveries = Some(self.deliveries as u32);
        let req = EffectRequest { job: self.job, effect, idem_key, actor: self.actor, delivery: deliveries };
        match self.sink.perform(&req).await {
            Ok(_) => Ok(Ok(())),
            Err(SinkError::Refused { .. }) => Ok(Err(FailReason::PartnerRefused)),
            Err(SinkError::ReplyLost { .. }) => Ok(Err(FailReason::ReplyLost)),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_value: &str) -> Result<Technique, String> {
        #[derive(Deserialize)]
        struct W {
            technique: Technique,
        }
        toml::from_str::<W>(&format!("technique = {toml_value}"))
            .map(|w| w.technique)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_table_with_kind_and_its_defaults() {
        let w = parse("{ kind = \"wrapper\", ttl_ms = 5 }").unwrap();
        assert_eq!(w, Technique::Wrapper(claim::Wrapper { ttl_ms: 5.0, delete_on_failure: true }));
        let m = parse("{ kind = \"multistep\", form = \"seed\" }").unwrap();
        assert_eq!(m, Technique::Multistep(multistep::Multistep { form: MultistepForm::Seed, ttl_ms: 86_400_000.0 }));
        assert_eq!(parse("{ kind = \"none\" }").unwrap().name(), "none");
    }

    #[test]
    fn bad_techniques_say_what_is_wrong() {
        assert!(parse("{ kind = \"lease\", lease = 5 }").unwrap_err().contains("unknown field `lease`"));
        assert!(parse("{ kind = \"none\", x = 1 }").unwrap_err().contains("unknown field `x`"));
        assert!(parse("{ kind = \"set-nz\" }").unwrap_err().contains("unknown variant `set-nz`"));
    }

    /// The JSON a result file and a role's config carry: the kind first, then the options.
    #[test]
    fn serialized_as_the_tagged_table() {
        let json = |t: &Technique| serde_json::to_string(t).unwrap();
        assert_eq!(json(&Technique::NoProtection(claim::NoProtection {})), r#"{"kind":"none"}"#);
        let lease = Technique::Lease(lease::Lease { lease_ms: 400.0, sink_key: true });
        assert_eq!(json(&lease), r#"{"kind":"lease","lease_ms":400.0,"sink_key":true}"#);
        for name in NAMES {
            let options = match *name {
                "multistep" => "form = \"corrected\"",
                "lease" => "lease_ms = 1",
                "set-nx" | "set-nx-after-effect" | "wrapper" | "incr-guarded" | "one-key-multistep" => "ttl_ms = 1",
                _ => "",
            };
            let sep = if options.is_empty() { "" } else { ", " };
            let t = parse(&format!("{{ kind = \"{name}\"{sep}{options} }}")).unwrap();
            assert_eq!(t.name(), *name);
            assert_eq!(serde_json::from_str::<Technique>(&json(&t)).unwrap(), t);
        }
    }
}
