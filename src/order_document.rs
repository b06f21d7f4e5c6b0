//! An order as a document — its status, its items and their total — and how events change
//! it (P4). A delta event carries one change (`item-added book 2500`) folded into the stored
//! document; a state event carries the whole document after it, computed by the same fold, so
//! a state event never disagrees with the deltas and the expected final document is the fold
//! of every event.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An item an event adds to the order: its name and price in cents.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub name: String,
    pub cents: i64,
}

/// The order's document as stored in `orders.doc` (jsonb). Items are an object keyed by
/// name, so two documents are equal whatever order their items were added in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Document {
    pub status: String,
    pub items: BTreeMap<String, i64>,
    pub total: i64,
}

/// The event type that adds an item; every other type sets the status.
pub const ITEM_ADDED: &str = "item-added";

impl Document {
    /// The document before any event (the row every run starts from).
    pub fn empty() -> Document {
        Document { status: "new".into(), items: BTreeMap::new(), total: 0 }
    }

    /// Apply one event: an item added (status unchanged), or a new status.
    pub fn apply(&mut self, event_type: &str, item: Option<&Item>) {
        match item {
            Some(i) if event_type == ITEM_ADDED => {
                *self.items.entry(i.name.clone()).or_default() += i.cents;
                self.total += i.cents;
            }
            _ => self.status = event_type.to_string(),
        }
    }

    /// What is missing or different, in a few words (`missing book; total 500, expected 3000`).
    pub fn difference(&self, expected: &Document) -> Vec<String> {
        let mut out = Vec::new();
        if self.status != expected.status {
            out.push(format!("status {}, expected {}", self.status, expected.status));
        }
        for (name, cents) in &expected.items {
            match self.items.get(name) {
                None => out.push(format!("missing {name}")),
                Some(c) if c != cents => out.push(format!("{name} {c}, expected {cents}")),
                Some(_) => {}
            }
        }
        for name in self.items.keys().filter(|n| !expected.items.contains_key(*n)) {
            out.push(format!("unexpected {name}"));
        }
        if self.total != expected.total {
            out.push(format!("total {}, expected {}", self.total, expected.total));
        }
        out
    }
}

/// The document after `changes` — (event type, version, item) — applied in version order.
pub fn fold<'a>(changes: impl IntoIterator<Item = (&'a str, i64, Option<&'a Item>)>) -> Document {
    let mut sorted: Vec<_> = changes.into_iter().collect();
    sorted.sort_by_key(|(_, v, _)| *v);
    let mut doc = Document::empty();
    for (t, _, item) in sorted {
        doc.apply(t, item);
    }
    doc
}

/// A state event's payload: `doc` padded with a `notes` field to about `bytes` bytes (a real
/// order document carries addresses and lines; 0: no padding).
pub fn payload(doc: &Document, bytes: usize) -> String {
    let plain = serde_json::to_string(doc).expect("documents serialize");
    let pad = bytes.saturating_sub(plain.len() + r#","notes":"""#.len());
    if pad == 0 {
        return plain;
    }
    let mut v = serde_json::to_value(doc).expect("documents serialize");
    v["notes"] = serde_json::Value::String("x".repeat(pad));
    serde_json::to_string(&v).expect("documents serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> Item {
        Item { name: "book".into(), cents: 2500 }
    }

    fn pen() -> Item {
        Item { name: "pen".into(), cents: 500 }
    }

    #[test]
    fn changes_fold_in_version_order_and_a_lost_item_is_named() {
        let (b, p) = (book(), pen());
        let changes = [("paid", 4, None), (ITEM_ADDED, 3, Some(&p)), ("created", 1, None), (ITEM_ADDED, 2, Some(&b))];
        let end = fold(changes);
        assert_eq!((end.status.as_str(), end.total), ("paid", 3000));
        assert_eq!(end.items, BTreeMap::from([("book".into(), 2500), ("pen".into(), 500)]));
        let lost = fold([("created", 1, None), (ITEM_ADDED, 3, Some(&p)), ("paid", 4, None)]);
        assert_eq!(lost.difference(&end), ["missing book", "total 500, expected 3000"]);
    }

    #[test]
    fn a_payload_has_its_size_and_reads_back_as_the_document() {
        let doc = fold([("created", 1, None), (ITEM_ADDED, 2, Some(&book()))]);
        let padded = payload(&doc, 512);
        assert_eq!(padded.len(), 512);
        assert_eq!(serde_json::from_str::<Document>(&padded).unwrap(), doc);
        assert_eq!(payload(&Document::empty(), 0), r#"{"status":"new","items":{},"total":0}"#);
    }
}
