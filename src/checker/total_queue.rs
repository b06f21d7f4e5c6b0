//! The total-queue check: every job a producer published must end exactly one way — each of
//! its effects applied exactly once, or (a poison job) in the dead-letter queue with the right
//! reason and no effect. Counted from the side-effect sink's ledger, never from a worker's log.

use crate::checker::{RunVerdict, Verdict};
use crate::side_effect::{EffectOutcome, EffectRecord};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What must become of one job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobExpectation {
    pub job: String,
    /// Effects that must each be applied exactly once (for a `Done` job).
    pub effects: Vec<String>,
    pub fate: ExpectedFate,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fate")]
pub enum ExpectedFate {
    Done,
    /// Must end in the dead-letter queue with this reason class, and have no effect.
    DeadLetter {
        reason: String,
    },
}

/// A job the queue gave up on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub job: String,
    pub reason: String,
}

/// The tally of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TotalQueue {
    pub jobs: u32,
    /// `Done` jobs with every effect applied exactly once and not dead-lettered.
    pub exactly_once: u32,
    /// `DeadLetter` jobs in the DLQ with the right reason and no effect.
    pub dead_lettered: u32,
    /// (job, effect, times applied), times ≥ 2.
    pub duplicated: Vec<(String, String, u32)>,
    /// (job, effect) applied 0 times, job not dead-lettered.
    pub lost: Vec<(String, String)>,
    /// (job, reason): a `Done` job in the DLQ, or a poison job with another reason.
    pub wrongly_dead: Vec<(String, String)>,
    /// Jobs with an effect applied and also in the DLQ.
    pub done_and_dead: Vec<String>,
    /// Jobs the ledger or the DLQ names that nobody published.
    pub unexpected: Vec<String>,
}

/// Applied effects per (job, effect). Replayed and refused requests are not effects.
pub fn effects_per_job(records: &[EffectRecord]) -> BTreeMap<(String, String), u32> {
    let mut out = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome == EffectOutcome::Applied) {
        *out.entry((r.job.clone(), r.effect.clone())).or_insert(0) += 1;
    }
    out
}

pub fn total_queue(expected: &[JobExpectation], records: &[EffectRecord], dlq: &[DeadLetter]) -> TotalQueue {
    tally(expected, &effects_per_job(records), dlq)
}

/// [`total_queue`] from applied counts per (job, effect) (what [`effects_per_job`] gives).
pub fn tally(expected: &[JobExpectation], applied: &BTreeMap<(String, String), u32>, dlq: &[DeadLetter]) -> TotalQueue {
    let mut t = TotalQueue { jobs: expected.len() as u32, ..TotalQueue::default() };
    for exp in expected {
        let dead: Vec<&DeadLetter> = dlq.iter().filter(|d| d.job == exp.job).collect();
        let any_effect = applied.iter().any(|((job, _), n)| *job == exp.job && *n > 0);
        if any_effect && !dead.is_empty() {
            t.done_and_dead.push(exp.job.clone());
            continue;
        }
        match &exp.fate {
            ExpectedFate::DeadLetter { reason } => match dead.first() {
                Some(d) if d.reason == *reason => t.dead_lettered += 1,
                Some(d) => t.wrongly_dead.push((exp.job.clone(), d.reason.clone())),
                None if any_effect => t.wrongly_dead.push((exp.job.clone(), "done instead".into())),
                None => t.lost.push((exp.job.clone(), "(dead letter)".into())),
            },
            ExpectedFate::Done => {
                if let Some(d) = dead.first() {
                    t.wrongly_dead.push((exp.job.clone(), d.reason.clone()));
                    continue;
                }
                let mut once = true;
                for effect in &exp.effects {
                    match applied.get(&(exp.job.clone(), effect.clone())).copied().unwrap_or(0) {
                        1 => {}
                        0 => {
                            once = false;
                            t.lost.push((exp.job.clone(), effect.clone()));
                        }
                        n => {
                            once = false;
                            t.duplicated.push((exp.job.clone(), effect.clone(), n));
                        }
                    }
                }
                if once {
                    t.exactly_once += 1;
                }
            }
        }
    }
    let known: BTreeSet<&str> = expected.iter().map(|e| e.job.as_str()).collect();
    let strays: BTreeSet<String> = applied
        .keys()
        .map(|(job, _)| job.as_str())
        .chain(dlq.iter().map(|d| d.job.as_str()))
        .filter(|j| !known.contains(j))
        .map(str::to_string)
        .collect();
    t.unexpected = strays.into_iter().collect();
    t
}

