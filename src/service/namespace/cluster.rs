//! The run's namespace on a user's Redis Cluster: the same keys `ordlab:<nonce>:…` (a hash tag,
//! where a lab uses one, comes after the prefix), which a cluster spreads over its masters, so
//! every step reads or removes them master by master. The claim is a connection named
//! `ordlab-<nonce>-owner` on every master, and a later run counts a nonce as live when any
//! master names its owner.
//!
//! Why every master, and any: a key lives on the master that owns its slot, and which master
//! that is can change (the user reshards, a replica takes over), while the run that made it is
//! alive. One owner per master keeps the claim visible for as long as one master of the run's
//! cluster survives, and a reaper that reads every master's `CLIENT LIST` needs no idea where the
//! run's owner was opened (another run may have been given the nodes in another order). The
//! masters are the ones the cluster lists when the run starts; replicas follow their masters.

use super::{client_names, dead_keys, owner_name, scan};
use crate::service::error::ServiceError;
use redis::aio::MultiplexedConnection;
use std::collections::BTreeSet;

/// A run's claim on every master of the user's cluster.
pub struct ClusterClaim {
    /// One owner connection per master, in the order the cluster listed them.
    owners: Vec<MultiplexedConnection>,
    nonce: String,
}

impl ClusterClaim {
    /// Name an owner connection on every master in `masters` (their URLs), then remove every
    /// key under `ordlab:` on any of them whose nonce no master names an owner of. Returns the
    /// claim and how many keys went.
    pub async fn take(masters: &[String], nonce: &str) -> Result<(ClusterClaim, usize), ServiceError> {
        let mut owners = Vec::with_capacity(masters.len());
        for url in masters {
            let mut conn = crate::connect::redis(url).await.map_err(cluster_err("connect to a master"))?;
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg(owner_name(nonce))
                .query_async::<()>(&mut conn)
                .await
                .map_err(cluster_err("CLIENT SETNAME on a master"))?;
            owners.push(conn);
        }
        let claim = ClusterClaim { owners, nonce: nonce.to_string() };
        let removed = claim.remove_dead().await?;
        Ok((claim, removed))
    }

    /// Every master's dead keys (see the module doc): the owners any master names are live.
    async fn remove_dead(&self) -> Result<usize, ServiceError> {
        let mut live = BTreeSet::new();
        for conn in &self.owners {
            let list: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut conn.clone())
                .await
                .map_err(cluster_err("CLIENT LIST on a master"))?;
            live.extend(client_names(&list));
        }
        let mut removed = 0;
        for conn in &self.owners {
            let mut conn = conn.clone();
            let keys = scan(&mut conn, "ordlab:*").await?;
            let dead = dead_keys(&keys, &live);
            unlink_each(&mut conn, &dead).await?;
            removed += dead.len();
        }
        Ok(removed)
    }

    /// End of the run: every key of its nonce on every master.
    pub async fn remove_own(&self) -> Result<(), ServiceError> {
        let pattern = format!("ordlab:{}:*", self.nonce);
        for conn in &self.owners {
            let mut conn = conn.clone();
            let keys = scan(&mut conn, &pattern).await?;
            let all: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            unlink_each(&mut conn, &all).await?;
        }
        Ok(())
    }
}

/// One UNLINK per key, pipelined: keys of one master may hash to different slots, and a
/// cluster refuses a command over two slots (CROSSSLOT).
async fn unlink_each(conn: &mut MultiplexedConnection, keys: &[&[u8]]) -> Result<(), ServiceError> {
    for chunk in keys.chunks(500) {
        let mut pipe = redis::pipe();
        for key in chunk {
            pipe.cmd("UNLINK").arg(*key).ignore();
        }
        pipe.query_async::<()>(conn).await.map_err(cluster_err("UNLINK on a master"))?;
    }
    Ok(())
}

fn cluster_err(what: &'static str) -> impl FnOnce(redis::RedisError) -> ServiceError {
    move |e| ServiceError::Namespace { what, server: "Redis Cluster", reason: e.to_string() }
}
