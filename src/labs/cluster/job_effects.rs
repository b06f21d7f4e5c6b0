//! Did every job take effect exactly once, and each order's steps in step order? Judged from
//! the effect lists a list-queue lab reads back after a run: each list holds `(order, version)`
//! per applied job, in the order the effects happened.

use crate::checker::{RunVerdict, Verdict};
use std::collections::{BTreeMap, BTreeSet};

/// Reasons listed at most per kind; the counts say how many there are.
const LISTED: usize = 3;

/// What the effect lists say against the jobs that were pushed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EffectTally {
    pub expected: usize,
    /// Pushed jobs applied at least once.
    pub applied: usize,
    /// Pushed jobs never applied.
    pub missing: Vec<(i64, i64)>,
    /// Jobs applied more than once.
    pub duplicated: Vec<(i64, i64)>,
    /// Effects of no pushed job.
    pub unexpected: usize,
    /// Orders with a step applied after a later step of the same order.
    pub out_of_order: Vec<i64>,
}

/// Tally `lists` (each in applied order) against the `expected` jobs.
pub fn tally(expected: &[(i64, i64)], lists: &[Vec<(i64, i64)>]) -> EffectTally {
    let wanted: BTreeSet<(i64, i64)> = expected.iter().copied().collect();
    let mut seen: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    let mut out_of_order = BTreeSet::new();
    let mut unexpected = 0;
    for list in lists {
        let mut highest: BTreeMap<i64, i64> = BTreeMap::new();
        for &(order, version) in list {
            if !wanted.contains(&(order, version)) {
                unexpected += 1;
                continue;
            }
            *seen.entry((order, version)).or_default() += 1;
            let top = highest.entry(order).or_insert(version);
            if version < *top {
                out_of_order.insert(order);
            }
            *top = (*top).max(version);
        }
    }
    EffectTally {
        expected: wanted.len(),
        applied: seen.len(),
        missing: wanted.iter().filter(|j| !seen.contains_key(j)).copied().collect(),
        duplicated: seen.iter().filter(|(_, n)| **n > 1).map(|(j, _)| *j).collect(),
        unexpected,
        out_of_order: out_of_order.into_iter().collect(),
    }
}

impl EffectTally {
    /// Wrong when a job never took effect, took effect twice, or (with `order`) an order's
    /// steps took effect out of step order.
    pub fn verdict(&self, order: bool) -> RunVerdict {
        let mut v = RunVerdict::right();
        let jobs = |js: &[(i64, i64)]| {
            let listed: Vec<String> = js.iter().take(LISTED).map(|(o, ver)| format!("#{o} v={ver}")).collect();
            let more = if js.len() > LISTED { ", …" } else { "" };
            format!("{}{more}", listed.join(", "))
        };
        if !self.missing.is_empty() {
            let (n, of) = (self.missing.len(), self.expected);
            v.add(Verdict::Wrong, format!("{n} of {of} jobs never took effect ({})", jobs(&self.missing)));
        }
        if !self.duplicated.is_empty() {
            v.add(
                Verdict::Wrong,
                format!("{} jobs took effect twice ({})", self.duplicated.len(), jobs(&self.duplicated)),
            );
        }
        if self.unexpected > 0 {
            v.add(Verdict::Wrong, format!("{} effects of no pushed job", self.unexpected));
        }
        if order && !self.out_of_order.is_empty() {
            let listed: Vec<String> = self.out_of_order.iter().take(LISTED).map(|o| format!("#{o}")).collect();
            let more = if self.out_of_order.len() > LISTED { ", …" } else { "" };
            v.add(
                Verdict::Wrong,
                format!(
                    "{} orders had a step take effect after a later one ({}{more})",
                    self.out_of_order.len(),
                    listed.join(", ")
                ),
            );
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::cluster::job_effects::*;

    const JOBS: &[(i64, i64)] = &[(1, 1), (1, 2), (2, 1), (2, 2)];

    #[test]
    fn every_job_once_in_step_order_is_right() {
        let t = tally(JOBS, &[vec![(1, 1), (2, 1)], vec![], vec![(1, 2), (2, 2)]]);
        assert_eq!(t.applied, 4);
        assert_eq!(t.verdict(true), RunVerdict::right());
    }

    #[test]
    fn missing_duplicated_and_reordered_jobs_are_wrong() {
        let t = tally(JOBS, &[vec![(1, 2), (1, 1), (1, 1), (9, 9)]]);
        assert_eq!(t.missing, [(2, 1), (2, 2)]);
        assert_eq!(t.duplicated, [(1, 1)]);
        assert_eq!((t.unexpected, t.out_of_order.clone()), (1, vec![1]));
        let v = t.verdict(true);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(
            v.reasons,
            [
                "2 of 4 jobs never took effect (#2 v=1, #2 v=2)",
                "1 jobs took effect twice (#1 v=1)",
                "1 effects of no pushed job",
                "1 orders had a step take effect after a later one (#1)",
            ]
        );
        // Order not judged: only delivery.
        assert_eq!(tally(JOBS, &[vec![(1, 2), (1, 1), (2, 2), (2, 1)]]).verdict(false), RunVerdict::right());
    }
}
