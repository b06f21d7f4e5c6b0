//! The business domain of seed 001's labs: orders whose status moves created → paid →
//! shipped, the events that say so, and the `orders` table every consumer writes. A run is
//! right when each order ends in the status of its highest-versioned event.

use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::order_document::{self, Document, Item};
use crate::timeline::Job;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod publish;
mod work;

pub use publish::PublishSchedule;
pub use work::HandlerWork;

/// One event to publish, and when.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub order: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: i64,
    /// First publish attempt, in ms after producer start; default: right after the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
    /// Injected publish failures: the first `fail_attempts` attempts fail (a network blip).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fail_attempts: u32,
    /// Delay before the first retry; each later retry waits `backoff` times longer.
    #[serde(default = "EventSpec::default_retry")]
    pub retry_ms: f64,
    #[serde(default = "EventSpec::default_backoff")]
    pub backoff: f64,
    /// Handler work for this event only, overriding `cost_ms` of its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ms: Option<f64>,
    /// The item an `item-added` event adds to the order's document (P4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<Item>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl EventSpec {
    pub fn default_retry() -> f64 {
        500.0
    }
    pub fn default_backoff() -> f64 {
        2.0
    }

    /// An event published right after the previous one, with no fault.
    pub fn new(order: i64, event_type: &str, version: i64) -> EventSpec {
        EventSpec {
            order,
            event_type: event_type.to_string(),
            version,
            at_ms: None,
            fail_attempts: 0,
            retry_ms: Self::default_retry(),
            backoff: Self::default_backoff(),
            cost_ms: None,
            item: None,
        }
    }

    pub fn job(&self) -> Job {
        Job { order: self.order, event_type: self.event_type.clone(), version: self.version }
    }
}

/// A row of `orders`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OrderRow {
    pub order: i64,
    pub status: String,
    pub version: i64,
}

/// Orders the events touch, in first-seen order.
pub fn orders_of(initial: &[OrderRow], events: &[EventSpec]) -> Vec<i64> {
    let mut seen = Vec::new();
    for o in initial.iter().map(|r| r.order).chain(events.iter().map(|e| e.order)) {
        if !seen.contains(&o) {
            seen.push(o);
        }
    }
    seen
}

/// The status each order must end in: the type of its highest-versioned event.
pub fn expected_statuses(events: &[EventSpec]) -> BTreeMap<i64, String> {
    let mut best: BTreeMap<i64, (i64, String)> = BTreeMap::new();
    for e in events {
        let entry = best.entry(e.order).or_insert((i64::MIN, String::new()));
        if e.version > entry.0 {
            *entry = (e.version, e.event_type.clone());
        }
    }
    best.into_iter().map(|(o, (_, s))| (o, s)).collect()
}

/// A fresh row per order at version 0, status `new`: what a lab starts from unless it says.
pub fn default_initial(events: &[EventSpec]) -> Vec<OrderRow> {
    let mut rows: Vec<OrderRow> = Vec::new();
    for e in events {
        if !rows.iter().any(|r| r.order == e.order) {
            rows.push(OrderRow { order: e.order, status: "new".into(), version: 0 });
        }
    }
    rows
}

/// Create the table (once per invocation; every lab that writes orders shares it).
pub async fn create_table(pg: &tokio_postgres::Client) -> Result<(), Error> {
    pg.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
         CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (id bigint PRIMARY KEY, status text NOT NULL,
             version bigint NOT NULL);
         ALTER TABLE {SCHEMA}.orders ADD COLUMN IF NOT EXISTS doc jsonb;"
    ))
    .await
    .context("create the orders table")
}

