//! The service role on its own: real local Redis and PostgreSQL start, answer and stop, and
//! every exit path (stop, plain drop) leaves no process and no temp dir behind.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::support::local;
use ordlab::service::{
    find_redis, start_local_redis, BackendChoice, NodeSpec, Owner, ServiceError, ServiceOptions, Services,
};

/// True when `pid` no longer exists, not even as a zombie (polls up to 5 s).
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
        if !alive || Instant::now() >= deadline {
            return !alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `(major, minor)` of "7.0.15" or "15.18 (Debian 15.18-0+deb12u1)".
fn version(v: &str) -> (u32, u32) {
    let mut parts = v.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

async fn check_servers(s: &Services) {
    let client = redis::Client::open(s.redis_url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let (pg, conn) = tokio_postgres::connect(&s.pg_config, tokio_postgres::NoTls).await.unwrap();
    let task = tokio::spawn(conn);
    let one: i32 = pg.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
    drop(pg);
    task.await.unwrap().unwrap();
}

fn snapshot(s: &Services) -> (Vec<u32>, PathBuf) {
    let pids = s.pids();
    assert_eq!(pids.len(), 2);
    let dir = s.temp_dir().unwrap().to_path_buf();
    assert!(dir.is_dir());
    (pids, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_probe_and_stop() {
    let s = Services::start(&local()).await.unwrap();
    eprintln!("local start: {:?}, {}", s.start_time, s.info.redis_server);
    assert_eq!(s.backend.to_string(), "local");
    // The cached Redis 8 build when there is one (`just setup` makes it), else the system's.
    assert_eq!(s.info.redis_server, find_redis().unwrap().to_string());
    // Any supported version (Redis ≥ 7, PostgreSQL ≥ 13); each capability the probe found by
    // asking the server (COMMAND INFO) must agree with the version that introduced it.
    let redis = version(&s.info.redis_version);
    assert!(redis >= (7, 0), "{:?}", s.info);
    assert!(version(&s.info.postgres_version).0 >= 13, "{:?}", s.info);
    let caps = &s.info.redis;
    assert!(caps.xautoclaim && caps.blmove && caps.bzpopmax, "{caps:?}");
    assert_eq!(caps.xackdel, redis >= (8, 2), "{caps:?} on {redis:?}");
    assert_eq!(caps.delex, redis >= (8, 4), "{caps:?} on {redis:?}");
    assert_eq!(caps.xadd_idmp, redis >= (8, 6), "{caps:?} on {redis:?}");
    check_servers(&s).await;
    let (pids, dir) = snapshot(&s);
    // The private dir names its owner, so a later run can reclaim it if this one is killed.
    assert_eq!(Owner::read_from_dir(&dir).as_ref(), Some(Owner::current()));
    s.stop().await;
    assert!(pids.iter().all(|&p| gone(p)), "{pids:?} still running");
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_without_stop_cleans_up() {
    let s = Services::start(&local()).await.unwrap();
    check_servers(&s).await;
    let (pids, dir) = snapshot(&s);
    drop(s);
    assert!(pids.iter().all(|&p| gone(p)), "{pids:?} still running");
    assert!(!dir.exists());
}

#[tokio::test]
async fn two_independent_redis_servers() {
    let a = start_local_redis(&[]).await.unwrap();
    let b = start_local_redis(&["--maxmemory".into(), "10mb".into()]).await.unwrap();
    assert_ne!(a.port, b.port);
    assert_ne!(a.pid(), b.pid());
    let set = |url: String, v: &'static str| async move {
        let c = redis::Client::open(url).unwrap();
        let mut con = c.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("SET").arg("k").arg(v).query_async(&mut con).await.unwrap();
    };
    set(a.url.clone(), "a").await;
    set(b.url.clone(), "b").await;
    let get = |url: String| async move {
        let c = redis::Client::open(url).unwrap();
        let mut con = c.get_multiplexed_async_connection().await.unwrap();
        redis::cmd("GET").arg("k").query_async::<String>(&mut con).await.unwrap()
    };
    assert_eq!(get(a.url.clone()).await, "a");
    assert_eq!(get(b.url.clone()).await, "b");
    let (pa, da) = (a.pid(), a.dir().unwrap().to_path_buf());
    let (pb, db) = (b.pid(), b.dir().unwrap().to_path_buf());
    a.stop().await;
    drop(b);
    assert!(gone(pa) && gone(pb));
    assert!(!da.exists() && !db.exists());
}

#[tokio::test]
async fn external_backend_requires_urls() {
    let opts = ServiceOptions { backend: BackendChoice::External, ..ServiceOptions::default() };
    let err = Services::start(&opts).await.err().unwrap().to_string();
    assert!(err.contains("ORDLAB_REDIS_URL"), "{err}");
}

#[tokio::test]
async fn unreachable_external_is_redacted() {
    let opts = ServiceOptions {
        backend: BackendChoice::External,
        redis_url: Some("redis://:hunter2@127.0.0.1:1/".into()),
        pg_url: Some("host=127.0.0.1 port=1 password=hunter2".into()),
        ..ServiceOptions::default()
    };
    let err = Services::start(&opts).await.err().unwrap().to_string();
    assert!(err.contains("cannot reach"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[tokio::test]
async fn early_exit_reports_log_tail() {
    let err = start_local_redis(&["--no-such-option".into(), "x".into()]).await.err().unwrap().to_string();
    assert!(err.contains("redis-server did not become ready"), "{err}");
    assert!(err.contains("exited early"), "{err}");
    assert!(err.contains("no-such-option"), "{err}");
}

#[tokio::test]
async fn external_backend_cannot_start_nodes() {
    // External servers are reachable without starting anything: use a local pair as "external".
    let local = Services::start(&local()).await.unwrap();
    let opts = ServiceOptions {
        backend: BackendChoice::External,
        redis_url: Some(local.redis_url.clone()),
        pg_url: Some(local.pg_config.clone()),
        ..ServiceOptions::default()
    };
    let external = Services::start(&opts).await.unwrap();
    let err = external.start_redis_node(&NodeSpec::default()).await.err().unwrap();
    assert!(matches!(err, ServiceError::NodesUnsupported { .. }), "{err}");
    external.stop().await;
    local.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_nodes_restart_on_their_data_replicate_and_form_a_cluster() {
    let services = Services::start(&local()).await.unwrap();
    super::redis_nodes::exercise(&services).await;
    services.stop().await;
}

/// Connections past the server's `max_connections` (ordlab's own PostgreSQL has 100): the
/// error says what PostgreSQL said, `sorry, too many clients already`, and the fix, not
/// tokio-postgres's bare "db error".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_clients_is_the_server_s_own_words() {
    use ordlab::error::Context as _;
    let s = Services::start(&local()).await.unwrap();
    let mut open = Vec::new();
    let refused = loop {
        match ordlab::connect::postgres(&s.pg_config).await.context("connect") {
            Ok(client) => open.push(client),
            Err(e) => break e.to_string(),
        }
        assert!(open.len() <= 200, "200 connections taken: max_connections is not 100");
    };
    drop(open);
    s.stop().await;
    assert!(
        refused.starts_with("postgresql: connect: FATAL: sorry, too many clients already (SQLSTATE 53300): "),
        "{refused}"
    );
    assert!(
        refused.contains("max_connections") && !refused.contains("db error") && !refused.contains('\n'),
        "{refused}"
    );
}
