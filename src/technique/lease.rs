//! The correction the seed's wrapper needs: a claim that is a lease, not a verdict. `SET
//! lease:<id> <token> NX PX <lease>` (shorter than the claimer's min-idle), the effect, and
//! only then `SET lease:<id> done`. A worker killed after the claim leaves a lease that
//! expires before the job is handed back, so the retry runs it; a failure releases the
//! lease (only if still ours). What no key in Redis can close is a kill after the effect and
//! before `done`: the partner's own idempotency key (`sink_key`) closes it.

use super::{Handled, JobRun};
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::technique::events::{FailReason, SkipReason};

/// Delete the key only if it still holds our token.
const RELEASE: &str =
    r#"if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end"#;

/// Give the lease back, only if it is still ours.
pub(super) async fn release(run: &mut JobRun<'_>, key: &str) -> Result<(), Error> {
    let released: i64 = redis::Script::new(RELEASE)
        .key(format!("{}{key}", run.key_prefix))
        .arg(run.token)
        .invoke_async(run.redis)
        .await
        .context("release lease")?;
    run.step(format!("release {key} if still ours (Lua compare-and-delete)"), released.to_string());
    Ok(())
}

pub async fn lease(run: &mut JobRun<'_>, lease_ms: f64, sink_key: bool) -> Result<Handled, Error> {
    let key = format!("lease:{}", run.job);
    let token = run.token.to_string();
    if !run.set_nx(&key, &token, lease_ms).await? {
        return Ok(match run.get(&key).await?.as_deref() {
            Some("done") => run.skipped(SkipReason::AlreadyProcessed),
            _ => Handled::Failed(FailReason::LeaseHeld),
        });
    }
    run.crash_point(HandlerPoint::AfterClaim);
    let idem_key = sink_key.then(|| run.job.to_string());
    if let Err(reason) = run.effect(run.effect, idem_key.as_deref()).await? {
        release(run, &key).await?;
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    run.set(&key, "done").await?;
    Ok(Handled::Done)
}
