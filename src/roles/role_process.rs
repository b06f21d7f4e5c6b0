//! A role running as a child process (`ordlab __role`). Its stdout lines become timeline
//! events; if it exits on its own, a `crashed` event says so with its stderr tail, unless it
//! exited with status 0 or its last line announced a planned crash. Dropping it (or
//! [`RoleProcess::stop`]) kills it; it also dies if the orchestrator dies.

use super::RoleConfig;
use crate::error::{Context, Error};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};

/// How a role process ended, once it has.
#[derive(Clone, Debug)]
struct Exit {
    /// Exit status and the last stderr line.
    detail: String,
    /// Its last timeline line announced a planned crash, or the runner killed it as planned.
    planned: bool,
    /// Its last lines of output (stderr, or stdout if it wrote nothing there).
    tail: Vec<String>,
}

/// The last lines a process wrote.
#[derive(Clone, Debug, Default)]
struct Tail {
    lines: std::collections::VecDeque<String>,
}

impl Tail {
    const KEPT: usize = 20;
    /// The last lines an unplanned death's event carries (a Python traceback's end: the
    /// line that raised and the exception).
    const IN_EVENT: usize = 8;

    fn push(&mut self, line: String) {
        if self.lines.len() == Self::KEPT {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The line that says what went wrong: the last naming an error (a Python traceback
    /// ends with it, PHP's fatal error starts its block), else the last one.
    fn last(&self) -> Option<&str> {
        let says_error = |l: &&String| {
            let l = l.to_ascii_lowercase();
            l.contains("error") || l.contains("exception") || l.contains("fatal")
        };
        let mut lines = self.lines.iter().rev().filter(|l| !l.trim().is_empty());
        self.lines.iter().rev().find(says_error).or_else(|| lines.next()).map(|l| l.trim())
    }
}

pub struct RoleProcess {
    actor: Actor,
    pid: Option<u32>,
    stop: Option<oneshot::Sender<()>>,
    watcher: tokio::task::JoinHandle<()>,
    exit: Arc<Mutex<Option<Exit>>>,
    /// Where its events go now (a reused process's next run gives it another channel).
    route: EventRoute,
    /// A reusable process: its stdin (each run's config, the order to park) and the news
    /// that it parked ([`super::reuse`]).
    reuse: Option<Reuse>,
}

/// What the orchestrator holds of a reusable process beyond any role process.
struct Reuse {
    stdin: tokio::process::ChildStdin,
    parked: mpsc::UnboundedReceiver<()>,
}

/// Where a process's events go: one run's channel, replaced when a reused process starts its
/// next run.
#[derive(Clone)]
struct EventRoute(Arc<Mutex<mpsc::UnboundedSender<RawEvent>>>);

impl Sink for EventRoute {
    fn record(&self, event: RawEvent) {
        self.0.lock().unwrap().record(event);
    }
}

impl RoleProcess {
    /// Start `exe __role` with `config` on its stdin; its events go to `sink`.
    pub fn spawn(exe: &Path, config: &RoleConfig, sink: mpsc::UnboundedSender<RawEvent>) -> Result<RoleProcess, Error> {
        let actor = config.actor();
        let json = config.to_json();
        let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(exe));
        // The config goes in on stdin: a generated workload is larger than an argument may be.
        cmd.arg("__role");
        let child = Self::start(cmd, Some(json)).context(&format!("start role {actor} ({})", exe.display()))?;
        Ok(Self::watch(child, actor, sink, Arc::new(AtomicBool::new(false)), false))
    }

    /// Start `exe __role --reusable` running `config`: at the end of a run it can be parked
    /// ([`RoleProcess::park`]) and given the next run ([`RoleProcess::rerun`]) instead of being
    /// killed and started again.
    pub async fn spawn_reusable(
        exe: &Path,
        config: &RoleConfig,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, Error> {
        let actor = config.actor();
        let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(exe));
        cmd.arg("__role").arg("--reusable");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().context(&format!("start role {actor} ({})", exe.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let (parked_tx, parked) = mpsc::unbounded_channel();
        let mut process =
            Self::watch_with(child, actor, sink, Arc::new(AtomicBool::new(false)), false, Some(parked_tx));
        process.reuse = Some(Reuse { stdin, parked });
        process.send_line(&config.to_json()).await?;
        Ok(process)
    }

    /// Write one line to a reusable process's stdin.
    async fn send_line(&mut self, line: &str) -> Result<(), Error> {
        let reuse = self.reuse.as_mut().expect("a reusable process");
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        reuse.stdin.write_all(&bytes).await.context("write a role's config")?;
        reuse.stdin.flush().await.context("write a role's config")
    }

    /// Park a reusable process at the end of a run: its role stops where it is (its
    /// connections closed) and it waits for the next run; its events up to then have gone to
    /// the run's channel. False if it could not be parked (it exited, or did not answer).
    pub async fn park(&mut self) -> bool {
        if self.reuse.is_none() || self.exited().is_some() || self.send_line(super::reuse::PARK).await.is_err() {
            return false;
        }
        let parked = self.reuse.as_mut().expect("checked").parked.recv();
        let answered = tokio::time::timeout(super::reuse::PARK_WITHIN, parked).await;
        matches!(answered, Ok(Some(()))) && self.exited().is_none()
    }

    /// Start the next run in a parked process: `config`, its events to `sink`.
    pub async fn rerun(&mut self, config: &RoleConfig, sink: mpsc::UnboundedSender<RawEvent>) -> Result<(), Error> {
        *self.route.0.lock().unwrap() = sink;
        self.send_line(&config.to_json()).await
    }

    /// Start `cmd` with piped stdio (`stdin` written to it, if any), killed when dropped.
    pub fn start(mut cmd: tokio::process::Command, stdin: Option<String>) -> std::io::Result<Child> {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let mut pipe = child.stdin.take().expect("piped");
        tokio::spawn(async move {
            // A child that dies before reading its input is reported by the watcher.
            if let Some(input) = stdin {
                let _ = pipe.write_all(input.as_bytes()).await;
            }
            drop(pipe);
        });
        Ok(child)
    }

    /// Watch a started child: its JSON stdout lines become events in `sink`; if it exits on
    /// its own, unplanned (not announced by its last line, nor `planned` set by the runner) and
    /// not with status 0 (any status, with `any_exit_crashes`: a worker that should run until
    /// it is stopped), a `crashed` event says so with its last output line.
    pub fn watch(
        child: Child,
        actor: Actor,
        sink: mpsc::UnboundedSender<RawEvent>,
        planned: Arc<AtomicBool>,
        any_exit_crashes: bool,
    ) -> RoleProcess {
        Self::watch_with(child, actor, sink, planned, any_exit_crashes, None)
    }

    /// [`RoleProcess::watch`], with the line that says a reusable process parked told to `parked`.
    fn watch_with(
        mut child: Child,
        actor: Actor,
        sink: mpsc::UnboundedSender<RawEvent>,
        planned: Arc<AtomicBool>,
        any_exit_crashes: bool,
        parked: Option<mpsc::UnboundedSender<()>>,
    ) -> RoleProcess {
        let sink = EventRoute(Arc::new(Mutex::new(sink)));
        let route = sink.clone();
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let out_tail = Arc::new(Mutex::new(Tail::default()));
        let reader = tokio::spawn(forward_events(stdout, sink.clone(), out_tail.clone(), parked));
        let err_tail = tokio::spawn(async move {
            let mut tail = Tail::default();
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tail.push(line);
            }
            tail
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let exit = Arc::new(Mutex::new(None));
        let exit_w = exit.clone();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    let announced = reader.await.unwrap_or(false);
                    let planned = announced || planned.load(Ordering::SeqCst);
                    let success = !any_exit_crashes && status.as_ref().is_ok_and(|s| s.success());
                    let mut tail = err_tail.await.unwrap_or_default();
                    if tail.lines.is_empty() {
                        tail = out_tail.lock().unwrap().clone();
                    }
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    let detail = match tail.last() {
                        Some(last) => format!("{status}: {last}"),
                        None => status,
                    };
                    *exit_w.lock().unwrap() =
                        Some(Exit { detail: detail.clone(), planned, tail: tail.lines.clone().into() });
                    // The child already said why it died (planned), or finished its work.
                    if !planned && !success {
                        let last = tail.lines.iter().filter(|l| !l.trim().is_empty()).cloned().collect::<Vec<_>>();
                        let last = last[last.len().saturating_sub(Tail::IN_EVENT)..].to_vec();
                        sink.emit(actor, EventKind::died(detail, last));
                    }
                }
                _ = stop_rx => {
                    if let Some(pid) = pid {
                        // The whole group: a worker command may be a shell that started others.
                        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
                    }
                    let _ = child.kill().await;
                    let _ = reader.await;
                }
            }
        });
        RoleProcess { actor, pid, stop: Some(stop_tx), watcher, exit, route, reuse: None }
    }

    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// The process id (what `/proc/<pid>/stat` measures CPU by).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Wait until the process exits on its own, its output drained: `Some(true)` after a
    /// planned crash, `Some(false)` otherwise. Drop it afterwards (do not call `stop`).
    pub async fn wait(&mut self) -> Option<bool> {
        let _ = (&mut self.watcher).await;
        self.exit.lock().unwrap().as_ref().map(|e| e.planned)
    }

    /// Its last lines of output, once it has exited.
    pub fn last_lines(&self) -> Vec<String> {
        self.exit.lock().unwrap().as_ref().map(|e| e.tail.clone()).unwrap_or_default()
    }

    /// A check, callable from anywhere and at any time, of whether the process has exited
    /// (its output drained): how the explorer learns that a killed process sends nothing more.
    pub fn exit_check(&self) -> ExitCheck {
        let exit = self.exit.clone();
        Arc::new(move || exit.lock().unwrap().is_some())
    }

    /// If the process has exited on its own: how.
    pub fn exited(&self) -> Option<String> {
        self.exit.lock().unwrap().as_ref().map(|e| e.detail.clone())
    }

    /// Kill the process and wait until its output is drained.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.watcher).await;
    }
}

pub use crate::explore::control::ExitCheck;

/// Forward every timeline line of the child; returns whether the last one announced a
/// planned crash. Lines that are not events (a foreign worker's own output) are kept in `tail`.
async fn forward_events(
    stdout: tokio::process::ChildStdout,
    sink: EventRoute,
    tail: Arc<Mutex<Tail>>,
    parked: Option<mpsc::UnboundedSender<()>>,
) -> bool {
    let mut announced = false;
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(parked) = parked.as_ref().filter(|_| line == super::reuse::PARKED) {
            let _ = parked.send(());
            continue;
        }
        match serde_json::from_str::<RawEvent>(&line) {
            Ok(ev) => {
                announced = matches!(ev.kind, EventKind::Crashed { planned: true, .. });
                sink.record(ev);
            }
            Err(_) => tail.lock().unwrap().push(line),
        }
    }
    announced
}
