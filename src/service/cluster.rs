//! A Redis Cluster for labs past one node: masters of the lab's own (started, given their
//! hash slots, introduced to each other and waited for until every node says the cluster is
//! ok), or the user's own cluster, named by a list of node URLs and checked the same way.
//!
//! Masters are named A, B, C… in the order of their first hash slot when the cluster is first
//! read, and keep their name when slots move. Nothing here routes commands: labs use redis-rs's
//! cluster client ([`RedisCluster::client`]) and, for per-node commands (INFO, CLUSTER
//! SETSLOT, MIGRATE), a plain connection to a master ([`ClusterNode::url`]).

pub mod stats;
mod topology;

pub use topology::{info_field, parse_nodes, NodeLine};

use super::error::ServiceError;
use super::node::{NodeSpec, RedisNode};
use super::probe::redact_url;
use super::readiness::{poll_until, Attempt, PollError};
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use tokio::sync::MappedMutexGuard;

/// Hash slots of a Redis Cluster.
pub const SLOTS: u32 = 16384;
/// How long a cluster of our own may take to say ok (Redis waits 2 s after a master starts
/// before it declares the cluster writable).
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A master of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    /// `A`, `B`, `C`…: stable for the cluster's life.
    pub name: String,
    pub id: String,
    /// How this process connects to it (with the credentials of the URLs it was given).
    pub url: String,
    /// The address the cluster announces for it (what MIGRATE and clients use).
    pub host: String,
    pub port: u16,
    /// Slot ranges it owns, inclusive.
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot))
    }

    pub fn slot_count(&self) -> u32 {
        self.slots.iter().map(|(a, b)| (*b - *a) as u32 + 1).sum()
    }
}

/// A running cluster: ours (stopped with it) or the user's (left alone).
pub struct RedisCluster {
    /// Seed URLs for a cluster client.
    pub urls: Vec<String>,
    /// Master ids in name order (A first).
    ids: Vec<String>,
    /// Each master's slots when the cluster was first read.
    initial: Vec<(String, Vec<(u16, u16)>)>,
    /// Our own servers; empty for an external cluster.
    own: Vec<RedisNode>,
}

