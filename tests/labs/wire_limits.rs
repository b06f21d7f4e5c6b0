//! Hostile workers at the wire: a real python3 process sends, through the interposer to real
//! servers, a RESP bulk header of 2^40, 64 MiB without CRLF, a PostgreSQL message announcing
//! 0x7ffffff0 bytes. Each is refused with the server's own error text within 2 s, the memory
//! of the process that runs the interposer grows by less than 100 MB, and the refusal is a
//! timeline event naming the limit.
//!
//! Without the limits the interposer buffers what the worker floods (up to 512 MiB here) and
//! the worker never hears the server's error: every case then fails.

use ordlab::interposer::limits::WireEvent;
use ordlab::interposer::redis::RedisSetup;
use ordlab::interposer::{upstream_of, Endpoint, WorkerTap};
use ordlab::timeline::{Actor, EventKind, RawEvent};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The hostile worker: connects to `host:port`, sends the case's frame and floods after it in
/// 1 MiB writes (512 MiB at most; 64 MiB for the line without CRLF) until it is answered, then
/// prints the answer (hex) and the bytes it sent.
const WORKER: &str = r#"
import select, socket, struct, sys
case, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.create_connection((host, port))
s.settimeout(10)
if case == "redis-bulk":
    head, flood = b"*2\r\n$3\r\nSET\r\n$1099511627776\r\n", b"v"
elif case == "redis-inline":
    head, flood = b"", b"a"
else:
    body = struct.pack("!i", 196608) + b"user\0postgres\0database\0postgres\0\0"
    s.sendall(struct.pack("!i", len(body) + 4) + body)
    got = b""
    while b"Z\0\0\0\x05" not in got:
        more = s.recv(65536)
        if not more:
            break
        got += more
    head, flood = b"Q" + struct.pack("!i", 0x7ffffff0), b"x"
sent = 0
chunk = flood * (1024 * 1024)
try:
    s.sendall(head)
    while sent < 512 * 1024 * 1024 and not (case == "redis-inline" and sent >= 64 * 1024 * 1024):
        if select.select([s], [], [], 0)[0]:
            break  # answered: stop sending, read the answer
        s.sendall(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass
answer = b""
try:
    while True:
        more = s.recv(65536)
        if not more:
            break
        answer += more
except OSError:
    pass
print(answer.hex())
print(sent)
"#;

/// The resident set of this process now (kB), from /proc/self/status.
fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number")
}

/// Run the worker on `case` against `port`, sampling this process's RSS meanwhile: what it was
/// answered, how long it took, and the most the RSS grew (MB).
async fn hostile(case: &str, port: u16) -> (Vec<u8>, Duration, u64) {
    let base = rss_kb();
    let started = Instant::now();
    let child = tokio::process::Command::new("python3")
        .args(["-c", WORKER, case, "127.0.0.1", &port.to_string()])
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        loop {
            peak = peak.max(rss_kb().saturating_sub(base));
            tokio::time::sleep(Duration::from_millis(5)).await;
            if peak > 4_000_000 {
                return peak;
            }
        }
    });
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends")
        .expect("python3 runs");
    let took = started.elapsed();
    sampler.abort();
    let peak_kb = sampler.await.unwrap_or(0).max(rss_kb().saturating_sub(base));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let answer = text.lines().next().map(hex).unwrap_or_default();
    (answer, took, peak_kb / 1024)
}

fn hex(h: &str) -> Vec<u8> {
    (0..h.len() / 2).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// The refusals recorded.
fn refusals(rx: &mut mpsc::UnboundedReceiver<RawEvent>) -> Vec<WireEvent> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let EventKind::Family(f) = &ev.kind {
            out.extend(f.decode::<WireEvent>());
        }
    }
    out
}

fn assert_refused(events: &[WireEvent], limit: &str, error: &str) {
    let [WireEvent::FrameRefused { limit: l, error: e, .. }] = events else { panic!("one refusal: {events:?}") };
    assert!(l.contains(limit), "{l}");
    assert_eq!(e, error);
}

