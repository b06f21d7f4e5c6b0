//! The job-queue checker: per job, what ran (the side-effect ledger's `start` and `end` of each
//! execution) against what the library believes of it after the run (its state command), into
//! one fate — once, lost, stuck, failed (the library says so), duplicate (sequential or
//! overlapping) or disagreement — and whether that fate breaks the guarantee the library
//! documents. Pure: hand-made ledgers and states test every category.
//!
//! A duplicate from an at-least-once queue is reported, not called a bug; a lost job breaks
//! the promise only of a library that says it does not lose jobs silently.

use super::manifest::{Guarantee, Recovery, Runs};
use crate::side_effect::EffectRecord;
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The ledger effect a job function sends when it starts, when it ends, and when it fails on
/// purpose (the lab's `fail`: a planned failed attempt the library is meant to retry).
pub const START: &str = "start";
pub const END: &str = "end";
pub const FAIL: &str = "fail";

/// What the library's state command says of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryState {
    /// The library's own word (`queued`, `started`, `finished`, `failed`, `active`, …), or
    /// `missing` when it has no such job.
    pub status: String,
    /// Where the library holds the job (`queue:default`, `started:default`); None when the
    /// adapter does not say. Empty: nowhere a worker or a cleanup will look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub places: Option<Vec<String>>,
    /// Why the library says it failed, in its own words (BullMQ's `failedReason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A library's status word, as the checker reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Completed,
    Failed,
    Active,
    Waiting,
    Missing,
    Unknown,
}

impl Status {
    /// The words of RQ, Celery, BullMQ, Sidekiq, pg-boss and graphile-worker.
    pub fn of(word: &str) -> Status {
        match word.to_ascii_lowercase().as_str() {
            "finished" | "completed" | "complete" | "done" | "succeeded" | "success" => Status::Completed,
            "failed" | "failure" | "dead" | "discarded" | "canceled" | "cancelled" | "stopped" => Status::Failed,
            "started" | "active" | "running" | "locked" | "reserved" | "unacked" | "busy" => Status::Active,
            "queued" | "waiting" | "wait" | "scheduled" | "deferred" | "retry" | "retrying" | "delayed" | "created"
            | "pending" | "prioritized" | "enqueued" | "waiting-children" => Status::Waiting,
            "missing" => Status::Missing,
            _ => Status::Unknown,
        }
    }
}

/// One execution of a job's function: its `start` and, if it got there, its `end`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    pub actor: Actor,
    pub attempt: Option<u32>,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    /// It ended with the lab's planned failure (`fail`), not its work done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// What became of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// Ran to its end once, and the library says completed.
    Once,
    /// Never ran to its end, and the library neither says failed nor still holds it.
    Lost,
    /// Never ran to its end; the library still holds it (active, locked, or queued with no one
    /// to take it) after the lab's patience.
    Stuck,
    /// Never ran to its end, and the library says failed: reported, not silent.
    Failed,
    /// Started twice or more, one after the other.
    DuplicateSequential,
    /// Started twice or more, two of them at the same time.
    DuplicateOverlapping,
    /// The library's state contradicts what ran: completed but never ended, or ended once and
    /// not completed.
    Disagreement,
}

impl Fate {
    pub fn name(self) -> &'static str {
        match self {
            Fate::Once => "once",
            Fate::Lost => "lost",
            Fate::Stuck => "stuck",
            Fate::Failed => "failed",
            Fate::DuplicateSequential => "duplicate-sequential",
            Fate::DuplicateOverlapping => "duplicate-overlapping",
            Fate::Disagreement => "disagreement",
        }
    }
}

/// One job's fate, what it rests on, and whether it breaks the library's promise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobFate {
    pub key: String,
    pub fate: Fate,
    pub executions: Vec<Execution>,
    pub state: LibraryState,
    /// The promise it breaks, in words (English); None: the outcome is one the docs allow.
    pub breaks: Option<String>,
}

impl JobFate {
    /// Executions that ran to their end (planned failures left out).
    pub fn ends(&self) -> usize {
        self.executions.iter().filter(|e| e.end_ns.is_some() && !e.failed).count()
    }

    /// Attempts that failed as the lab planned.
    pub fn planned_failures(&self) -> usize {
        self.executions.iter().filter(|e| e.failed).count()
    }
}

