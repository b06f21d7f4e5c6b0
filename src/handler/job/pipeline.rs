//! The handler of the seed's production worker (`handle_message`), as written and corrected.
//!
//! As written: `payload = json.loads(fields[b"payload"])` comes before the `try`, so a payload
//! that does not parse raises out of the worker's loop and the process dies; the job stays
//! pending, the next process that takes it dies too, and it never reaches the dead-letter
//! queue. Inside, the idempotent wrapper claims `idem:<job>` before `dispatch`, deletes it on
//! any exception, and the three `except` arms ack a duplicate, leave a retryable failure
//! pending (the retry with delay is the claimer's XAUTOCLAIM), and dead-letter the rest.
//!
//! Corrected: the payload is checked inside the handler (poison goes to the DLQ at once); the
//! claim is a lease marked done only after the effect, which goes out with the partner's
//! idempotency key (the job id); failures are counted per job and a job that keeps failing, or
//! keeps being delivered without finishing, goes to the DLQ with that reason.

use super::lease;
use super::JobRun;
use crate::error::{Context, Error};
use crate::fault::{crash_now, HandlerPoint};
use crate::handler::job::events::{FailReason, SkipReason};
use crate::handler::Described;
use crate::lang::Lang;
use crate::lang::Words;
use crate::timeline::StdoutSink;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `handler = { kind = "seed" }` or `{ kind = "corrected", … }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PipelineHandler {
    /// The seed's `handle_message` with its `idempotent` wrapper (TTL 1 day).
    Seed,
    /// Lease + partner key + failure count + DLQ for poison.
    Corrected {
        lease_ms: f64,
        /// Failures (partner refused, reply lost) before the job goes to the DLQ.
        max_failures: u32,
        /// Deliveries before the job goes to the DLQ (workers kept dying on it).
        max_deliveries: u64,
    },
}

/// What the worker does with the entry after the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    Ack,
    /// Leave it pending: the claimer retries it.
    Pending(FailReason),
    /// XADD it to the DLQ, then ack it.
    DeadLetter(FailReason),
}

/// The parts of a payload a handler reads.
#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
}

/// The job types a handler knows.
const KNOWN: [&str; 3] = ["charge", "email", "report"];

impl Described for PipelineHandler {
    fn describe(&self, lang: Lang) -> String {
        match (self, lang) {
            (PipelineHandler::Seed, Lang::En) => "the seed's handle_message (json.loads before try, idempotent wrapper SET NX EX 86400, DEL on an exception)".to_string(),
            (PipelineHandler::Seed, Lang::Vi) => "handle_message của seed (json.loads trước try, idempotent wrapper SET NX EX 86400, DEL khi có exception)".to_string(),
            (PipelineHandler::Corrected { lease_ms, max_failures, max_deliveries }, _) => crate::tr!(
                lang,
                "corrected handler: payload checked inside, lease PX {lease_ms} done after the effect, partner key = job id, DLQ after {max_failures} failures or {max_deliveries} deliveries",
                "handler đã sửa: kiểm tra payload bên trong, lease PX {lease_ms} chỉ done sau side effect, key đối tác = job id, vào DLQ sau {max_failures} lần lỗi hoặc {max_deliveries} lần giao"
            ),
        }
    }

    fn short(&self) -> String {
        match self {
            PipelineHandler::Seed => "seed production worker",
            PipelineHandler::Corrected { .. } => "corrected worker",
        }
        .into()
    }
}

impl PipelineHandler {
    /// Does a process that takes an unparseable job die with it (the seed's `json.loads`
    /// before the `try`), the claimer too?
    pub fn dies_on_unparseable(&self) -> bool {
        matches!(self, PipelineHandler::Seed)
    }

    /// The lease of the claim, if the claim is a lease (it must expire before a retry).
    pub fn lease_ms(&self) -> Option<f64> {
        match self {
            PipelineHandler::Seed => None,
            PipelineHandler::Corrected { lease_ms, .. } => Some(*lease_ms),
        }
    }

    /// Handle one delivery of `run.job` whose entry carries `payload`; `work` is the
    /// dispatch's own work before the effect.
    pub async fn handle(&self, run: &mut JobRun<'_>, payload: &str, work: Duration) -> Result<Disposition, Error> {
        match self {
            PipelineHandler::Seed => seed(run, payload, work).await,
            PipelineHandler::Corrected { lease_ms, max_failures, max_deliveries } => {
                corrected(run, payload, work, *lease_ms, *max_failures, *max_deliveries).await
            }
        }
    }
}

/// The seed's `handle_message`.
async fn seed(run: &mut JobRun<'_>, payload: &str, work: Duration) -> Result<Disposition, Error> {
    let Ok(p) = serde_json::from_str::<Payload>(payload) else {
        let detail = Words::new(
            "uncaught JSONDecodeError: json.loads(payload) runs before the try (seed's handle_message)",
            "JSONDecodeError không được bắt: json.loads(payload) chạy trước try (handle_message của seed)",
        );
        crash_now(&StdoutSink, run.actor, detail);
    };
    let key = format!("idem:{}", run.job);
    if !run.set_nx(&key, "1", 86_400_000.0).await? {
        run.skipped(SkipReason::AlreadyProcessed);
        return Ok(Disposition::Ack);
    }
    run.crash_point(HandlerPoint::AfterClaim);
    tokio::time::sleep(work).await;
    if !KNOWN.contains(&p.kind.as_str()) {
        // dispatch raises ValueError: the wrapper deletes its key, `except Exception` dead-letters.
        run.del(&key).await?;
        return Ok(Disposition::DeadLetter(FailReason::Rejected));
    }
    if let Err(reason) = run.effect(&p.kind, None).await? {
        run.del(&key).await?;
        return Ok(Disposition::Pending(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Disposition::Ack)
}

async fn corrected(
    run: &mut JobRun<'_>,
    payload: &str,
    work: Duration,
    lease_ms: f64,
    max_failures: u32,
    max_deliveries: u64,
) -> Result<Disposition, Error> {
    if run.deliveries > max_deliveries {
        return Ok(Disposition::DeadLetter(FailReason::DeliveriesExhausted));
    }
    let Ok(p) = serde_json::from_str::<Payload>(payload) else {
        return Ok(Disposition::DeadLetter(FailReason::Unparseable));
    };
    if !KNOWN.contains(&p.kind.as_str()) {
        return Ok(Disposition::DeadLetter(FailReason::Rejected));
    }
    let key = format!("lease:{}", run.job);
    let token = run.token.to_string();
    if !run.set_nx(&key, &token, lease_ms).await? {
        return Ok(match run.get(&key).await?.as_deref() {
            Some("done") => {
                run.skipped(SkipReason::AlreadyProcessed);
                Disposition::Ack
            }
            _ => Disposition::Pending(FailReason::LeaseHeld),
        });
    }
    run.crash_point(HandlerPoint::AfterClaim);
    tokio::time::sleep(work).await;
    let job = run.job.to_string();
    if let Err(reason) = run.effect(&p.kind, Some(&job)).await? {
        lease::release(run, &key).await?;
        let failures: u32 = redis::cmd("HINCRBY")
            .arg(format!("{}failures", run.key_prefix))
            .arg(&job)
            .arg(1)
            .query_async(run.redis)
            .await
            .context("HINCRBY failures")?;
        if failures >= max_failures {
            return Ok(Disposition::DeadLetter(FailReason::AttemptsExhausted));
        }
        return Ok(Disposition::Pending(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    run.set(&key, "done").await?;
    Ok(Disposition::Ack)
}
