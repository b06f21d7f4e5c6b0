//! Every action of the fault layer on a real server and a real process: a Python worker
//! (redis-py) behind the interposer, its faults declared as a scenario declares them, each
//! action's effect measured where it must show (the process's next command after a pause, the
//! key a lost reply still wrote, the command a reset never delivered, the connections refused,
//! the clock the process reads, what a restarted server kept).

use super::support;
use ordlab::fault::process::{ClockSkew, ProcessHandle};
use ordlab::fault::{Fault, FaultEvent, Injector, TimeScale};
use ordlab::interposer::redis::RedisSetup;
use ordlab::interposer::{upstream_of, Endpoint, WorkerTap};
use ordlab::service::start_local_redis;
use ordlab::timeline::{Actor, EventKind, RawEvent};
use std::os::unix::process::CommandExt as _;
use std::time::Duration;
use tokio::sync::mpsc;

/// The faults of a `faults = [...]` table.
fn faults(toml_text: &str) -> Vec<Fault> {
    #[derive(serde::Deserialize)]
    struct T {
        faults: Vec<Fault>,
    }
    toml::from_str::<T>(&format!("faults = {toml_text}")).expect("faults parse").faults
}

/// Why redis-py cannot be used here, if so.
fn python_missing() -> Option<String> {
    match std::process::Command::new("python3").args(["-c", "import redis"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").to_string()),
        Err(e) => Some(format!("python3: {e}")),
    }
}

/// A Python worker behind an endpoint with `faults`: its stdout lines, its exit, the events.
struct Run {
    out: Vec<String>,
    status: std::process::ExitStatus,
    events: Vec<RawEvent>,
}

/// Run `script` (Python; `r` is a redis-py client of the endpoint that never retries, `URL` its
/// URL) as W1 behind an interposer endpoint to `redis_url` with `faults`; `skew`: started
/// with a skewable clock. `during` runs while the process does, given its pid.
async fn run_worker(
    redis_url: &str,
    faults: Vec<Fault>,
    script: &str,
    skew: Option<ClockSkew>,
    during: impl FnOnce(u32) -> tokio::task::JoinHandle<Vec<String>>,
) -> (Run, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut process = ProcessHandle::new(TimeScale::REAL);
    let mut env = Vec::new();
    if let Some(skew) = skew {
        env = skew.env();
        process = process.with_skew(skew);
    }
    let tap = WorkerTap::new(Actor::Worker(1), Injector::new(faults, 1), tx, process.clone());
    let endpoint =
        Endpoint::redis(upstream_of(redis_url).await.unwrap(), tap.clone(), RedisSetup::default()).await.unwrap();
    let url = format!("redis://{}/0", endpoint.addr);
    let prelude = format!(
        "import redis, sys, time\nfrom redis.retry import Retry\nfrom redis.backoff import NoBackoff\nURL = {url:?}\n\
         r = redis.Redis.from_url(URL, retry=Retry(NoBackoff(), 0), socket_timeout=5)\n\
         def say(*a):\n    print(*a, flush=True)\n"
    );
    let child = tokio::process::Command::from({
        let mut c = std::process::Command::new("python3");
        c.args(["-c", &format!("{prelude}{script}")]).envs(env).process_group(0);
        c
    })
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .expect("python3 starts");
    let pid = child.id().unwrap();
    process.started(pid);
    let timer = tap.start();
    let watcher = during(pid);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends within a minute")
        .unwrap();
    timer.abort();
    drop((endpoint, tap));
    let seen = watcher.await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let lines = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !err.trim().is_empty() {
        eprintln!("worker stderr: {err}");
    }
    (Run { out: lines, status: out.status, events }, seen)
}

fn nothing(_: u32) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async { Vec::new() })
}

/// The faults that fired, as their events recorded them.
fn fired(events: &[RawEvent]) -> Vec<Fault> {
    events
        .iter()
        .filter_map(|e| match e.kind.family::<FaultEvent>() {
            Some(FaultEvent::FaultFired { fault, .. }) => Some(fault),
            _ => None,
        })
        .collect()
}

/// The worker's commands as recorded at the wire: (sent_ns, replied_ns, first word, reply).
fn exchanges(events: &[RawEvent]) -> Vec<(u64, u64, String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ServerCommand { args, reply, round_trip_us, .. } => {
                let sent = e.mono_ns - round_trip_us.unwrap_or(0) as u64 * 1000;
                Some((sent, e.mono_ns, args[0].clone(), reply.clone()))
            }
            _ => None,
        })
        .collect()
}

async fn get(url: &str, key: &str) -> Option<String> {
    let mut direct = ordlab::connect::redis(url).await.unwrap();
    redis::cmd("GET").arg(key).query_async(&mut direct).await.unwrap()
}

