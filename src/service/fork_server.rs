//! A Python worker from a command line, started for each of an exploration's runs by forking
//! one interpreter that already imported what the worker imports. Each run's child is the
//! worker as `python3 <script> <args>` runs it (its own process, environment, output and exit),
//! without an interpreter's start and `import redis` (0.3 s of CPU here, the most of a run).
//!
//! [`ForkServers`] keeps one server per worker command for an exploration and stops them at its
//! end; the server (`fork_server.py`) dies with ordlab, and every child with its server. Only
//! `python3 <file.py> …` is forked (no interpreter options, nothing set per process at exec:
//! a clock skew's `LD_PRELOAD`): any other command line is started afresh as before.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// The server's program, run as `python3 -c`.
const SERVER: &str = include_str!("fork_server.py");

/// Can `command` be forked from a server: `python3 <file.py> [args]` (or `python`,
/// `python3.11`; a path to one of them), its program file there.
pub fn forkable(command: &[String]) -> bool {
    let Some((program, rest)) = command.split_first() else { return false };
    let name = std::path::Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or("");
    let python = name == "python" || name.strip_prefix("python3").is_some_and(|v| v.is_empty() || v.starts_with('.'));
    python && rest.first().is_some_and(|s| s.ends_with(".py") && std::path::Path::new(s).is_file())
}

/// The fork servers of one exploration, one per worker command (and its fixed environment).
#[derive(Default)]
pub struct ForkServers {
    servers: tokio::sync::Mutex<BTreeMap<Vec<String>, Arc<ForkServer>>>,
    /// Children forked by every server so far, including the stopped ones.
    forked: std::sync::atomic::AtomicUsize,
}

impl ForkServers {
    /// The server for `command` (started with `env`, what every process of it is given alike),
    /// started at its first use; `None` when it cannot be (the command is then run afresh).
    pub async fn server(&self, command: &[String], env: &BTreeMap<String, String>) -> Option<Arc<ForkServer>> {
        if !forkable(command) {
            return None;
        }
        let mut key = command.to_vec();
        key.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        let mut servers = self.servers.lock().await;
        match servers.get(&key) {
            Some(s) if s.alive() => return Some(s.clone()),
            Some(gone) => {
                self.forked.fetch_add(
                    gone.forked.load(std::sync::atomic::Ordering::Relaxed),
                    std::sync::atomic::Ordering::Relaxed,
                );
                gone.stop().await;
            }
            None => {}
        }
        let server = Arc::new(ForkServer::start(&command[0], &command[1], env).await.ok()?);
        servers.insert(key, server.clone());
        Some(server)
    }

    /// Stop every server (and so every child still running).
    pub async fn stop(&self) {
        for (_, s) in std::mem::take(&mut *self.servers.lock().await) {
            self.forked
                .fetch_add(s.forked.load(std::sync::atomic::Ordering::Relaxed), std::sync::atomic::Ordering::Relaxed);
            s.stop().await;
        }
    }

    /// How many children were forked.
    pub fn forked(&self) -> usize {
        self.forked.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One running server: requests go to its stdin, its answers are read by a task.
pub struct ForkServer {
    child: Mutex<Option<tokio::process::Child>>,
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    state: Arc<Mutex<Answers>>,
    reader: tokio::task::JoinHandle<()>,
    fifos: tempfile::TempDir,
    forked: std::sync::atomic::AtomicUsize,
}

/// What the server said that someone waits for.
#[derive(Default)]
struct Answers {
    /// The next `{"pid"}` or `{"error"}` answer (one request at a time).
    started: Option<oneshot::Sender<Result<u32, String>>>,
    /// Children running, by pid: told their wait status when they end.
    exits: HashMap<u32, oneshot::Sender<ExitStatus>>,
    /// The server's stdout closed: it is gone.
    gone: bool,
}

impl ForkServer {
    async fn start(python: &str, script: &str, env: &BTreeMap<String, String>) -> std::io::Result<ForkServer> {
        let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(python));
        cmd.arg("-c").arg(SERVER).arg(script).envs(env).env("PYTHONUNBUFFERED", "1");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        // Its imports done, it says it is ready (a script that does not parse: it exits).
        let ready = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line()).await;
        if !matches!(ready, Ok(Ok(Some(ref l))) if l.contains("ready")) {
            let _ = child.kill().await;
            return Err(std::io::Error::other("the fork server did not start"));
        }
        let state = Arc::new(Mutex::new(Answers::default()));
        let reader = tokio::spawn(read_answers(lines, state.clone()));
        let fifos = tempfile::tempdir()?;
        Ok(ForkServer {
            child: Mutex::new(Some(child)),
            stdin: tokio::sync::Mutex::new(stdin),
            state,
            reader,
            fifos,
            forked: Default::default(),
        })
    }

    fn alive(&self) -> bool {
        !self.state.lock().unwrap().gone
    }

