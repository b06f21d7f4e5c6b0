//! Bad input gets one clear line naming the problem and the fix, and exit code 2.

use super::support;

fn run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = support::ordlab(tmp.path());
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_one_line(stderr: &str) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "expected one line, got: {stderr}");
}

#[test]
fn list_shows_the_built_in_labs() {
    let (code, stdout, _) = run(&["list"], &[]);
    assert_eq!(code, Some(0));
    assert!(stdout.lines().any(|l| l.starts_with("baseline ") && l.contains("seed 001, 08a")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("s1 ")), "{stdout}");
}

#[test]
fn unknown_lab_lists_the_known_ids() {
    let (code, _, stderr) = run(&["run", "nope"], &[]);
    assert_eq!(code, Some(2));
    assert_one_line(&stderr);
    assert!(
        stderr.contains("unknown scenario \"nope\"") && stderr.contains("baseline") && stderr.contains("s1"),
        "{stderr}"
    );
}

#[test]
fn malformed_scenario_file_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    let text = std::fs::read_to_string("scenarios/baseline.toml").unwrap().replace("consumers = 2", "consumers = = 2");
    std::fs::write(&path, &text).unwrap();
    let line = text.lines().position(|l| l.starts_with("consumers = =")).unwrap() + 1;
    let (code, _, stderr) = run(&["run", path.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2));
    assert_one_line(&stderr);
    assert!(stderr.contains(&format!("mine.toml:{line}:13: ")), "{stderr}");
}

#[test]
fn missing_redis_server_says_what_to_install() {
    let (code, _, stderr) =
        run(&["run", "baseline", "--backend", "local"], &[("ORDLAB_REDIS_SERVER", "/nonexistent/redis-server")]);
    assert_eq!(code, Some(2));
    assert_one_line(&stderr);
    assert!(stderr.contains("redis-server") && stderr.contains("apt-get install"), "{stderr}");
}

#[test]
fn unreachable_external_server_is_named_without_its_password() {
    let (code, _, stderr) = run(
        &[
            "run",
            "baseline",
            "--backend",
            "external",
            "--redis-url",
            "redis://:hunter2@127.0.0.1:1/",
            "--pg-url",
            "host=127.0.0.1 port=1 user=x password=hunter2",
        ],
        &[],
    );
    assert_eq!(code, Some(2));
    assert_one_line(&stderr);
    // Both servers are probed at once; whichever fails first is named.
    assert!(
        stderr.contains("cannot reach") && (stderr.contains("127.0.0.1:1") || stderr.contains("port=1")),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "password printed: {stderr}");
}

