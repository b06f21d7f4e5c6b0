//! `XADD … IDMP` (Redis ≥ 8.6) in the `idempotency` lab: a producer's resend gets the ID it
//! already got, one entry, until the stream has forgotten the id; on Redis 7 the variants are
//! skipped and the report says why. Each test needs its server, so both are ignored by
//! default; `just test` runs each one whose server is at hand (`ORDLAB_REDIS8`,
//! `ORDLAB_REDIS7`) and prints "NOT TESTED: …" for the other.

use super::support;
use ordlab::checker::Outcome;
use ordlab::handler::job::events::JobEvent;
use ordlab::report::LabReport;

fn server(var: &str, what: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("no {what} server: set {var} to its redis-server"))
}

/// `idempotency --variant <id>` on `server`, as JSON.
fn idempotency_on(server: &str, variant: &str) -> LabReport {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .env("ORDLAB_REDIS_SERVER", server)
        .args(["run", "idempotency", "--variant", variant, "--runs", "1", "--format", "json"])
        .args(["--backend", "local", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{variant}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The stream a jobs run left: (entry ID, job).
fn job_stream(report: &LabReport) -> Vec<(String, String)> {
    match &report.variants[0].run_records[0].observed {
        ordlab::labs::Observed::Jobs(o) => o.stream.clone(),
        other => panic!("not a jobs run: {}", other.kind()),
    }
}

#[test]
#[ignore = "needs a Redis ≥ 8.6 server: set ORDLAB_REDIS8 (just test does when one is built)"]
fn on_redis8_a_resend_gets_the_same_id_until_the_stream_forgets_it() {
    let r8 = server("ORDLAB_REDIS8", "Redis ≥ 8.6");
    // job-1 is resent at once, job-2 after six other jobs' sends.
    let kept = idempotency_on(&r8, "idmp");
    assert!(kept.environment.redis_version.starts_with('8'), "{}", kept.environment.redis_version);
    assert_eq!(kept.variants[0].outcome, Outcome::Matched);
    let entries = job_stream(&kept);
    assert_eq!(entries.len(), 8, "one entry per job: {entries:?}");
    let same_id = kept.variants[0].run_records[0].events.iter().filter(|e| {
        matches!(e.kind.family::<JobEvent>(), Some(JobEvent::JobPublished { attempt: 2, same_id: true, .. }))
    });
    assert_eq!(same_id.count(), 2, "both resends got the ID already given");
    // IDMP-MAXSIZE 5: by the time job-2 is resent its id is forgotten: a second entry.
    let forgot = idempotency_on(&r8, "idmp-forgets");
    let entries = job_stream(&forgot);
    assert_eq!(entries.iter().filter(|(_, j)| j == "job-2").count(), 2, "{entries:?}");
    assert_eq!(entries.iter().filter(|(_, j)| j == "job-1").count(), 1, "{entries:?}");
}

#[test]
#[ignore = "needs a Redis 7 server: set ORDLAB_REDIS7 (just test does when the system has one)"]
fn skipped_on_redis7_and_says_why() {
    let r7 = server("ORDLAB_REDIS7", "Redis 7");
    let report = idempotency_on(&r7, "idmp");
    let v = &report.variants[0];
    assert_eq!(v.outcome, Outcome::Skipped);
    assert!(v.run_records.is_empty());
    let why = v.skipped.as_deref().unwrap_or_default();
    assert!(why.starts_with("needs Redis ≥ 8.6 (XADD … IDMP); this server is 7."), "{why}");
}
