//! The interposer on real servers: a client library's traffic passes through unchanged and
//! every command is recorded with its reply; faults fire at command boundaries.

use ordlab::fault::process::ProcessHandle;
use ordlab::fault::{Fault, Injector, Moment, Target};
use ordlab::interposer::redis::RedisSetup;
use ordlab::interposer::{upstream_of, Endpoint, WorkerTap};
use ordlab::service::start_local_redis;
use ordlab::timeline::{Actor, EventKind, RawEvent};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The recorded commands as `ARGS → reply` lines.
fn lines(rx: &mut mpsc::UnboundedReceiver<RawEvent>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let EventKind::ServerCommand { args, reply, connection, .. } = ev.kind {
            out.push(format!("{connection}: {} → {reply}", args.join(" ")));
        }
    }
    out
}

#[tokio::test]
async fn redis_traffic_passes_unchanged_and_each_command_is_recorded_with_its_reply() {
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tap = WorkerTap::new(Actor::Consumer(1), Injector::default(), tx, ProcessHandle::default());
    let setup = RedisSetup { client_name: Some("ordlab-test-C1".into()), key_prefix: "t:".into(), auth: None };
    let endpoint = Endpoint::redis(upstream_of(&server.url).await.unwrap(), tap, setup).await.unwrap();
    for protocol in ["resp2", "resp3"] {
        let url = format!("redis://{}/?protocol={protocol}", endpoint.addr);
        let client = redis::Client::open(url).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let key = format!("t:orders:{protocol}");
        let _: () = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&key)
            .arg("g")
            .arg("$")
            .arg("MKSTREAM")
            .query_async(&mut conn)
            .await
            .unwrap();
        // A pipeline of two commands: two records, replies in order.
        let (id, len): (String, i64) = redis::pipe()
            .cmd("XADD")
            .arg(&key)
            .arg("1-1")
            .arg("type")
            .arg("created")
            .cmd("XLEN")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!((id.as_str(), len), ("1-1", 1));
        let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg("C1")
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(100)
            .arg("STREAMS")
            .arg(&key)
            .arg(">")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(read.keys[0].ids[0].id, "1-1", "the client library reads the reply unchanged");
        // A transaction with an error inside: EXEC succeeds, its second result is an error.
        let r: redis::RedisResult<(String, i64)> =
            redis::pipe().atomic().cmd("SET").arg("t:s").arg("x").cmd("INCR").arg("t:s").query_async(&mut conn).await;
        assert!(r.is_err(), "INCR of a string fails inside EXEC");
        let name: String = redis::cmd("CLIENT").arg("GETNAME").query_async(&mut conn).await.unwrap();
        assert_eq!(name, "ordlab-test-C1", "the interposer named the connection");
    }
    let got = lines(&mut rx);
    let has = |want: &str| got.iter().any(|l| l.contains(want));
    assert!(has("XADD orders:resp2 1-1 type created → 1-1"), "{got:#?}");
    assert!(has("XLEN orders:resp2 → 1"), "{got:#?}");
    assert!(
        has("XREADGROUP GROUP g C1 COUNT 1 BLOCK 100 STREAMS orders:resp2 > → 1 entry 1-1 type=created"),
        "{got:#?}"
    );
    assert!(
        has("XREADGROUP GROUP g C1 COUNT 1 BLOCK 100 STREAMS orders:resp3 > → 1 entry 1-1 type=created"),
        "{got:#?}"
    );
    assert!(has("HELLO 3"), "redis-rs asks for RESP3 with HELLO: {got:#?}");
    assert!(has("INCR s → QUEUED"), "{got:#?}");
    assert!(has("EXEC → [OK, ERR value is not an integer or out of range]"), "{got:#?}");
    drop(endpoint);
    server.stop().await;
}

/// XPENDING's summary: count, lowest and highest ID, per consumer.
type PendingSummary = (i64, Option<String>, Option<String>, Option<Vec<(String, String)>>);

