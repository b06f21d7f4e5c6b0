//! A lab's compact record, `records/<id>.json.gz` in the results directory: what SUMMARY.md
//! and the lab book show of the lab, small enough to keep in git. It holds run 1 of each
//! variant with only the events its timeline draws and, computed from every run when the lab
//! ran, the counts, charts, tables and lines they print, so a fresh clone rebuilds both with
//! no servers.
//!
//! The per-run data (`<id>.json.gz`, for `ordlab check`) stays out of git; a record is written
//! beside it by every `run --out` and read back by the summary, the book and `ordlab book`.

use super::{chart, svg, AllRunsDigest, LabReport, VariantDigest};
use crate::lang::{Lang, Words};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the record file's own shape (the report inside carries
/// [`crate::SCHEMA_VERSION`]). Bump it when a field changes meaning or disappears.
///
/// 2: a long run 1 keeps the windows of its events around its verdict's key events, and
/// says where it was cut (`VariantReport::drawn`); version 1 kept its first 200 events,
/// and is still read (its pictures say they show the first events only).
pub const RECORD_VERSION: u32 = 2;

/// The oldest record version this build reads.
pub const OLDEST_RECORD_VERSION: u32 = 1;

/// The records' folder inside a results directory.
pub const RECORDS_DIR: &str = "records";

/// Why a record could not be read or written: each one line naming the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no lab records in {dir}: run a lab into it (`just lab <id>`, or `just lab all` for every lab)")]
    NoRecords { dir: String },
    #[error("cannot read the lab records in {dir} ({source}): give the results directory that holds records/")]
    ReadDir { dir: String, source: std::io::Error },
    #[error("lab record {path} is malformed ({detail}): rerun its lab to write it again")]
    Malformed { path: String, detail: String },
    #[error("lab record {path} has record version {found}, this ordlab reads {reads}: rerun its lab")]
    Version { path: String, found: u64, reads: u32 },
    #[error("cannot write the lab record {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// The file's content: the versioned envelope around the compact report.
#[derive(Serialize, Deserialize)]
struct RecordFile {
    record_version: u32,
    report: LabReport,
}

/// `full` cut down to run 1 of each variant, with what its other runs showed kept in
/// [`LabReport::from_all_runs`]; a record's record is itself.
pub fn compact(full: &LabReport) -> LabReport {
    let both = |f: &dyn Fn(Lang) -> String| Words::new(f(Lang::En), f(Lang::Vi));
    let digest = AllRunsDigest {
        charts: chart::lab_charts(full),
        side_by_side: both(&|lang| full.side_by_side(lang)),
        variants: full
            .variants
            .iter()
            .map(|v| VariantDigest {
                id: v.id.clone(),
                summary_note: full.summary_note(v),
                outcome_lines: both(&|lang| full.outcome_lines(v, lang)),
            })
            .collect(),
    };
    let mut out = full.clone();
    for v in &mut out.variants {
        v.run_records.retain(|r| r.run == 1);
        if let Some((events, drawn)) = svg::drawn_events(v, 1) {
            v.drawn_events_before_cap = Some(drawn.as_ref().map_or(events.len(), |d| d.events));
            v.run_records[0].events = events;
            v.drawn = drawn;
        }
    }
    out.from_all_runs = Some(digest);
    out
}

/// The record of `full`, gzip-compressed JSON: the bytes of `records/<id>.json.gz`.
pub fn gzip(full: &LabReport) -> Vec<u8> {
    use std::io::Write;
    let file = RecordFile { record_version: RECORD_VERSION, report: compact(full) };
    let json = serde_json::to_vec(&file).expect("reports always serialize");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&json).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// Where the record of lab `id` lives in results directory `dir`.
pub fn path_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(RECORDS_DIR).join(format!("{id}.json.gz"))
}

/// Write the record of `full` into `dir/records/`; returns its path.
pub fn write(dir: &Path, full: &LabReport) -> Result<PathBuf, RecordError> {
    let path = path_of(dir, &full.lab.id);
    let fail = |source| RecordError::Write { path: path.display().to_string(), source };
    std::fs::create_dir_all(dir.join(RECORDS_DIR)).map_err(fail)?;
    std::fs::write(&path, gzip(full)).map_err(fail)?;
    Ok(path)
}

/// Read one record, refusing a record or report version this build does not know (it reads
/// record versions [`OLDEST_RECORD_VERSION`] to [`RECORD_VERSION`]).
pub fn load(path: &Path) -> Result<LabReport, RecordError> {
    let malformed = |detail: String| RecordError::Malformed { path: path.display().to_string(), detail };
    let text = super::json::read_text(path).map_err(malformed)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| malformed(format!("not JSON: {e}")))?;
    let version = |key: &str, v: &serde_json::Value| v.get(key).and_then(serde_json::Value::as_u64);
    match version("record_version", &value) {
        Some(v) if (OLDEST_RECORD_VERSION as u64..=RECORD_VERSION as u64).contains(&v) => {}
        Some(found) => {
            return Err(RecordError::Version { path: path.display().to_string(), found, reads: RECORD_VERSION })
        }
        None => return Err(malformed("no record_version: not an ordlab lab record".into())),
    }
    match value.get("report").and_then(|r| version("schema_version", r)) {
        Some(v) if v == crate::SCHEMA_VERSION as u64 => {}
        Some(v) => return Err(malformed(format!("report schema {v}, this ordlab reads {}", crate::SCHEMA_VERSION))),
        None => return Err(malformed("no report with a schema_version".into())),
    }
    let file: RecordFile = serde_json::from_value(value).map_err(|e| malformed(e.to_string()))?;
    if file.report.from_all_runs.is_none() {
        return Err(malformed("no from_all_runs: a full report, not a record".into()));
    }
    Ok(file.report)
}

