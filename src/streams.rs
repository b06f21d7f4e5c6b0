//! Redis Streams as every lab uses them, written once: how a job is written to and read from
//! an entry, consumer-group creation, the stream as XRANGE returns it, entry-ID order, pending
//! counts, and removing a run's keys. The log's own order is the order of XADD, which is not
//! always the order of the business.

use crate::error::{Context, Error};
use crate::timeline::Job;
use redis::aio::MultiplexedConnection;
use redis::streams::StreamId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The consumer group every lab reads with.
pub const GROUP: &str = "order-processor";

/// One entry of a stream after a run: the log's own order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamEntry {
    /// The shard (stream) it is in; 0 with one stream.
    #[serde(default)]
    pub shard: u32,
    pub entry_id: String,
    pub job: Job,
}

/// `XADD <stream> * order <id> type <type> version <v>`: how every role writes a job.
pub fn xadd(stream: &str, job: &Job) -> redis::Cmd {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(stream)
        .arg("*")
        .arg("order")
        .arg(job.order)
        .arg("type")
        .arg(&job.event_type)
        .arg("version")
        .arg(job.version);
    cmd
}

/// Decode an entry written by [`xadd`] (`order`, `type`, `version` fields).
pub fn job_of(entry: &StreamId) -> Option<Job> {
    Some(Job {
        order: entry.get::<String>("order")?.parse().ok()?,
        event_type: entry.get("type")?,
        version: entry.get::<String>("version")?.parse().ok()?,
    })
}

/// `XGROUP CREATE <stream> <group> $ MKSTREAM`: a group that reads what is added from now on.
pub async fn create_group(conn: &mut MultiplexedConnection, stream: &str, group: &str) -> Result<(), Error> {
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(stream)
        .arg(group)
        .arg("$")
        .arg("MKSTREAM")
        .query_async::<()>(conn)
        .await
        .context("XGROUP CREATE")
}

/// The stream as XRANGE returns it, every entry tagged with `shard`.
pub async fn read_entries(
    conn: &mut MultiplexedConnection,
    stream: &str,
    shard: u32,
) -> Result<Vec<StreamEntry>, Error> {
    let reply: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg(stream).arg("-").arg("+").query_async(conn).await.context("XRANGE")?;
    Ok(reply
        .ids
        .iter()
        .filter_map(|e| job_of(e).map(|job| StreamEntry { shard, entry_id: e.id.clone(), job }))
        .collect())
}

/// Entries delivered and not acknowledged, from the server (`XPENDING <stream> <group>`).
pub async fn pending_count(conn: &mut MultiplexedConnection, stream: &str, group: &str) -> Result<i64, Error> {
    let reply: redis::streams::StreamPendingReply =
        redis::cmd("XPENDING").arg(stream).arg(group).query_async(conn).await.context("XPENDING")?;
    Ok(reply.count() as i64)
}

/// Delete every key that starts with `prefix` (a run's keys).
pub async fn delete_keys(conn: &mut MultiplexedConnection, prefix: &str) -> Result<(), Error> {
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(conn).await.context("KEYS")?;
    if !keys.is_empty() {
        redis::cmd("DEL").arg(&keys).query_async::<i64>(conn).await.context("DEL")?;
    }
    Ok(())
}

/// A stream entry ID `<ms>-<seq>` as a sortable pair; `(0, 0)` for anything else.
pub fn id_order(entry_id: &str) -> (u64, u64) {
    let (ms, seq) = entry_id.split_once('-').unwrap_or((entry_id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

/// A stream entry ID as one number, `ms * 100000 + seq`: the order of the log (XADD), not
/// the order of the business. What CAS compares when it uses the entry ID as a version.
pub fn id_as_number(entry_id: &str) -> Option<i64> {
    let (ms, seq) = entry_id.split_once('-')?;
    Some(ms.parse::<i64>().ok()? * 100_000 + seq.parse::<i64>().ok()?)
}

/// `XINFO GROUPS`: the group's entries read, pending, and lag (Redis ≥ 7.0).
pub async fn group_progress(
    conn: &mut MultiplexedConnection,
    stream: &str,
    group: &str,
) -> Result<(i64, i64, i64), Error> {
    let groups: Vec<BTreeMap<String, redis::Value>> =
        redis::cmd("XINFO").arg("GROUPS").arg(stream).query_async(conn).await.context("XINFO GROUPS")?;
    let int = |g: &BTreeMap<String, redis::Value>, k: &str| match g.get(k) {
        Some(redis::Value::Int(n)) => *n,
        _ => 0,
    };
    let named = |g: &&BTreeMap<String, redis::Value>| matches!(g.get("name"), Some(redis::Value::BulkString(b)) if b == group.as_bytes());
    let g = groups
        .iter()
        .find(named)
        .ok_or_else(|| Error::NotReady { what: format!("group {group}"), detail: "not in XINFO GROUPS".into() })?;
    Ok((int(g, "entries-read"), int(g, "pending"), int(g, "lag")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_compare_numerically() {
        assert!(id_order("10-0") > id_order("9-5"));
        assert!(id_order("9-10") > id_order("9-9"));
        assert_eq!(id_order("x"), (0, 0));
    }

    #[test]
    fn entry_id_becomes_a_number_in_log_order() {
        assert_eq!(id_as_number("1792591555249-0"), Some(179259155524900000));
        assert_eq!(id_as_number("5-7"), Some(500007));
        assert!(id_as_number("5-7").unwrap() < id_as_number("6-0").unwrap());
        assert_eq!(id_as_number("garbage"), None);
    }
}
