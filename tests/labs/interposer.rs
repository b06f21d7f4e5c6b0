//! The interposer on real servers: a client library's traffic passes through unchanged and
//! every command is recorded with its reply; faults fire at command boundaries.

use ordlab::interposer::redis::RedisSetup;
use ordlab::interposer::{upstream_of, Action, Endpoint, Moment, Rule, WorkerTap};
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
    let tap = WorkerTap::new(Actor::Consumer(1), Vec::new(), tx, Box::new(|| {}));
    let setup = RedisSetup { client_name: Some("ordlab-test-C1".into()), key_prefix: "t:".into() };
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
    let rule = Rule { command: "XREADGROUP".into(), nth: 1, moment: Moment::Reply, action: Action::Kill };
    let tap = WorkerTap::new(
        Actor::Consumer(1),
        vec![rule],
        tx,
        Box::new(move || {
            k.fetch_add(1, Ordering::SeqCst);
        }),
    );
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
    let pending: PendingSummary =
        redis::cmd("XPENDING").arg("s").arg("g").query_async(&mut direct).await.unwrap();
    assert_eq!(pending.0, 1, "the entry is pending");
    let detail: Vec<(String, String, i64, i64)> =
        redis::cmd("XPENDING").arg("s").arg("g").arg("-").arg("+").arg(10).query_async(&mut direct).await.unwrap();
    assert_eq!(detail[0].3, 1, "delivered once");
    let got = lines(&mut rx);
    assert!(got.iter().any(|l| l.contains("XREADGROUP") && l.ends_with("(not passed on)")), "{got:#?}");
    drop(endpoint);
    server.stop().await;
}
