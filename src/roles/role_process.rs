//! A role running as a child process (`ordlab __role`). Its stdout lines become timeline
//! events; if it exits on its own, a `crashed` event says so with its stderr tail, unless it
//! exited with status 0 or its last line announced a planned crash. Dropping it (or
//! [`RoleProcess::stop`]) kills it; it also dies if the orchestrator dies.
//!
//! A worker from a command line writes what it likes: its output is read as bytes, whatever
//! their encoding and volume, until the process closes it ([`OutputLines`]); its lines are only
//! kept (the last ones, shown lossily), never read as events.

use super::RoleConfig;
use crate::error::{Context, Error};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};

/// A process as started: a child of ordlab's, or one forked by a fork server for it.
pub enum Started {
    Spawned(Child),
    Forked(crate::service::fork_server::ForkedChild),
}

impl From<Child> for Started {
    fn from(c: Child) -> Started {
        Started::Spawned(c)
    }
}

impl From<crate::service::fork_server::ForkedChild> for Started {
    fn from(c: crate::service::fork_server::ForkedChild) -> Started {
        Started::Forked(c)
    }
}

type Output = std::pin::Pin<Box<dyn AsyncRead + Send>>;

impl Started {
    pub fn pid(&self) -> Option<u32> {
        self.id()
    }

    fn id(&self) -> Option<u32> {
        match self {
            Started::Spawned(c) => c.id(),
            Started::Forked(c) => Some(c.id()),
        }
    }

