//! The reaper (local backend): a SIGKILLed ordlab cannot clean up, so the next ordlab does.
//! The killed run's private dir (with PostgreSQL's data and its dynamic shared memory) and
//! the System V segment of its dead postmaster are left; the next run removes both and says
//! so in one line. Each test counts what was left before and after (and prints the counts).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::support;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The postmaster of the run below `root`: its pid, from the process tree.
fn postmaster(root: u32) -> Option<u32> {
    support::descendants(root).into_iter().find(|p| {
        std::fs::read_to_string(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.starts_with("/") && c.contains("postgres\0-D"))
    })
}

/// Does System V segment `shmid` exist?
fn segment_exists(shmid: i32) -> bool {
    // SAFETY: IPC_STAT writes into a zeroed shmid_ds of the right size.
    unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        libc::shmctl(shmid, libc::IPC_STAT, &mut ds) == 0
    }
}

/// Line 7 of postmaster.pid: "key shmid".
fn shmid(data_dir: &Path) -> i32 {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).unwrap();
    text.lines().nth(6).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap()
}

/// Runs `ordlab run baseline --runs 1` in `tmp` and returns its stderr.
fn one_more_run(tmp: &Path) -> String {
    let out = support::ordlab(tmp)
        .args(["run", "baseline", "--runs", "1", "--time-scale", "0.25", "--backend", "local", "--quiet"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

#[test]
fn the_next_run_reclaims_what_a_sigkilled_run_left() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = support::ordlab(tmp.path())
        .args(["run", "baseline", "--runs", "50", "--backend", "local", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(support::eventually(60, || support::is_role_running(child.id())), "the lab never started");
    let pm = postmaster(child.id()).expect("a postmaster under ordlab");
    let servers = support::descendants(child.id());
    // PostgreSQL keeps its dynamic shared memory in the data dir, not in /dev/shm.
    let maps = std::fs::read_to_string(format!("/proc/{pm}/maps")).unwrap();
    assert!(!maps.contains("/dev/shm/PostgreSQL."), "DSM in /dev/shm:\n{maps}");
    assert!(maps.contains("/pg_dynshmem/"), "no DSM file in the data dir:\n{maps}");

    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // The servers die with it (parent-death signal); their files stay.
    assert!(support::eventually(10, || servers.iter().all(|p| !support::alive(*p))), "servers outlived ordlab");
    // Its private dir, and the registry that lists it.
    let left: Vec<PathBuf> = support::entries(tmp.path()).iter().map(|d| tmp.path().join(d)).collect();
    let dirs: Vec<PathBuf> = left.iter().filter(|p| p.is_dir()).cloned().collect();
    assert_eq!(dirs.len(), 1, "{left:?}");
    assert_eq!(left.len(), 2, "{left:?}");
    let segment = shmid(&dirs[0].join("pg-data"));
    assert!(segment_exists(segment), "the dead postmaster's segment {segment} is already gone");
    eprintln!("leak check [SIGKILL, local]: left 1 private dir, 1 shared-memory segment ({segment}), 0 processes");

    let stderr = one_more_run(tmp.path());
    let line = stderr.lines().find(|l| l.contains("reclaimed")).unwrap_or_else(|| panic!("no reclaim line: {stderr}"));
    assert!(line.contains("1 private dir") && line.contains("1 shared-memory segment"), "{line}");
    assert!(line.contains(&child.id().to_string()), "{line}");
    let left = support::entries(tmp.path());
    eprintln!(
        "leak check [SIGKILL, local, after one more run]: left {} private dirs, segment exists: {}",
        left.len(),
        segment_exists(segment)
    );
    assert!(left.is_empty(), "{left:?}");
    assert!(!segment_exists(segment));
}

#[test]
fn the_reaper_kills_a_server_that_outlived_its_owner() {
    // A redis-server in a private dir whose owner is dead (the way a server would be left if
    // its parent-death signal never fired).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ordlab-orphan");
    std::fs::create_dir(&dir).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = ordlab::service::Owner { pid: gone.id(), ..ordlab::service::Owner::current().clone() };
    gone.wait().unwrap();
    std::fs::write(dir.join("owner"), dead.file_text()).unwrap();
    let port = ordlab::service::process::free_port().unwrap().to_string();
    let redis = ordlab::service::find_redis().unwrap().path;
    let orphan = std::process::Command::new(redis)
        .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut orphan = KillOnDrop(orphan);
    assert!(
        support::eventually(10, || std::fs::read_link(format!("/proc/{}/cwd", orphan.0.id())).is_ok_and(|d| d == dir))
    );

    let stderr = one_more_run(tmp.path());
    let line = stderr.lines().find(|l| l.contains("reclaimed")).unwrap_or_else(|| panic!("no reclaim line: {stderr}"));
    assert!(line.contains("1 private dir") && line.contains("1 orphaned server"), "{line}");
    let status = orphan.0.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "{status:?}");
    assert!(!dir.exists());
}

/// A child the test started itself, killed if the test fails before it is reaped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `persistence` keeps its servers' files on a real disk (`ORDLAB_DISK_TMPDIR`), outside the
/// private root: a SIGKILLed run leaves them there, and the next run reclaims them through
/// the run's registry of private dirs (the owner-file scan of the private root never sees
/// them).
#[test]
fn the_next_run_reclaims_a_sigkilled_runs_dirs_outside_the_private_root() {
    let (tmp, disk) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = support::ordlab(tmp.path())
        .args(["run", "persistence", "--variant", "aof-always", "--runs", "20", "--backend", "local", "--quiet"])
        .env("ORDLAB_DISK_TMPDIR", disk.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let has_data_dir = || support::entries(disk.path()).iter().any(|d| d.starts_with("ordlab-persist-"));
    assert!(support::eventually(60, has_data_dir), "no data dir was ever made in {}", disk.path().display());
    let servers = support::descendants(child.id());
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert!(support::eventually(10, || servers.iter().all(|p| !support::alive(*p))), "servers outlived ordlab");
    let left = support::entries(disk.path());
    eprintln!("leak check [SIGKILL, persistence]: left {} data dirs on disk: {left:?}", left.len());
    assert!(!left.is_empty());

    let stderr = one_more_run(tmp.path());
    let line = stderr.lines().find(|l| l.contains("reclaimed")).unwrap_or_else(|| panic!("no reclaim line: {stderr}"));
    assert!(line.contains(&child.id().to_string()), "{line}");
    let (disk_left, root_left) = (support::entries(disk.path()), support::entries(tmp.path()));
    eprintln!("leak check [after one more run]: {} on disk, {} in the private root", disk_left.len(), root_left.len());
    assert!(disk_left.is_empty(), "left on disk: {disk_left:?}");
    assert!(root_left.is_empty(), "left in the private root: {root_left:?}");
}
