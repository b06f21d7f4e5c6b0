//! `build.rs` as cargo uses it when two checkouts share one `CARGO_TARGET_DIR`: the script is
//! compiled once, with the first checkout's `CARGO_MANIFEST_DIR`, and run for the second with
//! the second's. Compiled here with the real rustc the same way, it must embed the second
//! checkout's scenarios and watch its files, even when the first checkout is gone.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A checkout with one scenario file, `name`.
fn checkout(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::write(dir.join(format!("scenarios/{name}.toml")), "id = \"x\"\n").unwrap();
    dir
}

#[test]
fn the_build_script_reads_the_checkout_it_runs_for() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (checkout(tmp.path(), "first"), checkout(tmp.path(), "second"));
    let script = tmp.path().join("build-script-build");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiled = Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&script)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("build.rs"))
        .env("CARGO_MANIFEST_DIR", &first)
        .output()
        .expect("rustc runs");
    assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));
    std::fs::remove_dir_all(&first).unwrap();

    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let ran = Command::new(&script)
        .current_dir(&second)
        .env("CARGO_MANIFEST_DIR", &second)
        .env("OUT_DIR", &out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "the script run for the second checkout failed: {stderr}");
    let embedded = std::fs::read_to_string(out_dir.join("built_in_scenarios.rs")).unwrap();
    let second_file = second.join("scenarios/second.toml").display().to_string();
    assert!(embedded.contains(&format!("{second_file:?}")), "{embedded}");
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(said.contains(&format!("cargo:rerun-if-changed={}", second.join("scenarios").display())), "{said}");
    assert!(!said.contains("/first/") && !embedded.contains("/first/"), "the first checkout named: {said}{embedded}");
}

/// A build made from edits that are committed before it runs cites that commit, not the one
/// before with `-dirty` (the results of 2 December cite `453c5aa593-dirty` for the code of
/// `ae0e488`: built, committed, then run): `build.rs` records the inputs as built, and a report
/// finds the commit that holds exactly them. Edits made after the build keep it `-dirty`.
#[test]
fn a_build_committed_before_it_runs_cites_its_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = checkout(tmp.path(), "repo");
    std::fs::create_dir(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "// one\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(repo.join("src/lib.rs"), "// two\n").unwrap();
    // The build script, run for the edited checkout.
    let script = tmp.path().join("build-script-build");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiled = Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&script)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("build.rs"))
        .output()
        .unwrap();
    assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let ran = Command::new(&script)
        .current_dir(&repo)
        .env("CARGO_MANIFEST_DIR", &repo)
        .env("OUT_DIR", &out_dir)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let said = String::from_utf8_lossy(&ran.stdout);
    let env = |name: &str| {
        said.lines().find_map(|l| l.strip_prefix(&format!("cargo:rustc-env={name}="))).unwrap_or_default().to_string()
    };
    let (built, inputs) = (env("ORDLAB_GIT_COMMIT"), env("ORDLAB_GIT_INPUTS"));
    let first = git(&["rev-parse", "--short=10", "HEAD"]);
    assert_eq!(built, format!("{first}-dirty"), "{said}");
    assert_eq!(inputs.len(), 16, "a dirty build records its inputs: {said}");
    assert_eq!(ordlab::build_commit::resolve(&built, &inputs, &repo), built, "not committed yet: as built");
    git(&["commit", "-qam", "second"]);
    let second = git(&["rev-parse", "--short=10", "HEAD"]);
    assert_eq!(ordlab::build_commit::resolve(&built, &inputs, &repo), second, "committed: that commit");
    std::fs::write(repo.join("src/lib.rs"), "// three\n").unwrap();
    git(&["commit", "-qam", "third"]);
    assert_eq!(ordlab::build_commit::resolve(&built, &inputs, &repo), built, "other code committed: as built");
}