#[tokio::test]
async fn a_pause_stops_the_process_and_its_next_command_comes_after_the_pause() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "INCR", nth = 5, at = "reply", action = { pause_ms = 800 } }]"#);
    let script = "for i in range(10):\n    r.execute_command('INCR', 'n')\n    time.sleep(0.005)\nsay('done')\n";
    // While it is paused, the kernel says so: state T (stopped) in /proc/<pid>/stat.
    let states = |pid: u32| {
        tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..40 {
                if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                    let state = stat.rsplit_once(") ").and_then(|(_, r)| r.split(' ').next()).unwrap_or("?");
                    seen.push(state.to_string());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        })
    };
    let (run, states) = run_worker(&server.url, f, script, None, states).await;
    assert_eq!(run.out, ["done"], "the worker ran to its end");
    let incr: Vec<_> = exchanges(&run.events).into_iter().filter(|x| x.2 == "INCR").collect();
    assert_eq!(incr.len(), 10);
    let gaps: Vec<u64> = incr.windows(2).map(|w| (w[1].0.saturating_sub(w[0].1)) / 1_000_000).collect();
    // INCR #6 was sent at least the pause after INCR #5's reply; no other gap comes near it.
    assert!(gaps[4] >= 790, "the 5th → 6th gap is {} ms: {gaps:?}", gaps[4]);
    assert!(gaps.iter().enumerate().all(|(i, g)| i == 4 || *g < 400), "{gaps:?}");
    assert!(states.iter().any(|s| s == "T"), "never seen stopped: {states:?}");
    assert_eq!(fired(&run.events).len(), 1);
    let over = run.events.iter().any(|e| matches!(e.kind.family::<FaultEvent>(), Some(FaultEvent::FaultOver { .. })));
    assert!(over, "the pause's end is recorded");
    server.stop().await;
}

#[tokio::test]
async fn a_lost_reply_was_executed_by_the_server_and_never_heard_by_the_process() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "SET", at = "reply", action = "lose-reply" }]"#);
    let script = "t = time.monotonic()\ntry:\n    r.set('lost', 'written')\n    say('ok')\nexcept redis.ConnectionError as e:\n    say('error', round((time.monotonic() - t) * 1000))\n";
    let (run, _) = run_worker(&server.url, f, script, None, nothing).await;
    let heard: Vec<&str> = run.out.iter().flat_map(|l| l.split(' ')).collect();
    assert_eq!(heard.first(), Some(&"error"), "the process never heard the reply: {:?}", run.out);
    // The connection closes once the client surely waits for the reply (a close before its
    // read lets phpredis reconnect without a word): not before REPLY_WITHHELD_CLOSE_AFTER.
    let waited_ms: u64 = heard[1].parse().unwrap();
    let at_least = ordlab::interposer::REPLY_WITHHELD_CLOSE_AFTER.as_millis() as u64;
    assert!(waited_ms + 2 >= at_least, "closed {waited_ms} ms after the SET, before the client waited");
    assert_eq!(get(&server.url, "lost").await.as_deref(), Some("written"), "the server did the SET");
    let x = exchanges(&run.events);
    assert!(x.iter().any(|x| x.2 == "SET" && x.3.ends_with("(not passed on)")), "{x:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_reset_at_the_send_never_reaches_the_server_and_the_process_sees_a_reset() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "SET", at = "send", action = "reset" }]"#);
    let script = "try:\n    r.set('never', 'x')\n    say('ok')\nexcept redis.ConnectionError as e:\n    say('error', 'reset' in str(e).lower(), e)\n";
    let (run, _) = run_worker(&server.url, f, script, None, nothing).await;
    assert!(
        run.out.len() == 1 && run.out[0].starts_with("error True"),
        "the connection was reset (RST), not closed: {:?}",
        run.out
    );
    assert_eq!(get(&server.url, "never").await, None, "the SET never reached the server");
    server.stop().await;
}

#[tokio::test]
async fn a_delay_holds_the_command_at_the_wire() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "SET", nth = 2, at = "send", action = { delay_ms = 600 } }]"#);
    let script = "for i in range(3):\n    t = time.monotonic()\n    r.set('k', i)\n    say(round((time.monotonic() - t) * 1000))\n";
    let (run, _) = run_worker(&server.url, f, script, None, nothing).await;
    let ms: Vec<u64> = run.out.iter().map(|l| l.parse().unwrap()).collect();
    assert!(ms[1] >= 590 && ms[0] < 300 && ms[2] < 300, "the second SET took the delay: {ms:?}");
    server.stop().await;
}

