//! Idempotent consumer: remember each applied event in `processed (order_id, version)` in the
//! same transaction as the UPDATE. `INSERT … ON CONFLICT DO NOTHING` answers 0 for an event
//! already applied (a redelivery, or the same event published twice by an outbox dispatcher
//! that crashed between XADD and marking its row): the UPDATE is then skipped and the
//! transaction changes nothing, so the side effect happens exactly once per event.
//!
//! The timeline shows a skipped duplicate as `wrote … → UPDATE 0` (rows = 0).

use super::{Delivery, Handler};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};

/// The dedup table (created once per invocation, emptied before each run with the orders).
pub fn create_table_sql() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.processed (order_id bigint NOT NULL, version bigint NOT NULL,
            PRIMARY KEY (order_id, version))"
    )
}

pub async fn write(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    h.pg.batch_execute("BEGIN").await.context("idempotent BEGIN")?;
    let result = async {
        let first =
            h.pg.execute(
                &format!("INSERT INTO {SCHEMA}.processed (order_id, version) VALUES ($1, $2) ON CONFLICT DO NOTHING"),
                &[&d.job.order, &d.job.version],
            )
            .await
            .context("INSERT INTO processed")?;
        if first == 0 {
            return Ok(0);
        }
        h.pg.execute(
            &format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3"),
            &[&d.job.event_type, &d.job.version, &d.job.order],
        )
        .await
        .context("idempotent UPDATE")
    }
    .await;
    let rows = match result {
        Ok(rows) => {
            h.pg.batch_execute("COMMIT").await.context("idempotent COMMIT")?;
            rows
        }
        Err(e) => {
            let _ = h.pg.batch_execute("ROLLBACK").await;
            return Err(e);
        }
    };
    h.wrote(d, None, rows);
    Ok(())
}
