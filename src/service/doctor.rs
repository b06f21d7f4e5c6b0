//! `doctor` reports which backends can work on this machine and what to install
//! when something is missing. It only looks; it starts nothing.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::local::{binary_version, find_redis};
use super::template::PgBinaries;

/// A binary that was found, with its `--version` output.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FoundBinary {
    pub path: PathBuf,
    pub version: String,
}

/// What is available for each backend.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DoctorReport {
    pub redis_server: Option<FoundBinary>,
    pub postgres: Option<FoundBinary>,
    pub initdb: Option<FoundBinary>,
    pub docker_engine: bool,
    pub hints: Vec<String>,
}

impl DoctorReport {
    /// The local backend has everything it needs.
    pub fn local_ok(&self) -> bool {
        self.redis_server.is_some() && self.postgres.is_some() && self.initdb.is_some()
    }
}

/// Looks for the local binaries and asks the Docker engine whether it is there.
pub async fn doctor() -> DoctorReport {
    let found = |path: PathBuf| FoundBinary {
        version: binary_version(&path).unwrap_or_else(|| "unknown version".into()),
        path,
    };
    let redis_server = find_redis().ok().map(found);
    let pg = PgBinaries::find().ok();
    let postgres = pg.as_ref().map(|b| found(b.postgres.clone()));
    let initdb = pg.map(|b| found(b.initdb));
    let docker_engine = super::docker::engine_answers(Duration::from_millis(500)).await;
    let mut hints = Vec::new();
    if redis_server.is_none() {
        hints.push("install Redis: apt-get install -y redis-server (Debian)".to_string());
    }
    if postgres.is_none() || initdb.is_none() {
        hints.push("install PostgreSQL: apt-get install -y postgresql-15 (Debian)".to_string());
    }
    if !docker_engine {
        hints.push("no Docker engine answers; --backend docker will not work here".to_string());
    }
    DoctorReport { redis_server, postgres, initdb, docker_engine, hints }
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |f: &mut fmt::Formatter<'_>, name: &str, b: &Option<FoundBinary>| match b {
            Some(b) => writeln!(f, "{name:<13} {} ({})", b.path.display(), b.version),
            None => writeln!(f, "{name:<13} missing"),
        };
        line(f, "redis-server", &self.redis_server)?;
        line(f, "postgres", &self.postgres)?;
        line(f, "initdb", &self.initdb)?;
        let docker = if self.docker_engine { "answers" } else { "not reachable" };
        writeln!(f, "{:<13} {docker}", "docker engine")?;
        let local = if self.local_ok() { "yes" } else { "no" };
        write!(f, "{:<13} local: {local}, docker: {docker}, external: always", "backends")?;
        for hint in &self.hints {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn report_names_every_backend() {
        let report = super::doctor().await;
        let text = report.to_string();
        eprintln!("{text}");
        for word in ["redis-server", "postgres", "initdb", "docker engine", "backends"] {
            assert!(text.contains(word), "{text}");
        }
    }
}
