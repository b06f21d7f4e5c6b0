//! Events that carry state (P4): each event holds the order's whole document and its version,
//! so the consumer keeps the newest and drops the rest. An older event is skipped, and nothing
//! is lost with it: the newer document already contains it. Right under any order; the price
//! is in every entry's size (a full document instead of a change).

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "state"` (no options; the document's padding is the lab's `state_bytes`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepNewestState {}

impl Described for KeepNewestState {
    fn describe(&self, lang: Lang) -> String {
        pick(
            lang,
            "keep the newest document (UPDATE … SET doc = $doc WHERE version <)",
            "giữ tài liệu mới nhất (UPDATE … SET doc = $doc WHERE version <)",
        )
        .to_string()
    }

    fn short(&self) -> String {
        "state events, keep newest".into()
    }
}

impl StrategyKind for KeepNewestState {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        let sql = format!(
            "UPDATE {SCHEMA}.orders SET status = $1, version = $2, doc = $3::text::jsonb WHERE id = $4 AND version < $2"
        );
        let doc = d.payload.state.as_deref();
        // The status is the document's (an `item-added` event leaves it as it was).
        let status = doc
            .and_then(|s| serde_json::from_str::<crate::order_document::Document>(s).ok())
            .map_or_else(|| d.job.event_type.clone(), |doc| doc.status);
        let rows = h.pg.execute(&sql, &[&status, &d.job.version, &doc, &d.job.order]).await.context("state UPDATE")?;
        h.wrote(d, Some(d.job.version), rows);
        Ok(())
    }

    /// A conditional write (`WHERE version < $v`): a stale event changes nothing.
    fn never_lowers_version(&self) -> bool {
        true
    }
}
