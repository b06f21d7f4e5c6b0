//! What ordlab owns on servers it did not start: Redis keys under `ordlab:<nonce>:` and the
//! PostgreSQL schemas `ordlab` and `ordlab_sink` in the user's database, never a database.
//! A run claims them on connections it holds open for its whole life and removes what it
//! made when it ends (unless `--keep`); the next run removes whatever no open connection
//! claims, which is all a killed run can leave.
//!
//! The claims need no pid and no clock, so they hold across machines: on PostgreSQL a
//! session advisory lock (the server drops it when the session ends, however the process
//! died), held by one run at a time per database — a second run on the same database is
//! refused in one line, as the two would share the schemas' rows; on Redis a connection named
//! `ordlab-<nonce>-owner`, which `CLIENT LIST` shows for as long as the run is alive. Keys
//! under `ordlab:` whose nonce no such connection names are a dead run's. A run on the user's
//! Redis Cluster too claims, reaps and removes the same keys there, on every master
//! ([`cluster`]).

mod cluster;

pub use cluster::ClusterClaim;

use super::error::ServiceError;
use redis::aio::MultiplexedConnection;
use std::collections::BTreeSet;

/// The schemas ordlab creates in the user's database.
pub const SCHEMAS: [&str; 2] = [crate::connect::SCHEMA, crate::side_effect::SCHEMA];

/// The advisory lock a run holds on its PostgreSQL database: the bytes of "ordlab".
const LOCK_KEY: i64 = 0x6f72_646c_6162;

/// How long a run waits for the lock before it says another run holds it.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The CLIENT SETNAME of the connection that claims `nonce`'s keys.
pub fn owner_name(nonce: &str) -> String {
    format!("ordlab-{nonce}-owner")
}

/// The nonce of an ordlab key (`ordlab:<nonce>:…` → `<nonce>`), None for any other key.
pub fn nonce_of(key: &[u8]) -> Option<&[u8]> {
    let rest = key.strip_prefix(b"ordlab:")?;
    let end = rest.iter().position(|&b| b == b':')?;
    Some(&rest[..end]).filter(|n| !n.is_empty())
}

/// The client names in a `CLIENT LIST` reply.
pub fn client_names(client_list: &str) -> BTreeSet<String> {
    client_list
        .lines()
        .flat_map(|line| line.split(' '))
        .filter_map(|field| field.strip_prefix("name="))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// The keys among `keys` that belong to no live run: under `ordlab:<nonce>:` with no client
/// named [`owner_name`]`(nonce)` among `live`.
pub fn dead_keys<'k>(keys: &'k [Vec<u8>], live: &BTreeSet<String>) -> Vec<&'k [u8]> {
    keys.iter()
        .map(Vec::as_slice)
        .filter(|k| match nonce_of(k) {
            Some(n) => !live.contains(&owner_name(&String::from_utf8_lossy(n))),
            None => false,
        })
        .collect()
}

/// What the claim found and removed of dead (or `--keep`) runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// On the Redis of `--redis-url`.
    pub keys: usize,
    /// On the masters of the user's Redis Cluster (`--redis-cluster-url`).
    pub cluster_keys: usize,
    pub schemas: Vec<String>,
}

impl std::fmt::Display for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let schemas = if self.schemas.is_empty() { "no schema".to_string() } else { self.schemas.join(", ") };
        let cluster = match self.cluster_keys {
            0 => String::new(),
            n => format!(", {n} keys under ordlab: on your cluster"),
        };
        write!(
            f,
            "removed what an earlier run left on your servers: {} keys under ordlab:{cluster}, {schemas}",
            self.keys
        )
    }
}

/// A run's claim on an external pair of servers (see the module doc).
pub struct Claim {
    pg: tokio_postgres::Client,
    redis: MultiplexedConnection,
    /// The claim on the user's Redis Cluster, once [`Claim::claim_cluster`] took it.
    cluster: Option<ClusterClaim>,
    nonce: String,
    keep: bool,
    /// Where the claim's servers are, for the clean-up of a run interrupted (Ctrl-C, SIGTERM)
    /// before [`Claim::release`]: the claim's own connections are then of a runtime that no
    /// longer runs.
    urls: (String, String, Vec<String>),
    released: bool,
}

