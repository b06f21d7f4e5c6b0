//! `cluster`: a list queue on a Redis Cluster of three masters of the run's own, and the same
//! lab pointed at a cluster given by URLs (`--backend external --redis-cluster-url`), where it
//! keeps to the run's namespace on every master and reaps what dead runs left there.
//!
//! Asserted only what cannot fail by chance: where a key lives is CRC16 of its hash tag (the
//! spread of one key, of `{shard-0..2}` and of tags picked by slot is fixed), a queue with one
//! worker takes its jobs one at a time in push order, two blocked workers of one queue take an
//! order's created and paid at once and the paid (50 ms) takes effect before the created
//! (100 ms), and a hash slot moved while the workers run loses and reorders nothing and stalls
//! its queue at least for the window between MIGRATING and MIGRATE. Throughput is measured,
//! never asserted.

use super::support;
use ordlab::checker::{Outcome, Verdict};
use ordlab::labs::cluster::cluster::{ClusterFacts, ClusterSpec, ReshardFacts};
use ordlab::report::{LabReport, VariantReport};
use ordlab::service::cluster::{tag_on, RedisCluster};
use ordlab::service::namespace::nonce_of;
use ordlab::service::Services;
use std::collections::{BTreeMap, BTreeSet};

fn facts(report: &LabReport, variant: &str) -> (ClusterFacts, Verdict) {
    let v: &VariantReport = support::variant(report, variant);
    let r = &v.run_records[0];
    (support::facts::<ClusterSpec>(v, r), r.verdict.verdict)
}

/// What moving the slot did, in a variant that moves one.
fn reshard(f: &ClusterFacts) -> &ReshardFacts {
    f.reshard.as_ref().unwrap_or_else(|| panic!("no slot moved: {f:?}"))
}

#[tokio::test]
async fn cluster_snapshot_and_what_it_shows() {
    let report = support::snapshot_run("cluster").await;
    super::core_labs::assert_snapshots(&report);
    for v in &report.variants {
        assert_eq!((v.unknown, v.outcome), (0, Outcome::Matched), "{}: {:?}", v.id, v.run_records[0].verdict);
    }
    // The seed's two keys hash to two slots (1 in 16384 that they do not): CROSSSLOT, nothing ran.
    let (f, verdict) = facts(&report, "seed-keys");
    assert_eq!((f.applied, verdict), (0, Verdict::Wrong));
    assert!(f.crossslot.is_some_and(|n| n >= 1), "{f:?}");
    // One key: one master serves every queue command; the other two none.
    let (f, _) = facts(&report, "one-key");
    assert_eq!((f.max_share_pct, f.min_share_pct, f.applied), (Some(100), Some(0), 9000));
    // {shard-0} and {shard-1} hash to master A, {shard-2} to C, none to B.
    let (f, _) = facts(&report, "naive-tags");
    assert_eq!((f.max_share_pct, f.min_share_pct), (Some(67), Some(0)));
    // Tags picked by slot: a third each; one worker per queue keeps every order in order.
    let (f, verdict) = facts(&report, "balanced-tags");
    let third = |pct: Option<i64>| pct.is_some_and(|p| (32..=34).contains(&p));
    assert!(third(f.min_share_pct) && third(f.max_share_pct), "{f:?}");
    assert_eq!((f.applied, f.out_of_order, verdict), (3000, 0, Verdict::Right));
    let (f, verdict) = facts(&report, "order-one-per-queue");
    assert_eq!((f.applied, f.out_of_order, verdict), (18, 0, Verdict::Right));
    // Each queue's first order: its paid took effect before its created, on all three queues.
    let (f, verdict) = facts(&report, "order-two-per-queue");
    assert!(f.out_of_order >= 3 && verdict == Verdict::Wrong, "{f:?}");
    for id in ["resharding", "resharding-backlog", "resharding-backlog-short-retry"] {
        let (f, verdict) = facts(&report, id);
        assert_eq!((f.applied, f.duplicated, f.out_of_order, verdict), (180, 0, 0, Verdict::Right), "{id}");
        // The slot's keys moved, its old master answered MOVED, and its queue waited at least
        // the 300 ms window (its jobs were on hold from MIGRATING to the end of the move).
        let r = reshard(&f);
        assert!(r.keys_moved >= 1 && r.moved >= 1 && r.stall_ms >= 300, "{id}: {f:?}");
    }
    // With a backlog the worker's LMOVE finds the queue there and its processing list not:
    // TRYAGAIN, which the client retries after its wait.
    for id in ["resharding-backlog", "resharding-backlog-short-retry"] {
        assert!(reshard(&facts(&report, id).0).tryagain >= 1, "{id}");
    }
}

/// The binary with `args`; (exit code, stdout, stderr).
fn ordlab(args: &[&str]) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path()).env_remove("ORDLAB_REDIS_CLUSTER_URL").args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

