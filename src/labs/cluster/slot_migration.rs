//! Resharding while workers run: one hash slot moved from one master to another by the steps
//! `redis-cli --cluster reshard` takes (CLUSTER SETSLOT IMPORTING on the target, MIGRATING on
//! the source, MIGRATE of the slot's keys, SETSLOT NODE on every master), with a window
//! between marking the slot and moving its keys: a slow reshard, as with many or large keys.
//!
//! During the window the source still serves the keys it holds and sends clients asking for
//! any other key of the slot to the target (ASK); a command naming several keys of the slot,
//! some there and some not, gets TRYAGAIN. After SETSLOT NODE the source answers MOVED.

use crate::fault::TimeScale;
use crate::cluster_queue::ClusterEvent;
use crate::error::{Context, Error};
use crate::service::cluster::ClusterNode;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, Sink};
use redis::aio::MultiplexedConnection;

/// Keys fetched and moved per MIGRATE.
const BATCH: usize = 100;
/// MIGRATE's own timeout, in ms.
const MIGRATE_TIMEOUT_MS: u64 = 5000;

/// Which slot goes where, and how long the keys wait before they move (ms, before the scale).
pub struct SlotMove<'a> {
    pub slot: u16,
    pub from: &'a ClusterNode,
    pub to: &'a ClusterNode,
    /// Every master (SETSLOT NODE goes to each).
    pub masters: &'a [ClusterNode],
    pub window_ms: f64,
    pub scale: TimeScale,
}

impl SlotMove<'_> {
    /// Move the slot; returns how many keys moved. Each step is a timeline event of `runner`.
    pub async fn run(&self, sink: &dyn Sink) -> Result<u64, Error> {
        let (slot, from, to) = (self.slot, self.from, self.to);
        let mut src = connect(from).await?;
        let mut dst = connect(to).await?;
        setslot(&mut dst, slot, "IMPORTING", &from.id).await?;
        setslot(&mut src, slot, "MIGRATING", &to.id).await?;
        let (f, t) = (from.name.clone(), to.name.clone());
        sink.emit(Actor::Runner, ClusterEvent::SlotMigrating { slot, from: f.clone(), to: t.clone() }.event());
        self.scale.sleep(self.window_ms).await;
        let keys = self.move_keys(&mut src).await?;
        sink.emit(Actor::Runner, ClusterEvent::SlotKeysMoved { slot, keys, from: f, to: t.clone() }.event());
        // The target first, then the source, then the others (the order the Redis docs give).
        setslot(&mut dst, slot, "NODE", &to.id).await?;
        setslot(&mut src, slot, "NODE", &to.id).await?;
        for m in self.masters.iter().filter(|m| m.id != from.id && m.id != to.id) {
            setslot(&mut connect(m).await?, slot, "NODE", &to.id).await?;
        }
        sink.emit(Actor::Runner, ClusterEvent::SlotOwned { slot, node: t }.event());
        Ok(keys)
    }

    /// MIGRATE the slot's keys in batches until the source holds none.
    async fn move_keys(&self, src: &mut MultiplexedConnection) -> Result<u64, Error> {
        let mut moved = 0;
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(self.slot)
                .arg(BATCH)
                .query_async(src)
                .await
                .context("CLUSTER GETKEYSINSLOT")?;
            if keys.is_empty() {
                return Ok(moved);
            }
            let mut migrate = redis::cmd("MIGRATE");
            migrate.arg(&self.to.host).arg(self.to.port).arg("").arg(0).arg(MIGRATE_TIMEOUT_MS);
            // A target with a password (a container node) takes the same credentials.
            if let Some(url) = redis::parse_redis_url(&self.to.url) {
                match (url.username(), url.password()) {
                    (user, Some(pw)) if !user.is_empty() && user != "default" => migrate.arg("AUTH2").arg(user).arg(pw),
                    (_, Some(pw)) => migrate.arg("AUTH").arg(pw),
                    _ => &mut migrate,
                };
            }
            migrate.arg("KEYS").arg(&keys).query_async::<()>(src).await.context("MIGRATE")?;
            moved += keys.len() as u64;
        }
    }
}

async fn connect(node: &ClusterNode) -> Result<MultiplexedConnection, Error> {
    crate::connect::redis(&node.url).await.context(&format!("connect to master {}", node.name))
}

async fn setslot(conn: &mut MultiplexedConnection, slot: u16, how: &str, id: &str) -> Result<(), Error> {
    let cmd = redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg(how).arg(id).clone();
    cmd.query_async::<()>(conn).await.context(&format!("CLUSTER SETSLOT {slot} {how}"))
}
