//! Jobs with side effects under at-least-once delivery (seed 000): `idempotency` (each
//! technique at each crash point), `idem-antipatterns` and `multistep`. Every variant's
//! `setup.expect` is the lab's reading of the seed's code, effect by effect; a measurement
//! that differs makes the run unknown and the variant inconclusive, so `Matched` for every
//! variant checks the whole table. A few cells are named here too, for the reader.
//!
//! Nothing is left to chance: crashes and partner failures are planned per job, one worker
//! runs at a time, and the claimer's 500 ms min-idle is ten times a handler's work. The one
//! race (two workers, two copies of a notification) has the partner take 200 ms while the
//! two state checks are a few ms apart; it would take a 200 ms stall of a runnable process
//! to miss it.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::{Outcome, Verdict};
use ordlab::handler::job::events::JobEvent;
use ordlab::handler::job::events::SkipReason;
use ordlab::labs::{Observed, RunRecord};
use ordlab::report::{LabReport, VariantReport};
use ordlab::side_effect::{EffectOutcome, EffectRecord};
use ordlab::timeline::Actor;

fn ledger(r: &RunRecord) -> &[EffectRecord] {
    match &r.observed {
        Observed::Jobs(o) => &o.ledger,
        other => panic!("not a jobs run: {}", other.kind()),
    }
}

/// Applied effects of `job` (and `effect`) in the sink's ledger, in every run of a variant.
fn applied(v: &VariantReport, job: &str, effect: &str) -> Vec<usize> {
    v.run_records
        .iter()
        .map(|r| {
            ledger(r)
                .iter()
                .filter(|e| e.job == job && e.effect == effect && e.outcome == EffectOutcome::Applied)
                .count()
        })
        .collect()
}

fn all_match(report: &LabReport) {
    for v in &report.variants {
        assert!(
            matches!(v.outcome, Outcome::Matched | Outcome::Skipped),
            "{}: {:?}\n{:#?}",
            v.id,
            v.outcome,
            v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn idempotency_each_technique_at_each_crash_point() {
    let report = support::snapshot_run("idempotency").await;
    all_match(&report);
    // The seed's SET NX claim: a SIGKILL after the claim loses the job; every retry skips it.
    assert!(applied(variant(&report, "set-nx"), "job-1", "email").iter().all(|n| *n == 0));
    // The wrapper deletes its key on an exception, so a lost reply is sent twice.
    assert!(applied(variant(&report, "wrapper"), "job-5", "email").iter().all(|n| *n == 2));
    // The partner's key closes what no key in Redis can: the redelivered e-mail is a replay.
    let sink_key = variant(&report, "sink-key");
    for r in &sink_key.run_records {
        assert_eq!(r.verdict.verdict, Verdict::Right);
        let replay = ledger(r).iter().find(|e| e.job == "job-2" && e.outcome == EffectOutcome::Replayed);
        assert!(replay.is_some_and(|e| e.actor == Actor::Reaper), "run {}: {:?}", r.run, ledger(r));
    }
    // Two workers check the same notification before either marks it sent.
    assert!(applied(variant(&report, "check-state-race"), "job-7", "push").iter().all(|n| *n == 2));
    // XADD … IDMP needs Redis ≥ 8.6 (tests/labs/idmp.rs runs it on both generations).
    assert!(report.environment.redis_version.starts_with('8'), "snapshots are taken on Redis 8");
    assert_snapshots(&report);
}

#[tokio::test]
async fn idem_antipatterns_each_next_to_its_fix() {
    let report = support::snapshot_run("idem-antipatterns").await;
    all_match(&report);
    // The key kept after a failure: the retry skips the job and acknowledges it; nothing is
    // pending and nothing went to a dead-letter queue: the job is gone without a trace.
    let kept = variant(&report, "key-kept");
    for r in &kept.run_records {
        let skipped = r.events.iter().any(|e| {
            e.actor == Actor::Reaper
                && matches!(e.kind.family::<JobEvent>(), Some(JobEvent::JobSkipped { job, reason: SkipReason::AlreadyProcessed }) if job == "job-1")
        });
        assert!(skipped, "run {}", r.run);
        assert!(!r.events.iter().any(|e| matches!(e.kind.family::<JobEvent>(), Some(JobEvent::DeadLettered { .. }))));
        assert_eq!(support::facts::<ordlab::labs::idempotency::jobs::JobsSpec>(kept, r).pending_after_run, 0);
    }
    assert!(applied(variant(&report, "ttl-shorter"), "job-1", "email").iter().all(|n| *n == 2));
    assert_snapshots(&report);
}

#[tokio::test]
async fn multistep_as_written_never_resumes_at_step_two() {
    let report = support::snapshot_run("multistep").await;
    all_match(&report);
    // The retry finds the order completed at step 1 and returns: no e-mail, no partner call.
    let seed = variant(&report, "seed");
    for r in &seed.run_records {
        let returned = r.events.iter().any(|e| {
            e.actor == Actor::Reaper
                && matches!(
                    e.kind.family::<JobEvent>(),
                    Some(JobEvent::JobSkipped { reason: SkipReason::AlreadyDone, .. })
                )
        });
        assert!(returned, "run {}", r.run);
    }
    assert_eq!(applied(seed, "order-42", "partner_api"), vec![0; seed.run_records.len()]);
    let corrected = variant(&report, "corrected");
    assert_eq!(applied(corrected, "order-42", "email"), vec![1; corrected.run_records.len()]);
    assert_eq!(applied(corrected, "order-42", "partner_api"), vec![1; corrected.run_records.len()]);
    assert_snapshots(&report);
}
