//! What `run --out DIR` writes besides the text and JSON reports: each variant's timeline and
//! each chart as SVG, a slide-sized PNG of every SVG, and the lab book (`index.html`) over
//! every lab whose results are in DIR.
//!
//! The PNGs are drawn after every run is over (never while a race runs) and on every core;
//! they are derived from the SVGs, so results/ keeps them out of git. SUMMARY.md, the families'
//! tables over many labs ([`super::cross`]: MATRIX.md) and the book
//! are built from the lab records in DIR/records ([`super::record`]), so running one lab keeps
//! every other lab's rows, and [`rebuild_book`] redraws everything from the records alone.

use super::png::{PngError, PngWriter};
use super::record::{self, RecordError};
use super::{chart, html, json, summary, svg, LabReport};
use crate::lang::Lang;
use std::path::{Path, PathBuf};

/// The lab's pictures as (file name, SVG): `<lab>-<variant>.svg` (`<lab>.svg` for a variant
/// named like its lab) showing run `run` — none for a run with no event on its timeline (a
/// throughput sweep) — then `<lab>-<chart>.svg` for each chart.
pub fn pictures(report: &LabReport, lang: Lang, run: u32) -> Vec<(String, String)> {
    let id = &report.lab.id;
    let has_events = |v: &&crate::report::VariantReport| {
        v.run_records.iter().find(|r| r.run == run).is_some_and(|r| !r.events.is_empty())
    };
    let mut out: Vec<(String, String)> = report
        .variants
        .iter()
        .filter(has_events)
        .map(|v| {
            let name = if v.id == *id { format!("{id}.svg") } else { format!("{id}-{}.svg", v.id) };
            (name, svg::render(report, v, run, lang))
        })
        .collect();
    for c in chart::lab_charts(report) {
        out.push((format!("{id}-{}.svg", c.id), chart::svg(&c, lang)));
    }
    out
}

/// Write the lab's pictures into `dir`; returns their paths.
pub fn write_pictures(dir: &Path, report: &LabReport, lang: Lang, run: u32) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (name, body) in pictures(report, lang, run) {
        let path = dir.join(name);
        std::fs::write(&path, body)?;
        paths.push(path);
    }
    Ok(paths)
}

/// The lab book in `dir` over `reports`: `index.html` and its parts under `book/`; returns the
/// path of `index.html`.
pub fn write_book(dir: &Path, reports: &[LabReport]) -> std::io::Result<PathBuf> {
    html::book(reports, &html::explored::load(dir)).write(dir)?;
    Ok(dir.join("index.html"))
}

/// Why the lab book could not be rebuilt from the records.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Png(#[from] PngError),
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// What [`rebuild_book`] did.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// The labs in the book, in its order.
    pub labs: Vec<String>,
    /// Records written afresh from per-run data (`<id>.json.gz`) newer than them.
    pub refreshed: Vec<String>,
    /// Per-run data files left unread, and why (an older schema): their records stand.
    pub left_out: Vec<String>,
    /// The pictures drawn (each an SVG and its PNG).
    pub pictures: usize,
}

/// `SUMMARY.md` and `index.html` in `dir` over every lab record there; a record that cannot
/// be read is left out, with why in the returned lines. Returns the reports and those lines.
pub fn write_summary_and_book(dir: &Path) -> Result<(Vec<LabReport>, Vec<String>), BookError> {
    let mut reports = Vec::new();
    let mut left_out = Vec::new();
    for r in record::load_all(dir)? {
        match r {
            Ok(r) => reports.push(r),
            Err(e) => left_out.push(format!("SUMMARY.md and the lab book leave out {e}")),
        }
    }
    write_summary_and_book_of(dir, &reports)?;
    Ok((reports, left_out))
}

fn write_summary_and_book_of(dir: &Path, reports: &[LabReport]) -> Result<(), BookError> {
    let path = dir.join("SUMMARY.md");
    let fail = |path: &Path| {
        let path = path.display().to_string();
        move |source| BookError::Write { path, source }
    };
    std::fs::write(&path, summary::render(reports)).map_err(fail(&path))?;
    // The families' tables over these labs (the library matrix: MATRIX.md).
    for table in super::cross::tables(reports) {
        let path = dir.join(super::cross::file_name(&table));
        std::fs::write(&path, super::cross::markdown(&table, reports)).map_err(fail(&path))?;
    }
    write_book(dir, reports).map_err(fail(&dir.join("index.html")))?;
    Ok(())
}

