//! The transactional outbox's first promise (seed 001, 08g): the state change and its outbox
//! row commit in one transaction or not at all. One session writes both and rolls back; the
//! order keeps its status and the outbox stays empty.

use crate::checker::{final_state::final_state, health::health, RunVerdict, Verdict};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::labs::order_stream::order_items;
use crate::labs::outbox::table;
use crate::labs::{FactRow, Facts, FinalItem, Judge, LabProcedure, Present, RunContext, RunOutcome, RunView};
use crate::lang::{pick, Lang};
use crate::orders::{self, EventSpec, OrderRow};
use crate::timeline::{Actor, EventKind, RawEvent, Sink, SqlStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// `kind = "outbox-rollback"`: each event is written with its outbox row in one transaction
/// that is rolled back.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutboxRollbackSpec {
    pub events: Vec<EventSpec>,
    /// Rows before each run (default: one row per order at version 0).
    #[serde(default)]
    pub initial: Option<Vec<OrderRow>>,
}

/// The rows and the outbox after the rolled-back transactions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxRollbackObserved {
    pub final_rows: Vec<OrderRow>,
    pub outbox_rows: i64,
}

impl OutboxRollbackSpec {
    fn initial(&self) -> Vec<OrderRow> {
        self.initial.clone().unwrap_or_else(|| orders::default_initial(&self.events))
    }

    /// A rolled-back transaction leaves every row as it was.
    fn expected(&self) -> BTreeMap<i64, String> {
        self.initial().into_iter().map(|r| (r.order, r.status)).collect()
    }
}

/// What a rollback run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutboxRollbackFacts {
    /// Rows left in the outbox table after the rollback.
    pub outbox_rows: i64,
}

impl Facts for OutboxRollbackFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![FactRow::stable("outbox_rows", self.outbox_rows)]
    }
}

impl LabProcedure for OutboxRollbackSpec {
    fn validate(&mut self) -> Result<(), String> {
        crate::labs::order_stream::check_events(&self.events)?;
        self.initial = Some(self.initial());
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<OutboxRollbackObserved>, Error> {
        orders::reset(ctx.pg, &self.initial()).await?;
        table::fill(ctx.pg, &[]).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0_ns = crate::clock::now_ns();
        for e in &self.events {
            rolled_back_change(ctx.pg, e, &tx).await?;
        }
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        let orders: Vec<i64> = self.initial().iter().map(|r| r.order).collect();
        let observed = OutboxRollbackObserved {
            final_rows: orders::final_rows(ctx.pg, &orders).await?,
            outbox_rows: table::row_count(ctx.pg).await?,
        };
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed })
    }
}

impl Judge for OutboxRollbackSpec {
    type Observed = OutboxRollbackObserved;
    type Facts = OutboxRollbackFacts;

    fn judge(&self, run: &RunView<'_, OutboxRollbackObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out).and(final_state(&self.expected(), &run.observed.final_rows));
        if run.observed.outbox_rows != 0 {
            v.add(Verdict::Wrong, format!("{} outbox rows survived the rollback", run.observed.outbox_rows));
        }
        v
    }

    fn final_state(&self, observed: &OutboxRollbackObserved) -> Vec<FinalItem> {
        order_items(&self.expected(), &observed.final_rows)
    }

    fn facts(&self, run: &RunView<'_, OutboxRollbackObserved>) -> OutboxRollbackFacts {
        OutboxRollbackFacts { outbox_rows: run.observed.outbox_rows }
    }
}

impl Present for OutboxRollbackSpec {
    fn describe(&self, lang: Lang) -> String {
        pick(
            lang,
            "one transaction: UPDATE orders + INSERT INTO outbox, then ROLLBACK",
            "một transaction: UPDATE orders + INSERT INTO outbox, rồi ROLLBACK",
        )
        .to_string()
    }

    fn approach(&self) -> String {
        "one transaction, rolled back".into()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let expected: Vec<String> = self.expected().into_values().collect();
        let expected = expected.join(", ");
        crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
    }
}

/// The state change and its outbox row in one transaction, rolled back; every statement and
/// its outcome on the timeline as session A.
async fn rolled_back_change(pg: &tokio_postgres::Client, e: &EventSpec, sink: &dyn Sink) -> Result<(), Error> {
    let a = Actor::Session('A');
    let statements = [
        "BEGIN".to_string(),
        format!(
            "UPDATE {SCHEMA}.orders SET status = '{}', version = {} WHERE id = {}",
            e.event_type, e.version, e.order
        ),
        format!(
            "INSERT INTO {SCHEMA}.outbox (aggregate_id, event_type, version) VALUES ({}, '{}', {})",
            e.order, e.event_type, e.version
        ),
        "ROLLBACK".to_string(),
    ];
    for sql in statements {
        let shown = sql.replace(&format!("{SCHEMA}."), "");
        sink.emit(a, EventKind::SqlSent { case: 1, order: e.order, statement: shown.clone() });
        let sent = crate::clock::now_ns();
        let rows = pg.execute(sql.as_str(), &[]).await.context("outbox transaction")?;
        let outcome = match shown.split(' ').next().unwrap_or("") {
            "UPDATE" => format!("UPDATE {rows}"),
            "INSERT" => format!("INSERT 0 {rows}"),
            other => other.to_string(),
        };
        let waited_ms = (crate::clock::now_ns() - sent) as f64 / 1e6;
        // BEGIN and ROLLBACK answer with their own name: nothing to add to the timeline.
        if outcome != shown {
            sink.emit(a, EventKind::SqlDone { case: 1, order: e.order, outcome, waited_ms, status: SqlStatus::Done });
        }
    }
    Ok(())
}
