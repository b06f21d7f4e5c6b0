//! The plan of a jobs run, as data: what happens to each job (a SIGKILL at a handler point, a
//! partner failure, a second copy, a lost publish reply) and what the lab predicts for each
//! of its effects; and the pure count that compares the prediction with the ledger.

use crate::fault::{Action, Count, Fault, HandlerPoint, Target, Trigger};
use crate::lang::{pick, Lang};
use crate::side_effect::EffectRecord;
use crate::timeline::EffectOutcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One job of the run and what is done to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobPlan {
    /// Stable id, in the payload (`job-1`).
    pub job: String,
    /// The worker handling its first delivery is SIGKILLed here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<HandlerPoint>,
    /// With a worker from a command line: the handler point its interposer fault
    /// (`worker.faults`) stands for, the job's name in the table (`after-claim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<HandlerPoint>,
    /// The partner fails the job's first request this way: `refuse` (nothing happens) or
    /// `apply-then-fail` (the same as `lose-reply`: applied, the caller told it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<Action>,
    /// Which effect the partner failure hits (default: the job's first request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner_effect: Option<String>,
    /// Published this many times (a producer that retried): `copies = 2`.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub copies: u32,
    /// The producer's first XADD reply is lost; it sends again after `resend_after` other
    /// jobs' sends (0: at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_after: Option<u32>,
    /// The order a multi-step job completes (default 42).
    #[serde(default = "order_42")]
    pub order: i64,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn order_42() -> i64 {
    42
}

/// What the lab predicts for one effect of one job, from reading the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    Once,
    Lost,
    Twice,
}

impl Fate {
    pub fn of(applied: u32) -> Option<Fate> {
        match applied {
            0 => Some(Fate::Lost),
            1 => Some(Fate::Once),
            2 => Some(Fate::Twice),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fate::Once => "once",
            Fate::Lost => "lost",
            Fate::Twice => "twice",
        }
    }
}

impl JobPlan {
    /// What is done to the job, as a table column: `after-claim`, `refused`, `2 copies`, ….
    pub fn label(&self, lang: Lang) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.crash.or(self.fault).map(|c| c.name().to_string()));
        parts.extend(self.partner.map(|p| match p {
            Action::Refuse => "refused".to_string(),
            _ => "reply-lost".to_string(),
        }));
        if self.copies > 1 {
            let n = self.copies;
            parts.push(crate::tr!(lang, "{n} copies", "{n} bản"));
        }
        if let Some(n) = self.resend_after {
            parts.push(match n {
                0 => pick(lang, "resent", "gửi lại").to_string(),
                _ => pick(lang, "resent late", "gửi lại muộn").to_string(),
            });
        }
        if parts.is_empty() {
            pick(lang, "no fault", "không lỗi").to_string()
        } else {
            parts.join("+")
        }
    }

    /// The partner's fault on the job's first request (of its `partner_effect`, if given).
    pub fn partner_fault(&self) -> Option<Fault> {
        let event = self.partner_effect.clone().unwrap_or_else(|| "request".into());
        self.partner.map(|action| Fault {
            target: Target::Partner,
            trigger: Trigger::Event { event, job: Some(self.job.clone()), delivery: None },
            count: Count::ONCE,
            probability: None,
            action,
        })
    }

    /// The worker's SIGKILL at the job's handler point, on its first delivery.
    pub fn crash_fault(&self) -> Option<Fault> {
        self.crash.map(|at| at.kill(&self.job))
    }
}

/// The crash plan the workers get.
pub fn crashes(jobs: &[JobPlan]) -> Vec<Fault> {
    jobs.iter().filter_map(JobPlan::crash_fault).collect()
}

/// One counted effect of one job: what the lab predicted and what happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub job: String,
    pub effect: String,
    /// The job's plan as a column name.
    pub column: String,
    pub applied: u32,
    pub expected: Fate,
}

impl Cell {
    pub fn fate(&self) -> Option<Fate> {
        Fate::of(self.applied)
    }
}

