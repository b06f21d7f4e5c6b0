//! The correction the seed's wrapper needs: a claim that is a lease, not a verdict. `SET
//! lease:<id> <token> NX PX <lease>` (shorter than the claimer's min-idle), the effect, and
//! only then `SET lease:<id> done`. A worker killed after the claim leaves a lease that
//! expires before the job is handed back, so the retry runs it; a failure releases the
//! lease (only if still ours). What no key in Redis can close is a kill after the effect and
//! before `done`: the partner's own idempotency key (`sink_key`) closes it.

use super::{Handled, JobRun, TechniqueKind};
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::handler::job::events::{FailReason, SkipReason};
use crate::handler::Described;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `technique = { kind = "lease", lease_ms = 400, sink_key = true }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    pub lease_ms: f64,
    #[serde(default)]
    pub sink_key: bool,
}

impl Described for Lease {
    fn describe(&self, lang: Lang) -> String {
        let lease_ms = self.lease_ms;
        let key = if self.sink_key {
            crate::tr!(lang, "; partner idempotency key = job id", "; idempotency key của đối tác = job id")
        } else {
            String::new()
        };
        crate::tr!(
            lang,
            "lease SET NX PX {lease_ms}, the effect, then SET done{key}",
            "lease SET NX PX {lease_ms}, side effect, rồi SET done{key}"
        )
    }

    fn short(&self) -> String {
        match self.sink_key {
            false => "lease, done after the effect",
            true => "lease + partner idempotency key",
        }
        .into()
    }
}

impl TechniqueKind for Lease {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        lease(run, self.lease_ms, self.sink_key).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("lease_ms", self.lease_ms))
    }
}

/// Delete the key only if it still holds our token.
pub(crate) const RELEASE: &str =
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
