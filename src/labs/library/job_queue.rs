//! `kind = "library"`: a job-queue library at a pinned version is the system under test. Its
//! own client enqueues the lab's jobs, its own worker processes run them (each through the
//! interposer, which kills one at a named command), its own API says what it believes of each
//! job once the run is at rest; the checker compares that with the side-effect ledger.
//!
//! A worker the interposer killed is replaced by a new one on the same queues with
//! `restart = true`, as a supervisor would; the run ends once nothing has happened in the
//! ledger or among the workers for `patience_ms` (and not before `at_least_ms`).

mod run;
mod stage;

use super::checker::{job_fates, order_broken, recovery_words, Fate, JobFate, LibraryState};
use super::install::Installed;
use super::manifest::{Guarantee, LibraryRef, Manifest, Recovery};
use crate::checker::{health::health, RunVerdict, Verdict};
use crate::error::Error;
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
};
use crate::lang::{pick, Lang};
use crate::side_effect::EffectRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `kind = "library"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LibrarySpec {
    pub library: LibraryRef,
    /// Enqueued in this order, by one run of the adapter's enqueue command.
    pub jobs: Vec<LibraryJob>,
    /// Each job's work in ms, unless the job says.
    #[serde(default = "LibrarySpec::default_handler_ms")]
    pub handler_ms: f64,
    /// The library's worker processes, `W1`, `W2`, …, started in this order before the jobs are
    /// enqueued, each ready once it waits in its blocking command.
    pub workers: Vec<LibraryWorker>,
    /// A killed worker is replaced by a new one on the same queues, without its faults.
    #[serde(default)]
    pub restart: bool,
    #[serde(default = "LibrarySpec::default_patience_ms")]
    pub patience_ms: f64,
    #[serde(default)]
    pub at_least_ms: f64,
    #[serde(default = "LibrarySpec::default_deadline_ms")]
    pub deadline_ms: f64,
    /// Each job's fate as the lab predicts it, in job order (`once`, `lost`, `stuck`, …).
    #[serde(default)]
    pub expect: Vec<Fate>,
    /// The library's settings for this lab (`visibility_timeout`, `lockDuration`, …), told to
    /// every adapter command as `ORDLAB_OPTIONS` (JSON), as they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, serde_json::Value>,
    /// Enqueue the jobs before any worker starts: a worker's first fetch takes the first job,
    /// so a fault at its reply is placed however often the library polls.
    #[serde(default)]
    pub enqueue_first: bool,
    /// Once the run is at rest, run the adapter's `recover` command: the library's own
    /// recovery as it runs this many seconds later; then wait until it is at rest again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover_after_s: Option<f64>,
}

/// One job: `{ key = "job-1", queue = "default", ms = 200, retry = 1 }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryJob {
    pub key: String,
    #[serde(default = "LibraryJob::default_queue")]
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// Retries the library may make (its own `Retry`, `retryLimit`, `attempts`).
    #[serde(default)]
    pub retry: u32,
    /// The handler fails on purpose on its first `fail` attempts: it tells the sink `fail`
    /// and raises, as a job whose API call failed does.
    #[serde(default)]
    pub fail: u32,
    /// When it is enqueued (default: with the others, before the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// The library's own options for this job (`depends_on`, `singleton_key`, `countdown`),
    /// passed to the adapter as they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, serde_json::Value>,
}

/// When a job is enqueued, if not with the others.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    /// While a worker's `hold` holds its command at the interposer.
    Hold,
    /// When this job's handler starts (the handler's start answer waits until it is enqueued).
    Start(String),
}

impl LibraryJob {
    fn default_queue() -> String {
        "default".into()
    }
}

/// One worker process: the queues it serves, and its faults (`{ command = "BLPOP", nth = 1,
/// at = "reply" }`: SIGKILL the worker when the reply to its first BLPOP arrives, before the
/// library can act on it; any fault of [`crate::fault`], aimed at this worker).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryWorker {
    pub queues: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::fault::Fault>,
    /// Hold one of its commands at the interposer until the `when = "hold"` jobs are enqueued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldAt>,
    /// Stop it (SIGTERM, as its supervisor does) the moment a job's handler starts on it (the
    /// handler's start answer waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_start: Option<OnStart>,
    /// Start it only when this job's handler starts (on another worker): a second worker that
    /// joins once the first holds the job, so which worker takes the job is no race.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
}

/// `{ command = "EXEC", after = "WATCH" }`: the worker's first EXEC sent on a connection that
/// sent WATCH before it (the `nth` such one).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HoldAt {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default = "HoldAt::first")]
    pub nth: u32,
}

