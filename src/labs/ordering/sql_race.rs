//! Two PostgreSQL sessions racing on one row, as in seed 001's hand-run CAS (08d): session A
//! updates with CAS and holds the row lock before committing; session B's CAS update arrives
//! meanwhile and waits. After A commits, B re-checks its WHERE clause against the new row
//! (READ COMMITTED) or fails with a serialization error (REPEATABLE READ).

use crate::checker::{final_state::final_state, health::health, RunVerdict};
use crate::connect::{self, SCHEMA};
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::labs::order_stream::order_items;
use crate::labs::{FinalItem, Judge, LabProcedure, NoFacts, Present, RunContext, RunOutcome, RunView};
use crate::lang::Lang;
use crate::orders::{self, OrderRow};
use crate::timeline::{Actor, EventKind, RawEvent, Sink, SqlStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// `kind = "sql-race"`: A updates with CAS and holds the row lock `hold_ms` before
/// committing; B sends its CAS update `b_after_ms` after A's. One row per case.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlRaceSpec {
    #[serde(default = "SqlRaceSpec::default_hold")]
    pub hold_ms: f64,
    #[serde(default = "SqlRaceSpec::default_b_after")]
    pub b_after_ms: f64,
    pub cases: Vec<SqlRaceCase>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlRaceCase {
    /// The row this case races on (each case has its own).
    pub order: i64,
    pub a: EventRef,
    pub b: EventRef,
    #[serde(default)]
    pub b_isolation: Isolation,
}

/// An event by type and business version.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EventRef {
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: i64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    #[default]
    ReadCommitted,
    RepeatableRead,
}

impl Isolation {
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
        }
    }
}

/// The rows after every case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SqlRaceObserved {
    pub final_rows: Vec<OrderRow>,
}

impl SqlRaceSpec {
    fn default_hold() -> f64 {
        1000.0
    }
    fn default_b_after() -> f64 {
        300.0
    }

    /// Each case's row must end at its higher version's status.
    fn expected(&self) -> BTreeMap<i64, String> {
        self.cases
            .iter()
            .map(|c| (c.order, if c.a.version >= c.b.version { &c.a } else { &c.b }.event_type.clone()))
            .collect()
    }

    fn initial(&self) -> Vec<OrderRow> {
        self.cases.iter().map(|c| OrderRow { order: c.order, status: "new".into(), version: 0 }).collect()
    }
}

impl LabProcedure for SqlRaceSpec {
    fn validate(&mut self) -> Result<(), String> {
        if self.cases.is_empty() {
            return Err("setup.cases is empty: list at least one race".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<SqlRaceObserved>, Error> {
        orders::reset(ctx.pg, &self.initial()).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0_ns = crate::clock::now_ns();
        race(&ctx.services.pg_config, self, ctx.scale, Arc::new(tx)).await?;
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        let orders: Vec<i64> = self.cases.iter().map(|c| c.order).collect();
        let final_rows = orders::final_rows(ctx.pg, &orders).await?;
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed: SqlRaceObserved { final_rows } })
    }
}

impl Judge for SqlRaceSpec {
    type Observed = SqlRaceObserved;
    type Facts = NoFacts;

    fn judge(&self, run: &RunView<'_, SqlRaceObserved>) -> RunVerdict {
        health(run.events, run.timed_out).and(final_state(&self.expected(), &run.observed.final_rows))
    }

    fn final_state(&self, observed: &SqlRaceObserved) -> Vec<FinalItem> {
        order_items(&self.expected(), &observed.final_rows)
    }

    fn facts(&self, _run: &RunView<'_, SqlRaceObserved>) -> NoFacts {
        NoFacts
    }
}

impl Present for SqlRaceSpec {
    fn describe(&self, lang: Lang) -> String {
        let (hold, after) = (self.hold_ms, self.b_after_ms);
        crate::tr!(
            lang,
            "2 sessions, A holds the row lock {hold} ms before COMMIT, B arrives after {after} ms; CAS on the business version",
            "2 session, A giữ khoá dòng {hold} ms rồi COMMIT, B tới sau {after} ms; CAS theo version nghiệp vụ"
        )
    }