    /// Its stdout and stderr (once).
    fn take_output(&mut self) -> (Output, Output) {
        match self {
            Started::Spawned(c) => {
                (Box::pin(c.stdout.take().expect("piped")), Box::pin(c.stderr.take().expect("piped")))
            }
            Started::Forked(c) => (Box::pin(c.stdout.take().expect("once")), Box::pin(c.stderr.take().expect("once"))),
        }
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Started::Spawned(c) => c.wait().await,
            Started::Forked(c) => c.wait().await,
        }
    }

    async fn kill(&mut self) {
        match self {
            Started::Spawned(c) => {
                let _ = c.kill().await;
            }
            Started::Forked(c) => c.kill().await,
        }
    }
}

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
            Self::watch_with(child.into(), actor, sink, Arc::new(AtomicBool::new(false)), false, Some(parked_tx));
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
        child: impl Into<Started>,
        actor: Actor,
        sink: mpsc::UnboundedSender<RawEvent>,
        planned: Arc<AtomicBool>,
        any_exit_crashes: bool,
    ) -> RoleProcess {
        Self::watch_with(child.into(), actor, sink, planned, any_exit_crashes, None)
    }

    /// [`RoleProcess::watch`], with the line that says a reusable process parked told to `parked`.
    fn watch_with(
        mut child: Started,
        actor: Actor,
        sink: mpsc::UnboundedSender<RawEvent>,
        planned: Arc<AtomicBool>,
        any_exit_crashes: bool,
        parked: Option<mpsc::UnboundedSender<()>>,
    ) -> RoleProcess {
        let sink = EventRoute(Arc::new(Mutex::new(sink)));
        let route = sink.clone();
        let pid = child.id();
        let (stdout, stderr) = child.take_output();
        let out_tail = Arc::new(Mutex::new(Tail::default()));
        // A worker from a command line (any exit of it is a crash) is someone else's program:
        // its stdout is its own, never timeline events.
        let events = !any_exit_crashes;
        let reader = tokio::spawn(forward_events(stdout, sink.clone(), out_tail.clone(), parked, events));
        let err_tail = tokio::spawn(async move {
            let mut tail = Tail::default();
            let mut lines = OutputLines::new(stderr, OutputLines::<()>::KEPT_BYTES);
            while let Some(line) = lines.next_line().await {
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
                    child.kill().await;
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

/// Forward every timeline line of the child (when `events`: ordlab's own roles); returns
/// whether the last one announced a planned crash. Lines that are not events (a foreign
/// worker's own output) are kept in `tail`.
async fn forward_events(
    stdout: impl AsyncRead + Unpin,
    sink: EventRoute,
    tail: Arc<Mutex<Tail>>,
    parked: Option<mpsc::UnboundedSender<()>>,
    events: bool,
) -> bool {
    let mut announced = false;
    // ordlab's own events may be long (a state document); a foreign line is capped.
    let mut lines = OutputLines::new(stdout, if events { usize::MAX } else { OutputLines::<()>::KEPT_BYTES });
    while let Some(line) = lines.next_line().await {
        if let Some(parked) = parked.as_ref().filter(|_| line == super::reuse::PARKED) {
            let _ = parked.send(());
            continue;
        }
        match serde_json::from_str::<RawEvent>(&line).ok().filter(|_| events) {
            Some(ev) => {
                announced = matches!(ev.kind, EventKind::Crashed { planned: true, .. });
                sink.record(ev);
            }
            None => tail.lock().unwrap().push(line),
        }
    }
    announced
}

/// A child's output as lines, read as bytes until the child closes it: invalid UTF-8 is shown
/// lossily (`�`), a control character (but a tab) as its escape (`\x1b`), and a line longer
/// than its cap ([`OutputLines::KEPT_BYTES`] for a report) keeps its start (the rest is read and dropped). No volume
/// or encoding of a worker's output stops the reading: a pipe closed early would make the
/// worker's next write fail.
pub struct OutputLines<R> {
    reader: R,
    cap: usize,
    buf: Vec<u8>,
    /// The current line, up to its cap.
    line: Vec<u8>,
    /// Bytes of the current line dropped past the cap.
    dropped: usize,
    start: usize,
    end: usize,
    eof: bool,
}

impl<R> OutputLines<R> {
    /// The bytes of one line of a worker's output that are kept: its last lines are for a report.
    pub const KEPT_BYTES: usize = 4096;
}

impl<R: AsyncRead + Unpin> OutputLines<R> {
    pub fn new(reader: R, cap: usize) -> OutputLines<R> {
        OutputLines { reader, cap, buf: vec![0; 64 * 1024], line: Vec::new(), dropped: 0, start: 0, end: 0, eof: false }
    }

    /// The next line (without its `\n` or `\r\n`), or None once the output is closed (or a
    /// read fails) and every line was given.
    pub async fn next_line(&mut self) -> Option<String> {
        loop {
            if let Some(n) = self.buf[self.start..self.end].iter().position(|b| *b == b'\n') {
                self.take(n);
                self.start += n + 1;
                return Some(self.finish());
            }
            self.take(self.end - self.start);
            self.start = self.end;
            if self.eof {
                return (!self.line.is_empty() || self.dropped > 0).then(|| self.finish());
            }
            match self.reader.read(&mut self.buf).await {
                Ok(0) | Err(_) => self.eof = true,
                Ok(n) => (self.start, self.end) = (0, n),
            }
        }
    }

    /// Keep `n` bytes from `start` into the current line, up to the cap.
    fn take(&mut self, n: usize) {
        let room = self.cap.saturating_sub(self.line.len()).min(n);
        self.line.extend_from_slice(&self.buf[self.start..self.start + room]);
        self.dropped += n - room;
    }

    fn finish(&mut self) -> String {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let mut text = String::with_capacity(self.line.len());
        for c in String::from_utf8_lossy(&self.line).chars() {
            match c {
                '\t' => text.push(c),
                c if c.is_control() && (c as u32) < 0x100 => text.push_str(&format!("\\x{:02x}", c as u32)),
                c if c.is_control() => text.push_str(&format!("\\u{{{:04x}}}", c as u32)),
                c => text.push(c),
            }
        }
        if self.dropped > 0 {
            text.push_str(&format!(" … ({} bytes more)", self.dropped));
        }
        self.line.clear();
        self.dropped = 0;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::OutputLines;

    async fn lines(bytes: &[u8], cap: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut lines = OutputLines::new(bytes, cap);
        while let Some(l) = lines.next_line().await {
            out.push(l);
        }
        out
    }

    #[tokio::test]
    async fn invalid_utf8_and_control_bytes_are_shown_and_the_reading_goes_on() {
        let got = lines(b"caf\xe9\nbin \x00\x1b[31m\xff\r\nlast without newline", 100).await;
        assert_eq!(got, ["caf\u{fffd}", "bin \\x00\\x1b[31m\u{fffd}", "last without newline"]);
    }

    #[tokio::test]
    async fn a_line_over_the_cap_keeps_its_start_and_the_next_line_is_read() {
        let mut big = vec![b'x'; 200_000];
        big.extend_from_slice(b"\nnext\n");
        let got = lines(&big, 10).await;
        assert_eq!(got, ["xxxxxxxxxx … (199990 bytes more)", "next"]);
        // No cap: ordlab's own event lines are read whole, across reads of the buffer's size.
        assert_eq!(lines(&big, usize::MAX).await[0].len(), 200_000);
    }
}
