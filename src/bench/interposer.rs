//! What the interposer costs a worker: the same client runs the same commands against the same
//! local server twice, directly on the server's port and through an interposer endpoint, and the
//! difference per round trip is what the interposer adds. The aim is that a round trip
//! through it takes at most 2× a direct loopback round trip.
//!
//! Redis is measured with the real `redis-benchmark` found beside the `redis-server` the bench
//! runs (`-c 1 -n 20000 -P 1 --csv`, direct and through alternating, median of 3 rounds): its
//! requests/s and p50 columns. Its XADD is given as a command on the run's own stream key
//! (`ordlab:<nonce>:bench:stream`, removed with the run's namespace), not as its `-t xadd`
//! test, which writes a key `mystream` of its own. A command the binary does not measure (an
//! older one prints no p50 column, or none is installed) is measured instead with redis-rs on
//! one connection, 5000 sequential round trips each way. PostgreSQL: 2000 sequential `SELECT 1` with tokio-postgres
//! extended query (`client.query`), direct against through `Endpoint::postgres`. The tap is the
//! workers' own (connections named, the run's key prefix left out of recorded arguments) and
//! its events go to a channel that a task drains, so recording is part of the cost.

mod flood;

use crate::error::{Context, Error};
use crate::interposer::redis::RedisSetup;
use crate::interposer::{upstream_of, Endpoint, WorkerTap};
use crate::service::{Backend, ServiceOptions, Services};
use crate::stats::quantile;
use crate::timeline::Actor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Requests per redis-benchmark run.
const BENCHMARK_REQUESTS: u32 = 20_000;
/// redis-benchmark rounds (each: direct and through); the median is reported.
const ROUNDS: usize = 3;
/// Sequential round trips per redis-rs measurement.
const REDIS_LOOP: usize = 5000;
/// Sequential `SELECT 1` per PostgreSQL measurement.
const PG_LOOP: usize = 2000;
/// The aim: through / direct at most this.
const AIM: f64 = 2.0;

/// One line of redis-benchmark's `--csv` output.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvRow {
    pub test: String,
    pub rps: f64,
    /// `p50_latency_ms`, when this redis-benchmark prints latency columns.
    pub p50_ms: Option<f64>,
}

/// Parse redis-benchmark's `--csv` output: a header line (`"test","rps",…`), then one line
/// per test. Lines that are not rows (progress, warnings) are skipped.
pub fn parse_csv(text: &str) -> Vec<CsvRow> {
    let fields =
        |line: &str| -> Vec<String> { line.split(',').map(|f| f.trim().trim_matches('"').to_string()).collect() };
    let mut header: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('"')) {
        let f = fields(line);
        let Some(h) = &header else {
            if f.first().map(String::as_str) == Some("test") {
                header = Some(f);
            } else if f.len() >= 2 {
                // No header (an old redis-benchmark): "TEST","rps".
                if let Ok(rps) = f[1].parse() {
                    out.push(CsvRow { test: f[0].clone(), rps, p50_ms: None });
                }
            }
            continue;
        };
        let col =
            |name: &str| h.iter().position(|c| c == name).and_then(|i| f.get(i)).and_then(|v| v.parse::<f64>().ok());
        if let (Some(test), Some(rps)) = (f.first(), col("rps")) {
            out.push(CsvRow { test: test.clone(), rps, p50_ms: col("p50_latency_ms") });
        }
    }
    out
}

/// The median (p50 by nearest rank) of `values`; NaN when empty.
pub fn p50(values: &[f64]) -> f64 {
    quantile(values, 0.5).unwrap_or(f64::NAN)
}

/// `url` with its host and port replaced by `addr`, user, password and path kept
/// (`redis://:pw@127.0.0.1:6379/0` → `redis://:pw@127.0.0.1:40001/0`).
pub fn with_addr(url: &str, addr: std::net::SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let user = authority.rsplit_once('@').map(|(u, _)| format!("{u}@")).unwrap_or_default();
    format!("{scheme}://{user}{addr}{tail}")
}