const CLOSED: [&str; 4] = ["--redis-url", "redis://127.0.0.1:1/", "--pg-url", "host=127.0.0.1 port=1 user=x"];

#[test]
fn an_external_backend_needs_cluster_urls_checked_before_anything_starts() {
    // Nothing listens on port 1: these fail before any connection is tried.
    let external = ["run", "cluster", "--backend", "external"];
    let (code, _, stderr) = ordlab(&[&external[..], &CLOSED[..]].concat());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("lab cluster needs a Redis Cluster") && stderr.contains("--redis-cluster-url"), "{stderr}");
    let bad = [&external[..], &CLOSED[..], &["--redis-cluster-url", "redis://127.0.0.1:7000,not a url"]].concat();
    let (code, _, stderr) = ordlab(&bad);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--redis-cluster-url entry 2 is not a Redis URL"), "{stderr}");
    let reshard =
        [&external[..], &CLOSED[..], &["--redis-cluster-url", "redis://127.0.0.1:7000", "--variant", "resharding"]]
            .concat();
    let (code, _, stderr) = ordlab(&reshard);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("does not run against your servers: it moves a hash slot"), "{stderr}");
}

/// A small lab in a file: one variant that runs anywhere, one that moves a slot.
const SMALL_LAB: &str = r#"
id = "cluster-small"
title = "small"
source = "test"
[setup]
kind = "cluster"
orders = 30
keys = "balanced-tags"
[expect]
wrong = "none"
[[variant]]
id = "spread"
[[variant]]
id = "moved"
setup = { publish_every_ms = 5, reshard = { after_jobs = 10, window_ms = 50 } }
"#;

#[tokio::test]
async fn the_lab_runs_on_a_cluster_given_by_urls() {
    let services = Services::start(&support::local()).await.unwrap();
    let cluster = RedisCluster::start_own(&services, 3).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("cluster-small.toml");
    std::fs::write(&lab, SMALL_LAB).unwrap();
    let (redis, pg, nodes) = (services.redis_url.clone(), services.pg_config.clone(), cluster.urls.join(","));
    let args = ["run", lab.to_str().unwrap(), "--backend", "external", "--redis-url", &redis, "--pg-url", &pg];
    // A standalone server is refused as a cluster node, in one line.
    let (code, _, stderr) = ordlab(&[&args[..], &["--redis-cluster-url", &redis]].concat());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not a Redis Cluster node"), "{stderr}");
    let (code, stdout, stderr) = ordlab(&[&args[..], &["--redis-cluster-url", &nodes]].concat());
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    // The variant that would move a slot of the user's cluster is left out, and says so.
    assert!(stderr.contains("cluster-small/moved left out: it moves a hash slot"), "{stderr}");
    assert!(stdout.contains("### spread") && !stdout.contains("### moved"), "{stdout}");
    assert!(stdout.contains("master A (slots 0-5460): 33 %"), "{stdout}");
    // Nothing of the run is left on the user's cluster.
    for m in cluster.masters().await.unwrap() {
        let mut conn = ordlab::connect::redis(&m.url).await.unwrap();
        let keys: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
        assert_eq!(keys, 0, "master {} keeps {keys} keys", m.name);
    }
    cluster.stop().await;
    services.stop().await;
}

/// Every key on every master of `cluster`, with its DUMP, by (master, key).
async fn cluster_keys(cluster: &RedisCluster) -> BTreeMap<(String, Vec<u8>), Vec<u8>> {
    let mut out = BTreeMap::new();
    for m in cluster.masters().await.unwrap() {
        let mut conn = ordlab::connect::redis(&m.url).await.unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();
        for k in keys {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query_async(&mut conn).await.unwrap();
            out.insert((m.name.clone(), k), dump);
        }
    }
    out
}

/// The keys of `after` that `before` has not, or has with another DUMP: (master, key).
fn new_keys(
    before: &BTreeMap<(String, Vec<u8>), Vec<u8>>,
    after: &BTreeMap<(String, Vec<u8>), Vec<u8>>,
) -> Vec<(String, String)> {
    let changed = after.iter().filter(|(k, v)| before.get(*k) != Some(*v));
    changed.map(|((m, k), _)| (m.clone(), String::from_utf8_lossy(k).into_owned())).collect()
}

