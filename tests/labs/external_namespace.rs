//! ordlab on servers it did not start: every built-in lab run with `--backend external`
//! against a Redis and a PostgreSQL that play a user's servers, with data of their own in
//! other keys, other schemas and another database. After each lab the user's data is byte
//! for byte what it was (every key's DUMP, `pg_dumpall`) and nothing of ordlab's is left (no
//! key, schema or database more). The lab's user is a plain role with CREATE on the
//! database only, as the README asks: no superuser, no CREATEDB.
//!
//! Among the user's keys are look-alikes of ordlab's (`ordlab:deadbeef:x`, `ordlab:foo:bar`, a
//! stream, a list and a zset under `ordlab:<8 hex>:`, owner keys that hold no mark or another
//! nonce's): ordlab removes only what carries its mark, so every one of them must survive every
//! lab, a reap after a SIGKILL, and a user's own schema named `ordlab` makes each run refuse.
//!
//! Labs that start Redis servers of their own (`failover`, `persistence`, `eviction`) are
//! refused by the external backend in one line before anything starts; they are asked for
//! here too and must refuse with that line and leave nothing. `cluster` needs a Redis
//! Cluster: tests/labs/cluster.rs runs it on one given by URLs, and checks its namespace there.

use super::support;
use ordlab::service::Services;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Labs that cannot run on a plain external pair, and why.
const EXCLUDED: [(&str, &str); 1] =
    [("cluster", "needs a Redis Cluster (--redis-cluster-url); see tests/labs/cluster.rs")];

/// A job-queue library's lab (`library-*`) is refused in one line before anything starts: the
/// library's keys and tables are its own (rq:*, bull:*, pgboss.*), in a database it empties.
fn library(id: &str) -> bool {
    id.starts_with("library-")
}

/// Labs refused in one line, before anything starts, as they start Redis servers of their own.
const OWN_NODES: [&str; 3] = ["persistence", "eviction", "failover"];

/// The slowest labs run one variant here (the others share its keys and schemas), to keep the
/// test near 45 s: `load` alone takes 30 s over all its variants.
const ONE_VARIANT: [(&str, &str); 5] = [
    ("load", "cas"),
    ("pipeline", "corrected"),
    ("foreign-priority", "python-strict"),
    ("list-scale", "stream-zero-count10"),
    ("priority-weighted", "fixed-weighted"),
];

/// The user's servers: a local pair this test starts, with the user's data on it.
struct Foreign {
    services: Services,
    port: u16,
}

impl Foreign {
    async fn start() -> Foreign {
        let services = Services::start(&support::local()).await.expect("servers start");
        let port = pg_port(&services.pg_config);
        let f = Foreign { services, port };
        f.seed().await;
        f
    }

    fn admin_config(&self, db: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={db}", self.port)
    }

    /// The pg-url of a plain role of the user's (`lab`: CREATE on database postgres only).
    fn lab_pg_url(&self, user: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname=postgres", self.port)
    }

