//! Build script: embeds every `scenarios/*.toml` into the binary (so `ordlab list` and
//! `ordlab run <id>` work from anywhere) and records the git commit for report headers.

use std::fmt::Write;
use std::path::Path;
use std::process::Command;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
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

    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=10", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=ORDLAB_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    if let Some(head) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={head}/HEAD");
        println!("cargo:rerun-if-changed={head}/index");
    }
}
