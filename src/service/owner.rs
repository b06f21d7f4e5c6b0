//! Who owns a private dir or a container: an ordlab process, identified so that a later
//! ordlab can tell whether that process still runs. A pid alone is not enough (pids are
//! reused), so the identity also holds the process's start time, the boot id and the pid
//! namespace; the reaper reclaims only what a provably dead owner left.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

/// Label keys on containers and networks (a run id and the owner's identity).
pub const LABEL_RUN: &str = "org.ordlab.run";
pub const LABEL_SCOPE: &str = "org.ordlab.scope";
const LABEL_PID: &str = "org.ordlab.owner.pid";
const LABEL_START: &str = "org.ordlab.owner.start";
const LABEL_BOOT: &str = "org.ordlab.owner.boot";
const LABEL_PID_NS: &str = "org.ordlab.owner.pidns";

/// Name of the file in a private dir that records its owner.
pub const OWNER_FILE: &str = "owner";

/// A process, identified across pid reuse and reboots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/<pid>/stat`, field 22).
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id`: changes on every boot.
    pub boot_id: String,
    /// `readlink /proc/<pid>/ns/pid`: pids mean something only within one namespace.
    pub pid_ns: String,
}

/// Whether an owner still runs, as far as this process can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// The process is gone, a zombie, or its pid now names another process.
    Dead,
    /// Recorded during another boot (of this machine or another one).
    OtherBoot,
    /// Another pid namespace: its pids cannot be checked from here.
    Unknown,
}

impl Owner {
    /// This process.
    pub fn current() -> &'static Owner {
        static ME: OnceLock<Owner> = OnceLock::new();
        ME.get_or_init(|| {
            let pid = std::process::id();
            Owner {
                pid,
                start_ticks: start_ticks(pid).unwrap_or(0),
                boot_id: boot_id(),
                pid_ns: std::fs::read_link("/proc/self/ns/pid")
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            }
        })
    }

    /// Is this owner still running?
    pub fn liveness(&self) -> Liveness {
        let me = Owner::current();
        if self.boot_id != me.boot_id {
            return Liveness::OtherBoot;
        }
        if self.pid_ns != me.pid_ns {
            return Liveness::Unknown;
        }
        match process_state(self.pid) {
            Some((state, start)) if state != 'Z' && start == self.start_ticks => Liveness::Alive,
            _ => Liveness::Dead,
        }
    }

    /// The labels that identify this owner on a container or network.
    pub fn labels(&self) -> Vec<(String, String)> {
        vec![
            (LABEL_PID.into(), self.pid.to_string()),
            (LABEL_START.into(), self.start_ticks.to_string()),
            (LABEL_BOOT.into(), self.boot_id.clone()),
            (LABEL_PID_NS.into(), self.pid_ns.clone()),
        ]
    }

    /// The owner recorded in labels, if they are complete.
    pub fn from_labels(labels: &HashMap<String, String>) -> Option<Owner> {
        Some(Owner {
            pid: labels.get(LABEL_PID)?.parse().ok()?,
            start_ticks: labels.get(LABEL_START)?.parse().ok()?,
            boot_id: labels.get(LABEL_BOOT)?.clone(),
            pid_ns: labels.get(LABEL_PID_NS)?.clone(),
        })
    }

    /// The owner file's text: one `key value` per line.
    pub fn file_text(&self) -> String {
        format!("pid {}\nstart {}\nboot {}\npidns {}\n", self.pid, self.start_ticks, self.boot_id, self.pid_ns)
    }

    /// Parses an owner file; None when a field is missing or malformed.
    pub fn parse_file(text: &str) -> Option<Owner> {
        let fields: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once(' ')).collect();
        Some(Owner {
            pid: fields.get("pid")?.parse().ok()?,
            start_ticks: fields.get("start")?.parse().ok()?,
            boot_id: fields.get("boot")?.to_string(),
            pid_ns: fields.get("pidns")?.to_string(),
        })
    }

    /// Reads `<dir>/owner`.
    pub fn read_from_dir(dir: &Path) -> Option<Owner> {
        Owner::parse_file(&std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?)
    }
}

/// This process's run id: random, the same for every server it starts.
pub fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{:016x}", rand::random::<u64>()))
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn start_ticks(pid: u32) -> Option<u64> {
    process_state(pid).map(|(_, start)| start)
}

/// (state letter, start time) of a process, from `/proc/<pid>/stat`.
fn process_state(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// Parses the fields after the parenthesised command name: field 3 is the state, field 22
/// the start time.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split(' ').collect();
    let state = fields.first()?.chars().next()?;
    Some((state, fields.get(22 - 3)?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_spaces_in_the_name() {
        let stat = "42 (my (odd) name) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(stat), Some(('S', 987654)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_dead_one_is_not() {
        let me = Owner::current();
        assert!(me.start_ticks > 0 && !me.boot_id.is_empty() && !me.pid_ns.is_empty());
        assert_eq!(me.liveness(), Liveness::Alive);
        // Same pid, another start time: the pid was reused.
        let reused = Owner { start_ticks: me.start_ticks + 1, ..me.clone() };
        assert_eq!(reused.liveness(), Liveness::Dead);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(Owner { pid, ..me.clone() }.liveness(), Liveness::Dead);
        assert_eq!(Owner { boot_id: "other".into(), ..me.clone() }.liveness(), Liveness::OtherBoot);
        assert_eq!(Owner { pid_ns: "pid:[1]".into(), ..me.clone() }.liveness(), Liveness::Unknown);
    }

    #[test]
    fn round_trips_through_labels_and_files() {
        let me = Owner::current().clone();
        let labels: HashMap<String, String> = me.labels().into_iter().collect();
        assert_eq!(Owner::from_labels(&labels), Some(me.clone()));
        assert_eq!(Owner::parse_file(&me.file_text()), Some(me));
        assert_eq!(Owner::parse_file("pid 12\n"), None);
    }
}
