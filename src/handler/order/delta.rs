//! Delta events (P4): each event carries one change — an item added, a new status — and the
//! consumer applies it to the order's stored document. With `cas = true` it applies a change
//! only if the event is newer than the row (S5's fix for status overwrites); under
//! out-of-order delivery that skips an older change whose content no newer event repeats: the
//! update is lost although no stale write happened. Without the check, changes are applied as
//! they come: adding items commutes, so the document ends right here, but a redelivered
//! change would be applied twice.

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::Lang;
use crate::order_document::Item;
use serde::{Deserialize, Serialize};

/// `strategy = { kind = "delta", cas = true }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    /// Apply a change only if the event's version is above the row's (`WHERE version < $v`).
    #[serde(default)]
    pub cas: bool,
}

impl Described for Delta {
    fn describe(&self, lang: Lang) -> String {
        match (self.cas, lang) {
            (false, Lang::En) => "delta events applied to the document as they come".into(),
            (false, Lang::Vi) => "event delta, áp vào tài liệu theo thứ tự nhận".into(),
            (true, Lang::En) => "delta events applied only if newer (WHERE version < $v)".into(),
            (true, Lang::Vi) => "event delta, chỉ áp nếu mới hơn (WHERE version < $v)".into(),
        }
    }

    fn short(&self) -> String {
        if self.cas { "delta events + CAS skip".into() } else { "delta events, as they come".into() }
    }
}

impl StrategyKind for Delta {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        // The version is parameter $3 in both statements.
        let guard = if self.cas { " AND version < $3" } else { "" };
        let item: Option<Item> = d.payload.change.as_deref().and_then(|c| serde_json::from_str(c).ok());
        let (rows, status) = match &item {
            Some(i) => {
                let sql = format!(
                    "UPDATE {SCHEMA}.orders SET version = $3, doc = jsonb_set(jsonb_set(doc,
                         ARRAY['items', $1::text], to_jsonb(COALESCE((doc->'items'->>$1::text)::bigint, 0) + $2::bigint)),
                         '{{total}}', to_jsonb((doc->>'total')::bigint + $2::bigint))
                     WHERE id = $4{guard}"
                );
                let rows = h.pg.execute(&sql, &[&i.name, &i.cents, &d.job.version, &d.job.order]).await.context("delta UPDATE")?;
                (rows, format!("+{}", i.name))
            }
            None => {
                let sql = format!(
                    "UPDATE {SCHEMA}.orders SET status = $1, version = $3, doc = jsonb_set(doc, '{{status}}', to_jsonb($1::text))
                     WHERE id = $2{guard}"
                );
                let rows = h.pg.execute(&sql, &[&d.job.event_type, &d.job.order, &d.job.version]).await.context("delta UPDATE")?;
                (rows, d.job.event_type.clone())
            }
        };
        h.emit(crate::timeline::EventKind::Wrote {
            entry_id: d.entry_id.to_string(),
            order: d.job.order,
            status,
            version: self.cas.then_some(d.job.version),
            rows,
        });
        Ok(())
    }

    fn never_lowers_version(&self) -> bool {
        self.cas
    }
}
