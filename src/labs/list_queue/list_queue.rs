//! Seed 003's job queue on Redis lists, and what a crash, a failure or a poison payload does to
//! it. Worker processes take jobs with BRPOP, the seed's BRPOPLPUSH (or BLMOVE) into a
//! processing list, or a lease script; a job's side effect goes to the outside partner (the
//! sink), whose ledger says which jobs were lost or done twice. Around them: a reaper that puts
//! back jobs whose lease ran out, a scheduler that moves due retries back, planned SIGKILLs,
//! partner refusals, poison payloads. Labs `list-crash` and `list-retry`.
//!
//! One run: fresh keys and ledger; workers started (a blocking worker is blocked before the
//! next starts, so W1 takes the first job); the supervisor; t=0; the producer pushes the jobs
//! in one pipeline (a job marked `after_taken`, and those after it, once the one before it was
//! taken); the run ends when every job
//! is settled and every worker idle, or when it is at rest (read off the server at one instant:
//! the queue empty, no lease a reaper could put back, no retry due, every live worker back in
//! its take with nothing in hand: a job lost or stuck stays so), or nothing happened for
//! `observe_ms` (where that cannot be told), or at `max_ms`.

use crate::checker::total_queue::{effects_per_job, total_queue, DeadLetter, ExpectedFate, JobExpectation};
use crate::checker::{health::health, RunVerdict, Verdict};
use crate::error::Error;
use crate::fault::{Fault, ListPoint};
use crate::labs::list_queue::effect_counts::{effect_counts, Wanted};
use crate::labs::list_queue::retry_schedule::{job_schedule, scaled_delays, Attempt};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Needs, Piece, Present, RunContext, RunNotes, RunOutcome,
    RunView,
};
use crate::lang::{pick, Lang, Words};
use crate::list_queue::events::ListEvent;
use crate::list_queue::{Identity, ListJob, OnFailure, OnPoison, Take};
use crate::roles::command_worker::WorkerCommand;
use crate::side_effect::EffectRecord;
use crate::timeline::{Event, EventKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod run;

/// `kind = "list-queue"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListQueueSpec {
    /// Worker processes, `W1..Wn`.
    #[serde(default = "crate::labs::order_stream::one")]
    pub workers: u32,
    /// How the producer pushes: `rpush` (the seed; with a right-end take the queue is LIFO) or
    /// `lpush` (FIFO).
    #[serde(default)]
    pub push: PushEnd,
    pub take: Take,
    #[serde(default)]
    pub identity: Identity,
    /// The lease of the lease script, and how often an idle lease worker polls (ms).
    #[serde(default = "ListQueueSpec::default_lease")]
    pub lease_ms: f64,
    #[serde(default = "ListQueueSpec::default_poll")]
    pub poll_ms: f64,
    /// A reaper that puts back jobs whose lease ran out.
    #[serde(default)]
    pub reaper: Option<Every>,
    /// A scheduler that moves due retries back to the queue.
    #[serde(default)]
    pub scheduler: Option<Every>,
    #[serde(default = "ListQueueSpec::seed_failure")]
    pub on_failure: OnFailure,
    #[serde(default = "ListQueueSpec::seed_poison")]
    pub on_poison: OnPoison,
    /// Handler work per job (ms), unless the worker or the job has its own.
    #[serde(default = "ListQueueSpec::default_cost")]
    pub cost_ms: f64,
    /// Handler work of a worker, by its number (`{ "1" = 2000 }`).
    #[serde(default)]
    pub worker_cost_ms: BTreeMap<String, f64>,
    /// The jobs, pushed in this order.
    pub jobs: Vec<JobPlan>,
    /// Faults of ordlab's own workers at their named points: `{ on = "W1", event =
    /// "after-take", job = "job-000001" }` (SIGKILL W1 after it takes job-000001; without `on`,
    /// whichever worker takes it first). Each fires once per run, whoever takes the job again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// The key before `faults`: read so that a saved run still reads, refused in a scenario.
    #[serde(default, rename = "crash", skip_serializing)]
    pub old_crash: Option<serde_json::Value>,
    /// The orchestrator SIGKILLs a worker when another one finishes a job.
    #[serde(default)]
    pub kill: Option<KillPlan>,
    /// A worker that dies of a planned crash is replaced by a new process (`W<n+1>`), as a
    /// process manager (PM2, systemd) would.
    #[serde(default)]
    pub restart: bool,
    /// Start each worker only once the one before it has taken a job, so which worker holds
    /// which copy is fixed by the lab, not by the OS scheduler.
    #[serde(default)]
    pub stagger: bool,
    /// The run ends after this long with nothing happening (ms), where it cannot tell that it
    /// is at rest sooner (see `run.rs`).
    #[serde(default = "ListQueueSpec::default_observe")]
    pub observe_ms: f64,
    /// The run ends at this time whatever happens (a loop that never settles), ms.
    #[serde(default)]
    pub max_ms: Option<f64>,
    /// Judge the order jobs were done in: they must be done in the order they were pushed.
    #[serde(default)]
    pub check_order: bool,
    /// What the seed claims that this variant settles (its words, then a gloss), printed
    /// after the timeline with what the run measured.
    #[serde(default)]
    pub seed_says: Option<Words>,
    /// Workers from a command line instead of ordlab's own `W<n>`:
    /// `worker = { command = ["node", "examples/node/list_worker.js"] }`. Each gets the list
    /// keys and the HTTP side-effect sink by environment (see `run.rs`); its crashes are
    /// interposer faults (`worker.faults`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerCommand>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushEnd {
    /// The seed's `RPUSH`.
    #[default]
    Rpush,
    Lpush,
}