/// Every record in `dir/records/`, in the order of their lab ids, each read or refused on its
/// own; [`RecordError::NoRecords`] when there is none, [`RecordError::ReadDir`] when the
/// folder cannot be read.
pub fn load_all(dir: &Path) -> Result<Vec<Result<LabReport, RecordError>>, RecordError> {
    let records = dir.join(RECORDS_DIR);
    let shown = records.display().to_string();
    let entries = match std::fs::read_dir(&records) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(RecordError::NoRecords { dir: shown }),
        Err(source) => return Err(RecordError::ReadDir { dir: shown, source }),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    if paths.is_empty() {
        return Err(RecordError::NoRecords { dir: shown });
    }
    paths.sort();
    Ok(paths.iter().map(|p| load(p)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Verdict;
    use crate::report::fixture::lock_race;
    use crate::report::{html, summary};

    /// The lock fixture with a second, right run: the record keeps run 1 only.
    fn two_runs() -> LabReport {
        let mut r = lock_race(Verdict::Wrong);
        let mut second = r.variants[0].run_records[0].clone();
        second.run = 2;
        second.verdict.verdict = Verdict::Right;
        r.variants[0].run_records.push(second);
        r.variants[0].recount();
        r
    }

    #[test]
    fn a_record_keeps_run_1_and_shows_what_the_full_report_shows() {
        let full = two_runs();
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &full).unwrap();
        assert_eq!(path, dir.path().join("records/lock.json.gz"));
        let rec = load(&path).unwrap();
        assert_eq!(rec.variants[0].run_records.len(), 1);
        assert_eq!((rec.variants[0].runs, rec.variants[0].wrong), (2, 1));
        assert_eq!(summary::render(std::slice::from_ref(&rec)), summary::render(std::slice::from_ref(&full)));
        assert_eq!(html::book(std::slice::from_ref(&rec), &[]), html::book(std::slice::from_ref(&full), &[]));
        assert_eq!(compact(&rec), rec, "a record's record is itself");
    }

    #[test]
    fn a_malformed_or_foreign_record_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load_all(dir.path()), Err(RecordError::NoRecords { .. })));
        std::fs::create_dir(dir.path().join(RECORDS_DIR)).unwrap();
        let bad = dir.path().join("records/x.json.gz");
        std::fs::write(&bad, b"not gzip").unwrap();
        let err = load(&bad).unwrap_err().to_string();
        assert!(err.contains("records/x.json.gz") && err.contains("malformed"), "{err}");
        let mut newer = serde_json::to_value(RecordFile { record_version: 9, report: compact(&two_runs()) }).unwrap();
        newer["record_version"] = 9.into();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, newer.to_string().as_bytes()).unwrap();
        std::fs::write(&bad, enc.finish().unwrap()).unwrap();
        assert!(matches!(load(&bad), Err(RecordError::Version { found: 9, .. })));
    }

    /// Every full report in `$ORDLAB_FULL_RESULTS` (a `run --out` directory with its per-run
    /// data) draws the same lab book section, summary and pictures from its record:
    /// `ORDLAB_FULL_RESULTS=results cargo test --lib record::same -- --ignored`.
    #[test]
    #[ignore = "needs per-run data: ORDLAB_FULL_RESULTS=<dir with <id>.json.gz>"]
    fn same_book_from_records_as_from_full_reports() {
        let dir = std::env::var("ORDLAB_FULL_RESULTS").expect("ORDLAB_FULL_RESULTS");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !crate::report::json::is_results_file(&path) {
                continue;
            }
            let full = crate::report::json::load(&path).unwrap();
            let rec = compact(&full);
            let id = &full.lab.id;
            let (rec_one, full_one) = (std::slice::from_ref(&rec), std::slice::from_ref(&full));
            assert_eq!(html::book(rec_one, &[]), html::book(full_one, &[]), "{id}: lab book");
            assert_eq!(summary::render(rec_one), summary::render(full_one), "{id}");
            for lang in Lang::ALL {
                assert_eq!(
                    crate::report::files::pictures(&rec, lang, 1),
                    crate::report::files::pictures(&full, lang, 1),
                    "{id}"
                );
            }
            assert!(gzip(&full).len() < 100_000, "{id}: record of {} bytes", gzip(&full).len());
            checked += 1;
        }
        assert!(checked > 0, "no per-run data in {dir}");
    }
}