/// The namespace on a user's cluster: a run of `cluster` keeps to `ordlab:<nonce>:` on every
/// master (its hash-tagged keys too), removes them when it ends (`--keep` keeps them, until the
/// next run),
/// and the next run removes what a dead run left on any master, but not the keys of a run
/// whose owner connection is open on some master (here A; its key is on C), nor keys under
/// `ordlab:` that no mark covers. The user's keys, on every master, stay byte for byte.
#[tokio::test]
async fn on_a_users_cluster_a_run_keeps_to_its_namespace_and_reaps_dead_runs() {
    let services = Services::start(&support::local()).await.unwrap();
    let cluster = RedisCluster::start_own(&services, 3).await.unwrap();
    let masters = cluster.masters().await.unwrap();
    let mut conn = cluster.client().unwrap().get_async_connection().await.unwrap();
    let mut tags = Vec::new();
    for m in &masters {
        let (tag, _) = tag_on(&mut conn, &format!("app-{}", m.name), m, &[]).await.unwrap().unwrap();
        let mut pipe = redis::pipe();
        pipe.set(format!("app:{tag}:config"), "v1")
            .hset_multiple(format!("{tag}:user:1"), &[("name", "An"), ("plan", "pro")])
            .rpush(format!("{tag}:queue"), &["j1", "j2"]);
        pipe.query_async::<()>(&mut conn).await.unwrap();
        tags.push(tag);
    }
    for (key, value) in [("ordlab", "a user's key named like the tool"), ("ordlab_notes", "not under ordlab:")] {
        redis::cmd("SET").arg(key).arg(value).query_async::<()>(&mut conn).await.unwrap();
    }
    // A live run: its owner connection on master A, its key on master C.
    let mut live = ordlab::connect::redis(&masters[0].url).await.unwrap();
    redis::cmd("CLIENT").arg("SETNAME").arg("ordlab-a11ce000-owner").query_async::<()>(&mut live).await.unwrap();
    let live_key = format!("ordlab:a11ce000:cluster:-:1:{}:queue", tags[2]);
    redis::cmd("RPUSH").arg(&live_key).arg("job").query_async::<()>(&mut conn).await.unwrap();
    // Look-alikes on every master that no mark covers: the user's, whatever their names.
    for tag in &tags {
        let key = format!("ordlab:cafe0007:cluster:-:1:{tag}:queue");
        redis::cmd("RPUSH").arg(key).arg("user's job").query_async::<()>(&mut conn).await.unwrap();
    }
    let before = cluster_keys(&cluster).await;
    // A dead run's keys on every master (no connection names its owner), and its mark.
    let mark = ordlab::service::namespace::Mark::now("deadbeef");
    redis::cmd("SET").arg("ordlab:deadbeef:owner").arg(mark.text()).query_async::<()>(&mut conn).await.unwrap();
    for tag in &tags {
        let key = format!("ordlab:deadbeef:cluster:-:1:{tag}:queue");
        redis::cmd("RPUSH").arg(key).arg("job").query_async::<()>(&mut conn).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("cluster-small.toml");
    std::fs::write(&lab, SMALL_LAB).unwrap();
    let (redis, pg, nodes) = (services.redis_url.clone(), services.pg_config.clone(), cluster.urls.join(","));
    let run = |lab: &str, keep: bool| {
        let mut args = vec!["run", lab, "--runs", "1", "--backend", "external", "--redis-url", &redis];
        args.extend(["--pg-url", &pg, "--redis-cluster-url", &nodes, "--quiet"]);
        args.extend(keep.then_some("--keep"));
        let (code, stdout, stderr) = ordlab(&args);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        stderr
    };
    // The built-in lab, every variant but those that move a slot, its keys kept to look at.
    let stderr = run("cluster", true);
    let kept = cluster_keys(&cluster).await;
    let made = new_keys(&before, &kept);
    assert!(made.iter().all(|(_, k)| !k.starts_with("ordlab:deadbeef:")), "the dead run's keys are left: {made:?}");
    assert!(before.keys().all(|k| kept.get(k) == before.get(k)), "the user's keys and the live run's stay");
    assert!(stderr.contains("4 keys under ordlab: on your cluster"), "its 3 keys and its mark: {stderr}");
    assert!(stderr.contains("(made by run deadbeef (pid "), "{stderr}");
    let nonces: BTreeSet<&[u8]> = made.iter().filter_map(|(_, k)| nonce_of(k.as_bytes())).collect();
    assert_eq!(nonces.len(), 1, "every key made is under ordlab:<the run's nonce>: {made:?}");
    assert!(made.iter().all(|(_, k)| nonce_of(k.as_bytes()).is_some()), "{made:?}");
    let on: BTreeSet<&String> = made.iter().map(|(m, _)| m).collect();
    assert_eq!(on.len(), 3, "balanced-tags' queue per master, each under the prefix: {made:?}");
    assert!(made.iter().any(|(_, k)| k.contains(":{shard-0}:")), "the hash-tagged keys too: {made:?}");
    // The next run removes what the kept run left, and leaves nothing of its own.
    let stderr = run(lab.to_str().unwrap(), false);
    assert!(stderr.contains(&format!("{} keys under ordlab: on your cluster", made.len())), "{stderr}");
    let after = cluster_keys(&cluster).await;
    assert!(after == before, "left on the cluster: {:?}", new_keys(&before, &after));
    drop(live);
    cluster.stop().await;
    services.stop().await;
}
