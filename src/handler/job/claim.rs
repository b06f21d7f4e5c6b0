//! Techniques built on one Redis key per job: none at all, the seed's `SET NX` claim before
//! the effect (`send_email`), the anti-pattern that sets it after, the seed's idempotent
//! wrapper (and its variant that keeps the key on failure), and one key for two steps.

use super::{ttl_phrase, Handled, JobRun, TechniqueKind};
use crate::error::Error;
use crate::fault::HandlerPoint;
use crate::handler::job::events::SkipReason;
use crate::handler::Described;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `technique = { kind = "none" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoProtection {}

impl Described for NoProtection {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(lang, "no idempotency: effect, then XACK", "không idempotent: side effect rồi XACK")
    }

    fn short(&self) -> String {
        "no protection".into()
    }
}

impl TechniqueKind for NoProtection {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        none(run).await
    }
}

/// `technique = { kind = "set-nx", ttl_ms = 86400000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetNx {
    pub ttl_ms: f64,
}

impl Described for SetNx {
    fn describe(&self, lang: Lang) -> String {
        let ttl = ttl_phrase(self.ttl_ms);
        crate::tr!(
            lang,
            "SET job:done:<id> NX {ttl}, then the effect (seed send_email)",
            "SET job:done:<id> NX {ttl} rồi side effect (send_email của seed)"
        )
    }

    fn short(&self) -> String {
        "SET NX claim (seed)".into()
    }
}

impl TechniqueKind for SetNx {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        set_nx(run, self.ttl_ms).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }
}

/// `technique = { kind = "set-nx-after-effect", ttl_ms = 86400000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetNxAfterEffect {
    pub ttl_ms: f64,
}

impl Described for SetNxAfterEffect {
    fn describe(&self, lang: Lang) -> String {
        let ttl = ttl_phrase(self.ttl_ms);
        crate::tr!(
            lang,
            "check the key, the effect, then SET NX {ttl} (anti-pattern)",
            "kiểm tra key, side effect, rồi mới SET NX {ttl} (anti-pattern)"
        )
    }

    fn short(&self) -> String {
        "SET NX after the effect".into()
    }
}

impl TechniqueKind for SetNxAfterEffect {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        set_nx_after_effect(run, self.ttl_ms).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }
}

/// `technique = { kind = "wrapper", ttl_ms = 86400000, delete_on_failure = false }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wrapper {
    pub ttl_ms: f64,
    #[serde(default = "yes")]
    pub delete_on_failure: bool,
}

fn yes() -> bool {
    true
}

impl Described for Wrapper {
    fn describe(&self, lang: Lang) -> String {
        let ttl = ttl_phrase(self.ttl_ms);
        match self.delete_on_failure {
            true => crate::tr!(
                lang,
                "idempotent wrapper: SET idem:<id> NX {ttl}, DEL on an exception (seed)",
                "idempotent wrapper: SET idem:<id> NX {ttl}, DEL khi có exception (seed)"
            ),
            false => crate::tr!(
                lang,
                "wrapper that keeps its key on an exception (anti-pattern)",
                "wrapper giữ key khi có exception (anti-pattern)"
            ),
        }
    }

    fn short(&self) -> String {
        match self.delete_on_failure {
            true => "idempotent wrapper (seed)",
            false => "wrapper keeping its key on failure",
        }
        .into()
    }
}

impl TechniqueKind for Wrapper {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        wrapper(run, self.ttl_ms, self.delete_on_failure).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }
}

/// `technique = { kind = "one-key-multistep", ttl_ms = 86400000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneKeyMultistep {
    pub ttl_ms: f64,
}

impl Described for OneKeyMultistep {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(
            lang,
            "one SET NX key for charge + e-mail, kept on failure (anti-pattern)",
            "một SET NX key cho charge + e-mail, giữ khi lỗi (anti-pattern)"
        )
    }

    fn short(&self) -> String {
        "one key for two steps".into()
    }
}

impl TechniqueKind for OneKeyMultistep {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        one_key_multistep(run, self.ttl_ms).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["charge".into(), "email".into()]
    }
}

/// No protection: the effect, then the worker acknowledges.
pub async fn none(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// The seed's `send_email`:
/// ```python
/// claimed = r.set(f"job:done:{message_id}", "1", nx=True, ex=86400)
/// if not claimed:
///     return
/// smtp.send(recipient, body)
/// ```
pub async fn set_nx(run: &mut JobRun<'_>, ttl_ms: f64) -> Result<Handled, Error> {
    let key = format!("job:done:{}", run.job);
    if !run.set_nx(&key, "1", ttl_ms).await? {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// The seed's anti-pattern "SET NX sau side-effect": look, act, then claim.
pub async fn set_nx_after_effect(run: &mut JobRun<'_>, ttl_ms: f64) -> Result<Handled, Error> {
    let key = format!("job:done:{}", run.job);
    if run.exists(&key).await? {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    run.set_nx(&key, "1", ttl_ms).await?;
    Ok(Handled::Done)
}

/// The seed's `idempotent` context manager around the job:
/// ```python
/// claimed = r.set(f"idem:{key}", "1", nx=True, ex=ttl)
/// if not claimed:
///     raise AlreadyProcessed(...)
/// try:
///     yield
/// except Exception:
///     r.delete(full_key)   # the anti-pattern variant leaves this out
///     raise
/// ```
pub async fn wrapper(run: &mut JobRun<'_>, ttl_ms: f64, delete_on_failure: bool) -> Result<Handled, Error> {
    let key = format!("idem:{}", run.job);
    if !run.set_nx(&key, "1", ttl_ms).await? {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        if delete_on_failure {
            run.del(&key).await?;
        }
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// The seed's anti-pattern "one idem key for a multi-step job": charge, then e-mail, behind
/// one key that a failure does not remove.
pub async fn one_key_multistep(run: &mut JobRun<'_>, ttl_ms: f64) -> Result<Handled, Error> {
    let key = format!("idem:{}", run.job);
    if !run.set_nx(&key, "1", ttl_ms).await? {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    for effect in ["charge", "email"] {
        if let Err(reason) = run.effect(effect, None).await? {
            return Ok(Handled::Failed(reason));
        }
        if effect == "charge" {
            run.crash_point(HandlerPoint::AfterEffect);
        }
    }
    Ok(Handled::Done)
}
