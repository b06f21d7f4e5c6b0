//! The Redis 8 paths: locks released with `DELEX key IFEQ token` instead of the Lua
//! compare-and-delete (≥ 8.4), and `XADD … IDMP` (≥ 8.6). Needs a Redis 8 server, so these tests are ignored by default and
//! `just test` runs them when `ORDLAB_REDIS8` names one (`../shared/tools/build-redis8.sh`
//! builds it; `.ci/run` tries). Run without one, they fail and say what is missing.

use super::support;
use ordlab::timeline::EventKind;

fn redis8() -> String {
    std::env::var("ORDLAB_REDIS8").unwrap_or_else(|_| {
        panic!(
            "no Redis ≥ 8.4 server: set ORDLAB_REDIS8 to its redis-server (../shared/tools/build-redis8.sh builds one)"
        )
    })
}

#[test]
#[ignore = "needs a Redis ≥ 8.4 server: set ORDLAB_REDIS8 (just test does when one is built)"]
fn delex_releases_a_lock_only_while_it_is_ours() {
    let server = redis8();
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .env("ORDLAB_REDIS_SERVER", &server)
        .args(["run", "lock", "--variant", "s4c", "--runs", "3", "--time-scale", "0.5", "--format", "json"])
        .args(["--backend", "local", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: ordlab::report::LabReport = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.environment.redis_version.starts_with('8'), "{}", report.environment.redis_version);
    assert_eq!(report.environment.lock_release, "DELEX IFEQ");
    for r in &report.variants[0].run_records {
        let releases: Vec<(String, i64)> = r
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::LockReleased { method, released, .. } => Some((method.clone(), *released)),
                _ => None,
            })
            .collect();
        // Two releases per run, both by DELEX IFEQ; the created job's lock (TTL 500 ms < 800 ms
        // of work) has always expired by then: its release answers 0.
        assert_eq!(releases.len(), 2, "run {}", r.run);
        assert!(releases.iter().all(|(m, _)| m == "DELEX IFEQ"));
        assert!(releases.iter().any(|(_, n)| *n == 0), "run {}: {releases:?}", r.run);
    }
}

/// `idempotency --variant <id>` on the Redis 8 server, as JSON.
fn idempotency_on_redis8(variant: &str) -> ordlab::report::LabReport {
    let server = redis8();
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .env("ORDLAB_REDIS_SERVER", &server)
        .args(["run", "idempotency", "--variant", variant, "--runs", "1", "--format", "json"])
        .args(["--backend", "local", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{variant}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The stream a jobs run left: (entry ID, job).
fn job_stream(report: &ordlab::report::LabReport) -> Vec<(String, String)> {
    match &report.variants[0].run_records[0].observed {
        ordlab::labs::Observed::Jobs(o) => o.stream.clone(),
        other => panic!("not a jobs run: {}", other.kind()),
    }
}

#[test]
#[ignore = "needs a Redis ≥ 8.6 server: set ORDLAB_REDIS8 (just test does when one is built)"]
fn xadd_idmp_answers_a_resend_with_the_same_id_until_it_forgets() {
    // job-1 is resent at once, job-2 after six other jobs' sends.
    let kept = idempotency_on_redis8("idmp");
    assert!(kept.environment.redis_version.starts_with('8'), "{}", kept.environment.redis_version);
    let entries = job_stream(&kept);
    assert_eq!(entries.len(), 8, "one entry per job: {entries:?}");
    let resent = kept.variants[0].run_records[0]
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::JobPublished { attempt: 2, same_id: true, .. }));
    assert_eq!(resent.count(), 2, "both resends got the ID already given");
    // IDMP-MAXSIZE 5: by the time job-2 is resent its id is forgotten: a second entry.
    let forgot = idempotency_on_redis8("idmp-forgets");
    let entries = job_stream(&forgot);
    assert_eq!(entries.iter().filter(|(_, j)| j == "job-2").count(), 2, "{entries:?}");
    assert_eq!(entries.iter().filter(|(_, j)| j == "job-1").count(), 1, "{entries:?}");
}
