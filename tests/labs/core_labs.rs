//! `baseline` and `s1` end to end: through the CLI's JSON (the acceptance command)
//! and through normalized snapshots in both languages.
//!
//! Both verdicts are deterministic, not probabilistic: with two consumers blocked in
//! XREADGROUP, Redis hands `created` to one and `paid` to the other in the same millisecond,
//! and at time scale 0.25 `paid` writes ~190 ms before `created` (800 vs 50 ms of injected
//! work, scaled). Only a stall of that length on a loaded machine could flip a run.

use super::support;
use ordlab::lang::Lang;
use ordlab::report::snapshot;

fn json_run(id: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .args(["run", id, "--runs", "5", "--time-scale", "0.25", "--format", "json", "--backend", "local"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}; stderr: {stderr}"));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    json
}

#[test]
fn baseline_is_wrong_in_every_run() {
    let json = json_run("baseline");
    let v = &json["variants"][0];
    assert_eq!((v["id"].as_str(), v["runs"].as_u64(), v["wrong"].as_u64()), (Some("baseline"), Some(5), Some(5)));
    assert_eq!(v["expected"], "all");
    assert_eq!(json["schema_version"], ordlab::SCHEMA_VERSION);
}

#[test]
fn one_consumer_is_never_wrong() {
    let json = json_run("s1");
    let v = &json["variants"][0];
    assert_eq!((v["id"].as_str(), v["runs"].as_u64(), v["wrong"].as_u64()), (Some("s1"), Some(5), Some(0)));
    assert_eq!(v["expected"], "none");
}

pub fn assert_snapshots(report: &ordlab::report::LabReport) {
    for lang in Lang::ALL {
        let name = snapshot::file_name(&report.lab.id, lang);
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name.trim_end_matches(".snap"), snapshot::normalized(report, lang));
        });
    }
}

#[tokio::test]
async fn baseline_snapshot() {
    let report = support::snapshot_run("baseline").await;
    assert_snapshots(&report);
    // The timeline shows the overwrite itself: paid written before created.
    let r1 = &report.variants[0].run_records[0];
    let writes: Vec<&str> = r1
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            ordlab::timeline::EventKind::Wrote { status, .. } => Some(status.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(writes, ["paid", "created"]);
}

#[tokio::test]
async fn s1_snapshot() {
    let report = support::snapshot_run("s1").await;
    assert_snapshots(&report);
}

#[tokio::test]
async fn a_saved_run_is_rejudged_identically() {
    let report = support::run_lab("baseline", 2, 0.25, 7).await;
    let text = ordlab::report::json::render(&report);
    let reread: ordlab::report::LabReport = serde_json::from_str(&text).unwrap();
    assert_eq!(reread.rejudged(), report);
}