#[tokio::test]
async fn a_kill_after_the_reply_to_xreadgroup_leaves_the_entry_pending_and_the_worker_without_it() {
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let mut direct = ordlab::connect::redis(&server.url).await.unwrap();
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("s")
        .arg("g")
        .arg("$")
        .arg("MKSTREAM")
        .query_async(&mut direct)
        .await
        .unwrap();
    let _: String = redis::cmd("XADD").arg("s").arg("*").arg("a").arg("1").query_async(&mut direct).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let kills = Arc::new(AtomicU32::new(0));
    let k = kills.clone();
    let fault = Fault::kill_at(Target::Any, "XREADGROUP", 1, Moment::Reply);
    let process = ProcessHandle::default().on_kill(move || {
        k.fetch_add(1, Ordering::SeqCst);
    });
    let tap = WorkerTap::new(Actor::Consumer(1), Injector::new(vec![fault], 1), tx, process);
    let endpoint = Endpoint::redis(upstream_of(&server.url).await.unwrap(), tap, RedisSetup::default()).await.unwrap();
    let client = redis::Client::open(format!("redis://{}/", endpoint.addr)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let read: redis::RedisResult<redis::Value> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg("C1")
        .arg("STREAMS")
        .arg("s")
        .arg(">")
        .query_async(&mut conn)
        .await;
    assert!(read.is_err(), "the reply never reached the worker: {read:?}");
    assert_eq!(kills.load(Ordering::SeqCst), 1, "the rule killed the worker once");
    let pending: PendingSummary = redis::cmd("XPENDING").arg("s").arg("g").query_async(&mut direct).await.unwrap();
    assert_eq!(pending.0, 1, "the entry is pending");
    let detail: Vec<(String, String, i64, i64)> =
        redis::cmd("XPENDING").arg("s").arg("g").arg("-").arg("+").arg(10).query_async(&mut direct).await.unwrap();
    assert_eq!(detail[0].3, 1, "delivered once");
    let got = lines(&mut rx);
    assert!(got.iter().any(|l| l.contains("XREADGROUP") && l.ends_with("(not passed on)")), "{got:#?}");
    drop(endpoint);
    server.stop().await;
}

/// The URL a client library would be given for PostgreSQL through `endpoint`.
fn pg_through(pg_config: &str, endpoint: &Endpoint) -> String {
    let config: tokio_postgres::Config = pg_config.parse().unwrap();
    let mut c = config.clone();
    c.host("127.0.0.1").port(endpoint.addr.port());
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    let password =
        config.get_password().map(|p| format!(" password={}", String::from_utf8_lossy(p))).unwrap_or_default();
    format!("host=127.0.0.1 port={} user={user} dbname={db}{password}", endpoint.addr.port())
}

#[tokio::test]
async fn a_gated_worker_s_commands_and_statements_wait_at_the_wire_until_released() {
    use ordlab::interposer::Held;
    let services = ordlab::service::Services::start(&super::support::local()).await.expect("local servers start");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (gate, mut held) = mpsc::unbounded_channel::<Held>();
    let tap = WorkerTap::gated(Actor::Consumer(1), Injector::default(), tx, ProcessHandle::default(), Some(gate));
    let redis_ep = Endpoint::redis(upstream_of(&services.redis_url).await.unwrap(), tap.clone(), RedisSetup::default())
        .await
        .unwrap();
    let pg_up = {
        let c: tokio_postgres::Config = services.pg_config.parse().unwrap();
        let port = c.get_ports().first().copied().unwrap_or(5432);
        upstream_of(&format!("postgres://127.0.0.1:{port}")).await.unwrap()
    };
    let pg_ep = Endpoint::postgres(pg_up, tap).await.unwrap();
    let mut direct = ordlab::connect::redis(&services.redis_url).await.unwrap();

    // Redis: SET waits at the wire; the server has not seen it until it is released.
    let client = redis::Client::open(format!("redis://{}/", redis_ep.addr)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let set = tokio::spawn(async move {
        let r: redis::RedisResult<()> = redis::cmd("SET").arg("gated:k").arg("1").query_async(&mut conn).await;
        r
    });
    let h = held.recv().await.expect("the SET is held");
    assert_eq!(
        (h.actor, h.args.as_slice()),
        (Actor::Consumer(1), &["SET".to_string(), "gated:k".into(), "1".into()][..])
    );
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let before: Option<String> = redis::cmd("GET").arg("gated:k").query_async(&mut direct).await.unwrap();
    assert_eq!(before, None, "held: not at the server yet");
    assert!(!set.is_finished(), "the client waits for its reply");
    h.release.send(()).unwrap();
    set.await.unwrap().unwrap();
    let after: Option<String> = redis::cmd("GET").arg("gated:k").query_async(&mut direct).await.unwrap();
    assert_eq!(after.as_deref(), Some("1"));

    // PostgreSQL: an extended-query INSERT waits likewise (startup and auth are not steps).
    let pg = ordlab::connect::postgres(&services.pg_config).await.unwrap();
    pg.batch_execute("DROP TABLE IF EXISTS gated; CREATE TABLE gated (v int)").await.unwrap();
    let through = pg_through(&services.pg_config, &pg_ep);
    let insert = tokio::spawn(async move {
        let c = ordlab::connect::postgres(&through).await.unwrap();
        c.execute("INSERT INTO gated VALUES ($1)", &[&7i32]).await
    });
    let h = held.recv().await.expect("the INSERT is held");
    assert_eq!(h.args, ["INSERT INTO gated VALUES ($1)", "7"]);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let n: i64 = pg.query_one("SELECT count(*) FROM gated", &[]).await.unwrap().get(0);
    assert_eq!(n, 0, "held: not executed yet");
    h.release.send(()).unwrap();
    assert_eq!(insert.await.unwrap().unwrap(), 1);
    let n: i64 = pg.query_one("SELECT count(*) FROM gated", &[]).await.unwrap().get(0);
    assert_eq!(n, 1);
    let recorded = lines(&mut rx);
    assert!(recorded.iter().any(|l| l.contains("INSERT INTO gated VALUES ($1) 7 → INSERT 0 1")), "{recorded:#?}");
    drop((redis_ep, pg_ep));
    services.stop().await;
}

/// A RESP3 client subscribes and leaves: the push that confirms its SUBSCRIBE answers it (it is
/// recorded, and nothing it sent is called unanswered), and closing the endpoint after the
/// client has gone keeps every connection's close in the record. Celery's result backend does
/// this on redis-py 8 (RESP3): its producer subscribes to a task's result, unsubscribes and
/// exits; the push was once taken for out-of-band data and the SUBSCRIBE counted as given up.
#[tokio::test]
async fn a_resp3_subscribe_is_answered_by_its_push_and_an_endpoint_closed_after_its_client_keeps_every_close() {
    use ordlab::interposer::connections::ConnectionEvent;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    fn resp(args: &[&str]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
        }
        out
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tap = WorkerTap::new(Actor::Producer, Injector::default(), tx, ProcessHandle::default());
    let endpoint = Endpoint::redis(upstream_of(&server.url).await.unwrap(), tap, RedisSetup::default()).await.unwrap();
    // 1: waits for the confirmation, then unsubscribes and closes without reading.
    let mut c = tokio::net::TcpStream::connect(endpoint.addr).await.unwrap();
    c.write_all(&[resp(&["HELLO", "3"]), resp(&["SUBSCRIBE", "celery-task-meta-job-1"])].concat()).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("celery-task-meta-job-1") {
        let n = c.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server answers");
        got.extend_from_slice(&chunk[..n]);
    }
    assert!(got.contains(&b'>'), "the confirmation is a RESP3 push: {:?}", String::from_utf8_lossy(&got));
    c.write_all(&resp(&["UNSUBSCRIBE", "celery-task-meta-job-1"])).await.unwrap();
    drop(c);
    // 2: sends all three and closes at once, reading nothing.
    let mut c = tokio::net::TcpStream::connect(endpoint.addr).await.unwrap();
    let all = [resp(&["HELLO", "3"]), resp(&["SUBSCRIBE", "ch"]), resp(&["UNSUBSCRIBE", "ch"])].concat();
    c.write_all(&all).await.unwrap();
    drop(c);
    // Closed once both connections are served (a process's exit comes long after its connects).
    let mut events = Vec::new();
    let opened = |k: &EventKind| {
        matches!(k.family::<ConnectionEvent>(), Some(ConnectionEvent::ConnectionOpened { connection: 2, .. }))
    };
    while !events.iter().any(|e: &RawEvent| opened(&e.kind)) {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
        events.push(next.expect("connection 2 is served").expect("the tap is open"));
    }
    endpoint.close().await;
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    let (mut subscribes, mut unanswered, mut closed) = (Vec::new(), Vec::new(), Vec::new());
    for ev in &events {
        match &ev.kind {
            EventKind::ServerCommand { args, reply, connection, .. } if args[0] == "SUBSCRIBE" => {
                subscribes.push((*connection, reply.clone()))
            }
            kind => match kind.family::<ConnectionEvent>() {
                Some(ConnectionEvent::NoReply { args, .. }) => unanswered.push(args),
                Some(ConnectionEvent::ConnectionClosed { connection, .. }) => closed.push(connection),
                Some(ConnectionEvent::ReplyForNobody { args, .. }) if args[0] == "SUBSCRIBE" => {
                    subscribes.push((2, "for nobody".into()))
                }
                _ => {}
            },
        }
    }
    assert_eq!(unanswered, Vec::<Vec<String>>::new(), "every command was answered");
    assert!(subscribes.iter().any(|(c, r)| *c == 1 && r.contains("subscribe")), "{subscribes:?}");
    assert_eq!(subscribes.len(), 2, "each SUBSCRIBE answered (to its client or, late, to nobody): {subscribes:?}");
    closed.sort();
    assert_eq!(closed, vec![1, 2], "both closes recorded");
    server.stop().await;
}
