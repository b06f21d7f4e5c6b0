//! Memory while a worker floods: the same large legal bulks (`SET` of 32 MiB values) sent
//! directly and through an interposer endpoint, with this process's peak resident set
//! (`VmHWM`) before and after and the bytes per second each way.
//!
//! The interposer holds at most [`HELD_MAX`] bytes of a command and streams the rest through,
//! so the peak stays flat however large or many the bulks; the throughput shows what streaming
//! costs against the direct socket.

use crate::error::{Context, Error};
use crate::interposer::limits::HELD_MAX;
use crate::interposer::redis::RedisSetup;
use crate::interposer::{upstream_of, Endpoint, WorkerTap};
use crate::timeline::Actor;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The size of one bulk.
const BULK: usize = 32 * 1024 * 1024;
/// Bulks per flood.
const BULKS: usize = 16;

/// This process's peak resident set (MB), from /proc/self/status; None off Linux.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Send `BULKS` `SET` commands of `value` on one connection to `addr`, each awaited: MB/s.
async fn flood(addr: std::net::SocketAddr, key: &str, value: &[u8]) -> Result<f64, Error> {
    let mut socket = tokio::net::TcpStream::connect(addr).await.context("connect for the flood")?;
    let head = format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n", key.len(), value.len());
    let started = Instant::now();
    let mut reply = [0u8; 5];
    for _ in 0..BULKS {
        socket.write_all(head.as_bytes()).await.context("flood")?;
        socket.write_all(value).await.context("flood")?;
        socket.write_all(b"\r\n").await.context("flood")?;
        socket.read_exact(&mut reply).await.context("the flood's reply")?;
        if &reply != b"+OK\r\n" {
            return Err(Error::Io {
                context: "the flood's reply".into(),
                source: std::io::Error::other(String::from_utf8_lossy(&reply).into_owned()),
            });
        }
    }
    Ok((BULKS * value.len()) as f64 / 1e6 / started.elapsed().as_secs_f64())
}

/// Flood directly, then through an endpoint; print the peaks and the speeds.
pub async fn run(redis_url: &str, key: &str) -> Result<(), Error> {
    let upstream = upstream_of(redis_url).await.context("Redis address")?;
    let value = vec![b'v'; BULK];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let tap = WorkerTap::new(Actor::Consumer(1), Default::default(), tx, Default::default());
    let endpoint = Endpoint::redis(upstream, tap, RedisSetup::default()).await.context("start the interposer")?;
    let before = peak_rss_mb();
    let direct = flood(upstream, key, &value).await?;
    let after_direct = peak_rss_mb();
    let through = flood(endpoint.addr, key, &value).await?;
    let after = peak_rss_mb();
    drop(endpoint);
    drain.abort();
    let mb = |v: Option<f64>| v.map(|v| format!("{v:.0} MB")).unwrap_or_else(|| "-".into());
    println!(
        "\ninterposer flood: {BULKS} SET of {} MiB each on one connection (the interposer holds ≤ {} KiB of a command)",
        BULK >> 20,
        HELD_MAX >> 10
    );
    println!(
        "  peak RSS (VmHWM): before {}, after direct {}, after through {}",
        mb(before),
        mb(after_direct),
        mb(after)
    );
    println!("  throughput: direct {direct:.0} MB/s, through {through:.0} MB/s ({:.2}× direct)", through / direct);
    Ok(())
}