/// At most this many jobs are named per reason line.
const NAMED: usize = 5;

fn named<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    let mut s: Vec<String> = items.iter().take(NAMED).map(show).collect();
    if items.len() > NAMED {
        s.push(format!("… and {} more", items.len() - NAMED));
    }
    s.join(", ")
}

impl TotalQueue {
    /// Right when nothing is duplicated, lost, wrongly dead, done-and-dead or unexpected.
    pub fn verdict(&self) -> RunVerdict {
        let mut reasons = Vec::new();
        if !self.duplicated.is_empty() {
            reasons.push(format!(
                "{} effects duplicated: {}",
                self.duplicated.len(),
                named(&self.duplicated, |(j, e, n)| format!("{j} {e} ×{n}"))
            ));
        }
        if !self.lost.is_empty() {
            reasons.push(format!(
                "{} effects lost: {}",
                self.lost.len(),
                named(&self.lost, |(j, e)| format!("{j} {e}"))
            ));
        }
        if !self.wrongly_dead.is_empty() {
            reasons.push(format!(
                "{} jobs dead-lettered wrongly: {}",
                self.wrongly_dead.len(),
                named(&self.wrongly_dead, |(j, r)| format!("{j} ({r})"))
            ));
        }
        if !self.done_and_dead.is_empty() {
            reasons.push(format!(
                "{} jobs both done and dead-lettered: {}",
                self.done_and_dead.len(),
                named(&self.done_and_dead, |j| j.clone())
            ));
        }
        if !self.unexpected.is_empty() {
            reasons.push(format!(
                "{} unexpected jobs: {}",
                self.unexpected.len(),
                named(&self.unexpected, |j| j.clone())
            ));
        }
        let verdict = if reasons.is_empty() { Verdict::Right } else { Verdict::Wrong };
        RunVerdict { verdict, reasons }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Actor;

    fn rec(id: i64, job: &str, effect: &str, outcome: EffectOutcome) -> EffectRecord {
        EffectRecord {
            request_id: id,
            job: job.into(),
            effect: effect.into(),
            idem_key: None,
            actor: Actor::Consumer(1),
            delivery: None,
            mono_ns: 0,
            outcome,
            replay_of: None,
            fault: None,
        }
    }

    fn done(job: &str, effects: &[&str]) -> JobExpectation {
        JobExpectation {
            job: job.into(),
            effects: effects.iter().map(|e| e.to_string()).collect(),
            fate: ExpectedFate::Done,
        }
    }

    fn poison(job: &str) -> JobExpectation {
        JobExpectation { job: job.into(), effects: vec![], fate: ExpectedFate::DeadLetter { reason: "poison".into() } }
    }

    fn dead(job: &str, reason: &str) -> DeadLetter {
        DeadLetter { job: job.into(), reason: reason.into() }
    }

    use EffectOutcome::{Applied, Refused, Replayed};

    #[test]
    fn replays_and_refusals_are_not_effects() {
        let records = [
            rec(1, "job-1", "email", Refused),
            rec(2, "job-1", "email", Applied),
            rec(3, "job-1", "email", Replayed),
            rec(4, "job-2", "email", Applied),
            rec(5, "job-2", "email", Applied),
        ];
        let per = effects_per_job(&records);
        assert_eq!(per[&("job-1".to_string(), "email".to_string())], 1);
        assert_eq!(per[&("job-2".to_string(), "email".to_string())], 2);
        let t = total_queue(&[done("job-1", &["email"]), done("job-2", &["email"])], &records, &[]);
        assert_eq!(t.exactly_once, 1);
        assert_eq!(t.duplicated, [("job-2".to_string(), "email".to_string(), 2)]);
        assert!(t.lost.is_empty());
    }

    #[test]
    fn each_effect_of_a_multistep_job_counts_on_its_own() {
        let records = [rec(1, "job-1", "email", Applied)];
        let t = total_queue(&[done("job-1", &["email", "partner_api"])], &records, &[]);
        assert_eq!(t.exactly_once, 0);
        assert_eq!(t.lost, [("job-1".to_string(), "partner_api".to_string())]);
    }

    #[test]
    fn poison_jobs_must_be_dead_lettered_for_the_right_reason() {
        let expected = [poison("p-1"), poison("p-2"), poison("p-3"), poison("p-4")];
        let records = [rec(1, "p-4", "email", Applied)];
        let dlq = [dead("p-1", "poison"), dead("p-2", "attempts exhausted")];
        let t = total_queue(&expected, &records, &dlq);
        assert_eq!(t.dead_lettered, 1);
        assert_eq!(
            t.wrongly_dead,
            [("p-2".to_string(), "attempts exhausted".to_string()), ("p-4".to_string(), "done instead".to_string())]
        );
        assert_eq!(t.lost, [("p-3".to_string(), "(dead letter)".to_string())], "neither done nor in the DLQ");
    }

    #[test]
    fn a_healthy_job_in_the_dlq_is_wrong_and_done_and_dead_is_named() {
        let expected = [done("job-1", &["email"]), done("job-2", &["email"])];
        let records = [rec(1, "job-2", "email", Applied)];
        let t = total_queue(&expected, &records, &[dead("job-1", "attempts exhausted"), dead("job-2", "poison")]);
        assert_eq!(t.wrongly_dead, [("job-1".to_string(), "attempts exhausted".to_string())]);
        assert_eq!(t.done_and_dead, ["job-2"]);
        assert_eq!(t.exactly_once, 0);
    }

    #[test]
    fn jobs_nobody_published_are_unexpected() {
        let t = total_queue(
            &[done("job-1", &["email"])],
            &[rec(1, "job-1", "email", Applied), rec(2, "job-9", "email", Applied)],
            &[dead("job-8", "poison")],
        );
        assert_eq!(t.unexpected, ["job-8", "job-9"]);
        assert_eq!(t.exactly_once, 1);
    }

    #[test]
    fn the_verdict_names_a_few_jobs_per_reason_and_counts_the_rest() {
        let expected: Vec<JobExpectation> = (1..=7).map(|i| done(&format!("job-{i}"), &["email"])).collect();
        let t = total_queue(&expected, &[], &[]);
        let v = t.verdict();
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(
            v.reasons,
            ["7 effects lost: job-1 email, job-2 email, job-3 email, job-4 email, job-5 email, … and 2 more"]
        );
        assert_eq!(t.lost.len(), 7);
        let ok = total_queue(&expected[..1], &[rec(1, "job-1", "email", Applied)], &[]);
        assert_eq!(ok.verdict(), RunVerdict::right());
        assert_eq!((ok.exactly_once, ok.jobs), (1, 1));
    }

    /// Each tally that is not empty makes the run wrong with its own reason: a test per reason,
    /// each failing when that reason's code is removed from the verdict.
    #[test]
    fn a_duplicated_effect_makes_the_run_wrong() {
        let twice = [rec(1, "job-1", "email", Applied), rec(2, "job-1", "email", Applied)];
        let v = total_queue(&[done("job-1", &["email"])], &twice, &[]).verdict();
        assert_eq!(
            v,
            RunVerdict { verdict: Verdict::Wrong, reasons: vec!["1 effects duplicated: job-1 email ×2".into()] }
        );
    }

    #[test]
    fn a_lost_effect_makes_the_run_wrong() {
        let v = total_queue(&[done("job-1", &["email", "partner_api"])], &[rec(1, "job-1", "email", Applied)], &[])
            .verdict();
        assert_eq!(
            v,
            RunVerdict { verdict: Verdict::Wrong, reasons: vec!["1 effects lost: job-1 partner_api".into()] }
        );
    }

    #[test]
    fn a_wrongly_dead_a_done_and_dead_and_an_unexpected_job_make_the_run_wrong() {
        let expected = [done("job-1", &["email"]), done("job-2", &["email"])];
        let wrongly = total_queue(&expected[..1], &[], &[dead("job-1", "attempts exhausted")]).verdict();
        assert_eq!(wrongly.verdict, Verdict::Wrong);
        assert_eq!(wrongly.reasons, ["1 jobs dead-lettered wrongly: job-1 (attempts exhausted)"]);
        let records = [rec(1, "job-1", "email", Applied), rec(2, "job-2", "email", Applied)];
        let both = total_queue(&expected, &records, &[dead("job-2", "poison")]).verdict();
        assert_eq!(both.verdict, Verdict::Wrong);
        assert_eq!(both.reasons, ["1 jobs both done and dead-lettered: job-2"]);
        let records = [rec(1, "job-1", "email", Applied), rec(2, "job-9", "email", Applied)];
        let stray = total_queue(&expected[..1], &records, &[]).verdict();
        assert_eq!(stray.verdict, Verdict::Wrong);
        assert_eq!(stray.reasons, ["1 unexpected jobs: job-9"]);
    }
}