impl HoldAt {
    fn first() -> u32 {
        1
    }
}

/// `{ job = "job-1", signal = "term" }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnStart {
    pub job: String,
    pub signal: StopSignal,
}

/// How the lab stops a worker whose job has started: as its supervisor does (a deploy). A
/// SIGKILL there is a fault (`{ event = "start", job = "job-1", action = "kill" }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopSignal {
    /// SIGTERM: the library's own shutdown.
    Term,
}

impl LibrarySpec {
    fn default_handler_ms() -> f64 {
        200.0
    }
    fn default_patience_ms() -> f64 {
        2000.0
    }
    fn default_deadline_ms() -> f64 {
        180_000.0
    }

    pub fn keys(&self) -> Vec<String> {
        self.jobs.iter().map(|j| j.key.clone()).collect()
    }

    /// Every job's fate in `observed`.
    pub fn fates(&self, observed: &LibraryObserved) -> Vec<JobFate> {
        let name = &self.library.name;
        job_fates(&self.keys(), &observed.records, &observed.states, &observed.guarantee, name)
    }
}

/// What one run observed: the install, the promise, the ledger and the library's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LibraryObserved {
    pub installed: Installed,
    pub guarantee: Guarantee,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    pub records: Vec<EffectRecord>,
    pub states: BTreeMap<String, LibraryState>,
    /// How many worker processes the run started (the replacements too).
    pub workers_started: u32,
    /// The adapter's Lua scripts by SHA1: a fault named by a script fired as `EVALSHA <sha>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scripts: BTreeMap<String, String>,
}

/// How many jobs came to each fate; the faults are placed, so each count is the same in
/// every run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LibraryFacts {
    pub once: i64,
    pub lost: i64,
    pub stuck: i64,
    pub failed: i64,
    pub duplicate_sequential: i64,
    pub duplicate_overlapping: i64,
    pub disagreement: i64,
    /// Jobs whose fate breaks the library's documented guarantee.
    pub promise_broken: i64,
}

impl Facts for LibraryFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![
            FactRow::stable("once", self.once),
            FactRow::stable("lost", self.lost),
            FactRow::stable("stuck", self.stuck),
            FactRow::stable("failed", self.failed),
            FactRow::stable("duplicate_sequential", self.duplicate_sequential),
            FactRow::stable("duplicate_overlapping", self.duplicate_overlapping),
            FactRow::stable("disagreement", self.disagreement),
            FactRow::stable("promise_broken", self.promise_broken),
        ]
    }
}

impl LabProcedure for LibrarySpec {
    fn validate(&mut self) -> Result<(), String> {
        let manifest = Manifest::read(&self.library).map_err(|e| e.to_string())?;
        if self.recover_after_s.is_some() && manifest.recover.is_empty() {
            return Err(format!(
                "setup.recover_after_s: the {} adapter has no recover command (library.toml: recover = […])",
                self.library.name
            ));
        }
        if self.jobs.is_empty() || self.workers.is_empty() {
            return Err("setup.jobs and setup.workers: give at least one of each".into());
        }
        if let Some(w) = self.workers.iter().position(|w| w.queues.is_empty()) {
            return Err(format!("setup.workers[{w}].queues is empty: name the queues it serves"));
        }
        for (i, j) in self.jobs.iter().enumerate() {
            match &j.when {
                Some(When::Start(first)) if !self.jobs[..i].iter().any(|k| &k.key == first && k.when.is_none()) => {
                    return Err(format!(
                        "setup.jobs[{i}].when = {{ start = {first:?} }}: name a job enqueued before it, with the others"
                    ));
                }
                Some(When::Hold) if !self.workers.iter().any(|w| w.hold.is_some()) => {
                    return Err(format!(
                        "setup.jobs[{i}].when = \"hold\", but no worker has a hold: give one `hold = {{ command = \"EXEC\" }}`"
                    ));
                }
                _ => {}
            }
        }
        if let Some((w, s)) = self.workers.iter().enumerate().find_map(|(w, k)| k.on_start.as_ref().map(|s| (w, s))) {
            if !self.jobs.iter().any(|j| j.key == s.job) {
                return Err(format!("setup.workers[{w}].on_start.job = {:?} is no job of the lab", s.job));
            }
        }
        for (w, k) in self.workers.iter().enumerate() {
            if let Some(job) = k.starts_at.as_ref().filter(|j| !self.jobs.iter().any(|x| &x.key == *j)) {
                return Err(format!("setup.workers[{w}].starts_at = {job:?} is no job of the lab"));
            }
        }
        if self.workers.first().is_some_and(|w| w.starts_at.is_some()) {
            return Err("setup.workers[0].starts_at: the first worker starts with the run".into());
        }
        if !self.expect.is_empty() && self.expect.len() != self.jobs.len() {
            return Err(format!(
                "setup.expect has {} entries: give one fate per job ({} jobs)",
                self.expect.len(),
                self.jobs.len()
            ));
        }
        Ok(())
    }

