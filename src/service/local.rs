//! The local backend runs `redis-server` and `postgres` from this machine on free
//! loopback ports, each invocation inside its own private temp dir. PostgreSQL's slow
//! `initdb` runs once into a cached template that later runs copy.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use nix::sys::signal::Signal;
use nix::unistd::{Gid, Uid};

use super::error::ServiceError;
use super::private_dir::{postgres_owner, private_dir};
use super::process::{free_port, owned_command, OwnedChild, StopPolicy};
use super::readiness::{poll_until, Attempt, PollError, Readiness};
use super::redis_server::{find_redis, RedisBinary};
use super::template::{copy_tree, ensure_template, run_blocking_to_end, PgBinaries};

/// How often a server start is retried when its port was taken in the meantime.
const PORT_ATTEMPTS: usize = 3;

/// A running local redis-server, stopped (SIGKILL) when dropped.
#[derive(Debug)]
pub struct LocalRedis {
    pub url: String,
    pub port: u16,
    child: OwnedChild,
    dir: Option<super::registry::RunDir>,
}

impl LocalRedis {
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Sends `signal` to the server (e.g. SIGSTOP/SIGCONT/SIGKILL in a fault lab).
    pub fn kill(&self, signal: Signal) -> Result<(), ServiceError> {
        self.child.signal(signal).map_err(|e| ServiceError::Io {
            what: format!("cannot signal redis-server pid {}", self.pid()),
            source: e.into(),
        })
    }

    /// The server's private temp dir (removed on stop/drop).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// Stops the server without blocking the runtime, then removes its temp dir.
    pub async fn stop(self) {
        let LocalRedis { child, dir, .. } = self;
        child.stop().await;
        drop(dir);
    }
}

/// Starts one more redis-server in its own temp dir, with `extra_args` appended.
pub async fn start_local_redis(extra_args: &[String]) -> Result<LocalRedis, ServiceError> {
    let dir = private_dir()?;
    let (child, port) = spawn_redis(dir.path(), extra_args).await?;
    Ok(LocalRedis { url: format!("redis://127.0.0.1:{port}/"), port, child, dir: Some(dir) })
}

/// Spawns redis-server with its files in `dir` and waits until it answers PING.
pub(crate) async fn spawn_redis(dir: &Path, extra_args: &[String]) -> Result<(OwnedChild, u16), ServiceError> {
    let bin = find_redis()?;
    spawn_redis_with(&bin, dir, extra_args).await
}

/// As [`spawn_redis`], with a given binary.
pub(crate) async fn spawn_redis_with(
    bin: &RedisBinary,
    dir: &Path,
    extra_args: &[String],
) -> Result<(OwnedChild, u16), ServiceError> {
    let log = dir.join("redis.log");
    start_with_port_retry("redis-server", StopPolicy::Kill, &log, |port| {
        redis_command(&bin.path, dir, port, extra_args)
    })
    .await
}

/// Starts redis-server again on a known port (a restart on the same data and URL).
pub(crate) async fn respawn_redis(
    bin: &RedisBinary,
    dir: &Path,
    port: u16,
    extra_args: &[String],
) -> Result<OwnedChild, ServiceError> {
    let (mut cmd, readiness) = redis_command(&bin.path, dir, port, extra_args);
    let log = dir.join("redis.log");
    let child = spawn_logged(&mut cmd, "redis-server", StopPolicy::Kill, &log)?;
    wait_ready("redis-server", child, &readiness).await
}

fn redis_command(bin: &Path, dir: &Path, port: u16, extra_args: &[String]) -> (std::process::Command, Readiness) {
    let mut cmd = owned_command(bin);
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .args(extra_args);
    (cmd, Readiness::redis(&format!("redis://127.0.0.1:{port}/")))
}

