//! SIGKILL at seeded-random moments (local backend): `ordlab` is killed while its servers
//! start, while it runs and while it tears down, in `baseline`, in `failover` (Redis nodes of
//! its own), with Python workers (`foreign-ordering`), and exploring with Python workers forked
//! by a fork server (`explore foreign-ordering`); then it runs once more, and nothing
//! any killed run made is left: no process (servers, `__role` children, workers), no private
//! dir (the private root, the disk root), no PostgreSQL shared-memory segment.
//!
//! The moments are drawn from a fixed seed over each lab's span, measured by one whole run
//! first, so they fall in start, runs and teardown on a slow machine as on a fast one.
//! Processes are found by a marker in their environment (every child inherits it), segments
//! by the postmasters' own `postmaster.pid` files.

use super::support;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

/// The commands killed, and how many moments each.
const LABS: [(&[&str], usize); 4] = [
    (&["run", "baseline", "--runs", "2", "--time-scale", "0.25"], 5),
    (&["run", "failover", "--variant", "no-lag", "--runs", "1", "--time-scale", "0.25"], 4),
    (&["run", "foreign-ordering", "--variant", "python-plain", "--runs", "1", "--time-scale", "0.25"], 2),
    (&["explore", "foreign-ordering", "--variant", "python-plain"], 2),
];

/// `args` (`run …`, `explore …`) below `tmp` (private root) and `disk` (disk root), marked by
/// `marker`.
fn command(tmp: &Path, disk: &Path, marker: &str, args: &[&str]) -> std::process::Command {
    let mut c = support::ordlab(tmp);
    c.args(args).args(["--backend", "local"]);
    if args[0] == "run" {
        c.arg("--quiet");
    }
    c.env("ORDLAB_DISK_TMPDIR", disk).env("ORDLAB_KILL_TEST", marker).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// Live processes whose environment carries the marker.
pub(super) fn marked(marker: &str) -> Vec<u32> {
    let needle = format!("ORDLAB_KILL_TEST={marker}");
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .filter(|pid| support::alive(*pid))
        .collect()
}

/// The shared-memory segments the postmasters below `tmp` recorded (line 7 of postmaster.pid).
fn segments_recorded(tmp: &Path, into: &mut BTreeSet<i32>) {
    for dir in support::entries(tmp) {
        let pid_file = tmp.join(dir).join("pg-data/postmaster.pid");
        let Ok(text) = std::fs::read_to_string(pid_file) else { continue };
        if let Some(id) = text.lines().nth(6).and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()) {
            into.insert(id);
        }
    }
}

fn segment_exists(shmid: i32) -> bool {
    // SAFETY: IPC_STAT writes into a zeroed shmid_ds of the right size.
    unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        libc::shmctl(shmid, libc::IPC_STAT, &mut ds) == 0
    }
}

#[test]
fn sigkill_at_random_moments_leaves_nothing_after_one_more_run() {
    let (tmp, disk) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = format!("{:016x}", rand::random::<u64>());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let mut segments = BTreeSet::new();
    let mut moments = Vec::new();
    let started = Instant::now();
    for (args, n) in LABS {
        // The span of a whole run, measured: the moments fall over it and a little past it.
        let t = Instant::now();
        let status = command(tmp.path(), disk.path(), &marker, args).status().unwrap();
        assert!(status.code().is_some_and(|c| c <= 1), "{args:?}: {status:?}");
        let span = t.elapsed();
        for _ in 0..n {
            let at = span.mul_f64(rng.random_range(0.0..1.05));
            let mut child = command(tmp.path(), disk.path(), &marker, args).spawn().unwrap();
            std::thread::sleep(at);
            kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
            child.wait().unwrap();
            // A SIGKILLed postmaster leaves its postmaster.pid, with the segment's id.
            segments_recorded(tmp.path(), &mut segments);
            moments.push(format!("{} {} at {:.2}/{:.2}s", args[0], args[1], at.as_secs_f64(), span.as_secs_f64()));
        }
    }
    let left_dirs = support::entries(tmp.path()).len() + support::entries(disk.path()).len();
    eprintln!("kill moments: {}; left before one more run: {left_dirs} entries", moments.join(", "));
    assert!(left_dirs > 0, "the kills left nothing to reclaim: the moments missed every run");

    let out = command(tmp.path(), disk.path(), &marker, &["run", "baseline", "--runs", "1", "--time-scale", "0.25"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(support::eventually(15, || marked(&marker).is_empty()), "processes left: {:?}", marked(&marker));
    let (root_left, disk_left) = (support::entries(tmp.path()), support::entries(disk.path()));
    assert!(root_left.is_empty(), "left in the private root: {root_left:?} ({stderr})");
    assert!(disk_left.is_empty(), "left on disk: {disk_left:?}");
    let live: Vec<&i32> = segments.iter().filter(|s| segment_exists(**s)).collect();
    assert!(live.is_empty(), "shared-memory segments left: {live:?} of {segments:?}");
    eprintln!(
        "kill test: {} moments, {} segments recorded, all reclaimed in {:.1}s",
        moments.len(),
        segments.len(),
        started.elapsed().as_secs_f64()
    );
}
