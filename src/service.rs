//! The service role starts one Redis and one PostgreSQL for an experiment, waits until
//! both answer, describes them, and stops them. Servers run locally, in Docker, or are
//! external; local ones live in a private temp dir and die with this process, containers
//! carry this process's labels, and a reaper reclaims whatever a killed run left behind.
//! Labs that need Redis servers of their own start [`RedisNode`]s on the same backend.

use std::path::Path;
use std::time::{Duration, Instant};

mod binaries;
pub mod cluster;
mod docker;
mod doctor;
mod engine;
mod error;
pub mod fork_server;
mod local;
pub mod namespace;
mod node;
mod owner;
mod private_dir;
pub(crate) mod probe;
pub mod process;
pub mod readiness;
mod reaper;
mod redis_server;
mod registry;
mod template;

pub(crate) use binaries::cache_root;
pub use doctor::{doctor, doctor_with, DoctorReport, FoundBinary};
pub use error::{BoxError, ServiceError};
pub use local::{start_local_redis, LocalRedis};
pub use node::{NodeSpec, PeerAddr, RedisNode};
pub use owner::{Owner, LABEL_RUN, LABEL_SCOPE};
pub use probe::{probe_postgres, probe_redis, redact_url};
pub use reaper::Reclaimed;
pub use redis_server::{find_redis, redis8_build_path, RedisBinary, RedisOrigin};
pub use registry::RunDir;

use docker::{DockerServices, PullPatience};
use engine::Engine;

/// How long `auto` waits for a Docker engine to answer before choosing local servers.
const ENGINE_TIMEOUT: Duration = Duration::from_millis(1500);

/// Which backend the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Docker when an engine answers and both images are present or pullable, else local
    /// (with one line on stderr saying why).
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
    /// Nodes of the user's Redis Cluster, for labs that need one (external backend only).
    pub redis_cluster_urls: Vec<String>,
    pub redis_args: Vec<String>,
    /// External backend: keep the keys and schemas this run made (the next run on those
    /// servers removes them; see [`namespace`]).
    pub keep: bool,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            backend: BackendChoice::Auto,
            redis_image: "redis:8".into(),
            pg_image: "postgres:18".into(),
            redis_url: None,
            pg_url: None,
            redis_cluster_urls: Vec::new(),
            redis_args: Vec::new(),
            keep: false,
        }
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    pub redis_version: String,
    pub postgres_version: String,
    pub redis: RedisCapabilities,
    /// Which Redis ran: a binary and where it came from (`/usr/bin/redis-server (system)`,
    /// `… (ordlab's Redis 8 build)`), `image redis:8`, or `external`.
    #[serde(default)]
    pub redis_server: String,
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
    /// The user's Redis Cluster (external backend with `--redis-cluster-url`; checked to be
    /// a cluster whose state is ok when the services start). Empty otherwise: a lab that
    /// needs a cluster starts its own.
    pub redis_cluster_urls: Vec<String>,
    /// The Redis Cluster labs past one node run on, started or connected to on first use.
    pub cluster: cluster::SharedCluster,
    pub info: ServerInfo,
    /// Random per invocation's servers: every Redis key a run makes starts with
    /// `ordlab:<nonce>:` (what the external backend's [`namespace`] claims and removes).
    pub nonce: String,
    pub start_time: Duration,
    /// Why `--backend auto` did not choose Docker, when it did not (also printed on stderr).
    pub backend_note: Option<String>,
    guard: Guard,
}

/// What must be torn down. Field order of `LocalGuard` is the stop order:
/// the servers are killed and reaped before their temp dir is removed.
/// There is one per `Services`, so the size difference between variants is moot.
#[allow(clippy::large_enum_variant)]
enum Guard {
    Local(LocalGuard),
    Docker(Box<DockerServices>),
    /// The run's claim on the user's servers (None once released).
    External(Option<Box<namespace::Claim>>),
}

struct LocalGuard {
    redis: process::OwnedChild,
    pg: process::OwnedChild,
    dir: registry::RunDir,
}