/// Copies the cached PostgreSQL template into `dir` and starts a postmaster there.
pub(crate) async fn spawn_postgres(dir: &Path) -> Result<(OwnedChild, u16), ServiceError> {
    let bins = PgBinaries::find()?;
    let owner = postgres_owner()?;
    let template = ensure_template(&bins, owner).await?;
    let data = dir.join("pg-data");
    let sock = dir.join("pg-sock");
    let (d, s, o) = (data.clone(), sock.clone(), owner);
    run_blocking_to_end("copy postgres template", move || prepare_pg_dirs(&template, &d, &s, o)).await??;
    let log = dir.join("postgres.log");
    start_with_port_retry("postgres", StopPolicy::POSTGRES, &log, |port| {
        let mut cmd = owned_command(&bins.postgres);
        cmd.arg("-D").arg(&data).args(["-p", &port.to_string()]);
        cmd.arg("-k").arg(&sock);
        for setting in [
            "listen_addresses=127.0.0.1",
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
            "max_connections=100",
            "shared_buffers=32MB",
            // Dynamic shared memory as files in the data dir, not /dev/shm/PostgreSQL.*:
            // a SIGKILLed run then leaves nothing outside its private dir but one small
            // System V segment, which the reaper finds through postmaster.pid.
            "dynamic_shared_memory_type=mmap",
        ] {
            cmd.args(["-c", setting]);
        }
        if let Some((uid, gid)) = owner {
            cmd.uid(uid.as_raw()).gid(gid.as_raw());
        }
        (cmd, Readiness::postgres(&pg_config(port)))
    })
    .await
}

/// The tokio-postgres config string for a local server on `port`.
pub(crate) fn pg_config(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=postgres dbname=postgres")
}

fn prepare_pg_dirs(template: &Path, data: &Path, sock: &Path, owner: Option<(Uid, Gid)>) -> Result<(), ServiceError> {
    copy_tree(template, data, owner).map_err(ServiceError::io("copy postgres template"))?;
    std::fs::create_dir(sock).map_err(ServiceError::io("create postgres socket dir"))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(sock, Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(ServiceError::io("chown postgres socket dir"))?;
    }
    Ok(())
}

/// Spawns the server built by `build(port)` and waits for readiness. When the server
/// exits early because its port got taken, tries again with another free port.
async fn start_with_port_retry<F>(
    what: &'static str,
    policy: StopPolicy,
    log: &Path,
    mut build: F,
) -> Result<(OwnedChild, u16), ServiceError>
where
    F: FnMut(u16) -> (std::process::Command, Readiness),
{
    let mut attempt = 1;
    loop {
        let port = free_port().map_err(ServiceError::io("pick a free port"))?;
        let (mut cmd, readiness) = build(port);
        let child = spawn_logged(&mut cmd, what, policy, log)?;
        match wait_ready(what, child, &readiness).await {
            Ok(child) => return Ok((child, port)),
            Err(ServiceError::NotReady { log_tail, .. }) if attempt < PORT_ATTEMPTS && port_taken(&log_tail) => {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn port_taken(log_tail: &str) -> bool {
    log_tail.contains("Address already in use") || log_tail.contains("could not bind")
}

/// Spawn `what` with its output in `log`, stopped by `policy` when dropped.
fn spawn_logged(
    cmd: &mut std::process::Command,
    what: &'static str,
    policy: StopPolicy,
    log: &Path,
) -> Result<OwnedChild, ServiceError> {
    let file = std::fs::File::create(log).map_err(ServiceError::io(format!("create {what} log")))?;
    let err = file.try_clone().map_err(ServiceError::io("dup log file"))?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(err);
    OwnedChild::spawn(cmd, what, policy, Some(log.to_path_buf())).map_err(ServiceError::io(format!("spawn {what}")))
}

/// Polls `readiness` until it succeeds; fails early if the process exits.
pub(crate) async fn wait_ready(
    what: &'static str,
    mut child: OwnedChild,
    readiness: &Readiness,
) -> Result<OwnedChild, ServiceError> {
    let result = poll_until(readiness.timeout, readiness.interval, || {
        let exited = child.try_exited();
        async move {
            if let Some(status) = exited {
                return Attempt::Abort(format!("process exited early with {status}"));
            }
            match readiness.check().await {
                Ok(()) => Attempt::Ready(()),
                Err(e) => Attempt::Retry(e),
            }
        }
    })
    .await;
    let reason = match result {
        Ok(()) => return Ok(child),
        Err(PollError::Aborted(r)) => r,
        Err(PollError::TimedOut { last }) => format!("last probe error: {last}"),
    };
    let log_tail = child.log_tail(5);
    drop(child);
    Err(ServiceError::NotReady { what: what.to_string(), timeout: readiness.timeout, reason, log_tail })
}
