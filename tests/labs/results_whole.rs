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
