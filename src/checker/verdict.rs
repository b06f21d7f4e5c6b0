//! The judgement of one run, and how judgements compose: wrong beats unknown beats right,
//! and the reasons of every non-right part are kept.

use serde::{Deserialize, Serialize};

/// The judgement of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Right,
    /// The checker cannot decide (the run timed out, a process died unplanned, a row is missing).
    Unknown,
    Wrong,
}

impl Verdict {
    /// Compose two verdicts: wrong beats unknown beats right.
    pub fn and(self, other: Verdict) -> Verdict {
        self.max(other)
    }
}

/// A verdict with the reasons behind anything but right.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunVerdict {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

impl RunVerdict {
    pub fn right() -> RunVerdict {
        RunVerdict { verdict: Verdict::Right, reasons: Vec::new() }
    }

    /// Add a finding: `verdict` with its reason.
    pub fn add(&mut self, verdict: Verdict, reason: impl Into<String>) {
        self.verdict = self.verdict.and(verdict);
        self.reasons.push(reason.into());
    }

    /// Both judgements together.
    pub fn and(mut self, other: RunVerdict) -> RunVerdict {
        self.verdict = self.verdict.and(other.verdict);
        self.reasons.extend(other.reasons);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_beats_unknown_beats_right_and_reasons_add_up() {
        let mut a = RunVerdict::right();
        a.add(Verdict::Unknown, "timed out");
        let mut b = RunVerdict::right();
        b.add(Verdict::Wrong, "order 42 ended created");
        let both = a.and(b);
        assert_eq!(both.verdict, Verdict::Wrong);
        assert_eq!(both.reasons, ["timed out", "order 42 ended created"]);
        assert_eq!(RunVerdict::right().and(RunVerdict::right()), RunVerdict::right());
    }
}
