//! Errors of the service role. Every variant renders as one line that names the
//! problem and the fix; URLs inside them are always redacted.

use std::time::Duration;

/// A boxed error source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{what} not found on PATH or in {searched}: {hint}")]
    MissingBinary { what: &'static str, searched: String, hint: String },
    #[error("{what} did not become ready within {timeout:?} ({reason}); last log lines: {log_tail}")]
    NotReady { what: String, timeout: Duration, reason: String, log_tail: String },
    #[error("cannot reach {what} at {url}: {source}; check the URL and that the server is running")]
    Unreachable {
        what: &'static str,
        url: String,
        #[source]
        source: BoxError,
    },
    #[error("external backend needs a {what} URL: pass {flag} or set {env}")]
    MissingUrl { what: &'static str, flag: &'static str, env: &'static str },
    #[error("no Docker engine answers at {host} ({reason}): start one, or use --backend local")]
    DockerUnavailable { host: String, reason: String },
    #[error("Docker image {image} is not present and cannot be pulled ({reason}): pull or build it, pass another with --redis-image/--pg-image (ORDLAB_REDIS_IMAGE/ORDLAB_PG_IMAGE), or use --backend local")]
    ImageUnavailable { image: String, reason: String },
    #[error("docker backend failed: {0}; or use --backend local")]
    Docker(String),
    #[error("cluster nodes in containers are unreachable from this process at {addr} ({reason}): clients follow MOVED redirections to the address each node announces, its container address, which only a Linux host with a local engine can reach; use --backend local")]
    ClusterUnreachable { addr: String, reason: String },
    #[error("Redis containers cannot reach this process at {addr} ({reason}): a lab's link between its own nodes (the failover replica's proxy) listens on the gateway of the run's Docker network, an address of this machine only on a Linux host with a local engine; use --backend local")]
    HostUnreachable { addr: String, reason: String },
    #[error(
        "the {backend} backend cannot start Redis servers of a lab's own: use --backend local or --backend docker"
    )]
    NodesUnsupported { backend: &'static str },
    #[error("running as root but there is no 'postgres' system user to run PostgreSQL as: install postgresql (Debian: apt-get install -y postgresql-15) or `useradd --system postgres`, or run as a non-root user")]
    NoPostgresUser,
    #[error("{url} is not a Redis Cluster node (cluster support disabled): --redis-cluster-url takes the nodes of a cluster (cluster-enabled yes)")]
    NotACluster { url: String },
    #[error("the Redis Cluster at {url} says cluster_state:{state}: repair it (redis-cli --cluster check/fix) or point --redis-cluster-url at a healthy cluster")]
    ClusterNotOk { url: String, state: String },
    #[error("PostgreSQL user {user} lacks CREATE on database {database}, which ordlab needs to make its schemas ordlab and ordlab_sink there (no superuser, no CREATEDB): run GRANT CREATE ON DATABASE \"{database}\" TO \"{user}\"; as the database's owner")]
    MissingCreate { user: String, database: String },
    #[error("another ordlab run holds database {database} (its schemas ordlab and ordlab_sink are in use): wait until it ends, or give this run another database with --pg-url")]
    ExternalInUse { database: String },
    #[error("schema {schema} exists in database {database} and was not made by ordlab (its comment carries no ordlab mark): drop it or rename it if it is not yours to keep, or give ordlab another database with --pg-url")]
    ForeignSchema { schema: String, database: String },
    #[error("key {key} exists on your Redis and was not made by this run (its random nonce is taken): run again, which draws another")]
    NonceTaken { key: String },
    #[error("ordlab's namespace on your {server}: {what}: {reason}")]
    Namespace { what: &'static str, server: &'static str, reason: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl ServiceError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServiceError {
        let what = what.into();
        move |source| ServiceError::Io { what, source }
    }
}