/// Empty the table and insert `rows`: every run starts from the same state.
pub async fn reset(pg: &tokio_postgres::Client, rows: &[OrderRow]) -> Result<(), Error> {
    pg.execute(&format!("TRUNCATE {SCHEMA}.orders"), &[]).await.context("reset rows")?;
    for r in rows {
        pg.execute(
            &format!(
                "INSERT INTO {SCHEMA}.orders (id, status, version, doc)
                 VALUES ($1, $2, $3, jsonb_build_object('status', $2::text, 'items', '{{}}'::jsonb, 'total', 0))"
            ),
            &[&r.order, &r.status, &r.version],
        )
        .await
        .context("insert initial row")?;
    }
    Ok(())
}

/// The rows of `orders` after a run, by id.
pub async fn final_rows(pg: &tokio_postgres::Client, orders: &[i64]) -> Result<Vec<OrderRow>, Error> {
    let rows = pg
        .query(&format!("SELECT id, status, version FROM {SCHEMA}.orders WHERE id = ANY($1) ORDER BY id"), &[&orders])
        .await
        .context("read final state")?;
    Ok(rows.iter().map(|r| OrderRow { order: r.get(0), status: r.get(1), version: r.get(2) }).collect())
}

/// The document of `order` after its events up to `version`: what a state event of that version
/// carries, and, with `i64::MAX`, what the order must end as.
pub fn document_after(events: &[EventSpec], order: i64, version: i64) -> Document {
    order_document::fold(
        events
            .iter()
            .filter(|e| e.order == order && e.version <= version)
            .map(|e| (e.event_type.as_str(), e.version, e.item.as_ref())),
    )
}

/// Each order's final document where the lab's events change documents (some event adds an
/// item); None for labs about status alone.
pub fn expected_documents(events: &[EventSpec]) -> Option<BTreeMap<i64, Document>> {
    if !events.iter().any(|e| e.item.is_some()) {
        return None;
    }
    let orders: std::collections::BTreeSet<i64> = events.iter().map(|e| e.order).collect();
    Some(orders.into_iter().map(|o| (o, document_after(events, o, i64::MAX))).collect())
}

/// Each order's stored document (`orders.doc`) after a run; an order whose document is not
/// one (never written as such) is left out, and the checker says so.
pub async fn final_documents(pg: &tokio_postgres::Client, orders: &[i64]) -> Result<BTreeMap<i64, Document>, Error> {
    let rows = pg
        .query(&format!("SELECT id, doc::text FROM {SCHEMA}.orders WHERE id = ANY($1) ORDER BY id"), &[&orders])
        .await
        .context("read final documents")?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let doc: Option<String> = r.get(1);
            Some((r.get(0), serde_json::from_str(&doc?).ok()?))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_version_decides_and_orders_keep_first_seen_order() {
        let events = [
            EventSpec::new(43, "created", 1),
            EventSpec::new(42, "paid", 2),
            EventSpec::new(42, "created", 1),
            EventSpec::new(43, "paid", 2),
        ];
        let want = expected_statuses(&events);
        assert_eq!((want[&42].as_str(), want[&43].as_str()), ("paid", "paid"));
        assert_eq!(orders_of(&[], &events), vec![43, 42]);
        assert_eq!(default_initial(&events)[0], OrderRow { order: 43, status: "new".into(), version: 0 });
    }

    #[test]
    fn a_state_event_carries_the_document_after_it_and_the_last_one_is_expected() {
        let item = |name: &str, cents| Some(Item { name: name.into(), cents });
        let events = [
            EventSpec::new(42, "created", 1),
            EventSpec { item: item("book", 2500), ..EventSpec::new(42, order_document::ITEM_ADDED, 2) },
            EventSpec { item: item("pen", 500), ..EventSpec::new(42, order_document::ITEM_ADDED, 3) },
            EventSpec::new(42, "paid", 4),
        ];
        assert_eq!(document_after(&events, 42, 2).total, 2500);
        let end = &expected_documents(&events).unwrap()[&42];
        assert_eq!((end.status.as_str(), end.total, end.items.len()), ("paid", 3000, 2));
        assert_eq!(expected_documents(&events[..1]), None);
    }
}
