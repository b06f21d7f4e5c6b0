//! Following the primary across a failover, as a Sentinel-aware client does: when a Redis
//! command fails, ask every known node for its role (`ROLE`) until one says `master`, and go
//! on there. Used by the producer and the consumers of the `failover` lab.

use crate::connect;
use crate::error::{Context, Error};
use std::time::Duration;

/// How long a role waits for some node to become the primary.
const FIND_TIMEOUT: Duration = Duration::from_secs(15);
/// How often it asks.
const ASK_EVERY: Duration = Duration::from_millis(2);
/// How long one node may take to answer before it counts as down.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(200);

/// The URL of the node that says it is the primary now, and a connection to it.
pub async fn find(nodes: &[String]) -> Result<(String, redis::aio::MultiplexedConnection), Error> {
    let deadline = tokio::time::Instant::now() + FIND_TIMEOUT;
    loop {
        for url in nodes {
            if let Some(conn) = primary_at(url).await {
                return Ok((url.clone(), conn));
            }
        }
        if tokio::time::Instant::now() > deadline {
            let detail = format!("none of {} said ROLE master within 15 s", nodes.join(", "));
            return Err(Error::NotReady { what: "a primary".into(), detail });
        }
        tokio::time::sleep(ASK_EVERY).await;
    }
}

/// A connection to `url` if it answers and is a primary.
async fn primary_at(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let mut conn = tokio::time::timeout(ANSWER_TIMEOUT, connect::redis(url)).await.ok()?.ok()?;
    let role: redis::Value = tokio::time::timeout(ANSWER_TIMEOUT, redis::cmd("ROLE").query_async(&mut conn))
        .await
        .ok()?
        .context("ROLE")
        .ok()?;
    is_master(&role).then_some(conn)
}

/// `ROLE` answers `["master", offset, replicas]` on a primary.
fn is_master(role: &redis::Value) -> bool {
    match role {
        redis::Value::Array(items) => {
            matches!(items.first(), Some(redis::Value::BulkString(b)) if b == b"master")
                || matches!(items.first(), Some(redis::Value::SimpleString(s)) if s == "master")
        }
        _ => false,
    }
}

/// The node's name in the timeline: `primary` or `replica`, by its place in `nodes`.
pub fn node_name(nodes: &[String], url: &str) -> &'static str {
    match nodes.iter().position(|n| n == url) {
        Some(0) => "primary",
        _ => "replica",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    #[test]
    fn only_a_master_role_is_a_primary() {
        let master = Value::Array(vec![Value::BulkString(b"master".to_vec()), Value::Int(0), Value::Array(vec![])]);
        let replica =
            Value::Array(vec![Value::BulkString(b"slave".to_vec()), Value::BulkString(b"127.0.0.1".to_vec())]);
        assert!(is_master(&master));
        assert!(!is_master(&replica));
        assert!(!is_master(&Value::Nil));
    }
}
