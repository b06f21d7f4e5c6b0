//! Finding the executables the local backend runs, and asking them their version. Also where
//! ordlab caches what it builds once per user (PostgreSQL's data-dir template, Redis 8).

use std::path::{Path, PathBuf};

/// Finds `name` on PATH, then in `dirs`.
pub(crate) fn find_binary(name: &str, dirs: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(dirs.iter().map(PathBuf::from)).map(|d| d.join(name)).find(|p| is_executable(p))
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Output of `<bin> --version`, trimmed (e.g. "Redis server v=7.0.15 sha=...").
pub(crate) fn binary_version(bin: &Path) -> Option<String> {
    let out = std::process::Command::new(bin).arg("--version").output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

/// `$XDG_CACHE_HOME/ordlab`, else `~/.cache/ordlab`.
pub(crate) fn cache_root() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("ordlab")
}