#[test]
fn a_saved_run_is_checked_without_servers() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) =
        run(&["run", "s1", "--runs", "1", "--time-scale", "0.25", "--out", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let saved = dir.path().join("s1.json.gz");
    let (code, checked, _) = run(&["check", saved.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0));
    let verdict = |s: &str| s.lines().find(|l| l.contains("→ wrong")).map(str::to_string);
    assert_eq!(verdict(&checked), verdict(&stdout));
    assert_eq!(std::fs::read_to_string(dir.path().join("s1.txt")).unwrap(), stdout);

    std::fs::write(&saved, "{\"schema_version\": 99}").unwrap();
    let (code, _, stderr) = run(&["check", saved.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2));
    assert_one_line(&stderr);
    assert!(stderr.contains("schema version 99"), "{stderr}");
}

/// The cheap checks come first: each bad input gets one `ordlab:` line and exit 2 in under
/// 0.1 s, and no server was started. The redis-server ordlab would run is a shim that leaves a
/// mark when it is run at all (even for `--version`), so a server looked for or started
/// shows. The time is the best of up to ten tries; on a machine so loaded (other tests start
/// servers beside this one) that even `ordlab --version` takes 0.1 s, within 50 ms of
/// `--version`'s best, tried in turn with it: the refusal costs no more than starting ordlab.
#[test]
fn bad_input_is_refused_in_under_a_tenth_of_a_second_with_no_server_started() {
    let keep = tempfile::tempdir().unwrap();
    let (mark, shim) = (keep.path().join("a-server-was-run"), keep.path().join("redis-server"));
    let real = ordlab::service::find_redis().unwrap().path;
    let script = format!("#!/bin/sh\ntouch {}\nexec {} \"$@\"\n", mark.display(), real.display());
    std::fs::write(&shim, script).unwrap();
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = keep.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let scenario = keep.path().join("foreign.toml");
    let text = std::fs::read_to_string("scenarios/baseline.toml").unwrap();
    let text = text.replace(
        "strategy = \"plain\"",
        "strategy = \"plain\"\nworker = { command = [\"ordlab-no-such-worker\", \"w.py\"] }",
    );
    std::fs::write(&scenario, text).unwrap();
    let (file, scenario) = (file.to_str().unwrap(), scenario.to_str().unwrap());
    let env = [("ORDLAB_REDIS_SERVER", shim.to_str().unwrap())];
    for (args, says) in [
        (vec!["baseline", "--runs", "0"], "--runs"),
        (vec!["baseline", "--out", "/proc/ordlab-results"], "--out /proc/ordlab-results cannot be created"),
        (vec!["baseline", "--out", file], "is a file, not a directory"),
        (vec!["baseline", "--out", "/proc"], "--out /proc is not writable"),
        (vec!["baseline", "--time-scale", "0"], "--time-scale"),
        (vec!["baseline", "--jobs", "0"], "--jobs"),
        (vec!["baseline", "--pg-url", "postgres://me@localhost/db"], "--pg-url is used only with --backend external"),
        (vec![scenario], "ordlab-no-such-worker is not found on PATH"),
        (vec!["baseline", "--backend", "nope"], "[possible values: auto, local, docker, external]"),
        (vec![], "the following required arguments were not provided: <LABS>..."),
    ] {
        let mut all = vec!["run"];
        all.extend(&args);
        if !args.contains(&"--backend") {
            all.extend(["--backend", "local"]);
        }
        let (mut best, mut version) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..10 {
            let started = std::time::Instant::now();
            let (code, _, stderr) = run(&all, &env);
            best = best.min(started.elapsed().as_secs_f64());
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            assert_one_line(&stderr);
            assert!(stderr.starts_with("ordlab: ") && stderr.contains(says), "{args:?}: {stderr}");
            assert!(!mark.exists(), "{args:?}: a redis-server was run before the refusal: {stderr}");
            if best < 0.1 {
                break;
            }
            let started = std::time::Instant::now();
            assert_eq!(run(&["--version"], &env).0, Some(0));
            version = version.min(started.elapsed().as_secs_f64());
        }
        eprintln!("refused in {:.0} ms (best try, --version {version:.3} s): {args:?}", best * 1000.0);
        assert!(best < 0.1 || best < version + 0.05, "{args:?}: refused after {best:.3} s (--version: {version:.3} s)");
    }
    // The shim does leave its mark when a server is started.
    let (code, _, stderr) = run(&["run", "s1", "--runs", "1", "--time-scale", "0.25", "--backend", "local"], &env);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(mark.exists(), "the shim was not run");
}

#[test]
fn a_server_url_without_the_external_backend_is_refused() {
    let no_server = [("ORDLAB_REDIS_SERVER", "/nonexistent/redis-server")];
    let (code, _, stderr) = run(&["run", "baseline", "--pg-url", "postgres://me@localhost/db"], &no_server);
    assert_eq!(code, Some(2), "{stderr}");
    assert_one_line(&stderr);
    assert!(stderr.contains("--pg-url is used only with --backend external"), "{stderr}");
    // From the environment it is only a default: no refusal (the missing server is the error).
    let env = [("ORDLAB_REDIS_SERVER", "/nonexistent/redis-server"), ("ORDLAB_PG_URL", "postgres://me@localhost/db")];
    let (code, _, stderr) = run(&["run", "baseline", "--backend", "local"], &env);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("redis-server"), "{stderr}");
}

