//! Everything the tool starts it stops (local backend): servers, consumer processes and temp
//! dirs, after a run, after a run that fails, after a server that fails to start, and after
//! Ctrl-C while the servers start (~0.1 s) and while the lab runs (~3 s). Each test first
//! checks that something was started, then counts what is left (and prints the counts).

use super::support;
use std::process::{Child, Stdio};
use std::time::Instant;

/// When to send SIGINT.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Never,
    /// As soon as a server process runs under ordlab (the servers are starting).
    ServerStarting,
    /// Once a role process (a consumer) runs: the lab is running.
    LabRunning,
}

struct Watched {
    code: Option<i32>,
    seen: Vec<u32>,
    /// Those that were ordlab's own children when first seen, with their start times.
    children: Vec<(u32, Option<u64>)>,
    /// How many of them were servers (redis-server, postgres) when first seen.
    servers: usize,
    /// Of those, redis-servers.
    redis_servers: usize,
    stderr: String,
    /// Seconds after spawning at which SIGINT was sent.
    interrupted_at: Option<f64>,
}

/// Starts `ordlab` with `args`, records every process below it until it exits, and interrupts
/// it as `when` says.
fn watch(args: &[&str], tmp: &std::path::Path, env: &[(&str, &str)], when: Interrupt) -> Watched {
    let mut cmd = support::ordlab(tmp);
    cmd.args(args).envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped());
    let spawned = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut seen: Vec<u32> = Vec::new();
    let mut children: Vec<(u32, Option<u64>)> = Vec::new();
    // A pid first seen between fork and exec still runs ordlab: it is told a server by its
    // name on a later look.
    let (mut servers, mut redis_servers): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut interrupted_at = None;
    let status = loop {
        for pid in support::descendants(child.id()) {
            if !seen.contains(&pid) {
                seen.push(pid);
                if support::parent(pid) == Some(child.id()) {
                    children.push((pid, support::start_ticks(pid)));
                }
            }
            if !servers.contains(&pid) && is_server(pid) {
                servers.push(pid);
            }
            if !redis_servers.contains(&pid) && is_redis(pid) {
                redis_servers.push(pid);
            }
        }
        let due = match when {
            Interrupt::Never => false,
            Interrupt::ServerStarting => seen.iter().any(|p| is_server(*p)),
            Interrupt::LabRunning => seen.len() >= 3 && support::is_role_running(child.id()),
        };
        if due && interrupted_at.is_none() {
            sigint(&child);
            interrupted_at = Some(spawned.elapsed().as_secs_f64());
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let (servers, redis_servers) = (servers.len(), redis_servers.len());
    Watched { code: status.code(), seen, children, servers, redis_servers, stderr, interrupted_at }
}

fn sigint(child: &Child) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
}

fn is_redis(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("redis-server"))
}

fn is_server(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.starts_with("redis-server") || c.starts_with("postgres"))
}

/// Asserts that at least `min_started` processes ran below ordlab, then that none of them and
/// no temp dir is left. Prints the counts.
fn assert_nothing_left(case: &str, w: &Watched, tmp: &std::path::Path, min_started: usize) {
    assert!(w.seen.len() >= min_started, "{case}: expected ≥ {min_started} processes under ordlab, saw {:?}", w.seen);
    let cleared = support::eventually(10, || w.seen.iter().all(|p| !support::alive(*p)));
    let left: Vec<&u32> = w.seen.iter().filter(|p| support::alive(**p)).collect();
    let dirs = support::entries(tmp);
    eprintln!(
        "leak check [{case}]: started {} processes ({} servers), interrupted at {:?} s; left {} processes, {} private dirs",
        w.seen.len(),
        w.servers,
        w.interrupted_at,
        left.len(),
        dirs.len()
    );
    assert!(cleared, "{case}: still running: {left:?}");
    assert!(dirs.is_empty(), "{case}: temp dirs left: {dirs:?}");
}

#[test]
fn nothing_is_left_after_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "baseline", "--runs", "2", "--time-scale", "0.25", "--backend", "local"];
    let w = watch(&args, tmp.path(), &[], Interrupt::Never);
    assert_eq!(w.code, Some(0), "{}", w.stderr);
    assert_nothing_left("normal run", &w, tmp.path(), 4);
}