/// Pair each `start` with the `end` of the same worker and attempt that follows it.
pub fn executions(key: &str, records: &[EffectRecord]) -> Vec<Execution> {
    let mut out: Vec<Execution> = Vec::new();
    for r in records.iter().filter(|r| r.job == key) {
        match r.effect.as_str() {
            START => out.push(Execution {
                actor: r.actor,
                attempt: r.delivery,
                start_ns: r.mono_ns,
                end_ns: None,
                failed: false,
            }),
            END | FAIL => {
                let open = out.iter_mut().find(|e| {
                    e.end_ns.is_none() && e.actor == r.actor && e.attempt == r.delivery && e.start_ns <= r.mono_ns
                });
                if let Some(e) = open {
                    e.end_ns = Some(r.mono_ns);
                    e.failed = r.effect == FAIL;
                }
            }
            _ => {}
        }
    }
    out
}

/// Do two executions run at the same time? One that never ended (its worker was killed) is
/// taken to have stopped where it started: it overlaps nothing.
fn overlap(a: &Execution, b: &Execution) -> bool {
    let (Some(a_end), Some(b_end)) = (a.end_ns, b.end_ns) else { return false };
    a.start_ns < b_end && b.start_ns < a_end
}

/// The fate of job `key`. A planned failed attempt is a retry the lab asked for: not a
/// duplicate run.
pub fn fate(key: &str, records: &[EffectRecord], state: LibraryState, guarantee: &Guarantee, name: &str) -> JobFate {
    let executions = executions(key, records);
    let runs: Vec<&Execution> = executions.iter().filter(|e| !e.failed).collect();
    let ended = runs.iter().filter(|e| e.end_ns.is_some()).count();
    let mut status = Status::of(&state.status);
    if status == Status::Missing && guarantee.forgets_completed && ended == 1 {
        // A library that keeps no record of a completed job (Sidekiq) says nothing of it.
        status = Status::Completed;
    }
    let held = state.places.as_ref().is_none_or(|p| !p.is_empty());
    let fate = if runs.len() >= 2 {
        let overlapping = runs.iter().enumerate().any(|(i, a)| runs[i + 1..].iter().any(|b| overlap(a, b)));
        if overlapping {
            Fate::DuplicateOverlapping
        } else {
            Fate::DuplicateSequential
        }
    } else if ended == 1 {
        if status == Status::Completed {
            Fate::Once
        } else {
            Fate::Disagreement
        }
    } else {
        match status {
            Status::Completed => Fate::Disagreement,
            Status::Failed => Fate::Failed,
            Status::Active | Status::Waiting if held => Fate::Stuck,
            _ => Fate::Lost,
        }
    };
    let breaks = breaks(fate, &state, guarantee, name);
    JobFate { key: key.to_string(), fate, executions, state, breaks }
}

/// The promise `fate` breaks, if any.
fn breaks(fate: Fate, state: &LibraryState, guarantee: &Guarantee, name: &str) -> Option<String> {
    match fate {
        Fate::Lost if !guarantee.silent_loss => Some(format!(
            "{name} does not promise to lose jobs silently: this one never ran and {name} says {}{}",
            state.status,
            if state.places.as_ref().is_some_and(Vec::is_empty) { ", held in no queue or registry" } else { "" }
        )),
        Fate::DuplicateSequential | Fate::DuplicateOverlapping if guarantee.runs != Runs::AtLeastOnce => {
            Some(format!("{name} promises {}: this job ran more than once", guarantee.runs.name()))
        }
        Fate::Disagreement => Some(format!("{name}'s own state ({}) contradicts what ran", state.status)),
        _ => None,
    }
}

/// Every job's fate, in the order `keys` gives (the enqueue order).
pub fn job_fates(
    keys: &[String],
    records: &[EffectRecord],
    states: &BTreeMap<String, LibraryState>,
    guarantee: &Guarantee,
    name: &str,
) -> Vec<JobFate> {
    let missing = || LibraryState { status: "missing".into(), places: None, reason: None };
    keys.iter().map(|k| fate(k, records, states.get(k).cloned().unwrap_or_else(missing), guarantee, name)).collect()
}

/// Where a FIFO promise is broken: the first pair of jobs whose first starts came in the other
/// order than they were enqueued (`fates` in enqueue order). None where it holds.
pub fn order_broken(fates: &[JobFate]) -> Option<(String, String)> {
    let firsts: Vec<(&str, u64)> =
        fates.iter().filter_map(|f| f.executions.first().map(|e| (f.key.as_str(), e.start_ns))).collect();
    firsts.windows(2).find(|w| w[1].1 < w[0].1).map(|w| (w[0].0.to_string(), w[1].0.to_string()))
}