#[test]
fn the_backend_choice_is_said_once_however_many_job_slots_start_servers() {
    let (code, _, stderr) = run(
        &["run", "s1", "baseline", "--runs", "1", "--time-scale", "0.25", "--jobs", "2", "--quiet"],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("using local servers (--backend auto)").count(), 1, "{stderr}");
}

/// A gzip of 256 MiB of spaces (made by the real gzip, 1.2 MB) is refused in one line at
/// `ordlab check`'s cap, never held whole: ordlab's peak RSS stays far below what it inflates to.
#[test]
fn check_caps_what_it_inflates() {
    let tmp = tempfile::tempdir().unwrap();
    let bomb = tmp.path().join("bomb.json.gz");
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("head -c 268435456 /dev/zero | tr '\\0' ' ' | gzip -1 > {}", bomb.display()))
        .status()
        .unwrap();
    assert!(made.success());
    // Reaped below by wait4, which also gives its peak RSS.
    #[allow(clippy::zombie_processes)]
    let mut child = support::ordlab(tmp.path())
        .args(["check"])
        .arg(&bomb)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    // wait4: this child's own exit status and peak RSS.
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert_eq!(libc::WEXITSTATUS(status), 2, "{stdout}{stderr}");
    assert_one_line(&stderr);
    assert!(stderr.contains("bomb.json.gz: inflates to more than 64 MiB, the most ordlab reads"), "{stderr}");
    let peak_mb = usage.ru_maxrss / 1024;
    assert!(peak_mb < 160, "ordlab check peaked at {peak_mb} MB for a 256 MiB inflation: {stderr}");
}

/// A lab that starts servers of its own, on the external backend: one line, whether asked for
/// alone or (persistence, five variants) with nothing else to run.
#[test]
fn a_lab_that_cannot_run_on_external_servers_is_refused_in_one_line() {
    let external = [
        "--backend",
        "external",
        "--redis-url",
        "redis://127.0.0.1:1",
        "--pg-url",
        "postgres://ordlab@127.0.0.1:1/ordlab",
    ];
    for lab in ["persistence", "eviction", "failover"] {
        let mut args = vec!["run", lab];
        args.extend(external);
        let (code, _, stderr) = run(&args, &[]);
        assert_eq!(code, Some(2), "{lab}: {stderr}");
        assert_one_line(&stderr);
        assert!(
            stderr.starts_with(&format!("ordlab: {lab} does not run against your servers: it starts "))
                && stderr.contains("use --backend local"),
            "{lab}: {stderr}"
        );
    }
}

/// A worker's program file that is not there is named before any server starts, for grade
/// (a file, or a command line after `--`) and for a lab whose worker command names one.
#[test]
fn a_missing_worker_file_is_named_before_a_server_starts() {
    for args in [
        vec!["grade", "/nonexistent/my_consumer.py"],
        vec!["grade", "--", "php", "/nonexistent/my_consumer.php"],
        vec!["grade", "--runs", "1", "--", "node", "-e", "0", "/nonexistent/w.js"],
    ] {
        let file = args.last().unwrap().to_string();
        // The first line a started server would print is the backend's: none may come.
        let (code, stdout, stderr) = run(&args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_one_line(&stderr);
        assert!(stderr.contains(&format!("{file} is not a file (from ")), "{args:?}: {stderr}");
        assert!(!stderr.contains("using local servers") && stdout.is_empty(), "{args:?}: {stderr}");
    }
}

/// `ordlab diff` reads the snapshots it compares with before it starts servers and runs.
#[test]
fn diff_reads_its_snapshots_before_a_server_starts() {
    let (code, _, stderr) = run(&["diff", "baseline", "--snapshots", "/nonexistent"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_one_line(&stderr);
    assert!(stderr.contains("no snapshot /nonexistent/baseline.en.snap"), "{stderr}");
}
