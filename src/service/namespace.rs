//! What ordlab owns on servers it did not start, and how it proves it: Redis keys under
//! `ordlab:<nonce>:` and the PostgreSQL schemas `ordlab` and `ordlab_sink` in the user's
//! database (never a database), each covered by a [`Mark`] that names the run that made it.
//! ordlab removes only what carries its mark: a key or schema under the same names without
//! one is the user's, is left untouched, and a run that needs such a schema refuses in one line.
//!
//! A run writes its mark before anything it covers (the owner key `ordlab:<nonce>:owner`
//! before its first key; the schemas are created with their comment in one transaction when
//! the run claims the servers), claims liveness on connections it holds open for its whole
//! life, and removes what it made when it ends (unless `--keep`), its mark last. The next run
//! removes what a dead run left: the keys of a nonce whose owner key holds that nonce's mark
//! and whose owner connection is gone, and marked schemas while it holds the database's lock.
//!
//! The liveness claims need no pid and no clock, so they hold across machines: on PostgreSQL a
//! session advisory lock (the server drops it when the session ends, however the process
//! died), held by one run at a time per database — a second run on the same database is
//! refused in one line, as the two would share the schemas' rows; on Redis a connection named
//! `ordlab-<nonce>-owner`, which `CLIENT LIST` shows for as long as the run is alive. A run on
//! the user's Redis Cluster too marks, claims, reaps and removes the same way there, on every
//! master ([`cluster`]).

mod cluster;
mod mark;

pub use cluster::ClusterClaim;
pub use mark::Mark;

use super::error::ServiceError;
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// The schemas ordlab creates in the user's database.
pub const SCHEMAS: [&str; 2] = [crate::connect::SCHEMA, crate::connect::SINK_SCHEMA];

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

/// The nonces whose owner key is among `keys`: the only ones whose mark is worth reading.
pub fn marked_candidates(keys: &[Vec<u8>]) -> BTreeSet<Vec<u8>> {
    keys.iter()
        .filter_map(|k| nonce_of(k).filter(|n| k.as_slice() == Mark::key(&String::from_utf8_lossy(n)).as_bytes()))
        .map(<[u8]>::to_vec)
        .collect()
}

/// What a scan of `ordlab:*` holds, sorted by what may be done with it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sweep<'k> {
    /// Keys of dead runs, their owner keys excepted: removed first.
    pub dead: Vec<&'k [u8]>,
    /// The dead runs' owner keys: removed last, so a removal cut short is finished next time.
    pub owners: Vec<&'k [u8]>,
    /// The dead runs, as their marks name them.
    pub runs: Vec<Mark>,
    /// Keys under `ordlab:` that no mark covers: the user's, left untouched.
    pub unmarked: usize,
}

/// Sort `keys` (a scan of `ordlab:*`): a key is a dead run's when its nonce has a mark
/// (`marks`, read from the owner keys) and no client among `live` is named its owner; a key
/// of a nonce without a mark is nobody's ordlab can prove, whatever it looks like.
pub fn sweep<'k>(keys: &'k [Vec<u8>], live: &BTreeSet<String>, marks: &BTreeMap<Vec<u8>, Mark>) -> Sweep<'k> {
    let mut out = Sweep::default();
    for key in keys {
        let Some(mark) = nonce_of(key).and_then(|n| marks.get(n)) else {
            out.unmarked += 1;
            continue;
        };
        if live.contains(&owner_name(&mark.nonce)) {
            continue;
        }
        if key.as_slice() == Mark::key(&mark.nonce).as_bytes() {
            out.owners.push(key);
            out.runs.push(mark.clone());
        } else {
            out.dead.push(key);
        }
    }
    out
}

/// What the claim found and removed of dead (or `--keep`) runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// On the Redis of `--redis-url`.
    pub keys: usize,
    /// On the masters of the user's Redis Cluster (`--redis-cluster-url`).
    pub cluster_keys: usize,
    pub schemas: Vec<String>,
    /// The runs whose marks covered what was removed (the same run once, wherever it left).
    pub runs: Vec<Mark>,
}

