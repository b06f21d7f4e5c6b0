//! The Docker backend against a real engine: a lab end to end in containers, `auto` falling
//! back to local servers when an image is missing, a container that fails to start, Ctrl-C
//! while the containers are created and while the lab runs, SIGKILL followed by one more run
//! (the reaper), and the Redis node API in containers. They need an engine with the images
//! `redis:8` and `postgres:18` (`../shared/tools/dockerd.sh start`,
//! `../shared/tools/docker-images.sh --default-tags`), so they are ignored by default; `just
//! test` runs them (one at a time) when an engine answers, and prints "NOT TESTED: docker
//! backend (…)" when none does. Every leak test checks that containers were created before it
//! checks that none is left, and prints the counts.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bollard::query_parameters::{EventsOptions, ListContainersOptions, ListNetworksOptions};
use bollard::Docker;
use futures_util::StreamExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::support;
use ordlab::labs::delivery::failover::FailoverSpec;
use ordlab::service::{Backend, BackendChoice, ServiceOptions, Services};

/// The engine, reached directly (not through ordlab), to see what ordlab left.
struct Engine {
    rt: tokio::runtime::Runtime,
    docker: Docker,
}

impl Engine {
    fn connect() -> Engine {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let docker = rt.block_on(async {
            let docker = Docker::connect_with_defaults().expect("DOCKER_HOST or /var/run/docker.sock");
            docker.ping().await.expect(
                "no Docker engine answers: ../shared/tools/dockerd.sh start && ../shared/tools/docker-images.sh --default-tags",
            );
            docker.negotiate_version().await.unwrap()
        });
        Engine { rt, docker }
    }

    fn owner_filter(pid: u32) -> HashMap<String, Vec<String>> {
        HashMap::from([("label".to_string(), vec![format!("org.ordlab.owner.pid={pid}")])])
    }

    /// Containers (any state) and networks whose owner label is `pid`.
    fn left_by(&self, pid: u32) -> (usize, usize) {
        self.rt.block_on(async {
            let filters = Some(Self::owner_filter(pid));
            let containers = self
                .docker
                .list_containers(Some(ListContainersOptions {
                    all: true,
                    filters: filters.clone(),
                    ..Default::default()
                }))
                .await
                .unwrap();
            let networks = self.docker.list_networks(Some(ListNetworksOptions { filters })).await.unwrap();
            (containers.len(), networks.len())
        })
    }

    /// How many containers owned by `pid` the engine created since `since` (its event log).
    fn created_by(&self, pid: u32, since: SystemTime) -> usize {
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        let mut filters = Self::owner_filter(pid);
        filters.insert("type".into(), vec!["container".into()]);
        filters.insert("event".into(), vec!["create".into()]);
        let options = EventsOptions {
            since: Some(format!("{:.3}", secs(since) - 1.0)),
            until: Some(format!("{:.3}", secs(SystemTime::now()) + 1.0)),
            filters: Some(filters),
        };
        self.rt.block_on(self.docker.events(Some(options)).count())
    }

    /// Loopback-only publishing: every published port of `pid`'s running containers.
    fn published_ips(&self, pid: u32) -> Vec<String> {
        self.rt.block_on(async {
            let filters = Some(Self::owner_filter(pid));
            let list = self
                .docker
                .list_containers(Some(ListContainersOptions { filters, ..Default::default() }))
                .await
                .unwrap();
            list.iter()
                .flat_map(|c| c.ports.iter().flatten())
                .filter(|p| p.public_port.is_some())
                .map(|p| p.ip.clone().unwrap_or_default())
                .collect()
        })
    }
}

/// `ordlab run baseline …` in containers, `extra` args appended.
fn ordlab_run(tmp: &std::path::Path, extra: &[&str]) -> std::process::Command {
    let mut cmd = support::ordlab(tmp);
    cmd.args(["run", "baseline", "--time-scale", "0.25", "--quiet"]).args(extra).stdout(Stdio::null());
    cmd.env_remove("ORDLAB_REDIS_IMAGE").env_remove("ORDLAB_PG_IMAGE");
    cmd
}

fn finish(mut child: Child) -> (Option<i32>, String) {
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut stderr).unwrap();
    }
    (status.code(), stderr)
}

