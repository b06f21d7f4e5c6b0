//! JSON form of a lab report: `results/<id>.json` and `--format json`. It carries
//! `schema_version` and everything needed to re-judge a run with no servers (`ordlab check`).

use super::LabReport;
use crate::error::Error;
use std::path::Path;

pub fn render(report: &LabReport) -> String {
    serde_json::to_string_pretty(report).expect("reports always serialize")
}

/// The same on one line, for files: a few times smaller for labs with many events.
pub fn render_compact(report: &LabReport) -> String {
    serde_json::to_string(report).expect("reports always serialize")
}

/// Several labs in one object: `{"schema_version": 1, "labs": [...]}`.
pub fn render_many(reports: &[LabReport]) -> String {
    let v = serde_json::json!({ "schema_version": crate::SCHEMA_VERSION, "labs": reports });
    serde_json::to_string_pretty(&v).expect("reports always serialize")
}

/// Read a saved report, refusing a schema version this build does not know.
pub fn load(path: &Path) -> Result<LabReport, Error> {
    let fail = |detail: String| Error::SavedRun { path: path.display().to_string(), detail };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == crate::SCHEMA_VERSION as u64 => {}
        Some(v) => {
            return Err(fail(format!("schema version {v}, this ordlab reads {}: rerun the lab", crate::SCHEMA_VERSION)))
        }
        None => return Err(fail("no schema_version: not an ordlab results file".into())),
    }
    let report: LabReport = serde_json::from_value(value)
        .map_err(|e| fail(format!("does not match schema {}: {e}", crate::SCHEMA_VERSION)))?;
    for v in &report.variants {
        if let Some(r) = v.run_records.iter().find(|r| r.observed.kind() != v.procedure.kind()) {
            let (got, want) = (r.observed.kind(), v.procedure.kind());
            return Err(fail(format!("variant {} run {} records a {got} run, its procedure is {want}", v.id, r.run)));
        }
    }
    Ok(report)
}
