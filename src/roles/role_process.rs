//! A role running as a child process (`ordlab __role`). Its stdout lines become timeline
//! events; if it exits on its own, a `crashed` event says so with its stderr tail, unless it
//! exited with status 0 or its last line announced a planned crash. Dropping it (or
//! [`RoleProcess::stop`]) kills it; it also dies if the orchestrator dies.

use super::RoleConfig;
use crate::error::{Context, Error};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// How a role process ended, once it has.
#[derive(Clone, Debug)]
struct Exit {
    /// Exit status and the last stderr line.
    detail: String,
    /// Its last timeline line announced a planned crash.
    planned: bool,
}

pub struct RoleProcess {
    actor: Actor,
    pid: Option<u32>,
    stop: Option<oneshot::Sender<()>>,
    watcher: tokio::task::JoinHandle<()>,
    exit: Arc<Mutex<Option<Exit>>>,
}

impl RoleProcess {
    /// Start `exe __role` with `config` on its stdin; its events go to `sink`.
    pub fn spawn(exe: &Path, config: &RoleConfig, sink: mpsc::UnboundedSender<RawEvent>) -> Result<RoleProcess, Error> {
        let actor = config.actor();
        let json = config.to_json();
        let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(exe));
        // The config goes in on stdin: a generated workload is larger than an argument may be.
        cmd.arg("__role").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().context(&format!("start role {actor} ({})", exe.display()))?;
        let pid = child.id();
        let mut stdin = child.stdin.take().expect("piped");
        tokio::spawn(async move {
            // A child that dies before reading its config is reported by the watcher.
            let _ = stdin.write_all(json.as_bytes()).await;
        });
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let reader = tokio::spawn(forward_events(stdout, sink.clone()));
        let err_tail = tokio::spawn(async move {
            let mut buf = String::new();
            let _ = stderr.read_to_string(&mut buf).await;
            buf.lines().last().unwrap_or("").to_string()
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let exit = Arc::new(Mutex::new(None));
        let exit_w = exit.clone();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    let planned = reader.await.unwrap_or(false);
                    let success = status.as_ref().is_ok_and(|s| s.success());
                    let tail = err_tail.await.unwrap_or_default();
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    let detail = if tail.is_empty() { status } else { format!("{status}: {tail}") };
                    *exit_w.lock().unwrap() = Some(Exit { detail: detail.clone(), planned });
                    // The child already said why it died (planned), or finished its work.
                    if !planned && !success {
                        sink.emit(actor, EventKind::crashed(false, detail));
                    }
                }
                _ = stop_rx => {
                    let _ = child.kill().await;
                    let _ = reader.await;
                }
            }
        });
        Ok(RoleProcess { actor, pid, stop: Some(stop_tx), watcher, exit })
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

/// Forward every timeline line of the child; returns whether the last one announced a
/// planned crash.
async fn forward_events(stdout: tokio::process::ChildStdout, sink: mpsc::UnboundedSender<RawEvent>) -> bool {
    let mut announced = false;
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(ev) = serde_json::from_str::<RawEvent>(&line) {
            announced = matches!(ev.kind, EventKind::Crashed { planned: true, .. });
            sink.record(ev);
        }
    }
    announced
}