    fn approach(&self) -> String {
        "CAS in two SQL sessions".into()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let expected: Vec<String> = self.expected().iter().map(|(o, s)| format!("#{o} {s}")).collect();
        let expected = expected.join(", ");
        crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
    }
}

const A: Actor = Actor::Session('A');
const B: Actor = Actor::Session('B');

/// The CAS statement as a reader would type it.
fn shown(order: i64, e: &EventRef) -> String {
    format!(
        "UPDATE orders SET status = '{}', version = {} WHERE id = {order} AND version < {}",
        e.event_type, e.version, e.version
    )
}

async fn cas(client: &tokio_postgres::Client, order: i64, e: &EventRef) -> Result<u64, tokio_postgres::Error> {
    let sql = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3 AND version < $2");
    client.execute(&sql, &[&e.event_type, &e.version, &order]).await
}

/// Whether the statement succeeded, as the server answered.
fn status(r: &Result<u64, tokio_postgres::Error>) -> SqlStatus {
    if r.is_ok() {
        SqlStatus::Done
    } else {
        SqlStatus::Failed
    }
}

fn outcome(r: &Result<u64, tokio_postgres::Error>) -> String {
    match r {
        Ok(rows) => format!("UPDATE {rows}"),
        Err(e) => {
            format!("ERROR: {}", e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| e.to_string()))
        }
    }
}

fn ms_since(start_ns: u64) -> f64 {
    (crate::clock::now_ns() - start_ns) as f64 / 1e6
}

/// Run every case in turn, each on its own row, reporting statements and outcomes.
async fn race(pg_config: &str, spec: &SqlRaceSpec, scale: TimeScale, sink: Arc<dyn Sink>) -> Result<(), Error> {
    for (i, case) in spec.cases.iter().enumerate() {
        if i > 0 {
            // A pause between cases, so each case reads as its own block on the timeline.
            scale.sleep(spec.b_after_ms).await;
        }
        let n = i as u32 + 1;
        let order = case.order;
        let a = connect::postgres(pg_config).await.context("session A connect")?;
        let b = connect::postgres(pg_config).await.context("session B connect")?;

        sink.emit(A, EventKind::SqlSent { case: n, order, statement: format!("BEGIN; {}", shown(order, &case.a)) });
        a.batch_execute("BEGIN").await.context("session A BEGIN")?;
        let sent = crate::clock::now_ns();
        let r = cas(&a, order, &case.a).await;
        sink.emit(
            A,
            EventKind::SqlDone { case: n, order, outcome: outcome(&r), waited_ms: ms_since(sent), status: status(&r) },
        );
        r.context("session A UPDATE")?;
        let locked_at = tokio::time::Instant::now();

        let b_sink = sink.clone();
        let (b_event, iso) = (case.b.clone(), case.b_isolation);
        let b_start = locked_at + scale.duration(spec.b_after_ms);
        let b_task = tokio::spawn(async move {
            tokio::time::sleep_until(b_start).await;
            let begin = match iso {
                Isolation::ReadCommitted => "BEGIN".to_string(),
                other => format!("BEGIN ISOLATION LEVEL {}", other.sql()),
            };
            b_sink.emit(
                B,
                EventKind::SqlSent { case: n, order, statement: format!("{begin}; {}", shown(order, &b_event)) },
            );
            b.batch_execute(&begin).await.context("session B BEGIN")?;
            let sent = crate::clock::now_ns();
            let r = cas(&b, order, &b_event).await;
            b_sink.emit(
                B,
                EventKind::SqlDone {
                    case: n,
                    order,
                    outcome: outcome(&r),
                    waited_ms: ms_since(sent),
                    status: status(&r),
                },
            );
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            b.batch_execute(end).await.context("session B end")?;
            b_sink.emit(
                B,
                EventKind::SqlDone {
                    case: n,
                    order,
                    outcome: end.to_string(),
                    waited_ms: 0.0,
                    status: SqlStatus::Done,
                },
            );
            Ok::<(), Error>(())
        });

        tokio::time::sleep_until(locked_at + scale.duration(spec.hold_ms)).await;
        a.batch_execute("COMMIT").await.context("session A COMMIT")?;
        sink.emit(
            A,
            EventKind::SqlDone { case: n, order, outcome: "COMMIT".into(), waited_ms: 0.0, status: SqlStatus::Done },
        );
        b_task.await.expect("session B task does not panic")?;
    }
    Ok(())
}
