//! `ordlab grade`: a class exercise. A student's worker, given as a command line, is put through
//! a check list ([`checklist`]): stream labs that attack it, each telling one classic mistake
//! apart, and each check says right, wrong or unknown, with a one-line hint and the timeline of
//! its first wrong run. A whole class is graded with one command into a gradebook ([`book`]).
//!
//! A check's run is an ordinary lab run with the submission as its worker (same servers,
//! interposer, checkers), judged only once every worker is back waiting for work
//! ([`crate::roles::patience`]): a worker cut mid-entry makes its run unknown, never wrong.
//! Grading is sampling, except where a check is explored ([`explored`]): every order of its
//! steps, graded by classes.

pub mod book;
pub mod checklist;
pub mod explored;
mod render;
mod submission;

pub use checklist::{Check, CheckList};
pub use render::render;
pub use submission::{is_class, submissions, worker_command, Submission};

use crate::checker::Verdict;
use crate::error::Error;
use crate::report::VariantReport;
use crate::roles::patience::PatienceEvent;
use crate::runner::{RunOptions, Runner};
use crate::scenario::ScenarioError;
use crate::service::Services;

/// The built-in check lists `--set` names, each with its text.
pub const SETS: [(&str, &str); 1] = [("ordering", include_str!("grade/ordering.toml"))];

/// Errors of choosing a check list, finding the submissions, or grading.
#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    #[error("unknown exercise set {0:?}: the sets are {known}; or give a check list file with --checks", known = SETS.map(|s| s.0).join(", "))]
    UnknownSet(String),
    #[error("no worker given: `ordlab grade my_consumer.py`, `ordlab grade -- php my_consumer.php`, or a class: `ordlab grade submissions/*`")]
    NoWorker,
    #[error("{0}")]
    Submission(String),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Run(#[from] Error),
}

/// The built-in check list `set`.
pub fn builtin(set: &str) -> Result<CheckList, GradeError> {
    let (name, text) =
        SETS.iter().find(|(name, _)| *name == set).ok_or_else(|| GradeError::UnknownSet(set.to_string()))?;
    Ok(CheckList::parse(text, &format!("exercise set {name}"))?)
}

/// A check's grade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// No run (or class of orders) ended wrong, and every one could be judged.
    Right,
    /// Some run ended wrong.
    Wrong,
    /// None wrong, but some could not be judged (the reasons say why).
    Unknown,
}

impl Mark {
    /// `right`, `wrong`, `unknown`: the gradebook's words.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Right => "right",
            Mark::Wrong => "wrong",
            Mark::Unknown => "unknown",
        }
    }
}

/// What one check gave a submission.
#[derive(Clone, Debug)]
pub struct CheckGrade {
    pub id: String,
    pub mark: Mark,
    /// Its sampled runs (judged), when it was sampled.
    pub runs: Option<VariantReport>,
    /// The runs the check asks for.
    pub planned: u32,
    /// Why it stopped before its planned runs (a worker that made no progress is cut once per
    /// check, not once per run), or why it could not run at all.
    pub stopped: Option<String>,
    /// Its classes of orders, when it was explored.
    pub explored: Option<explored::ExploredGrade>,
}

impl CheckGrade {
    /// `wrong 2/3`, `right 3/3`, `unknown 1/1`, `wrong in 12 of 68 orders`: the cell.
    pub fn cell(&self) -> String {
        if let Some(x) = &self.explored {
            return x.cell(self.mark);
        }
        let (done, wrong, unknown) = self.runs.as_ref().map_or((0, 0, 0), |v| (v.runs, v.wrong, v.unknown));
        match self.mark {
            Mark::Right => format!("right {done}/{done}"),
            Mark::Wrong => format!("wrong {wrong}/{done}"),
            Mark::Unknown if done == 0 => "unknown".into(),
            Mark::Unknown => format!("unknown {unknown}/{done}"),
        }
    }

    /// The reasons of its first wrong run (or first unknown one, or why it stopped).
    pub fn reasons(&self) -> Vec<String> {
        if let Some(x) = &self.explored {
            return x.reasons();
        }
        let first = self.first_run_not_right().map(|r| r.verdict.reasons.clone()).unwrap_or_default();
        first.into_iter().chain(self.stopped.clone()).collect()
    }

    /// Its first wrong run, else its first unknown one.
    pub fn first_run_not_right(&self) -> Option<&crate::labs::RunRecord> {
        let records = &self.runs.as_ref()?.run_records;
        records
            .iter()
            .find(|r| r.verdict.verdict == Verdict::Wrong)
            .or_else(|| records.iter().find(|r| r.verdict.verdict == Verdict::Unknown))
    }
}

/// One submission graded: its checks, or why it could not start.
#[derive(Clone, Debug)]
pub struct Graded {
    pub submission: Submission,
    pub result: Result<Vec<CheckGrade>, String>,
}

impl Graded {
    /// Checks right, of all.
    pub fn score(&self) -> (usize, usize) {
        match &self.result {
            Ok(checks) => (checks.iter().filter(|c| c.mark == Mark::Right).count(), checks.len()),
            Err(_) => (0, 0),
        }
    }

    /// Every check right.
    pub fn all_right(&self) -> bool {
        matches!(&self.result, Ok(checks) if checks.iter().all(|c| c.mark == Mark::Right))
    }
}

