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

/// The most a saved file is read to, inflated: 64 MiB, over 30 times the largest file ordlab
/// writes (an exploration of lock s4c: 1.9 MB of JSON; the largest lab record, pipeline's, is
/// 0.45 MB). A gzip bomb (1 GiB of zeros is 4.6 MB) is refused at that size, not held whole.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// The text of a saved file, gzip-compressed (`.json.gz`) or not; Err says why in a few words.
/// Nothing over [`MAX_TEXT_BYTES`] is read.
pub fn read_text(path: &Path) -> Result<String, String> {
    read_text_at_most(path, MAX_TEXT_BYTES)
}

/// [`read_text`] with its own limit.
pub fn read_text_at_most(path: &Path, limit: u64) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    file.take(limit + 1).read_to_end(&mut head).map_err(|e| e.to_string())?;
    if !head.starts_with(&[0x1f, 0x8b]) {
        if head.len() as u64 > limit {
            return Err(over(limit, "is larger than"));
        }
        return String::from_utf8(head).map_err(|e| format!("not UTF-8: {e}"));
    }
    // A gzip file is never larger than what it inflates to, but for a few header bytes.
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::io::BufReader::new(file))
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("not gzip-compressed JSON: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(over(limit, "inflates to more than"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))
}

fn over(limit: u64, what: &str) -> String {
    format!(
        "{what} {} MiB, the most ordlab reads (its own files are a few MB): not an ordlab file, read no further",
        limit >> 20
    )
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
    fn what_a_file_inflates_to_is_capped() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let zeros = dir.path().join("zeros.json.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&vec![b' '; 3 << 20]).unwrap();
        std::fs::write(&zeros, gz.finish().unwrap()).unwrap();
        let why = super::read_text_at_most(&zeros, 2 << 20).unwrap_err();
        assert_eq!(why, "inflates to more than 2 MiB, the most ordlab reads (its own files are a few MB): not an ordlab file, read no further");
        assert_eq!(super::read_text_at_most(&zeros, 3 << 20).unwrap().len(), 3 << 20, "up to the limit is read");
        let plain = dir.path().join("big.json");
        std::fs::write(&plain, vec![b' '; (2 << 20) + 1]).unwrap();
        assert!(super::read_text_at_most(&plain, 2 << 20).unwrap_err().starts_with("is larger than 2 MiB"));
    }

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
