//! How a job handler keeps a job's side effects to one: the seed's four techniques (a `SET NX`
//! claim, a unique row, an absolute write, a state check), its idempotent wrapper and
//! multi-step job as written, the anti-patterns it warns about, and the corrections (a lease
//! that becomes "done" only after the effect, the partner's own idempotency key).
//!
//! Each technique is a faithful port of the seed's Python, step by step, on a [`JobRun`]: every
//! command it sends is on the timeline with the server's answer, its effects go to the
//! side-effect sink (or to a Redis counter for the `INCR`/`SET` techniques), and it passes the
//! named crash points where a planned SIGKILL can stop it.

mod claim;
mod counter;
pub mod events;
mod lease;
mod multistep;
pub mod pipeline;
mod state;

pub use state::create_tables_sql;

use crate::error::{Context, Error};
use crate::fault::{crash_due, crash_now, HandlerPoint, JobCrash, TimeScale};
use crate::lang::Lang;
use crate::side_effect::{EffectRequest, SideEffectSink, SinkError};
use crate::technique::events::JobEvent;
use crate::technique::events::{FailReason, SkipReason};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, StdoutSink};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};

/// A technique and its options; `technique = { kind = "set-nx", ttl_ms = 86400000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Technique {
    /// No protection: the effect, then XACK.
    None,
    /// The seed's `send_email`: `SET job:done:<id> 1 NX EX ttl`, then the effect.
    SetNx { ttl_ms: f64 },
    /// Anti-pattern: check the key, the effect, then `SET … NX` (the seed: "SET NX sau side-effect").
    SetNxAfterEffect { ttl_ms: f64 },
    /// The seed's `process_order`: `INSERT … ON CONFLICT DO NOTHING RETURNING`, then the effect.
    DbUnique,
    /// The seed's `idempotent` context manager: `SET idem:<id> 1 NX EX ttl`, the effect, `DEL`
    /// on an exception (`delete_on_failure = false`: the anti-pattern that keeps the key).
    Wrapper {
        ttl_ms: f64,
        #[serde(default = "yes")]
        delete_on_failure: bool,
    },
    /// The seed's `mark_notification_sent`: read the status, the effect, then mark it sent.
    CheckState,
    /// Corrected: `SET lease:<id> <token> NX PX lease_ms`, the effect, then `SET lease:<id> done`;
    /// with `sink_key`, the partner's idempotency key (the job id) on the effect too.
    Lease {
        lease_ms: f64,
        #[serde(default)]
        sink_key: bool,
    },
    /// The seed's `track_view_bad`: `INCR views:<id>`.
    Incr,
    /// The seed's `set_user_status`: `SET status:<id> shipped`.
    AbsoluteSet,
    /// The seed's `track_view_safe`: `SET view:done:<id> 1 NX EX ttl`, then `INCR`.
    IncrGuarded { ttl_ms: f64 },
    /// Anti-pattern: `INCR views:<id>`, then the e-mail, in one retried job.
    IncrThenEmail,
    /// Anti-pattern: one `SET NX` key for a job of two effects (charge, then e-mail).
    OneKeyMultistep { ttl_ms: f64 },
    /// The seed's `complete_order_job` (DB step first, then e-mail and partner API, each
    /// behind a `SET NX` key) as written, or with its early return removed, or corrected.
    Multistep {
        form: MultistepForm,
        #[serde(default = "day_ms")]
        ttl_ms: f64,
    },
}

fn yes() -> bool {
    true
}

fn day_ms() -> f64 {
    86_400_000.0
}

/// Which form of the seed's multi-step job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultistepForm {
    /// As written: returns at step 1 when the order is already completed.
    Seed,
    /// Only the early return removed: the step keys are still set before the step runs.
    NoEarlyReturn,
    /// No early return; each external step skipped only if marked done after it succeeded,
    /// and sent with the partner's idempotency key.
    Corrected,
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

impl Technique {
    /// The effects one job of this technique has, in the order it asks for them: the
    /// columns the lab counts. `effect` is the partner's effect for one-effect techniques.
    pub fn effects(&self, effect: &str) -> Vec<String> {
        let names: &[&str] = match self {
            Technique::Incr | Technique::IncrGuarded { .. } => &["views"],
            Technique::AbsoluteSet => &["status"],
            Technique::IncrThenEmail => &["views", "email"],
            Technique::OneKeyMultistep { .. } => &["charge", "email"],
            Technique::Multistep { .. } => &["email", "partner_api"],
            _ => return vec![effect.to_string()],
        };
        names.iter().map(|s| s.to_string()).collect()
    }

