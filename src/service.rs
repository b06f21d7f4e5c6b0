//! The service role starts one Redis and one PostgreSQL for an experiment, waits until
//! both answer, describes them, and stops them. Servers run locally, in Docker, or are
//! external; local ones live in a private temp dir and die with this process.

use std::path::Path;
use std::time::{Duration, Instant};

mod docker;
mod doctor;
mod error;
mod local;
mod probe;
pub mod process;
pub mod readiness;
mod template;

pub use doctor::{doctor, DoctorReport, FoundBinary};
pub use error::{BoxError, ServiceError};
pub use local::{start_local_redis, LocalRedis};
pub use probe::{probe_postgres, probe_redis, redact_url};

/// Which backend the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Docker when an engine answers, else local.
    #[default]
    Auto,
    Local,
    Docker,
    External,
}

impl clap::ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Auto, Self::Local, Self::Docker, Self::External]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Self::Auto => "auto",
            Self::Local => "local",
            Self::Docker => "docker",
            Self::External => "external",
        }))
    }
}

/// The backend that actually ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Local,
    Docker,
    External,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Local => "local",
            Backend::Docker => "docker",
            Backend::External => "external",
        })
    }
}

#[derive(Clone, Debug)]
pub struct ServiceOptions {
    pub backend: BackendChoice,
    pub redis_image: String,
    pub pg_image: String,
    pub redis_url: Option<String>,
    pub pg_url: Option<String>,
    pub redis_args: Vec<String>,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            backend: BackendChoice::Auto,
            redis_image: "redis:8".into(),
            pg_image: "postgres:18".into(),
            redis_url: None,
            pg_url: None,
            redis_args: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    pub redis_version: String,
    pub postgres_version: String,
    pub redis: RedisCapabilities,
}

/// Optional Redis commands; absent ones make some experiments skip or fall back.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, Default)]
pub struct RedisCapabilities {
    pub delex: bool,
    pub xautoclaim: bool,
    pub blmove: bool,
    pub bzpopmax: bool,
    pub xackdel: bool,
    pub xadd_idmp: bool,
}

/// Running servers for one invocation. Dropping it stops them (synchronously).
pub struct Services {
    pub backend: Backend,
    pub redis_url: String,
    pub pg_config: String,
    pub info: ServerInfo,
    pub start_time: Duration,
    guard: Guard,
}

/// What must be torn down. Field order of `LocalGuard` is the stop order:
/// the servers are killed and reaped before their temp dir is removed.
/// There is one per `Services`, so the size difference between variants is moot.
#[allow(clippy::large_enum_variant)]
enum Guard {
    Local(LocalGuard),
    Docker(Box<docker::DockerGuard>),
    External,
}

struct LocalGuard {
    redis: process::OwnedChild,
    pg: process::OwnedChild,
    dir: tempfile::TempDir,
}

impl Services {
    pub async fn start(opts: &ServiceOptions) -> Result<Services, ServiceError> {
        let started = Instant::now();
        let backend = match opts.backend {
            BackendChoice::Auto if docker::engine_answers(Duration::from_millis(500)).await => Backend::Docker,
            BackendChoice::Auto | BackendChoice::Local => Backend::Local,
            BackendChoice::Docker => Backend::Docker,
            BackendChoice::External => Backend::External,
        };
        let (guard, redis_url, pg_config) = match backend {
            Backend::Local => start_local(opts).await?,
            Backend::Docker => {
                let (g, r, p) = docker::start(&opts.redis_image, &opts.pg_image).await?;
                (Guard::Docker(Box::new(g)), r, p)
            }
            Backend::External => external_urls(opts)?,
        };
        // On error below, `guard` drops here and stops whatever was started.
        let ((redis_version, redis), postgres_version) =
            tokio::try_join!(probe_redis(&redis_url), probe_postgres(&pg_config))?;
        Ok(Services {
            backend,
            redis_url,
            pg_config,
            info: ServerInfo { redis_version, postgres_version, redis },
            start_time: started.elapsed(),
            guard,
        })
    }

    /// Stops the servers without blocking the runtime, then removes their files.
    pub async fn stop(mut self) {
        match std::mem::replace(&mut self.guard, Guard::External) {
            Guard::Local(LocalGuard { redis, pg, dir }) => {
                tokio::join!(redis.stop(), pg.stop());
                drop(dir);
            }
            Guard::Docker(g) => {
                let docker::DockerGuard { redis, pg } = *g;
                let _ = tokio::join!(redis.rm(), pg.rm());
            }
            Guard::External => {}
        }
    }

    /// Pids of local server processes (empty for other backends).
    pub fn pids(&self) -> Vec<u32> {
        match &self.guard {
            Guard::Local(g) => vec![g.redis.pid(), g.pg.pid()],
            _ => Vec::new(),
        }
    }

    /// The private temp dir of the local backend.
    pub fn temp_dir(&self) -> Option<&Path> {
        match &self.guard {
            Guard::Local(g) => Some(g.dir.path()),
            _ => None,
        }
    }
}

async fn start_local(opts: &ServiceOptions) -> Result<(Guard, String, String), ServiceError> {
    let dir = local::private_dir()?;
    let (redis, pg) =
        tokio::join!(local::spawn_redis(dir.path(), &opts.redis_args), local::spawn_postgres(dir.path()),);
    // If one failed, the other's OwnedChild drops here and is stopped.
    let ((redis, redis_port), (pg, pg_port)) = (redis?, pg?);
    let urls = (format!("redis://127.0.0.1:{redis_port}/"), local::pg_config(pg_port));
    Ok((Guard::Local(LocalGuard { redis, pg, dir }), urls.0, urls.1))
}

fn external_urls(opts: &ServiceOptions) -> Result<(Guard, String, String), ServiceError> {
    let redis = opts.redis_url.clone().ok_or(ServiceError::MissingUrl {
        what: "redis",
        flag: "--redis-url",
        env: "ORDLAB_REDIS_URL",
    })?;
    let pg = opts.pg_url.clone().ok_or(ServiceError::MissingUrl {
        what: "postgres",
        flag: "--pg-url",
        env: "ORDLAB_PG_URL",
    })?;
    Ok((Guard::External, redis, pg))
}
