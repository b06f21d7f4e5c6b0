//! Techniques built on one Redis key per job: none at all, the seed's `SET NX` claim before
//! the effect (`send_email`), the anti-pattern that sets it after, the seed's idempotent
//! wrapper (and its variant that keeps the key on failure), and one key for two steps.

use super::{Handled, JobRun};
use crate::error::Error;
use crate::fault::HandlerPoint;
use crate::technique::events::SkipReason;

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
