//! Everything the tool starts it stops: servers, consumer processes and temp dirs, after a
//! run, after a run that fails, and after Ctrl-C in the middle of one.

use super::support;
use std::process::{Child, Stdio};

/// A process seen below `ordlab`: its pid and its command line when first seen.
struct Seen {
    pid: u32,
    cmdline: String,
}

/// Start `ordlab` with `args`, record every process below it until it exits (calling `poke`
/// with the processes seen once some consumer has started), and return the exit code, the
/// processes seen and stderr.
fn watch(
    args: &[&str],
    tmp: &std::path::Path,
    mut poke: impl FnMut(&Child, &[Seen]),
) -> (Option<i32>, Vec<Seen>, String) {
    let mut child = support::ordlab(tmp).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut seen: Vec<Seen> = Vec::new();
    let mut poked = false;
    let status = loop {
        for pid in support::descendants(child.id()) {
            if !seen.iter().any(|s| s.pid == pid) {
                let cmdline =
                    std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default().replace('\0', " ");
                seen.push(Seen { pid, cmdline });
            }
        }
        if !poked && seen.iter().any(|s| s.cmdline.contains("__role")) {
            poke(&child, &seen);
            poked = true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status.code(), seen, stderr)
}

/// First that everything worth stopping was started (a Redis, a PostgreSQL, a consumer
/// process), then that none of it is left, nor any temp dir.
fn assert_nothing_left(seen: &[Seen], tmp: &std::path::Path) {
    for what in ["redis-server", "postgres", "__role"] {
        assert!(
            seen.iter().any(|s| s.cmdline.contains(what)),
            "no {what} was started under ordlab: {:?}",
            seen.iter().map(|s| &s.cmdline).collect::<Vec<_>>()
        );
    }
    assert!(
        support::eventually(10, || seen.iter().all(|s| !support::alive(s.pid))),
        "still running: {:?}",
        seen.iter().filter(|s| support::alive(s.pid)).map(|s| &s.cmdline).collect::<Vec<_>>()
    );
    assert!(support::entries(tmp).is_empty(), "temp dirs left: {:?}", support::entries(tmp));
}

fn kill(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
}

#[test]
fn nothing_is_left_after_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, seen, stderr) =
        watch(&["run", "baseline", "--runs", "2", "--time-scale", "0.25", "--backend", "local"], tmp.path(), |_, _| {});
    assert_eq!(code, Some(0), "{stderr}");
    assert_nothing_left(&seen, tmp.path());
}

#[test]
fn nothing_is_left_after_a_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The run fails in the middle: its Redis dies (SIGKILL) once a consumer is running.
    let (code, seen, stderr) =
        watch(&["run", "baseline", "--runs", "50", "--backend", "local"], tmp.path(), |_, seen| {
            let redis = seen.iter().find(|s| s.cmdline.contains("redis-server")).expect("a redis-server runs");
            kill(redis.pid, nix::sys::signal::Signal::SIGKILL);
        });
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line says what failed: {stderr}");
    assert_nothing_left(&seen, tmp.path());
}

#[test]
fn nothing_is_left_after_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, seen, stderr) =
        watch(&["run", "baseline", "--runs", "50", "--backend", "local"], tmp.path(), |child, _| {
            kill(child.id(), nix::sys::signal::Signal::SIGINT)
        });
    assert_eq!(code, Some(130), "{stderr}");
    assert_nothing_left(&seen, tmp.path());
}
