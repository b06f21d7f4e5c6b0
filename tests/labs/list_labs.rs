//! Seed 003's list queue: `list-crash` (a worker dies mid-job with each way of taking a job) and
//! `list-retry` (failures and poison payloads). Each test runs its lab as the snapshot does
//! (time scale 1, three runs, seed 1), checks the snapshots in both languages, and asserts per
//! run what the ledger of the side-effect sink and the lists say — all decided by construction
//! (crash points, gated pushes, the server's clock), not by timing luck; each variant's comment
//! in the scenario file says why.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::Verdict;
use ordlab::labs::list_queue::list_queue::{ListQueueFacts, ListQueueObserved, ListQueueSpec};
use ordlab::labs::Observed;
use ordlab::list_queue::events::ListEvent;
use ordlab::report::{LabReport, VariantReport};

/// Every run's facts of a variant.
fn runs<'a>(report: &'a LabReport, id: &str) -> Vec<(ListQueueFacts, &'a ListQueueObserved)> {
    let v: &VariantReport = variant(report, id);
    assert_eq!(
        v.unknown,
        0,
        "{id}: a run could not be judged: {:?}",
        v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>()
    );
    v.run_records
        .iter()
        .map(|r| match &r.observed {
            Observed::ListQueue(o) => (support::facts::<ListQueueSpec>(v, r), o),
            other => panic!("a list-queue run observed {}", other.kind()),
        })
        .collect()
}

fn wrong_runs(report: &LabReport, id: &str) -> usize {
    variant(report, id).run_records.iter().filter(|r| r.verdict.verdict == Verdict::Wrong).count()
}

#[tokio::test]
async fn list_crash_loses_with_brpop_sticks_with_the_seed_and_a_lease_reaper_trades_loss_for_duplicates() {
    let report = support::snapshot_run("list-crash").await;
    assert_snapshots(&report);
    for (f, o) in runs(&report, "brpop") {
        assert_eq!((f.jobs_lost, f.left_in_processing), (1, 0), "BRPOP: the job was in W1's memory only");
        assert!(o.processing.is_empty());
    }
    // The three jobs go in one pipeline: W1, blocked in its take, takes job-000001 after every
    // push was sent, whatever the runner's scheduling (so the snapshot's order is the true one).
    for id in ["brpop", "seed-brpoplpush"] {
        for r in &variant(&report, id).run_records {
            let at = |pick: &dyn Fn(&ListEvent) -> bool| -> Vec<i64> {
                r.events
                    .iter()
                    .filter(|e| e.kind.family::<ListEvent>().as_ref().is_some_and(pick))
                    .map(|e| e.t_us)
                    .collect()
            };
            let pushes = at(&|e| matches!(e, ListEvent::Pushed { .. }));
            let first_take = at(&|e| matches!(e, ListEvent::Taken { .. }))[0];
            assert!(
                pushes.len() == 3 && pushes.iter().all(|t| *t < first_take),
                "{id} run {}: pushes {pushes:?}, take {first_take}",
                r.run
            );
        }
    }
    for (f, o) in runs(&report, "seed-brpoplpush") {
        assert_eq!((f.jobs_lost, f.left_in_processing), (1, 1));
        assert_eq!(o.processing, ["job-000001"]);
        assert!(
            o.deprecation.as_deref().unwrap_or("").starts_with("brpoplpush deprecated since 6.2.0"),
            "{:?}",
            o.deprecation
        );
    }
    for (f, _) in runs(&report, "lease-reaper") {
        assert_eq!((f.jobs_lost, f.jobs_done_twice, f.left_in_processing), (0, 0, 0));
        assert!(f.requeued.is_some_and(|n| n >= 1));
    }
    for (f, _) in runs(&report, "lease-after-effect") {
        assert_eq!((f.jobs_lost, f.jobs_done_twice), (0, 1), "the e-mail went before the kill and again after");
    }
    for (f, _) in runs(&report, "lease-slow-handler") {
        assert_eq!((f.jobs_lost, f.jobs_done_twice, f.lrem_found_nothing), (0, 1, 1));
    }
    for (f, o) in runs(&report, "lrem-identical") {
        assert_eq!((f.jobs_lost, f.processing_without_lease), (1, Some(1)), "the killed worker's copy has no lease");
        assert_eq!(o.processing, ["rebuild_sitemap"]);
    }
    for (f, _) in runs(&report, "lrem-token") {
        assert_eq!((f.jobs_lost, f.jobs_done_twice, f.processing_without_lease), (0, 0, Some(0)));
    }
    assert_eq!(wrong_runs(&report, "seed-lifo"), 3, "RPUSH + BRPOPLPUSH serve the newest job first");
    assert_eq!(wrong_runs(&report, "lpush-fifo"), 0);
}

