//! A check graded by exploring it: every order of its processes' steps that can matter is run
//! once ([`crate::exploration`]), and the check is wrong when some class of orders ends wrong
//! ("wrong in 12 of 68 orders"), with the shortest wrong schedule to replay. Sampling misses a
//! narrow window (a check-then-act with no work between its SELECT and its UPDATE); exploring
//! does not.

use super::{GradeError, Mark};
use crate::checker::Verdict;
use crate::exploration::{Exploration, ExploreOptions, Search};
use crate::scenario::{Scenario, Variant};
use crate::service::Services;

/// How much the explorer may do per check.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub max_schedules: usize,
    pub max_steps: usize,
    pub seed: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { max_schedules: 500, max_steps: 300, seed: 1 }
    }
}

/// What exploring a check found.
#[derive(Clone, Debug)]
pub struct ExploredGrade {
    pub classes: usize,
    pub wrong: usize,
    pub unknown: usize,
    /// Each distinct reason of a wrong (or, with none wrong, unknown) class, with how many.
    pub reasons: Vec<(String, usize)>,
    /// The shortest wrong class's schedule and its steps, to replay.
    pub shortest_wrong: Option<(String, Vec<String>)>,
    /// The search stopped at its budget: not every class was run.
    pub incomplete: bool,
    /// Runs cut at the step limit (a retry that never ends): their classes are not counted.
    pub cut_at_bound: usize,
    /// The whole exploration (every class's run).
    pub exploration: Exploration,
}

impl ExploredGrade {
    /// The grade: wrong if a class is; unknown if one is, or the search was cut.
    pub fn mark(&self) -> Mark {
        if self.wrong > 0 {
            Mark::Wrong
        } else if self.unknown > 0 || self.incomplete || self.classes == 0 {
            Mark::Unknown
        } else {
            Mark::Right
        }
    }

    /// `wrong in 12 of 68 orders`, `right in 68 of 68 orders`; `(search cut)` where the search
    /// stopped at its budget.
    pub fn cell(&self, mark: Mark) -> String {
        let n = self.classes;
        let cut = if self.incomplete { " (search cut)" } else { "" };
        match mark {
            Mark::Wrong => format!("wrong in {} of {n} orders{cut}", self.wrong),
            Mark::Right => format!("right in {n} of {n} orders"),
            Mark::Unknown if self.unknown == 0 => format!("unknown: right in {n} orders{cut}"),
            Mark::Unknown => format!("unknown in {} of {n} orders{cut}", self.unknown),
        }
    }

    /// The merged reasons, `×n` where several classes share one.
    pub fn reasons(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.reasons.iter().map(|(r, n)| if *n > 1 { format!("{r} (×{n})") } else { r.clone() }).collect();
        if self.incomplete {
            out.push("the search stopped at its budget: not every order was run".into());
        }
        if self.cut_at_bound > 0 {
            out.push(format!(
                "{} runs were cut at the step limit (a retry that never ends): their orders are not counted",
                self.cut_at_bound
            ));
        }
        out
    }

    fn of(x: Exploration) -> ExploredGrade {
        let (wrong, unknown) = (x.count(Verdict::Wrong), x.count(Verdict::Unknown));
        let which = if wrong > 0 { Verdict::Wrong } else { Verdict::Unknown };
        let reasons = merged(x.classes.iter().filter(|c| c.verdict == which).map(|c| c.reasons.as_slice()));
        let shortest_wrong = x.shortest_wrong().map(|c| (c.schedule.clone(), c.steps.clone()));
        ExploredGrade {
            classes: x.classes.len(),
            wrong,
            unknown,
            reasons,
            shortest_wrong,
            incomplete: x.hit_max_schedules || x.bounded || x.cut_at_bound > 0,
            cut_at_bound: x.cut_at_bound,
            exploration: x,
        }
    }
}

/// Each distinct reason of `classes` with how many classes give it, in the order first given.
fn merged<'a>(classes: impl Iterator<Item = &'a [String]>) -> Vec<(String, usize)> {
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for c in classes {
        for r in c {
            match reasons.iter_mut().find(|(s, _)| s == r) {
                Some(e) => e.1 += 1,
                None => reasons.push((r.clone(), 1)),
            }
        }
    }
    reasons
}

/// A schedule that cannot be matched, with what the worker can do about it.
fn explain(e: crate::error::Error) -> GradeError {
    match e {
        crate::error::Error::Explore(m) if m.contains("the schedule asks for") => GradeError::Run(crate::error::Error::Explore(format!(
            "{m}: a worker must do the same in every order it is stepped in; a random value it sends (a lock token, a UUID) is matched by its shape when it looks random (a UUID, 16+ hex digits, a base64 token), any other must come from ORDLAB_SEED (the same in every schedule)"
        ))),
        other => GradeError::Run(other),
    }
}