impl Leftovers {
    fn add_runs(&mut self, runs: impl IntoIterator<Item = Mark>) {
        for run in runs {
            if !self.runs.iter().any(|r| r.nonce == run.nonce) {
                self.runs.push(run);
            }
        }
    }
}

impl std::fmt::Display for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let schemas = if self.schemas.is_empty() { "no schema".to_string() } else { self.schemas.join(", ") };
        let cluster = match self.cluster_keys {
            0 => String::new(),
            n => format!(", {n} keys under ordlab: on your cluster"),
        };
        let runs: Vec<String> = self.runs.iter().map(Mark::describe).collect();
        let by = if runs.is_empty() { String::new() } else { format!(" (made by {})", runs.join(", ")) };
        write!(
            f,
            "removed what an earlier run left on your servers: {} keys under ordlab:{cluster}, {schemas}{by}",
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
    mark: Mark,
    keep: bool,
    /// Where the claim's servers are, for the clean-up of a run interrupted (Ctrl-C, SIGTERM)
    /// before [`Claim::release`]: the claim's own connections are then of a runtime that no
    /// longer runs.
    urls: (String, String, Vec<String>),
    released: bool,
}

impl Claim {
    /// Check the privilege, take both claims, remove what dead runs left (only what their
    /// marks cover), refuse schemas of ordlab's names that carry no mark, write the run's
    /// own marks and create its schemas with them.
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
        let mark = Mark::now(nonce);
        let claim = Claim { pg, redis, cluster: None, mark, keep, urls, released: false };
        // Schemas first: a refusal there leaves the user's servers as they were.
        let schemas = claim.clear_schemas(&database).await?;
        let mut leftovers = claim.remove_dead_keys().await?;
        leftovers.schemas = schemas.iter().map(|(s, _)| s.clone()).collect();
        leftovers.add_runs(schemas.into_iter().map(|(_, m)| m));
        claim.write_marks().await?;
        Ok((claim, leftovers))
    }

    /// Remove the keys of dead runs on the Redis; refuse if a key of this run's nonce exists
    /// already (somebody else's key that happens to look like this run's).
    async fn remove_dead_keys(&self) -> Result<Leftovers, ServiceError> {
        let mut redis = self.redis.clone();
        let keys = scan(&mut redis, "ordlab:*").await?;
        if let Some(key) = keys.iter().find(|k| nonce_of(k) == Some(self.mark.nonce.as_bytes())) {
            return Err(ServiceError::NonceTaken { key: String::from_utf8_lossy(key).into_owned() });
        }
        let marks = read_marks(&mut redis, &marked_candidates(&keys)).await?;
        let list: String =
            redis::cmd("CLIENT").arg("LIST").query_async(&mut redis).await.map_err(redis_err("CLIENT LIST"))?;
        let sweep = sweep(&keys, &client_names(&list), &marks);
        unlink(&mut redis, &sweep.dead).await?;
        unlink(&mut redis, &sweep.owners).await?;
        let mut leftovers = Leftovers { keys: sweep.dead.len() + sweep.owners.len(), ..Leftovers::default() };
        leftovers.add_runs(sweep.runs);
        Ok(leftovers)
    }

    /// The schemas of [`SCHEMAS`] that exist: each must carry a mark (a dead run's, as this
    /// run holds the lock), and is then dropped; one without is refused before anything else.
    /// Returns what was dropped, with the mark that proved it ordlab's.
    async fn clear_schemas(&self, database: &str) -> Result<Vec<(String, Mark)>, ServiceError> {
        let found = schema_marks(&self.pg).await?;
        if let Some((schema, _)) = found.iter().find(|(_, mark)| mark.is_none()) {
            return Err(ServiceError::ForeignSchema { schema: schema.clone(), database: database.to_string() });
        }
        let mut dropped = Vec::new();
        for (schema, mark) in found {
            self.pg
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .map_err(pg_err("drop a dead run's schema"))?;
            dropped.extend(mark.map(|m| (schema, m)));
        }
        Ok(dropped)
    }

    /// The run's marks: its owner key (NX: a key of its nonce was refused above), and its
    /// schemas created with their comment in one transaction, so no moment exists when a
    /// schema of ordlab's name is there unmarked.
    async fn write_marks(&self) -> Result<(), ServiceError> {
        let mut redis = self.redis.clone();
        let set: Option<String> = redis::cmd("SET")
            .arg(Mark::key(&self.mark.nonce))
            .arg(self.mark.text())
            .arg("NX")
            .query_async(&mut redis)
            .await
            .map_err(redis_err("SET the run's owner key"))?;
        if set.is_none() {
            return Err(ServiceError::NonceTaken { key: Mark::key(&self.mark.nonce) });
        }
        let comment = self.mark.text().replace('\'', "''");
        let mut sql = String::from("BEGIN;");
        for schema in SCHEMAS {
            sql.push_str(&format!(" CREATE SCHEMA {schema}; COMMENT ON SCHEMA {schema} IS '{comment}';"));
        }
        sql.push_str(" COMMIT;");
        self.pg.batch_execute(&sql).await.map_err(pg_err("create the run's schemas"))
    }

    /// Mark and claim the run's keys on the user's Redis Cluster too, whose masters' URLs are
    /// `masters`, and remove what dead runs left there (see [`cluster`]). Returns how many keys
    /// went, and the runs that made them.
    pub async fn claim_cluster(&mut self, masters: &[String], leftovers: &mut Leftovers) -> Result<(), ServiceError> {
        let (claim, removed, runs) = ClusterClaim::take(masters, &self.mark).await?;
        self.cluster = Some(claim);
        self.urls.2 = masters.to_vec();
        leftovers.cluster_keys = removed;
        leftovers.add_runs(runs);
        Ok(())
    }

    /// End of the run: remove its keys and the schemas (unless `--keep`), then give up both
    /// claims.
    pub async fn release(mut self) -> Result<(), ServiceError> {
        self.released = true;
        let result = if self.keep {
            Ok(())
        } else {
            async {
                if let Some(cluster) = &self.cluster {
                    cluster.remove_own().await?;
                }
                remove_own_keys(&mut self.redis.clone(), &self.mark.nonce).await?;
                drop_own_schemas(&self.pg, &self.mark.nonce).await
            }
            .await
        };
        // Unlocked before the session closes, so a next run in this process finds it free.
        let _ = self.pg.execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY]).await;
        result
    }
}

