//! A cached, freshly initdb'ed PostgreSQL data dir that each run copies instead of
//! running the slow `initdb`. It is keyed by major version and binary path, and is
//! published atomically by renaming a finished sibling dir into place.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::unistd::{Gid, Uid};

use super::binaries::{binary_version, cache_root, find_binary};
use super::error::ServiceError;
use super::process::owned_command;

/// The `postgres` and `initdb` binaries of one installation.
#[derive(Clone, Debug)]
pub struct PgBinaries {
    pub postgres: PathBuf,
    pub initdb: PathBuf,
}

impl PgBinaries {
    /// Finds both on PATH or in the newest `/usr/lib/postgresql/*/bin`.
    pub fn find() -> Result<PgBinaries, ServiceError> {
        let newest = newest_pg_bin_dir();
        let dirs: Vec<&str> = newest.iter().filter_map(|p| p.to_str()).collect();
        let find = |what: &'static str| {
            find_binary(what, &dirs).ok_or_else(|| ServiceError::MissingBinary {
                what,
                searched: "/usr/lib/postgresql/*/bin".into(),
                hint: "install it (Debian: apt-get install -y postgresql-15) or use --backend external --pg-url ..."
                    .into(),
            })
        };
        Ok(PgBinaries { postgres: find("postgres")?, initdb: find("initdb")? })
    }

    /// The major version reported by `postgres --version` ("postgres (PostgreSQL) 15.4").
    pub fn major(&self) -> Result<u32, ServiceError> {
        let v = binary_version(&self.postgres).unwrap_or_default();
        parse_major(&v).ok_or_else(|| ServiceError::Io {
            what: format!("cannot read the version of {}", self.postgres.display()),
            source: std::io::Error::other(format!("unexpected --version output {v:?}")),
        })
    }
}

fn newest_pg_bin_dir() -> Option<PathBuf> {
    let entries = std::fs::read_dir("/usr/lib/postgresql").ok()?;
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some((name.parse::<u32>().ok()?, name))
        })
        .max()
        .map(|(_, name)| Path::new("/usr/lib/postgresql").join(name).join("bin"))
}

fn parse_major(version_output: &str) -> Option<u32> {
    let word = version_output.split_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// FNV-1a, stable across builds (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Returns the template dir for `bins`, creating it (once) when missing.
pub async fn ensure_template(bins: &PgBinaries, owner: Option<(Uid, Gid)>) -> Result<PathBuf, ServiceError> {
    let major = bins.major()?;
    let hash = fnv1a(bins.postgres.as_os_str().as_encoded_bytes());
    let root = cache_root();
    let template = root.join(format!("pg-template-{major}-{hash:016x}"));
    if template.join("PG_VERSION").is_file() {
        return Ok(template);
    }
    std::fs::create_dir_all(&root).map_err(ServiceError::io(format!("create {}", root.display())))?;
    // initdb runs as the postgres user, who may not be able to enter our cache
    // (e.g. /root/.cache), so it writes into a private scratch dir first.
    let scratch = super::private_dir::private_dir()?;
    let data = scratch.path().join("data");
    let mut cmd = owned_command(&bins.initdb);
    cmd.arg("-D").arg(&data);
    cmd.args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
    cmd.stdin(Stdio::null());
    if let Some((uid, gid)) = owner {
        cmd.uid(uid.as_raw()).gid(gid.as_raw());
    }
    let out =
        tokio::process::Command::from(cmd).kill_on_drop(true).output().await.map_err(ServiceError::io("run initdb"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        return Err(ServiceError::Io {
            what: format!("initdb failed ({})", out.status),
            source: std::io::Error::other(super::process::log_tail(&text, 5)),
        });
    }
    let staging = super::registry::RunDir::new_in(&root, ".pg-template-")?;
    let staged = staging.path().join("data");
    let (from, to) = (data.clone(), staged.clone());
    run_blocking_to_end("copy template", move || copy_tree(&from, &to, None))
        .await?
        .map_err(ServiceError::io("copy template"))?;
    // Another process may have won the race; its template is just as good.
    if std::fs::rename(&staged, &template).is_err() && !template.join("PG_VERSION").is_file() {
        return Err(ServiceError::Io {
            what: format!("cannot publish template {}", template.display()),
            source: std::io::Error::other("rename failed"),
        });
    }
    Ok(template)
}

/// Runs `job` on the blocking pool and waits for it. If the caller is dropped first (Ctrl-C),
/// the drop waits until `job` has ended, so a copy never writes into a dir that its owner is
/// removing (which would leave the dir behind).
pub(crate) async fn run_blocking_to_end<T: Send + 'static>(
    what: &'static str,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ServiceError> {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let _wait = WaitOnDrop(done_rx);
    tokio::task::spawn_blocking(move || {
        let _done = done_tx;
        job()
    })
    .await
    .map_err(|e| ServiceError::io(what)(std::io::Error::other(e)))
}

/// Blocks on drop until every sender of its channel is gone (the job ended).
struct WaitOnDrop(std::sync::mpsc::Receiver<()>);

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        let _ = self.0.recv();
    }
}

/// Recursively copies `from` to `to`, preserving permission bits and symlinks, and
/// chowning everything to `owner` when given. The top directory gets mode 0700.
pub fn copy_tree(from: &Path, to: &Path, owner: Option<(Uid, Gid)>) -> std::io::Result<()> {
    copy_entry(from, to, owner)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700))
}

fn copy_entry(from: &Path, to: &Path, owner: Option<(Uid, Gid)>) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        symlink(std::fs::read_link(from)?, to)?;
    } else if kind.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_entry(&entry.path(), &to.join(entry.file_name()), owner)?;
        }
        std::fs::set_permissions(to, meta.permissions())?;
    } else {
        std::fs::copy(from, to)?;
    }
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(to, Some(uid.as_raw()), Some(gid.as_raw()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_major_versions() {
        let debian = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)";
        assert_eq!(parse_major(debian), Some(15));
        assert_eq!(parse_major("postgres (PostgreSQL) 18beta1"), Some(18));
        assert_eq!(parse_major("garbage"), None);
    }

    #[test]
    fn copies_trees_with_modes_and_links() {
        let src = tempfile::tempdir().unwrap();
        let sub = src.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f"), b"x").unwrap();
        std::fs::set_permissions(sub.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
        symlink("sub/f", src.path().join("link")).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let to = dst.path().join("copy");
        copy_tree(src.path(), &to, None).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&to), 0o700);
        assert_eq!(mode(&to.join("sub/f")), 0o600);
        assert_eq!(std::fs::read_link(to.join("link")).unwrap(), Path::new("sub/f"));
        assert_eq!(std::fs::read(to.join("link")).unwrap(), b"x");
    }
}
