//! Final-state checker: each order must end in the status of its highest-versioned event, and
//! where events change a document (P4), its stored document must hold every change. A missing
//! row cannot be judged (unknown), a different status or document is wrong.

use super::{RunVerdict, Verdict};
use crate::order_document::Document;
use crate::orders::OrderRow;
use std::collections::BTreeMap;

/// `expected`: order → status it must end in; `rows`: what the table holds after the run.
pub fn final_state(expected: &BTreeMap<i64, String>, rows: &[OrderRow]) -> RunVerdict {
    let mut v = RunVerdict::right();
    for (order, want) in expected {
        match rows.iter().find(|r| r.order == *order) {
            Some(row) if row.status == *want => {}
            Some(row) => v.add(
                Verdict::Wrong,
                format!("order {order} ended {} (v={}), expected {want}", row.status, row.version),
            ),
            None => v.add(Verdict::Unknown, format!("order {order} has no row")),
        }
    }
    v
}

/// Document checker (P4): each order's stored document must be the fold of all its events —
/// status, items and total. A document never written as one cannot be judged (unknown).
pub fn documents(expected: &BTreeMap<i64, Document>, stored: &BTreeMap<i64, Document>) -> RunVerdict {
    let mut v = RunVerdict::right();
    for (order, want) in expected {
        match stored.get(order) {
            Some(doc) if doc == want => {}
            Some(doc) => v.add(Verdict::Wrong, format!("order {order} document: {}", doc.difference(want).join("; "))),
            None => v.add(Verdict::Unknown, format!("order {order} has no document")),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_document_must_hold_every_change() {
        use crate::order_document::{fold, Item, ITEM_ADDED};
        let (book, pen) = (Item { name: "book".into(), cents: 2500 }, Item { name: "pen".into(), cents: 500 });
        let want =
            fold([("created", 1, None), (ITEM_ADDED, 2, Some(&book)), (ITEM_ADDED, 3, Some(&pen)), ("paid", 4, None)]);
        let expected = BTreeMap::from([(42, want.clone())]);
        assert_eq!(documents(&expected, &BTreeMap::from([(42, want)])), RunVerdict::right());
        let lost = fold([("created", 1, None), (ITEM_ADDED, 3, Some(&pen)), ("paid", 4, None)]);
        let v = documents(&expected, &BTreeMap::from([(42, lost)]));
        assert_eq!(v.reasons, ["order 42 document: missing book; total 500, expected 3000"]);
        // Never written: the row still holds the empty document.
        let empty = documents(&expected, &BTreeMap::from([(42, Document::empty())]));
        assert_eq!(empty.verdict, Verdict::Wrong);
        assert_eq!(documents(&expected, &BTreeMap::new()).verdict, Verdict::Unknown);
    }

    fn row(status: &str, version: i64) -> Vec<OrderRow> {
        vec![OrderRow { order: 42, status: status.into(), version }]
    }

    #[test]
    fn the_last_business_event_must_win() {
        let want = BTreeMap::from([(42, "paid".to_string())]);
        assert_eq!(final_state(&want, &row("paid", 2)), RunVerdict::right());
        let bad = final_state(&want, &row("created", 1));
        assert_eq!(bad.verdict, Verdict::Wrong);
        assert_eq!(bad.reasons, vec!["order 42 ended created (v=1), expected paid"]);
        assert_eq!(final_state(&want, &[]).verdict, Verdict::Unknown);
    }
}
