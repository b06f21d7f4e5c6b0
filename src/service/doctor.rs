//! `doctor` reports which backends can work on this machine and what to install
//! when something is missing. It only looks; it starts nothing.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::binaries::binary_version;
use super::engine::Engine;
use super::redis_server::{find_redis, redis_version_number, RedisOrigin, REDIS8_MIN};
use super::template::PgBinaries;
use super::ServiceOptions;

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
    /// Each image and whether the engine has it.
    pub docker_images: Vec<(String, bool)>,
    pub hints: Vec<String>,
}

impl DoctorReport {
    /// The local backend has everything it needs.
    pub fn local_ok(&self) -> bool {
        self.redis_server.is_some() && self.postgres.is_some() && self.initdb.is_some()
    }
}

/// [`doctor_with`] the default images.
pub async fn doctor() -> DoctorReport {
    doctor_with(&ServiceOptions::default()).await
}

/// Looks for the local binaries (the redis-server the local backend would run, and where it
/// comes from) and asks the Docker engine whether it is there and has the images.
pub async fn doctor_with(opts: &ServiceOptions) -> DoctorReport {
    let found = |path: PathBuf| FoundBinary {
        version: binary_version(&path).unwrap_or_else(|| "unknown version".into()),
        path,
    };
    let redis = find_redis().ok();
    let redis_server = redis.as_ref().map(|b| found(b.path.clone()));
    let pg = PgBinaries::find().ok();
    let postgres = pg.as_ref().map(|b| found(b.postgres.clone()));
    let initdb = pg.map(|b| found(b.initdb));
    let engine = Engine::connect(Duration::from_millis(1500)).await.ok();
    let mut docker_images = Vec::new();
    if let Some(engine) = &engine {
        for image in [&opts.redis_image, &opts.pg_image] {
            docker_images.push((image.clone(), engine.image_present(image).await));
        }
    }
    let mut hints = Vec::new();
    match (&redis, &redis_server) {
        (None, _) => hints.push("install Redis: apt-get install -y redis-server (Debian)".to_string()),
        (Some(b), Some(found)) if b.origin == RedisOrigin::System && !is_redis8(&found.version) => hints.push(
            "the local backend runs the system's Redis, older than 8.4 (no DELEX IFEQ): `just setup` builds Redis 8 once (scripts/build-redis8.sh)".to_string(),
        ),
        _ => {}
    }
    if postgres.is_none() || initdb.is_none() {
        hints.push("install PostgreSQL: apt-get install -y postgresql-15 (Debian)".to_string());
    }
    if engine.is_none() {
        hints.push("no Docker engine answers; --backend docker will not work here".to_string());
    }
    for (image, _) in docker_images.iter().filter(|(_, present)| !present) {
        hints.push(format!("image {image} is not on the engine: docker pull {image} (or build local stand-ins with ../shared/tools/docker-images.sh --default-tags)"));
    }
    DoctorReport { redis_server, postgres, initdb, docker_engine: engine.is_some(), docker_images, hints }
}

fn is_redis8(version_output: &str) -> bool {
    redis_version_number(version_output).is_some_and(|v| super::probe::version_at_least(&v, REDIS8_MIN))
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
        for (image, present) in &self.docker_images {
            writeln!(f, "{:<13} {image}: {}", "docker image", if *present { "present" } else { "missing" })?;
        }
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
