//! Two PostgreSQL sessions racing on one row, as in seed 001's hand-run CAS (08d): session A
//! updates with CAS and holds the row lock before committing; session B's CAS update arrives
//! meanwhile and waits. After A commits, B re-checks its WHERE clause against the new row
//! (READ COMMITTED) or fails with a serialization error (REPEATABLE READ).

use crate::connect::{self, SCHEMA};
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::scenario::{EventRef, Isolation, SqlRaceSpec};
use crate::timeline::{Actor, EventKind, Sink};
use std::sync::Arc;

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
pub async fn run(pg_config: &str, spec: &SqlRaceSpec, scale: TimeScale, sink: Arc<dyn Sink>) -> Result<(), Error> {
    for (i, case) in spec.cases.iter().enumerate() {
        let n = i as u32 + 1;
        let order = case.order;
        let a = connect::postgres(pg_config).await.context("session A connect")?;
        let b = connect::postgres(pg_config).await.context("session B connect")?;

        sink.emit(A, EventKind::SqlSent { case: n, order, statement: format!("BEGIN; {}", shown(order, &case.a)) });
        a.batch_execute("BEGIN").await.context("session A BEGIN")?;
        let sent = crate::clock::now_ns();
        let r = cas(&a, order, &case.a).await;
        sink.emit(A, EventKind::SqlDone { case: n, order, outcome: outcome(&r), waited_ms: ms_since(sent) });
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
            b_sink.emit(B, EventKind::SqlDone { case: n, order, outcome: outcome(&r), waited_ms: ms_since(sent) });
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            b.batch_execute(end).await.context("session B end")?;
            b_sink.emit(B, EventKind::SqlDone { case: n, order, outcome: end.to_string(), waited_ms: 0.0 });
            Ok::<(), Error>(())
        });

        tokio::time::sleep_until(locked_at + scale.duration(spec.hold_ms)).await;
        a.batch_execute("COMMIT").await.context("session A COMMIT")?;
        sink.emit(A, EventKind::SqlDone { case: n, order, outcome: "COMMIT".into(), waited_ms: 0.0 });
        b_task.await.expect("session B task does not panic")?;
    }
    Ok(())
}