/// A run dropped before its release (Ctrl-C, SIGTERM drop the command's future) removes its
/// keys and schemas all the same, over connections of its own (the run's runtime is the one
/// being dropped), but only once none of its processes can write any more: a consumer still
/// alive, or killed with a command on its way, could set a key after the last scan, and that
/// key would then outlive the mark that proves it ordlab's. The binary defers the removal
/// until its children are reaped ([`defer_interrupted_removals`],
/// [`finish_interrupted_removals`]); elsewhere a thread waits for this process's children of
/// the moment to end first. What cannot be removed in time is left, marked, to the next run.
impl Drop for Claim {
    fn drop(&mut self) {
        if self.released || self.keep {
            return;
        }
        let removal = InterruptedRemoval { urls: self.urls.clone(), nonce: self.mark.nonce.clone() };
        if DEFERRED.load(std::sync::atomic::Ordering::SeqCst) {
            PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(removal);
            return;
        }
        let children = crate::service::process::children();
        std::thread::spawn(move || {
            crate::service::process::wait_gone(&children, CHILDREN_PATIENCE);
            removal.run();
        });
    }
}

/// How long an interrupted run may take to remove what it made on the user's servers.
const INTERRUPTED_CLEANUP: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a dropped claim outside the binary waits for the processes of its run to end.
const CHILDREN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether dropped claims leave their removal to [`finish_interrupted_removals`].
static DEFERRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The removals of dropped claims, while [`DEFERRED`].
static PENDING: Mutex<Vec<InterruptedRemoval>> = Mutex::new(Vec::new());

