//! A worker from a command line: anyone's program (a student's Python consumer, the seed's own
//! loop in Node or PHP) takes the place of ordlab's own consumer, and the interposer records
//! and faults it at the wire protocol.
//!
//! The contract a worker follows is its environment (see [`WorkerEnv`] and
//! `examples/README.md`): where the servers are (its own interposed endpoints), which stream,
//! group and consumer name to read as, which table to write, how long each job's work takes.
//! It must run until it is killed; exiting on its own, whatever its status, makes the run
//! unknown and the report shows its last lines.

use super::client_list::{wait_for_client_within, ClientState};
use super::RoleProcess;
use crate::error::Error;
use crate::fault::process::ProcessHandle;
use crate::fault::{Fault, Injector, Target};
use crate::interposer::redis::RedisSetup;
use crate::interposer::{upstream_of, Endpoint, WorkerTap};
use crate::lang::Words;
use crate::timeline::{Actor, EventKind, RawEvent, Sink as _};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// `worker = { command = ["python3", "examples/python/consumer.py"], count = 2 }`: the
/// program that replaces ordlab's own consumers, and its faults.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerCommand {
    /// The program and its arguments (relative paths from where ordlab runs: the project root).
    pub command: Vec<String>,
    /// How many processes (default: the lab's number of consumers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Faults of the worker processes (`worker = 1`: the first; at command boundaries, named
    /// events, moments of the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// Extra environment for every process.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// A worker fault in words, for process `who` (`C1`, `W2`, `reaper`): `C1 is SIGKILLed by the
/// interposer when the reply to its SET #1 arrives`.
pub fn fault_words(f: &Fault, who: &str, lang: crate::lang::Lang) -> String {
    use crate::fault::{Action, Moment, Trigger};
    match (&f.trigger, f.action, f.count.nth, f.count.every) {
        (Trigger::Command { command: Some(c), moment: Moment::Reply, of: None, .. }, Action::Kill, n, None) => {
            crate::tr!(
                lang,
                "{who} is SIGKILLed by the interposer when the reply to its {c} #{n} arrives",
                "{who} bị interposer SIGKILL khi reply của {c} #{n} tới"
            )
        }
        (Trigger::Command { command: Some(c), moment: Moment::Send, of: None, .. }, Action::Kill, n, None) => {
            crate::tr!(
                lang,
                "{who} is SIGKILLed by the interposer when it sends its {c} #{n}",
                "{who} bị interposer SIGKILL khi gửi {c} #{n}"
            )
        }
        _ => {
            let label = f.resolved(Actor::Runner).label();
            let label = label.get(lang);
            let rest = label.split_once(": ").map_or(label, |(_, r)| r);
            crate::tr!(lang, "fault on {who}: {rest}", "lỗi cài sẵn trên {who}: {rest}")
        }
    }
}

