//! Events that carry state (P4): each event holds the order's whole state and its version,
//! so the consumer can keep the newest and drop the rest, correct under any order. The price
//! is in the event's size: every entry carries a full document instead of a delta.

use super::{Delivery, Handler};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};

pub async fn keep_newest(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    let sql =
        format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2, state = $3 WHERE id = $4 AND version < $2");
    let rows =
        h.pg.execute(&sql, &[&d.job.event_type, &d.job.version, &d.state, &d.job.order])
            .await
            .context("state UPDATE")?;
    h.wrote(d, Some(d.job.version), rows);
    Ok(())
}
