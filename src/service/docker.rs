//! The Docker backend starts Redis and PostgreSQL containers through testcontainers;
//! the containers are removed when their handles drop. `engine_answers` decides
//! whether `Auto` may pick Docker, by sending `GET /_ping` with a short timeout.

use std::time::Duration;

use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ImageExt};
use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::redis::{Redis, REDIS_PORT};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::error::ServiceError;

const PG_PORT: u16 = 5432;

/// Running containers; dropping them removes them.
pub struct DockerGuard {
    pub redis: ContainerAsync<Redis>,
    pub pg: ContainerAsync<Postgres>,
}

/// Starts both containers concurrently; returns (guard, redis_url, pg_config).
pub async fn start(redis_image: &str, pg_image: &str) -> Result<(DockerGuard, String, String), ServiceError> {
    let err = |e: testcontainers::TestcontainersError| ServiceError::Docker(e.to_string());
    let (rn, rt) = split_image(redis_image);
    let (pn, pt) = split_image(pg_image);
    let (redis, pg) = tokio::try_join!(
        Redis::default().with_name(rn).with_tag(rt).start(),
        Postgres::default().with_host_auth().with_name(pn).with_tag(pt).start(),
    )
    .map_err(err)?;
    let rhost = redis.get_host().await.map_err(err)?;
    let rport = redis.get_host_port_ipv4(REDIS_PORT).await.map_err(err)?;
    let phost = pg.get_host().await.map_err(err)?;
    let pport = pg.get_host_port_ipv4(PG_PORT).await.map_err(err)?;
    let redis_url = format!("redis://{rhost}:{rport}/");
    let pg_config = format!("host={phost} port={pport} user=postgres dbname=postgres");
    Ok((DockerGuard { redis, pg }, redis_url, pg_config))
}

/// Splits "name:tag" (a registry port such as "host:5000/redis" is not a tag).
pub fn split_image(image: &str) -> (String, String) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name.to_string(), tag.to_string()),
        _ => (image.to_string(), "latest".to_string()),
    }
}

/// True when a Docker engine answers `GET /_ping` within `timeout`.
pub async fn engine_answers(timeout: Duration) -> bool {
    tokio::time::timeout(timeout, ping()).await.unwrap_or(false)
}

async fn ping() -> bool {
    let host = std::env::var("DOCKER_HOST").unwrap_or_default();
    if let Some(addr) = host.strip_prefix("tcp://") {
        match tokio::net::TcpStream::connect(addr.trim_end_matches('/')).await {
            Ok(s) => http_ping(s).await,
            Err(_) => false,
        }
    } else {
        let path = host.strip_prefix("unix://").unwrap_or("/var/run/docker.sock");
        match tokio::net::UnixStream::connect(path).await {
            Ok(s) => http_ping(s).await,
            Err(_) => false,
        }
    }
}

async fn http_ping(mut stream: impl AsyncRead + AsyncWrite + Unpin) -> bool {
    let request = b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    let text = String::from_utf8_lossy(&buf);
    text.starts_with("HTTP/1.") && text.split_whitespace().nth(1) == Some("200")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_images() {
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(split_image("redis:8"), s("redis", "8"));
        assert_eq!(split_image("postgres"), s("postgres", "latest"));
        assert_eq!(split_image("reg:5000/pg"), s("reg:5000/pg", "latest"));
        assert_eq!(split_image("reg:5000/pg:18"), s("reg:5000/pg", "18"));
    }

    #[tokio::test]
    async fn ping_without_engine_is_false_and_quick() {
        let start = std::time::Instant::now();
        let answered = engine_answers(Duration::from_millis(500)).await;
        assert!(start.elapsed() < Duration::from_secs(2));
        // No engine runs on the lab machine; elsewhere either answer is fine.
        let _ = answered;
    }
}
