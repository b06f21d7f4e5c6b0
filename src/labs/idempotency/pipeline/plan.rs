//! The workload of a pipeline run, as data drawn from the run's seed: which job arrives when,
//! at which priority, and what goes wrong with it (poison: a payload that does not parse, a job
//! type nobody handles; or a fault: a partner that refuses or loses its reply, a worker
//! SIGKILLed at a named point). The same `--seed` gives the same workload; every trouble hits a
//! different job.

use crate::fault::{Action, Count, Fault, HandlerPoint, Target, Trigger};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// The priorities, highest first, and the effect a job of each asks for.
pub const PRIORITIES: [&str; 3] = ["critical", "normal", "low"];
pub const EFFECTS: [&str; 3] = ["charge", "email", "report"];

/// `workload = { jobs = 3000, rate_per_s = 300, … }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Jobs arriving at random (Poisson) times, besides the burst.
    pub jobs: u32,
    /// Their mean arrival rate (per second, before `--time-scale`).
    pub rate_per_s: f64,
    /// Percent of critical, normal, low jobs.
    #[serde(default = "Workload::default_mix")]
    pub mix: [u32; 3],
    /// A batch of low jobs published at once (an analytics run), `at_ms` after t=0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Burst>,
    /// Jobs whose payload does not parse.
    #[serde(default)]
    pub unparseable: u32,
    /// Jobs of a type no handler knows (a non-retryable error).
    #[serde(default)]
    pub rejected: u32,
    /// Jobs the partner refuses once or twice (a 503) before it accepts them.
    #[serde(default)]
    pub refused: u32,
    /// Jobs whose first request the partner applies and whose reply is lost.
    #[serde(default)]
    pub reply_lost: u32,
    /// Planned SIGKILLs at each handler point (after the claim, after the effect, before XACK).
    #[serde(default)]
    pub crashes_per_point: u32,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    pub at_ms: f64,
    pub low_jobs: u32,
}

impl Workload {
    fn default_mix() -> [u32; 3] {
        [20, 50, 30]
    }

    pub fn total(&self) -> u32 {
        self.jobs + self.burst.as_ref().map_or(0, |b| b.low_jobs)
    }

    /// Faults need distinct jobs: one line naming the problem.
    pub fn validate(&self) -> Result<(), String> {
        let faulted = self.unparseable + self.rejected + self.refused + self.reply_lost + 3 * self.crashes_per_point;
        if faulted > self.total() {
            return Err(format!("setup.workload: {faulted} faulted jobs but only {} jobs: raise jobs", self.total()));
        }
        if self.mix.iter().sum::<u32>() != 100 || self.rate_per_s.is_nan() || self.rate_per_s <= 0.0 {
            return Err("setup.workload: mix must add up to 100 and rate_per_s be > 0".into());
        }
        Ok(())
    }
}

/// A job no handler can use: it belongs in the dead-letter queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Poison {
    /// Its payload does not parse.
    Unparseable,
    /// Its type names no handler (a non-retryable error).
    Rejected,
}

/// One job of the workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedJob {
    /// `c-0007`: priority letter and number.
    pub job: String,
    /// 0 critical, 1 normal, 2 low.
    pub priority: usize,
    /// When it is published (ms after t=0, before `--time-scale`).
    pub at_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poison: Option<Poison>,
    /// What goes wrong with it: a partner that refuses it or loses its reply, a worker
    /// SIGKILLed at a handler point.
    pub fault: Option<Fault>,
}

/// A saved run of before the fault layer held the job's trouble in one word: read it still.
impl<'de> Deserialize<'de> for PlannedJob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            job: String,
            priority: usize,
            at_ms: f64,
            #[serde(default)]
            poison: Option<Poison>,
            #[serde(default)]
            fault: Option<serde_json::Value>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "kebab-case")]
        enum Old {
            Unparseable,
            Rejected,
            Refused(u32),
            ReplyLost,
            Crash(HandlerPoint),
        }
        let s = Stored::deserialize(d)?;
        let mut job = PlannedJob { job: s.job, priority: s.priority, at_ms: s.at_ms, poison: s.poison, fault: None };
        let Some(value) = s.fault.filter(|v| !v.is_null()) else { return Ok(job) };
        match serde_json::from_value::<Old>(value.clone()) {
            Ok(Old::Unparseable) => job.poison = Some(Poison::Unparseable),
            Ok(Old::Rejected) => job.poison = Some(Poison::Rejected),
            Ok(Old::Refused(n)) => job.fault = Some(partner(&job.job, Action::Refuse, n)),
            Ok(Old::ReplyLost) => job.fault = Some(partner(&job.job, Action::LoseReply, 1)),
            Ok(Old::Crash(at)) => job.fault = Some(at.kill(&job.job)),
            Err(_) => job.fault = Some(serde_json::from_value(value).map_err(serde::de::Error::custom)?),
        }
        Ok(job)
    }
}