    /// Effects kept in Redis (a counter or a value), not sent to the sink.
    pub fn is_redis_effect(effect: &str) -> bool {
        matches!(effect, "views" | "status")
    }

    /// Does it read or write the worker's own database (tables to reset per run)?
    pub fn uses_database(&self) -> bool {
        matches!(self, Technique::DbUnique | Technique::CheckState | Technique::Multistep { .. })
    }

    /// Handle one delivery of `run.job`.
    pub async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        match self {
            Technique::None => claim::none(run).await,
            Technique::SetNx { ttl_ms } => claim::set_nx(run, *ttl_ms).await,
            Technique::SetNxAfterEffect { ttl_ms } => claim::set_nx_after_effect(run, *ttl_ms).await,
            Technique::Wrapper { ttl_ms, delete_on_failure } => claim::wrapper(run, *ttl_ms, *delete_on_failure).await,
            Technique::OneKeyMultistep { ttl_ms } => claim::one_key_multistep(run, *ttl_ms).await,
            Technique::DbUnique => state::db_unique(run).await,
            Technique::CheckState => state::check_state(run).await,
            Technique::Lease { lease_ms, sink_key } => lease::lease(run, *lease_ms, *sink_key).await,
            Technique::Incr => counter::incr(run).await,
            Technique::AbsoluteSet => counter::absolute_set(run).await,
            Technique::IncrGuarded { ttl_ms } => counter::incr_guarded(run, *ttl_ms).await,
            Technique::IncrThenEmail => counter::incr_then_email(run).await,
            Technique::Multistep { form, ttl_ms } => multistep::complete_order(run, *form, *ttl_ms).await,
        }
    }

    /// The technique in one phrase of the set-up line.
    pub fn describe(&self, lang: Lang) -> String {
        describe(self, lang)
    }

    /// The technique in a few words, for the SUMMARY table (English).
    pub fn short(&self) -> String {
        let s = match self {
            Technique::None => "no protection",
            Technique::SetNx { .. } => "SET NX claim (seed)",
            Technique::SetNxAfterEffect { .. } => "SET NX after the effect",
            Technique::DbUnique => "unique row ON CONFLICT (seed)",
            Technique::Wrapper { delete_on_failure: true, .. } => "idempotent wrapper (seed)",
            Technique::Wrapper { delete_on_failure: false, .. } => "wrapper keeping its key on failure",
            Technique::CheckState => "check state (seed)",
            Technique::Lease { sink_key: false, .. } => "lease, done after the effect",
            Technique::Lease { sink_key: true, .. } => "lease + partner idempotency key",
            Technique::Incr => "INCR (seed)",
            Technique::AbsoluteSet => "absolute SET (seed)",
            Technique::IncrGuarded { .. } => "SET NX then INCR (seed)",
            Technique::IncrThenEmail => "INCR in a retried job",
            Technique::OneKeyMultistep { .. } => "one key for two steps",
            Technique::Multistep { form: MultistepForm::Seed, .. } => "multi-step job (seed)",
            Technique::Multistep { form: MultistepForm::NoEarlyReturn, .. } => "multi-step, early return removed",
            Technique::Multistep { form: MultistepForm::Corrected, .. } => "multi-step, corrected",
        };
        s.to_string()
    }
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