    async fn seed(&self) {
        let mut r = ordlab::connect::redis(&self.services.redis_url).await.unwrap();
        let mut pipe = redis::pipe();
        pipe.set("app:config", "v1")
            .hset_multiple("app:user:1", &[("name", "An"), ("plan", "pro")])
            .rpush("app:queue", &["j1", "j2"])
            .zadd("app:scores", "a", 1)
            .set("ordlab", "a user's key named like the tool")
            .set("ordlab_notes", "not under ordlab:");
        pipe.cmd("XADD").arg("app:events").arg("*").arg("k").arg("v");
        // Look-alikes of ordlab's keys that no ordlab run made: no mark covers them.
        pipe.set("ordlab:deadbeef:x", "looks like a run's key")
            .set("ordlab:foo:bar", "a user's key under ordlab:")
            .rpush("ordlab:cafe0002:queue", &["a", "b"])
            .zadd("ordlab:cafe0003:scores", "m", 2)
            .hset("ordlab:cafe0004:owner", "who", "a hash where a mark would be")
            .set("ordlab:cafe0005:owner", "mine")
            .set("ordlab:cafe0005:data", "kept")
            .set("ordlab:cafe0006:owner", "ordlab run 1a2b3c4d; pid 1; host h; started 1")
            .set("ordlab:cafe0006:data", "another run's mark, copied: not this nonce's");
        pipe.cmd("XADD").arg("ordlab:cafe0001:events").arg("*").arg("k").arg("v");
        pipe.query_async::<()>(&mut r).await.unwrap();
        let admin = ordlab::connect::postgres(&self.admin_config("postgres")).await.unwrap();
        admin
            .batch_execute(
                "CREATE ROLE lab LOGIN; CREATE ROLE nocreate LOGIN;
                 GRANT CREATE ON DATABASE postgres TO lab;
                 CREATE SCHEMA shop; CREATE TABLE shop.items (id int PRIMARY KEY, name text);
                 INSERT INTO shop.items VALUES (1, 'pen'), (2, 'ink');
                 CREATE TABLE public.notes (id serial PRIMARY KEY, body text);
                 INSERT INTO public.notes (body) VALUES ('keep me');",
            )
            .await
            .unwrap();
        admin.batch_execute("CREATE DATABASE other").await.unwrap();
        let other = ordlab::connect::postgres(&self.admin_config("other")).await.unwrap();
        other.batch_execute("CREATE TABLE t (x int); INSERT INTO t VALUES (42);").await.unwrap();
    }

