//! The run's namespace on a user's Redis Cluster: the same keys `ordlab:<nonce>:…` (a hash tag,
//! where a lab uses one, comes after the prefix), which a cluster spreads over its masters, so
//! every step reads or removes them master by master. The run's mark, its owner key, lives on
//! whichever master owns that key's slot, and a later run looks for marks on every master. The claim is a connection named
//! `ordlab-<nonce>-owner` on every master, and a later run counts a nonce as live when any
//! master names its owner.
//!
//! Why every master, and any: a key lives on the master that owns its slot, and which master
//! that is can change (the user reshards, a replica takes over), while the run that made it is
//! alive. One owner per master keeps the claim visible for as long as one master of the run's
//! cluster survives, and a reaper that reads every master's `CLIENT LIST` needs no idea where the
//! run's owner was opened (another run may have been given the nodes in another order). The
//! masters are the ones the cluster lists when the run starts; replicas follow their masters.

use super::{client_names, marked_candidates, owner_name, read_marks, scan, sweep, Mark};
use crate::service::error::ServiceError;
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, BTreeSet};

/// A run's claim on every master of the user's cluster.
pub struct ClusterClaim {
    /// One owner connection per master, in the order the cluster listed them.
    owners: Vec<MultiplexedConnection>,
    nonce: String,
}

impl ClusterClaim {
    /// Name an owner connection on every master in `masters` (their URLs), remove every key
    /// under `ordlab:` on any of them whose nonce carries a mark on some master and whose
    /// owner no master names, then write `mark` (on the master that owns its key's slot).
    /// Returns the claim, how many keys went, and the runs whose marks covered them.
    pub async fn take(masters: &[String], mark: &Mark) -> Result<(ClusterClaim, usize, Vec<Mark>), ServiceError> {
        let mut owners = Vec::with_capacity(masters.len());
        for url in masters {
            let mut conn = crate::connect::redis(url).await.map_err(cluster_err("connect to a master"))?;
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg(owner_name(&mark.nonce))
                .query_async::<()>(&mut conn)
                .await
                .map_err(cluster_err("CLIENT SETNAME on a master"))?;
            owners.push(conn);
        }
        let claim = ClusterClaim { owners, nonce: mark.nonce.clone() };
        let (removed, runs) = claim.remove_dead().await?;
        claim.write_mark(mark).await?;
        Ok((claim, removed, runs))
    }

    /// Every master's dead keys (see the module doc): the owners any master names are live,
    /// the marks any master holds count. Owner keys go last, on every master.
    async fn remove_dead(&self) -> Result<(usize, Vec<Mark>), ServiceError> {
        let mut live = BTreeSet::new();
        let mut scanned = Vec::with_capacity(self.owners.len());
        let mut marks = BTreeMap::new();
        for conn in &self.owners {
            let mut conn = conn.clone();
            let list: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut conn)
                .await
                .map_err(cluster_err("CLIENT LIST on a master"))?;
            live.extend(client_names(&list));
            let keys = scan(&mut conn, "ordlab:*").await?;
            marks.extend(read_marks(&mut conn, &marked_candidates(&keys)).await?);
            scanned.push(keys);
        }
        let sweeps: Vec<_> = scanned.iter().map(|keys| sweep(keys, &live, &marks)).collect();
        let mut removed = 0;
        for (conn, s) in self.owners.iter().zip(&sweeps) {
            unlink_each(&mut conn.clone(), &s.dead).await?;
            removed += s.dead.len();
        }
        let mut runs = Vec::new();
        for (conn, s) in self.owners.iter().zip(&sweeps) {
            unlink_each(&mut conn.clone(), &s.owners).await?;
            removed += s.owners.len();
            runs.extend(s.runs.iter().cloned());
        }
        Ok((removed, runs))
    }

    /// The run's owner key on the master that owns its slot: the others answer MOVED.
    async fn write_mark(&self, mark: &Mark) -> Result<(), ServiceError> {
        let mut last = None;
        for conn in &self.owners {
            let set = redis::cmd("SET")
                .arg(Mark::key(&mark.nonce))
                .arg(mark.text())
                .arg("NX")
                .query_async::<Option<String>>(&mut conn.clone())
                .await;
            match set {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => return Err(ServiceError::NonceTaken { key: Mark::key(&mark.nonce) }),
                Err(e) => last = Some(e),
            }
        }
        Err(cluster_err("SET the run's owner key on its master")(
            last.unwrap_or_else(|| redis::RedisError::from((redis::ErrorKind::Io, "no master"))),
        ))
    }

    /// End of the run: every key of its nonce on every master, its owner key last.
    pub async fn remove_own(&self) -> Result<(), ServiceError> {
        let conns: Vec<MultiplexedConnection> = self.owners.to_vec();
        remove_own_on(conns, &self.nonce).await
    }
}

/// An interrupted run's keys on the masters at `masters`, over new connections.
pub(super) async fn remove_run(masters: &[String], nonce: &str) -> Result<(), ServiceError> {
    let mut conns = Vec::with_capacity(masters.len());
    for url in masters {
        conns.push(crate::connect::redis(url).await.map_err(cluster_err("connect to a master"))?);
    }
    remove_own_on(conns, nonce).await
}

/// Every key of run `nonce` on each of `conns`, the owner key after all others.
async fn remove_own_on(mut conns: Vec<MultiplexedConnection>, nonce: &str) -> Result<(), ServiceError> {
    let owner = Mark::key(nonce);
    let mut owners = Vec::new();
    for conn in &mut conns {
        redis::cmd("PING").query_async::<()>(conn).await.map_err(cluster_err("PING a master"))?;
        let keys = scan(conn, &format!("ordlab:{nonce}:*")).await?;
        let others: Vec<&[u8]> = keys.iter().map(Vec::as_slice).filter(|k| *k != owner.as_bytes()).collect();
        unlink_each(conn, &others).await?;
        owners.push(keys.iter().any(|k| k.as_slice() == owner.as_bytes()));
    }
    for (conn, has_owner) in conns.iter_mut().zip(owners) {
        if has_owner {
            unlink_each(conn, &[owner.as_bytes()]).await?;
        }
    }
    Ok(())
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