/// `{ poll_ms = 50 }`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Every {
    pub poll_ms: f64,
}

/// One job of the run.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobPlan {
    /// None: a job without an id (two of them are identical payloads), named by `name`.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default = "JobPlan::default_name")]
    pub name: String,
    /// Its payload is not JSON.
    #[serde(default)]
    pub poison: bool,
    /// The partner refuses its first `refused` requests (a 503).
    #[serde(default)]
    pub refused: u32,
    #[serde(default)]
    pub cost_ms: Option<f64>,
    /// Handler work of its first delivery only (a worker that stalls once).
    #[serde(default)]
    pub first_cost_ms: Option<f64>,
    /// Pushed only once the job before it has been taken.
    #[serde(default)]
    pub after_taken: bool,
    /// What must become of it: done (None), or the dead-letter list with this reason.
    #[serde(default)]
    pub dead_letter: Option<String>,
}

/// `kill = { worker = 1, after_done_by = 2 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KillPlan {
    pub worker: u32,
    pub after_done_by: u32,
}

/// The side effect every job asks the partner for.
pub const EFFECT: &str = "email";

impl JobPlan {
    fn default_name() -> String {
        "send_welcome_email".into()
    }

    /// What the ledger and the timeline call it: its id, else its name; a poison payload by
    /// its text (a worker cannot read an id out of it).
    pub fn label(&self) -> String {
        if self.poison {
            return crate::list_queue::payload_label(&self.payload());
        }
        self.id.clone().unwrap_or_else(|| self.name.clone())
    }

    /// The payload the producer pushes: the seed's document, or (poison) JSON cut off after
    /// its id: `{"id":"job-000003"`.
    pub fn payload(&self) -> String {
        if self.poison {
            let id = self.id.clone().unwrap_or_else(|| self.name.clone());
            return format!("{{\"id\":\"{id}\"");
        }
        let job = ListJob {
            id: self.id.clone(),
            name: self.name.clone(),
            data: serde_json::json!({ "email": "user@example.com" }),
            attempts: 0,
            max_attempts: 3,
            created_at: 0,
        };
        job.to_json()
    }

    fn fate(&self) -> ExpectedFate {
        match (&self.dead_letter, self.poison) {
            (Some(reason), _) => ExpectedFate::DeadLetter { reason: reason.clone() },
            (None, true) => ExpectedFate::DeadLetter { reason: "poison".into() },
            (None, false) => ExpectedFate::Done,
        }
    }
}

/// What one run left: the partner's ledger and every list of the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListQueueObserved {
    pub records: Vec<EffectRecord>,
    /// Job labels in each list at the end.
    pub queue: Vec<String>,
    pub processing: Vec<String>,
    pub delayed: Vec<String>,
    pub retry: Vec<String>,
    pub dead: Vec<DeadLetter>,
    /// Processing entries with no lease (the lease take only).
    pub orphans: u32,
    /// The server's own COMMAND DOCS words on the deprecated command used, if any.
    pub deprecation: Option<String>,
    /// The run's time scale (the backoff's delays are compared scaled).
    pub scale: f64,
}

impl ListQueueSpec {
    fn default_lease() -> f64 {
        500.0
    }
    fn default_poll() -> f64 {
        20.0
    }
    fn default_cost() -> f64 {
        100.0
    }
    fn default_observe() -> f64 {
        1000.0
    }
    fn seed_failure() -> OnFailure {
        OnFailure::SeedRetryList
    }
    fn seed_poison() -> OnPoison {
        OnPoison::SeedSleep { ms: 1000.0 }
    }

    /// Handler work of worker `index` (ms).
    /// The partner's refusal of the first `refused` e-mails of job `j`.
    pub fn refusal(&self, j: &JobPlan) -> Fault {
        use crate::fault::{Action, Count, Target, Trigger};
        Fault {
            target: Target::Partner,
            trigger: Trigger::Event { event: EFFECT.into(), job: Some(j.label()), delivery: None },
            count: if j.refused == 1 { Count::ONCE } else { Count::first(j.refused) },
            probability: None,
            action: Action::Refuse,
        }
    }

    pub fn worker_cost(&self, index: u32) -> f64 {
        self.worker_cost_ms.get(&index.to_string()).copied().unwrap_or(self.cost_ms)
    }

