//! ordlab on servers it did not start: every built-in lab run with `--backend external`
//! against a Redis and a PostgreSQL that play a user's servers, with data of their own in
//! other keys, other schemas and another database. After each lab the user's data is byte
//! for byte what it was (every key's DUMP, `pg_dumpall`) and nothing of ordlab's is left (no
//! key, schema or database more). The lab's user is a plain role with CREATE on the
//! database only, as the README asks: no superuser, no CREATEDB.
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
const EXCLUDED: [(&str, &str); 2] = [
    ("cluster", "needs a Redis Cluster (--redis-cluster-url); see tests/labs/cluster.rs"),
    ("library-rq", "refused on your servers: the library's keys are its own (rq:*), in a database it empties"),
];

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

/// Wait (up to 60 s) until a run made its sink schema; whether it did.
async fn wait_for_sink(admin: &tokio_postgres::Client) -> bool {
    let sink_made = || async {
        let n: i64 = admin
            .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = 'ordlab_sink'", &[])
            .await
            .unwrap()
            .get(0);
        n > 0
    };
    let t = Instant::now();
    while !sink_made().await && t.elapsed().as_secs() < 60 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sink_made().await
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
    assert!(wait_for_sink(&holder).await, "the killed run never made its sink");
    killed.kill().unwrap();
    killed.wait().unwrap();
    // A dead run's key, and a key of a live run (its owner connection is open) on the Redis.
    let mut r = ordlab::connect::redis(&foreign.services.redis_url).await.unwrap();
    let mut live = ordlab::connect::redis(&foreign.services.redis_url).await.unwrap();
    redis::cmd("CLIENT").arg("SETNAME").arg("ordlab-a11ce000-owner").query_async::<()>(&mut live).await.unwrap();
    let mut pipe = redis::pipe();
    pipe.set("ordlab:deadbeef:baseline:-:1:orders", "x").set("ordlab:a11ce000:baseline:-:1:orders", "y");
    pipe.query_async::<()>(&mut r).await.unwrap();
    // The next run removes what the killed one and the dead one left, says so, leaves
    // nothing itself, and leaves the live run's key alone.
    let (code, stderr) = foreign.ordlab("lab", &["s1", "--runs", "1", "--time-scale", "0.05", "--quiet"]);
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    let said = "removed what an earlier run left on your servers: ";
    let line =
        stderr.lines().find_map(|l| l.split_once(said)).map(|(_, rest)| rest).unwrap_or_else(|| panic!("{stderr}"));
    let keys: usize = line.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(keys >= 1 && line.ends_with("keys under ordlab:, ordlab, ordlab_sink"), "{stderr}");
    let removed: i64 = redis::cmd("DEL").arg("ordlab:a11ce000:baseline:-:1:orders").query_async(&mut r).await.unwrap();
    assert_eq!(removed, 1, "a live run's key stays");
    assert_eq!(changes(&before, &foreign.fingerprint().await), "");
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
    let admin = ordlab::connect::postgres(&foreign.admin_config("postgres")).await.unwrap();
    assert!(wait_for_sink(&admin).await, "the run never made its sink");
    let pid = nix::unistd::Pid::from_raw(run.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(changes(&before, &foreign.fingerprint().await), "", "{stderr}");
    foreign.services.stop().await;
}
