//! Redis servers of a lab's own, on the backend the run uses: a primary and its replica, a
//! server SIGKILLed and restarted on its data, a `maxmemory` server, cluster masters. A node
//! can be killed, restarted on the same data and URL, and stopped; dropping it stops it.
//!
//! ```no_run
//! # async fn lab(services: &ordlab::service::Services) -> Result<(), ordlab::service::ServiceError> {
//! use ordlab::service::NodeSpec;
//! // A primary with an append-only file, and a replica of it.
//! let mut primary = services.start_redis_node(&NodeSpec::new(["--appendonly", "yes"])).await?;
//! let replica = services.start_redis_node(&NodeSpec::default()).await?;
//! let mut con = redis::Client::open(replica.url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
//! // `peer` is how nodes of the same backend reach each other (a container address on Docker).
//! let _: () = redis::cmd("REPLICAOF").arg(&primary.peer.host).arg(primary.peer.port).query_async(&mut con).await.unwrap();
//! primary.kill().await?;    // SIGKILL: no shutdown save
//! primary.restart().await?; // same data dir (or container), same URL, ready again
//! primary.stop().await;
//! # Ok(()) }
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use tokio::net::TcpListener;

use super::docker::{redis_cmd, redis_url, run_with_port_retry, wait_ready};
use super::engine::{ContainerSpec, Engine, Scope};
use super::error::ServiceError;
use super::local::{respawn_redis, spawn_redis_with};
use super::private_dir::private_dir;
use super::process::{free_port, OwnedChild};
use super::readiness::{poll_until, Attempt, Readiness};
use super::redis_server::{find_redis, RedisBinary};
use super::Backend;

const REDIS_PORT: u16 = 6379;
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How to start a node: `redis-server` arguments appended after ordlab's own (`--port`,
/// `--bind`, `--save ""`, `--appendonly no`, `--dir`, and on Docker a password), so they
/// override them. `--cluster-enabled yes` makes a cluster node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSpec {
    pub args: Vec<String>,
}

impl NodeSpec {
    pub fn new<S: Into<String>>(args: impl IntoIterator<Item = S>) -> NodeSpec {
        NodeSpec { args: args.into_iter().map(Into::into).collect() }
    }

    /// True when the arguments say `--cluster-enabled yes`.
    pub fn is_cluster(&self) -> bool {
        self.args.windows(2).any(|w| w[0] == "--cluster-enabled" && w[1].eq_ignore_ascii_case("yes"))
    }
}

/// Where other nodes of the same backend reach a node (`REPLICAOF host port`,
/// `CLUSTER MEET host port bus_port`): 127.0.0.1 locally, the container's address on the
/// run's private network on Docker (it may change on restart; [`RedisNode::restart`] updates
/// it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddr {
    pub host: String,
    pub port: u16,
    /// The cluster bus port of a cluster node (`--cluster-enabled yes`); pass it to
    /// `CLUSTER MEET`, which otherwise assumes port + 10000.
    pub bus_port: Option<u16>,
}

/// A Redis server of a lab's own. Dropping it stops it and removes its data.
pub struct RedisNode {
    /// The URL this process connects with (on Docker: 127.0.0.1 and a password).
    pub url: String,
    pub peer: PeerAddr,
    /// Where this process reaches it (127.0.0.1 and its port, published on Docker).
    addr: SocketAddr,
    kind: NodeKind,
}

enum NodeKind {
    Local(LocalNode),
    Docker(DockerNode),
}

struct LocalNode {
    bin: RedisBinary,
    /// The arguments it was started with, reused by a restart.
    args: Vec<String>,
    port: u16,
    child: Option<OwnedChild>,
    dir: super::registry::RunDir,
}

struct DockerNode {
    engine: Engine,
    id: String,
    network: String,
    removed: bool,
}

impl Drop for DockerNode {
    fn drop(&mut self) {
        if !self.removed {
            self.engine.remove_container_blocking(&self.id);
        }
    }
}

