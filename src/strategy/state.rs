//! Events that carry state (P4): each event holds the order's whole state and its version,
//! so the consumer can keep the newest and drop the rest, correct under any order. The price
//! is in the event's size: every entry carries a full document instead of a delta.

use super::{Delivery, Handler, StrategyKind};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "state"` (no options; what events carry is the lab's `state_bytes`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepNewestState {}

impl StrategyKind for KeepNewestState {
    fn describe(&self, lang: Lang) -> String {
        pick(lang, "keep the newest state (UPDATE … WHERE version <)", "giữ trạng thái mới nhất (UPDATE … WHERE version <)")
            .to_string()
    }

    fn short(&self) -> String {
        "state events, keep newest".into()
    }

    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        keep_newest(h, d).await
    }
}

async fn keep_newest(h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
    h.work(d).await;
    let sql =
        format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2, state = $3 WHERE id = $4 AND version < $2");
    let rows =
        h.pg.execute(&sql, &[&d.job.event_type, &d.job.version, &d.state, &d.job.order])
            .await
            .context("state UPDATE")?;
    h.wrote(d, Some(d.job.version), rows);
    Ok(())
}