/// One command's measurement, direct and through.
#[derive(Clone, Debug, Default)]
struct Measured {
    what: String,
    /// Median requests/s of the rounds (redis-benchmark only).
    rps: Option<(f64, f64)>,
    /// p50 round trip in µs.
    p50_us: (f64, f64),
    how: &'static str,
}

impl Measured {
    fn ratio(&self) -> f64 {
        self.p50_us.1 / self.p50_us.0
    }
}

/// The `redis-benchmark` beside the `redis-server` the local backend runs, else the one on PATH.
fn find_benchmark(backend: Backend) -> Option<PathBuf> {
    let beside = (backend == Backend::Local)
        .then(|| crate::service::find_redis().ok())
        .flatten()
        .map(|b| b.path.with_file_name("redis-benchmark"))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|d| d.join("redis-benchmark")).find(|p| p.is_file())
    })
}

/// The stream the XADDs of the bench append to: under the run's namespace `ordlab:<nonce>:`.
pub fn stream_key(nonce: &str) -> String {
    format!("ordlab:{nonce}:bench:stream")
}

/// The XADD measured, on `key`, trimmed so 20000 of them stay small.
fn xadd_args(key: &str) -> [String; 8] {
    ["XADD", key, "MAXLEN", "~", "10000", "*", "field", "value"].map(String::from)
}

/// The redis-benchmark runs of one round against `url`: its PING test, then the XADD on `key`
/// (a command given after the options, which redis-benchmark runs instead of its tests).
pub fn benchmark_args(url: &str, key: &str) -> [Vec<String>; 2] {
    let common = ["-u", url, "-c", "1", "-P", "1", "-n", &BENCHMARK_REQUESTS.to_string(), "--csv"].map(String::from);
    let ping = [&common[..], &["-t".into(), "ping_mbulk".into()]].concat();
    let xadd = [&common[..], &xadd_args(key)[..]].concat();
    [ping, xadd]
}

/// One round of redis-benchmark against `url`: its rows by test name (the XADD command's row
/// is named `XADD`, as redis-benchmark's own test).
async fn benchmark(bin: &Path, url: &str, key: &str) -> Result<Vec<CsvRow>, Error> {
    let mut rows = Vec::new();
    for args in benchmark_args(url, key) {
        let out = tokio::process::Command::new(bin)
            .args(&args)
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|source| Error::Io { context: format!("run {}", bin.display()), source })?;
        rows.extend(parse_csv(&String::from_utf8_lossy(&out.stdout)).into_iter().map(|mut row| {
            if row.test.starts_with("XADD ") {
                row.test = "XADD".into();
            }
            row
        }));
    }
    Ok(rows)
}

/// `n` sequential round trips of `cmd` on one redis-rs connection to `url`, in µs.
async fn redis_loop(url: &str, cmd: &redis::Cmd, n: usize) -> Result<Vec<f64>, Error> {
    let mut conn = crate::connect::redis(url).await.context("connect for the interposer bench")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let _: redis::Value = cmd.query_async(&mut conn).await.context("interposer bench command")?;
        out.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(out)
}

/// `n` sequential `SELECT 1` (extended query) on one connection, in µs.
async fn pg_loop(config: &str, n: usize) -> Result<Vec<f64>, Error> {
    let client = crate::connect::postgres(config).await.context("connect to PostgreSQL for the interposer bench")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        client.query("SELECT 1", &[]).await.context("SELECT 1")?;
        out.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(out)
}

