//! A variant's runs against what its scenario file expects: how many runs should be wrong, how
//! many should drop an event (never apply it: skipped as stale, refused, lost), and whether the
//! counts can be trusted (a run that could not be judged makes them inconclusive).

use super::Verdict;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How many runs should end wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// Every run wrong: the bug is deterministic.
    All,
    /// No run wrong: the fix holds.
    None,
    /// At least one run wrong (for a race that happens often enough to never miss in n runs).
    Some,
    /// Not asserted: the figure is measured and reported only.
    Any,
    /// Exactly k runs wrong.
    Exactly(u32),
}

impl Expectation {
    /// `none`: the default of `expect.dropped`.
    pub fn none() -> Expectation {
        Expectation::None
    }

    /// Does `wrong` out of `runs` meet the expectation?
    pub fn holds(&self, wrong: u32, runs: u32) -> bool {
        match self {
            Expectation::All => wrong == runs,
            Expectation::None => wrong == 0,
            Expectation::Some => wrong > 0,
            Expectation::Any => true,
            Expectation::Exactly(k) => wrong == *k,
        }
    }

    /// The count differs from run to run of the lab (a race): reports give its interval.
    pub fn is_probabilistic(&self) -> bool {
        matches!(self, Expectation::Some | Expectation::Any)
    }
}

impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            Count(u32),
        }
        match Raw::deserialize(d)? {
            Raw::Count(k) => Ok(Expectation::Exactly(k)),
            Raw::Word(w) => match w.as_str() {
                "all" => Ok(Expectation::All),
                "none" => Ok(Expectation::None),
                "some" => Ok(Expectation::Some),
                "any" => Ok(Expectation::Any),
                _ => Err(serde::de::Error::custom(format!(
                    "expected {w:?} runs: use \"all\", \"none\", \"some\", \"any\" or a number"
                ))),
            },
        }
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Expectation::All => s.serialize_str("all"),
            Expectation::None => s.serialize_str("none"),
            Expectation::Some => s.serialize_str("some"),
            Expectation::Any => s.serialize_str("any"),
            Expectation::Exactly(k) => s.serialize_u32(*k),
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::All => f.write_str("all"),
            Expectation::None => f.write_str("none"),
            Expectation::Some => f.write_str("some"),
            Expectation::Any => f.write_str("any (measured only)"),
            Expectation::Exactly(k) => write!(f, "exactly {k}"),
        }
    }
}

/// How a variant's runs compare with its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matched,
    Mismatched,
    /// Some run could not be judged, so the count cannot be trusted.
    Inconclusive,
    /// Not run: the server lacks what the variant needs (the report says what).
    Skipped,
    /// An at-least-one expectation (`some`) not shown, by fewer runs than the lab's: the odds
    /// that make a miss negligible are the lab's run count's, so a short run cannot refute it.
    TooFewRuns,
}

/// Both counts against their expectations: `verdicts` of every run, and `dropped`, the runs
/// in which some intended event never took effect. A drop does not make a run wrong (a CAS
/// consumer drops a stale event by design), but one the scenario does not declare makes the
/// variant mismatch: nothing is dropped silently.
///
/// `planned` is the lab's own run count, for which a `some` is written (a race that happens
/// often enough never to miss in that many runs; 0: unknown, as in older records). With fewer
/// runs, a `some` not shown is [`Outcome::TooFewRuns`], not a mismatch: two runs of a race
/// wrong in half of them show nothing one time in four.
pub fn outcome(
    expect: &Expectation,
    verdicts: &[Verdict],
    expect_dropped: &Expectation,
    dropped: u32,
    planned: u32,
) -> Outcome {
    let wrong = verdicts.iter().filter(|v| **v == Verdict::Wrong).count() as u32;
    let runs = verdicts.len() as u32;
    let short = runs < planned;
    let unshown = |e: &Expectation, n: u32| *e == Expectation::Some && n == 0 && short;
    if verdicts.contains(&Verdict::Unknown) {
        Outcome::Inconclusive
    } else if expect.holds(wrong, runs) && expect_dropped.holds(dropped, runs) {
        Outcome::Matched
    } else if (expect.holds(wrong, runs) || unshown(expect, wrong))
        && (expect_dropped.holds(dropped, runs) || unshown(expect_dropped, dropped))
    {
        Outcome::TooFewRuns
    } else {
        Outcome::Mismatched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_hold_or_not() {
        assert!(Expectation::All.holds(3, 3) && !Expectation::All.holds(2, 3));
        assert!(Expectation::None.holds(0, 3) && !Expectation::None.holds(1, 3));
        assert!(Expectation::Some.holds(1, 3) && !Expectation::Some.holds(0, 3));
        assert!(Expectation::Any.holds(0, 3) && Expectation::Exactly(2).holds(2, 3));
    }

    #[test]
    fn outcome_compares_counts_with_the_expectation() {
        use Verdict::*;
        let none = Expectation::None;
        assert_eq!(outcome(&Expectation::All, &[Wrong, Wrong], &none, 0, 0), Outcome::Matched);
        assert_eq!(outcome(&Expectation::All, &[Wrong, Right], &none, 0, 0), Outcome::Mismatched);
        assert_eq!(outcome(&Expectation::None, &[Right, Unknown], &none, 0, 0), Outcome::Inconclusive);
        // Right final states with a drop nobody declared: not a match.
        assert_eq!(outcome(&Expectation::None, &[Right, Right], &none, 2, 0), Outcome::Mismatched);
        assert_eq!(outcome(&Expectation::None, &[Right, Right], &Expectation::All, 2, 0), Outcome::Matched);
    }

    #[test]
    fn a_some_not_shown_by_fewer_runs_than_the_labs_is_too_few_runs_not_a_mismatch() {
        use Verdict::*;
        let (some, none) = (Expectation::Some, Expectation::None);
        assert_eq!(outcome(&some, &[Right, Right], &none, 0, 20), Outcome::TooFewRuns);
        assert_eq!(outcome(&some, &[Right, Wrong], &none, 0, 20), Outcome::Matched);
        // As many runs as the lab's (or an older record without the count): a miss is a miss.
        assert_eq!(outcome(&some, &[Right, Right], &none, 0, 2), Outcome::Mismatched);
        assert_eq!(outcome(&some, &[Right, Right], &none, 0, 0), Outcome::Mismatched);
        // A some of drops likewise; what else the runs show must still hold.
        assert_eq!(outcome(&some, &[Wrong, Right], &some, 0, 20), Outcome::TooFewRuns);
        assert_eq!(outcome(&none, &[Wrong, Right], &some, 0, 20), Outcome::Mismatched);
        assert_eq!(outcome(&Expectation::All, &[Right], &none, 0, 20), Outcome::Mismatched);
    }
}
