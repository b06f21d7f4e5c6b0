//! Effect counts: how many times each (job, effect) must happen against how many times the
//! side-effect sink's ledger says it did. For queues where two jobs can carry the same id
//! (identical payloads, which a list cannot tell apart); with unique ids use `total_queue`.

use crate::checker::total_queue::effects_per_job;
use crate::checker::{RunVerdict, Verdict};
use crate::side_effect::EffectRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// (job, effect) must be applied `times` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wanted {
    pub job: String,
    pub effect: String,
    pub times: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// (job, effect, how many fewer than wanted).
    pub lost: Vec<(String, String, u32)>,
    /// (job, effect, how many more than wanted).
    pub duplicated: Vec<(String, String, u32)>,
    /// Jobs the ledger applied that nobody wanted.
    pub unexpected: Vec<String>,
}

pub fn effect_counts(wanted: &[Wanted], records: &[EffectRecord]) -> Counts {
    let applied = effects_per_job(records);
    let mut want: BTreeMap<(String, String), u32> = BTreeMap::new();
    for w in wanted {
        *want.entry((w.job.clone(), w.effect.clone())).or_insert(0) += w.times;
    }
    let mut c = Counts::default();
    for ((job, effect), times) in &want {
        let got = applied.get(&(job.clone(), effect.clone())).copied().unwrap_or(0);
        if got < *times {
            c.lost.push((job.clone(), effect.clone(), times - got));
        } else if got > *times {
            c.duplicated.push((job.clone(), effect.clone(), got - times));
        }
    }
    c.unexpected = applied.keys().filter(|k| !want.contains_key(*k)).map(|(job, _)| job.clone()).collect();
    c
}

impl Counts {
    pub fn verdict(&self) -> RunVerdict {
        let mut v = RunVerdict::right();
        for (job, effect, n) in &self.lost {
            v.add(Verdict::Wrong, format!("{job} {effect}: {n} fewer than wanted (lost)"));
        }
        for (job, effect, n) in &self.duplicated {
            v.add(Verdict::Wrong, format!("{job} {effect}: {n} more than wanted (duplicated)"));
        }
        if !self.unexpected.is_empty() {
            v.add(Verdict::Wrong, format!("effects of jobs nobody published: {}", self.unexpected.join(", ")));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::list_queue::effect_counts::*;
    use crate::side_effect::EffectOutcome;
    use crate::timeline::Actor;

    fn rec(job: &str, outcome: EffectOutcome) -> EffectRecord {
        EffectRecord {
            request_id: 0,
            job: job.into(),
            effect: "email".into(),
            idem_key: None,
            actor: Actor::Worker(1),
            delivery: None,
            mono_ns: 0,
            outcome,
            replay_of: None,
            fault: None,
        }
    }

    fn want(job: &str, times: u32) -> Wanted {
        Wanted { job: job.into(), effect: "email".into(), times }
    }

    #[test]
    fn two_identical_jobs_want_two_effects() {
        let applied = [rec("x", EffectOutcome::Applied)];
        let c = effect_counts(&[want("x", 1), want("x", 1)], &applied);
        assert_eq!(c.lost, [("x".to_string(), "email".to_string(), 1)]);
        assert_eq!(c.verdict().verdict, Verdict::Wrong);
        let both = [rec("x", EffectOutcome::Applied), rec("x", EffectOutcome::Applied)];
        assert_eq!(effect_counts(&[want("x", 2)], &both).verdict(), RunVerdict::right());
    }

    #[test]
    fn refusals_and_replays_are_not_effects_and_strays_are_unexpected() {
        let records = [
            rec("a", EffectOutcome::Refused),
            rec("a", EffectOutcome::Applied),
            rec("a", EffectOutcome::Replayed),
            rec("a", EffectOutcome::Applied),
            rec("z", EffectOutcome::Applied),
        ];
        let c = effect_counts(&[want("a", 1)], &records);
        assert_eq!(c.duplicated, [("a".to_string(), "email".to_string(), 1)]);
        assert_eq!(c.unexpected, ["z"]);
    }
}
