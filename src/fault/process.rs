//! The actions on a process: SIGKILL, a pause (SIGSTOP, then SIGCONT after a while), and a
//! skewed wall clock (libfaketime, preloaded into the process at its start, reading its offset
//! from a file the fault rewrites when it fires).
//!
//! A process group is what ordlab starts (a worker and its children): the signals go to the
//! group, so an interpreter's helpers stop and die with it.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Why an action on a process could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ProcessFaultError {
    #[error("libfaketime is not installed (no {0}): install Debian's faketime package (just setup does)")]
    NoFaketime(String),
    #[error("cannot write the clock skew file {path}: {source}")]
    SkewFile { path: String, source: std::io::Error },
    #[error("cannot start the helper that resumes a paused process: {0}")]
    Resume(std::io::Error),
}

/// SIGKILL process group `pgid` (0: nothing to kill yet).
pub fn kill_group(pgid: u32) {
    if pgid != 0 {
        let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
    }
}

/// SIGSTOP process group `pgid` now; after `pause`, SIGCONT it and call `resumed` (on the
/// tokio runtime the caller runs on).
pub fn pause_group(pgid: u32, pause: Duration, resumed: impl FnOnce() + Send + 'static) {
    if pgid == 0 {
        return;
    }
    let group = Pid::from_raw(pgid as i32);
    let _ = killpg(group, Signal::SIGSTOP);
    tokio::spawn(async move {
        tokio::time::sleep(pause).await;
        let _ = killpg(group, Signal::SIGCONT);
        resumed();
    });
}

/// Stop this very process for `pause`: a detached helper (`sh`, in a group of its own so the
/// SIGSTOP spares it) sends SIGCONT when the time is up. Returns once the process runs again.
pub fn pause_self(pause: Duration) -> Result<(), ProcessFaultError> {
    use std::os::unix::process::CommandExt as _;
    let me = std::process::id();
    let script = format!("sleep {:.3}; kill -CONT {me}", pause.as_secs_f64());
    std::process::Command::new("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(ProcessFaultError::Resume)?;
    let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    Ok(())
}

/// Where Debian's libfaketime may be (its package puts it under the architecture's dir).
pub const LIBFAKETIME: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];

/// A process's skewable wall clock: the environment that preloads libfaketime with its offset
/// in `file` (re-read on every call), and the offset as it is now.
#[derive(Debug)]
pub struct ClockSkew {
    file: PathBuf,
    lib: &'static str,
}

impl ClockSkew {
    /// A clock at offset 0 whose file lives in `dir`.
    pub fn new(dir: &Path, name: &str) -> Result<ClockSkew, ProcessFaultError> {
        let lib = libfaketime()?;
        let skew = ClockSkew { file: dir.join(format!("faketime-{name}")), lib };
        skew.set_ms(0.0)?;
        Ok(skew)
    }

    /// The environment the process is started with: only the wall clock is skewed (the
    /// monotonic clock, which measures durations, stays true, as on a machine whose clock is
    /// off).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.lib.into()),
            ("FAKETIME_TIMESTAMP_FILE".into(), self.file.display().to_string()),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }

    /// Set the offset: the process reads it at its next clock call.
    pub fn set_ms(&self, ms: f64) -> Result<(), ProcessFaultError> {
        let text = format!("{:+.3}\n", ms / 1000.0);
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.file))
            .map_err(|source| ProcessFaultError::SkewFile { path: self.file.display().to_string(), source })
    }
}

/// libfaketime's path, if it is installed.
pub fn libfaketime() -> Result<&'static str, ProcessFaultError> {
    LIBFAKETIME
        .iter()
        .copied()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| ProcessFaultError::NoFaketime(LIBFAKETIME[0].into()))
}

/// One process as the fault layer acts on it: its process group (known once it is started),
/// what its owner records when a fault kills it, its skewable clock if it was started with
/// one, and the lab's time scale for the durations of pauses and delays.
#[derive(Clone, Default)]
pub struct ProcessHandle {
    group: Arc<AtomicU32>,
    killed: Option<Arc<dyn Fn() + Send + Sync>>,
    skew: Option<Arc<ClockSkew>>,
    scale: Option<super::TimeScale>,
}

impl std::fmt::Debug for ProcessHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessHandle").field("group", &self.group).field("skew", &self.skew).finish()
    }
}

impl ProcessHandle {
    /// A process whose durations are scaled by `scale`.
    pub fn new(scale: super::TimeScale) -> ProcessHandle {
        ProcessHandle { scale: Some(scale), ..Default::default() }
    }

    /// `killed` is called when a fault kills the process, before the SIGKILL.
    pub fn on_kill(mut self, killed: impl Fn() + Send + Sync + 'static) -> ProcessHandle {
        self.killed = Some(Arc::new(killed));
        self
    }

    /// The process was started with this skewable clock.
    pub fn with_skew(mut self, skew: ClockSkew) -> ProcessHandle {
        self.skew = Some(Arc::new(skew));
        self
    }

    /// The process is started, leading group `pgid`.
    pub fn started(&self, pgid: u32) {
        self.group.store(pgid, Ordering::SeqCst);
    }

    /// `ms` of the scenario as a duration of this run.
    pub fn duration(&self, ms: f64) -> Duration {
        self.scale.unwrap_or(super::TimeScale::REAL).duration(ms)
    }

    pub fn kill(&self) {
        if let Some(killed) = &self.killed {
            killed();
        }
        kill_group(self.group.load(Ordering::SeqCst));
    }

    /// SIGSTOP it for `ms` (scaled); `resumed` is called after the SIGCONT.
    pub fn pause(&self, ms: f64, resumed: impl FnOnce() + Send + 'static) {
        pause_group(self.group.load(Ordering::SeqCst), self.duration(ms), resumed);
    }

    /// Shift its wall clock by `ms` (not scaled: a clock's offset is no duration of the run).
    pub fn skew(&self, ms: f64) -> Result<(), ProcessFaultError> {
        match &self.skew {
            Some(skew) => skew.set_ms(ms),
            None => Err(ProcessFaultError::NoFaketime("the process was not started with a skewable clock".into())),
        }
    }
}
