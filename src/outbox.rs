//! The transactional outbox: the state change and an outbox row commit together (or not at
//! all), and a dispatcher publishes outbox rows to the stream. Order survives only if the
//! dispatcher is sequential per key: a failed row must hold back the later rows of its key.

use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::scenario::{DispatcherKind, EventSpec, OutboxSpec};
use crate::timeline::{Actor, EventKind, Job, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

const DISPATCHER: Actor = Actor::Dispatcher(1);

/// Create the outbox table (once per invocation).
pub async fn create_table(pg: &tokio_postgres::Client) -> Result<(), Error> {
    pg.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.outbox (
            id bigserial PRIMARY KEY, aggregate_id bigint NOT NULL, event_type text NOT NULL,
            version bigint NOT NULL, published_at timestamptz)"
    ))
    .await
    .context("create outbox table")
}

/// Empty the outbox and write `events` as rows 1..n, in order.
pub async fn fill(pg: &tokio_postgres::Client, events: &[EventSpec]) -> Result<(), Error> {
    pg.batch_execute(&format!("TRUNCATE {SCHEMA}.outbox RESTART IDENTITY")).await.context("reset outbox")?;
    for e in events {
        pg.execute(
            &format!("INSERT INTO {SCHEMA}.outbox (aggregate_id, event_type, version) VALUES ($1, $2, $3)"),
            &[&e.order, &e.event_type, &e.version],
        )
        .await
        .context("fill outbox")?;
    }
    Ok(())
}

pub async fn row_count(pg: &tokio_postgres::Client) -> Result<i64, Error> {
    let row = pg.query_one(&format!("SELECT count(*) FROM {SCHEMA}.outbox"), &[]).await.context("count outbox")?;
    Ok(row.get(0))
}

/// The state change and its outbox row in one transaction, rolled back: both must vanish.
pub async fn rolled_back_change(pg: &tokio_postgres::Client, e: &EventSpec, sink: &dyn Sink) -> Result<(), Error> {
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
        let verb = shown.split(' ').next().unwrap_or("");
        let outcome = match verb {
            "UPDATE" => format!("UPDATE {rows}"),
            "INSERT" => format!("INSERT 0 {rows}"),
            other => other.to_string(),
        };
        let waited_ms = (crate::clock::now_ns() - sent) as f64 / 1e6;
        // BEGIN and ROLLBACK answer with their own name: nothing to add to the timeline.
        if outcome != shown {
            sink.emit(a, EventKind::SqlDone { case: 1, order: e.order, outcome, waited_ms });
        }
    }
    Ok(())
}

/// A polling dispatcher publishing outbox rows to `stream`.
pub struct Dispatcher {
    pub pg: tokio_postgres::Client,
    pub redis: MultiplexedConnection,
    pub stream: String,
    pub spec: OutboxSpec,
    pub scale: TimeScale,
    pub sink: Arc<dyn Sink>,
}

impl Dispatcher {
    /// Poll every `poll_ms` from t0 until every row is published; one `outbox_round` event
    /// per round, one `published` or `publish_failed` per attempt.
    pub async fn run(&mut self, t0_ns: u64) -> Result<(), Error> {
        let order_by = match self.spec.dispatcher {
            DispatcherKind::Naive => "id",
            DispatcherKind::PerKey => "aggregate_id, id",
        };
        let pending_sql = format!(
            "SELECT id, aggregate_id, event_type, version FROM {SCHEMA}.outbox WHERE published_at IS NULL ORDER BY {order_by}"
        );
        let mut attempts: HashMap<i64, u32> = HashMap::new();
        for round in 1u32.. {
            let due = t0_ns + self.scale.duration(self.spec.poll_ms * (round - 1) as f64).as_nanos() as u64;
            let now = crate::clock::now_ns();
            if due > now {
                tokio::time::sleep(std::time::Duration::from_nanos(due - now)).await;
            }
            let rows = self.pg.query(&pending_sql, &[]).await.context("outbox poll")?;
            if rows.is_empty() {
                return Ok(());
            }
            let (mut published, mut failed, mut held_back) = (Vec::new(), Vec::new(), Vec::new());
            let mut blocked: HashSet<i64> = HashSet::new();
            for row in rows {
                let (id, key): (i64, i64) = (row.get(0), row.get(1));
                let job = Job { order: key, event_type: row.get(2), version: row.get(3) };
                if self.spec.dispatcher == DispatcherKind::PerKey && blocked.contains(&key) {
                    held_back.push(id);
                    continue;
                }
                let attempt = attempts.entry(id).and_modify(|a| *a += 1).or_insert(1);
                let started = crate::clock::now_ns();
                let fails = self.spec.failing_rows.iter().any(|f| f.row == id && *attempt <= f.attempts);
                if fails {
                    self.sink.record(RawEvent {
                        mono_ns: started,
                        actor: DISPATCHER,
                        kind: EventKind::PublishFailed {
                            job,
                            attempt: *attempt,
                            retry_in_ms: Some(self.spec.poll_ms),
                            reason: format!("injected failure publishing outbox row {id}"),
                        },
                    });
                    failed.push(id);
                    blocked.insert(key);
                    continue;
                }
                let entry_id: String = redis::cmd("XADD")
                    .arg(&self.stream)
                    .arg("*")
                    .arg("order")
                    .arg(job.order)
                    .arg("type")
                    .arg(&job.event_type)
                    .arg("version")
                    .arg(job.version)
                    .query_async(&mut self.redis)
                    .await
                    .context("dispatcher XADD")?;
                self.pg
                    .execute(&format!("UPDATE {SCHEMA}.outbox SET published_at = now() WHERE id = $1"), &[&id])
                    .await
                    .context("mark outbox row published")?;
                self.sink.record(RawEvent {
                    mono_ns: started,
                    actor: DISPATCHER,
                    kind: EventKind::Published { entry_id, job, attempt: *attempt },
                });
                published.push(id);
            }
            self.sink.emit(DISPATCHER, EventKind::OutboxRound { round, published, failed, held_back });
        }
        unreachable!("the round counter does not run out")
    }
}