impl RedisCluster {
    /// `masters` redis-servers with `cluster-enabled yes` on the services' backend (local
    /// processes or containers, each with its own bus port), the slots split as `redis-cli
    /// --cluster create` splits them, ready when every node reports `cluster_state:ok` and
    /// knows every master.
    pub async fn start_own(services: &super::Services, masters: u32) -> Result<RedisCluster, ServiceError> {
        let spec = NodeSpec::new(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        let mut own = Vec::new();
        for _ in 0..masters.max(1) {
            // On an error, the nodes already started are dropped (stopped) with `own`.
            own.push(services.start_redis_node(&spec).await?);
        }
        let first = own[0].peer.clone();
        let first_bus = first.bus_port.unwrap_or(first.port + 10000);
        for (i, (node, (a, b))) in own.iter().zip(even_split(masters.max(1))).enumerate() {
            let mut conn = connect(&node.url).await?;
            // Distinct config epochs, as redis-cli gives them: no collision to resolve later.
            command(&mut conn, &node.url, redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(i + 1)).await?;
            add_slots(&mut conn, &node.url, a, b).await?;
            if i > 0 {
                let meet = redis::cmd("CLUSTER").arg("MEET").arg(&first.host).arg(first.port).arg(first_bus).clone();
                command(&mut conn, &node.url, &meet).await?;
            }
        }
        let urls: Vec<String> = own.iter().map(|n| n.url.clone()).collect();
        wait_until_ok(&urls, own.len()).await?;
        let masters = read_masters(&urls[0]).await?;
        Ok(RedisCluster::new(urls, masters, own))
    }

    /// The user's cluster: every URL must answer as a node of a cluster whose state is ok,
    /// and every master it lists must answer.
    pub async fn external(urls: &[String]) -> Result<RedisCluster, ServiceError> {
        for url in urls {
            let mut conn = connect(url).await?;
            let info = cluster_info(&mut conn, url).await?;
            let state = info_field(&info, "cluster_state").unwrap_or("unknown");
            if state != "ok" {
                return Err(ServiceError::ClusterNotOk { url: redact_url(url), state: state.to_string() });
            }
        }
        let masters = read_masters(&urls[0]).await?;
        for m in &masters {
            connect(&node_url_from(&urls[0], &m.host, m.port)).await?;
        }
        Ok(RedisCluster::new(urls.to_vec(), masters, Vec::new()))
    }

    fn new(urls: Vec<String>, masters: Vec<NodeLine>, own: Vec<RedisNode>) -> RedisCluster {
        let ids = masters.iter().map(|n| n.id.clone()).collect();
        let initial = masters.into_iter().map(|n| (n.id, n.slots)).collect();
        RedisCluster { urls, ids, initial, own }
    }

    /// Every master still owns the slots it had when the cluster was first read, and no slot
    /// is moving: what a lab that moved a slot must leave behind.
    pub async fn is_as_first_read(&self) -> bool {
        match read_masters(&self.urls[0]).await {
            Ok(now) => {
                now.len() == self.initial.len()
                    && now.iter().all(|n| !n.moving && self.initial.iter().any(|(id, s)| *id == n.id && *s == n.slots))
            }
            Err(_) => false,
        }
    }

    /// Started by this process (a lab may change it: move slots).
    pub fn is_own(&self) -> bool {
        !self.own.is_empty()
    }

    /// The masters as the cluster describes them now, named as when it was first read.
    pub async fn masters(&self) -> Result<Vec<ClusterNode>, ServiceError> {
        let lines = read_masters(&self.urls[0]).await?;
        let mut out: Vec<ClusterNode> = lines
            .into_iter()
            .map(|l| {
                let rank = self.ids.iter().position(|id| *id == l.id).unwrap_or(self.ids.len());
                ClusterNode {
                    name: node_name(rank),
                    url: node_url_from(&self.urls[0], &l.host, l.port),
                    id: l.id,
                    host: l.host,
                    port: l.port,
                    slots: l.slots,
                }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// A cluster client over the seed URLs with no response timeout (workers block in
    /// BLMOVE) and redis-rs's default retries for TRYAGAIN and lost connections.
    pub fn client(&self) -> Result<redis::cluster::ClusterClient, redis::RedisError> {
        cluster_client(&self.urls, None)
    }

    /// Stop our own servers (nothing for an external cluster).
    pub async fn stop(self) {
        for node in self.own {
            node.stop().await;
        }
    }
}

/// The Redis Cluster of an invocation, started (or connected to) when a lab first asks for one
/// and kept for the next runs, since a cluster of our own takes about 2 s to say ok (Redis
/// waits that long after a master starts). A run gets it as it was first read: a lab that
/// moves slots moves them back; otherwise ours is started afresh.
#[derive(Default)]
pub struct SharedCluster {
    inner: tokio::sync::Mutex<Option<RedisCluster>>,
}

impl SharedCluster {
    /// Stop our own cluster, if one was started.
    pub async fn stop(&self) {
        if let Some(c) = self.inner.lock().await.take() {
            c.stop().await;
        }
    }
}

impl super::Services {
    /// A Redis Cluster for one run: the user's (the external backend's
    /// `--redis-cluster-url`), or ours with `masters` masters on this backend.
    pub async fn redis_cluster(&self, masters: u32) -> Result<MappedMutexGuard<'_, RedisCluster>, ServiceError> {
        let urls = &self.redis_cluster_urls;
        let mut slot = self.cluster.inner.lock().await;
        let fits = match slot.as_ref() {
            Some(c) if !urls.is_empty() => c.urls == *urls,
            Some(c) => c.own.len() == masters as usize && c.is_as_first_read().await,
            None => false,
        };
        if !fits {
            if let Some(old) = slot.take() {
                old.stop().await;
            }
            let cluster = if urls.is_empty() {
                RedisCluster::start_own(self, masters).await?
            } else {
                RedisCluster::external(urls).await?
            };
            *slot = Some(cluster);
        }
        Ok(tokio::sync::MutexGuard::map(slot, |c| c.as_mut().expect("set above")))
    }
}

/// A cluster client over `urls`, as every process of a cluster lab builds it: no response
/// timeout, and redis-rs's retry waits unless `retry_wait_ms` (min, max) replaces them.
pub fn cluster_client(
    urls: &[String],
    retry_wait_ms: Option<(u64, u64)>,
) -> Result<redis::cluster::ClusterClient, redis::RedisError> {
    let builder = redis::cluster::ClusterClientBuilder::new(urls.to_vec());
    match retry_wait_ms {
        Some((min, max)) => builder.min_retry_wait(min).max_retry_wait(max.max(min + 1)).build(),
        None => builder.build(),
    }
}

/// The hash slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
pub async fn keyslot(conn: &mut impl redis::aio::ConnectionLike, key: &str) -> redis::RedisResult<u16> {
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query_async(conn).await
}

/// A hash tag `{base}`, else `{base.1}`, `{base.2}`…, whose slot `node` owns and that is not in
/// `taken`: keys with it live on that master. None when 1000 candidates miss (a master with
/// almost no slots).
pub async fn tag_on(
    conn: &mut impl redis::aio::ConnectionLike,
    base: &str,
    node: &ClusterNode,
    taken: &[u16],
) -> redis::RedisResult<Option<(String, u16)>> {
    for n in 0..1000 {
        let tag = if n == 0 { format!("{{{base}}}") } else { format!("{{{base}.{n}}}") };
        let slot = keyslot(conn, &tag).await?;
        if node.owns(slot) && !taken.contains(&slot) {
            return Ok(Some((tag, slot)));
        }
    }
    Ok(None)
}

/// Slot ranges per master, split as `redis-cli --cluster create` splits them (3 masters:
/// 0-5460, 5461-10922, 10923-16383).
pub fn even_split(masters: u32) -> Vec<(u16, u16)> {
    let per = SLOTS as f64 / masters as f64;
    let (mut first, mut cursor) = (0u32, 0.0f64);
    let mut out = Vec::new();
    for i in 0..masters {
        let mut last = (cursor + per - 1.0).round() as u32;
        if last > SLOTS - 1 || i == masters - 1 {
            last = SLOTS - 1;
        }
        last = last.max(first);
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per;
    }
    out
}

/// `A` for 0, `B` for 1, …, then `N26`… (no cluster here has that many masters).
pub fn node_name(rank: usize) -> String {
    match u8::try_from(rank).ok().filter(|r| *r < 26) {
        Some(r) => ((b'A' + r) as char).to_string(),
        None => format!("N{rank}"),
    }
}

async fn connect(url: &str) -> Result<MultiplexedConnection, ServiceError> {
    crate::connect::redis(url).await.map_err(|e| ServiceError::Unreachable {
        what: "redis cluster node",
        url: redact_url(url),
        source: Box::new(e),
    })
}

async fn command(conn: &mut MultiplexedConnection, url: &str, cmd: &redis::Cmd) -> Result<(), ServiceError> {
    cmd.query_async::<()>(conn).await.map_err(|e| ServiceError::Unreachable {
        what: "redis cluster node",
        url: redact_url(url),
        source: Box::new(e),
    })
}

/// `CLUSTER ADDSLOTSRANGE` (Redis ≥ 7.0), else every slot listed in `CLUSTER ADDSLOTS`.
async fn add_slots(conn: &mut MultiplexedConnection, url: &str, first: u16, last: u16) -> Result<(), ServiceError> {
    let range = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(first).arg(last).clone();
    if range.query_async::<()>(conn).await.is_ok() {
        return Ok(());
    }
    command(conn, url, redis::cmd("CLUSTER").arg("ADDSLOTS").arg((first..=last).collect::<Vec<u16>>())).await
}

async fn cluster_info(conn: &mut MultiplexedConnection, url: &str) -> Result<String, ServiceError> {
    redis::cmd("CLUSTER").arg("INFO").query_async(conn).await.map_err(|e| {
        if e.to_string().contains("cluster support disabled") {
            ServiceError::NotACluster { url: redact_url(url) }
        } else {
            ServiceError::Unreachable { what: "redis cluster node", url: redact_url(url), source: Box::new(e) }
        }
    })
}

/// The masters `url` knows that can take commands, in order of their first slot.
async fn read_masters(url: &str) -> Result<Vec<NodeLine>, ServiceError> {
    let mut conn = connect(url).await?;
    let text: String = redis::cmd("CLUSTER").arg("NODES").query_async(&mut conn).await.map_err(|e| {
        ServiceError::Unreachable { what: "redis cluster node", url: redact_url(url), source: Box::new(e) }
    })?;
    let mut masters: Vec<NodeLine> =
        parse_nodes(&text).into_iter().filter(|n| n.master && !n.failing && !n.slots.is_empty()).collect();
    masters.sort_by_key(|n| n.slots.iter().map(|s| s.0).min());
    Ok(masters)
}

/// Every node says `cluster_state:ok` and lists `masters` masters with slots.
async fn wait_until_ok(urls: &[String], masters: usize) -> Result<(), ServiceError> {
    let result = poll_until(READY_TIMEOUT, Duration::from_millis(20), || async move {
        for url in urls {
            let mut conn = match connect(url).await {
                Ok(c) => c,
                Err(e) => return Attempt::Retry(e.to_string()),
            };
            let info = match cluster_info(&mut conn, url).await {
                Ok(i) => i,
                Err(e) => return Attempt::Abort(e.to_string()),
            };
            if info_field(&info, "cluster_state") != Some("ok") {
                return Attempt::Retry(format!("{} says cluster_state is not ok", redact_url(url)));
            }
            match read_masters(url).await {
                Ok(m) if m.len() == masters => {}
                Ok(m) => return Attempt::Retry(format!("{} knows {} of {masters} masters", redact_url(url), m.len())),
                Err(e) => return Attempt::Retry(e.to_string()),
            }
        }
        Attempt::Ready(())
    })
    .await;
    result.map_err(|e| ServiceError::NotReady {
        what: "redis cluster".into(),
        timeout: READY_TIMEOUT,
        reason: match e {
            PollError::Aborted(r) | PollError::TimedOut { last: r } => r,
        },
        log_tail: String::new(),
    })
}

/// `seed` with its host and port replaced: the same credentials, another node.
fn node_url_from(seed: &str, host: &str, port: u16) -> String {
    let fallback = || format!("redis://{host}:{port}/");
    let Some(mut url) = redis::parse_redis_url(seed) else { return fallback() };
    if url.set_host(Some(host)).is_err() || url.set_port(Some(port)).is_err() {
        return fallback();
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_split_as_redis_cli_splits_them() {
        assert_eq!(even_split(3), [(0, 5460), (5461, 10922), (10923, 16383)]);
        assert_eq!(even_split(1), [(0, 16383)]);
        let four = even_split(4);
        assert_eq!(four.first().unwrap().0, 0);
        assert_eq!(four.last().unwrap().1, 16383);
        assert!(four.windows(2).all(|w| w[0].1 + 1 == w[1].0));
    }

    #[test]
    fn node_urls_keep_the_credentials() {
        assert_eq!(node_url_from("redis://:pw@10.0.0.1:7000/", "10.0.0.2", 7001), "redis://:pw@10.0.0.2:7001/");
        assert_eq!(node_url_from("redis://127.0.0.1:7000", "127.0.0.1", 7002), "redis://127.0.0.1:7002");
        assert_eq!((node_name(0), node_name(2), node_name(30)), ("A".into(), "C".into(), "N30".into()));
    }
}