#[tokio::test]
async fn hostile_frames_are_refused_in_the_server_s_words_with_bounded_memory() {
    if !super::support::has_runtime("python3", super::foreign_workers::missing(&["python3", "-c", "import socket"])) {
        return;
    }
    let services = ordlab::service::Services::start(&super::support::local()).await.expect("local servers start");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tap = WorkerTap::new(Actor::Consumer(1), Default::default(), tx, Default::default());
    let redis_ep = Endpoint::redis(upstream_of(&services.redis_url).await.unwrap(), tap.clone(), RedisSetup::default())
        .await
        .unwrap();
    let pg_up = {
        let c: tokio_postgres::Config = services.pg_config.parse().unwrap();
        let port = c.get_ports().first().copied().unwrap_or(5432);
        upstream_of(&format!("postgres://127.0.0.1:{port}")).await.unwrap()
    };
    let pg_ep = Endpoint::postgres(pg_up, tap).await.unwrap();

    let mut seen = Vec::new();
    for (case, port, limit, error) in [
        ("redis-bulk", redis_ep.addr.port(), "proto-max-bulk-len", "Protocol error: invalid bulk length"),
        ("redis-inline", redis_ep.addr.port(), "PROTO_INLINE_MAX_SIZE", "Protocol error: too big inline request"),
        ("pg-length", pg_ep.addr.port(), "PQ_LARGE_MESSAGE_LIMIT", "invalid message length"),
    ] {
        let (answer, took, grew_mb) = hostile(case, port).await;
        seen.push(format!("{case}: {} ms, +{grew_mb} MB", took.as_millis()));
        let text = String::from_utf8_lossy(&answer);
        assert!(text.contains(error), "{case}: the worker was answered {text:?}");
        if case == "pg-length" {
            assert!(text.contains("08P01"), "{case}: SQLSTATE protocol_violation in {text:?}");
        }
        assert!(took < Duration::from_secs(2), "{case}: took {took:?}");
        assert!(grew_mb < 100, "{case}: the interposer's process grew by {grew_mb} MB");
        assert_refused(&refusals(&mut rx), limit, error);
    }
    eprintln!("{}", seen.join("; "));

    // Large legal frames (3 MiB, over what the interposer holds) are streamed through whole.
    let big = "v".repeat(3 * 1024 * 1024 + 7);
    let client = redis::Client::open(format!("redis://{}/", redis_ep.addr)).unwrap();
    let mut through = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET").arg("wire:big").arg(&big).query_async(&mut through).await.unwrap();
    let mut direct = ordlab::connect::redis(&services.redis_url).await.unwrap();
    let stored: String = redis::cmd("GET").arg("wire:big").query_async(&mut direct).await.unwrap();
    assert!(stored == big, "the value arrived whole ({} bytes of {})", stored.len(), big.len());
    let pg_url = format!("host=127.0.0.1 port={} user=postgres dbname=postgres", pg_ep.addr.port());
    let pg_url = match services.pg_config.parse::<tokio_postgres::Config>().unwrap().get_password() {
        Some(p) => format!("{pg_url} password={}", String::from_utf8_lossy(p)),
        None => pg_url,
    };
    let (pg, conn) = tokio_postgres::connect(&pg_url, tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    let rows = pg.simple_query(&format!("SELECT length('{big}')")).await.unwrap();
    let length = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(length, Some(big.len().to_string()), "the query arrived whole");
    drop(pg);
    let _ = conn.await;
    let mut recorded = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let EventKind::ServerCommand { args, reply, .. } = ev.kind {
            recorded.push((args, reply));
        }
    }
    let set = recorded.iter().find(|(a, _)| a[0] == "SET").expect("the SET is recorded");
    assert_eq!(set.1, "OK");
    assert!(set.0[2].ends_with("bytes of arguments)") && set.0[2].len() < 100_000, "its value is cut visibly");
    let select = recorded.iter().find(|(a, _)| a[0].starts_with("SELECT length")).expect("the query is recorded");
    assert!(select.0[0].ends_with('…') && select.1 == "SELECT 1", "{:?}", &select.1);

    // The servers are still fine for a well-behaved client.
    let pong: String = redis::cmd("PING").query_async(&mut direct).await.unwrap();
    assert_eq!(pong, "PONG");
    drop((redis_ep, pg_ep));
    services.stop().await;
}