    /// Every key with its DUMP, and the whole PostgreSQL cluster as pg_dumpall prints it.
    async fn fingerprint(&self) -> (BTreeMap<Vec<u8>, Vec<u8>>, String) {
        let mut r = ordlab::connect::redis(&self.services.redis_url).await.unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(&mut r).await.unwrap();
        let mut dumped = BTreeMap::new();
        for k in keys {
            let d: Vec<u8> = redis::cmd("DUMP").arg(&k).query_async(&mut r).await.unwrap();
            dumped.insert(k, d);
        }
        let out = std::process::Command::new(pg_bin("pg_dumpall"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", "--no-role-passwords"])
            .output()
            .expect("pg_dumpall runs");
        assert!(out.status.success(), "pg_dumpall: {}", String::from_utf8_lossy(&out.stderr));
        // `\restrict <random key>` lines (pg_dump ≥ 17.6) differ on every call.
        let dump = String::from_utf8(out.stdout).unwrap();
        let dump: Vec<&str> =
            dump.lines().filter(|l| !l.starts_with("\\restrict ") && !l.starts_with("\\unrestrict ")).collect();
        (dumped, dump.join("\n"))
    }

    /// `ordlab run <args> --backend external` on these servers as role `user`.
    fn ordlab(&self, user: &str, args: &[&str]) -> (Option<i32>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let out = support::ordlab(tmp.path())
            .args(["run"])
            .args(args)
            .args(["--backend", "external", "--redis-url", &self.services.redis_url, "--pg-url"])
            .arg(self.lab_pg_url(user))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Wait (up to 60 s) until a run made a key matching `pattern` (a lab's key, past the claim);
/// whether it did.
async fn wait_for_key(redis_url: &str, pattern: &str) -> bool {
    let mut r = ordlab::connect::redis(redis_url).await.unwrap();
    let t = Instant::now();
    loop {
        let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query_async(&mut r).await.unwrap();
        if !keys.is_empty() {
            return true;
        }
        if t.elapsed().as_secs() >= 60 {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn pg_port(config: &str) -> u16 {
    config.split_whitespace().find_map(|kv| kv.strip_prefix("port=")).and_then(|p| p.parse().ok()).unwrap()
}

/// A PostgreSQL client program: on PATH, else the newest /usr/lib/postgresql/<v>/bin.
fn pg_bin(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    dirs.sort();
    dirs.iter().rev().map(|d| d.join("bin").join(name)).find(|p| p.exists()).unwrap_or_else(|| PathBuf::from(name))
}

/// What changed between two fingerprints, in a few lines (empty: nothing).
fn changes(before: &(BTreeMap<Vec<u8>, Vec<u8>>, String), after: &(BTreeMap<Vec<u8>, Vec<u8>>, String)) -> String {
    let mut out = Vec::new();
    for (k, v) in &after.0 {
        match before.0.get(k) {
            None => out.push(format!("new key {}", String::from_utf8_lossy(k))),
            Some(old) if old != v => out.push(format!("changed key {}", String::from_utf8_lossy(k))),
            _ => {}
        }
    }
    for k in before.0.keys().filter(|k| !after.0.contains_key(*k)) {
        out.push(format!("lost key {}", String::from_utf8_lossy(k)));
    }
    if before.1 != after.1 {
        let (b, a): (Vec<&str>, Vec<&str>) = (before.1.lines().collect(), after.1.lines().collect());
        let added: Vec<&&str> = a.iter().filter(|l| !b.contains(l)).take(6).collect();
        let lost: Vec<&&str> = b.iter().filter(|l| !a.contains(l)).take(6).collect();
        out.push(format!("pg_dumpall differs: added {added:?}, lost {lost:?}"));
    }
    out.join("; ")
}

#[tokio::test]
async fn every_lab_on_foreign_servers_leaves_them_as_they_were() {
    let foreign = Foreign::start().await;
    let before = foreign.fingerprint().await;
    assert!(before.1.contains("CREATE DATABASE other") && before.1.contains("keep me"), "the user's data is there");
    let labs = ordlab::catalog::all().unwrap();
    let mut timings = Vec::new();
    for lab in &labs {
        if EXCLUDED.iter().any(|(id, _)| *id == lab.id) {
            continue;
        }
        let node = "node with ioredis (cd examples/node && npm install)";
        if lab.id == "foreign-list" && !support::has_runtime(node, super::foreign_list::node_missing()) {
            continue;
        }
        let t = Instant::now();
        let mut args = vec![lab.id.as_str(), "--runs", "1", "--time-scale", "0.05", "--seed", "1", "--quiet"];
        if let Some((_, v)) = ONE_VARIANT.iter().find(|(id, _)| *id == lab.id) {
            args.extend(["--variant", v]);
        }
        let (code, stderr) = foreign.ordlab("lab", &args);
        timings.push(format!("{} {:.1}s", lab.id, t.elapsed().as_secs_f64()));
        if OWN_NODES.contains(&lab.id.as_str()) {
            assert_eq!(code, Some(2), "{}: {stderr}", lab.id);
            let refusal = format!("ordlab: {} does not run against your servers: it starts ", lab.id);
            let last = stderr.lines().last().unwrap_or("");
            assert!(last.starts_with(&refusal) && last.contains("of its own"), "{}: {stderr}", lab.id);
        } else if library(&lab.id) {
            assert_eq!(code, Some(2), "{}: {stderr}", lab.id);
            let refusal = format!("ordlab: {} does not run against your servers: a job-queue library keeps", lab.id);
            assert!(stderr.trim().lines().count() == 1 && stderr.starts_with(&refusal), "{}: {stderr}", lab.id);
        } else {
            assert!(matches!(code, Some(0 | 1)), "{} ran: exit {code:?}: {stderr}", lab.id);
        }
        let after = foreign.fingerprint().await;
        let changed = changes(&before, &after);
        assert!(changed.is_empty(), "{} changed the user's servers: {changed}", lab.id);
    }
    eprintln!("labs on foreign servers: {}", timings.join(", "));
    foreign.services.stop().await;
}

#[tokio::test]
async fn a_missing_create_privilege_is_one_line_before_anything_runs() {
    let foreign = Foreign::start().await;
    let before = foreign.fingerprint().await;
    let (code, stderr) = foreign.ordlab("nocreate", &["baseline", "--runs", "1", "--quiet"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("nocreate lacks CREATE on database postgres")
            && stderr.contains("GRANT CREATE ON DATABASE \"postgres\" TO \"nocreate\""),
        "{stderr}"
    );
    assert_eq!(changes(&before, &foreign.fingerprint().await), "");
    foreign.services.stop().await;
}

#[tokio::test]
async fn keep_leaves_the_runs_namespace_until_the_next_run_and_a_live_run_is_not_shared() {
    let foreign = Foreign::start().await;
    let before = foreign.fingerprint().await;
    let (code, stderr) = foreign
        .ordlab("lab", &["idempotency", "--variant", "sink-key", "--runs", "1", "--time-scale", "0.05", "--keep"]);
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    let kept = foreign.fingerprint().await;
    assert!(kept.1.contains("CREATE SCHEMA ordlab;") && kept.1.contains("CREATE SCHEMA ordlab_sink;"), "--keep keeps");
    // A run that holds the database (here: the test, holding its advisory lock) is not shared.
    let holder = ordlab::connect::postgres(&foreign.admin_config("postgres")).await.unwrap();
    holder.execute("SELECT pg_advisory_lock(122537101779298)", &[]).await.unwrap();
    let (code, stderr) = foreign.ordlab("lab", &["baseline", "--runs", "1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("another ordlab run holds database postgres"), "{stderr}");
    holder.execute("SELECT pg_advisory_unlock(122537101779298)", &[]).await.unwrap();
    // A run SIGKILLed while it runs leaves its schemas; its lock goes with its session.
    let tmp = tempfile::tempdir().unwrap();
    let mut killed = support::ordlab(tmp.path())
        .args(["run", "idempotency", "--runs", "3", "--backend", "external", "--quiet"])
        .args(["--redis-url", &foreign.services.redis_url, "--pg-url", &foreign.lab_pg_url("lab")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for_key(&foreign.services.redis_url, "ordlab:*:idempotency:*").await, "the killed run never ran");
    killed.kill().unwrap();
    killed.wait().unwrap();
    // A dead run's key with its mark, and a key of a live run (its owner connection is open).
    let mut r = ordlab::connect::redis(&foreign.services.redis_url).await.unwrap();
    let mut live = ordlab::connect::redis(&foreign.services.redis_url).await.unwrap();
    redis::cmd("CLIENT").arg("SETNAME").arg("ordlab-a11ce000-owner").query_async::<()>(&mut live).await.unwrap();
    let dead_mark = ordlab::service::namespace::Mark::now("d0d0d0d0").text();
    let mut pipe = redis::pipe();
    pipe.set("ordlab:d0d0d0d0:owner", &dead_mark)
        .set("ordlab:d0d0d0d0:baseline:-:1:orders", "x")
        .set("ordlab:a11ce000:owner", ordlab::service::namespace::Mark::now("a11ce000").text())
        .set("ordlab:a11ce000:baseline:-:1:orders", "y");
    pipe.query_async::<()>(&mut r).await.unwrap();
    // The next run removes what the killed one and the dead one left, names them, leaves
    // nothing itself, and leaves the live run's keys and every unmarked look-alike alone.
    let (code, stderr) = foreign.ordlab("lab", &["s1", "--runs", "1", "--time-scale", "0.05", "--quiet"]);
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    let said = "removed what an earlier run left on your servers: ";
    let line =
        stderr.lines().find_map(|l| l.split_once(said)).map(|(_, rest)| rest).unwrap_or_else(|| panic!("{stderr}"));
    let keys: usize = line.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(keys >= 3 && line.contains("keys under ordlab:, ordlab, ordlab_sink (made by run "), "{stderr}");
    assert!(line.contains("run d0d0d0d0 (pid "), "the dead run is named by its mark: {stderr}");
    assert_eq!(line.matches("(pid ").count(), 2, "the killed run and the dead one: {stderr}");
    let removed: i64 = redis::cmd("DEL")
        .arg("ordlab:a11ce000:baseline:-:1:orders")
        .arg("ordlab:a11ce000:owner")
        .query_async(&mut r)
        .await
        .unwrap();
    assert_eq!(removed, 2, "a live run's keys stay");
    assert_eq!(changes(&before, &foreign.fingerprint().await), "");
    foreign.services.stop().await;
}

/// A user's own schemas named `ordlab` and `ordlab_sink`, made by the same role ordlab is
/// given (so ordlab could drop them): every lab refuses in one line before anything runs, and
/// the schemas, their rows and every look-alike key survive, also a run SIGKILLed before.
#[tokio::test]
async fn a_users_own_ordlab_schema_is_refused_and_never_dropped() {
    let foreign = Foreign::start().await;
    let admin = ordlab::connect::postgres(&foreign.admin_config("postgres")).await.unwrap();
    admin
        .batch_execute(
            "SET ROLE lab;
             CREATE SCHEMA ordlab; CREATE TABLE ordlab.invoices (id int PRIMARY KEY, total int);
             INSERT INTO ordlab.invoices VALUES (1, 100), (2, 250);
             CREATE SCHEMA ordlab_sink; COMMENT ON SCHEMA ordlab_sink IS 'ordlab run, but not a mark';
             CREATE TABLE ordlab_sink.notes (body text); INSERT INTO ordlab_sink.notes VALUES ('mine');
             RESET ROLE;",
        )
        .await
        .unwrap();
    let before = foreign.fingerprint().await;
    let labs = ordlab::catalog::all().unwrap();
    let refused_first = |id: &str| OWN_NODES.contains(&id) || library(id) || EXCLUDED.iter().any(|(e, _)| *e == id);
    for lab in labs.iter().filter(|l| !refused_first(&l.id)) {
        let (code, stderr) = foreign.ordlab("lab", &[lab.id.as_str(), "--runs", "1", "--time-scale", "0.05"]);
        assert_eq!(code, Some(2), "{}: {stderr}", lab.id);
        assert_eq!(stderr.trim().lines().count(), 1, "{}: one line: {stderr}", lab.id);
        assert!(
            stderr.contains("schema ordlab exists in database postgres and was not made by ordlab")
                && stderr.contains("drop it"),
            "{}: {stderr}",
            lab.id
        );
        assert_eq!(changes(&before, &foreign.fingerprint().await), "", "{}", lab.id);
    }
    foreign.services.stop().await;
}

/// A run interrupted (Ctrl-C) on the user's servers removes its keys and schemas on the way
/// out, as a finished one does: no next run is needed to clean up after it.
#[tokio::test]
async fn an_interrupted_run_removes_its_namespace_on_the_way_out() {
    let foreign = Foreign::start().await;
    let before = foreign.fingerprint().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = support::ordlab(tmp.path())
        .args(["run", "idempotency", "--runs", "3", "--backend", "external", "--quiet"])
        .args(["--redis-url", &foreign.services.redis_url, "--pg-url", &foreign.lab_pg_url("lab")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for_key(&foreign.services.redis_url, "ordlab:*:idempotency:*").await, "the run never ran");
    let pid = nix::unistd::Pid::from_raw(run.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(changes(&before, &foreign.fingerprint().await), "", "{stderr}");
    foreign.services.stop().await;
}

/// Interrupted while its consumers hold per-key locks (`SET … NX PX 5000` on the user's Redis),
/// a run still leaves nothing: the removal waits until its processes are gone, so no lock set
/// by a consumer on its way out outlives the last scan (it did in 3 of 14 runs when the scan
/// ran first). Five interruptions, each while a lock key exists.
#[tokio::test]
async fn a_run_interrupted_while_its_consumers_hold_locks_leaves_no_lock() {
    let foreign = Foreign::start().await;
    let before = foreign.fingerprint().await;
    for attempt in 0..5 {
        let tmp = tempfile::tempdir().unwrap();
        let run = support::ordlab(tmp.path())
            .args(["run", "lock", "--variant", "s4b", "--runs", "10", "--backend", "external", "--quiet"])
            .args(["--redis-url", &foreign.services.redis_url, "--pg-url", &foreign.lab_pg_url("lab")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        assert!(wait_for_key(&foreign.services.redis_url, "ordlab:*lock:order:*").await, "no lock was ever taken");
        let signal =
            if attempt % 2 == 0 { nix::sys::signal::Signal::SIGINT } else { nix::sys::signal::Signal::SIGTERM };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), signal).unwrap();
        let out = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        assert_eq!(changes(&before, &foreign.fingerprint().await), "", "interruption {attempt}: {stderr}");
    }
    foreign.services.stop().await;
}