#[test]
fn nothing_is_left_after_a_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The servers start, then the run fails: this redis-server admits two clients, fewer than
    // the runner and its consumers need.
    let wrapper = tmp.path().join("redis-server-2-clients");
    let redis = ordlab::service::find_redis().unwrap().path;
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {} \"$@\" --maxclients 2\n", redis.display())).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = [("ORDLAB_REDIS_SERVER", wrapper.to_str().unwrap())];
    let args = ["run", "baseline", "--runs", "1", "--time-scale", "0.25", "--backend", "local"];
    let w = watch(&args, tmp.path(), &env, Interrupt::Never);
    assert_eq!(w.code, Some(2), "{}", w.stderr);
    assert_eq!(w.stderr.trim_end().lines().count(), 1, "{}", w.stderr);
    std::fs::remove_file(&wrapper).unwrap();
    assert_nothing_left("failed run", &w, tmp.path(), 2);
}

#[test]
fn nothing_is_left_when_one_server_fails_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    // redis-server exits at once (`false`) while PostgreSQL starts: PostgreSQL must go too.
    let env = [("ORDLAB_REDIS_SERVER", "/bin/false")];
    let w = watch(&["run", "baseline", "--backend", "local"], tmp.path(), &env, Interrupt::Never);
    assert_eq!(w.code, Some(2), "{}", w.stderr);
    assert!(w.stderr.contains("redis-server did not become ready"), "{}", w.stderr);
    assert_eq!(w.stderr.trim_end().lines().count(), 1, "{}", w.stderr);
    assert_nothing_left("one server fails to start", &w, tmp.path(), 2);
}

#[test]
fn nothing_is_left_after_ctrl_c_while_the_servers_start() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "baseline", "--runs", "50", "--backend", "local"];
    let w = watch(&args, tmp.path(), &[], Interrupt::ServerStarting);
    assert!(w.interrupted_at.is_some(), "no server process was ever seen");
    assert_eq!(w.code, Some(130), "{}", w.stderr);
    assert_nothing_left("Ctrl-C while the servers start", &w, tmp.path(), 1);
}

#[test]
fn nothing_is_left_after_ctrl_c_while_the_lab_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "baseline", "--runs", "50", "--backend", "local"];
    let w = watch(&args, tmp.path(), &[], Interrupt::LabRunning);
    assert!(w.interrupted_at.is_some(), "no consumer process was ever seen");
    assert_eq!(w.code, Some(130), "{}", w.stderr);
    assert_nothing_left("Ctrl-C while the lab runs", &w, tmp.path(), 3);
}

#[test]
fn nothing_is_left_after_ctrl_c_in_a_cluster_run() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "cluster", "--variant", "resharding", "--runs", "5", "--backend", "local"];
    let w = watch(&args, tmp.path(), &[], Interrupt::LabRunning);
    assert!(w.interrupted_at.is_some(), "no worker process was ever seen");
    assert_eq!(w.code, Some(130), "{}", w.stderr);
    // The invocation's Redis and the cluster's three masters ran when Ctrl-C came (the workers
    // start once the cluster is up).
    assert!(w.redis_servers >= 4, "{} redis-servers seen", w.redis_servers);
    assert_nothing_left("Ctrl-C in a cluster run", &w, tmp.path(), 6);
}

/// ordlab exits only once its child processes are reaped, after a run and after Ctrl-C while
/// role processes run: none of them is left the moment it exits, not even as a zombie. This
/// test process is made a child subreaper, so a child ordlab left behind is re-parented to it
/// and stays visible as a zombie (instead of being reaped by init at init's own pace).
#[test]
fn ordlab_exits_only_once_its_children_are_reaped() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer argument only.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }, 0);
    let me = std::process::id();
    for (case, args, when, code) in [
        ("a run", vec!["run", "baseline", "--runs", "1", "--time-scale", "0.25"], Interrupt::Never, 0),
        ("Ctrl-C while the lab runs", vec!["run", "baseline", "--runs", "50"], Interrupt::LabRunning, 130),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = args.clone();
        all.extend(["--backend", "local"]);
        let w = watch(&all, tmp.path(), &[], when);
        assert_eq!(w.code, Some(code), "{case}: {}", w.stderr);
        // Its children: the two servers and at least one consumer (a role process: Ctrl-C
        // waits for one to run).
        assert!(w.children.len() >= 3, "{case}: children seen: {:?}", w.children);
        // Still there (the same process: same pid, same start) and now a child of this process.
        let left: Vec<u32> = w
            .children
            .iter()
            .filter(|(p, start)| support::parent(*p) == Some(me) && support::start_ticks(*p) == *start)
            .map(|(p, _)| *p)
            .collect();
        for pid in &left {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(*pid as i32), None);
        }
        eprintln!("zombie check [{case}]: {} children, {} left unreaped at exit", w.children.len(), left.len());
        assert!(left.is_empty(), "{case}: children ordlab did not wait for: {left:?}");
    }
}
