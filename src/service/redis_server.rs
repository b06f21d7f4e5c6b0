//! Which `redis-server` the local backend runs: `$ORDLAB_REDIS_SERVER` when set, else
//! ordlab's own Redis 8 build in the user's cache (`scripts/build-redis8.sh`, run by
//! `just setup`), else the system's. The choice is kept so a report can say which server ran.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::binaries::{binary_version, cache_root, find_binary, is_executable};
use super::error::ServiceError;
use super::probe::version_at_least;

const REDIS_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin"];
/// The first Redis with `DELEX key IFEQ token`.
pub const REDIS8_MIN: (u32, u32) = (8, 4);

/// Where a redis-server came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisOrigin {
    /// `$ORDLAB_REDIS_SERVER`.
    Env,
    /// ordlab's cached Redis 8 build.
    Cache,
    /// PATH or the usual system dirs.
    System,
}

/// A redis-server binary and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisBinary {
    pub path: PathBuf,
    pub origin: RedisOrigin,
}

impl fmt::Display for RedisBinary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match self.origin {
            RedisOrigin::Env => "ORDLAB_REDIS_SERVER",
            RedisOrigin::Cache => "ordlab's Redis 8 build",
            RedisOrigin::System => "system",
        };
        write!(f, "{} ({from})", self.path.display())
    }
}

/// `$ORDLAB_REDIS_SERVER`, else the cached Redis 8 build, else the system's redis-server.
pub fn find_redis() -> Result<RedisBinary, ServiceError> {
    if let Some(p) = std::env::var_os("ORDLAB_REDIS_SERVER") {
        let path = PathBuf::from(p);
        return if is_executable(&path) {
            Ok(RedisBinary { path, origin: RedisOrigin::Env })
        } else {
            Err(ServiceError::MissingBinary {
                what: "redis-server",
                searched: format!("{} (from ORDLAB_REDIS_SERVER)", path.display()),
                hint: "point ORDLAB_REDIS_SERVER at an executable redis-server, or unset it and install one (Debian: apt-get install -y redis-server)".into(),
            })
        };
    }
    if let Some(path) = usable_redis8_build() {
        return Ok(RedisBinary { path: path.to_path_buf(), origin: RedisOrigin::Cache });
    }
    find_system_redis()
}

/// The system's redis-server (PATH, then the usual dirs), ignoring the Redis 8 build.
pub fn find_system_redis() -> Result<RedisBinary, ServiceError> {
    let path = find_binary("redis-server", REDIS_DIRS).ok_or_else(|| ServiceError::MissingBinary {
        what: "redis-server",
        searched: REDIS_DIRS.join(", "),
        hint: "install it (Debian: apt-get install -y redis-server) or use --backend external --redis-url ...".into(),
    })?;
    Ok(RedisBinary { path, origin: RedisOrigin::System })
}

/// Where `scripts/build-redis8.sh` puts its server.
pub fn redis8_build_path() -> PathBuf {
    cache_root().join("redis8").join("src").join("redis-server")
}

/// The cached Redis 8 build, if it exists and really is Redis ≥ 8.4 (checked once).
pub fn usable_redis8_build() -> Option<&'static Path> {
    static BUILD: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILD
        .get_or_init(|| {
            let path = redis8_build_path();
            let version = is_executable(&path).then(|| binary_version(&path)).flatten()?;
            version_at_least(&redis_version_number(&version)?, REDIS8_MIN).then_some(path)
        })
        .as_deref()
}

/// "7.0.15" from "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=…".
pub fn redis_version_number(version_output: &str) -> Option<String> {
    let v = version_output.split_whitespace().find_map(|w| w.strip_prefix("v="))?;
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_number() {
        let out = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=c4f6";
        assert_eq!(redis_version_number(out).as_deref(), Some("7.0.15"));
        assert_eq!(redis_version_number("nonsense"), None);
    }

    #[test]
    fn names_where_a_server_came_from() {
        let b = RedisBinary { path: "/x/redis-server".into(), origin: RedisOrigin::Cache };
        assert_eq!(b.to_string(), "/x/redis-server (ordlab's Redis 8 build)");
    }
}