/// Explore check `v` of `lab` (the submission's) on `services`.
pub async fn grade(
    services: &Services,
    exe: std::path::PathBuf,
    lab: &Scenario,
    v: &Variant,
    budget: &Budget,
) -> Result<super::CheckGrade, GradeError> {
    let opts = ExploreOptions {
        search: Search::Exhaustive { preemptions: None },
        max_schedules: budget.max_schedules,
        max_steps: budget.max_steps,
        seed: budget.seed,
        reuse_processes: true,
    };
    let (x, _) = crate::exploration::explore(services, exe, lab, v, &opts).await.map_err(explain)?;
    let explored = ExploredGrade::of(x);
    let mark = explored.mark();
    Ok(super::CheckGrade { id: v.id.clone(), mark, runs: None, planned: 0, stopped: None, explored: Some(explored) })
}

/// Replay one schedule of check `v` of `lab`: its class (steps, verdict, run).
pub async fn replay(
    services: &Services,
    exe: std::path::PathBuf,
    lab: &Scenario,
    v: &Variant,
    schedule: crate::exploration::Schedule,
    seed: u64,
) -> Result<crate::exploration::ExploredClass, GradeError> {
    let opts = ExploreOptions {
        search: Search::Replay(schedule),
        max_schedules: 1,
        max_steps: Budget::default().max_steps,
        seed,
        reuse_processes: true,
    };
    let (x, _) = crate::exploration::explore(services, exe, lab, v, &opts).await.map_err(explain)?;
    x.classes.into_iter().next().ok_or_else(|| {
        GradeError::Run(crate::error::Error::Explore("the schedule ended before the run was over".into()))
    })
}

/// A replayed schedule in words: the schedule line first, then each step with its index, and
/// under it what the run recorded after it (a kill, a worker cut, ordlab's own roles' events),
/// so the timeline follows the steps as replayed; then the verdict's reasons.
pub fn render_replay(c: &crate::exploration::ExploredClass, v: &Variant, lang: crate::lang::Lang) -> String {
    use crate::timeline::EventKind;
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "schedule {} ({} {})", c.schedule, c.steps.len(), crate::lang::pick(lang, "steps", "bước"));
    // Each step's own record: the first not yet taken command of its process with its name.
    let events = &c.record.events;
    let mut taken = vec![false; events.len()];
    let mut at: Vec<Option<i64>> = Vec::new();
    for line in &c.steps {
        let mut words = line.split(' ');
        let (who, what) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let found = events.iter().enumerate().position(|(i, e)| {
            !taken[i]
                && crate::explore::schedule::code(e.actor) == who
                && matches!(&e.kind, EventKind::ServerCommand { args, .. }
                    if args.first().and_then(|a| a.split_whitespace().next()).is_some_and(|w| w.eq_ignore_ascii_case(what)))
        });
        if let Some(i) = found {
            taken[i] = true;
        }
        at.push(found.map(|i| events[i].t_us));
    }
    let w = crate::timeline::vocabulary::Wording {
        lang,
        many_orders: false,
        redact: crate::timeline::vocabulary::Redactor::NONE,
    };
    let lines = crate::report::words::timeline_lines(&c.record, &v.procedure, &w, false);
    let mut after: Vec<Vec<String>> = vec![Vec::new(); c.steps.len() + 1];
    for (e, line) in lines {
        if matches!(e.kind, EventKind::ServerCommand { .. }) {
            continue;
        }
        // After the last step recorded no later than it (before the first: index 0).
        let step = at.iter().rposition(|t| t.is_some_and(|t| t <= e.t_us)).map_or(0, |i| i + 1);
        after[step].push(line);
    }
    for line in &after[0] {
        let _ = writeln!(out, "       · {line}");
    }
    for (i, step) in c.steps.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}. {step}", i + 1);
        for line in &after[i + 1] {
            let _ = writeln!(out, "       · {line}");
        }
    }
    let verdict = match c.verdict {
        Verdict::Right => crate::lang::pick(lang, "right", "đúng"),
        Verdict::Wrong => crate::lang::pick(lang, "WRONG", "SAI"),
        Verdict::Unknown => crate::lang::pick(lang, "unknown", "không rõ"),
    };
    let _ = writeln!(out, "{verdict}");
    for r in &c.reasons {
        let _ = writeln!(out, "    → {r}");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn identical_reasons_of_many_classes_are_one_line_with_their_count() {
        let a = ["order 42 ended created (v=1), expected paid".to_string()];
        let b = ["mutual exclusion broken".to_string(), a[0].clone()];
        let m = super::merged([&a[..], &b[..], &a[..]].into_iter());
        assert_eq!(m, [(a[0].clone(), 3), (b[0].clone(), 1)]);
    }
}
