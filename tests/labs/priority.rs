//! The priority family of seed 000 as its snapshots run it (time scale 1, the built-in runs),
//! with the figures each verdict rests on. Every assertion holds by Redis semantics or by a
//! margin stated next to it; none depends on a lucky schedule.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::Outcome;
use ordlab::report::{LabReport, VariantReport};

/// A fact of every run of a variant.
fn each(v: &VariantReport, name: &str) -> Vec<i64> {
    v.run_records
        .iter()
        .map(|r| {
            let facts = support::facts(v, r);
            *facts.get(name).unwrap_or_else(|| panic!("{} run {} has no fact {name}: {facts:?}", v.id, r.run))
        })
        .collect()
}

/// Every variant judged and as expected (the scenario states why each cannot miss by chance).
fn all_matched(report: &LabReport) {
    for v in &report.variants {
        let why: Vec<_> = v.run_records.iter().map(|r| &r.verdict).collect();
        assert_eq!((v.unknown, v.outcome), (0, Outcome::Matched), "{}: {why:?}", v.id);
    }
}

#[tokio::test]
async fn priority_strict_starves_low_and_blocks_5000_and_one_call_is_not_strict() {
    let report = support::snapshot_run("priority-strict").await;
    assert_snapshots(&report);
    all_matched(&report);
    let seed = variant(&report, "seed-strict");
    assert!(each(seed, "backlog_lower_before_critical").iter().all(|n| *n == 0), "the seed's loop is strict");
    // The probe went in while C1 sat in XREADGROUP low BLOCK 5000, which only its own stream
    // can end: it waited the rest of the 5 s (the probe comes ≤ 1 s after the block began).
    assert!(
        each(seed, "aligned_probe_wait_ms").iter().all(|ms| *ms >= 4000),
        "{:?}",
        each(seed, "aligned_probe_wait_ms")
    );
    // The trickle's last critical job is published 1560 ms after the low jobs; they go after it.
    assert!(each(seed, "trickle_low_max_wait_ms").iter().all(|ms| *ms >= 1500));
    // One read over all three streams returns 10 critical and 10 low each time, twice.
    let one_call = variant(&report, "one-call");
    assert!(each(one_call, "backlog_lower_before_critical").iter().all(|n| *n == 20));
    assert!(each(one_call, "served_low_while_backlogged").iter().all(|n| *n == 20));
    let fixed = variant(&report, "probe-then-block");
    assert!(each(fixed, "backlog_lower_before_critical").iter().all(|n| *n == 0));
}

#[tokio::test]
async fn priority_weighted_serves_10_5_1_and_the_seed_loop_caps_critical() {
    let report = support::snapshot_run("priority-weighted").await;
    assert_snapshots(&report);
    all_matched(&report);
    for v in &report.variants {
        // Whole reads until a stream runs short: exactly 30 rounds of 10, 5 and 1.
        assert!(each(v, "served_critical_while_backlogged").iter().all(|n| *n == 300), "{}", v.id);
        assert!(each(v, "served_normal_while_backlogged").iter().all(|n| *n == 150), "{}", v.id);
        assert!(each(v, "served_low_while_backlogged").iter().all(|n| *n == 30), "{}", v.id);
    }
    // Critical alone: every round of the seed's loop has two empty reads of at least 100 ms
    // (a BLOCK never returns early without data), so at most 10 jobs per 200 ms.
    let seed = variant(&report, "seed-weighted");
    assert!(
        each(seed, "burst_critical_jobs_per_s").iter().all(|n| *n <= 50),
        "{:?}",
        each(seed, "burst_critical_jobs_per_s")
    );
    // Jobs of 2 / 5 / 50 ms: low has 1 job in 16 but far more of the worker's time (≈ 50 of
    // 95 ms per round; ≥ 15 % as long as the per-job overhead stays under 20 ms).
    let skewed = variant(&report, "cost-skewed");
    assert!(each(skewed, "work_share_low_pct").iter().all(|p| *p >= 15), "{:?}", each(skewed, "work_share_low_pct"));
}

#[tokio::test]
async fn priority_zset_ties_crash_polling_and_aging() {
    let report = support::snapshot_run("priority-zset").await;
    assert_snapshots(&report);
    all_matched(&report);
    for id in ["ties", "ties-skiplist"] {
        let v = variant(&report, id);
        assert!(each(v, "ties_reverse_byte_order").iter().all(|n| *n == 1), "{id}");
        assert!(each(v, "ties_fifo").iter().all(|n| *n == 0), "{id}");
    }
    assert!(each(variant(&report, "crash-after-pop"), "lost").iter().all(|n| *n == 1));
    let reliable = variant(&report, "reliable-pop");
    assert!(each(reliable, "lost").iter().all(|n| *n == 0));
    assert!(each(reliable, "taken_twice").iter().all(|n| *n == 1), "the leased job comes back once");
    // A blocked BZPOPMAX is counted once, when it blocks, before the idle window opens.
    assert!(each(variant(&report, "bzpopmax"), "idle_commands_per_s").iter().all(|n| *n == 0));
    // During the flood 20 critical jobs (score 100) always outrank every low job (10).
    assert!(each(variant(&report, "flood"), "flood_low_max_wait_ms").iter().all(|ms| *ms >= 3000));
}
