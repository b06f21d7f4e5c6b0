//! Techniques whose effect is a Redis value, as in the seed's "upsert/SET" section:
//! `INCR views:<id>` (`track_view_bad`: a retry counts twice), `SET status:<id> shipped`
//! (`set_user_status`: a retry writes the same value), `SET NX` then `INCR`
//! (`track_view_safe`), and an `INCR` in a job that fails later and is retried.

use super::{Handled, JobRun};
use crate::error::Error;
use crate::fault::HandlerPoint;
use crate::technique::events::SkipReason;

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
