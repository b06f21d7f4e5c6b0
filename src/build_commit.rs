//! The commit a report cites. `build.rs` records the commit the binary was built at, `-dirty`
//! when its inputs (src, scenarios, build.rs, Cargo.toml, Cargo.lock) differed from it, and
//! then a fingerprint of the inputs as built. A binary built from edits that were committed
//! before it ran (build, commit, run: the way the results of 2 December cite `453c5aa593-dirty`
//! while they ran the code of `ae0e488`) is that commit's code: when the checkout it was built
//! from still has the commit it now sits at, with the same inputs, the report cites that commit.
//!
//! The fingerprint is the same function in `build.rs` (which includes this file's
//! [`fingerprint`]) and here: every input file's path and git blob id, sorted, hashed.

use std::path::Path;
use std::process::Command;

/// The files a build's commit is about, as `build.rs` watches them.
pub const INPUTS: &[&str] = &["src", "scenarios", "build.rs", "Cargo.toml", "Cargo.lock"];

/// The commit this binary's reports cite: the one it was built at, or, built from edits
/// since committed, the commit that holds exactly them.
pub fn cited() -> String {
    static CITED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CITED
        .get_or_init(|| {
            resolve(env!("ORDLAB_GIT_COMMIT"), env!("ORDLAB_GIT_INPUTS"), Path::new(env!("CARGO_MANIFEST_DIR")))
        })
        .clone()
}

/// `built` (`<hash>` or `<hash>-dirty`) as cited: a dirty build whose inputs (`inputs`, their
/// fingerprint) are exactly those of the commit checked out in `dir` cites that commit.
pub fn resolve(built: &str, inputs: &str, dir: &Path) -> String {
    if !built.ends_with("-dirty") || inputs.is_empty() {
        return built.to_string();
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let mut ls = vec!["ls-tree", "-r", "HEAD", "--"];
    ls.extend(INPUTS);
    let (Some(tree), Some(head)) = (git(&ls), git(&["rev-parse", "--short=10", "HEAD"])) else {
        return built.to_string();
    };
    // `<mode> blob <id>\t<path>`
    let mut entries: Vec<(String, String)> = tree
        .lines()
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            Some((path.to_string(), meta.split_whitespace().nth(2)?.to_string()))
        })
        .collect();
    if fingerprint(&mut entries) == inputs {
        head.trim().to_string()
    } else {
        built.to_string()
    }
}

include!("build_commit/fingerprint.rs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_build_cites_its_commit_and_the_fingerprint_ignores_order() {
        assert_eq!(resolve("abc", "", Path::new("/nonexistent")), "abc");
        assert_eq!(resolve("abc-dirty", "1234", Path::new("/nonexistent")), "abc-dirty", "no checkout: as built");
        let mut a = vec![("src/a.rs".to_string(), "1".to_string()), ("build.rs".to_string(), "2".to_string())];
        let mut b = vec![a[1].clone(), a[0].clone()];
        assert_eq!(fingerprint(&mut a), fingerprint(&mut b));
        b[0].1 = "3".into();
        assert_ne!(fingerprint(&mut a), fingerprint(&mut b));
    }
}
