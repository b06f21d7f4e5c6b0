//! Running many labs without making a teacher wait: a variant is the unit of work; variants
//! whose outcome depends on the OS scheduler (`scheduler_race`) run first, one at a time,
//! with nothing else of ordlab running, and then every other variant runs `jobs` at a time.
//!
//! Each job slot has servers of its own (one Redis and one PostgreSQL), so concurrent
//! variants share no keys, rows, advisory locks or client lists. A run's random choices come
//! from the seed, the lab, the variant and the run number, never from what ran before, so a
//! report is the same whichever slot ran it and in which order.

use crate::error::Error;
use crate::report::{LabReport, VariantReport};
use crate::runner::{RunOptions, Runner};
use crate::scenario::{Scenario, Variant};
use crate::service::{ServiceOptions, Services};
use crate::timing::{Span, Step};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

/// One variant to run: its lab's index in the list, and the variant.
#[derive(Clone, Copy)]
pub struct Work<'a> {
    pub lab: usize,
    pub variant: &'a Variant,
}

/// The variants `opts` asks for, in catalogue order: (those that must run alone, the others).
pub fn plan<'a>(labs: &'a [Scenario], opts: &RunOptions) -> (Vec<Work<'a>>, Vec<Work<'a>>) {
    let all = labs
        .iter()
        .enumerate()
        .flat_map(|(lab, s)| s.variants.iter().filter(|v| opts.wants(v)).map(move |variant| Work { lab, variant }));
    all.partition(|w| w.variant.scheduler_race || w.variant.timer_race)
}

/// Run `labs` on `jobs` slots (see the module doc); `done` gets each lab's report as soon as
/// its last variant is done. Returns the reports in the order of `labs`.
pub async fn run_labs(
    labs: &[Scenario],
    opts: &RunOptions,
    services: &ServiceOptions,
    jobs: usize,
    exe: PathBuf,
    done: &mut dyn FnMut(&LabReport),
) -> Result<Vec<LabReport>, Error> {
    Ok(run_labs_timed(labs, opts, services, jobs, exe, done).await?.0)
}

/// [`run_labs`], with the spans of every step ([`crate::timing`]): each slot's servers
/// started and stopped, each runner connected, each variant and run.
pub async fn run_labs_timed(
    labs: &[Scenario],
    opts: &RunOptions,
    services: &ServiceOptions,
    jobs: usize,
    exe: PathBuf,
    done: &mut dyn FnMut(&LabReport),
) -> Result<(Vec<LabReport>, Vec<Span>), Error> {
    let (alone, together) = plan(labs, opts);
    let slots = jobs.clamp(1, together.len().max(1));
    let servers = futures::future::try_join_all((0..slots).map(|_| Services::start(services))).await?;
    let slot_span = |step: Step, ms: f64| Span { lab: String::new(), step, ms };
    let mut spans: Vec<Span> =
        servers.iter().map(|s| slot_span(Step::ServerStart, s.start_time.as_secs_f64() * 1000.0)).collect();
    let result = async {
        let mut runners = Vec::with_capacity(slots);
        for s in &servers {
            runners.push(Runner::new(s, exe.clone()).await?);
        }
        let mut finished = Finished::new(labs, opts);
        // Scheduler races first, alone: the other slots' servers sit idle.
        for work in alone {
            let report = runners[0].run_variant(&labs[work.lab], work.variant, opts).await?;
            finished.add(work, report, &runners[0], done);
        }
        let queue = RefCell::new(VecDeque::from(together));
        let finished = RefCell::new(finished);
        let done = RefCell::new(done);
        let slot_loops = runners.iter_mut().map(|runner| {
            let (queue, finished, done) = (&queue, &finished, &done);
            async move {
                loop {
                    let Some(work) = queue.borrow_mut().pop_front() else { return Ok::<(), Error>(()) };
                    let report = runner.run_variant(&labs[work.lab], work.variant, opts).await?;
                    finished.borrow_mut().add(work, report, runner, &mut **done.borrow_mut());
                }
            }
        });
        futures::future::try_join_all(slot_loops).await?;
        let ran: Vec<Span> = runners.iter_mut().flat_map(Runner::take_spans).collect();
        Ok::<_, Error>((finished.into_inner().into_reports(), ran))
    }
    .await;
    for s in servers {
        let stopping = std::time::Instant::now();
        s.stop().await;
        spans.push(slot_span(Step::ServerStop, crate::timing::ms_since(stopping)));
    }
    let (reports, ran) = result?;
    spans.extend(ran);
    Ok((reports, spans))
}

/// Variant reports as they come in, put together into lab reports.
struct Finished<'a> {
    labs: &'a [Scenario],
    opts: &'a RunOptions,
    /// Variant reports per lab, keyed by the variant's place in the lab.
    parts: Vec<BTreeMap<usize, VariantReport>>,
    /// How many variants each lab waits for.
    expected: Vec<usize>,
    reports: Vec<Option<LabReport>>,
}

impl<'a> Finished<'a> {
    fn new(labs: &'a [Scenario], opts: &'a RunOptions) -> Finished<'a> {
        let expected = labs.iter().map(|l| l.variants.iter().filter(|v| opts.wants(v)).count()).collect();
        Finished { labs, opts, parts: vec![BTreeMap::new(); labs.len()], expected, reports: vec![None; labs.len()] }
    }

    fn add(&mut self, work: Work<'_>, report: VariantReport, runner: &Runner<'_>, done: &mut dyn FnMut(&LabReport)) {
        let lab = &self.labs[work.lab];
        let place = lab.variants.iter().position(|v| v.id == work.variant.id).unwrap_or(usize::MAX);
        self.parts[work.lab].insert(place, report);
        if self.parts[work.lab].len() == self.expected[work.lab] {
            let variants = std::mem::take(&mut self.parts[work.lab]).into_values().collect();
            let report = runner.lab_report(lab, variants, self.opts);
            done(&report);
            self.reports[work.lab] = Some(report);
        }
    }

    fn into_reports(self) -> Vec<LabReport> {
        self.reports.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_races_run_alone_and_the_rest_in_catalogue_order() {
        let labs = crate::catalog::all().unwrap();
        let opts = RunOptions::new(1.0, 1);
        let (alone, together) = plan(&labs, &opts);
        assert!(!alone.is_empty() && !together.is_empty());
        // A race of timers (a client's socket timeout against a BLOCK) runs alone too.
        let races = |w: &&Work| w.variant.scheduler_race || w.variant.timer_race;
        assert!(alone.iter().all(|w| races(&w)));
        assert!(alone.iter().any(|w| w.variant.timer_race));
        assert!(together.iter().all(|w| !races(&w)));
        let total: usize = labs.iter().map(|l| l.variants.len()).sum();
        assert_eq!(alone.len() + together.len(), total);
        let order: Vec<usize> = together.iter().map(|w| w.lab).collect();
        assert!(order.windows(2).all(|p| p[0] <= p[1]), "catalogue order");
    }

    #[test]
    fn one_variant_asked_for_is_the_only_work() {
        let labs = vec![crate::catalog::find("lock").unwrap()];
        let mut opts = RunOptions::new(1.0, 1);
        opts.variant = Some("s4c".into());
        let (alone, together) = plan(&labs, &opts);
        let ids: Vec<&str> = alone.iter().chain(&together).map(|w| w.variant.id.as_str()).collect();
        assert_eq!(ids, ["s4c"]);
    }
}
