//! The seed's multi-step job `complete_order_job`: a DB step first (the order completed),
//! then an e-mail and a partner API call, each behind its own `SET NX` key. As written it
//! returns at step 1 when the order is already completed, so a retry after a failure at step
//! 2 never sends the e-mail or calls the partner, although the seed's own quiz answer says
//! the retry resumes at step 2. The corrected form never returns early, skips a step only if
//! it was marked done after it succeeded, and sends each with the partner's idempotency key.

use super::{Handled, JobRun, TechniqueKind};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::handler::job::events::SkipReason;
use crate::handler::Described;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `technique = { kind = "multistep", form = "seed" | "no-early-return" | "corrected" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Multistep {
    pub form: MultistepForm,
    #[serde(default = "day_ms")]
    pub ttl_ms: f64,
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

impl Described for Multistep {
    fn describe(&self, lang: Lang) -> String {
        match self.form {
            MultistepForm::Seed => crate::tr!(lang, "seed's complete_order_job as written: DB step, then e-mail and partner API behind SET NX keys", "complete_order_job của seed nguyên văn: bước DB, rồi e-mail và API đối tác sau SET NX key"),
            MultistepForm::NoEarlyReturn => crate::tr!(lang, "seed's job with its early return removed (step keys still set before each step)", "job của seed bỏ return sớm (key từng bước vẫn set trước khi chạy bước)"),
            MultistepForm::Corrected => crate::tr!(lang, "corrected: no early return; a step is skipped only if marked done after it succeeded; partner idempotency key per step", "đã sửa: không return sớm; bỏ qua bước chỉ khi đã đánh dấu xong sau khi thành công; idempotency key của đối tác cho từng bước"),
        }
    }

    fn short(&self) -> String {
        match self.form {
            MultistepForm::Seed => "multi-step job (seed)",
            MultistepForm::NoEarlyReturn => "multi-step, early return removed",
            MultistepForm::Corrected => "multi-step, corrected",
        }
        .into()
    }
}

impl TechniqueKind for Multistep {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        complete_order(run, self.form, self.ttl_ms).await
    }

    fn key_ttl(&self) -> Option<(&'static str, f64)> {
        Some(("ttl_ms", self.ttl_ms))
    }

    fn effects(&self, _effect: &str) -> Vec<String> {
        vec!["email".into(), "partner_api".into()]
    }

    fn uses_database(&self) -> bool {
        true
    }

    /// Step 1 completes the order.
    fn order_status_after(&self) -> Option<&'static str> {
        Some("completed")
    }
}

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