/// `ordlab book`: refresh each lab's record from its per-run data where that is newer (or the
/// record missing), then SUMMARY.md, `index.html`, and every record's SVGs and PNGs (run 1,
/// in `lang`), from the records alone: no server, no run. Any record that cannot be read
/// fails it, naming the file.
pub fn rebuild_book(dir: &Path, lang: Lang, threads: usize) -> Result<Rebuilt, BookError> {
    let mut rebuilt = Rebuilt::default();
    refresh_records(dir, &mut rebuilt)?;
    let reports = record::load_all(dir)?.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut svgs = Vec::new();
    for r in &reports {
        let fail = |source| BookError::Write { path: dir.display().to_string(), source };
        svgs.extend(write_pictures(dir, r, lang, 1).map_err(fail)?);
    }
    write_summary_and_book_of(dir, &reports)?;
    rebuilt.pictures = write_pngs(&svgs, threads)?;
    rebuilt.labs = reports.iter().map(|r| r.lab.id.clone()).collect();
    Ok(rebuilt)
}

/// A record from each `<id>.json.gz` in `dir` that is newer than the lab's record (by the
/// run's date) or has none.
fn refresh_records(dir: &Path, rebuilt: &mut Rebuilt) -> Result<(), BookError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| json::is_results_file(p)).collect();
    paths.sort();
    for path in paths {
        let full = match json::load(&path) {
            Ok(full) => full,
            Err(e) => {
                rebuilt.left_out.push(e.to_string());
                continue;
            }
        };
        let existing = record::load(&record::path_of(dir, &full.lab.id)).ok();
        if existing.is_none_or(|r| r.environment.date <= full.environment.date) {
            record::write(dir, &full)?;
            rebuilt.refreshed.push(full.lab.id.clone());
        }
    }
    Ok(())
}

/// A PNG beside each SVG (`x.svg` → `x.png`), drawn on `threads` threads; the number written.
pub fn write_pngs(svgs: &[PathBuf], threads: usize) -> Result<usize, PngError> {
    if svgs.is_empty() {
        return Ok(0);
    }
    let writer = PngWriter::new()?;
    let threads = threads.clamp(1, svgs.len());
    let chunks: Vec<&[PathBuf]> = svgs.chunks(svgs.len().div_ceil(threads)).collect();
    let results: Vec<Result<usize, PngError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let writer = &writer;
                scope.spawn(move || {
                    for path in chunk {
                        let io = |e: std::io::Error| PngError::File {
                            path: path.display().to_string(),
                            detail: e.to_string(),
                        };
                        let svg = std::fs::read_to_string(path).map_err(io)?;
                        std::fs::write(path.with_extension("png"), writer.render(&svg)?).map_err(io)?;
                    }
                    Ok(chunk.len())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a PNG thread panicked")).collect()
    });
    results.into_iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Verdict;
    use crate::report::fixture::lock_race;

    #[test]
    fn one_picture_per_variant_named_after_lab_and_variant() {
        let r = lock_race(Verdict::Wrong);
        let names: Vec<String> = pictures(&r, Lang::En, 1).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["lock-s4c.svg"]);
    }

    #[test]
    fn a_run_with_nothing_on_its_timeline_gets_no_picture() {
        let mut r = lock_race(Verdict::Wrong);
        r.variants[0].run_records.iter_mut().for_each(|rec| rec.events.clear());
        assert!(pictures(&r, Lang::En, 1).is_empty());
    }

    #[test]
    fn pngs_are_written_beside_the_svgs() {
        let dir = tempfile::tempdir().unwrap();
        let r = lock_race(Verdict::Wrong);
        let svgs = write_pictures(dir.path(), &r, Lang::Vi, 1).unwrap();
        assert_eq!(write_pngs(&svgs, 2).unwrap(), 1);
        let png = std::fs::read(dir.path().join("lock-s4c.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let book = write_book(dir.path(), &[r]).unwrap();
        assert!(std::fs::read_to_string(book).unwrap().contains("lock-s4c"));
    }
}