/// The partner does `action` to the first `times` requests for `job`.
fn partner(job: &str, action: Action, times: u32) -> Fault {
    let count = if times == 1 { Count::ONCE } else { Count::first(times) };
    Fault {
        target: Target::Partner,
        trigger: Trigger::Event { event: "request".into(), job: Some(job.into()), delivery: None },
        count,
        probability: None,
        action,
    }
}

impl PlannedJob {
    pub fn effect(&self) -> &'static str {
        EFFECTS[self.priority]
    }

    /// Poison: it belongs in the dead-letter queue.
    pub fn is_poison(&self) -> bool {
        self.poison.is_some()
    }

    /// The entry's payload: JSON, broken for an unparseable job.
    pub fn payload(&self) -> String {
        let kind = if self.poison == Some(Poison::Rejected) { "unknown" } else { self.effect() };
        let full = format!(r#"{{"type":"{kind}","job":"{}"}}"#, self.job);
        if self.poison == Some(Poison::Unparseable) {
            full[..full.len() - 2].to_string()
        } else {
            full
        }
    }

    /// Its fault, when the partner carries it out.
    pub fn partner_fault(&self) -> Option<Fault> {
        self.fault.clone().filter(|f| f.target == Target::Partner)
    }
}

/// The workload for `seed`: arrivals in time order, faults on distinct jobs.
pub fn generate(w: &Workload, seed: u64) -> Vec<PlannedJob> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut jobs: Vec<(usize, f64)> = Vec::new();
    let mut t = 0.0;
    for _ in 0..w.jobs {
        // Exponential gaps: a Poisson stream of arrivals.
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        t += -u.ln() * 1000.0 / w.rate_per_s;
        let roll = rng.random_range(0..100);
        let priority = if roll < w.mix[0] {
            0
        } else if roll < w.mix[0] + w.mix[1] {
            1
        } else {
            2
        };
        jobs.push((priority, t));
    }
    if let Some(b) = &w.burst {
        jobs.extend((0..b.low_jobs).map(|_| (2, b.at_ms)));
    }
    jobs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut planned: Vec<PlannedJob> = jobs
        .iter()
        .enumerate()
        .map(|(n, (p, at))| PlannedJob {
            job: format!("{}-{:04}", &PRIORITIES[*p][..1], n + 1),
            priority: *p,
            at_ms: *at,
            poison: None,
            fault: None,
        })
        .collect();
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.shuffle(&mut rng);
    let mut next = order.into_iter();
    let mut assign = |n: u32, trouble: &mut dyn FnMut(&mut rand_chacha::ChaCha8Rng, &mut PlannedJob)| {
        for _ in 0..n {
            let i = next.next().expect("validated: enough jobs");
            trouble(&mut rng, &mut planned[i]);
        }
    };
    assign(w.unparseable, &mut |_, j| j.poison = Some(Poison::Unparseable));
    assign(w.rejected, &mut |_, j| j.poison = Some(Poison::Rejected));
    assign(w.refused, &mut |r, j| j.fault = Some(partner(&j.job, Action::Refuse, r.random_range(1..=2))));
    assign(w.reply_lost, &mut |_, j| j.fault = Some(partner(&j.job, Action::LoseReply, 1)));
    for point in HandlerPoint::ALL {
        assign(w.crashes_per_point, &mut |_, j| j.fault = Some(point.kill(&j.job)));
    }
    planned
}

