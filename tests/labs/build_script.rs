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