/// Say that this process calls [`finish_interrupted_removals`] once its runtime is gone and
/// its children are reaped (the binary does): a claim dropped before then waits for it.
pub fn defer_interrupted_removals() {
    DEFERRED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Remove what the claims dropped since [`defer_interrupted_removals`] made, now that nothing
/// of theirs runs any more.
pub fn finish_interrupted_removals() {
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    for removal in pending {
        removal.run();
    }
}

/// What a dropped claim still has to remove, and where.
struct InterruptedRemoval {
    urls: (String, String, Vec<String>),
    nonce: String,
}

impl InterruptedRemoval {
    /// On a runtime of its own, within [`INTERRUPTED_CLEANUP`].
    fn run(self) {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        let (redis_url, pg_config, masters) = self.urls;
        let removal = remove_run(redis_url, pg_config, masters, self.nonce);
        let _ = rt.block_on(async { tokio::time::timeout(INTERRUPTED_CLEANUP, removal).await });
    }
}

/// Remove run `nonce`'s keys (on the Redis at `redis_url` and on each cluster master) and its
/// schemas, over new connections.
async fn remove_run(
    redis_url: String,
    pg_config: String,
    masters: Vec<String>,
    nonce: String,
) -> Result<(), ServiceError> {
    if !masters.is_empty() {
        cluster::remove_run(&masters, &nonce).await?;
    }
    let mut redis = crate::connect::redis(&redis_url).await.map_err(redis_err("connect"))?;
    remove_own_keys(&mut redis, &nonce).await?;
    let pg = crate::connect::postgres(&pg_config).await.map_err(pg_err("connect"))?;
    drop_own_schemas(&pg, &nonce).await
}

/// Every key of run `nonce`, its owner key last. A round trip first: what the run's processes
/// sent before they ended has been read by the server by the time it answers, so the scan
/// after it sees every key they set.
async fn remove_own_keys(redis: &mut MultiplexedConnection, nonce: &str) -> Result<(), ServiceError> {
    redis::cmd("PING").query_async::<()>(redis).await.map_err(redis_err("PING"))?;
    let owner = Mark::key(nonce);
    let keys = scan(redis, &format!("ordlab:{nonce}:*")).await?;
    let others: Vec<&[u8]> = keys.iter().map(Vec::as_slice).filter(|k| *k != owner.as_bytes()).collect();
    unlink(redis, &others).await?;
    unlink(redis, &[owner.as_bytes()]).await
}

/// Drop the schemas of [`SCHEMAS`] whose mark names run `nonce`; any other is left.
async fn drop_own_schemas(pg: &tokio_postgres::Client, nonce: &str) -> Result<(), ServiceError> {
    for (schema, mark) in schema_marks(pg).await? {
        if mark.is_some_and(|m| m.nonce == nonce) {
            pg.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .map_err(pg_err("drop schema"))?;
        }
    }
    Ok(())
}

/// The schemas of [`SCHEMAS`] that exist, each with the mark its comment holds, if any.
async fn schema_marks(pg: &tokio_postgres::Client) -> Result<Vec<(String, Option<Mark>)>, ServiceError> {
    let names: Vec<String> = SCHEMAS.iter().map(|s| s.to_string()).collect();
    let rows = pg
        .query(
            "SELECT nspname::text, obj_description(oid, 'pg_namespace') FROM pg_namespace \
             WHERE nspname = ANY($1) ORDER BY 1",
            &[&names],
        )
        .await
        .map_err(pg_err("look up schemas"))?;
    Ok(rows
        .iter()
        .map(|r| {
            let comment: Option<String> = r.get(1);
            (r.get(0), comment.as_deref().and_then(Mark::parse))
        })
        .collect())
}

/// The marks in the owner keys of `nonces`. An owner key that is not a string, or holds
/// anything but its own nonce's mark, is no mark.
async fn read_marks(
    redis: &mut MultiplexedConnection,
    nonces: &BTreeSet<Vec<u8>>,
) -> Result<BTreeMap<Vec<u8>, Mark>, ServiceError> {
    let mut marks = BTreeMap::new();
    for nonce in nonces {
        let key = Mark::key(&String::from_utf8_lossy(nonce));
        let value: Option<Vec<u8>> = match redis::cmd("GET").arg(&key).query_async(redis).await {
            Ok(v) => v,
            Err(e) if e.code() == Some("WRONGTYPE") => None,
            Err(e) => return Err(redis_err("GET an owner key")(e)),
        };
        if let Some(mark) = value.and_then(|v| Mark::of_owner_key(nonce, &v)) {
            marks.insert(nonce.clone(), mark);
        }
    }
    Ok(marks)
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
            keys.sort();
            keys.dedup();
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

    fn mark(nonce: &str) -> Mark {
        Mark { nonce: nonce.into(), pid: 7, host: "h".into(), started_ms: 0 }
    }

    fn keys(names: &[&str]) -> Vec<Vec<u8>> {
        names.iter().map(|k| k.as_bytes().to_vec()).collect()
    }

    #[test]
    fn only_nonces_with_an_owner_key_are_worth_a_look() {
        let k = keys(&["ordlab:aa:owner", "ordlab:aa:x", "ordlab:bb:x", "ordlab:cc:owner:y", "ordlab:dd:owner"]);
        let found: Vec<Vec<u8>> = marked_candidates(&k).into_iter().collect();
        assert_eq!(found, [b"aa".to_vec(), b"dd".to_vec()]);
    }

    #[test]
    fn only_keys_of_marked_nonces_without_a_live_owner_are_dead() {
        let k = keys(&[
            "ordlab:aa:l:v:1:q",
            "ordlab:aa:owner",
            "ordlab:bb:l:v:1:q",
            "ordlab:bb:owner",
            "ordlab:bb:x",
            "ordlab:deadbeef:x",
            "ordlab:foo:bar",
            "ordlab:cc:owner",
        ]);
        // aa is live; bb is dead and marked; cc's owner key held no mark; deadbeef, foo none.
        let marks = BTreeMap::from([(b"aa".to_vec(), mark("aa")), (b"bb".to_vec(), mark("bb"))]);
        let live = BTreeSet::from([owner_name("aa"), "ordlab-bb-C1".to_string()]);
        let s = sweep(&k, &live, &marks);
        assert_eq!(s.dead, [&b"ordlab:bb:l:v:1:q"[..], &b"ordlab:bb:x"[..]]);
        assert_eq!(s.owners, [&b"ordlab:bb:owner"[..]]);
        assert_eq!(s.runs, [mark("bb")]);
        assert_eq!(s.unmarked, 3, "deadbeef, foo and cc's owner key are the user's");
    }

    #[test]
    fn without_marks_nothing_is_dead_whatever_it_looks_like() {
        let k = keys(&["ordlab:deadbeef:x", "ordlab:1a2b3c4d:baseline:-:1:orders", "ordlab:1a2b3c4d:owner"]);
        let s = sweep(&k, &BTreeSet::new(), &BTreeMap::new());
        assert_eq!((s.dead.len(), s.owners.len(), s.unmarked), (0, 0, 3));
    }

    #[test]
    fn leftovers_say_what_was_removed_and_whose_it_was_in_one_line() {
        let l = Leftovers {
            keys: 3,
            cluster_keys: 0,
            schemas: vec!["ordlab".into(), "ordlab_sink".into()],
            runs: vec![mark("1a2b3c4d")],
        };
        assert_eq!(
            l.to_string(),
            "removed what an earlier run left on your servers: 3 keys under ordlab:, ordlab, ordlab_sink \
             (made by run 1a2b3c4d (pid 7 on h, started 1970-01-01T00:00:00Z))"
        );
        let l = Leftovers { keys: 0, cluster_keys: 4, schemas: Vec::new(), runs: Vec::new() };
        assert_eq!(
            l.to_string(),
            "removed what an earlier run left on your servers: 0 keys under ordlab:, 4 keys under ordlab: on your cluster, no schema"
        );
    }
}