    /// The payloads whose first delivery outlasts the lease (`first_cost_ms` ≥ `lease_ms`):
    /// under the explorer their lease can run out while a worker still works on them, once
    /// each; every other lease only while every process waits for work.
    pub fn leases_outlasted(&self) -> Vec<String> {
        let slow = |j: &&JobPlan| j.first_cost_ms.is_some_and(|c| c >= self.lease_ms);
        self.jobs.iter().filter(slow).map(JobPlan::payload).collect()
    }

    /// How many jobs carry each label, in push order of first appearance.
    fn labels(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for j in &self.jobs {
            match out.iter_mut().find(|(l, _)| *l == j.label()) {
                Some(e) => e.1 += 1,
                None => out.push((j.label(), 1)),
            }
        }
        out
    }

    fn labels_unique(&self) -> bool {
        self.labels().iter().all(|(_, n)| *n == 1)
    }

    /// Effects applied per job label, with what should have been.
    fn tally(&self, o: &ListQueueObserved) -> RunVerdict {
        if self.labels_unique() {
            let expected: Vec<JobExpectation> = self
                .jobs
                .iter()
                .map(|j| JobExpectation { job: j.label(), effects: vec![EFFECT.into()], fate: j.fate() })
                .collect();
            return total_queue(&expected, &o.records, &o.dead).verdict();
        }
        let wanted: Vec<Wanted> =
            self.labels().into_iter().map(|(job, times)| Wanted { job, effect: EFFECT.into(), times }).collect();
        effect_counts(&wanted, &o.records).verdict()
    }
}

impl LabProcedure for ListQueueSpec {
    fn validate(&mut self) -> Result<(), String> {
        if self.old_crash.as_ref().is_some_and(|c| c.as_array().is_none_or(|a| !a.is_empty())) {
            return Err("setup.crash is now setup.faults: faults = [{ on = \"W1\", event = \"after-take\", job = \"job-000001\" }] (README: A new fault)".into());
        }
        for f in &self.faults {
            let point = match &f.trigger {
                crate::fault::Trigger::Event { event, job: Some(_), .. } => ListPoint::named(event),
                _ => None,
            };
            let worker = matches!(f.target, crate::fault::Target::Any | crate::fault::Target::Process(crate::timeline::Actor::Worker(_)));
            if point.is_none() || !worker || f.action != crate::fault::Action::Kill {
                return Err("setup.faults: ordlab's own list workers are killed at a named point with a job: { on = \"W1\", event = \"after-take\" or \"after-effect\", job = \"job-000001\" }".into());
            }
        }
        if let Some(w) = &self.worker {
            if let Some(n) = w.count {
                self.workers = n;
            }
            w.check(self.workers)?;
            if !self.faults.is_empty() || self.kill.is_some() {
                return Err("setup.faults and setup.kill are for ordlab's own workers: with setup.worker, declare setup.worker.faults = [{ worker = 1, command = \"BRPOPLPUSH\", at = \"reply\" }]".into());
            }
            if self.take == Take::Lease || self.jobs.iter().any(|j| j.first_cost_ms.is_some()) {
                return Err("setup.worker: a worker from a command line takes jobs with a blocking command (take = \"brpoplpush\", \"blmove\" or \"brpop\") and has no first_cost_ms".into());
            }
        }
        crate::labs::order_stream::check_consumers(self.workers).map_err(|e| e.replace("consumers", "workers"))?;
        if self.jobs.is_empty() {
            return Err("setup.jobs is empty: list at least one job".into());
        }
        if self.jobs.first().is_some_and(|j| j.after_taken) {
            return Err("setup.jobs[0].after_taken: the first job has no job before it; remove the key".into());
        }
        if self.identity == Identity::Token && self.take != Take::Lease {
            return Err("setup.identity = \"token\" needs take = \"lease\" (only the lease script makes tokens)".into());
        }
        for (what, ms) in [
            ("lease_ms", self.lease_ms),
            ("poll_ms", self.poll_ms),
            ("cost_ms", self.cost_ms),
            ("observe_ms", self.observe_ms),
        ] {
            if !ms.is_finite() || ms < 0.0 {
                return Err(format!("setup.{what} = {ms}: use a duration ≥ 0 in ms"));
            }
        }
        Ok(())
    }

