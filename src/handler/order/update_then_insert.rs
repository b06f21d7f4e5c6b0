//! The naive first write: CAS UPDATE, and if it matched no row, INSERT `gap_ms` later (the
//! window between check and act). Two first events can both decide to insert; the loser gets
//! a duplicate key and its change is lost.

use crate::handler::order::events::HandlerEvent;
use crate::timeline::vocabulary::Vocabulary as _;
use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `strategy = { kind = "update-then-insert", gap_ms = 20 }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateThenInsertSpec {
    #[serde(default = "UpdateThenInsertSpec::default_gap")]
    pub gap_ms: f64,
}

impl UpdateThenInsertSpec {
    fn default_gap() -> f64 {
        20.0
    }
}

impl Described for UpdateThenInsertSpec {
    fn describe(&self, lang: Lang) -> String {
        let gap = self.gap_ms;
        crate::tr!(lang, "UPDATE, and if no row INSERT {gap} ms later", "UPDATE, không có dòng thì INSERT sau {gap} ms")
    }

    fn short(&self) -> String {
        "UPDATE, then INSERT".into()
    }
}

impl StrategyKind for UpdateThenInsertSpec {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        let update = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3 AND version < $2");
        let rows =
            h.pg.execute(&update, &[&d.job.event_type, &d.job.version, &d.job.order]).await.context("UPDATE")?;
        if rows > 0 {
            h.wrote(d, Some(d.job.version), rows);
            return Ok(());
        }
        h.scale.sleep(self.gap_ms).await;
        let insert = format!("INSERT INTO {SCHEMA}.orders (id, status, version) VALUES ($1, $2, $3)");
        let (entry_id, order, status) = (d.entry_id.to_string(), d.job.order, d.job.event_type.clone());
        match h.pg.execute(&insert, &[&d.job.order, &d.job.event_type, &d.job.version]).await {
            Ok(_) => h.emit(HandlerEvent::Inserted { entry_id, order, status, version: d.job.version }.event()),
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                let error = e.as_db_error().map(|x| x.message().to_string()).unwrap_or_else(|| e.to_string());
                h.emit(HandlerEvent::WriteFailed { entry_id, order, status, error }.event());
            }
            Err(e) => return Err(e).context("INSERT"),
        }
        Ok(())
    }

    /// The UPDATE is conditional, and the INSERT fails on a row that exists.
    fn never_lowers_version(&self) -> bool {
        true
    }
}
