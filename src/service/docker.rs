//! The Docker backend: one Redis and one PostgreSQL container per `Services`, plus Redis node
//! containers on a private network, each published on 127.0.0.1 only and protected by a
//! random password. Containers are created through a [`Scope`], so every exit path (error,
//! Ctrl-C, panic) removes them; the reaper covers SIGKILL.

use std::time::Duration;

use super::engine::{ContainerSpec, Engine, Scope};
use super::error::ServiceError;
use super::process::free_port;
use super::readiness::{poll_until, Attempt, PollError, Readiness};
use super::ServiceOptions;

const REDIS_PORT: u16 = 6379;
const PG_PORT: u16 = 5432;
/// How often a container start is retried when its published port was taken meanwhile.
const PORT_ATTEMPTS: usize = 3;
/// PostgreSQL's entrypoint runs initdb first: give it time on a loaded machine.
const PG_READY_TIMEOUT: Duration = Duration::from_secs(90);
const REDIS_READY_TIMEOUT: Duration = Duration::from_secs(30);
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Running Redis and PostgreSQL containers; dropping `scope` removes them.
pub struct DockerServices {
    pub scope: Scope,
    pub redis_url: String,
    pub pg_config: String,
    /// The password of every server of this scope (Redis `requirepass`/`masterauth`, PostgreSQL).
    pub password: String,
    pub redis_image: String,
}

/// How long an image pull may go without any answer before the image counts as not pullable.
#[derive(Clone, Copy, Debug)]
pub enum PullPatience {
    /// `--backend auto` asks quickly, to fall back to local servers.
    Probe,
    /// `--backend docker` waits longer: the user asked for containers.
    Patient,
}

impl PullPatience {
    pub fn first_answer(self) -> Duration {
        match self {
            PullPatience::Probe => Duration::from_secs(15),
            PullPatience::Patient => Duration::from_secs(120),
        }
    }
}

/// Checks both images (pulling a missing one), then starts both containers and waits for
/// both results: on any failure every container of the scope is removed before returning.
pub async fn start(engine: Engine, opts: &ServiceOptions) -> Result<DockerServices, ServiceError> {
    let (redis_image, pg_image) = (opts.redis_image.as_str(), opts.pg_image.as_str());
    images_available(&engine, &[redis_image, pg_image], PullPatience::Patient).await?;
    let scope = Scope::new(engine);
    let password = random_password();
    let (redis, pg) = tokio::join!(
        start_redis(&scope, redis_image, &password, &opts.redis_args),
        start_pg(&scope, pg_image, &password)
    );
    match (redis, pg) {
        (Ok(redis_url), Ok(pg_config)) => {
            Ok(DockerServices { scope, redis_url, pg_config, password, redis_image: redis_image.to_string() })
        }
        (redis, pg) => {
            scope.remove_all().await;
            Err(redis.err().or(pg.err()).expect("one start failed"))
        }
    }
}

/// Ok when every image is present or pullable (both are checked; the first failure is returned).
pub async fn images_available(engine: &Engine, images: &[&str], patience: PullPatience) -> Result<(), ServiceError> {
    let checks = images.iter().map(|image| engine.ensure_image(image, patience.first_answer()));
    futures_util::future::join_all(checks).await.into_iter().collect()
}

async fn start_redis(scope: &Scope, image: &str, password: &str, args: &[String]) -> Result<String, ServiceError> {
    let what = format!("redis container (image {image})");
    let (id, port) = run_with_port_retry(scope, &what, |host_port| ContainerSpec {
        image: image.to_string(),
        name: scope.name("redis"),
        cmd: redis_cmd(password, args),
        env: Vec::new(),
        port: REDIS_PORT,
        host_port,
        network: None,
    })
    .await?;
    let url = redis_url(password, port);
    wait_ready(scope.engine(), &id, &what, &Readiness::redis(&url), REDIS_READY_TIMEOUT).await?;
    Ok(url)
}

