//! The seed's multi-step job `complete_order_job`: a DB step first (the order completed),
//! then an e-mail and a partner API call, each behind its own `SET NX` key. As written it
//! returns at step 1 when the order is already completed, so a retry after a failure at step
//! 2 never sends the e-mail or calls the partner, although the seed's own quiz answer says
//! the retry resumes at step 2. The corrected form never returns early, skips a step only if
//! it was marked done after it succeeded, and sends each with the partner's idempotency key.

use super::{Handled, JobRun, MultistepForm};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::technique::events::SkipReason;

/// ```python
/// rows = db.execute("""UPDATE orders SET status='completed', completed_at=NOW()
///     WHERE id = %s AND status != 'completed' RETURNING id""", [order_id])
/// if not rows:
///     return                      # "Đã completed trước đó — skip toàn bộ"
/// if r.set(f"email:order_complete:{order_id}", "1", nx=True, ex=86400):
///     smtp.send_order_confirmation(order_id)
/// if r.set(f"api:inventory:{order_id}", "1", nx=True, ex=86400):
///     partner_api.update_inventory(order_id)
/// ```
pub async fn complete_order(run: &mut JobRun<'_>, form: MultistepForm, ttl_ms: f64) -> Result<Handled, Error> {
    let order = run.order;
    let rows = run
        .pg
        .query(
            &format!(
                "UPDATE {SCHEMA}.orders SET status = 'completed' WHERE id = $1 AND status <> 'completed' RETURNING id"
            ),
            &[&order],
        )
        .await
        .context("UPDATE orders")?;
    let command =
        format!("UPDATE orders SET status='completed' WHERE id={order} AND status != 'completed' RETURNING id");
    run.step(command, super::rows(rows.len()));
    if rows.is_empty() && form == MultistepForm::Seed {
        return Ok(run.skipped(SkipReason::AlreadyDone));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    let steps = [("email", format!("email:order_complete:{order}")), ("partner_api", format!("api:inventory:{order}"))];
    for (i, (effect, seed_key)) in steps.iter().enumerate() {
        let outcome = match form {
            MultistepForm::Seed | MultistepForm::NoEarlyReturn => {
                if !run.set_nx(seed_key, "1", ttl_ms).await? {
                    continue;
                }
                run.effect(effect, None).await?
            }
            MultistepForm::Corrected => {
                let done = format!("{effect}:done:{order}");
                if run.get(&done).await?.as_deref() == Some("1") {
                    continue;
                }
                let outcome = run.effect(effect, Some(&format!("{effect}:{order}"))).await?;
                if outcome.is_ok() {
                    if i == 0 {
                        run.crash_point(HandlerPoint::AfterEffect);
                    }
                    run.set(&done, "1").await?;
                }
                outcome
            }
        };
        if let Err(reason) = outcome {
            return Ok(Handled::Failed(reason));
        }
        if i == 0 {
            run.crash_point(HandlerPoint::AfterEffect);
        }
    }
    Ok(Handled::Done)
}