impl RedisNode {
    /// A local redis-server in its own private dir.
    pub(crate) async fn start_local(spec: &NodeSpec) -> Result<RedisNode, ServiceError> {
        let bin = find_redis()?;
        let dir = private_dir()?;
        let mut args = spec.args.clone();
        let given_bus = args.windows(2).find(|w| w[0] == "--cluster-port").and_then(|w| w[1].parse().ok());
        let bus_port = match (spec.is_cluster(), given_bus) {
            (false, _) => None,
            (true, Some(bus)) => Some(bus),
            (true, None) => {
                // The default bus port (port + 10000) may be taken or out of range.
                let bus = free_port().map_err(ServiceError::io("pick a free cluster bus port"))?;
                args.extend(["--cluster-port".to_string(), bus.to_string()]);
                Some(bus)
            }
        };
        let (child, port) = spawn_redis_with(&bin, dir.path(), &args).await?;
        Ok(RedisNode {
            url: format!("redis://127.0.0.1:{port}/"),
            peer: PeerAddr { host: "127.0.0.1".into(), port, bus_port },
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            kind: NodeKind::Local(LocalNode { bin, args, port, child: Some(child), dir }),
        })
    }

    /// A container on the scope's private network, published on 127.0.0.1.
    pub(crate) async fn start_docker(
        scope: &Scope,
        image: &str,
        password: &str,
        spec: &NodeSpec,
    ) -> Result<RedisNode, ServiceError> {
        let network = scope.network().await?;
        let name = scope.name(&format!("node-{:06x}", rand::random::<u32>() & 0xff_ffff));
        let cmd = redis_cmd(password, &spec.args);
        let what = format!("redis node container (image {image})");
        let (id, port) = run_with_port_retry(scope, &what, |host_port| ContainerSpec {
            image: image.to_string(),
            name: name.clone(),
            cmd: cmd.clone(),
            env: Vec::new(),
            port: REDIS_PORT,
            host_port,
            network: Some(network.clone()),
        })
        .await?;
        let engine = scope.engine().clone();
        let url = redis_url(password, port);
        let mut node = RedisNode {
            url,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            peer: PeerAddr {
                host: String::new(),
                port: REDIS_PORT,
                bus_port: spec.is_cluster().then_some(REDIS_PORT + 10000),
            },
            kind: NodeKind::Docker(DockerNode { engine, id, network, removed: false }),
        };
        node.wait_docker_ready().await?;
        if spec.is_cluster() {
            node.check_cluster_reachable().await?;
        }
        Ok(node)
    }

    /// Where this process reaches the node: 127.0.0.1 and its port (on Docker, the published
    /// one), the same address as [`RedisNode::url`].
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn backend(&self) -> Backend {
        match self.kind {
            NodeKind::Local(_) => Backend::Local,
            NodeKind::Docker(_) => Backend::Docker,
        }
    }

    /// The server's pid (local nodes that run).
    pub fn pid(&self) -> Option<u32> {
        match &self.kind {
            NodeKind::Local(n) => n.child.as_ref().map(OwnedChild::pid),
            NodeKind::Docker(_) => None,
        }
    }

    /// The local node's private dir (its `--dir`: RDB and AOF files go here).
    pub fn data_dir(&self) -> Option<&Path> {
        match &self.kind {
            NodeKind::Local(n) => Some(n.dir.path()),
            NodeKind::Docker(_) => None,
        }
    }

    /// SIGKILLs the server (no shutdown save); its data stays for [`RedisNode::restart`].
    pub async fn kill(&mut self) -> Result<(), ServiceError> {
        match &mut self.kind {
            NodeKind::Local(n) => {
                if let Some(child) = n.child.take() {
                    child.stop().await;
                }
                Ok(())
            }
            NodeKind::Docker(n) => {
                n.engine.kill(&n.id).await?;
                let (engine, id) = (&n.engine, n.id.as_str());
                let stopped = poll_until(READY_TIMEOUT, Duration::from_millis(10), || async move {
                    match engine.state(id, None).await {
                        Ok(s) if !s.running => Attempt::Ready(()),
                        Ok(_) => Attempt::Retry("still running".into()),
                        Err(e) => Attempt::Abort(e.to_string()),
                    }
                })
                .await;
                stopped.map_err(|e| ServiceError::Docker(format!("container did not stop after SIGKILL: {e:?}")))
            }
        }
    }

    /// Starts the server again on the same data and URL (killing it first if it runs) and
    /// waits until it answers.
    pub async fn restart(&mut self) -> Result<(), ServiceError> {
        self.kill().await?;
        match &mut self.kind {
            NodeKind::Local(n) => {
                n.child = Some(respawn_redis(&n.bin, n.dir.path(), n.port, &n.args).await?);
                Ok(())
            }
            NodeKind::Docker(n) => {
                n.engine.start(&n.id).await?;
                self.wait_docker_ready().await
            }
        }
    }

