//! JSON form of a lab report: `results/<id>.json.gz` and `--format json`. It carries
//! `schema_version` and everything needed to re-judge a run with no servers (`ordlab check`).
//! Results files are gzip-compressed: a lab over many orders records tens of thousands of
//! events, and results/ lives in git.

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

/// The compact JSON, gzip-compressed: the bytes of `results/<id>.json.gz`.
pub fn gzip(report: &LabReport) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(render_compact(report).as_bytes()).expect("writing to memory");
    enc.write_all(b"\n").expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// Is this a results file `load` reads (`.json` or `.json.gz`)?
pub fn is_results_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// The text of a saved file, gzip-compressed (`.json.gz`) or not; Err says why in a few words.
pub fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(bytes.as_slice()), &mut text)
            .map_err(|e| format!("not gzip-compressed JSON: {e}"))?;
        Ok(text)
    } else {
        String::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))
    }
}

/// Read a saved report (`.json`, or gzip-compressed `.json.gz`), refusing a schema version
/// this build does not know.
pub fn load(path: &Path) -> Result<LabReport, Error> {
    let fail = |detail: String| Error::SavedRun { path: path.display().to_string(), detail };
    let text = read_text(path).map_err(fail)?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn results_files_are_found_by_their_name() {
        use std::path::Path;
        assert!(super::is_results_file(Path::new("results/lock.json.gz")));
        assert!(super::is_results_file(Path::new("lock.json")));
        assert!(!super::is_results_file(Path::new("results/lock.txt")));
    }

    /// A P4 run's documents (a map keyed by order) read back from the saved JSON.
    #[test]
    fn documents_read_back() {
        use crate::checker::Verdict;
        use crate::labs::Observed;
        use crate::order_document::Document;
        use std::collections::BTreeMap;
        let mut report = crate::report::fixture::lock_race(Verdict::Wrong);
        let doc = Document { status: "paid".into(), items: BTreeMap::from([("book".into(), 1)]), total: 5 };
        let Observed::Stream(o) = &mut report.variants[0].run_records[0].observed else { panic!("a stream run") };
        o.documents = Some(BTreeMap::from([(42, doc)]));
        let value: serde_json::Value = serde_json::from_str(&super::render_compact(&report)).unwrap();
        let back: crate::report::LabReport = serde_json::from_value(value).unwrap();
        assert_eq!(back.variants[0].run_records[0].observed, report.variants[0].run_records[0].observed);
    }
}