impl WorkerCommand {
    /// Check before any server starts.
    pub fn check(&self, processes: u32) -> Result<(), String> {
        if self.command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err("setup.worker.command is empty: give the program and its arguments, e.g. [\"python3\", \"examples/python/consumer.py\"]".into());
        }
        for f in &self.faults {
            match f.target {
                Target::Index(i) if !(1..=processes).contains(&i) => {
                    return Err(format!(
                        "setup.worker.faults: worker = {i} but there are {processes} worker processes"
                    ));
                }
                Target::Server(_) | Target::Partner => {
                    return Err("setup.worker.faults: a worker's faults hit its processes (worker = 1, on = \"W1\"); declare a server's or the partner's in setup.faults".into());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `python3 examples/python/consumer.py`.
    pub fn shown(&self) -> String {
        self.command.join(" ")
    }
}

/// The file names an interpreter is given a program in: an argument ending so is a file that
/// must be there (`python3 consumer.py`, `node list_worker.js`, `sh w.sh`).
const SCRIPT_EXTENSIONS: &[&str] = &["py", "php", "js", "mjs", "cjs", "rb", "pl", "sh"];

/// Can `command`'s program be started, and is every file it is given there? A bare name must be
/// an executable file in a dir of `PATH`, a path (`./w.sh`, `examples/x`) an executable file
/// from where ordlab runs; an argument named like a program file ([`SCRIPT_EXTENSIONS`]) a file
/// from there. Cheap (nothing is started), so it runs before any server starts.
pub fn check_program(command: &[String]) -> Result<(), Error> {
    let Some(program) = command.first() else { return Ok(()) };
    let executable = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let (found, where_) = if program.contains('/') {
        let path = std::path::Path::new(program);
        (executable(path), if path.exists() { "is not an executable file" } else { "is not found" })
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        (std::env::split_paths(&path).any(|d| executable(&d.join(program))), "is not found on PATH")
    };
    if !found {
        return Err(Error::WorkerCommand {
            command: command.join(" "),
            detail: format!("{program} {where_}: install it, or give a worker command whose program exists"),
        });
    }
    let script = |a: &&String| {
        !a.starts_with('-')
            && std::path::Path::new(a.as_str()).extension().is_some_and(|x| SCRIPT_EXTENSIONS.iter().any(|e| x == *e))
    };
    if let Some(missing) = command[1..].iter().filter(script).find(|a| !std::path::Path::new(a.as_str()).is_file()) {
        let here = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into());
        return Err(Error::WorkerCommand {
            command: command.join(" "),
            detail: format!("{missing} is not a file (from {here}): give the path of the worker's program file"),
        });
    }
    Ok(())
}

/// What one worker process is told, as `ORDLAB_*` environment variables.
#[derive(Clone, Debug, Default)]
pub struct WorkerEnv {
    /// `ORDLAB_INDEX`: 1-based.
    pub index: u32,
    /// `ORDLAB_STREAM`, `ORDLAB_GROUP`, `ORDLAB_CONSUMER`.
    pub stream: String,
    pub group: String,
    pub consumer: String,
    /// `ORDLAB_KEY_PREFIX`: every key of the run starts with it.
    pub key_prefix: String,
    /// `ORDLAB_ORDERS_TABLE`: `ordlab.orders (id bigint, status text, version bigint)`.
    pub orders_table: String,
    /// `ORDLAB_COST_MS`: each event type's handler work in ms (time scale applied), as JSON.
    pub cost_ms: BTreeMap<String, f64>,
    /// `ORDLAB_SEED`.
    pub seed: u64,
    /// The Redis database `ORDLAB_REDIS_URL` names (0 but for a library's own keys).
    pub redis_db: u32,
    /// The kind's own variables (`ORDLAB_QUEUE`, `ORDLAB_SINK_URL`, …); a kind without a stream
    /// leaves `stream`, `group` and `orders_table` empty.
    pub extra: BTreeMap<String, String>,
    /// The lab's time scale, for the durations of its faults (None: real time).
    pub scale: Option<crate::fault::TimeScale>,
}

/// A running worker process with its interposed endpoints.
pub struct CommandWorker {
    pub process: RoleProcess,
    /// Kept open while the process runs; dropped after it.
    endpoints: Vec<Endpoint>,
    /// Fires its faults at moments of the run.
    timer: tokio::task::JoinHandle<()>,
    /// Where its clock's skew is written, if a fault skews it.
    _skew: Option<tempfile::TempDir>,
    /// Its side of the interposer: told when the run stops the process, so the connections
    /// that close then are ordlab's doing (a small change: the report's connection events).
    tap: Arc<WorkerTap>,
    signaller: Signaller,
}

/// Sends a signal to a worker's process group as the runner's planned act (a supervisor's
/// SIGTERM): its exit, whenever it comes, is then no crash of its own.
#[derive(Clone)]
pub struct Signaller {
    actor: Actor,
    pid: Arc<AtomicU32>,
    planned: Arc<AtomicBool>,
}

impl Signaller {
    /// Send `signal`; the process's exit is planned from now on.
    pub fn send(&self, signal: nix::sys::signal::Signal) {
        self.planned.store(true, Ordering::SeqCst);
        let pid = self.pid.load(Ordering::SeqCst);
        if pid != 0 {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), signal);
        }
    }

    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// Has the runner, or a fault, killed or stopped it?
    pub fn is_planned(&self) -> bool {
        self.planned.load(Ordering::SeqCst)
    }
}

/// Where the worker's interposed endpoints forward to.
pub struct Upstreams<'a> {
    pub redis_url: &'a str,
    /// A libpq `key=value` string (the services' form).
    pub pg_config: &'a str,
    /// Under `explore`: the worker's commands wait at the wire until the explorer releases them.
    pub control: Option<&'a crate::explore::Control>,
}

impl CommandWorker {
    /// Start worker `env.index` of `spec` as `actor`, its Redis connections named
    /// `client_name`; its events (the interposer's records, its unplanned exit) go to `sink`.
    pub async fn start(
        spec: &WorkerCommand,
        env: &WorkerEnv,
        actor: Actor,
        client_name: &str,
        upstreams: Upstreams<'_>,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<CommandWorker, Error> {
        CommandWorker::start_gated(spec, env, actor, client_name, upstreams, sink, None).await
    }

