//! The reaper reclaims what an ordlab process could not clean up because it was SIGKILLed:
//! containers and networks labelled with a dead owner, and private dirs that a dead process
//! registered (wherever they are) or whose `owner` file names one, with that run's orphaned
//! servers and PostgreSQL's System V segment. It runs once per process, before the first
//! servers start, and says in one line what it took.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::engine::Engine;
use super::owner::{Liveness, Owner, LABEL_RUN};
use super::registry::{listed_paths, REGISTRY_PREFIX};

/// What one pass reclaimed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    pub containers: usize,
    pub networks: usize,
    pub dirs: usize,
    /// Disk (or RAM, on /dev/shm) the dirs used.
    pub dir_bytes: u64,
    /// Server processes that had outlived their owner.
    pub processes: usize,
    pub shm_segments: usize,
    /// Pids of the dead owners.
    pub owners: BTreeSet<u32>,
}

impl Reclaimed {
    pub fn is_empty(&self) -> bool {
        self.containers + self.networks + self.dirs + self.processes + self.shm_segments == 0
    }
}

impl fmt::Display for Reclaimed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count =
            |n: usize, one: &str, many: &str| (n > 0).then(|| format!("{n} {}", if n == 1 { one } else { many }));
        let mb = self.dir_bytes as f64 / 1_048_576.0;
        let parts: Vec<String> = [
            count(self.containers, "container", "containers"),
            count(self.networks, "network", "networks"),
            count(self.dirs, "private dir", "private dirs").map(|s| format!("{s} ({mb:.1} MB)")),
            count(self.processes, "orphaned server", "orphaned servers"),
            count(self.shm_segments, "shared-memory segment", "shared-memory segments"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let owners: Vec<String> = self.owners.iter().map(u32::to_string).collect();
        write!(
            f,
            "reclaimed what killed ordlab runs left behind: {} (dead owner pid {})",
            parts.join(", "),
            owners.join(", ")
        )
    }
}

/// Whether a dead owner's things may go: dead, or recorded during an earlier boot.
fn reclaimable(owner: &Owner) -> bool {
    matches!(owner.liveness(), Liveness::Dead | Liveness::OtherBoot)
}

/// Removes containers, then networks, whose owner is dead. A container recorded during
/// another boot (or by another machine sharing the engine) goes only once it has stopped.
pub async fn reap_engine(engine: &Engine, out: &mut Reclaimed) {
    let Ok(containers) = engine.containers_labelled(LABEL_RUN).await else { return };
    for c in containers {
        let Some(owner) = Owner::from_labels(&c.labels) else { continue };
        let gone = match owner.liveness() {
            Liveness::Dead => true,
            Liveness::OtherBoot => !c.running,
            Liveness::Alive | Liveness::Unknown => false,
        };
        if gone && engine.remove_container(&c.id).await.is_ok() {
            out.containers += 1;
            out.owners.insert(owner.pid);
        }
    }
    let Ok(networks) = engine.networks_labelled(LABEL_RUN).await else { return };
    for (id, labels) in networks {
        let Some(owner) = Owner::from_labels(&labels) else { continue };
        if reclaimable(&owner) && engine.remove_network(&id).await.is_ok() {
            out.networks += 1;
            out.owners.insert(owner.pid);
        }
    }
}

/// Reclaims every `ordlab-*` dir in `root` whose owner file names a dead process. Dirs without
/// an owner file (made by older versions, or being created right now) are left alone.
pub fn reap_dirs(root: &Path, out: &mut Reclaimed) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with("ordlab-") && path.is_dir() && removable(&path);
        let Some(owner) = ours.then(|| Owner::read_from_dir(&path)).flatten() else { continue };
        if reclaimable(&owner) {
            reclaim_dir(&path, &owner, out);
        }
    }
}

/// Reclaims every dir listed in a registry file in `root` (`ordlab-paths-<pid>`, or its
/// `.new` rewrite; see `registry`) whose owner is dead, wherever the dir is, then the file. A listed dir whose
/// own `owner` file names someone else is not the dead run's any more, and stays.
pub fn reap_registry(root: &Path, out: &mut Reclaimed) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let file = entry.path();
        // A `.new` file is a rewrite its owner was killed before renaming: it lists as much.
        if !name.starts_with(REGISTRY_PREFIX) || !file.is_file() || !removable(&file) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Some(parsed) = Owner::parse_file(&text) else {
            // A rewrite cut short by the kill lists nothing (the dir it was adding is made only
            // after the rename): garbage once its writer is gone.
            if name.ends_with(".new") && writer_gone(&name, &file) {
                let _ = std::fs::remove_file(&file);
            }
            continue;
        };
        let Some(owner) = Some(parsed).filter(reclaimable) else { continue };
        for dir in listed_paths(&text) {
            let theirs = Owner::read_from_dir(&dir).is_none_or(|o| o == owner);
            if dir.is_dir() && theirs && removable(&dir) {
                reclaim_dir(&dir, &owner, out);
            }
        }
        let _ = std::fs::remove_file(&file);
    }
}