/// What a stuck job is waiting for, by the library's docs (English).
pub fn recovery_words(recovery: Option<&Recovery>) -> String {
    match recovery {
        Some(r) => format!("the library's documented recovery: after {} s, {}", r.after_s, r.how),
        None => "the library documents no recovery".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side_effect::EffectOutcome;

    const MOST: Guarantee =
        Guarantee { runs: Runs::AtMostOnce, silent_loss: false, fifo: false, forgets_completed: false };
    const LEAST: Guarantee =
        Guarantee { runs: Runs::AtLeastOnce, silent_loss: false, fifo: false, forgets_completed: false };

    fn rec(job: &str, effect: &str, worker: u32, attempt: u32, ms: u64) -> EffectRecord {
        EffectRecord {
            request_id: ms as i64,
            job: job.into(),
            effect: effect.into(),
            idem_key: None,
            actor: Actor::Worker(worker),
            delivery: Some(attempt),
            mono_ns: ms * 1_000_000,
            outcome: EffectOutcome::Applied,
            replay_of: None,
            fault: None,
        }
    }

    fn state(status: &str, places: &[&str]) -> LibraryState {
        LibraryState {
            status: status.into(),
            places: Some(places.iter().map(|p| p.to_string()).collect()),
            reason: None,
        }
    }

    fn one(records: &[EffectRecord], s: LibraryState, g: Guarantee) -> JobFate {
        fate("j", records, s, &g, "lib")
    }

    #[test]
    fn a_job_that_ran_to_its_end_once_and_is_completed_ran_once() {
        let f = one(&[rec("j", START, 1, 1, 0), rec("j", END, 1, 1, 200)], state("finished", &["finished:q"]), MOST);
        assert_eq!((f.fate, f.ends(), f.breaks), (Fate::Once, 1, None));
    }

    #[test]
    fn a_job_that_never_ran_and_is_held_nowhere_is_lost_and_breaks_a_no_silent_loss_promise() {
        let f = one(&[], state("queued", &[]), MOST);
        assert_eq!(f.fate, Fate::Lost);
        let why = f.breaks.unwrap();
        assert!(why.contains("says queued, held in no queue or registry"), "{why}");
        let documented = Guarantee { silent_loss: true, ..MOST };
        assert_eq!(one(&[], state("missing", &[]), documented).breaks, None, "Sidekiq documents it");
        // Killed mid-handler and never run again: started, no end, nowhere.
        assert_eq!(one(&[rec("j", START, 1, 1, 0)], state("started", &[]), MOST).fate, Fate::Lost);
    }

    #[test]
    fn a_job_the_library_still_holds_is_stuck_not_lost() {
        let f = one(&[], state("queued", &["intermediate:default"]), MOST);
        assert_eq!((f.fate, f.breaks), (Fate::Stuck, None));
        let f = one(
            &[rec("j", START, 1, 1, 0)],
            LibraryState { status: "active".into(), places: None, reason: None },
            LEAST,
        );
        assert_eq!(f.fate, Fate::Stuck, "an adapter that names no places: the status decides");
    }

    #[test]
    fn a_job_the_library_failed_is_reported_not_silent() {
        let f = one(&[rec("j", START, 1, 1, 0)], state("failed", &["failed:default"]), MOST);
        assert_eq!((f.fate, f.breaks), (Fate::Failed, None));
    }

    #[test]
    fn duplicates_are_sequential_or_overlapping_and_break_only_at_most_once() {
        let seq = [rec("j", START, 1, 1, 0), rec("j", START, 2, 2, 500), rec("j", END, 2, 2, 700)];
        let f = one(&seq, state("finished", &["finished:q"]), MOST);
        assert_eq!(f.fate, Fate::DuplicateSequential);
        assert!(f.breaks.unwrap().contains("at-most-once"));
        let both =
            [rec("j", START, 1, 1, 0), rec("j", START, 2, 1, 100), rec("j", END, 1, 1, 300), rec("j", END, 2, 1, 400)];
        let f = one(&both, state("completed", &[]), LEAST);
        assert_eq!((f.fate, f.breaks), (Fate::DuplicateOverlapping, None), "at-least-once allows it: reported only");
        let exactly = Guarantee { runs: Runs::ExactlyOnce, ..LEAST };
        assert!(one(&both, state("completed", &[]), exactly).breaks.unwrap().contains("promises exactly-once"));
        // Back to back on one worker: sequential.
        let back =
            [rec("j", START, 1, 1, 0), rec("j", END, 1, 1, 100), rec("j", START, 1, 2, 100), rec("j", END, 1, 2, 200)];
        assert_eq!(one(&back, state("finished", &[]), LEAST).fate, Fate::DuplicateSequential);
    }

    #[test]
    fn a_run_cut_short_then_run_again_is_a_sequential_duplicate() {
        // Sidekiq past its shutdown timeout: W1 started, was killed (no end), W2 ran it whole,
        // even while W1 was not yet dead: an execution with no end overlaps nothing.
        let cut = [rec("j", START, 1, 1, 0), rec("j", START, 2, 1, 50), rec("j", END, 2, 1, 300)];
        let f = one(&cut, state("missing", &[]), Guarantee { silent_loss: true, forgets_completed: true, ..LEAST });
        assert_eq!((f.fate, f.ends(), f.breaks), (Fate::DuplicateSequential, 1, None));
        assert_eq!(f.executions.len(), 2);
        // The same under an at-most-once promise breaks it.
        assert!(one(&cut, state("finished", &[]), MOST).breaks.is_some_and(|b| b.contains("more than once")));
    }

    #[test]
    fn the_library_contradicting_what_ran_is_a_disagreement_either_way() {
        let f = one(&[], state("finished", &["finished:q"]), LEAST);
        assert_eq!(f.fate, Fate::Disagreement);
        assert!(f.breaks.unwrap().contains("(finished) contradicts"));
        let ran = [rec("j", START, 1, 1, 0), rec("j", END, 1, 1, 10)];
        assert_eq!(one(&ran, state("failed", &["failed:q"]), LEAST).fate, Fate::Disagreement);
    }

    #[test]
    fn an_end_pairs_only_with_its_own_workers_start_of_the_same_attempt() {
        let r = [rec("j", START, 1, 1, 0), rec("j", END, 2, 1, 50), rec("j", START, 2, 2, 60), rec("j", END, 2, 2, 90)];
        let e = executions("j", &r);
        assert_eq!(e.iter().map(|e| e.end_ns.map(|n| n / 1_000_000)).collect::<Vec<_>>(), [None, Some(90)]);
    }

    #[test]
    fn a_planned_failure_retried_is_once_not_a_duplicate() {
        let retried =
            [rec("j", START, 1, 1, 0), rec("j", FAIL, 1, 1, 10), rec("j", START, 1, 2, 20), rec("j", END, 1, 2, 30)];
        let f = one(&retried, state("completed", &[]), MOST);
        assert_eq!((f.fate, f.ends(), f.planned_failures(), f.breaks), (Fate::Once, 1, 1, None));
        // Failed on purpose, never tried again, and the library still holds it in retry.
        let f = one(&retried[..2], state("retry", &["retry:q"]), MOST);
        assert_eq!((f.fate, f.ends()), (Fate::Stuck, 0));
        // Failed on purpose, then run twice: the two runs are the duplicate.
        let twice = [
            rec("j", START, 1, 1, 0),
            rec("j", FAIL, 1, 1, 10),
            rec("j", START, 1, 2, 20),
            rec("j", END, 1, 2, 30),
            rec("j", START, 2, 3, 40),
            rec("j", END, 2, 3, 50),
        ];
        assert_eq!(one(&twice, state("completed", &[]), LEAST).fate, Fate::DuplicateSequential);
    }

    #[test]
    fn a_library_that_forgets_completed_jobs_is_judged_by_the_ledger() {
        let sidekiq = Guarantee { silent_loss: true, forgets_completed: true, ..MOST };
        let ran = [rec("j", START, 1, 1, 0), rec("j", END, 1, 1, 10)];
        assert_eq!(one(&ran, state("missing", &[]), sidekiq).fate, Fate::Once);
        let f = one(&[], state("missing", &[]), sidekiq);
        assert_eq!((f.fate, f.breaks), (Fate::Lost, None), "documented: lost, not a broken promise");
        assert_eq!(one(&ran, state("missing", &[]), MOST).fate, Fate::Disagreement, "RQ keeps its records");
    }

    #[test]
    fn a_stuck_job_names_the_library_s_documented_recovery() {
        let r = Recovery { after_s: 14_400.0, how: "unlocks the job".into() };
        assert_eq!(recovery_words(Some(&r)), "the library's documented recovery: after 14400 s, unlocks the job");
        assert_eq!(recovery_words(None), "the library documents no recovery");
        let f = one(&[rec("j", START, 1, 1, 0)], state("locked", &["locked_by:W1"]), LEAST);
        assert_eq!((f.fate, f.breaks), (Fate::Stuck, None));
    }

    #[test]
    fn fifo_is_broken_where_a_later_job_started_first() {
        let f = |k: &str, ms| fate(k, &[rec(k, START, 1, 1, ms)], state("finished", &[]), &LEAST, "lib");
        assert_eq!(order_broken(&[f("a", 0), f("b", 10)]), None);
        assert_eq!(order_broken(&[f("a", 10), f("b", 0)]), Some(("a".into(), "b".into())));
        let states = BTreeMap::new();
        let missing = job_fates(&["x".into()], &[], &states, &MOST, "lib");
        assert_eq!((missing[0].fate, missing[0].state.status.as_str()), (Fate::Lost, "missing"));
    }
}
