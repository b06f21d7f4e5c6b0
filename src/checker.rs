//! Checkers are pure functions from a recorded run (timeline, stream, final rows) to a
//! verdict, so a saved run can be re-judged without servers. Verdicts are three-valued and
//! compose as in Jepsen: wrong beats unknown beats right.

use crate::scenario::{OrderRow, Setup};
use crate::timeline::{Event, EventKind};
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

/// What the checker reads of a run.
pub struct RunView<'a> {
    pub events: &'a [Event],
    pub final_rows: &'a [OrderRow],
    /// The run hit its deadline before every entry was acknowledged.
    pub timed_out: bool,
    /// Rows left in the outbox table, where the lab has one.
    pub outbox_rows: Option<i64>,
}

/// Final-state checker: each order must end in the status of its highest-versioned event.
pub fn final_state(setup: &Setup, run: &RunView<'_>) -> RunVerdict {
    let mut verdict = Verdict::Right;
    let mut reasons = Vec::new();
    for order in setup.orders() {
        let Some(expected) = setup.expected_status(order) else { continue };
        match run.final_rows.iter().find(|r| r.order == order) {
            Some(row) if row.status == expected => {}
            Some(row) => {
                verdict = verdict.and(Verdict::Wrong);
                reasons.push(format!("order {order} ended {} (v={}), expected {expected}", row.status, row.version));
            }
            None => {
                verdict = verdict.and(Verdict::Unknown);
                reasons.push(format!("order {order} has no row"));
            }
        }
    }
    if setup.kind == crate::scenario::LabKind::OutboxRollback {
        match run.outbox_rows {
            Some(0) => {}
            Some(n) => {
                verdict = verdict.and(Verdict::Wrong);
                reasons.push(format!("{n} outbox rows survived the rollback"));
            }
            None => {
                verdict = verdict.and(Verdict::Unknown);
                reasons.push("the outbox was not read".into());
            }
        }
    }
    if run.timed_out {
        verdict = verdict.and(Verdict::Unknown);
        reasons.push("the run timed out before every entry was acknowledged".into());
    }
    for e in run.events {
        if let EventKind::Crashed { planned: false, detail } = &e.kind {
            verdict = verdict.and(Verdict::Unknown);
            reasons.push(format!("{} died unplanned: {detail}", e.actor));
        }
    }
    RunVerdict { verdict, reasons }
}

/// How a variant's runs compare with its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matched,
    Mismatched,
    /// Some run could not be judged, so the count cannot be trusted.
    Inconclusive,
}

pub fn outcome(expect: &crate::scenario::Expectation, verdicts: &[Verdict]) -> Outcome {
    let wrong = verdicts.iter().filter(|v| **v == Verdict::Wrong).count() as u32;
    if verdicts.contains(&Verdict::Unknown) {
        Outcome::Inconclusive
    } else if expect.holds(wrong, verdicts.len() as u32) {
        Outcome::Matched
    } else {
        Outcome::Mismatched
    }
}

/// Re-judge a saved report from its recorded runs alone (what `ordlab check` does): every
/// run's verdict and every variant's tally are recomputed; nothing stored is trusted.
pub fn rejudge(report: &crate::report::LabReport) -> crate::report::LabReport {
    let mut out = report.clone();
    for v in &mut out.variants {
        for r in &mut v.run_records {
            r.verdict = final_state(
                &v.setup,
                &RunView {
                    events: &r.events,
                    final_rows: &r.final_rows,
                    timed_out: r.timed_out,
                    outbox_rows: r.outbox_rows,
                },
            );
        }
        *v = crate::report::VariantReport::tally(
            v.id.clone(),
            v.title.clone(),
            v.setup.clone(),
            v.expected.clone(),
            v.scheduler_race,
            std::mem::take(&mut v.run_records),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Expectation, Scenario};
    use crate::timeline::Actor;

    fn setup() -> Setup {
        let text = r#"
id = "t"
title = "t"
source = "new"
[setup]
events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]
[expect]
wrong = "all"
"#;
        Scenario::parse(text, "t").unwrap().variants[0].setup.clone()
    }

    fn row(status: &str, version: i64) -> Vec<OrderRow> {
        vec![OrderRow { order: 42, status: status.into(), version }]
    }

    #[test]
    fn the_last_business_event_must_win() {
        let s = setup();
        let ok =
            final_state(&s, &RunView { events: &[], final_rows: &row("paid", 2), timed_out: false, outbox_rows: None });
        assert_eq!(ok, RunVerdict { verdict: Verdict::Right, reasons: vec![] });
        let bad = final_state(
            &s,
            &RunView { events: &[], final_rows: &row("created", 1), timed_out: false, outbox_rows: None },
        );
        assert_eq!(bad.verdict, Verdict::Wrong);
        assert_eq!(bad.reasons, vec!["order 42 ended created (v=1), expected paid"]);
    }

    #[test]
    fn undecidable_runs_are_unknown_but_wrong_still_wins() {
        let s = setup();
        let missing = final_state(&s, &RunView { events: &[], final_rows: &[], timed_out: false, outbox_rows: None });
        assert_eq!(missing.verdict, Verdict::Unknown);
        let late =
            final_state(&s, &RunView { events: &[], final_rows: &row("paid", 2), timed_out: true, outbox_rows: None });
        assert_eq!(late.verdict, Verdict::Unknown);
        let crash = [Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Crashed { planned: false, detail: "x".into() },
        }];
        let both = final_state(
            &s,
            &RunView { events: &crash, final_rows: &row("created", 1), timed_out: false, outbox_rows: None },
        );
        assert_eq!(both.verdict, Verdict::Wrong);
        assert_eq!(both.reasons.len(), 2);
    }

    #[test]
    fn planned_crashes_do_not_make_a_run_unknown() {
        let crash = [Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Crashed { planned: true, detail: "x".into() },
        }];
        let v = final_state(
            &setup(),
            &RunView { events: &crash, final_rows: &row("paid", 2), timed_out: false, outbox_rows: None },
        );
        assert_eq!(v.verdict, Verdict::Right);
    }

    #[test]
    fn outcome_compares_counts_with_the_expectation() {
        use Verdict::*;
        assert_eq!(outcome(&Expectation::All, &[Wrong, Wrong]), Outcome::Matched);
        assert_eq!(outcome(&Expectation::All, &[Wrong, Right]), Outcome::Mismatched);
        assert_eq!(outcome(&Expectation::None, &[Right, Unknown]), Outcome::Inconclusive);
    }
}