/// Whether the process that wrote registry file `name` is gone: no process has the pid its
/// name ends with, or the file has not changed for a minute (a live rewrite takes
/// microseconds).
fn writer_gone(name: &str, file: &Path) -> bool {
    let pid = name.trim_start_matches(REGISTRY_PREFIX).trim_end_matches(".new");
    let no_process = pid.parse::<u32>().is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
    let old = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
    no_process || old
}

/// Kills what still works in a dead owner's `dir`, removes its PostgreSQL segment, then the
/// dir, and counts them.
fn reclaim_dir(dir: &Path, owner: &Owner, out: &mut Reclaimed) {
    out.processes += kill_orphans(dir);
    out.shm_segments += remove_pg_segment(&dir.join("pg-data"));
    let bytes = tree_bytes(dir);
    if std::fs::remove_dir_all(dir).is_ok() {
        out.dirs += 1;
        out.dir_bytes += bytes;
        out.owners.insert(owner.pid);
    }
}

/// Root may remove any dir; another user only their own (a dir of someone else's dead run is
/// theirs to reclaim).
fn removable(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::Uid::effective();
    me.is_root() || std::fs::metadata(dir).is_ok_and(|m| m.uid() == me.as_raw())
}

/// SIGKILLs the processes that work in `dir` (a server whose owner died without taking it
/// along: redis-server runs in its `--dir`, the postmaster in its data dir) or name it on
/// their command line, and waits up to 5 s until they are gone. Returns how many there were.
fn kill_orphans(dir: &Path) -> usize {
    let orphans: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| uses_dir(*pid, dir))
        .collect();
    for &pid in &orphans {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while orphans.iter().any(|pid| running(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    orphans.len()
}

/// Does process `pid` work in `dir` (its cwd is below it) or name it in its command line?
/// (redis-server rewrites its command line, so the cwd is what finds it.)
fn uses_dir(pid: i32, dir: &Path) -> bool {
    if std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir)) {
        return true;
    }
    let text = dir.to_string_lossy();
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
        let cmdline = String::from_utf8_lossy(&c).replace('\0', " ");
        cmdline.contains(&format!("{text}/")) || cmdline.contains(&format!("{text} "))
    })
}

/// A process that exists and is not a zombie.
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')))
}

/// Removes the System V segment a dead postmaster recorded in `postmaster.pid`, if it still
/// exists with the same key and nothing is attached. Returns 1 when one was removed.
fn remove_pg_segment(data_dir: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(data_dir.join("postmaster.pid")) else { return 0 };
    let Some((key, shmid)) = parse_shm_line(&text) else { return 0 };
    // SAFETY: shmctl with IPC_STAT writes into a zeroed, properly sized shmid_ds; IPC_RMID
    // takes no buffer.
    unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        if libc::shmctl(shmid, libc::IPC_STAT, &mut ds) != 0 || ds.shm_perm.__key != key || ds.shm_nattch != 0 {
            return 0;
        }
        usize::from(libc::shmctl(shmid, libc::IPC_RMID, std::ptr::null_mut()) == 0)
    }
}