    fn needs(&self) -> Needs {
        Needs { worker_command: self.worker.as_ref().map(|w| w.command.clone()), ..Needs::default() }
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<ListQueueObserved>, Error> {
        run::run(self, ctx).await
    }

    /// Stepped by the explorer (`run/explored.rs`) where every timer that can change a run is
    /// a step: workers (ordlab's own or from a command line) taking with the lease script or a
    /// blocking take, a lease that runs out only once its worker is gone (a worker slower than
    /// its lease is refused), no delayed retry.
    fn explorable(&self) -> Result<(), String> {
        // A refusal is the partner's, by attempt (deterministic); the seed's worker then pushes
        // the job to queue:retry, a step like any other. What is not stepped yet is a path back:
        // a poison job that a reaper puts back forever, a retry that comes back by the clock.
        if self.reaper.is_some() && self.jobs.iter().any(|j| j.refused > 0 || j.poison) {
            return Err("setup.jobs[] with a reaper: a refused or poison job comes back at every lease, a schedule with no end".into());
        }
        if self.stagger && self.restart {
            return Err("setup.stagger with restart = true: the stepped run numbers staggered workers and replacements apart only one way yet".into());
        }
        let lease = self.lease_ms;
        let killed_in_time =
            |w: u32| self.kill.is_some_and(|k| k.worker == w && self.worker_cost(k.after_done_by) < lease);
        // A job slower than its lease at its first delivery only ([`Self::leases_outlasted`])
        // is explored: its lease can run out while it is worked on, once. One slower at every
        // delivery could come back at every lease.
        if let Some((j, c)) = self.jobs.iter().find_map(|j| Some((j, j.cost_ms.filter(|c| *c >= lease)?))) {
            return Err(format!("{} takes {c} ms at every delivery, not less than the {lease} ms lease: its lease can run out at every delivery, a schedule with no end", j.label()));
        }
        let started = self.workers + if self.restart { self.faults.len() as u32 } else { 0 };
        for w in 1..=started {
            let cost = self.worker_cost(w);
            if cost >= lease && !killed_in_time(w) {
                return Err(format!("W{w}'s every job takes {cost} ms, not less than the {lease} ms lease: its leases can run out at every delivery, a schedule with no end"));
            }
        }
        Ok(())
    }

}

impl Judge for ListQueueSpec {
    type Observed = ListQueueObserved;
    type Facts = ListQueueFacts;

    fn faults(&self, _observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        let mut all = self.faults.clone();
        all.extend(self.jobs.iter().filter(|j| j.refused > 0).map(|j| self.refusal(j)));
        all.extend(self.worker.iter().flat_map(|w| w.faults.clone()));
        all
    }

    fn judge(&self, run: &RunView<'_, ListQueueObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out).and(self.tally(run.observed));
        judge_schedule(self, run.events, run.observed.scale, &mut v);
        if self.check_order {
            if let Some(why) = out_of_order(&self.jobs, &run.observed.records) {
                v.add(Verdict::Wrong, why);
            }
        }
        v
    }

    fn final_state(&self, o: &ListQueueObserved) -> Vec<FinalItem> {
        let applied = effects_per_job(&o.records);
        self.labels()
            .into_iter()
            .map(|(label, times)| {
                let n = applied.get(&(label.clone(), EFFECT.to_string())).copied().unwrap_or(0);
                let dead = o.dead.iter().any(|d| d.job == label);
                let should_dead = self.jobs.iter().any(|j| j.label() == label && j.fate() != ExpectedFate::Done);
                let value = if dead { "dead-letter".to_string() } else { format!("{n}×") };
                let want = if should_dead { "dead-letter".to_string() } else { format!("{times}×") };
                FinalItem { order: None, subject: label, should_be: (value != want).then_some(want), value }
            })
            .collect()
    }

    fn facts(&self, run: &RunView<'_, ListQueueObserved>) -> ListQueueFacts {
        facts(self, run)
    }
}

impl Present for ListQueueSpec {
    fn describe(&self, lang: Lang) -> String {
        describe(self, lang)
    }

    fn approach(&self) -> String {
        if let Some(w) = &self.worker {
            return w.shown();
        }
        let take = match self.take {
            Take::Brpop => "BRPOP",
            Take::Brpoplpush => "BRPOPLPUSH + processing list",
            Take::Blmove => "BLMOVE + processing list",
            Take::Lease => "lease script",
        };
        match (self.reaper.is_some(), self.scheduler.is_some()) {
            (true, _) => format!("{take}, reaper"),
            (false, true) => format!("{take}, backoff + DLQ"),
            (false, false) => take.to_string(),
        }
    }

    fn wrong_means(&self, lang: Lang) -> String {
        if self.check_order {
            return pick(
                lang,
                "a job lost, done twice or done out of order",
                "job bị mất, làm hai lần hoặc làm sai thứ tự",
            )
            .into();
        }
        pick(lang, "a job lost or done twice", "job bị mất hoặc làm hai lần").into()
    }