/// Asserts that `pid` created containers, then that none of them (and no network) is left.
fn assert_nothing_left(engine: &Engine, case: &str, pid: u32, since: SystemTime, min_created: usize) {
    let created = engine.created_by(pid, since);
    let (containers, networks) = engine.left_by(pid);
    eprintln!(
        "leak check [docker, {case}]: created {created} containers; left {containers} containers, {networks} networks"
    );
    assert!(created >= min_created, "{case}: expected ≥ {min_created} containers created, the engine saw {created}");
    assert_eq!((containers, networks), (0, 0), "{case}: containers/networks left");
}

fn sigint(child: &Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
}

/// Polls every 2 ms until `cond` holds (true) or `secs` pass (false).
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> Option<f64> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        if cond() {
            return Some(start.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn auto_runs_a_lab_in_containers_published_on_loopback() {
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let child = ordlab_run(tmp.path(), &["--runs", "2", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut ips = Vec::new();
    wait_for(120, || {
        ips = engine.published_ips(pid);
        ips.len() >= 2 || !support::alive(pid)
    });
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "auto chose Docker without a word: {stderr}");
    let report: ordlab::report::LabReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.environment.backend, "docker");
    assert!(report.matched(), "the bug shows in containers as it does locally");
    assert!(ips.len() >= 2 && ips.iter().all(|ip| ip == "127.0.0.1"), "published on {ips:?}");
    assert_nothing_left(&engine, "a run", pid, since, 2);
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn auto_without_an_image_runs_locally_and_says_why() {
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let child = ordlab_run(tmp.path(), &["--runs", "1", "--format", "json"])
        .env("ORDLAB_PG_IMAGE", "ordlab-test/no-such-image:1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("using local servers") && stderr.contains("ordlab-test/no-such-image:1"), "{stderr}");
    let report: ordlab::report::LabReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.environment.backend, "local");
    assert_eq!(engine.created_by(pid, since), 0, "no container for a run that fell back");
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn a_container_that_fails_to_start_takes_the_other_along() {
    let engine = Engine::connect();
    // The PostgreSQL container runs the Redis image: `postgres` is not there, its start fails
    // while the Redis container starts. Then the other way round: the Redis container runs the
    // PostgreSQL image, whose entrypoint exits, while PostgreSQL initialises.
    for (case, flag, image, says) in [
        ("pg start fails", "--pg-image", "redis:8", "postgres container (image redis:8)"),
        ("redis exits", "--redis-image", "postgres:18", "redis container (image postgres:18)"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let since = SystemTime::now();
        let child =
            ordlab_run(tmp.path(), &["--backend", "docker", flag, image]).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let (code, stderr) = finish(child);
        assert_eq!(code, Some(2), "{case}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{case}: {stderr}");
        assert!(stderr.contains(says), "{case}: {stderr}");
        assert_nothing_left(&engine, case, pid, since, 2);
    }
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn ctrl_c_while_the_containers_are_created_leaves_nothing() {
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let child =
        ordlab_run(tmp.path(), &["--backend", "docker", "--runs", "50"]).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    // The first container exists (created, maybe not started): interrupt now.
    let at = wait_for(60, || engine.left_by(pid).0 > 0).expect("no container was ever created");
    sigint(&child);
    let (code, stderr) = finish(child);
    eprintln!("interrupted {at:.3} s after the start");
    assert_eq!(code, Some(130), "{stderr}");
    assert_nothing_left(&engine, "Ctrl-C while creating", pid, since, 1);
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn ctrl_c_while_the_lab_runs_leaves_nothing() {
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let child =
        ordlab_run(tmp.path(), &["--backend", "docker", "--runs", "50"]).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let at = wait_for(120, || support::is_role_running(pid)).expect("the lab never started");
    sigint(&child);
    let (code, stderr) = finish(child);
    eprintln!("interrupted {at:.3} s after the start");
    assert_eq!(code, Some(130), "{stderr}");
    assert_nothing_left(&engine, "Ctrl-C while the lab runs", pid, since, 2);
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn the_next_run_reclaims_the_containers_of_a_sigkilled_run() {
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let mut child =
        ordlab_run(tmp.path(), &["--backend", "docker", "--runs", "50"]).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id();
    wait_for(120, || support::is_role_running(pid)).expect("the lab never started");
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let (containers, networks) = engine.left_by(pid);
    eprintln!("leak check [docker, SIGKILL]: left {containers} containers, {networks} networks");
    assert_eq!(containers, 2, "a SIGKILLed run cannot remove its containers");

    let next = ordlab_run(tmp.path(), &["--backend", "docker", "--runs", "1"]).stderr(Stdio::piped()).spawn().unwrap();
    let next_pid = next.id();
    let (code, stderr) = finish(next);
    assert_eq!(code, Some(0), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("reclaimed")).unwrap_or_else(|| panic!("no reclaim line: {stderr}"));
    assert!(line.contains("2 containers") && line.contains(&pid.to_string()), "{line}");
    assert_nothing_left(&engine, "SIGKILL, then one more run", pid, since, 2);
    assert_nothing_left(&engine, "the run after the SIGKILL", next_pid, since, 2);
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn redis_nodes_in_containers() {
    let engine = Engine::connect();
    let since = SystemTime::now();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let opts = ServiceOptions { backend: BackendChoice::Docker, ..ServiceOptions::default() };
        let services = Services::start(&opts).await.unwrap();
        assert_eq!(services.backend, Backend::Docker);
        // Without the password the server refuses.
        let (_, host) = services.redis_url.split_once('@').expect("a password in the URL");
        let anonymous = redis::Client::open(format!("redis://{host}")).unwrap();
        let mut con = anonymous.get_multiplexed_async_connection().await.unwrap();
        let err = redis::cmd("PING").query_async::<String>(&mut con).await.unwrap_err();
        assert!(err.to_string().contains("NOAUTH"), "{err}");
        super::redis_nodes::exercise(&services).await;
        services.stop().await;
    });
    // Three cluster nodes, a primary, a replica, a restarted node and the two servers.
    assert_nothing_left(&engine, "nodes", std::process::id(), since, 8);
}

/// `ordlab run failover --variant <variant>` on Docker: the report, once no container is left.
fn failover_on_docker(engine: &Engine, variant: &str, runs: u32) -> ordlab::report::LabReport {
    let tmp = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let mut cmd = support::ordlab(tmp.path());
    cmd.args(["run", "failover", "--backend", "docker", "--variant", variant, "--time-scale", "0.5", "--quiet"])
        .args(["--runs", &runs.to_string(), "--seed", "7", "--format", "json"])
        .env_remove("ORDLAB_REDIS_IMAGE")
        .env_remove("ORDLAB_PG_IMAGE");
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{variant}: {stderr}");
    // The two servers, then a primary and a replica container per run.
    assert_nothing_left(engine, &format!("failover {variant}"), pid, since, 2 + 2 * runs as usize);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Bytes of replication stream the harness's link carried from the primary in one run
/// (None: the replica replicated directly).
fn link_bytes(r: &ordlab::labs::RunRecord) -> Option<u64> {
    let ordlab::labs::Observed::Failover(o) = &r.observed else { panic!("not a failover run") };
    o.link.map(|l| l.from_primary)
}

#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn failover_runs_on_redis_containers_with_the_link_reached_from_the_network() {
    let engine = Engine::connect();
    // Through the link: the replica container reaches the harness's proxy on the gateway of
    // the run's network, and the replication stream goes through it.
    let report = failover_on_docker(&engine, "latency-plain", 2);
    assert_eq!(report.environment.backend, "docker");
    assert!(report.environment.redis_server.starts_with("image "), "{}", report.environment.redis_server);
    let v = support::variant(&report, "latency-plain");
    assert_eq!(v.unknown, 0, "{:?}", v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>());
    let runs: Vec<_> = v.run_records.iter().map(|r| support::facts::<FailoverSpec>(v, r)).collect();
    for (r, f) in v.run_records.iter().zip(&runs) {
        assert!(link_bytes(r).is_some_and(|b| b > 0) && f.stuck_pending == 0, "{f:?}");
    }
    // A 100 ms link at 400 events/s (50 ms at 800/s under --time-scale 0.5) holds ~40
    // confirmed entries; the sum over two runs is 0 only if the producer published nothing
    // in the 50 ms before both kills.
    assert!(runs.iter().map(|f| f.lost_entries).sum::<i64>() > 0, "{runs:?}");
    // Directly on the network (REPLICAOF the primary container's address): ~nothing lost.
    let report = failover_on_docker(&engine, "no-lag", 1);
    let v = support::variant(&report, "no-lag");
    assert_eq!(v.unknown, 0, "{:?}", v.run_records.iter().map(|r| &r.verdict).collect::<Vec<_>>());
    let f = support::facts::<FailoverSpec>(v, &v.run_records[0]);
    assert_eq!(link_bytes(&v.run_records[0]), None);
    assert!(f.lost_entries <= 5 && f.wrong_stale == 0 && f.stuck_pending == 0, "{f:?}");
    assert!(report.matched());
}

/// SIGKILL at seeded-random moments in containers, as `kill::` does on the local backend:
/// `baseline` killed while its containers are created, while it runs and while they are
/// removed, and `failover` (Redis nodes of its own, in containers); one more run reclaims every
/// container and network the killed runs left, and no process of theirs is alive.
#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn sigkill_at_random_moments_in_containers_leaves_nothing_after_one_more_run() {
    use rand::{Rng, SeedableRng};
    let engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("{:016x}", rand::random::<u64>());
    let run = |args: &[&str]| {
        let mut cmd = support::ordlab(tmp.path());
        cmd.arg("run").args(args).args(["--backend", "docker", "--time-scale", "0.25", "--quiet"]);
        cmd.env_remove("ORDLAB_REDIS_IMAGE").env_remove("ORDLAB_PG_IMAGE").env("ORDLAB_KILL_TEST", &marker);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    };
    let labs: [(&[&str], usize); 2] =
        [(&["baseline", "--runs", "2"], 4), (&["failover", "--variant", "no-lag", "--runs", "1"], 2)];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
    let since = SystemTime::now();
    let mut killed = Vec::new();
    for (args, n) in labs {
        // The span of a whole run, measured: the moments fall over it and a little past it.
        let t = Instant::now();
        let status = run(args).status().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}");
        let span = t.elapsed();
        for _ in 0..n {
            let at = span.mul_f64(rng.random_range(0.0..1.05));
            let mut child = run(args).spawn().unwrap();
            std::thread::sleep(at);
            kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
            child.wait().unwrap();
            let (containers, networks) = engine.left_by(child.id());
            eprintln!(
                "{} killed at {:.2}/{:.2} s: left {containers} containers, {networks} networks",
                args[0],
                at.as_secs_f64(),
                span.as_secs_f64()
            );
            killed.push((child.id(), containers + networks));
        }
    }
    assert!(
        killed.iter().any(|(_, left)| *left > 0),
        "the kills left nothing to reclaim: the moments missed every run"
    );

    let next = run(&["baseline", "--runs", "1"]).stderr(Stdio::piped()).spawn().unwrap();
    let next_pid = next.id();
    let (code, stderr) = finish(next);
    assert_eq!(code, Some(0), "{stderr}");
    for (pid, _) in &killed {
        assert_eq!(engine.left_by(*pid), (0, 0), "run {pid}'s containers/networks are left ({stderr})");
    }
    assert_nothing_left(&engine, "the run after the kills", next_pid, since, 2);
    assert!(
        support::eventually(15, || super::kill::marked(&marker).is_empty()),
        "processes left: {:?}",
        super::kill::marked(&marker)
    );
    assert!(support::entries(tmp.path()).is_empty(), "left in the private root: {:?}", support::entries(tmp.path()));
}

/// Behind the interposer on a password-protected server: `explore` (ordlab's own roles through
/// gated endpoints) and a worker from a command line (redis-py) get password-less endpoints,
/// and the interposer authenticates upstream itself.
#[test]
#[ignore = "needs a Docker engine with redis:8 and postgres:18 (just test runs it when one answers)"]
fn processes_behind_the_interposer_reach_password_protected_containers() {
    let _engine = Engine::connect();
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = support::ordlab(tmp.path());
        cmd.args(args).args(["--backend", "docker"]).env_remove("ORDLAB_REDIS_IMAGE").env_remove("ORDLAB_PG_IMAGE");
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), text)
    };
    let (code, text) = run(&["explore", "s1"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("explored: 0 of 5 classes wrong"), "{text}");
    let python = super::foreign_workers::missing(&super::foreign_workers::PYTHON);
    if support::has_runtime("python3 with redis-py and psycopg", python) {
        let (code, text) =
            run(&["run", "foreign-ordering", "--variant", "python-plain", "--runs", "1", "--time-scale", "0.25"]);
        assert!(code.is_some_and(|c| c <= 1), "{text}");
        assert!(text.contains("wrong final state (not paid): 1/1 runs"), "{text}");
    }
}