fn describe(t: &Technique, lang: Lang) -> String {
    let secs = |ms: &f64| {
        let (unit, n) = ttl_args(*ms as u64);
        format!("{unit} {n}")
    };
    match t {
        Technique::None => crate::tr!(lang, "no idempotency: effect, then XACK", "không idempotent: side effect rồi XACK"),
        Technique::SetNx { ttl_ms } => {
            let ttl = secs(ttl_ms);
            crate::tr!(lang, "SET job:done:<id> NX {ttl}, then the effect (seed send_email)", "SET job:done:<id> NX {ttl} rồi side effect (send_email của seed)")
        }
        Technique::SetNxAfterEffect { ttl_ms } => {
            let ttl = secs(ttl_ms);
            crate::tr!(lang, "check the key, the effect, then SET NX {ttl} (anti-pattern)", "kiểm tra key, side effect, rồi mới SET NX {ttl} (anti-pattern)")
        }
        Technique::DbUnique => crate::tr!(lang, "INSERT … ON CONFLICT DO NOTHING RETURNING, then the effect (seed process_order)", "INSERT … ON CONFLICT DO NOTHING RETURNING rồi side effect (process_order của seed)"),
        Technique::Wrapper { ttl_ms, delete_on_failure } => {
            let ttl = secs(ttl_ms);
            match delete_on_failure {
                true => crate::tr!(lang, "idempotent wrapper: SET idem:<id> NX {ttl}, DEL on an exception (seed)", "idempotent wrapper: SET idem:<id> NX {ttl}, DEL khi có exception (seed)"),
                false => crate::tr!(lang, "wrapper that keeps its key on an exception (anti-pattern)", "wrapper giữ key khi có exception (anti-pattern)"),
            }
        }
        Technique::CheckState => crate::tr!(lang, "check the notification's status, the effect, then mark it sent (seed mark_notification_sent)", "kiểm tra status notification, side effect, rồi đánh dấu sent (mark_notification_sent của seed)"),
        Technique::Lease { lease_ms, sink_key } => {
            let key = if *sink_key { crate::tr!(lang, "; partner idempotency key = job id", "; idempotency key của đối tác = job id") } else { String::new() };
            crate::tr!(lang, "lease SET NX PX {lease_ms}, the effect, then SET done{key}", "lease SET NX PX {lease_ms}, side effect, rồi SET done{key}")
        }
        Technique::Incr => crate::tr!(lang, "INCR views:<id> (seed track_view_bad)", "INCR views:<id> (track_view_bad của seed)"),
        Technique::AbsoluteSet => crate::tr!(lang, "SET status:<id> shipped (seed set_user_status)", "SET status:<id> shipped (set_user_status của seed)"),
        Technique::IncrGuarded { ttl_ms } => {
            let ttl = secs(ttl_ms);
            crate::tr!(lang, "SET view:done:<id> NX {ttl}, then INCR (seed track_view_safe)", "SET view:done:<id> NX {ttl} rồi INCR (track_view_safe của seed)")
        }
        Technique::IncrThenEmail => crate::tr!(lang, "INCR views:<id>, then the e-mail, no key (anti-pattern)", "INCR views:<id> rồi gửi e-mail, không key (anti-pattern)"),
        Technique::OneKeyMultistep { .. } => crate::tr!(lang, "one SET NX key for charge + e-mail, kept on failure (anti-pattern)", "một SET NX key cho charge + e-mail, giữ khi lỗi (anti-pattern)"),
        Technique::Multistep { form, .. } => match form {
            MultistepForm::Seed => crate::tr!(lang, "seed's complete_order_job as written: DB step, then e-mail and partner API behind SET NX keys", "complete_order_job của seed nguyên văn: bước DB, rồi e-mail và API đối tác sau SET NX key"),
            MultistepForm::NoEarlyReturn => crate::tr!(lang, "seed's job with its early return removed (step keys still set before each step)", "job của seed bỏ return sớm (key từng bước vẫn set trước khi chạy bước)"),
            MultistepForm::Corrected => crate::tr!(lang, "corrected: no early return; a step is skipped only if marked done after it succeeded; partner idempotency key per step", "đã sửa: không return sớm; bỏ qua bước chỉ khi đã đánh dấu xong sau khi thành công; idempotency key của đối tác cho từng bước"),
        },
    }
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
    pub crashes: &'a [JobCrash],
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

    /// A planned SIGKILL, if the plan says this job dies here.
    pub fn crash_point(&self, point: HandlerPoint) {
        if crash_due(self.crashes, self.job, self.deliveries, point) {
            crash_now(&StdoutSink, self.actor, point.detail().to_string());
        }
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.key_prefix)
    }

    /// `SET key value NX EX|PX ttl`: true when it was set.
    pub async fn set_nx(&mut self, key: &str, value: &str, ttl_ms: f64) -> Result<bool, Error> {
        let (unit, n) = ttl_args(self.scale.ms_ceil(ttl_ms as u64));
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