impl Services {
    /// Reclaims what killed runs left (once per process), picks the backend, starts both
    /// servers and waits until both answer.
    pub async fn start(opts: &ServiceOptions) -> Result<Services, ServiceError> {
        let started = Instant::now();
        let engine = Engine::connect(ENGINE_TIMEOUT).await;
        reap_once(engine.as_ref().ok()).await;
        let (backend, backend_note) = choose_backend(opts, &engine).await?;
        // Said once per invocation, however many job slots start servers of their own.
        static SAID: std::sync::Once = std::sync::Once::new();
        if let Some(note) = &backend_note {
            SAID.call_once(|| eprintln!("ordlab: using local servers (--backend auto): {note}"));
        }
        let (guard, redis_url, pg_config, redis_server) = match backend {
            Backend::Local => start_local(opts).await?,
            Backend::Docker => {
                let d = docker::start(engine?, opts).await?;
                let (r, p) = (d.redis_url.clone(), d.pg_config.clone());
                (Guard::Docker(Box::new(d)), r, p, format!("image {}", opts.redis_image))
            }
            Backend::External => external_urls(opts)?,
        };
        // On error below, `guard` drops here and stops whatever was started.
        let ((redis_version, redis), postgres_version) =
            tokio::try_join!(probe_redis(&redis_url), probe_postgres(&pg_config))?;
        let nonce = format!("{:08x}", rand::random::<u32>());
        let redis_cluster_urls =
            if backend == Backend::External { opts.redis_cluster_urls.clone() } else { Vec::new() };
        let guard = match guard {
            Guard::External(_) => {
                let claim = claim_external(&redis_url, &pg_config, &redis_cluster_urls, &nonce, opts.keep).await?;
                Guard::External(Some(Box::new(claim)))
            }
            other => other,
        };
        Ok(Services {
            backend,
            redis_url,
            pg_config,
            redis_cluster_urls,
            cluster: cluster::SharedCluster::default(),
            info: ServerInfo { redis_version, postgres_version, redis, redis_server },
            nonce,
            start_time: started.elapsed(),
            backend_note,
            guard,
        })
    }

    /// Starts a Redis server of the lab's own on this backend (see [`RedisNode`]). A Docker
    /// node lives at most as long as these services: stopping them removes it too.
    pub async fn start_redis_node(&self, spec: &NodeSpec) -> Result<RedisNode, ServiceError> {
        match &self.guard {
            Guard::Local(_) => RedisNode::start_local(spec).await,
            Guard::Docker(d) => RedisNode::start_docker(&d.scope, &d.redis_image, &d.password, spec).await,
            Guard::External(_) => Err(ServiceError::NodesUnsupported { backend: "external" }),
        }
    }

    /// A TCP listener of this process that this backend's nodes can connect to (a proxy
    /// between a lab's own nodes, such as the failover lab's replication link): on loopback
    /// locally, on the gateway of the run's private network on Docker. Where containers
    /// cannot reach this process: [`ServiceError::HostUnreachable`].
    pub async fn listen_for_nodes(&self) -> Result<tokio::net::TcpListener, ServiceError> {
        match &self.guard {
            Guard::Local(_) => node::listen_local().await,
            Guard::Docker(d) => node::listen_docker(&d.scope).await,
            Guard::External(_) => Err(ServiceError::NodesUnsupported { backend: "external" }),
        }
    }

    /// Stops the servers without blocking the runtime, then removes their files.
    pub async fn stop(mut self) {
        self.cluster.stop().await;
        match std::mem::replace(&mut self.guard, Guard::External(None)) {
            Guard::Local(LocalGuard { redis, pg, dir }) => {
                tokio::join!(redis.stop(), pg.stop());
                drop(dir);
            }
            Guard::Docker(g) => g.scope.remove_all().await,
            Guard::External(Some(claim)) => {
                if let Err(e) = claim.release().await {
                    eprintln!("ordlab: {e}");
                }
            }
            Guard::External(None) => {}
        }
    }

    /// Pids of local server processes (empty for other backends).
    pub fn pids(&self) -> Vec<u32> {
        match &self.guard {
            Guard::Local(g) => vec![g.redis.pid(), g.pg.pid()],
            Guard::Docker(_) | Guard::External(_) => Vec::new(),
        }
    }

    /// The private temp dir of the local backend.
    pub fn temp_dir(&self) -> Option<&Path> {
        match &self.guard {
            Guard::Local(g) => Some(g.dir.path()),
            Guard::Docker(_) | Guard::External(_) => None,
        }
    }
}

/// The run's claim on the user's servers (and cluster, if given), after saying in one line what
/// it removed of earlier runs. A cluster that is not one, or not ok, is reported now, before
/// any lab runs.
async fn claim_external(
    redis_url: &str,
    pg_config: &str,
    cluster_urls: &[String],
    nonce: &str,
    keep: bool,
) -> Result<namespace::Claim, ServiceError> {
    let (mut claim, mut leftovers) = namespace::Claim::take(redis_url, pg_config, nonce, keep).await?;
    if !cluster_urls.is_empty() {
        let masters = cluster::RedisCluster::external(cluster_urls).await?.masters().await?;
        let urls: Vec<String> = masters.into_iter().map(|m| m.url).collect();
        claim.claim_cluster(&urls, &mut leftovers).await?;
    }
    if leftovers != namespace::Leftovers::default() {
        eprintln!("ordlab: {leftovers}");
    }
    Ok(claim)
}