/// Every (job, effect) cell in plan order. Sink effects are counted from the ledger
/// (applied requests only); Redis effects (`views`, `status`) from the values read after
/// the run: a counter's value, 1 for a value that is set.
pub fn cells(
    jobs: &[JobPlan],
    effects: &[String],
    expected: &[Fate],
    records: &[EffectRecord],
    redis_values: &BTreeMap<String, i64>,
    lang: Lang,
) -> Vec<Cell> {
    let mut out = Vec::new();
    for (j, plan) in jobs.iter().enumerate() {
        for (e, effect) in effects.iter().enumerate() {
            let key = format!("{effect}:{}", plan.job);
            let applied = match redis_values.get(&key) {
                Some(v) => *v as u32,
                None if crate::handler::job::Technique::is_redis_effect(effect) => 0,
                None => records
                    .iter()
                    .filter(|r| r.job == plan.job && r.effect == *effect && r.outcome == EffectOutcome::Applied)
                    .count() as u32,
            };
            let column = match (effects.len(), jobs.len()) {
                (1, _) => plan.label(lang),
                (_, 1) => effect.clone(),
                _ => format!("{} {effect}", plan.job),
            };
            let expected = expected.get(j * effects.len() + e).copied().unwrap_or(Fate::Once);
            out.push(Cell { job: plan.job.clone(), effect: effect.clone(), column, applied, expected });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::labs::idempotency::jobs::plan::*;
    use crate::timeline::Actor;

    fn plan(job: &str) -> JobPlan {
        JobPlan {
            fault: None,
            job: job.into(),
            crash: None,
            partner: None,
            partner_effect: None,
            copies: 1,
            resend_after: None,
            order: 42,
        }
    }

    fn rec(job: &str, effect: &str, outcome: EffectOutcome) -> EffectRecord {
        EffectRecord {
            request_id: 1,
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

    #[test]
    fn labels_name_what_is_done_to_a_job() {
        let mut p = plan("job-1");
        assert_eq!(p.label(Lang::En), "no fault");
        p.crash = Some(HandlerPoint::AfterClaim);
        assert_eq!(p.label(Lang::En), "after-claim");
        p.partner = Some(Action::LoseReply);
        assert_eq!(p.label(Lang::En), "after-claim+reply-lost");
        let mut c = plan("job-2");
        c.copies = 2;
        assert_eq!(c.label(Lang::En), "2 copies");
        assert_eq!(c.label(Lang::Vi), "2 bản");
    }

    #[test]
    fn cells_count_applied_requests_and_redis_values() {
        let jobs = [plan("job-1"), plan("job-2")];
        let effects = ["email".to_string()];
        let records = [
            rec("job-1", "email", EffectOutcome::Applied),
            rec("job-1", "email", EffectOutcome::Replayed),
            rec("job-2", "email", EffectOutcome::Refused),
        ];
        let c = cells(&jobs, &effects, &[Fate::Once, Fate::Lost], &records, &BTreeMap::new(), Lang::En);
        assert_eq!((c[0].applied, c[0].fate(), c[0].expected), (1, Some(Fate::Once), Fate::Once));
        assert_eq!((c[1].applied, c[1].fate(), c[1].expected), (0, Some(Fate::Lost), Fate::Lost));
        let views = ["views".to_string()];
        let values = BTreeMap::from([("views:job-1".to_string(), 2)]);
        let c = cells(&jobs, &views, &[Fate::Twice, Fate::Lost], &[], &values, Lang::En);
        assert_eq!((c[0].applied, c[1].applied), (2, 0), "a counter never incremented counts 0");
    }

    #[test]
    fn a_job_of_two_effects_has_a_cell_per_effect_in_order() {
        let effects = ["email".to_string(), "partner_api".to_string()];
        let c = cells(&[plan("order-42")], &effects, &[Fate::Lost, Fate::Once], &[], &BTreeMap::new(), Lang::En);
        assert_eq!(
            c.iter().map(|c| (c.effect.as_str(), c.expected)).collect::<Vec<_>>(),
            [("email", Fate::Lost), ("partner_api", Fate::Once)]
        );
        assert_eq!(c[1].column, "partner_api");
        let two = cells(&[plan("job-1"), plan("job-2")], &effects, &[Fate::Once; 4], &[], &BTreeMap::new(), Lang::En);
        assert_eq!(two[3].column, "job-2 partner_api");
    }
}
