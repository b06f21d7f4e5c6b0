//! Child processes that cannot outlive us: each runs in its own process group and
//! receives SIGKILL when we die. An [`OwnedChild`] stops, reaps and forgets its
//! process on drop, so no server or zombie is left behind on any exit path.
//!
//! Spawn from an async task or the main thread, not from `spawn_blocking`: the
//! parent-death signal fires when the spawning *thread* exits.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// A `Command` whose child gets its own process group (a terminal Ctrl-C reaches
/// only us) and `PR_SET_PDEATHSIG = SIGKILL` (it dies if we are SIGKILLed).
pub fn owned_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.process_group(0);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe libc calls run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd
}

/// How an [`OwnedChild`] is asked to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopPolicy {
    /// SIGKILL the whole process group at once.
    Kill,
    /// Send `signal` to the child, wait up to `grace`, then SIGKILL the group.
    Graceful { signal: Signal, grace: Duration },
}

impl StopPolicy {
    /// PostgreSQL's "immediate shutdown": SIGQUIT, then SIGKILL after 2 s.
    pub const POSTGRES: StopPolicy = StopPolicy::Graceful { signal: Signal::SIGQUIT, grace: Duration::from_secs(2) };
}

/// A spawned child that is stopped and reaped when dropped.
#[derive(Debug)]
pub struct OwnedChild {
    child: Option<Child>,
    name: String,
    policy: StopPolicy,
    log: Option<PathBuf>,
}

impl OwnedChild {
    /// Spawns `cmd` (normally built by [`owned_command`]).
    pub fn spawn(
        cmd: &mut Command,
        name: impl Into<String>,
        policy: StopPolicy,
        log: Option<PathBuf>,
    ) -> std::io::Result<OwnedChild> {
        let child = cmd.spawn()?;
        Ok(OwnedChild { child: Some(child), name: name.into(), policy, log })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// A short name used in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends `signal` to the child only (not its group), e.g. SIGSTOP in a fault lab.
    pub fn signal(&self, signal: Signal) -> nix::Result<()> {
        kill(Pid::from_raw(self.pid() as i32), signal)
    }

    /// Returns the exit status if the child has already exited (reaping it).
    pub fn try_exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// The last `lines` lines of the child's log file, joined with " | ".
    pub fn log_tail(&self, lines: usize) -> String {
        self.log.as_ref().map(|p| log_tail(&std::fs::read_to_string(p).unwrap_or_default(), lines)).unwrap_or_default()
    }

    /// Stops the child without blocking the async runtime.
    pub async fn stop(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let group = Pid::from_raw(child.id() as i32);
        if let StopPolicy::Graceful { signal, grace } = self.policy {
            // The leader's pid equals the group id; only the leader gets `signal`.
            if kill(group, signal).is_ok() {
                let deadline = Instant::now() + grace;
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    }

    fn stop_blocking(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let group = Pid::from_raw(child.id() as i32);
        if let StopPolicy::Graceful { signal, grace } = self.policy {
            // The leader's pid equals the group id; only the leader gets `signal`.
            if kill(group, signal).is_ok() {
                let deadline = Instant::now() + grace;
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = child.wait();
    }
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        self.stop_blocking();
    }
}

/// Kills and reaps every child process this process still has: called last, after the
/// runtime that owned them is gone, so that ordlab exits only once its children are reaped
/// (none is left as a zombie for init). A child that leads its own process group (every
/// [`owned_command`] does) is killed with its group; the wait is at most 5 s.
pub fn reap_children() {
    kill_and_reap(children());
}

/// This process's children, from `/proc`.
pub(crate) fn children() -> Vec<i32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

/// SIGKILLs `children` (with their groups when they lead one) and waits for each.
fn kill_and_reap(children: Vec<i32>) {
    for &pid in &children {
        let pid = Pid::from_raw(pid);
        let own_group = nix::unistd::getpgid(Some(pid)).is_ok_and(|g| g == pid);
        let _ = if own_group { killpg(pid, Signal::SIGKILL) } else { kill(pid, Signal::SIGKILL) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut waiting: Vec<Pid> = children.into_iter().map(Pid::from_raw).collect();
    while !waiting.is_empty() && Instant::now() < deadline {
        use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
        // Gone (reaped, or not ours: ECHILD) or still running.
        waiting.retain(|&pid| matches!(waitpid(pid, Some(WaitPidFlag::WNOHANG)), Ok(WaitStatus::StillAlive)));
        if !waiting.is_empty() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Wait until every process of `pids` has ended (gone, or a zombie: its sockets are closed
/// either way), at most `patience`.
pub(crate) fn wait_gone(pids: &[i32], patience: Duration) {
    let deadline = Instant::now() + patience;
    let running = |pid: &i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
            .unwrap_or(false)
    };
    while pids.iter().any(running) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the parenthesised command name: state, ppid, …
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

/// The last `lines` non-empty lines of `text`, joined with " | ".
pub fn log_tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// A currently free TCP port on 127.0.0.1 (bound to port 0, read, released).
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_port_skips_ports_in_use() {
        let held = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let held_port = held.local_addr().unwrap().port();
        let port = free_port().unwrap();
        assert_ne!(port, 0);
        assert_ne!(port, held_port);
    }

    #[test]
    fn log_tail_keeps_last_lines() {
        assert_eq!(log_tail("a\nb\n\nc\nd\n", 2), "c | d");
        assert_eq!(log_tail("", 3), "");
    }

    #[test]
    fn children_left_at_exit_are_killed_and_reaped() {
        // Not owned: nothing stops or waits for them but `kill_and_reap` (given only these, not
        // every child: other tests of this binary run beside it).
        let children: Vec<i32> =
            (0..2).map(|_| Command::new("sleep").arg("30").process_group(0).spawn().unwrap().id() as i32).collect();
        assert!(children.iter().all(|c| super::children().contains(c)));
        kill_and_reap(children.clone());
        for pid in children {
            // Reaped: the pid is gone, not a zombie.
            assert!(kill(Pid::from_raw(pid), None).is_err(), "{pid} is still there");
        }
    }

    #[test]
    fn drop_kills_and_reaps() {
        let mut cmd = owned_command("sleep");
        cmd.arg("30");
        let child = OwnedChild::spawn(&mut cmd, "sleep", StopPolicy::Kill, None).unwrap();
        let pid = Pid::from_raw(child.pid() as i32);
        drop(child);
        // Reaped, so the pid no longer exists at all (not even as a zombie).
        assert!(kill(pid, None).is_err());
    }
}