/// Line 7 of postmaster.pid: the shared memory key and id ("  5432001     3").
fn parse_shm_line(postmaster_pid: &str) -> Option<(libc::key_t, libc::c_int)> {
    let mut fields = postmaster_pid.lines().nth(6)?.split_whitespace();
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Bytes allocated to the files below `path`.
fn tree_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    let children = std::fs::read_dir(path).into_iter().flatten().flatten();
    own + children.map(|e| tree_bytes(&e.path())).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_segment_from_postmaster_pid() {
        let text = "4242\n/dev/shm/ordlab-x/pg-data\n1700000000\n5432\n/dev/shm/ordlab-x/pg-sock\n127.0.0.1\n  5432001        17\nready   \n";
        assert_eq!(parse_shm_line(text), Some((5432001, 17)));
        assert_eq!(parse_shm_line("4242\n/x\n"), None);
    }

    #[test]
    fn one_line_names_what_was_reclaimed() {
        let r = Reclaimed {
            containers: 2,
            dirs: 1,
            dir_bytes: 39 * 1_048_576,
            shm_segments: 1,
            owners: [41, 42].into(),
            ..Reclaimed::default()
        };
        assert_eq!(
            r.to_string(),
            "reclaimed what killed ordlab runs left behind: 2 containers, 1 private dir (39.0 MB), 1 shared-memory segment (dead owner pid 41, 42)"
        );
        assert!(Reclaimed::default().is_empty());
    }

    /// A dead run's registered dirs go wherever they are (here in a root the owner-file scan
    /// never reads); a live run's stay, and so does a listed dir that another run now owns.
    #[test]
    fn reclaims_the_registered_dirs_of_dead_owners_wherever_they_are() {
        use crate::service::registry::file_text;
        let (registry, disk) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let me = Owner::current().clone();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = Owner { pid: child.id(), ..me.clone() };
        child.wait().unwrap();
        let dir = |name: &str, owner: Option<&Owner>| {
            let d = disk.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("appendonly.aof"), "*1\r\n").unwrap();
            if let Some(o) = owner {
                std::fs::write(d.join("owner"), o.file_text()).unwrap();
            }
            d
        };
        let (killed, unmarked) = (dir("ordlab-persist-dead", Some(&dead)), dir("ordlab-persist-old", None));
        let (live, reused) = (dir("ordlab-persist-live", Some(&me)), dir("ordlab-persist-reused", Some(&me)));
        let dead_file = registry.path().join(format!("ordlab-paths-{}", dead.pid));
        let missing = disk.path().join("ordlab-persist-gone");
        std::fs::write(&dead_file, file_text(&dead, &[killed.clone(), unmarked.clone(), reused.clone(), missing]))
            .unwrap();
        // Killed between writing its registry's rewrite and renaming it over the registry.
        let staged = dir("ordlab-persist-staged", None);
        let staged_file = registry.path().join(format!("ordlab-paths-{}.new", dead.pid));
        std::fs::write(&staged_file, file_text(&dead, std::slice::from_ref(&staged))).unwrap();
        // Killed while writing that rewrite: empty, it is removed (its writer is gone); a
        // live process's is left to it.
        // (No process has pid 2^32 - 1: pids stop at 2^22.)
        let cut_file = registry.path().join(format!("ordlab-paths-{}.new", u32::MAX));
        let live_cut = registry.path().join(format!("ordlab-paths-{}.new", me.pid));
        std::fs::write(&cut_file, "").unwrap();
        std::fs::write(&live_cut, "pid").unwrap();
        let live_file = registry.path().join(format!("ordlab-paths-{}", me.pid));
        std::fs::write(&live_file, file_text(&me, std::slice::from_ref(&live))).unwrap();
        let mut r = Reclaimed::default();
        reap_registry(registry.path(), &mut r);
        assert!(!killed.exists() && !unmarked.exists() && !staged.exists(), "a dead run's registered dirs are left");
        assert!(!staged_file.exists() && !cut_file.exists() && live_cut.exists());
        assert!(live.exists() && reused.exists());
        assert!(!dead_file.exists() && live_file.exists());
        assert_eq!((r.dirs, r.owners.clone()), (3, [dead.pid].into()));
        assert!(r.dir_bytes > 0);
    }

    #[test]
    fn reclaims_only_dirs_of_dead_owners() {
        let root = tempfile::tempdir().unwrap();
        let me = Owner::current().clone();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = Owner { pid: child.id(), ..me.clone() };
        child.wait().unwrap();
        for (name, owner) in [("ordlab-live", Some(&me)), ("ordlab-dead", Some(&dead)), ("ordlab-old", None)] {
            let dir = root.path().join(name);
            std::fs::create_dir_all(dir.join("pg-data")).unwrap();
            std::fs::write(dir.join("pg-data/PG_VERSION"), "15\n").unwrap();
            if let Some(o) = owner {
                std::fs::write(dir.join("owner"), o.file_text()).unwrap();
            }
        }
        std::fs::write(root.path().join("other"), "").unwrap();
        let mut r = Reclaimed::default();
        reap_dirs(root.path(), &mut r);
        let mut left: Vec<String> =
            std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["ordlab-live", "ordlab-old", "other"]);
        assert_eq!((r.dirs, r.processes, r.shm_segments), (1, 0, 0));
        assert!(r.dir_bytes > 0);
        assert_eq!(r.owners, [dead.pid].into());
    }
}
