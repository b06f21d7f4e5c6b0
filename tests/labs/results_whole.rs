//! Results that stay whole: a run into a results directory keeps every other lab's record in
//! SUMMARY.md and the lab book, and `ordlab book` rebuilds both from the records alone.

use super::support;
use std::path::Path;

/// Run the binary with `args` (a private temp root for its servers); exit code and stderr.
fn ordlab(args: &[&str]) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The lab ids SUMMARY.md has rows for, in order, each once.
fn summary_labs(md: &str) -> Vec<String> {
    let mut labs: Vec<String> = Vec::new();
    for line in md.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| lab |")) {
        let lab = line.split('|').nth(1).unwrap().trim().to_string();
        if !labs.contains(&lab) {
            labs.push(lab);
        }
    }
    labs
}

fn book_lists(html: &str, lab: &str) -> bool {
    html.contains(&format!(r#"<section class="lab" id="lab-{lab}""#))
}

#[test]
fn running_two_labs_keeps_a_third_and_the_book_rebuilds_from_records() {
    let results = tempfile::tempdir().unwrap();
    let out = results.path().to_str().unwrap();
    let quick = ["--runs", "1", "--time-scale", "0.25", "--quiet", "--out", out];
    // A third lab already in the results directory.
    let (code, stderr) = ordlab(&[&["run", "p2"][..], &quick].concat());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(results.path().join("records/p2.json.gz").is_file());
    let (code, stderr) = ordlab(&[&["run", "s1", "baseline"][..], &quick].concat());
    assert_eq!(code, Some(0), "{stderr}");
    let md = read(results.path(), "SUMMARY.md");
    assert_eq!(summary_labs(&md), ["baseline", "p2", "s1"], "{md}");
    let html = read(results.path(), "index.html");
    for lab in ["baseline", "p2", "s1"] {
        assert!(book_lists(&html, lab), "index.html lacks {lab}");
    }
    for name in support::entries(&results.path().join("records")) {
        let len = std::fs::metadata(results.path().join("records").join(&name)).unwrap().len();
        assert!(len < 100_000, "{name} is {len} bytes");
    }

    // A fresh clone: the records alone, no per-run data, no book.
    let clone = tempfile::tempdir().unwrap();
    std::fs::create_dir(clone.path().join("records")).unwrap();
    for lab in ["baseline", "p2", "s1"] {
        let name = format!("records/{lab}.json.gz");
        std::fs::copy(results.path().join(&name), clone.path().join(&name)).unwrap();
    }
    let (code, stderr) = ordlab(&["book", "--out", clone.path().to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let rebuilt = read(clone.path(), "index.html");
    for lab in ["baseline", "p2", "s1"] {
        assert!(book_lists(&rebuilt, lab), "rebuilt index.html lacks {lab}");
    }
    assert_eq!(read(clone.path(), "SUMMARY.md"), md, "the same summary from the records alone");
    assert!(clone.path().join("baseline.svg").is_file() && clone.path().join("baseline.png").is_file());

    // A directory without records: one line naming it.
    let empty = tempfile::tempdir().unwrap();
    let (code, stderr) = ordlab(&["book", "--out", empty.path().to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no lab records in"), "{stderr}");
}

/// The library matrix in results/libraries/ is what ordlab draws from the records beside it
/// (MATRIX.md byte for byte, and the lab book's section), and it holds what issue 32 asks of
/// it: the six libraries, each under at least five faults at its own version.
#[test]
fn the_library_matrix_is_drawn_from_its_records_with_six_libraries_under_five_faults() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/libraries");
    let reports: Vec<_> = ordlab::report::record::load_all(&dir).unwrap().into_iter().map(|r| r.unwrap()).collect();
    let tables = ordlab::report::cross::tables(&reports);
    assert_eq!(tables.len(), 1, "one table over the library labs");
    let table = &tables[0];
    assert_eq!(
        read(&dir, &ordlab::report::cross::file_name(table)),
        ordlab::report::cross::markdown(table, &reports),
        "results/libraries/MATRIX.md is not what ordlab draws from the records: run `ordlab book --out results/libraries`"
    );
    // The columns that are faults (not a held command, not a configuration).
    use ordlab::labs::library::matrix::Column;
    let faults: Vec<usize> = Column::ALL
        .iter()
        .enumerate()
        .filter(|(_, c)| !matches!(c, Column::Held | Column::NoFault))
        .map(|(i, _)| i)
        .collect();
    let main =
        ["bullmq 6.7.0", "celery 5.7.0", "graphile-worker 0.18.0", "pg-boss 11.0.8", "rq 2.12.0", "sidekiq 6.4.1"];
    for library in main {
        let row = table.rows.iter().find(|r| r.head == library).unwrap_or_else(|| panic!("no row for {library}"));
        let placed = faults.iter().filter(|&&i| !row.cells[i].is_empty()).count();
        assert!(placed >= 5, "{library}: {placed} faults placed");
    }
    let html = ordlab::report::html::render(&reports);
    assert!(html.contains(r#"<section class="cross" id="matrix">"#));
    assert!(
        html.contains(r##"<a href="#v-matrix-rq-kill-mid-handler" translate="no">kill-mid-handler</a>"##),
        "entries link to their variant"
    );
}
