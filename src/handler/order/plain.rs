//! Plain UPDATE: the last writer wins, whatever the order of the events it carries. This is
//! the bug of seed 001: a slow, older event overwrites a fast, newer one.

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "plain"` (no options).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plain {}

impl Described for Plain {
    fn describe(&self, lang: Lang) -> String {
        pick(lang, "plain UPDATE", "UPDATE thường").to_string()
    }

    fn short(&self) -> String {
        "plain UPDATE".into()
    }
}

impl StrategyKind for Plain {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        write(h, d).await
    }
}

/// The write alone (what the lock and the reorder buffer wrap).
pub async fn write(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    let sql = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3");
    let rows = h.pg.execute(&sql, &[&d.job.event_type, &d.job.version, &d.job.order]).await.context("plain UPDATE")?;
    h.wrote(d, None, rows);
    Ok(())
}