    /// [`CommandWorker::start`], every command of the worker announced to `gate` and held until
    /// released there (a lab that places another process's step at one of them).
    pub async fn start_gated(
        spec: &WorkerCommand,
        env: &WorkerEnv,
        actor: Actor,
        client_name: &str,
        upstreams: Upstreams<'_>,
        sink: mpsc::UnboundedSender<RawEvent>,
        gate: Option<mpsc::UnboundedSender<crate::interposer::Held>>,
    ) -> Result<CommandWorker, Error> {
        let faults: Vec<Fault> =
            spec.faults.iter().filter(|f| f.aims_at(actor, env.index)).map(|f| f.resolved(actor)).collect();
        let injector = Injector::new(faults, env.seed);
        let planned = Arc::new(AtomicBool::new(false));
        let mut process = ProcessHandle::new(env.scale.unwrap_or(crate::fault::TimeScale::REAL)).on_kill({
            let (planned, sink) = (planned.clone(), sink.clone());
            move || {
                planned.store(true, Ordering::SeqCst);
                let detail = Words::new(
                    "SIGKILL from the interposer, at a command boundary",
                    "SIGKILL từ interposer, giữa hai lệnh",
                );
                sink.record(RawEvent::now(actor, EventKind::killed_by_runner(detail)));
            }
        });
        let skew_dir = if injector.skews() {
            Some(tempfile::tempdir().map_err(|e| Error::Io { context: "a clock skew file".into(), source: e })?)
        } else {
            None
        };
        let mut skew_env = Vec::new();
        if let Some(dir) = &skew_dir {
            let skew = crate::fault::process::ClockSkew::new(dir.path(), &actor.to_string())
                .map_err(|e| Error::WorkerCommand { command: spec.shown(), detail: e.to_string() })?;
            skew_env = skew.env();
            process = process.with_skew(skew);
        }
        let tap = match upstreams.control {
            Some(control) => {
                let tap = control.tap(actor, injector, sink.clone(), process.clone());
                control.register(actor, client_name, tap.clone());
                tap
            }
            None => WorkerTap::gated(actor, injector, sink.clone(), process.clone(), gate),
        };
        let io = |e: std::io::Error| Error::Io { context: "start the interposer".into(), source: e };
        let redis_up = upstream_of(upstreams.redis_url).await.map_err(io)?;
        let setup = RedisSetup {
            client_name: Some(client_name.to_string()),
            key_prefix: env.key_prefix.clone(),
            auth: crate::interposer::redis_auth(upstreams.redis_url),
        };
        let redis = Endpoint::redis(redis_up, tap.clone(), setup).await.map_err(io)?;
        let (mut pg_url, pg_endpoint) = crate::interposer::postgres_endpoint(upstreams.pg_config, &tap).await?;
        if upstreams.control.is_some() {
            // So the explorer finds the worker's session waiting for a lock in pg_stat_activity.
            pg_url = crate::explore::control::with_application_name(&pg_url, client_name);
        }
        let redis_url = format!("redis://{}/{}", redis.addr, env.redis_db);
        let started = start_process(spec, env, &redis_url, &pg_url, skew_env, upstreams.control).await;
        let child = started.map_err(|e| Error::WorkerCommand {
            command: spec.shown(),
            detail: match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("{} not found: install it or fix setup.worker.command", spec.command[0])
                }
                _ => e.to_string(),
            },
        })?;
        process.started(child.pid().unwrap_or(0));
        let pid = Arc::new(AtomicU32::new(child.pid().unwrap_or(0)));
        let signaller = Signaller { actor, pid, planned: planned.clone() };
        let timer = tap.start();
        let role = RoleProcess::watch(child, actor, sink, planned, true);
        let mut endpoints = vec![redis];
        endpoints.extend(pg_endpoint);
        Ok(CommandWorker { process: role, endpoints, timer, _skew: skew_dir, tap, signaller })
    }

    /// Wait until the worker waits in `want` (`CLIENT LIST` on `conn`), or say why it did not:
    /// it exited (its last line), or it never got there.
    pub async fn ready(
        &self,
        conn: &mut MultiplexedConnection,
        client_name: &str,
        want: ClientState,
        spec: &WorkerCommand,
    ) -> Result<(), Error> {
        self.ready_within(conn, client_name, want, spec, std::time::Duration::from_secs(15)).await
    }

    /// [`CommandWorker::ready`], waiting at most `patience`.
    pub async fn ready_within(
        &self,
        conn: &mut MultiplexedConnection,
        client_name: &str,
        want: ClientState,
        spec: &WorkerCommand,
        patience: std::time::Duration,
    ) -> Result<(), Error> {
        wait_for_client_within(conn, client_name, want, &self.process, patience).await.map_err(|e| match e {
            Error::RoleNotReady { actor, detail } => {
                Error::WorkerCommand { command: spec.shown(), detail: format!("{actor} {detail}") }
            }
            other => other,
        })
    }

    /// A handle that signals the process (the runner's planned stop).
    pub fn signaller(&self) -> Signaller {
        self.signaller.clone()
    }

    /// Its side of the interposer: where a party that sees a named point of its run (the
    /// side-effect partner, at a job's start) asks its faults.
    pub fn tap(&self) -> &Arc<WorkerTap> {
        &self.tap
    }

    /// Kill the process, wait until its output is drained, close its endpoints.
    pub async fn stop(self) {
        self.tap.stopping();
        self.timer.abort();
        self.process.stop().await;
        for endpoint in self.endpoints {
            endpoint.close().await;
        }
    }
}