    fn notes(&self, run: &RunView<'_, ListQueueObserved>, lang: Lang) -> RunNotes {
        RunNotes { heading: None, after: notes(self, run, lang) }
    }
}

/// The first job done after a job pushed later than it, by the ledger's order.
fn out_of_order(jobs: &[JobPlan], records: &[EffectRecord]) -> Option<String> {
    let pushed: Vec<String> = jobs.iter().map(JobPlan::label).collect();
    let done = done_order(records);
    let rank = |j: &str| pushed.iter().position(|p| p == j).unwrap_or(usize::MAX);
    done.windows(2).find(|w| rank(w[0]) > rank(w[1])).map(|w| {
        format!("{} was done before {}, which was pushed first (done in order: {})", w[0], w[1], done.join(", "))
    })
}

fn describe(s: &ListQueueSpec, lang: Lang) -> String {
    let workers = s.workers;
    let mut parts = vec![match (workers, lang) {
        (1, Lang::En) => "1 worker process".to_string(),
        (n, Lang::En) => format!("{n} worker processes"),
        (n, Lang::Vi) => format!("{n} process worker"),
    }];
    parts.extend(worker_parts(s, lang));
    if s.stagger && workers > 1 {
        parts.push(
            pick(
                lang,
                "each worker starts once the one before it has taken a job",
                "mỗi worker khởi động khi worker trước đã lấy một job",
            )
            .into(),
        );
    }
    if s.restart {
        parts.push(
            pick(
                lang,
                "a worker that dies is replaced by a new process (a process manager)",
                "worker chết thì có process mới thay (process manager)",
            )
            .into(),
        );
    }
    parts.push(take_phrase(s, lang));
    if let Some(r) = s.reaper {
        let p = r.poll_ms;
        parts.push(crate::tr!(
            lang,
            "a reaper puts back expired leases every {p} ms",
            "reaper đưa lại job hết lease mỗi {p} ms"
        ));
    }
    if s.jobs.iter().any(|j| j.refused > 0) {
        parts.push(match &s.on_failure {
            OnFailure::SeedRetryList => {
                pick(lang, "a failure goes to queue:retry (the seed)", "lỗi thì đẩy vào queue:retry (seed)").into()
            }
            OnFailure::Backoff(b) => {
                let (base, f, max) = (b.base_ms, b.factor, b.max_attempts);
                crate::tr!(
                    lang,
                    "a failure waits {base} ms × {f}^(k−1) in a delayed set, dead-letter after {max} attempts",
                    "lỗi thì chờ {base} ms × {f}^(k−1) trong delayed set, vào hàng lỗi sau {max} lần thử"
                )
            }
        });
    }
    if s.jobs.iter().any(|j| j.poison) {
        parts.push(match s.on_poison {
            OnPoison::SeedSleep { ms } => crate::tr!(
                lang,
                "a payload that does not parse: sleep {ms} ms (the seed)",
                "payload không parse được: ngủ {ms} ms (seed)"
            ),
            OnPoison::DeadLetter => pick(
                lang,
                "a payload that does not parse: dead-letter at once",
                "payload không parse được: vào hàng lỗi ngay",
            )
            .into(),
        });
    }
    parts.push(match &s.worker {
        // What anyone's program spends is its own (measured in the run's notes).
        Some(_) => crate::tr!(
            lang,
            "handler: the worker's own (told {} ms)",
            "handler: của chính worker (được báo {} ms)",
            s.cost_ms
        ),
        None => crate::tr!(lang, "handler {} ms", "handler {} ms", s.cost_ms),
    });
    parts.extend(fault_parts(s, lang));
    parts.join("; ")
}

/// A worker from a command line and its interposer faults.
fn worker_parts(s: &ListQueueSpec, lang: Lang) -> Vec<String> {
    let mut parts = Vec::new();
    let Some(w) = &s.worker else { return parts };
    parts.push(crate::tr!(lang, "worker: `{}`", "worker: `{}`", w.shown()));
    parts.extend(w.faults.iter().map(|f| {
        let who = match f.target {
            crate::fault::Target::Index(i) => format!("W{i}"),
            _ => f.target_words().get(lang).to_string(),
        };
        crate::roles::command_worker::fault_words(f, &who, lang)
    }));
    parts
}

/// How jobs are pushed and taken.
fn take_phrase(s: &ListQueueSpec, lang: Lang) -> String {
    let push = match s.push {
        PushEnd::Rpush => "RPUSH",
        PushEnd::Lpush => "LPUSH",
    };
    match s.take {
        Take::Brpop => format!("{push} + BRPOP"),
        Take::Brpoplpush => crate::tr!(
            lang,
            "{push} + BRPOPLPUSH into a processing list, LREM when done (the seed)",
            "{push} + BRPOPLPUSH vào processing list, LREM khi xong (seed)"
        ),
        Take::Blmove => crate::tr!(
            lang,
            "{push} + BLMOVE into a processing list, LREM when done",
            "{push} + BLMOVE vào processing list, LREM khi xong"
        ),
        Take::Lease => {
            let (l, p) = (s.lease_ms, s.poll_ms);
            let id = if s.identity == Identity::Token {
                pick(lang, ", a token per delivery", ", mỗi lần giao một token")
            } else {
                ""
            };
            crate::tr!(
                lang,
                "{push} + a script that moves a job and leases it for {l} ms{id} (polled every {p} ms)",
                "{push} + script chuyển job và giữ lease {l} ms{id} (poll mỗi {p} ms)"
            )
        }
    }
}

/// The named point of a list worker's fault.
fn list_point(f: &Fault) -> Option<ListPoint> {
    match &f.trigger {
        crate::fault::Trigger::Event { event, .. } => ListPoint::named(event),
        _ => None,
    }
}

/// The faults a run injects: crashes, a stalled first delivery, a kill mid-job.
fn fault_parts(s: &ListQueueSpec, lang: Lang) -> Vec<String> {
    let mut parts = Vec::new();
    parts.extend(s.faults.iter().map(|f| {
        let (crate::fault::Trigger::Event { event, job: Some(job), .. }, Some(at)) =
            (&f.trigger, list_point(f))
        else {
            return f.label().get(lang).to_string();
        };
        let who = match (f.target, lang) {
            (crate::fault::Target::Process(w), _) => w.to_string(),
            (_, Lang::En) => format!("the first worker to take {job}"),
            (_, Lang::Vi) => format!("worker đầu tiên lấy {job}"),
        };
        let _ = event;
        match at {
            ListPoint::AfterTake => {
                crate::tr!(lang, "{who} is SIGKILLed after taking {job}", "{who} bị SIGKILL sau khi lấy {job}")
            }
            ListPoint::AfterEffect => crate::tr!(
                lang,
                "{who} is SIGKILLed after the side effect of {job}, before LREM",
                "{who} bị SIGKILL sau side effect của {job}, trước LREM"
            ),
        }
    }));
    parts.extend(s.jobs.iter().filter_map(|j| j.first_cost_ms.map(|ms| (j.label(), ms))).map(|(job, ms)| {
        crate::tr!(
            lang,
            "the first delivery of {job} takes {ms} ms (a stalled worker)",
            "lần giao đầu của {job} mất {ms} ms (worker bị treo)"
        )
    }));
    if let Some(k) = s.kill {
        let (w, by) = (k.worker, k.after_done_by);
        parts.push(crate::tr!(
            lang,
            "W{w} SIGKILLed mid-job when W{by} finishes",
            "W{w} bị SIGKILL giữa chừng khi W{by} làm xong"
        ));
    }
    parts
}

fn facts(s: &ListQueueSpec, run: &RunView<'_, ListQueueObserved>) -> ListQueueFacts {
    let o = run.observed;
    let count = |f: fn(&EventKind) -> bool| run.events.iter().filter(|e| f(&e.kind)).count() as i64;
    let applied = effects_per_job(&o.records);
    let (mut lost, mut dup) = (0i64, 0i64);
    for (label, times) in s.labels() {
        if s.jobs.iter().any(|j| j.label() == label && j.fate() != ExpectedFate::Done) {
            continue;
        }
        let n = applied.get(&(label, EFFECT.to_string())).copied().unwrap_or(0) as i64;
        lost += (times as i64 - n).max(0);
        dup += (n - times as i64).max(0);
    }
    ListQueueFacts {
        jobs_lost: lost,
        jobs_done_twice: dup,
        left_in_processing: o.processing.len() as i64,
        left_in_retry_list: o.retry.len() as i64,
        dead_lettered: o.dead.len() as i64,
        lrem_found_nothing: count(|k| {
            matches!(k.family::<ListEvent>(), Some(ListEvent::ListJobDone { removed: Some(0), .. }))
        }),
        processing_without_lease: (s.take == Take::Lease).then_some(o.orphans as i64),
        requeued: s
            .reaper
            .is_some()
            .then(|| count(|k| matches!(k.family::<ListEvent>(), Some(ListEvent::Requeued { .. })))),
        poison_sleeps: s.jobs.iter().any(|j| j.poison).then(|| {
            count(|k| matches!(k.family::<ListEvent>(), Some(ListEvent::Poison { slept_ms, .. }) if slept_ms > 0.0))
        }),
    }
}

/// What a list-queue run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListQueueFacts {
    /// Effects missing, and applied once too many, over the jobs meant to be done.
    pub jobs_lost: i64,
    pub jobs_done_twice: i64,
    pub left_in_processing: i64,
    pub left_in_retry_list: i64,
    pub dead_lettered: i64,
    /// LREMs of a done job that removed nothing.
    pub lrem_found_nothing: i64,
    /// Jobs in processing with no lease (where workers take leases).
    pub processing_without_lease: Option<i64>,
    /// Jobs the reaper put back (where there is a reaper).
    pub requeued: Option<i64>,
    /// 1 s sleeps over a poison payload (where a job is poison).
    pub poison_sleeps: Option<i64>,
}