    /// Fork a child running `argv` (`[script, args…]`) in `cwd` with exactly `env`.
    pub async fn fork(&self, argv: &[String], env: &BTreeMap<String, String>) -> Result<ForkedChild, std::io::Error> {
        // One request at a time: the answer is the next `pid` line.
        let mut stdin = self.stdin.lock().await;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (out_path, err_path) = (self.fifo(&format!("{n}.out"))?, self.fifo(&format!("{n}.err"))?);
        // Opened before the child's write ends exist (read ends do not wait for a writer).
        let stdout = pipe::OpenOptions::new().open_receiver(&out_path)?;
        let stderr = pipe::OpenOptions::new().open_receiver(&err_path)?;
        let (tx, rx) = oneshot::channel();
        self.state.lock().unwrap().started = Some(tx);
        let cwd = std::env::current_dir()?;
        let req = serde_json::json!({
            "argv": argv, "env": env, "cwd": cwd, "stdout": out_path, "stderr": err_path,
        });
        stdin.write_all(format!("{req}\n").as_bytes()).await?;
        stdin.flush().await?;
        let started = tokio::time::timeout(std::time::Duration::from_secs(10), rx).await;
        let _ = (std::fs::remove_file(&out_path), std::fs::remove_file(&err_path));
        let pid = match started {
            Ok(Ok(Ok(pid))) => pid,
            Ok(Ok(Err(e))) => return Err(std::io::Error::other(format!("the fork server: {e}"))),
            _ => {
                // A late answer would be taken for the next request's: this server is done
                // (the next run starts a new one).
                self.state.lock().unwrap().gone = true;
                if let Some(mut child) = self.child.lock().unwrap().take() {
                    let _ = child.start_kill();
                }
                return Err(std::io::Error::other("the fork server did not answer within 10 s"));
            }
        };
        self.forked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (exit_tx, exit_rx) = oneshot::channel();
        self.state.lock().unwrap().exits.insert(pid, exit_tx);
        Ok(ForkedChild { pid, stdout: Some(stdout), stderr: Some(stderr), exit: exit_rx, status: None })
    }

    fn fifo(&self, name: &str) -> Result<PathBuf, std::io::Error> {
        let path = self.fifos.path().join(name);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR)?;
        Ok(path)
    }

    async fn stop(&self) {
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child {
            let _ = child.kill().await;
        }
        self.reader.abort();
    }
}

async fn read_answers(mut lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>, state: Arc<Mutex<Answers>>) {
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        let mut s = state.lock().unwrap();
        if let Some(pid) = v.get("exit").and_then(|p| p.as_u64()) {
            let status = v.get("status").and_then(|s| s.as_i64()).unwrap_or(0);
            if let Some(tx) = s.exits.remove(&(pid as u32)) {
                let _ = tx.send(ExitStatus::from_raw(status as i32));
            }
        } else if let Some(tx) = s.started.take() {
            let answer = match (v.get("pid").and_then(|p| p.as_u64()), v.get("error")) {
                (Some(pid), _) => Ok(pid as u32),
                (None, e) => Err(e.map(|e| e.to_string()).unwrap_or_else(|| line.clone())),
            };
            let _ = tx.send(answer);
        }
    }
    // The server is gone, and its children with it (they die with it): their exits will not
    // be reported, so each is told it was killed.
    let mut s = state.lock().unwrap();
    s.gone = true;
    for (_, tx) in s.exits.drain() {
        let _ = tx.send(ExitStatus::from_raw(libc::SIGKILL));
    }
}

/// A child of a fork server: its pid (its own process group), output and exit.
pub struct ForkedChild {
    pid: u32,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    exit: oneshot::Receiver<ExitStatus>,
    status: Option<ExitStatus>,
}

impl ForkedChild {
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Wait for its end (as its server reported it).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = (&mut self.exit).await.unwrap_or(ExitStatus::from_raw(libc::SIGKILL));
        self.status = Some(s);
        Ok(s)
    }

    /// SIGKILL its process group, and wait for its end.
    pub async fn kill(&mut self) {
        let _ =
            nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pid as i32), nix::sys::signal::Signal::SIGKILL);
        let _ = self.wait().await;
    }
}

impl Drop for ForkedChild {
    fn drop(&mut self) {
        if self.status.is_none() && self.exit.try_recv().is_err() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::forkable;

    fn line(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn only_python_running_a_program_file_is_forked() {
        assert!(forkable(&line(&["python3", "examples/python/consumer.py"])));
        assert!(forkable(&line(&["/usr/bin/python3.11", "examples/python/consumer.py", "--x"])));
        assert!(forkable(&line(&["python", "examples/python/consumer.py"])));
        // Interpreter options, a module, another interpreter, a file that is not there.
        assert!(!forkable(&line(&["python3", "-u", "examples/python/consumer.py"])));
        assert!(!forkable(&line(&["python3", "-m", "celery"])));
        assert!(!forkable(&line(&["php", "examples/php/consumer.php"])));
        assert!(!forkable(&line(&["python3x", "examples/python/consumer.py"])));
        assert!(!forkable(&line(&["python3", "no/such/consumer.py"])));
        assert!(!forkable(&[]));
    }
}
