//! Seed 003's server advice, measured on servers of the run's own: `persistence` (SIGKILL and a
//! restart on the same files, per persistence mode) and `eviction` (a full Redis under each
//! `maxmemory-policy`). Each test runs its lab as the snapshot does (time scale 1, a few runs,
//! seed 1), checks the snapshots in both languages, and asserts only what cannot fail by chance.

use super::core_labs::assert_snapshots;
use super::support::{self, variant};
use ordlab::checker::Verdict;
use ordlab::labs::Observed;
use ordlab::list_queue::events::ListEvent;
use ordlab::report::VariantReport;
use ordlab::timeline::EventKind;

fn each_run(v: &VariantReport) -> impl Iterator<Item = &ordlab::labs::RunRecord> {
    v.run_records.iter()
}

#[tokio::test]
async fn persistence_loses_acknowledged_jobs_unless_every_write_is_synced() {
    let report = support::snapshot_run("persistence").await;
    assert_snapshots(&report);
    let durability = |v: &VariantReport| -> Vec<ordlab::labs::durability::checker::Durability> {
        each_run(v)
            .map(|r| match &r.observed {
                Observed::Persistence(o) => o.durability(),
                other => panic!("a persistence run observed {}", other.kind()),
            })
            .collect()
    };
    for id in ["none", "rdb-defaults"] {
        for d in durability(variant(&report, id)) {
            // Nothing reached the disk: the restarted server is empty.
            assert!(d.acked > 0, "{id}: the producer pushed nothing");
            assert_eq!((d.held, d.lost_acked.len() as u32), (0, d.acked), "{id}");
        }
    }
    // RDB loses what came after the last fork. A run loses nothing only if the kill falls
    // within one push (~0.2 ms) after a fork: about 1 in 20000 runs (scenario file).
    for d in durability(variant(&report, "rdb")) {
        assert!(!d.lost_acked.is_empty(), "rdb lost nothing: {d:?}");
    }
    // AOF always: the reply comes after write + fsync; everything acknowledged is back.
    for d in durability(variant(&report, "aof-always")) {
        assert!(d.acked > 0);
        assert!(d.lost_acked.is_empty(), "aof-always lost {:?}", d.lost_acked);
        assert!(d.held >= d.acked);
    }
    for v in &report.variants {
        assert_eq!(v.unknown, 0, "{}: a run could not be judged", v.id);
        for r in each_run(v) {
            let kinds: Vec<&EventKind> = r.events.iter().map(|e| &e.kind).collect();
            assert!(
                matches!(kinds[..], [EventKind::ServerKilled { .. }, second] if matches!(second.family::<ListEvent>(), Some(ListEvent::ServerRestarted { .. }))),
                "{} run {}: {kinds:?}",
                v.id,
                r.run
            );
        }
    }
}

#[tokio::test]
async fn eviction_deletes_queued_jobs_under_allkeys_and_refuses_under_the_others() {
    let report = support::snapshot_run("eviction").await;
    assert_snapshots(&report);
    let observed = |v: &VariantReport| -> Vec<ordlab::labs::durability::eviction::EvictionObserved> {
        each_run(v)
            .map(|r| match &r.observed {
                Observed::Eviction(o) => o.clone(),
                other => panic!("an eviction run observed {}", other.kind()),
            })
            .collect()
    };
    // allkeys-*: the memory cannot hold 20000 jobs (~4.6 MB in a 2 MiB budget) and almost
    // every push is acknowledged (Redis 7.0 refuses none; 8.6 a few around an eviction):
    // acknowledged jobs are gone, by arithmetic.
    for id in ["allkeys-lru", "allkeys-lru-job-keys"] {
        for o in observed(variant(&report, id)) {
            let d = o.durability();
            assert!(d.acked > 15000 && d.acked + d.refused == 20000, "{id}: {} acked, {} refused", d.acked, d.refused);
            assert!(!d.lost_acked.is_empty(), "{id}");
        }
    }
    // One list: it went whole, at least once, and the jobs that went are the oldest.
    for o in observed(variant(&report, "allkeys-lru")) {
        assert!(!o.queue_evictions.is_empty());
        let d = o.durability();
        assert_eq!(d.lost_acked[0], "job-000001");
    }
    // volatile-lru and noeviction: the producer is told (OOM), nothing acknowledged is lost.
    for id in ["volatile-lru", "noeviction"] {
        for o in observed(variant(&report, id)) {
            let d = o.durability();
            assert!(d.refused > 0, "{id}: never refused");
            assert!(d.lost_acked.is_empty(), "{id}: lost {:?}", &d.lost_acked[..3.min(d.lost_acked.len())]);
            assert!(o.first_refusal.as_deref().unwrap().starts_with("OOM command not allowed"), "{id}");
        }
    }
    // volatile-lru makes room by evicting the cache (keys with a TTL) before it refuses;
    // noeviction keeps every cache key.
    assert!(observed(variant(&report, "volatile-lru")).iter().all(|o| o.cache_left == 0));
    assert!(observed(variant(&report, "noeviction")).iter().all(|o| o.cache_left == 2000));
    let wrong =
        |id: &str| variant(&report, id).run_records.iter().filter(|r| r.verdict.verdict == Verdict::Wrong).count();
    assert_eq!((wrong("volatile-lru"), wrong("noeviction")), (0, 0));
}