impl Facts for ListQueueFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = vec![
            FactRow::stable("jobs_lost", self.jobs_lost),
            FactRow::stable("jobs_done_twice", self.jobs_done_twice),
            FactRow::stable("left_in_processing", self.left_in_processing),
            FactRow::stable("left_in_retry_list", self.left_in_retry_list),
            FactRow::stable("dead_lettered", self.dead_lettered),
            FactRow::stable("lrem_found_nothing", self.lrem_found_nothing),
        ];
        rows.extend(self.processing_without_lease.map(|n| FactRow::stable("processing_without_lease", n)));
        rows.extend(self.requeued.map(|n| FactRow::measured("requeued", n)));
        rows.extend(self.poison_sleeps.map(|n| FactRow::measured("poison_sleeps", n)));
        rows
    }
}

/// The lines after the timeline: the server's deprecation notice, what is left where, and per
/// retried job its attempts against the backoff.
fn notes(s: &ListQueueSpec, run: &RunView<'_, ListQueueObserved>, lang: Lang) -> Vec<Line> {
    let o = run.observed;
    let mut lines = Vec::new();
    if let Some(d) = &o.deprecation {
        lines.push(Line::text(crate::tr!(lang, "the server's COMMAND DOCS: {d}", "COMMAND DOCS của server: {d}")));
    }
    let list = |v: &[String]| if v.is_empty() { "–".to_string() } else { v.join(", ") };
    lines.push(Line::text(crate::tr!(
        lang,
        "left at the end — queue: {}; processing: {}; queue:retry: {}; delayed: {}",
        "còn lại cuối cùng — queue: {}; processing: {}; queue:retry: {}; delayed: {}",
        list(&o.queue),
        list(&o.processing),
        list(&o.retry),
        list(&o.delayed)
    )));
    if o.orphans > 0 {
        lines.push(Line::text(pick(
            lang,
            "in processing with no lease: a reaper that puts back expired leases never sees it",
            "nằm trong processing mà không có lease: reaper đưa lại job hết lease sẽ không bao giờ thấy nó",
        )));
    }
    if !o.processing.is_empty() && s.reaper.is_none() {
        lines.push(Line::text(pick(
            lang,
            "nothing ever reads processing: what is there stays there",
            "không có gì đọc processing: thứ gì ở đó sẽ nằm đó mãi",
        )));
    }
    if s.worker.is_some() {
        use crate::list_queue::events::ListEvent;
        let spent = crate::labs::handler_time::spent_ms(
            run.events,
            |e| match e.kind.family::<ListEvent>() {
                Some(ListEvent::Taken { job, .. }) => Some(job),
                _ => None,
            },
            |e| match e.kind.family::<ListEvent>() {
                Some(ListEvent::ListJobDone { job, .. } | ListEvent::ListJobFailed { job, .. }) => Some(job),
                _ => None,
            },
        );
        let between = pick(lang, "from its take to its LREM", "từ lúc lấy tới LREM");
        let told = format!("{} ms (ORDLAB_COST_MS)", s.cost_ms * o.scale);
        lines.extend(crate::labs::handler_time::lines(&spent, between, &told, lang));
    }
    lines.extend(schedule_lines(s, run.events, o.scale, lang));
    if let Some(claim) = &s.seed_says {
        let said = crate::tr!(lang, "seed says: {}; measured: ", "seed nói: {}; đo được: ", claim.get(lang));
        lines.push(Line::text(said).and_line(measured(s, run, lang)));
    }
    lines
}