#[tokio::test]
async fn list_retry_never_retries_in_the_seed_and_follows_the_backoff_with_a_delayed_set() {
    let report = support::snapshot_run("list-retry").await;
    assert_snapshots(&report);
    for (f, o) in runs(&report, "seed-retry-list") {
        // Both failing jobs wait in queue:retry, which nothing reads; the poison stays in processing.
        assert_eq!(o.retry, ["job-000001", "job-000002"]);
        assert_eq!(o.processing, ["{\"id\":\"job-000003\""]);
        assert_eq!((f.dead_lettered, f.poison_sleeps), (0, Some(1)));
    }
    let v = variant(&report, "backoff-dlq");
    for (r, (f, o)) in v.run_records.iter().zip(runs(&report, "backoff-dlq")) {
        assert_eq!(f.dead_lettered, 2, "job-000002 after 4 attempts, the poison at once");
        assert!(o.dead.iter().any(|d| d.job == "job-000002" && d.reason == "max attempts"));
        assert!(o.dead.iter().any(|d| d.job == "{\"id\":\"job-000003\"" && d.reason == "poison"));
        assert_eq!(r.verdict.verdict, Verdict::Right, "{:?}", r.verdict.reasons);
        // Each retry started no earlier than its backoff (server clock ms vs run clock µs: 2 ms).
        let takes = |job: &str| -> Vec<f64> {
            r.events
                .iter()
                .filter_map(|e| match e.kind.family::<ListEvent>().as_ref() {
                    Some(ListEvent::Taken { job: j, .. }) if j == job => Some(e.t_us as f64 / 1000.0),
                    _ => None,
                })
                .collect()
        };
        let fails = |job: &str| -> Vec<f64> {
            r.events
                .iter()
                .filter_map(|e| match e.kind.family::<ListEvent>().as_ref() {
                    Some(ListEvent::ListJobFailed { job: j, .. }) if j == job => Some(e.t_us as f64 / 1000.0),
                    _ => None,
                })
                .collect()
        };
        for (job, delays) in [("job-000001", vec![200.0, 400.0]), ("job-000002", vec![200.0, 400.0, 800.0])] {
            let (t, fl) = (takes(job), fails(job));
            assert_eq!(t.len(), delays.len() + 1, "{job}: attempts {t:?}");
            for (k, delay) in delays.iter().enumerate() {
                assert!(
                    t[k + 1] - fl[k] >= delay - 2.0,
                    "{job} retry {} after {} ms < {delay}",
                    k + 1,
                    t[k + 1] - fl[k]
                );
            }
        }
    }
    for (f, o) in runs(&report, "seed-poison-with-reaper") {
        let sleeps = f.poison_sleeps.expect("a poison job counts its sleeps");
        assert!(sleeps >= 3, "the poison came back: {sleeps} sleeps");
        assert_eq!(f.jobs_lost, 2, "job-000002 and job-000003 wait behind the poison");
        assert_eq!(o.queue.len() + o.processing.len(), 3);
    }
}