/// Where grading is: for the terminal.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    /// 1-based, of `submissions`.
    pub submission: usize,
    pub submissions: usize,
    pub name: &'a str,
    pub check: &'a str,
    pub run: u32,
    pub runs: u32,
}

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Step { submission, submissions, name, check, run, runs } = self;
        write!(f, "[{submission}/{submissions}] {name}: {check} run {run}/{runs}")
    }
}

/// How to grade: the check list, its runs, whether to explore every check.
pub struct GradeOptions<'a> {
    pub list: &'a CheckList,
    pub run: RunOptions,
    /// Explore every check instead of sampling it (`--explore`); a check list's `explore =
    /// true` explores that check either way.
    pub explore_all: bool,
    /// The explorer's budget per explored check.
    pub explore: explored::Budget,
}

/// Grade each submission in turn on the same `services`, telling `on_step` where it is.
pub async fn grade(
    subs: &[Submission],
    opts: &GradeOptions<'_>,
    services: &Services,
    exe: std::path::PathBuf,
    on_step: &mut dyn FnMut(&Step<'_>),
) -> Result<Vec<Graded>, GradeError> {
    let mut runner = Runner::new(services, exe.clone()).await?;
    let runner = &mut runner;
    let mut book = Vec::new();
    for (i, sub) in subs.iter().enumerate() {
        let at = |check: &str, run: u32, runs: u32| (i + 1, subs.len(), check.to_string(), run, runs);
        let mut tell = |(submission, submissions, check, run, runs): (usize, usize, String, u32, u32)| {
            on_step(&Step { submission, submissions, name: &sub.name, check: &check, run, runs });
        };
        let result = grade_one(sub, opts, runner, (services, &exe), &mut |c, r, n| tell(at(c, r, n))).await?;
        book.push(Graded { submission: sub.clone(), result });
    }
    Ok(book)
}

/// Grade one submission: every check, or the one line saying why it could not start.
async fn grade_one(
    sub: &Submission,
    opts: &GradeOptions<'_>,
    runner: &mut Runner<'_>,
    (services, exe): (&Services, &std::path::Path),
    on_step: &mut dyn FnMut(&str, u32, u32),
) -> Result<Result<Vec<CheckGrade>, String>, GradeError> {
    if let Err(e) = crate::roles::command_worker::check_program(&sub.command) {
        return Ok(Err(one_line(&e.to_string())));
    }
    let lab = opts.list.scenario(&sub.command)?;
    let mut grades = Vec::new();
    for (check, v) in opts.list.checks.iter().zip(&lab.variants) {
        let grade = if check.explore || opts.explore_all {
            on_step(&check.id, 1, 1);
            explored::grade(services, exe.to_path_buf(), &lab, v, &opts.explore).await?
        } else {
            let planned = opts.run.runs.unwrap_or(check.runs);
            let mut records = Vec::new();
            let mut stopped = None;
            for run in 1..=planned {
                on_step(&check.id, run, planned);
                match runner.run_once(&lab, v, run, &opts.run).await {
                    Ok(record) => {
                        let stalled = record.timed_out
                            || record.events.iter().any(|e| {
                                matches!(e.kind.family::<PatienceEvent>(), Some(PatienceEvent::NoProgress { .. }))
                            });
                        records.push(record);
                        if stalled && run < planned {
                            stopped = Some(format!(
                                "a worker made no progress: the check stopped after run {run} of {planned}"
                            ));
                            break;
                        }
                    }
                    // The submission does not start at all: one line, and no other check.
                    Err(Error::WorkerCommand { detail, .. }) if grades.is_empty() && records.is_empty() => {
                        return Ok(Err(one_line(&detail)));
                    }
                    Err(Error::WorkerCommand { detail, .. }) => {
                        stopped = Some(one_line(&format!("the worker did not start: {detail}")));
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let report = VariantReport::tally(v, records);
            let mark = if report.wrong > 0 {
                Mark::Wrong
            } else if report.unknown > 0 || stopped.is_some() || report.runs == 0 {
                Mark::Unknown
            } else {
                Mark::Right
            };
            CheckGrade { id: check.id.clone(), mark, runs: Some(report), planned, stopped, explored: None }
        };
        grades.push(grade);
    }
    Ok(Ok(grades))
}

/// One line, whatever a worker printed: newlines and control characters shown as escapes.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        match c {
            '\n' | '\r' => out.push_str(" ⏎ "),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32 & 0xff)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_parses_and_takes_a_command_that_needs_quoting() {
        for (set, _) in SETS {
            let list = builtin(set).unwrap();
            let lab = list.scenario(&["python3".into(), "my \"odd\" path\\x.py".into()]).unwrap();
            assert_eq!(lab.variants.len(), list.checks.len(), "{set}");
        }
        assert!(matches!(builtin("nope"), Err(GradeError::UnknownSet(_))));
    }

    #[test]
    fn the_ordering_set_tells_the_classic_mistakes_apart() {
        let list = builtin("ordering").unwrap();
        let ids: Vec<&str> = list.checks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["race", "late-duplicate", "redelivery", "crash-after-ack", "lock-ttl"]);
        assert!(list.check("crash-after-ack").unwrap().hint.en.contains("early ack"));
    }

    #[test]
    fn a_reason_is_one_line_whatever_the_worker_printed() {
        assert_eq!(one_line("a\nb\x1b[31m\r\n"), "a ⏎ b\\x1b[31m");
    }
}
