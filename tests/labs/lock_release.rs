//! The lock lab's release on both Redis generations: `DELEX key IFEQ token` on Redis ≥ 8.4 and
//! the Lua compare-and-delete before it. Each test needs its server, so both are ignored by
//! default; `just test` runs each one whose server is at hand (`ORDLAB_REDIS8`: the build of
//! `scripts/build-redis8.sh`; `ORDLAB_REDIS7`: the system's redis-server when it is older than
//! 8.4) and prints "NOT TESTED: …" for the other. Run without their server, they fail and say
//! what is missing.

use super::support;
use ordlab::handler::order::events::HandlerEvent;

fn server(var: &str, what: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("no {what} server: set {var} to its redis-server"))
}

/// Runs lock/s4c (TTL shorter than the job) on `server` and returns every run's lock releases
/// as (method, released), with the report's header fields.
fn lock_releases(server: &str) -> (String, String, Vec<Vec<(String, i64)>>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .env("ORDLAB_REDIS_SERVER", server)
        .args(["run", "lock", "--variant", "s4c", "--runs", "3", "--time-scale", "0.5", "--format", "json"])
        .args(["--backend", "local", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: ordlab::report::LabReport = serde_json::from_slice(&out.stdout).unwrap();
    let runs = report.variants[0]
        .run_records
        .iter()
        .map(|r| {
            r.events
                .iter()
                .filter_map(|e| match e.kind.family::<HandlerEvent>().as_ref() {
                    Some(HandlerEvent::LockReleased { method, released, .. }) => Some((method.clone(), *released)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    (report.environment.redis_version, report.environment.lock_release, runs)
}

/// Two releases per run, all by `method`; the created job's lock (TTL 500 ms < 800 ms of work)
/// has always expired by then, so its release answers 0.
fn assert_releases(runs: &[Vec<(String, i64)>], method: &str) {
    assert_eq!(runs.len(), 3);
    for (i, releases) in runs.iter().enumerate() {
        assert_eq!(releases.len(), 2, "run {}: {releases:?}", i + 1);
        assert!(releases.iter().all(|(m, _)| m == method), "run {}: {releases:?}", i + 1);
        assert!(releases.iter().any(|(_, n)| *n == 0), "run {}: {releases:?}", i + 1);
    }
}

#[test]
#[ignore = "needs a Redis ≥ 8.4 server: set ORDLAB_REDIS8 (just test does when one is built)"]
fn delex_releases_a_lock_only_while_it_is_ours() {
    let (version, lock_release, runs) = lock_releases(&server("ORDLAB_REDIS8", "Redis ≥ 8.4"));
    assert!(version.starts_with('8') || version.starts_with('9'), "{version}");
    assert_eq!(lock_release, "DELEX IFEQ");
    assert_releases(&runs, "DELEX IFEQ");
}

#[test]
#[ignore = "needs a Redis 7 server: set ORDLAB_REDIS7 (just test does with the system's redis-server)"]
fn lua_releases_a_lock_only_while_it_is_ours() {
    let (version, lock_release, runs) = lock_releases(&server("ORDLAB_REDIS7", "Redis older than 8.4"));
    assert!(version.starts_with("7.") || version.starts_with("6."), "{version}");
    assert_eq!(lock_release, "Lua compare-and-delete (no DELEX before Redis 8.4)");
    assert_releases(&runs, "Lua compare-and-delete");
}
