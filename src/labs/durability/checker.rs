//! Durability: which jobs the producer was told were stored are still on the server after a
//! crash and restart, or under memory pressure. Pure: the ids the server acknowledged, the
//! ids it refused with an error, and the ids it holds afterwards.

use crate::checker::{RunVerdict, Verdict};
use crate::labs::FinalItem;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What became of the producer's jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Durability {
    pub acked: u32,
    /// Refused with an error the producer saw (e.g. OOM): not lost, the producer knows.
    pub refused: u32,
    pub held: u32,
    /// Acknowledged, then gone: the silent loss.
    pub lost_acked: Vec<String>,
    /// On the server although the producer never got an acknowledgement (the reply was lost
    /// with the crash): a producer that retries would store it twice.
    pub held_unacked: Vec<String>,
}

impl Durability {
    /// Wrong when an acknowledged job is gone.
    pub fn verdict(&self) -> RunVerdict {
        let mut v = RunVerdict::right();
        if !self.lost_acked.is_empty() {
            let n = self.lost_acked.len();
            v.add(
                Verdict::Wrong,
                format!("{n} of {} acknowledged jobs are gone ({})", self.acked, first_few(&self.lost_acked)),
            );
        }
        v
    }
}

/// Job numbers as sorted, disjoint, inclusive ranges: thousands of ids in a few pairs (what a
/// run's JSON keeps of its producer's acknowledgements and of what the server held).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRanges(pub Vec<(u64, u64)>);

impl JobRanges {
    pub fn from_numbers(mut numbers: Vec<u64>) -> JobRanges {
        numbers.sort_unstable();
        numbers.dedup();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for n in numbers {
            match ranges.last_mut() {
                Some(last) if last.1 + 1 == n => last.1 = n,
                _ => ranges.push((n, n)),
            }
        }
        JobRanges(ranges)
    }

    pub fn numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().flat_map(|&(a, b)| a..=b)
    }

    pub fn len(&self) -> u64 {
        self.0.iter().map(|&(a, b)| b - a + 1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ids, named as the producer named them.
    pub fn ids(&self, name: impl Fn(u64) -> String) -> Vec<String> {
        self.numbers().map(name).collect()
    }
}

/// Compare the acknowledged and refused ids with the ids the server holds.
pub fn durability(acked: &[String], refused: &[String], held: &[String]) -> Durability {
    let held_set: BTreeSet<&str> = held.iter().map(String::as_str).collect();
    let acked_set: BTreeSet<&str> = acked.iter().map(String::as_str).collect();
    Durability {
        acked: acked_set.len() as u32,
        refused: refused.len() as u32,
        held: held_set.len() as u32,
        lost_acked: acked.iter().filter(|j| !held_set.contains(j.as_str())).cloned().collect(),
        held_unacked: held_set.iter().filter(|j| !acked_set.contains(*j)).map(|j| j.to_string()).collect(),
    }
}

/// `job-1, job-2, job-3 … and 97 more`.
pub fn first_few(ids: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut s = ids.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" … and {} more", ids.len() - SHOWN));
    }
    s
}

/// The final state of a durability lab: were the acknowledged jobs kept.
pub fn acknowledged_jobs(d: &Durability) -> Vec<FinalItem> {
    let lost = !d.lost_acked.is_empty();
    vec![FinalItem {
        order: None,
        subject: "acknowledged jobs".into(),
        value: if lost { "lost" } else { "kept" }.into(),
        should_be: lost.then(|| "kept".into()),
    }]
}

#[cfg(test)]
mod tests {
    use crate::labs::durability::checker::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lost_and_unacknowledged_are_told_apart() {
        let d = durability(&ids(&["j1", "j2", "j3"]), &ids(&["j5"]), &ids(&["j1", "j4"]));
        assert_eq!(d.lost_acked, ids(&["j2", "j3"]));
        assert_eq!(d.held_unacked, ids(&["j4"]));
        assert_eq!((d.acked, d.refused, d.held), (3, 1, 2));
        assert_eq!(d.verdict().verdict, Verdict::Wrong);
        assert_eq!(d.verdict().reasons, ["2 of 3 acknowledged jobs are gone (j2, j3)"]);
    }

    #[test]
    fn refused_jobs_are_not_lost_and_everything_kept_is_right() {
        let d = durability(&ids(&["j1"]), &ids(&["j2"]), &ids(&["j1"]));
        assert!(d.lost_acked.is_empty() && d.held_unacked.is_empty());
        assert_eq!(d.verdict(), RunVerdict::right());
    }

    #[test]
    fn numbers_are_kept_as_ranges() {
        let r = JobRanges::from_numbers(vec![5, 1, 2, 3, 7, 3]);
        assert_eq!(r.0, vec![(1, 3), (5, 5), (7, 7)]);
        assert_eq!(r.len(), 5);
        assert_eq!(r.numbers().collect::<Vec<_>>(), [1, 2, 3, 5, 7]);
        assert_eq!(r.ids(|n| format!("j{n}"))[..2], ["j1".to_string(), "j2".to_string()]);
        assert!(JobRanges::from_numbers(Vec::new()).is_empty());
    }

    #[test]
    fn long_lists_are_cut() {
        assert_eq!(first_few(&ids(&["a", "b", "c", "d", "e"])), "a, b, c … and 2 more");
    }
}