    fn needs(&self) -> crate::labs::Needs {
        crate::labs::Needs {
            not_external: Some("a job-queue library keeps its keys and tables under its own names (rq:*, bull:*, pgboss.*), in a database it empties"),
            ..Default::default()
        }
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<LibraryObserved>, Error> {
        run::run(self, ctx).await
    }
}

impl Judge for LibrarySpec {
    type Observed = LibraryObserved;
    type Facts = LibraryFacts;

    fn faults(&self, observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        let mut out = Vec::new();
        for (i, w) in self.workers.iter().enumerate() {
            let actor = crate::timeline::Actor::Worker(i as u32 + 1);
            out.extend(w.faults.iter().map(|f| run::wire_fault(f, actor, &observed.scripts)));
        }
        out
    }

    /// Wrong when a job did not run exactly once as the library says; a fate other than the
    /// lab's prediction makes the run unknown (the lab does not show what it says it shows).
    fn judge(&self, run: &RunView<'_, LibraryObserved>) -> RunVerdict {
        let mut v = health(run.events, run.timed_out);
        let fates = self.fates(run.observed);
        let mut mispredicted = false;
        for (i, f) in fates.iter().enumerate() {
            if f.fate != Fate::Once {
                let broken = f.breaks.as_deref().map(|b| format!("; breaks the promise: {b}")).unwrap_or_default();
                v.add(
                    Verdict::Wrong,
                    format!("{}: {} ({} says {}){broken}", f.key, f.fate.name(), self.library.name, f.state.status),
                );
            }
            if let Some(expected) = self.expect.get(i).filter(|e| **e != f.fate) {
                mispredicted = true;
                v.add(
                    Verdict::Unknown,
                    format!("{}: predicted {}, measured {}", f.key, expected.name(), f.fate.name()),
                );
            }
        }
        if run.observed.guarantee.fifo {
            if let Some((a, b)) = order_broken(&fates) {
                v.add(
                    Verdict::Wrong,
                    format!("{b} started before {a}, enqueued before it: the FIFO promise is broken"),
                );
            }
        }
        if mispredicted {
            v.verdict = Verdict::Unknown;
        }
        v
    }

    fn final_state(&self, observed: &LibraryObserved) -> Vec<FinalItem> {
        self.fates(observed)
            .into_iter()
            .map(|f| FinalItem {
                order: None,
                subject: f.key.clone(),
                value: format!("{} ({})", f.fate.name(), f.state.status),
                should_be: (f.fate != Fate::Once).then(|| "once".to_string()),
            })
            .collect()
    }