/// Start the servers, measure, print the table and the verdict.
pub async fn run(svc: &ServiceOptions) -> Result<(), Error> {
    let services = Services::start(svc).await?;
    let measured = measure(&services).await;
    let flooded = flood::run(&services.redis_url, &format!("ordlab:{}:bench:flood", services.nonce)).await;
    services.stop().await;
    let (rows, events, bench) = measured?;
    flooded?;
    println!("\ninterposer: direct loopback round trip vs through an interposer endpoint, same servers, one connection, sequential");
    match &bench {
        Some(b) => println!(
            "  redis: {} -c 1 -P 1 -n {BENCHMARK_REQUESTS} -t ping_mbulk,xadd --csv, direct and through alternating, median of {ROUNDS}",
            b.display()
        ),
        None => println!("  redis: no redis-benchmark found; redis-rs loops of {REDIS_LOOP}"),
    }
    println!(
        "  {:<24} {:>12} {:>12} {:>11} {:>11} {:>10} {:>9}  measured with",
        "command", "direct rps", "through rps", "direct p50", "through p50", "added p50", "ratio"
    );
    for m in &rows {
        let (d, t) = m.rps.map(|(d, t)| (format!("{d:.0}"), format!("{t:.0}"))).unwrap_or(("-".into(), "-".into()));
        println!(
            "  {:<24} {:>12} {:>12} {:>8.1} µs {:>8.1} µs {:>7.1} µs {:>8.2}×  {}",
            m.what,
            d,
            t,
            m.p50_us.0,
            m.p50_us.1,
            m.p50_us.1 - m.p50_us.0,
            m.ratio(),
            m.how
        );
    }
    println!("  the tap recorded {events} events (drained from its channel while measuring)");
    let worst = rows.iter().filter(|m| m.ratio().is_finite()).max_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    match worst {
        Some(w) => println!(
            "  verdict: aim \"at most {AIM}× a direct loopback round trip\": {} — worst p50 ratio {:.2}× ({})",
            if w.ratio() <= AIM { "met" } else { "NOT met" },
            w.ratio(),
            w.what
        ),
        None => println!("  verdict: nothing measured"),
    }
    Ok(())
}

type Measurement = (Vec<Measured>, u64, Option<PathBuf>);

