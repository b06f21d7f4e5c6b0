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
    NotReady { what: &'static str, timeout: Duration, reason: String, log_tail: String },
    #[error("cannot reach {what} at {url}: {source}; check the URL and that the server is running")]
    Unreachable {
        what: &'static str,
        url: String,
        #[source]
        source: BoxError,
    },
    #[error("external backend needs a {what} URL: pass {flag} or set {env}")]
    MissingUrl { what: &'static str, flag: &'static str, env: &'static str },
    #[error("docker backend failed: {0}; check that a Docker engine is running, or use --backend local")]
    Docker(String),
    #[error("running as root but there is no 'postgres' system user to run PostgreSQL as: install postgresql (Debian: apt-get install -y postgresql-15) or `useradd --system postgres`, or run as a non-root user")]
    NoPostgresUser,
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
