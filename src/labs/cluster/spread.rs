//! Does a queue's load spread over a cluster's masters? Judged from the calls of queue
//! commands each master counted itself (`INFO commandstats`): with N masters each should
//! serve about 1/N. A master serving less than half or more than one and a half times its fair
//! share makes the layout wrong: a key lives on one master, so one key is one master's load.

use crate::checker::{RunVerdict, Verdict};

/// Per master, its name and the queue commands it served; wrong when one is far from 1/N.
pub fn spread(per_master: &[(String, u64)]) -> RunVerdict {
    let mut v = RunVerdict::right();
    let total: u64 = per_master.iter().map(|(_, n)| n).sum();
    if total == 0 || per_master.len() < 2 {
        return v;
    }
    let fair = 100.0 / per_master.len() as f64;
    for (name, n) in per_master {
        let pct = *n as f64 * 100.0 / total as f64;
        if pct < fair / 2.0 || pct > fair * 1.5 {
            v.add(
                Verdict::Wrong,
                format!("master {name} served {pct:.0} % of the queue commands (fair share {fair:.0} %)"),
            );
        }
    }
    v
}

/// Each master's share of the queue commands, in %.
pub fn shares(per_master: &[(String, u64)]) -> Vec<f64> {
    let total: u64 = per_master.iter().map(|(_, n)| n).sum();
    per_master.iter().map(|(_, n)| if total == 0 { 0.0 } else { *n as f64 * 100.0 / total as f64 }).collect()
}

#[cfg(test)]
mod tests {
    use crate::labs::cluster::spread::*;

    fn masters(counts: &[u64]) -> Vec<(String, u64)> {
        counts.iter().enumerate().map(|(i, n)| (crate::service::cluster::node_name(i), *n)).collect()
    }

    #[test]
    fn one_hot_master_or_an_idle_one_is_wrong() {
        assert_eq!(spread(&masters(&[1000, 990, 1010])), RunVerdict::right());
        let one_key = spread(&masters(&[3000, 0, 0]));
        assert_eq!(one_key.verdict, Verdict::Wrong);
        assert_eq!(one_key.reasons[0], "master A served 100 % of the queue commands (fair share 33 %)");
        // {shard-0..2} on the even split: 2 queues on one master, none on another.
        assert_eq!(spread(&masters(&[2000, 0, 1000])).reasons.len(), 2);
        assert_eq!(spread(&masters(&[0, 0, 0])), RunVerdict::right());
        assert_eq!(shares(&masters(&[1, 3])), [25.0, 75.0]);
    }
}
