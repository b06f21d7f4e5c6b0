//! Techniques whose effect is a Redis value, as in the seed's "upsert/SET" section:
//! `INCR views:<id>` (`track_view_bad`: a retry counts twice), `SET status:<id> shipped`
//! (`set_user_status`: a retry writes the same value), `SET NX` then `INCR`
//! (`track_view_safe`), and an `INCR` in a job that fails later and is retried.

use super::{ttl_phrase, Handled, JobRun, TechniqueKind};
use crate::error::Error;
use crate::fault::HandlerPoint;
use crate::handler::job::events::SkipReason;
use crate::handler::Described;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `technique = { kind = "incr" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incr {}

impl Described for Incr {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(lang, "INCR views:<id> (seed track_view_bad)", "INCR views:<id> (track_view_bad của seed)")
    }

    fn short(&self) -> String {
        "INCR (seed)".into()
    }
}

impl TechniqueKind for Incr {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        incr(run).await
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["views".into()]
    }
}

/// `technique = { kind = "absolute-set" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbsoluteSet {}

impl Described for AbsoluteSet {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(
            lang,
            "SET status:<id> shipped (seed set_user_status)",
            "SET status:<id> shipped (set_user_status của seed)"
        )
    }

    fn short(&self) -> String {
        "absolute SET (seed)".into()
    }
}

impl TechniqueKind for AbsoluteSet {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        absolute_set(run).await
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["status".into()]
    }
}

/// `technique = { kind = "incr-guarded", ttl_ms = 3600000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncrGuarded {
    pub ttl_ms: f64,
}

impl Described for IncrGuarded {
    fn describe(&self, lang: Lang) -> String {
        let ttl = ttl_phrase(self.ttl_ms);
        crate::tr!(
            lang,
            "SET view:done:<id> NX {ttl}, then INCR (seed track_view_safe)",
            "SET view:done:<id> NX {ttl} rồi INCR (track_view_safe của seed)"
        )
    }

    fn short(&self) -> String {
        "SET NX then INCR (seed)".into()
    }
}

impl TechniqueKind for IncrGuarded {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        incr_guarded(run, self.ttl_ms).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["views".into()]
    }
}

/// `technique = { kind = "incr-then-email" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncrThenEmail {}

impl Described for IncrThenEmail {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(
            lang,
            "INCR views:<id>, then the e-mail, no key (anti-pattern)",
            "INCR views:<id> rồi gửi e-mail, không key (anti-pattern)"
        )
    }

    fn short(&self) -> String {
        "INCR in a retried job".into()
    }
}

impl TechniqueKind for IncrThenEmail {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        incr_then_email(run).await
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["views".into(), "email".into()]
    }
}

/// `r.incr(f"views:{article_id}")`.
pub async fn incr(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    run.crash_point(HandlerPoint::AfterClaim);
    run.incr(&format!("views:{}", run.job)).await?;
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// `r.set(f"user:{user_id}:status", status)`.
pub async fn absolute_set(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    run.crash_point(HandlerPoint::AfterClaim);
    run.set(&format!("status:{}", run.job), "shipped").await?;
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// ```python
/// if r.set(f"view:done:{request_id}", "1", nx=True, ex=3600):
///     r.incr(f"views:{article_id}")
/// ```
pub async fn incr_guarded(run: &mut JobRun<'_>, ttl_ms: f64) -> Result<Handled, Error> {
    if !run.set_nx(&format!("view:done:{}", run.job), "1", ttl_ms).await? {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    run.incr(&format!("views:{}", run.job)).await?;
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// The anti-pattern "INCR retried": count the view, then send the e-mail; when the e-mail
/// fails the whole job is retried and counts again.
pub async fn incr_then_email(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    run.crash_point(HandlerPoint::AfterClaim);
    run.incr(&format!("views:{}", run.job)).await?;
    if let Err(reason) = run.effect("email", None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}
