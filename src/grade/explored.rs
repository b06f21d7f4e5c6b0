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

    /// `wrong in 12 of 68 orders`, `right in 68 of 68 orders`.
    pub fn cell(&self, mark: Mark) -> String {
        let n = self.classes;
        match mark {
            Mark::Wrong => format!("wrong in {} of {n} orders", self.wrong),
            Mark::Right => format!("right in {n} of {n} orders"),
            Mark::Unknown => format!("unknown in {} of {n} orders", self.unknown),
        }
    }

    /// The merged reasons, `×n` where several classes share one.
    pub fn reasons(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.reasons.iter().map(|(r, n)| if *n > 1 { format!("{r} (×{n})") } else { r.clone() }).collect();
        if self.incomplete {
            out.push("the search stopped at its budget: not every order was run".into());
        }
        out
    }

    fn of(x: Exploration) -> ExploredGrade {
        let (wrong, unknown) = (x.count(Verdict::Wrong), x.count(Verdict::Unknown));
        let which = if wrong > 0 { Verdict::Wrong } else { Verdict::Unknown };
        let mut reasons: Vec<(String, usize)> = Vec::new();
        for c in x.classes.iter().filter(|c| c.verdict == which) {
            for r in &c.reasons {
                match reasons.iter_mut().find(|(s, _)| s == r) {
                    Some(e) => e.1 += 1,
                    None => reasons.push((r.clone(), 1)),
                }
            }
        }
        let shortest_wrong = x.shortest_wrong().map(|c| (c.schedule.clone(), c.steps.clone()));
        ExploredGrade {
            classes: x.classes.len(),
            wrong,
            unknown,
            reasons,
            shortest_wrong,
            incomplete: x.hit_max_schedules || x.bounded,
            exploration: x,
        }
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
    let (x, _) = crate::exploration::explore(services, exe, lab, v, &opts).await?;
    let explored = ExploredGrade::of(x);
    let mark = explored.mark();
    Ok(super::CheckGrade { id: v.id.clone(), mark, runs: None, planned: 0, stopped: None, explored: Some(explored) })
}
