//! The priority family of seed 000 as its snapshots run it (time scale 1, the built-in runs),
//! with the figures each verdict rests on. Every assertion holds by Redis semantics or by a
//! margin stated next to it; none depends on a lucky schedule.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::Outcome;
use ordlab::labs::priority::priority::{PriorityFacts, PrioritySpec};
use ordlab::labs::priority::zset::{ZsetFacts, ZsetSpec};
use ordlab::labs::Kind;
use ordlab::report::{LabReport, VariantReport};

/// A fact of every run of a variant of kind `P`; a run that did not measure it fails.
fn each<P: Kind>(v: &VariantReport, fact: impl Fn(&P::Facts) -> Option<i64>) -> Vec<i64> {
    v.run_records
        .iter()
        .map(|r| {
            let facts = support::facts::<P>(v, r);
            fact(&facts).unwrap_or_else(|| panic!("{} run {} did not measure it: {facts:?}", v.id, r.run))
        })
        .collect()
}

/// A fact of every run of a priority variant.
fn streams(v: &VariantReport, fact: impl Fn(&PriorityFacts) -> Option<i64>) -> Vec<i64> {
    each::<PrioritySpec>(v, fact)
}

/// A fact of every run of a sorted-set variant.
fn zset(v: &VariantReport, fact: impl Fn(&ZsetFacts) -> Option<i64>) -> Vec<i64> {
    each::<ZsetSpec>(v, fact)
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
    assert!(streams(seed, |f| f.backlog_lower_before_critical).iter().all(|n| *n == 0), "the seed's loop is strict");
    // The probe went in while C1 sat in XREADGROUP low BLOCK 5000, which only its own stream
    // can end: it waited the rest of the 5 s (the probe comes ≤ 1 s after the block began).
    assert!(
        streams(seed, |f| f.aligned_probe_wait_ms).iter().all(|ms| *ms >= 4000),
        "{:?}",
        streams(seed, |f| f.aligned_probe_wait_ms)
    );
    // The trickle's last critical job is published 1560 ms after the low jobs; they go after it.
    assert!(streams(seed, |f| f.trickle_low_max_wait_ms).iter().all(|ms| *ms >= 1500));
    // One read over all three streams returns 10 critical and 10 low each time, twice.
    let one_call = variant(&report, "one-call");
    assert!(streams(one_call, |f| f.backlog_lower_before_critical).iter().all(|n| *n == 20));
    assert!(streams(one_call, |f| f.served_while_backlogged.map(|s| s[2])).iter().all(|n| *n == 20));
    let fixed = variant(&report, "probe-then-block");
    assert!(streams(fixed, |f| f.backlog_lower_before_critical).iter().all(|n| *n == 0));
}

#[tokio::test]
async fn priority_weighted_serves_10_5_1_and_the_seed_loop_caps_critical() {
    let report = support::snapshot_run("priority-weighted").await;
    assert_snapshots(&report);
    all_matched(&report);
    for v in &report.variants {
        // Whole reads until a stream runs short: exactly 30 rounds of 10, 5 and 1.
        assert!(streams(v, |f| f.served_while_backlogged.map(|s| s[0])).iter().all(|n| *n == 300), "{}", v.id);
        assert!(streams(v, |f| f.served_while_backlogged.map(|s| s[1])).iter().all(|n| *n == 150), "{}", v.id);
        assert!(streams(v, |f| f.served_while_backlogged.map(|s| s[2])).iter().all(|n| *n == 30), "{}", v.id);
    }
    // Critical alone: every round of the seed's loop has two empty reads of at least 100 ms
    // (a BLOCK never returns early without data), so at most 10 jobs per 200 ms.
    let seed = variant(&report, "seed-weighted");
    assert!(
        streams(seed, |f| f.burst_critical_jobs_per_s).iter().all(|n| *n <= 50),
        "{:?}",
        streams(seed, |f| f.burst_critical_jobs_per_s)
    );
    // Jobs of 2 / 5 / 50 ms: low has 1 job in 16 but far more of the worker's time (≈ 50 of
    // 95 ms per round; ≥ 15 % as long as the per-job overhead stays under 20 ms).
    let skewed = variant(&report, "cost-skewed");
    let share = streams(skewed, |f| f.work_share_low_pct);
    assert!(share.iter().all(|p| *p >= 15), "{share:?}");
}

#[tokio::test]
async fn priority_zset_ties_crash_polling_and_aging() {
    let report = support::snapshot_run("priority-zset").await;
    assert_snapshots(&report);
    all_matched(&report);
    for id in ["ties", "ties-skiplist"] {
        let v = variant(&report, id);
        assert!(zset(v, |f| f.ties_reverse_byte_order.map(i64::from)).iter().all(|n| *n == 1), "{id}");
        assert!(zset(v, |f| f.ties_fifo.map(i64::from)).iter().all(|n| *n == 0), "{id}");
    }
    assert!(zset(variant(&report, "crash-after-pop"), |f| Some(f.lost)).iter().all(|n| *n == 1));
    let reliable = variant(&report, "reliable-pop");
    assert!(zset(reliable, |f| Some(f.lost)).iter().all(|n| *n == 0));
    assert!(zset(reliable, |f| Some(f.taken_twice)).iter().all(|n| *n == 1), "the leased job comes back once");
    // A blocked BZPOPMAX is counted once, when it blocks, before the idle window opens.
    assert!(zset(variant(&report, "bzpopmax"), |f| f.idle_commands_per_s).iter().all(|n| *n == 0));
    // During the flood 20 critical jobs (score 100) always outrank every low job (10).
    assert!(zset(variant(&report, "flood"), |f| f.flood_low_max_wait_ms).iter().all(|ms| *ms >= 3000));
}
