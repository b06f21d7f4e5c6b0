//! Final-state checker: each order must end in the status of its highest-versioned event.
//! A missing row cannot be judged (unknown), a different status is wrong.

use super::{RunVerdict, Verdict};
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

#[cfg(test)]
mod tests {
    use super::*;

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