async fn measure(services: &Services) -> Result<Measurement, Error> {
    // The tap as a worker's: events to a channel that a task drains (and counts).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Arc::new(AtomicU64::new(0));
    let drained = events.clone();
    let drain = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            drained.fetch_add(1, Ordering::Relaxed);
        }
    });
    let tap = WorkerTap::new(Actor::Consumer(1), Default::default(), tx, Default::default());
    let io = |e: std::io::Error| Error::Io { context: "start the interposer".into(), source: e };
    let upstream = upstream_of(&services.redis_url).await.map_err(io)?;
    // The benchmark's own client authenticates (its URL keeps the password).
    let key = stream_key(&services.nonce);
    let setup = RedisSetup {
        client_name: Some("ordlab-bench-C1".into()),
        key_prefix: format!("ordlab:{}:bench:", services.nonce),
        auth: None,
    };
    let redis_endpoint = Endpoint::redis(upstream, tap.clone(), setup).await.map_err(io)?;
    let (pg_through, pg_endpoint) = crate::interposer::postgres_endpoint(&services.pg_config, &tap).await?;
    drop(tap);
    let direct_url = services.redis_url.clone();
    let through_url = with_addr(&direct_url, redis_endpoint.addr);

    let bench = find_benchmark(services.backend);
    // Per test: (direct rps, through rps, direct p50 ms, through p50 ms) of every round.
    let mut rounds: std::collections::BTreeMap<String, [Vec<f64>; 4]> = Default::default();
    if let Some(bin) = &bench {
        for round in 0..ROUNDS {
            // Alternate which side goes first, so a drift of the machine falls on both.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let url = if side == 0 { &direct_url } else { &through_url };
                for row in benchmark(bin, url, &key).await? {
                    let r = rounds.entry(row.test).or_default();
                    r[side].push(row.rps);
                    if let Some(p) = row.p50_ms {
                        r[2 + side].push(p);
                    }
                }
            }
        }
    }
    let mut rows = Vec::new();
    let ping = redis::cmd("PING");
    let mut xadd = redis::cmd("XADD");
    for a in &xadd_args(&key)[1..] {
        xadd.arg(a);
    }
    for (test, label, cmd) in [("PING_MBULK", "PING (redis)", &ping), ("XADD", "XADD (redis)", &xadd)] {
        let r = rounds.get(test);
        let rps = r.filter(|r| !r[0].is_empty() && !r[1].is_empty()).map(|r| (p50(&r[0]), p50(&r[1])));
        let m = match r.filter(|r| !r[2].is_empty() && !r[3].is_empty()) {
            Some(r) => Measured {
                what: label.into(),
                rps,
                p50_us: (p50(&r[2]) * 1000.0, p50(&r[3]) * 1000.0),
                how: "redis-benchmark p50 column",
            },
            None => {
                let d = redis_loop(&direct_url, cmd, REDIS_LOOP).await?;
                let t = redis_loop(&through_url, cmd, REDIS_LOOP).await?;
                Measured { what: label.into(), rps, p50_us: (p50(&d), p50(&t)), how: "redis-rs loop of 5000" }
            }
        };
        rows.push(m);
    }
    let d = pg_loop(&services.pg_config, PG_LOOP).await?;
    let t = pg_loop(&pg_through, PG_LOOP).await?;
    rows.push(Measured {
        what: "SELECT 1 (postgres)".into(),
        rps: None,
        p50_us: (p50(&d), p50(&t)),
        how: "tokio-postgres loop of 2000",
    });
    drop(redis_endpoint);
    drop(pg_endpoint);
    // Every sender is gone once the endpoints' connections end; what was sent is counted.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    drain.abort();
    Ok((rows, events.load(Ordering::Relaxed), bench))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_with_and_without_latency_columns() {
        let new = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"PING_MBULK\",\"22222.22\",\"0.038\",\"0.024\",\"0.039\",\"0.047\",\"0.087\",\"0.215\"\n\
                   \"XADD\",\"18348.62\",\"0.047\",\"0.024\",\"0.047\",\"0.071\",\"0.111\",\"0.383\"\n";
        assert_eq!(
            parse_csv(new),
            vec![
                CsvRow { test: "PING_MBULK".into(), rps: 22222.22, p50_ms: Some(0.039) },
                CsvRow { test: "XADD".into(), rps: 18348.62, p50_ms: Some(0.047) },
            ]
        );
        let old = "WARNING: something\n\"PING_MBULK\",\"19047.62\"\n";
        assert_eq!(parse_csv(old), vec![CsvRow { test: "PING_MBULK".into(), rps: 19047.62, p50_ms: None }]);
        assert!(parse_csv("").is_empty());
    }

    /// Every key the bench writes is under the run's namespace: the redis-rs XADD's and
    /// redis-benchmark's (never its `-t xadd` test, whose key is `mystream`).
    #[test]
    fn the_bench_writes_only_under_the_runs_namespace() {
        let key = stream_key("1a2b3c4d");
        assert_eq!(crate::service::namespace::nonce_of(key.as_bytes()), Some(&b"1a2b3c4d"[..]));
        let [ping, xadd] = benchmark_args("redis://127.0.0.1:6379/", &key);
        assert_eq!(ping[ping.len() - 2..], ["-t", "ping_mbulk"]);
        assert_eq!(xadd[xadd.len() - 8..], ["XADD", key.as_str(), "MAXLEN", "~", "10000", "*", "field", "value"]);
        assert!(!xadd.contains(&"-t".to_string()), "{xadd:?}");
    }

    #[test]
    fn p50_is_the_nearest_rank_median() {
        assert_eq!(p50(&[30.0, 10.0, 20.0]), 20.0);
        assert_eq!(p50(&[4.0, 1.0, 3.0, 2.0]), 2.0);
        assert!(p50(&[]).is_nan());
    }

    #[test]
    fn the_through_url_keeps_everything_but_host_and_port() {
        let addr: std::net::SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(with_addr("redis://127.0.0.1:6379/", addr), "redis://127.0.0.1:40001/");
        assert_eq!(
            with_addr("redis://:pw@localhost:6379/0?protocol=resp3", addr),
            "redis://:pw@127.0.0.1:40001/0?protocol=resp3"
        );
        assert_eq!(with_addr("redis://127.0.0.1:6379", addr), "redis://127.0.0.1:40001");
    }
}
