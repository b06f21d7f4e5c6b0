//! Readiness is data: a probe plus a deadline and a polling interval. A server is
//! ready when its probe succeeds before the deadline and before its process exits.

use std::future::Future;
use std::time::{Duration, Instant};

/// What to ask a server to learn that it is ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `PING` over a fresh connection to this redis URL.
    RedisPing(String),
    /// Connect with this tokio-postgres config and run `SELECT 1`.
    PgSelect1(String),
}

/// How to know a server is ready, and how long to wait for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub probe: Probe,
    pub timeout: Duration,
    pub interval: Duration,
}

impl Readiness {
    pub fn redis(url: &str) -> Readiness {
        Readiness {
            probe: Probe::RedisPing(url.to_string()),
            timeout: Duration::from_secs(10),
            interval: Duration::from_millis(3),
        }
    }

    pub fn postgres(conn: &str) -> Readiness {
        Readiness {
            probe: Probe::PgSelect1(conn.to_string()),
            timeout: Duration::from_secs(20),
            interval: Duration::from_millis(5),
        }
    }

    /// Runs the probe once.
    pub async fn check(&self) -> Result<(), String> {
        match &self.probe {
            Probe::RedisPing(url) => redis_ping(url).await,
            Probe::PgSelect1(conn) => pg_select1(conn).await,
        }
    }
}

/// The outcome of one polling attempt.
pub enum Attempt<T> {
    Ready(T),
    /// Not ready yet; keep polling. Carries the reason for the final error.
    Retry(String),
    /// Give up now (e.g. the process exited).
    Abort(String),
}

/// Why [`poll_until`] stopped without success.
#[derive(Debug, PartialEq, Eq)]
pub enum PollError {
    TimedOut { last: String },
    Aborted(String),
}

/// Calls `attempt` every `interval` until it is ready, aborts, or `timeout` passes.
/// At least one attempt is always made.
pub async fn poll_until<T, F, Fut>(timeout: Duration, interval: Duration, mut attempt: F) -> Result<T, PollError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match attempt().await {
            Attempt::Ready(v) => return Ok(v),
            Attempt::Abort(why) => return Err(PollError::Aborted(why)),
            Attempt::Retry(why) => why,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(PollError::TimedOut { last });
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
    }
}

async fn redis_ping(url: &str) -> Result<(), String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let mut con = client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())?;
    redis::cmd("PING").query_async::<String>(&mut con).await.map(drop).map_err(|e| e.to_string())
}

async fn pg_select1(conn: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls).await.map_err(|e| e.to_string())?;
    let task = tokio::spawn(connection);
    let result = client.simple_query("SELECT 1").await.map(drop);
    drop(client);
    let _ = task.await;
    result.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn ready_after_a_few_attempts() {
        let mut n = 0;
        let r = poll_until(Duration::from_secs(5), MS, || {
            n += 1;
            let k = n;
            async move {
                if k < 3 {
                    Attempt::Retry(format!("try {k}"))
                } else {
                    Attempt::Ready(k)
                }
            }
        })
        .await;
        assert_eq!(r, Ok(3));
    }

    #[tokio::test]
    async fn times_out_with_last_reason() {
        let start = Instant::now();
        let r: Result<(), _> = poll_until(20 * MS, MS, || async { Attempt::Retry("refused".into()) }).await;
        assert_eq!(r, Err(PollError::TimedOut { last: "refused".into() }));
        assert!(start.elapsed() >= 20 * MS);
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn zero_timeout_still_tries_once() {
        let r = poll_until(Duration::ZERO, MS, || async { Attempt::Ready(7) }).await;
        assert_eq!(r, Ok(7));
    }

    #[tokio::test]
    async fn abort_stops_immediately() {
        let mut calls = 0;
        let r: Result<(), _> = poll_until(Duration::from_secs(5), MS, || {
            calls += 1;
            async { Attempt::Abort("exited".into()) }
        })
        .await;
        assert_eq!(r, Err(PollError::Aborted("exited".into())));
        assert_eq!(calls, 1);
    }
}