/// What a run measured, in words, for the line after the seed's claim.
fn measured(s: &ListQueueSpec, run: &RunView<'_, ListQueueObserved>, lang: Lang) -> Line {
    let o = run.observed;
    let facts = facts(s, run);
    let jobs = s.jobs.len();
    let list = |v: &[String]| v.join(", ");
    let mut parts: Vec<Line> = vec![Line::text(crate::tr!(
        lang,
        "{} of {jobs} jobs lost, {} done twice",
        "mất {} trên {jobs} job, {} job làm hai lần",
        facts.jobs_lost,
        facts.jobs_done_twice
    ))];
    if !o.processing.is_empty() {
        parts.push(Line::text(crate::tr!(
            lang,
            "left in processing: {}",
            "còn trong processing: {}",
            list(&o.processing)
        )));
    }
    if !o.retry.is_empty() {
        parts.push(Line::text(crate::tr!(
            lang,
            "never retried, in queue:retry: {}",
            "không bao giờ thử lại, nằm trong queue:retry: {}",
            list(&o.retry)
        )));
    }
    if !o.dead.is_empty() {
        let dead: Vec<String> = o.dead.iter().map(|d| format!("{} ({})", d.job, d.reason)).collect();
        parts.push(Line::text(crate::tr!(lang, "dead-lettered: {}", "vào hàng lỗi: {}", dead.join(", "))));
    }
    if let Some(requeued) = facts.requeued {
        parts.push(
            Line::text(pick(lang, "put back by the reaper ", "reaper đưa lại "))
                .and(Piece::Count(requeued))
                .and_text(pick(lang, " times", " lần")),
        );
    }
    if let Some(sleeps) = facts.poison_sleeps.filter(|n| *n > 0) {
        parts.push(
            Line::text(pick(lang, "1 s sleeps over the poison: ", "số lần ngủ 1 s vì payload độc: "))
                .and(Piece::Count(sleeps)),
        );
    }
    if s.check_order {
        parts.push(Line::text(crate::tr!(
            lang,
            "done in the order {}",
            "làm theo thứ tự {}",
            done_order(&o.records).join(", ")
        )));
    }
    Line::join(parts, "; ")
}

/// Jobs in the order their effect was first applied, by the ledger.
fn done_order(records: &[EffectRecord]) -> Vec<&str> {
    let mut done: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| r.outcome == crate::side_effect::EffectOutcome::Applied) {
        if !done.contains(&r.job.as_str()) {
            done.push(&r.job);
        }
    }
    done
}

