//! The `failover` lab: a replica behind a link (delay, bandwidth, partition) or on loopback,
//! the primary killed at a random moment per run, the replica promoted; counts read from the
//! promoted replica. Asserted only what cannot fail by chance; the odds are next to each.

use super::core_labs::assert_snapshots;
use super::support::{self, facts, variant};
use ordlab::labs::delivery::failover::{FailoverFacts, FailoverSpec};
use ordlab::report::VariantReport;

fn per_run(v: &VariantReport) -> Vec<FailoverFacts> {
    v.run_records.iter().map(|r| facts::<FailoverSpec>(v, r)).collect()
}

fn median(mut xs: Vec<i64>) -> i64 {
    xs.sort();
    xs[xs.len() / 2]
}

#[tokio::test]
async fn failover_loses_what_the_link_held_and_plain_goes_wrong_where_cas_does_not() {
    let report = support::snapshot_run("failover").await;
    for v in &report.variants {
        let runs = per_run(v);
        // Every run judged: it settled, and no process died unplanned.
        assert_eq!(v.unknown, 0, "{}: {:?}", v.id, v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>());
        // The kill moment is drawn per run (uniform over 800 ms: two equal draws ~1e-3).
        let moments: std::collections::HashSet<i64> = runs.iter().map(|f| f.kill_at_ms).collect();
        assert!(moments.len() > 1, "{}: the same kill moment in every run", v.id);
        for f in &runs {
            // Consumers re-read their own pending entries on the new primary: none is left.
            assert_eq!(f.stuck_pending, 0, "{}: {f:?}", v.id);
            assert!(f.lost_entries <= f.confirmed, "{}: {f:?}", v.id);
        }
    }
    let lost = |id: &str| median(per_run(variant(&report, id)).iter().map(|f| f.lost_entries).collect());
    // A 100 ms link at ~400 events/s holds ~40 confirmed entries at any moment; promoted at
    // once, they are lost. Below 20 only if the producer published at half its rate for the
    // whole 100 ms before the kill, in two runs of three.
    assert!(lost("latency-plain") >= 20 && lost("latency-cas") >= 20);
    // Loopback, and a late promotion that lets the wire land: (almost) nothing lost.
    assert!(lost("no-lag") <= 5 && lost("latency-late-promotion") <= 5);
    // Plain goes wrong and something came back. Each run has ~4 createds in their 20 ms
    // handler when the replica's horizon passes; a run with none needs the producer to stall
    // through that window at exactly that moment; three such runs: < 1e-4.
    let plain = per_run(variant(&report, "latency-plain"));
    assert!(plain.iter().map(|f| f.wrong_stale).sum::<i64>() > 0, "{plain:?}");
    assert!(plain.iter().map(|f| f.redelivered_acked + f.redelivered_in_flight).sum::<i64>() > 0);
    // CAS never lowers a version: certain.
    for id in ["no-lag", "latency-cas", "latency-late-promotion"] {
        assert!(per_run(variant(&report, id)).iter().all(|f| f.wrong_stale == 0), "{id}");
    }
    // A 100 KB/s link under a ~140 KB/s stream: the lag grows ~0.25 ms per ms (0.1 leaves
    // room for a producer at 40 % of its rate).
    for f in per_run(variant(&report, "bandwidth-plain")) {
        assert!(f.lag_at_kill_ms * 10 >= f.kill_at_ms, "{f:?}");
    }
    // A 300 ms partition loses what was confirmed meanwhile: ~120 at full rate.
    for f in per_run(variant(&report, "partition-plain")) {
        assert!(f.lost_entries >= 30, "{f:?}");
    }
    assert!(report.matched());
    assert_snapshots(&report);
}