async fn start_pg(scope: &Scope, image: &str, password: &str) -> Result<String, ServiceError> {
    let mut cmd = vec!["postgres".to_string()];
    for setting in
        ["fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=100", "shared_buffers=32MB"]
    {
        cmd.extend(["-c".to_string(), setting.to_string()]);
    }
    let env = vec![
        format!("POSTGRES_PASSWORD={password}"),
        "POSTGRES_USER=postgres".to_string(),
        "POSTGRES_DB=postgres".to_string(),
    ];
    let what = format!("postgres container (image {image})");
    let (id, port) = run_with_port_retry(scope, &what, |host_port| ContainerSpec {
        image: image.to_string(),
        name: scope.name("postgres"),
        cmd: cmd.clone(),
        env: env.clone(),
        port: PG_PORT,
        host_port,
        network: None,
    })
    .await?;
    let config = format!("host=127.0.0.1 port={port} user=postgres password={password} dbname=postgres");
    wait_ready(scope.engine(), &id, &what, &Readiness::postgres(&config), PG_READY_TIMEOUT).await?;
    Ok(config)
}

/// `redis-server` in a container: all interfaces of the container (its port is published on
/// the host's loopback only), a password, no persistence unless `extra` asks for it.
pub fn redis_cmd(password: &str, extra: &[String]) -> Vec<String> {
    let base = ["redis-server", "--port", "6379", "--bind", "0.0.0.0", "--requirepass", password];
    let mut cmd: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    cmd.extend(["--masterauth", password, "--save", "", "--appendonly", "no"].map(String::from));
    cmd.extend(extra.iter().cloned());
    cmd
}

pub fn redis_url(password: &str, port: u16) -> String {
    format!("redis://:{password}@127.0.0.1:{port}/")
}

/// Runs the container built by `spec(host_port)`; when the engine says the port was taken in
/// the meantime, tries again with another free port. Returns (container id, host port).
pub async fn run_with_port_retry(
    scope: &Scope,
    what: &str,
    spec: impl Fn(u16) -> ContainerSpec,
) -> Result<(String, u16), ServiceError> {
    let mut attempt = 1;
    loop {
        let port = free_port().map_err(ServiceError::io("pick a free port"))?;
        match scope.run_container(&spec(port)).await {
            Ok(id) => return Ok((id, port)),
            Err(ServiceError::Docker(msg)) if attempt < PORT_ATTEMPTS && port_taken(&msg) => attempt += 1,
            Err(ServiceError::Docker(msg)) => return Err(ServiceError::Docker(format!("{what}: {msg}"))),
            Err(e) => return Err(e),
        }
    }
}

fn port_taken(msg: &str) -> bool {
    msg.contains("port is already allocated") || msg.contains("address already in use")
}

/// Polls `readiness` until it succeeds; gives up early when the container stops.
pub async fn wait_ready(
    engine: &Engine,
    id: &str,
    what: &str,
    readiness: &Readiness,
    timeout: Duration,
) -> Result<(), ServiceError> {
    let result = poll_until(timeout, POLL_INTERVAL, || async {
        match readiness.check().await {
            Ok(()) => Attempt::Ready(()),
            Err(probe) => match engine.state(id, None).await {
                Ok(state) if !state.running => {
                    Attempt::Abort(format!("container exited with code {}", state.exit.unwrap_or(-1)))
                }
                Err(e) => Attempt::Abort(e.to_string()),
                Ok(_) => Attempt::Retry(probe),
            },
        }
    })
    .await;
    let reason = match result {
        Ok(()) => return Ok(()),
        Err(PollError::Aborted(r)) => r,
        Err(PollError::TimedOut { last }) => format!("last probe error: {last}"),
    };
    let log_tail = engine.log_tail(id, 5).await;
    Err(ServiceError::NotReady { what: what.to_string(), timeout, reason, log_tail })
}

fn random_password() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_needs_the_password_and_user_args_come_last() {
        let cmd = redis_cmd("pw", &["--appendonly".into(), "yes".into()]);
        let joined = cmd.join(" ");
        assert!(joined.starts_with("redis-server --port 6379"), "{joined}");
        assert!(joined.contains("--requirepass pw --masterauth pw"), "{joined}");
        assert!(joined.ends_with("--appendonly no --appendonly yes"), "{joined}");
        assert_eq!(redis_url("pw", 4000), "redis://:pw@127.0.0.1:4000/");
    }

    #[test]
    fn taken_ports_are_recognised() {
        assert!(port_taken("start container: Bind for 127.0.0.1:4000 failed: port is already allocated"));
        assert!(!port_taken("start container: exec: \"postgres\": executable file not found"));
    }
}