/// Per job that failed: when it ran, against when the backoff said it could run again.
fn schedule_lines(s: &ListQueueSpec, events: &[Event], scale: f64, lang: Lang) -> Vec<Line> {
    let per_job = attempts_per_job(events);
    let mut out = Vec::new();
    for (job, attempts) in per_job.iter().filter(|(_, a)| a.iter().any(|x| x.failed_ms.is_some())) {
        let mut line = Line::text(crate::tr!(lang, "{job} ran at t=", "{job} chạy lúc t="));
        let runs: Vec<Line> = attempts.iter().map(|a| Line(vec![Piece::Ms(a.started_ms.round() as i64)])).collect();
        line = line.and_line(Line::join(runs, ", "));
        if let OnFailure::Backoff(b) = &s.on_failure {
            let sched = job_schedule(attempts, scaled_delays(*b, scale), 2.0);
            let gaps: Vec<Line> = sched
                .gaps
                .iter()
                .map(|(due, gap)| Line(vec![Piece::Ms(gap.round() as i64), Piece::Text(format!(" (≥ {due:.0})"))]))
                .collect();
            line = line
                .and_text(pick(lang, "; waited after each failure ", "; chờ sau mỗi lần lỗi "))
                .and_line(Line::join(gaps, ", "));
            line = line.and_text(crate::tr!(lang, "; early: {}", "; sớm hơn lịch: {}", sched.early));
        } else {
            line = line.and_text(pick(lang, "; never again", "; không bao giờ chạy lại"));
        }
        out.push(line);
    }
    out
}

/// Each job's attempts on the run's clock: when a worker took it, when (if) it failed.
fn attempts_per_job(events: &[Event]) -> BTreeMap<String, Vec<Attempt>> {
    let mut per_job: BTreeMap<String, Vec<Attempt>> = BTreeMap::new();
    for e in events {
        let ms = e.t_us as f64 / 1000.0;
        match e.kind.family::<ListEvent>().as_ref() {
            Some(ListEvent::Taken { job, .. }) => {
                per_job.entry(job.clone()).or_default().push(Attempt { started_ms: ms, failed_ms: None })
            }
            Some(ListEvent::ListJobFailed { job, .. }) => {
                if let Some(last) = per_job.get_mut(job).and_then(|a| a.last_mut()) {
                    last.failed_ms = Some(ms);
                }
            }
            _ => {}
        }
    }
    per_job
}

/// With a backoff: wrong when a retry started before its delay had passed, or a job ran more
/// times than the policy allows.
fn judge_schedule(s: &ListQueueSpec, events: &[Event], scale: f64, v: &mut RunVerdict) {
    let OnFailure::Backoff(b) = &s.on_failure else { return };
    for (job, attempts) in attempts_per_job(events) {
        let sched = job_schedule(&attempts, scaled_delays(*b, scale), 2.0);
        if sched.early > 0 {
            v.add(Verdict::Wrong, format!("{job}: {} retries started before their backoff delay", sched.early));
        }
        if sched.attempts > b.max_attempts {
            v.add(Verdict::Wrong, format!("{job}: {} attempts, the policy allows {}", sched.attempts, b.max_attempts));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::list_queue::list_queue::*;
    use crate::side_effect::EffectOutcome;
    use crate::timeline::Actor;

    fn job(id: &str) -> JobPlan {
        JobPlan {
            id: Some(id.into()),
            name: JobPlan::default_name(),
            poison: false,
            refused: 0,
            cost_ms: None,
            first_cost_ms: None,
            after_taken: false,
            dead_letter: None,
        }
    }

    fn applied(id: i64, job: &str) -> EffectRecord {
        EffectRecord {
            request_id: id,
            job: job.into(),
            effect: EFFECT.into(),
            idem_key: None,
            actor: Actor::Worker(1),
            delivery: None,
            mono_ns: 0,
            outcome: EffectOutcome::Applied,
            replay_of: None,
            fault: None,
        }
    }

    #[test]
    fn jobs_done_newest_first_are_out_of_order() {
        let jobs = [job("j1"), job("j2"), job("j3")];
        assert_eq!(out_of_order(&jobs, &[applied(1, "j1"), applied(2, "j2"), applied(3, "j3")]), None);
        let why = out_of_order(&jobs, &[applied(1, "j1"), applied(2, "j3"), applied(3, "j2")]).unwrap();
        assert!(why.starts_with("j3 was done before j2"), "{why}");
    }

    #[test]
    fn a_poison_payload_does_not_parse_and_identical_jobs_share_a_label() {
        let mut p = job("j1");
        p.poison = true;
        assert!(ListJob::parse(&p.payload()).is_err());
        assert_eq!((p.payload(), p.label()), ("{\"id\":\"j1\"".to_string(), "{\"id\":\"j1\"".to_string()));
        assert!(ListJob::parse(&job("j1").payload()).is_ok());
        let mut a = job("x");
        a.id = None;
        assert_eq!(a.label(), "send_welcome_email");
        assert_eq!(a.payload(), a.clone().payload());
    }
}
