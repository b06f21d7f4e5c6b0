//! Build script: embeds every `scenarios/*.toml` into the binary (so `ordlab list` and
//! `ordlab run <id>` work from anywhere) and records the git commit for report headers.

use std::fmt::Write;
use std::path::Path;
use std::process::Command;

fn main() {
    // Read when the script runs, not when it is compiled (`env!`): cargo reuses one compiled
    // build script for every checkout of the package that shares a target dir.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest_dir).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = String::from("/// Built-in scenario files: (file name, contents), sorted by name.\npub static BUILT_IN: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f.file_name().unwrap().to_string_lossy();
        writeln!(out, "    ({name:?}, include_str!({:?})),", f.display().to_string()).unwrap();
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").unwrap();
    std::fs::write(Path::new(&out_dir).join("built_in_scenarios.rs"), out).unwrap();

    record_commit();
}

/// The files the binary is built from: an edit to any of them makes the build's commit dirty
/// (the same list as `ordlab::build_commit::INPUTS`).
const INPUTS: &[&str] = &["src", "scenarios", "build.rs", "Cargo.toml", "Cargo.lock"];

include!("src/build_commit/fingerprint.rs");

/// `ORDLAB_GIT_COMMIT` for report headers: the short hash of HEAD, `-dirty` when an input of
/// the binary differs from it (staged or not, or a new file under one of them).
///
/// Cargo re-runs this script only when a watched path changes, so every input is watched, and
/// so are HEAD, the branch it points to, `packed-refs` and the index: an unstaged edit changes
/// none of git's files, and a commit moves the branch, not `HEAD`. Git runs with
/// `--no-optional-locks` so that `git status` never rewrites the index (which would re-run
/// this script on every build).
fn record_commit() {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    for input in INPUTS {
        println!("cargo:rerun-if-changed={input}");
    }
    let commit = git(&["rev-parse", "--short=10", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let mut status = vec!["status", "--porcelain", "--"];
    status.extend(INPUTS);
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=ORDLAB_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    // A dirty build's inputs as built: a report cites the commit that holds exactly them, if
    // they are committed before it runs (`ordlab::build_commit`).
    let inputs = if dirty { worktree_fingerprint() } else { None };
    println!("cargo:rustc-env=ORDLAB_GIT_INPUTS={}", inputs.unwrap_or_default());
    let mut watched = vec!["HEAD".to_string(), "index".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // Only paths that exist: cargo re-runs the script on every build for a missing one.
        match git(&["rev-parse", "--git-path", &name]) {
            Some(path) if Path::new(&path).exists() => println!("cargo:rerun-if-changed={path}"),
            _ => {}
        }
    }
}

/// The fingerprint of the inputs as they are in the working tree: every tracked or new file
/// under them with its git blob id (`git hash-object`, which writes nothing).
fn worktree_fingerprint() -> Option<String> {
    use std::io::Write as _;
    let mut ls = Command::new("git");
    ls.args(["--no-optional-locks", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"]).args(INPUTS);
    let listed = ls.output().ok().filter(|o| o.status.success())?;
    let paths: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .split('\0')
        .filter(|p| !p.is_empty() && Path::new(p).is_file())
        .map(str::to_string)
        .collect();
    let mut hash = Command::new("git")
        .args(["hash-object", "--stdin-paths"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = hash.stdin.take()?;
    let list = paths.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let out = hash.wait_with_output().ok().filter(|o| o.status.success())?;
    writer.join().ok()?.ok()?;
    let blobs: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    if blobs.len() != paths.len() {
        return None;
    }
    let mut entries: Vec<(String, String)> = paths.into_iter().zip(blobs).collect();
    Some(fingerprint(&mut entries))
}