/// Runs the reaper once per process, before the first servers start, and prints one line
/// when it reclaimed something.
async fn reap_once(engine: Option<&Engine>) {
    static REAPED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    REAPED
        .get_or_init(|| async {
            let mut reclaimed = Reclaimed::default();
            if let Some(engine) = engine {
                reaper::reap_engine(engine, &mut reclaimed).await;
            }
            let root = registry::private_root();
            let local = tokio::task::spawn_blocking(move || {
                let mut r = Reclaimed::default();
                // The registry first: it lists dirs outside the root too.
                reaper::reap_registry(&root, &mut r);
                reaper::reap_dirs(&root, &mut r);
                r
            });
            if let Ok(r) = local.await {
                reclaimed.dirs += r.dirs;
                reclaimed.dir_bytes += r.dir_bytes;
                reclaimed.processes += r.processes;
                reclaimed.shm_segments += r.shm_segments;
                reclaimed.owners.extend(r.owners);
            }
            if !reclaimed.is_empty() {
                eprintln!("ordlab: {reclaimed}");
            }
        })
        .await;
}

/// The backend to use, and for `auto` without Docker, why not.
async fn choose_backend(
    opts: &ServiceOptions,
    engine: &Result<Engine, ServiceError>,
) -> Result<(Backend, Option<String>), ServiceError> {
    Ok(match opts.backend {
        BackendChoice::Local => (Backend::Local, None),
        BackendChoice::External => (Backend::External, None),
        BackendChoice::Docker => (Backend::Docker, None),
        BackendChoice::Auto => match engine {
            Err(e) => (Backend::Local, Some(why_not_docker(e))),
            Ok(engine) => {
                let images = [opts.redis_image.as_str(), opts.pg_image.as_str()];
                match docker::images_available(engine, &images, PullPatience::Probe).await {
                    Ok(()) => (Backend::Docker, None),
                    Err(e) => (Backend::Local, Some(why_not_docker(&e))),
                }
            }
        },
    })
}

/// The reason alone, without the error's advice (which is about `--backend docker`).
fn why_not_docker(e: &ServiceError) -> String {
    let why = match e {
        ServiceError::DockerUnavailable { host, reason } => format!("no Docker engine answers at {host} ({reason})"),
        ServiceError::ImageUnavailable { image, reason } => {
            format!("the Docker engine answers, but image {image} is not present and cannot be pulled ({reason})")
        }
        other => other.to_string(),
    };
    why.replace('\n', " ")
}

/// How long each backend takes to start (servers started, probed and stopped once each):
/// local always, Docker when an engine answers and both images are present.
pub async fn start_times(opts: &ServiceOptions) -> Vec<(Backend, Result<Duration, String>)> {
    let mut out = Vec::new();
    for (backend, choice) in [(Backend::Local, BackendChoice::Local), (Backend::Docker, BackendChoice::Docker)] {
        if backend == Backend::Docker {
            if let Err(why) = docker_ready(opts).await {
                out.push((backend, Err(why)));
                continue;
            }
        }
        let result = match Services::start(&ServiceOptions { backend: choice, ..opts.clone() }).await {
            Ok(s) => {
                let t = s.start_time;
                s.stop().await;
                Ok(t)
            }
            Err(e) => Err(e.to_string()),
        };
        out.push((backend, result));
    }
    out
}

/// One line for `ordlab bench`: "server start: local 0.41 s · docker 2.30 s" (or why Docker
/// was not measured).
pub async fn start_times_line(opts: &ServiceOptions) -> String {
    let parts: Vec<String> = start_times(opts)
        .await
        .into_iter()
        .map(|(backend, t)| match t {
            Ok(t) => format!("{backend} {:.2} s", t.as_secs_f64()),
            Err(why) => format!("{backend} not measured ({why})"),
        })
        .collect();
    format!("server start (started, probed, stopped once each): {}", parts.join(" · "))
}

/// Ok when an engine answers and both images are present (nothing is pulled).
async fn docker_ready(opts: &ServiceOptions) -> Result<(), String> {
    let engine = Engine::connect(ENGINE_TIMEOUT).await.map_err(|e| why_not_docker(&e))?;
    for image in [&opts.redis_image, &opts.pg_image] {
        if !engine.image_present(image).await {
            return Err(format!("image {image} is not present"));
        }
    }
    Ok(())
}

async fn start_local(opts: &ServiceOptions) -> Result<(Guard, String, String, String), ServiceError> {
    let bin = find_redis()?;
    let dir = private_dir::private_dir()?;
    let (redis, pg) =
        tokio::join!(local::spawn_redis_with(&bin, dir.path(), &opts.redis_args), local::spawn_postgres(dir.path()),);
    // If one failed, the other's OwnedChild drops here and is stopped.
    let ((redis, redis_port), (pg, pg_port)) = (redis?, pg?);
    let urls = (format!("redis://127.0.0.1:{redis_port}/"), local::pg_config(pg_port));
    Ok((Guard::Local(LocalGuard { redis, pg, dir }), urls.0, urls.1, bin.to_string()))
}

fn external_urls(opts: &ServiceOptions) -> Result<(Guard, String, String, String), ServiceError> {
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
    Ok((Guard::External(None), redis, pg, "external".to_string()))
}
