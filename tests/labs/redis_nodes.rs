//! One exercise of the Redis node API, run on each backend (`services` and `docker_backend`):
//! a node killed and restarted on its data, a replica that follows a primary through its peer
//! address, and three cluster masters that meet and serve every slot.

use std::time::{Duration, Instant};

use ordlab::service::{NodeSpec, RedisNode, Services};
use redis::aio::MultiplexedConnection;

async fn con(node: &RedisNode) -> MultiplexedConnection {
    redis::Client::open(node.url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn cmd<T: redis::FromRedisValue>(c: &mut MultiplexedConnection, args: &[&str]) -> redis::RedisResult<T> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(c).await
}

/// Polls `cond` every 20 ms until it holds or `secs` pass.
async fn eventually<F, Fut>(secs: u64, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond().await
}

pub async fn exercise(services: &Services) {
    restart_keeps_the_data(services).await;
    replica_follows_its_primary(services).await;
    cluster_serves_every_slot(services).await;
}

async fn restart_keeps_the_data(services: &Services) {
    let spec = NodeSpec::new(["--appendonly", "yes", "--appendfsync", "always"]);
    let mut node = services.start_redis_node(&spec).await.unwrap();
    assert_eq!(node.backend(), services.backend);
    let url = node.url.clone();
    let pid = node.pid();
    let mut c = con(&node).await;
    let _: () = cmd(&mut c, &["SET", "k", "v"]).await.unwrap();
    node.kill().await.unwrap();
    assert!(redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.is_err());
    node.restart().await.unwrap();
    assert_eq!(node.url, url, "a restart keeps the URL");
    if services.backend == ordlab::service::Backend::Local {
        assert_ne!(node.pid(), pid, "a new process");
    }
    let mut c = con(&node).await;
    let v: Option<String> = cmd(&mut c, &["GET", "k"]).await.unwrap();
    assert_eq!(v.as_deref(), Some("v"), "the append-only file survived the SIGKILL");
    node.stop().await;
}

async fn replica_follows_its_primary(services: &Services) {
    let primary = services.start_redis_node(&NodeSpec::default()).await.unwrap();
    let replica = services.start_redis_node(&NodeSpec::default()).await.unwrap();
    let mut r = con(&replica).await;
    let port = primary.peer.port.to_string();
    let _: () = cmd(&mut r, &["REPLICAOF", &primary.peer.host, &port]).await.unwrap();
    let mut p = con(&primary).await;
    let _: () = cmd(&mut p, &["SET", "replicated", "yes"]).await.unwrap();
    let copied =
        eventually(20, || {
            let mut r = r.clone();
            async move {
                cmd::<Option<String>>(&mut r, &["GET", "replicated"]).await.ok().flatten().as_deref() == Some("yes")
            }
        })
        .await;
    let info: String = cmd(&mut r, &["INFO", "replication"]).await.unwrap();
    assert!(copied, "the replica never got the key: {info}");
    assert!(info.contains("master_link_status:up"), "{info}");
    replica.stop().await;
    primary.stop().await;
}

async fn cluster_serves_every_slot(services: &Services) {
    let spec = NodeSpec::new(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"]);
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(services.start_redis_node(&spec).await.unwrap());
    }
    let mut first = con(&nodes[0]).await;
    for other in &nodes[1..] {
        let (port, bus) = (other.peer.port.to_string(), other.peer.bus_port.expect("a cluster node").to_string());
        let _: () = cmd(&mut first, &["CLUSTER", "MEET", &other.peer.host, &port, &bus]).await.unwrap();
    }
    for (node, (from, to)) in nodes.iter().zip([("0", "5460"), ("5461", "10922"), ("10923", "16383")]) {
        let _: () = cmd(&mut con(node).await, &["CLUSTER", "ADDSLOTSRANGE", from, to]).await.unwrap();
    }
    for node in &nodes {
        let c = con(node).await;
        let ok =
            eventually(30, || {
                let mut c = c.clone();
                async move {
                    cmd::<String>(&mut c, &["CLUSTER", "INFO"]).await.is_ok_and(|i| i.contains("cluster_state:ok"))
                }
            })
            .await;
        assert!(ok, "cluster_state never became ok on {}", node.url);
    }
    // A key of another node's slot is redirected to that node's peer address. Slots: b 3300
    // (first node), c 7365 (second), a 15495 (third).
    let peer = |n: &RedisNode| format!("{}:{}", n.peer.host, n.peer.port);
    let _: () = cmd(&mut first, &["SET", "b", "1"]).await.unwrap();
    for (key, owner) in [("c", &nodes[1]), ("a", &nodes[2])] {
        let e = cmd::<()>(&mut first, &["SET", key, "1"]).await.unwrap_err();
        let to = e.redirect_node().map(|(addr, _)| addr.to_string());
        assert_eq!(to, Some(peer(owner)), "{key}: {e}");
    }
    for node in nodes {
        node.stop().await;
    }
}
