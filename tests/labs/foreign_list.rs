//! A list worker from a command line: seed 003's Node worker (ioredis) beside ordlab's own, in
//! list-crash's and list-retry's situations, recorded at the wire and judged by the same
//! checkers (the ledger's effect counts, what is left in each list).
//!
//! Each pair of variants must agree run for run: the crash is at a command boundary (the
//! BRPOPLPUSH reply, after the server moved the job), the refusal is the partner's first
//! request for the job. The test needs node with examples/node's ioredis (`just setup`
//! installs it); where it is missing, it says NOT TESTED and why, and CI installs it.

use super::support;
use ordlab::labs::list_queue::list_queue::{ListQueueObserved, ListQueueSpec};
use ordlab::labs::Observed;
use ordlab::timeline::EventKind;

/// Why node with the examples' ioredis cannot be used here, if so.
pub(super) fn node_missing() -> Option<String> {
    let check = "require('./examples/node/node_modules/ioredis')";
    match std::process::Command::new("node").args(["-e", check]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            Some(String::from_utf8_lossy(&o.stderr).lines().find(|l| l.contains("Error")).unwrap_or("").to_string())
        }
        Err(e) => Some(format!("node: {e}")),
    }
}

#[tokio::test]
async fn the_seed_s_node_list_worker_reaches_the_verdicts_of_ordlab_s_own() {
    if !support::has_runtime("node with ioredis (cd examples/node && npm install)", node_missing()) {
        return;
    }
    let report = support::snapshot_run("foreign-list").await;
    super::core_labs::assert_snapshots(&report);
    for situation in ["killed-after-take", "no-crash", "refused"] {
        let own = support::variant(&report, &format!("ordlab-{situation}"));
        let node = support::variant(&report, &format!("node-{situation}"));
        assert_eq!(
            (node.wrong, node.unknown),
            (own.wrong, own.unknown),
            "{situation}: {:?}",
            node.run_records[0].verdict
        );
        assert_eq!(own.unknown, 0, "{situation}: {:?}", own.run_records[0].verdict);
        let want = if situation == "no-crash" { 0 } else { own.run_records.len() as u32 };
        assert_eq!(own.wrong, want, "{situation}");
        for (o, n) in own.run_records.iter().zip(&node.run_records) {
            let (fo, fn_) = (support::facts::<ListQueueSpec>(own, o), support::facts::<ListQueueSpec>(node, n));
            assert_eq!(
                (fn_.jobs_lost, fn_.jobs_done_twice, fn_.left_in_processing, fn_.left_in_retry_list),
                (fo.jobs_lost, fo.jobs_done_twice, fo.left_in_processing, fo.left_in_retry_list),
                "{situation} run {}",
                n.run
            );
            let lists = |r: &ordlab::labs::RunRecord| match &r.observed {
                Observed::ListQueue(l) => (l.processing.clone(), l.retry.clone()),
                other => panic!("a list-queue run observed {}", other.kind()),
            };
            assert_eq!(lists(n), lists(o), "{situation} run {}: what is left in processing and queue:retry", n.run);
            // The Node worker's e-mails came over HTTP into the same ledger, as W1/W2.
            let Observed::ListQueue(ListQueueObserved { records, .. }) = &n.observed else { unreachable!() };
            assert!(!records.is_empty() && records.iter().all(|r| r.effect == "email"), "{records:?}");
            // Recorded at the wire: its takes and its LREMs.
            let commands: Vec<&str> = n
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::ServerCommand { args, .. } => args.first().map(String::as_str),
                    _ => None,
                })
                .collect();
            assert!(commands.contains(&"BRPOPLPUSH") && commands.contains(&"LREM"), "{situation}: {commands:?}");
        }
    }
}