impl Claim {
    /// Check the privilege, take both claims, and remove what no live run claims. Nothing is
    /// created here: the schemas are made by the labs that need them.
    pub async fn take(
        redis_url: &str,
        pg_config: &str,
        nonce: &str,
        keep: bool,
    ) -> Result<(Claim, Leftovers), ServiceError> {
        let pg = crate::connect::postgres(pg_config).await.map_err(pg_err("connect"))?;
        let row = pg
            .query_one(
                "SELECT current_user::text, current_database()::text, has_database_privilege(current_database(), 'CREATE')",
                &[],
            )
            .await
            .map_err(pg_err("read privileges"))?;
        let (user, database, can_create): (String, String, bool) = (row.get(0), row.get(1), row.get(2));
        if !can_create {
            return Err(ServiceError::MissingCreate { user, database });
        }
        // A run SIGKILLed just now holds the lock until its server notices the closed socket.
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        loop {
            let locked: bool = pg
                .query_one("SELECT pg_try_advisory_lock($1)", &[&LOCK_KEY])
                .await
                .map_err(pg_err("take the run's advisory lock"))?
                .get(0);
            if locked {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return Err(ServiceError::ExternalInUse { database });
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let mut redis = crate::connect::redis(redis_url).await.map_err(redis_err("connect"))?;
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(owner_name(nonce))
            .query_async::<()>(&mut redis)
            .await
            .map_err(redis_err("CLIENT SETNAME"))?;
        let urls = (redis_url.to_string(), pg_config.to_string(), Vec::new());
        let claim = Claim { pg, redis, cluster: None, nonce: nonce.to_string(), keep, urls, released: false };
        let leftovers = claim.remove_leftovers().await?;
        Ok((claim, leftovers))
    }

    async fn remove_leftovers(&self) -> Result<Leftovers, ServiceError> {
        let mut redis = self.redis.clone();
        let keys = scan(&mut redis, "ordlab:*").await?;
        let list: String =
            redis::cmd("CLIENT").arg("LIST").query_async(&mut redis).await.map_err(redis_err("CLIENT LIST"))?;
        let dead = dead_keys(&keys, &client_names(&list));
        unlink(&mut redis, &dead).await?;
        // Holding the lock, no live run uses the schemas: whatever is there is left over.
        let schemas = self.drop_schemas().await?;
        Ok(Leftovers { keys: dead.len(), cluster_keys: 0, schemas })
    }

    /// Claim the run's keys on the user's Redis Cluster too, whose masters' URLs are `masters`,
    /// and remove what no live run claims there (see [`cluster`]). Returns how many keys went.
    pub async fn claim_cluster(&mut self, masters: &[String]) -> Result<usize, ServiceError> {
        let (claim, removed) = ClusterClaim::take(masters, &self.nonce).await?;
        self.cluster = Some(claim);
        self.urls.2 = masters.to_vec();
        Ok(removed)
    }

    /// The schemas of [`SCHEMAS`] that existed, dropped with everything in them.
    async fn drop_schemas(&self) -> Result<Vec<String>, ServiceError> {
        let names: Vec<String> = SCHEMAS.iter().map(|s| s.to_string()).collect();
        let rows = self
            .pg
            .query("SELECT nspname::text FROM pg_namespace WHERE nspname = ANY($1) ORDER BY 1", &[&names])
            .await
            .map_err(pg_err("look up schemas"))?;
        let found: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        for schema in &found {
            self.pg
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .map_err(pg_err("drop schema"))?;
        }
        Ok(found)
    }

    /// End of the run: remove its keys and the schemas (unless `--keep`), then give up both
    /// claims.
    pub async fn release(mut self) -> Result<(), ServiceError> {
        self.released = true;
        let result = if self.keep {
            Ok(())
        } else {
            let mut redis = self.redis.clone();
            let pattern = format!("ordlab:{}:*", self.nonce);
            async {
                if let Some(cluster) = &self.cluster {
                    cluster.remove_own().await?;
                }
                let keys = scan(&mut redis, &pattern).await?;
                let all: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                unlink(&mut redis, &all).await?;
                self.drop_schemas().await.map(drop)
            }
            .await
        };
        // Unlocked before the session closes, so a next run in this process finds it free.
        let _ = self.pg.execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY]).await;
        result
    }
}

/// A run dropped before its release (Ctrl-C, SIGTERM drop the command's future) removes its
/// keys and the schemas all the same, over connections of its own on a thread of its own (the
/// run's runtime is the one being dropped), within [`INTERRUPTED_CLEANUP`]; what it cannot
/// remove in time is left to the next run's start.
impl Drop for Claim {
    fn drop(&mut self) {
        if self.released || self.keep {
            return;
        }
        let (redis_url, pg_config, masters) = self.urls.clone();
        let nonce = self.nonce.clone();
        let cleanup = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            let removal = remove_run(redis_url, pg_config, masters, nonce);
            let _ = rt.block_on(async { tokio::time::timeout(INTERRUPTED_CLEANUP, removal).await });
        });
        let _ = cleanup.join();
    }
}