    /// Stops the server and removes its data.
    pub async fn stop(self) {
        let RedisNode { kind, .. } = self;
        match kind {
            NodeKind::Local(LocalNode { child, dir, .. }) => {
                if let Some(child) = child {
                    child.stop().await;
                }
                drop(dir);
            }
            NodeKind::Docker(mut n) => {
                let _ = n.engine.remove_container(&n.id).await;
                n.removed = true;
            }
        }
    }

    /// Waits for PING on the published port, then records the container's network address.
    async fn wait_docker_ready(&mut self) -> Result<(), ServiceError> {
        let NodeKind::Docker(n) = &self.kind else { return Ok(()) };
        wait_ready(&n.engine, &n.id, "redis node container", &Readiness::redis(&self.url), READY_TIMEOUT).await?;
        let state = n.engine.state(&n.id, Some(&n.network)).await?;
        self.peer.host = state.ip.ok_or_else(|| ServiceError::Docker("the node container has no address".into()))?;
        Ok(())
    }

    /// Cluster clients follow MOVED redirections to the address each node announces: its
    /// container address. This process must reach that address directly.
    async fn check_cluster_reachable(&self) -> Result<(), ServiceError> {
        let addr = format!("{}:{}", self.peer.host, self.peer.port);
        let connect = tokio::net::TcpStream::connect(addr.clone());
        match tokio::time::timeout(Duration::from_secs(2), connect).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(ServiceError::ClusterUnreachable { addr, reason: e.to_string() }),
            Err(_) => Err(ServiceError::ClusterUnreachable { addr, reason: "no answer within 2 s".into() }),
        }
    }
}

/// A listener of this process that nodes reach on the local backend: loopback.
pub(crate) async fn listen_local() -> Result<TcpListener, ServiceError> {
    listen_at(IpAddr::V4(Ipv4Addr::LOCALHOST)).await
}

/// A listener of this process that node containers reach: on the gateway of the scope's
/// private network, the host's own address on that bridge. Where the engine runs elsewhere
/// (a VM, a remote host) the gateway is no address of this machine and binding fails.
pub(crate) async fn listen_docker(scope: &Scope) -> Result<TcpListener, ServiceError> {
    let network = scope.network().await?;
    let gateway = scope.engine().network_gateway(&network).await?.ok_or_else(|| ServiceError::HostUnreachable {
        addr: format!("network {network}"),
        reason: "the network has no IPv4 gateway".into(),
    })?;
    let ip = gateway.parse().map_err(|e| ServiceError::HostUnreachable {
        addr: gateway.clone(),
        reason: format!("not an IP address: {e}"),
    })?;
    listen_at(ip).await
}

/// Binds a free port at `ip`; failing to bind means nodes cannot reach this process there.
async fn listen_at(ip: IpAddr) -> Result<TcpListener, ServiceError> {
    TcpListener::bind((ip, 0)).await.map_err(|e| ServiceError::HostUnreachable {
        addr: ip.to_string(),
        reason: format!("cannot listen there: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_cluster_nodes() {
        assert!(NodeSpec::new(["--cluster-enabled", "yes"]).is_cluster());
        assert!(!NodeSpec::new(["--cluster-enabled", "no"]).is_cluster());
        assert!(!NodeSpec::new(["--maxmemory", "10mb"]).is_cluster());
        assert!(!NodeSpec::default().is_cluster());
    }

    #[tokio::test]
    async fn an_address_of_no_interface_here_is_unreachable_in_one_line() {
        // 192.0.2.1 (TEST-NET-1) is an address of no machine: as a gateway of an engine that
        // runs in a VM is no address of this one.
        let err = listen_at("192.0.2.1".parse().unwrap()).await.unwrap_err();
        assert!(matches!(err, ServiceError::HostUnreachable { .. }), "{err:?}");
        let line = err.to_string();
        assert!(line.contains("192.0.2.1") && line.contains("--backend local") && !line.contains('\n'), "{line}");
        let local = listen_local().await.unwrap();
        assert!(local.local_addr().unwrap().ip().is_loopback());
    }
}