/// The crash plan the workers get: the faults the workers carry out themselves.
pub fn crashes(jobs: &[PlannedJob]) -> Vec<Fault> {
    jobs.iter().filter_map(|j| j.fault.clone()).filter(|f| f.target != Target::Partner).collect()
}

/// Every fault of the workload, the partner's and the workers'.
pub fn faults(jobs: &[PlannedJob]) -> Vec<Fault> {
    jobs.iter().filter_map(|j| j.fault.clone()).collect()
}

#[cfg(test)]
mod tests {
    use crate::labs::idempotency::pipeline::plan::*;

    fn workload() -> Workload {
        Workload {
            jobs: 200,
            rate_per_s: 100.0,
            mix: [20, 50, 30],
            burst: Some(Burst { at_ms: 500.0, low_jobs: 50 }),
            unparseable: 3,
            rejected: 2,
            refused: 5,
            reply_lost: 2,
            crashes_per_point: 3,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_workload_and_every_fault_its_own_job() {
        let w = workload();
        let a = generate(&w, 7);
        assert_eq!(a, generate(&w, 7));
        assert_ne!(a, generate(&w, 8));
        assert_eq!(a.len(), 250);
        assert!(a.windows(2).all(|p| p[0].at_ms <= p[1].at_ms), "in time order");
        let poison = |p: Poison| a.iter().filter(|j| j.poison == Some(p)).count();
        assert_eq!(poison(Poison::Unparseable), 3);
        assert_eq!(poison(Poison::Rejected), 2);
        let count = |f: fn(&Fault) -> bool| a.iter().filter(|j| j.fault.as_ref().is_some_and(f)).count();
        let refused = |f: &Fault| f.action == Action::Refuse && matches!(f.count.most(), Some(1 | 2));
        assert_eq!(count(refused), 5);
        assert_eq!(count(|f| f.action == Action::LoseReply), 2);
        assert_eq!(count(|f| f.action == Action::Kill), 9);
        assert_eq!(crashes(&a).len(), 9);
        assert!(a.iter().all(|j| j.poison.is_none() || j.fault.is_none()), "one trouble per job");
        let ids: std::collections::HashSet<&str> = a.iter().map(|j| j.job.as_str()).collect();
        assert_eq!(ids.len(), 250);
        assert_eq!(a.iter().filter(|j| j.at_ms == 500.0 && j.priority == 2).count(), 50, "the burst");
    }

    #[test]
    fn poison_payloads_do_not_parse_or_name_no_handler() {
        let mut j = PlannedJob { job: "c-0001".into(), priority: 0, at_ms: 0.0, poison: None, fault: None };
        assert_eq!(j.payload(), r#"{"type":"charge","job":"c-0001"}"#);
        j.poison = Some(Poison::Rejected);
        assert_eq!(j.payload(), r#"{"type":"unknown","job":"c-0001"}"#);
        j.poison = Some(Poison::Unparseable);
        assert!(serde_json::from_str::<serde_json::Value>(&j.payload()).is_err());
        assert!(j.is_poison());
    }

    #[test]
    fn a_saved_run_s_one_word_trouble_reads_as_poison_or_a_fault() {
        let old = |fault: &str| {
            let json = format!(r#"{{"job":"n-0002","priority":1,"at_ms":3.5,"fault":{fault}}}"#);
            serde_json::from_str::<PlannedJob>(&json).unwrap()
        };
        assert_eq!(old(r#""unparseable""#).poison, Some(Poison::Unparseable));
        assert_eq!(old(r#"{"refused":2}"#).fault, Some(partner("n-0002", Action::Refuse, 2)));
        assert_eq!(old(r#"{"crash":"before-ack"}"#).fault, Some(HandlerPoint::BeforeAck.kill("n-0002")));
        assert_eq!(old("null").fault, None);
        let new = PlannedJob { fault: Some(partner("n-0002", Action::LoseReply, 1)), ..old("null") };
        assert_eq!(serde_json::from_str::<PlannedJob>(&serde_json::to_string(&new).unwrap()).unwrap(), new);
    }

    #[test]
    fn too_many_faults_for_the_jobs_is_refused() {
        let mut w = workload();
        w.jobs = 1;
        w.burst = None;
        assert!(w.validate().unwrap_err().starts_with("setup.workload: 21 faulted jobs but only 1 jobs"));
    }
}