#[tokio::test]
async fn refused_connections_are_reset_until_the_window_ends() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "PING", at = "reply", action = { refuse_connections_ms = 1000 } }]"#);
    // The open connection keeps working; each new one is tried every 100 ms for 2 s.
    let script = "r.ping()\nt0 = time.monotonic()\nwhile time.monotonic() - t0 < 2.0:\n    \
                  c = redis.Redis.from_url(URL, retry=Retry(NoBackoff(), 0), socket_timeout=2)\n    \
                  try:\n        c.get('k')\n        ok = 1\n    except redis.ConnectionError:\n        ok = 0\n    \
                  say(round((time.monotonic() - t0) * 1000), ok)\n    c.close()\n    time.sleep(0.1)\n\
                  r.get('k')\nsay('still', 1)\n";
    let (run, _) = run_worker(&server.url, f, script, None, nothing).await;
    let tries: Vec<(u64, u8)> = run
        .out
        .iter()
        .filter(|l| !l.starts_with("still"))
        .map(|l| {
            let (t, ok) = l.split_once(' ').unwrap();
            (t.parse().unwrap(), ok.parse().unwrap())
        })
        .collect();
    assert!(tries.iter().filter(|(t, _)| *t < 800).all(|(_, ok)| *ok == 0), "refused in the window: {tries:?}");
    assert!(tries.iter().filter(|(t, _)| *t > 1300).all(|(_, ok)| *ok == 1), "accepted after it: {tries:?}");
    assert!(run.out.last().is_some_and(|l| l == "still 1"), "the open connection was never cut: {:?}", run.out);
    server.stop().await;
}

#[tokio::test]
async fn a_kill_at_the_reply_kills_the_real_process_after_the_server_did_the_command() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(r#"[{ command = "SET", at = "reply", action = "kill" }]"#);
    let script = "say('started')\nr.set('k', 'v')\nsay('survived')\n";
    let (run, _) = run_worker(&server.url, f, script, None, nothing).await;
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(run.status.signal(), Some(9), "SIGKILLed: {:?}", run.status);
    assert_eq!(run.out, ["started"]);
    assert_eq!(get(&server.url, "k").await.as_deref(), Some("v"));
    server.stop().await;
}

#[tokio::test]
async fn a_skew_shifts_the_process_s_wall_clock_from_its_start_and_again_when_it_fires() {
    if !support::has_runtime("python3 with redis-py (just setup)", python_missing()) {
        return;
    }
    if !support::has_runtime(
        "libfaketime (Debian's faketime; just setup)",
        ordlab::fault::process::libfaketime().err().map(|e| e.to_string()),
    ) {
        return;
    }
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let f = faults(
        r#"[{ start = true, action = { skew_ms = 3600000 } },
            { command = "PING", at = "reply", action = { skew_ms = -7200000 } }]"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let skew = ClockSkew::new(dir.path(), "W1").unwrap();
    let script = "say(time.time())\nr.ping()\nsay(time.time())\n";
    let (run, _) = run_worker(&server.url, f, script, Some(skew), nothing).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let seen: Vec<f64> = run.out.iter().map(|l| l.parse().unwrap()).collect();
    assert!((seen[0] - now - 3600.0).abs() < 30.0, "an hour ahead from the start: {} vs {now}", seen[0]);
    assert!((seen[1] - now + 7200.0).abs() < 30.0, "two hours behind after the PING: {} vs {now}", seen[1]);
    assert_eq!(fired(&run.events).len(), 2);
    server.stop().await;
}

#[tokio::test]
async fn a_restart_kills_the_server_and_starts_it_on_its_files_with_its_persistence() {
    use ordlab::fault::server::ServerFaults;
    use ordlab::service::{NodeSpec, Services};
    let services = Services::start(&support::local()).await.expect("local servers start");
    let f = faults(r#"[{ on = "redis", after_ms = 0, action = "restart" }]"#);
    let mut kept = Vec::new();
    for mode in [
        &["--appendonly", "no"][..],
        &["--appendonly", "yes", "--appendfsync", "always"],
        &["--appendonly", "yes", "--appendfsync", "everysec"],
    ] {
        let mut args = vec!["--save", ""];
        args.extend_from_slice(mode);
        let mut node = services.start_redis_node(&NodeSpec::new(args)).await.expect("a node starts");
        let mut conn = ordlab::connect::redis(&node.url).await.unwrap();
        for i in 0..200 {
            let _: i64 = redis::cmd("RPUSH").arg("q").arg(i).query_async(&mut conn).await.unwrap();
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let faults = ServerFaults::new(&f, 1, TimeScale::REAL);
        faults.run(&mut node, std::time::Instant::now(), &tx).await.expect("the restart");
        let mut conn = ordlab::connect::redis(&node.url).await.unwrap();
        let len: i64 = redis::cmd("LLEN").arg("q").query_async(&mut conn).await.unwrap();
        kept.push(len);
        let mut kinds = Vec::new();
        while let Ok(e) = rx.try_recv() {
            kinds.push(match e.kind.family::<FaultEvent>() {
                Some(FaultEvent::FaultFired { .. }) => "fired",
                Some(FaultEvent::FaultOver { .. }) => "over",
                None if matches!(e.kind, EventKind::ServerKilled { .. }) => "killed",
                None => "other",
            });
        }
        assert_eq!(kinds, ["fired", "killed", "over"]);
        node.stop().await;
    }
    // Without persistence the restarted server is empty (a restart that did not kill would
    // still hold the 200); with an AOF it has every acknowledged push: a process kill keeps
    // the kernel's page cache, which everysec had written to before it replied.
    assert_eq!(kept, [0, 200, 200]);
    services.stop().await;
}
