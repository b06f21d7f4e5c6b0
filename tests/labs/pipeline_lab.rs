//! `pipeline`: the seed's production worker (weighted polling, idempotent wrapper, retry by
//! XAUTOCLAIM, DLQ) against the corrected one, three workers and a claimer, 2200 jobs with
//! poison, partner failures and planned SIGKILLs; the total-queue check over the sink's
//! ledger and the DLQ.
//!
//! What is asserted cannot go either way by chance: an unparseable payload kills whoever
//! parses it before the `try` (the seed), so it can never be dead-lettered; a SIGKILL after
//! the wrapper's SET NX leaves a key that lives a day, so that job's effect can never be
//! applied; the corrected worker's verdict rests on its lease (400 ms) being shorter than the
//! claimer's min-idle (500 ms) and on the partner's key, not on timing.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::{Outcome, Verdict};
use ordlab::fault::HandlerPoint;
use ordlab::labs::idempotency::pipeline::{PipelineObserved, PipelineSpec, Poison};
use ordlab::labs::{Observed, RunRecord};

fn observed(r: &RunRecord) -> &PipelineObserved {
    match &r.observed {
        Observed::Pipeline(o) => o,
        other => panic!("not a pipeline run: {}", other.kind()),
    }
}

fn poisoned(o: &PipelineObserved, poison: Poison) -> Vec<&str> {
    o.jobs.iter().filter(|j| j.poison == Some(poison)).map(|j| j.job.as_str()).collect()
}

/// The jobs killed at `point` (whichever worker reaches it first).
fn killed_at(o: &PipelineObserved, point: HandlerPoint) -> Vec<&str> {
    o.jobs.iter().filter(|j| j.fault == Some(point.kill(&j.job))).map(|j| j.job.as_str()).collect()
}

fn applied(o: &PipelineObserved, job: &str) -> u32 {
    o.applied.iter().filter(|(j, _, _)| j == job).map(|(_, _, n)| n).sum()
}

#[tokio::test]
async fn the_seeds_production_worker_loses_poison_and_claimed_jobs_the_corrected_one_none() {
    let report = support::snapshot_run("pipeline").await;
    for v in &report.variants {
        assert_eq!(
            v.outcome,
            Outcome::Matched,
            "{}: {:#?}",
            v.id,
            v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>()
        );
    }
    for r in &variant(&report, "seed").run_records {
        let o = observed(r);
        let unparseable = poisoned(o, Poison::Unparseable);
        assert!(!unparseable.is_empty());
        // json.loads before the try: the worker dies, the job never reaches the DLQ.
        assert!(o.dlq.iter().all(|d| !unparseable.contains(&d.job.as_str())), "run {}: {:?}", r.run, o.dlq);
        assert!(o.restarts as usize > unparseable.len(), "the claimer dies on it again and again");
        // A SIGKILL after the wrapper's claim: every retry skips the job.
        let killed = killed_at(o, HandlerPoint::AfterClaim);
        assert!(!killed.is_empty());
        for job in killed {
            assert_eq!(applied(o, job), 0, "run {}: {job}", r.run);
        }
    }
    for r in &variant(&report, "corrected").run_records {
        let o = observed(r);
        assert_eq!(r.verdict.verdict, Verdict::Right, "run {}: {:?}", r.run, r.verdict);
        let t = PipelineSpec::tally(o);
        assert_eq!(t.exactly_once + t.dead_lettered, t.jobs);
        let poison = o.jobs.iter().filter(|j| j.is_poison()).count();
        assert_eq!(t.dead_lettered as usize, poison);
        assert_eq!(o.pending_after_run, 0);
    }
    assert_snapshots(&report);
}