/// How long an interrupted run may take to remove what it made on the user's servers.
const INTERRUPTED_CLEANUP: std::time::Duration = std::time::Duration::from_secs(2);

/// Remove run `nonce`'s keys (on the Redis at `redis_url` and on each cluster master) and the
/// schemas, over new connections.
async fn remove_run(
    redis_url: String,
    pg_config: String,
    masters: Vec<String>,
    nonce: String,
) -> Result<(), ServiceError> {
    let pattern = format!("ordlab:{nonce}:*");
    for url in &masters {
        let mut conn = crate::connect::redis(url).await.map_err(redis_err("connect"))?;
        let keys = scan(&mut conn, &pattern).await?;
        for key in &keys {
            redis::cmd("UNLINK").arg(key).query_async::<()>(&mut conn).await.map_err(redis_err("UNLINK"))?;
        }
    }
    let mut redis = crate::connect::redis(&redis_url).await.map_err(redis_err("connect"))?;
    let keys = scan(&mut redis, &pattern).await?;
    let all: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    unlink(&mut redis, &all).await?;
    let pg = crate::connect::postgres(&pg_config).await.map_err(pg_err("connect"))?;
    for schema in SCHEMAS {
        pg.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await.map_err(pg_err("drop schema"))?;
    }
    Ok(())
}

async fn scan(redis: &mut MultiplexedConnection, pattern: &str) -> Result<Vec<Vec<u8>>, ServiceError> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(redis)
            .await
            .map_err(redis_err("SCAN"))?;
        keys.extend(batch);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}

async fn unlink(redis: &mut MultiplexedConnection, keys: &[&[u8]]) -> Result<(), ServiceError> {
    for chunk in keys.chunks(500) {
        redis::cmd("UNLINK").arg(chunk).query_async::<()>(redis).await.map_err(redis_err("UNLINK"))?;
    }
    Ok(())
}

fn pg_err(what: &'static str) -> impl FnOnce(tokio_postgres::Error) -> ServiceError {
    move |e| ServiceError::Namespace { what, server: "PostgreSQL", reason: crate::connect::postgres_said(&e) }
}

fn redis_err(what: &'static str) -> impl FnOnce(redis::RedisError) -> ServiceError {
    move |e| ServiceError::Namespace { what, server: "Redis", reason: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nonce_is_the_second_segment_of_an_ordlab_key() {
        assert_eq!(nonce_of(b"ordlab:1a2b3c4d:baseline:-:1:orders"), Some(&b"1a2b3c4d"[..]));
        assert_eq!(nonce_of(b"ordlab:bench:stream"), Some(&b"bench"[..]));
        assert_eq!(nonce_of(b"ordlab:"), None);
        assert_eq!(nonce_of(b"ordlab::x"), None);
        assert_eq!(nonce_of(b"ordlabx:1:y"), None);
        assert_eq!(nonce_of(b"user:ordlab:1:y"), None);
    }

    #[test]
    fn client_names_come_from_every_line_of_client_list() {
        let list = "id=3 addr=127.0.0.1:5 laddr=127.0.0.1:6379 fd=8 name=ordlab-aa-owner age=1 db=0\n\
                    id=4 addr=127.0.0.1:7 fd=9 name= age=0 db=0\n\
                    id=5 addr=127.0.0.1:8 fd=10 name=app age=2 db=0\n";
        let names: Vec<String> = client_names(list).into_iter().collect();
        assert_eq!(names, ["app", "ordlab-aa-owner"]);
    }

    #[test]
    fn only_keys_of_nonces_without_a_live_owner_are_dead() {
        let keys: Vec<Vec<u8>> = ["ordlab:aa:l:v:1:q", "ordlab:bb:l:v:1:q", "user:ordlab:cc", "ordlab:bb:x"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let live = BTreeSet::from([owner_name("aa"), "ordlab-bb-C1".to_string()]);
        let dead: Vec<&[u8]> = dead_keys(&keys, &live);
        assert_eq!(dead, [&b"ordlab:bb:l:v:1:q"[..], &b"ordlab:bb:x"[..]]);
    }

    #[test]
    fn leftovers_say_what_was_removed_in_one_line() {
        let l = Leftovers { keys: 3, cluster_keys: 0, schemas: vec!["ordlab".into(), "ordlab_sink".into()] };
        assert_eq!(
            l.to_string(),
            "removed what an earlier run left on your servers: 3 keys under ordlab:, ordlab, ordlab_sink"
        );
        let l = Leftovers { keys: 0, cluster_keys: 4, schemas: Vec::new() };
        assert_eq!(
            l.to_string(),
            "removed what an earlier run left on your servers: 0 keys under ordlab:, 4 keys under ordlab: on your cluster, no schema"
        );
    }
}
