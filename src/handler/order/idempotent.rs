//! Idempotent consumer: remember each applied event in `processed (order_id, version)` in the
//! same transaction as the UPDATE. `INSERT … ON CONFLICT DO NOTHING` answers 0 for an event
//! already applied (a redelivery, or the same event published twice by an outbox dispatcher
//! that crashed between XADD and marking its row): the UPDATE is then skipped and the
//! transaction changes nothing, so the row change happens exactly once per event. Only what
//! is inside that PostgreSQL transaction is protected: an e-mail sent or a card charged by the
//! handler happens again on every redelivery (the idempotency labs show those).
//!
//! The timeline shows a skipped duplicate as `wrote … → UPDATE 0` (rows = 0).

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "idempotent"` (no options).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idempotent {}

impl Described for Idempotent {
    fn describe(&self, lang: Lang) -> String {
        pick(
            lang,
            "idempotent (processed table, ON CONFLICT DO NOTHING)",
            "idempotent (bảng processed, ON CONFLICT DO NOTHING)",
        )
        .to_string()
    }

    fn short(&self) -> String {
        "idempotent (processed table)".into()
    }
}

impl StrategyKind for Idempotent {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        write(h, d).await
    }

    /// Create the dedup table if needed and empty it: every run starts with nothing processed.
    async fn prepare(&self, pg: &tokio_postgres::Client) -> Result<(), Error> {
        reset(pg).await
    }
}

async fn reset(pg: &tokio_postgres::Client) -> Result<(), Error> {
    pg.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.processed (order_id bigint NOT NULL, version bigint NOT NULL,
            PRIMARY KEY (order_id, version));
         TRUNCATE {SCHEMA}.processed"
    ))
    .await
    .context("reset the processed table")
}

async fn write(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
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