    fn facts(&self, run: &RunView<'_, LibraryObserved>) -> LibraryFacts {
        let fates = self.fates(run.observed);
        let count = |fate: Fate| fates.iter().filter(|f| f.fate == fate).count() as i64;
        LibraryFacts {
            once: count(Fate::Once),
            lost: count(Fate::Lost),
            stuck: count(Fate::Stuck),
            failed: count(Fate::Failed),
            duplicate_sequential: count(Fate::DuplicateSequential),
            duplicate_overlapping: count(Fate::DuplicateOverlapping),
            disagreement: count(Fate::Disagreement),
            promise_broken: fates.iter().filter(|f| f.breaks.is_some()).count() as i64,
        }
    }
}

impl Present for LibrarySpec {
    fn describe(&self, lang: Lang) -> String {
        let workers: Vec<String> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let faults: Vec<String> = w
                    .faults
                    .iter()
                    .map(|f| crate::roles::command_worker::fault_words(f, &format!("W{}", i + 1), lang))
                    .collect();
                let on = pick(lang, "on", "trên");
                let faults = if faults.is_empty() { String::new() } else { format!(" ({})", faults.join("; ")) };
                format!("W{} {on} {}{faults}", i + 1, w.queues.join(", "))
            })
            .collect();
        let (lib, n) = (self.library.shown(), self.jobs.len());
        // Each job's own handler time where it names one (job-1 of 4000 ms), else the lab's.
        let mut times: Vec<f64> = self.jobs.iter().map(|j| j.ms.unwrap_or(self.handler_ms)).collect();
        times.dedup();
        let ms = times.iter().map(|t| t.to_string()).collect::<Vec<_>>().join("/");
        let restart = match (self.restart, lang) {
            (false, _) => "",
            (true, Lang::En) => "; a killed worker is replaced",
            (true, Lang::Vi) => "; worker bị kill được thay bằng worker mới",
        };
        let workers = workers.join("; ");
        crate::tr!(
            lang,
            "{lib}'s own worker processes: {workers}; {n} job(s) of {ms} ms enqueued by its client{restart}",
            "worker của chính {lib}: {workers}; {n} job {ms} ms được client của nó enqueue{restart}"
        )
    }

    fn approach(&self) -> String {
        let queues: Vec<String> = self.workers.iter().map(|w| w.queues.join("+")).collect();
        format!("{}, workers on {}", self.library.shown(), queues.join(" / "))
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(lang, "a job not run exactly once", "một job không chạy đúng một lần").into()
    }

    fn timeline(&self) -> crate::labs::TimelineDisplay {
        crate::labs::TimelineDisplay { focus_on_faults: true, ..Default::default() }
    }

    fn notes(&self, run: &RunView<'_, LibraryObserved>, lang: Lang) -> RunNotes {
        let o = run.observed;
        let g = &o.guarantee;
        let loss = match (g.silent_loss, lang) {
            (true, Lang::En) => "may lose a job silently",
            (true, Lang::Vi) => "có thể mất job không báo",
            (false, Lang::En) => "no silent loss",
            (false, Lang::Vi) => "không mất job âm thầm",
        };
        let mut after = vec![Line::text(crate::tr!(
            lang,
            "library: {} (installed: {}); its documented guarantee: {}, {loss}",
            "thư viện: {} (đã cài: {}); bảo đảm trong tài liệu: {}, {loss}",
            self.library.shown(),
            o.installed.shown(),
            g.runs.name()
        ))];
        after.extend(Line::client_libraries(run.events, lang));
        for f in self.fates(o) {
            after.push(fate_line(&f, &self.library.name, o.recovery.as_ref(), lang));
        }
        RunNotes { heading: None, after }
    }

    fn table_row(&self, run: &RunView<'_, LibraryObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let f = self.facts(run);
        let cell = |n: i64| Line(vec![Piece::Text(n.to_string())]);
        Some(vec![
            (pick(lang, "library", "thư viện").into(), Line::text(self.library.shown())),
            (pick(lang, "once", "một lần").into(), cell(f.once)),
            (pick(lang, "lost", "mất").into(), cell(f.lost)),
            (pick(lang, "stuck", "kẹt").into(), cell(f.stuck)),
            (pick(lang, "duplicate", "trùng").into(), cell(f.duplicate_sequential + f.duplicate_overlapping)),
            (pick(lang, "promise broken", "phá lời hứa").into(), cell(f.promise_broken)),
        ])
    }
}

/// `job-1: lost — never ran; rq says queued, held in no queue or registry → breaks …`.
fn fate_line(f: &JobFate, name: &str, recovery: Option<&Recovery>, lang: Lang) -> Line {
    let ran = f.executions.len();
    let ends = f.ends();
    let places = match &f.state.places {
        Some(p) if p.is_empty() => {
            pick(lang, "in no queue or registry", "không nằm trong queue hay registry nào").to_string()
        }
        Some(p) => p.join(", "),
        None => "-".into(),
    };
    let reason = f.state.reason.as_ref().map(|r| format!(": {r:?}")).unwrap_or_default();
    let mut text = crate::tr!(
        lang,
        "{}: {} — started {ran}×, ended {ends}×; {name} says {}{reason} ({places})",
        "{}: {} — bắt đầu {ran}×, kết thúc {ends}×; {name} nói {}{reason} ({places})",
        f.key,
        f.fate.name(),
        f.state.status
    );
    if f.planned_failures() > 0 {
        let n = f.planned_failures();
        text.push_str(&crate::tr!(lang, "; {n} planned failure(s) before", "; {n} lần lỗi cài sẵn trước đó"));
    }
    if f.fate == Fate::Stuck {
        text.push_str(&format!("; {}", recovery_words(recovery)));
    }
    match &f.breaks {
        Some(why) => text.push_str(&format!(" → {}: {why}", pick(lang, "breaks its promise", "phá lời hứa của nó"))),
        None if f.fate != Fate::Once => text.push_str(&format!(
            " → {}",
            pick(lang, "allowed by its documented guarantee", "được bảo đảm trong tài liệu cho phép")
        )),
        None => {}
    }
    Line::text(text)
}
