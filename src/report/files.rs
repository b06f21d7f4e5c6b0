//! What `run --out DIR` writes besides the text and JSON reports: each variant's timeline and
//! each chart as SVG, a slide-sized PNG of every SVG, and the lab book (`index.html`) over
//! every lab whose results are in DIR.
//!
//! The PNGs are drawn after every run is over (never while a race runs) and on every core;
//! they are derived from the SVGs, so results/ keeps them out of git.

use super::png::{PngError, PngWriter};
use super::{chart, html, svg, LabReport};
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

/// `index.html` in `dir` over `reports`.
pub fn write_book(dir: &Path, reports: &[LabReport]) -> std::io::Result<PathBuf> {
    let path = dir.join("index.html");
    std::fs::write(&path, html::render(reports))?;
    Ok(path)
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
