//! The first write of an order, when its row may not exist yet, decided in one statement:
//! `INSERT … ON CONFLICT (id) DO UPDATE … WHERE orders.version < EXCLUDED.version`. Two first
//! events cannot both decide to insert, and a stale one changes nothing.

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "upsert"` (no options).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionalUpsert {}

impl Described for ConditionalUpsert {
    fn describe(&self, lang: Lang) -> String {
        pick(
            lang,
            "conditional upsert (INSERT … ON CONFLICT DO UPDATE … WHERE version <)",
            "upsert có điều kiện (INSERT … ON CONFLICT DO UPDATE … WHERE version <)",
        )
        .to_string()
    }

    fn short(&self) -> String {
        "conditional upsert".into()
    }
}

impl StrategyKind for ConditionalUpsert {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        upsert(h, d).await
    }

    /// A conditional write (`WHERE version < $v`): a stale event changes nothing.
    fn never_lowers_version(&self) -> bool {
        true
    }
}

async fn upsert(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    h.work(d).await;
    let sql = format!(
        "INSERT INTO {SCHEMA}.orders (id, status, version) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, version = EXCLUDED.version
         WHERE orders.version < EXCLUDED.version"
    );
    let rows = h.pg.execute(&sql, &[&d.job.order, &d.job.event_type, &d.job.version]).await.context("upsert")?;
    h.wrote(d, Some(d.job.version), rows);
    Ok(())
}
