//! Techniques that ask the worker's own database: the seed's unique row (`process_order`:
//! `INSERT … ON CONFLICT DO NOTHING RETURNING`, then the effect) and its state check
//! (`mark_notification_sent`: read the status, send, then mark it sent).

use super::{Handled, JobRun, TechniqueKind};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::fault::HandlerPoint;
use crate::handler::job::events::SkipReason;
use crate::handler::Described;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `technique = { kind = "db-unique" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbUnique {}

impl Described for DbUnique {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(
            lang,
            "INSERT … ON CONFLICT DO NOTHING RETURNING, then the effect (seed process_order)",
            "INSERT … ON CONFLICT DO NOTHING RETURNING rồi side effect (process_order của seed)"
        )
    }

    fn short(&self) -> String {
        "unique row ON CONFLICT (seed)".into()
    }
}

impl TechniqueKind for DbUnique {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        db_unique(run).await
    }

    fn uses_database(&self) -> bool {
        true
    }
}

/// `technique = { kind = "check-state" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckState {}

impl Described for CheckState {
    fn describe(&self, lang: Lang) -> String {
        crate::tr!(
            lang,
            "check the notification's status, the effect, then mark it sent (seed mark_notification_sent)",
            "kiểm tra status notification, side effect, rồi đánh dấu sent (mark_notification_sent của seed)"
        )
    }

    fn short(&self) -> String {
        "check state (seed)".into()
    }
}

impl TechniqueKind for CheckState {
    async fn handle(&self, run: &mut JobRun<'_>) -> Result<Handled, Error> {
        check_state(run).await
    }

    fn uses_database(&self) -> bool {
        true
    }
}

/// The tables these techniques use, emptied of the run's jobs before each run.
pub fn create_tables_sql() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.processed_orders (order_id text PRIMARY KEY, processed_at timestamptz NOT NULL);
         CREATE TABLE IF NOT EXISTS {SCHEMA}.notifications (id text PRIMARY KEY, status text NOT NULL, sent_at timestamptz);"
    )
}

/// The seed's `process_order`:
/// ```python
/// rows_inserted = db.execute("""INSERT INTO processed_orders (order_id, processed_at)
///     VALUES (%s, NOW()) ON CONFLICT (order_id) DO NOTHING RETURNING order_id""", [order_id])
/// if not rows_inserted:
///     return
/// send_confirmation_email(order_id)
/// ```
pub async fn db_unique(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    let rows = run
        .pg
        .query(
            &format!(
                "INSERT INTO {SCHEMA}.processed_orders (order_id, processed_at) VALUES ($1, NOW())
                 ON CONFLICT (order_id) DO NOTHING RETURNING order_id"
            ),
            &[&run.job],
        )
        .await
        .context("INSERT INTO processed_orders")?;
    let command = format!("INSERT INTO processed_orders ('{}') ON CONFLICT DO NOTHING RETURNING", run.job);
    run.step(command, super::rows(rows.len()));
    if rows.is_empty() {
        return Ok(run.skipped(SkipReason::AlreadyProcessed));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    Ok(Handled::Done)
}

/// The seed's `mark_notification_sent`:
/// ```python
/// status = db.fetchone("SELECT status FROM notifications WHERE id = %s", [notification_id])
/// if status and status["status"] == "sent":
///     return
/// push_gateway.send(notification_id)
/// db.execute("UPDATE notifications SET status='sent', sent_at=NOW() WHERE id = %s", [notification_id])
/// ```
pub async fn check_state(run: &mut JobRun<'_>) -> Result<Handled, Error> {
    let row = run
        .pg
        .query_opt(&format!("SELECT status FROM {SCHEMA}.notifications WHERE id = $1"), &[&run.job])
        .await
        .context("SELECT status")?;
    let status: Option<String> = row.map(|r| r.get(0));
    run.step(
        format!("SELECT status FROM notifications WHERE id = '{}'", run.job),
        status.clone().unwrap_or("-".into()),
    );
    if status.as_deref() == Some("sent") {
        return Ok(run.skipped(SkipReason::AlreadyDone));
    }
    run.crash_point(HandlerPoint::AfterClaim);
    if let Err(reason) = run.effect(run.effect, None).await? {
        return Ok(Handled::Failed(reason));
    }
    run.crash_point(HandlerPoint::AfterEffect);
    let n = run
        .pg
        .execute(
            &format!("UPDATE {SCHEMA}.notifications SET status = 'sent', sent_at = NOW() WHERE id = $1"),
            &[&run.job],
        )
        .await
        .context("UPDATE notifications")?;
    run.step(format!("UPDATE notifications SET status='sent' WHERE id = '{}'", run.job), format!("UPDATE {n}"));
    Ok(Handled::Done)
}
