//! Typed errors of running a lab, each one line naming the problem and the fix, and the exit
//! codes the binary maps every error to. Errors of reading a lab (an unknown id, a malformed
//! scenario file) are their own types in `catalog` and `scenario`, found before anything runs.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | every variant ran and matched its expected outcome |
//! | 1    | the lab ran, but some variant did not match (or could not be decided) |
//! | 2    | usage or infrastructure error: unknown lab, bad scenario file, server missing or unreachable |
//! | 130  | interrupted (Ctrl-C / SIGTERM); everything started was stopped |

use crate::service::ServiceError;

/// Exit code: the lab ran and every variant matched its expectation.
pub const EXIT_MATCHED: i32 = 0;
/// Exit code: the lab ran and some variant did not match, or could not be decided.
pub const EXIT_MISMATCH: i32 = 1;
/// Exit code: usage or infrastructure error.
pub const EXIT_ERROR: i32 = 2;
/// Exit code: interrupted by a signal; everything started was stopped.
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error(transparent)]
    Sink(#[from] crate::side_effect::SinkError),
    #[error("redis: {context}: {source}")]
    Redis { context: String, source: redis::RedisError },
    #[error("postgresql: {context}: {}", crate::connect::postgres_said(source))]
    Postgres { context: String, source: tokio_postgres::Error },
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("{actor} did not become ready: {detail}")]
    RoleNotReady { actor: String, detail: String },
    #[error("waiting for {what}: {detail}")]
    NotReady { what: String, detail: String },
    /// Exploration could not go on (a process neither stepped nor waited, a replay went
    /// another way, a lab that cannot be explored).
    #[error("explore: {0}")]
    Explore(String),
    #[error("the lab's own Redis servers run {node} while the report's header names {header}: start both from one Redis (ORDLAB_REDIS_SERVER, --redis-image)")]
    NodeVersion { node: String, header: String },
    #[error("cannot read {path}: {detail}")]
    SavedRun { path: String, detail: String },
    /// A worker from a command line could not start, or exited or never connected before the
    /// run began.
    #[error("worker `{command}`: {detail}")]
    WorkerCommand { command: String, detail: String },
    /// A job-queue library could not be installed, or one of its adapter's commands broke the
    /// contract (enqueue failed, no JSON from state, the worker never connected).
    #[error("library {library}: {detail}")]
    Library { library: String, detail: String },
    /// A role process's config on its stdin does not name a known role or does not parse.
    #[error("{0}")]
    RoleConfig(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        EXIT_ERROR
    }
}

/// Attach a short context to a Redis or PostgreSQL error.
pub trait Context<T> {
    fn context(self, what: &str) -> Result<T, Error>;
}

impl<T> Context<T> for Result<T, redis::RedisError> {
    fn context(self, what: &str) -> Result<T, Error> {
        self.map_err(|source| Error::Redis { context: what.to_string(), source })
    }
}

impl<T> Context<T> for Result<T, tokio_postgres::Error> {
    fn context(self, what: &str) -> Result<T, Error> {
        self.map_err(|source| Error::Postgres { context: what.to_string(), source })
    }
}

impl<T> Context<T> for Result<T, std::io::Error> {
    fn context(self, what: &str) -> Result<T, Error> {
        self.map_err(|source| Error::Io { context: what.to_string(), source })
    }
}
