//! One registry of the private paths a run writes, whatever their root: the servers' dirs
//! under the private root, `persistence`'s data dirs on a real disk, a template being built in
//! the cache. A SIGKILLed run leaves its registry file, and the next run's reaper removes every
//! path it lists once its owner is provably dead.
//!
//! The file is `<private root>/ordlab-paths-<pid>`: the owner's identity (as in an `owner`
//! file) and one `path <dir>` line per live dir, rewritten (a new file, `….new`, renamed over
//! it) before a dir is made and after one is removed, and removed with the last dir. Each dir also holds an `owner` file, so a path that
//! another run now uses is never taken for the dead run's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::error::ServiceError;
use super::owner::{Owner, OWNER_FILE};

/// Where private dirs go: `$ORDLAB_TMPDIR` if set, else /dev/shm when it exists (RAM, fast),
/// else the system's temp dir.
pub(crate) fn private_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    match std::env::var_os("ORDLAB_TMPDIR") {
        Some(root) => PathBuf::from(root),
        None if shm.is_dir() => shm.to_path_buf(),
        None => std::env::temp_dir(),
    }
}

/// The registry files' names start with this, followed by the owner's pid.
pub(crate) const REGISTRY_PREFIX: &str = "ordlab-paths-";

/// This process's registered dirs.
static PATHS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A private dir of the run, anywhere: registered before it is made (a SIGKILL at any moment
/// leaves nothing the registry does not list), removed and forgotten when dropped (kept in
/// the registry if it could not be removed, for the next run's reaper).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// A new dir `<prefix>` + 8 random hex digits in `root` (mode 0700), with an `owner` file
    /// naming this process.
    pub fn new_in(root: &Path, prefix: &str) -> Result<RunDir, ServiceError> {
        use std::os::unix::fs::DirBuilderExt;
        let mut tries = 0;
        let path = loop {
            let path = root.join(format!("{prefix}{:08x}", rand::random::<u32>()));
            register(&path)?;
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => break path,
                Err(e) => {
                    unregister(&path);
                    tries += 1;
                    if e.kind() != std::io::ErrorKind::AlreadyExists || tries == 16 {
                        return Err(ServiceError::io(format!("create a private dir in {}", root.display()))(e));
                    }
                }
            }
        };
        let dir = RunDir { path };
        std::fs::write(dir.path.join(OWNER_FILE), Owner::current().file_text())
            .map_err(ServiceError::io("write the private dir's owner file"))?;
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.path).is_ok() || !self.path.exists() {
            unregister(&self.path);
        }
    }
}

/// The registry file of `owner` listing `paths`.
pub(crate) fn file_text(owner: &Owner, paths: &[PathBuf]) -> String {
    let mut text = owner.file_text();
    for p in paths {
        text.push_str(&format!("path {}\n", p.display()));
    }
    text
}

/// The paths a registry file lists.
pub(crate) fn listed_paths(text: &str) -> Vec<PathBuf> {
    text.lines().filter_map(|l| l.strip_prefix("path ")).map(PathBuf::from).collect()
}

fn registry_file() -> PathBuf {
    private_root().join(format!("{REGISTRY_PREFIX}{}", std::process::id()))
}

fn register(path: &Path) -> Result<(), ServiceError> {
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    paths.push(path.to_path_buf());
    write(&paths).inspect_err(|_| {
        paths.pop();
    })
}

fn unregister(path: &Path) {
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    paths.retain(|p| p != path);
    let _ = write(&paths);
}

/// Writes the registry (a new file renamed over the old one), or removes it when empty.
fn write(paths: &[PathBuf]) -> Result<(), ServiceError> {
    let file = registry_file();
    if paths.is_empty() {
        return match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ServiceError::io("remove the registry")(e)),
            _ => Ok(()),
        };
    }
    let staged = file.with_extension("new");
    std::fs::write(&staged, file_text(Owner::current(), paths))
        .and_then(|()| std::fs::rename(&staged, &file))
        .map_err(ServiceError::io(format!("write the registry of private dirs {}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_file_lists_its_owner_and_paths() {
        let me = Owner::current();
        let paths = vec![PathBuf::from("/tmp/ordlab-persist-a"), PathBuf::from("/dev/shm/ordlab-b")];
        let text = file_text(me, &paths);
        assert_eq!(Owner::parse_file(&text).as_ref(), Some(me));
        assert_eq!(listed_paths(&text), paths);
    }
}