/// Start the worker's process with its `ORDLAB_*` environment (`env`, the endpoints): under explore, a
/// Python worker forked from the exploration's fork server; otherwise its command line afresh.
async fn start_process(
    spec: &WorkerCommand,
    env: &WorkerEnv,
    redis_url: &str,
    pg_url: &str,
    skew_env: Vec<(String, String)>,
    control: Option<&crate::explore::Control>,
) -> std::io::Result<crate::roles::Started> {
    let mut vars: BTreeMap<String, String> = [
        ("ORDLAB_REDIS_URL", redis_url),
        ("ORDLAB_PG_URL", pg_url),
        ("ORDLAB_STREAM", &env.stream),
        ("ORDLAB_GROUP", &env.group),
        ("ORDLAB_CONSUMER", &env.consumer),
        ("ORDLAB_INDEX", &env.index.to_string()),
        ("ORDLAB_KEY_PREFIX", &env.key_prefix),
        ("ORDLAB_ORDERS_TABLE", &env.orders_table),
        ("ORDLAB_COST_MS", &serde_json::to_string(&env.cost_ms).expect("a map of numbers")),
        ("ORDLAB_SEED", &env.seed.to_string()),
        // Output as it happens: a worker's last lines are what the report shows.
        ("PYTHONUNBUFFERED", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    vars.extend(env.extra.clone());
    vars.extend(spec.env.clone());
    let forks = match control {
        Some(control) if skew_env.is_empty() => control.fork_server(&spec.command, &spec.env).await,
        _ => None,
    };
    match forks {
        // Under explore, a Python worker is forked from an interpreter that imported it once.
        Some(server) => {
            let mut all: BTreeMap<String, String> = std::env::vars().collect();
            all.extend(vars);
            server.fork(&spec.command[1..], &all).await.map(crate::roles::Started::from)
        }
        None => {
            let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(&spec.command[0]));
            cmd.args(&spec.command[1..]).envs(&vars).envs(skew_env);
            RoleProcess::start(cmd, None).map(crate::roles::Started::from)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_program_that_does_not_exist_is_named() {
        assert!(check_program(&line(&["sh", "-c", "true"])).is_ok());
        assert!(check_program(&line(&["/bin/sh"])).is_ok());
        let e = check_program(&line(&["ordlab-no-such-program", "x.py"])).unwrap_err().to_string();
        assert!(e.contains("ordlab-no-such-program is not found on PATH"), "{e}");
        let e = check_program(&line(&["./no/such/worker.sh"])).unwrap_err().to_string();
        assert!(e.contains("./no/such/worker.sh is not found"), "{e}");
        // A file that is there but cannot be executed.
        assert!(check_program(&line(&["Cargo.toml"])).is_err());
        let e = check_program(&line(&["./Cargo.toml"])).unwrap_err().to_string();
        assert!(e.contains("./Cargo.toml is not an executable file"), "{e}");
    }

    #[test]
    fn a_program_file_that_is_not_there_is_named() {
        assert!(check_program(&line(&["python3", "examples/python/consumer.py"])).is_ok());
        let e = check_program(&line(&["python3", "-u", "no/such/consumer.py", "x"])).unwrap_err().to_string();
        assert!(e.contains("no/such/consumer.py is not a file (from /") && !e.contains('\n'), "{e}");
        // Not file names: options, and arguments without a program file's extension.
        assert!(check_program(&line(&["sh", "-c", "exec true"])).is_ok());
        assert!(check_program(&line(&["python3", "-m", "http.server"])).is_ok());
    }
}
