//! Plain UPDATE: the last writer wins, whatever the order of the events it carries. This is
//! the bug of seed 001: a slow, older event overwrites a fast, newer one.

use super::{Delivery, Handler};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};

pub async fn write(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    let sql = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3");
    let rows = h.pg.execute(&sql, &[&d.job.event_type, &d.job.version, &d.job.order]).await.context("plain UPDATE")?;
    h.wrote(d, None, rows);
    Ok(())
}
