//! The first write of an order, when its row may not exist yet. The naive way checks then
//! acts (UPDATE, and INSERT if nothing matched): two first events can both decide to insert,
//! and the loser's change is lost. The conditional upsert decides in one statement.

use super::{Delivery, Handler};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::timeline::EventKind;

/// `INSERT … ON CONFLICT (id) DO UPDATE … WHERE orders.version < EXCLUDED.version`.
pub async fn conditional(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    let sql = format!(
        "INSERT INTO {SCHEMA}.orders (id, status, version) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, version = EXCLUDED.version
         WHERE orders.version < EXCLUDED.version"
    );
    let rows = h.pg.execute(&sql, &[&d.job.order, &d.job.event_type, &d.job.version]).await.context("upsert")?;
    h.wrote(d, Some(d.job.version), rows);
    Ok(())
}

/// CAS UPDATE; if it matched no row, wait `gap_ms` (the window between check and act) and
/// INSERT. A duplicate key means another event inserted first: this event's change is lost.
pub async fn update_then_insert(h: &mut Handler<'_>, d: &Delivery<'_>, gap_ms: f64) -> Result<(), Error> {
    let update = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3 AND version < $2");
    let rows = h.pg.execute(&update, &[&d.job.event_type, &d.job.version, &d.job.order]).await.context("UPDATE")?;
    let wrote = |rows| EventKind::Wrote {
        entry_id: d.entry_id.to_string(),
        order: d.job.order,
        status: d.job.event_type.clone(),
        version: Some(d.job.version),
        rows,
    };
    if rows > 0 {
        h.emit(wrote(rows));
        return Ok(());
    }
    h.scale.sleep(gap_ms).await;
    let insert = format!("INSERT INTO {SCHEMA}.orders (id, status, version) VALUES ($1, $2, $3)");
    match h.pg.execute(&insert, &[&d.job.order, &d.job.event_type, &d.job.version]).await {
        Ok(_) => h.emit(EventKind::Inserted {
            entry_id: d.entry_id.to_string(),
            order: d.job.order,
            status: d.job.event_type.clone(),
            version: d.job.version,
        }),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
            h.emit(EventKind::WriteFailed {
                entry_id: d.entry_id.to_string(),
                order: d.job.order,
                status: d.job.event_type.clone(),
                error: e.as_db_error().map(|x| x.message().to_string()).unwrap_or_else(|| e.to_string()),
            });
        }
        Err(e) => return Err(e).context("INSERT"),
    }
    Ok(())
}
