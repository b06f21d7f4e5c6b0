//! The outbox table of the transactional outbox: the state change and its outbox row commit
//! in one transaction, and a dispatcher later publishes the rows. The labs and the dispatcher
//! role share this table and nothing else.

use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::orders::EventSpec;

/// Create the table if needed and write `events` as rows 1..n, in order (none: empty).
pub async fn fill(pg: &tokio_postgres::Client, events: &[EventSpec]) -> Result<(), Error> {
    pg.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.outbox (
            id bigserial PRIMARY KEY, aggregate_id bigint NOT NULL, event_type text NOT NULL,
            version bigint NOT NULL, published_at timestamptz);
         TRUNCATE {SCHEMA}.outbox RESTART IDENTITY"
    ))
    .await
    .context("reset outbox")?;
    for e in events {
        pg.execute(
            &format!("INSERT INTO {SCHEMA}.outbox (aggregate_id, event_type, version) VALUES ($1, $2, $3)"),
            &[&e.order, &e.event_type, &e.version],
        )
        .await
        .context("fill outbox")?;
    }
    Ok(())
}

/// Rows in the outbox, published or not.
pub async fn row_count(pg: &tokio_postgres::Client) -> Result<i64, Error> {
    let row = pg.query_one(&format!("SELECT count(*) FROM {SCHEMA}.outbox"), &[]).await.context("count outbox")?;
    Ok(row.get(0))
}
