//! The `failover` lab: a primary and an asynchronous replica, the replica's link cut, the
//! primary killed, the replica promoted. Asserted only what cannot fail by chance.

use super::support::{self, stream};
use ordlab::checker::{Outcome, Verdict};
use ordlab::report::{RunRecord, VariantReport};
use ordlab::timeline::EventKind;

fn fact(v: &VariantReport, r: &RunRecord, k: &str) -> i64 {
    let facts = support::facts(v, r);
    *facts.get(k).unwrap_or_else(|| panic!("run {} has no fact {k}: {facts:?}", r.run))
}

#[tokio::test]
async fn failover_loses_acknowledged_entries_and_cas_keeps_the_state() {
    let report = support::run_lab("failover", 2, 0.5, 7).await;
    let variant = |id: &str| -> &VariantReport { report.variants.iter().find(|v| v.id == id).unwrap() };
    for v in &report.variants {
        // Every run judged: nothing timed out, no process died unplanned.
        assert_eq!(v.unknown, 0, "{}: {:?}", v.id, v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>());
        for r in &v.run_records {
            // The 30 events after the cut were XADDed after the replica's REPLICAOF to a
            // closed port had returned: the replica cannot have them, and the primary
            // confirmed each one, so exactly those 30 are lost.
            assert_eq!(fact(v, r, "in_flight_entries"), 30, "{} run {}", v.id, r.run);
            assert_eq!(fact(v, r, "lost_entries"), 30, "{} run {}", v.id, r.run);
            // The primary was killed only once every entry was acknowledged: all 30 were
            // applied and acked before they vanished.
            assert_eq!(fact(v, r, "lost_acked_entries"), 30, "{} run {}", v.id, r.run);
            assert!(fact(v, r, "behind_bytes") > 0);
            // Whatever the replica had not seen acknowledged and the new consumers received
            // again is part of what it had not seen acknowledged.
            assert!(fact(v, r, "redelivered") <= fact(v, r, "acks_lost"));
            let kinds: Vec<&EventKind> = r.events.iter().map(|e| &e.kind).collect();
            assert!(kinds.iter().any(|k| matches!(k, EventKind::LagWindow { .. })));
            assert!(kinds.iter().any(|k| matches!(k, EventKind::ServerKilled { .. })));
            assert!(kinds.iter().any(|k| matches!(k, EventKind::ReplicaPromoted { .. })));
            // The last 20 paid events went to the promoted replica and stayed there.
            let paid_after = stream(r).iter().filter(|e| e.job.event_type == "paid").count();
            assert_eq!(paid_after, 20, "{} run {}", v.id, r.run);
        }
    }
    // CAS: every lost entry had been applied, and each redelivered created is stale (v=1 < 2).
    let cas = variant("cas");
    assert!(cas.run_records.iter().all(|r| r.verdict.verdict == Verdict::Right));
    assert_eq!(cas.outcome, Outcome::Matched);
}
