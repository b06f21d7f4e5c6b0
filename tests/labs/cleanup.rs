//! Everything the tool starts it stops: servers, consumer processes and temp dirs, after a
//! run, after a run that fails, and after Ctrl-C in the middle of one.

use super::support;
use std::process::{Child, Stdio};

/// Start `ordlab` with `args`, record every process below it until it exits (calling `poke`
/// once some consumer has started), and return the exit code and the processes seen.
fn watch(args: &[&str], tmp: &std::path::Path, mut poke: impl FnMut(&Child)) -> (Option<i32>, Vec<u32>, String) {
    let mut child = support::ordlab(tmp).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut seen: Vec<u32> = Vec::new();
    let mut poked = false;
    let status = loop {
        for pid in support::descendants(child.id()) {
            if !seen.contains(&pid) {
                seen.push(pid);
            }
        }
        if !poked && seen.len() >= 3 && is_consumer_running(child.id()) {
            poke(&child);
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

fn is_consumer_running(root: u32) -> bool {
    support::descendants(root)
        .iter()
        .any(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains("__role")))
}

fn assert_nothing_left(seen: &[u32], tmp: &std::path::Path) {
    assert!(seen.len() >= 2, "expected servers and consumers under ordlab, saw {seen:?}");
    assert!(
        support::eventually(10, || seen.iter().all(|p| !support::alive(*p))),
        "still running: {:?}",
        seen.iter().filter(|p| support::alive(**p)).collect::<Vec<_>>()
    );
    assert!(support::entries(tmp).is_empty(), "temp dirs left: {:?}", support::entries(tmp));
}

#[test]
fn nothing_is_left_after_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, seen, stderr) =
        watch(&["run", "baseline", "--runs", "2", "--time-scale", "0.25", "--backend", "local"], tmp.path(), |_| {});
    assert_eq!(code, Some(0), "{stderr}");
    assert_nothing_left(&seen, tmp.path());
}

#[test]
fn nothing_is_left_after_a_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The servers start, then the run fails on a variant the lab does not have.
    let (code, seen, stderr) =
        watch(&["run", "baseline", "--variant", "nope", "--backend", "local"], tmp.path(), |_| {});
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("has no variant \"nope\""), "{stderr}");
    assert!(support::eventually(10, || seen.iter().all(|p| !support::alive(*p))));
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
}

#[test]
fn nothing_is_left_after_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, seen, stderr) = watch(&["run", "baseline", "--runs", "50", "--backend", "local"], tmp.path(), |child| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
            .unwrap();
    });
    assert_eq!(code, Some(130), "{stderr}");
    assert_nothing_left(&seen, tmp.path());
}
