//! Shared helpers: the `ordlab` binary, servers per test, a lab run in-process, and the
//! process-tree inspection the cleanup tests need.

use ordlab::labs::{Kind, Observed, RunRecord};
use ordlab::orders::OrderRow;
use ordlab::report::{LabReport, VariantReport};
use ordlab::runner::{RunOptions, Runner};
use ordlab::service::{BackendChoice, ServiceOptions, Services};
use ordlab::streams::StreamEntry;
use std::path::PathBuf;
use std::process::Command;

pub fn ordlab_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ordlab"))
}

/// The binary as a command, with a private temp root so leftovers can be checked.
pub fn ordlab(tmp_root: &std::path::Path) -> Command {
    // The servers' private dirs go below `tmp_root`; PostgreSQL runs as its own user and
    // must be able to traverse it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp_root, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new(ordlab_exe());
    c.env("ORDLAB_TMPDIR", tmp_root).env_remove("ORDLAB_REDIS_URL").env_remove("ORDLAB_PG_URL");
    c
}

pub fn local() -> ServiceOptions {
    ServiceOptions { backend: BackendChoice::Local, ..ServiceOptions::default() }
}

/// Run a built-in lab in-process on fresh local servers, stopped before returning.
pub async fn run_lab(id: &str, runs: u32, scale: f64, seed: u64) -> LabReport {
    run_variant(id, None, runs, scale, seed).await
}

/// Run one variant of a built-in lab (or all with None).
pub async fn run_variant(id: &str, variant: Option<&str>, runs: u32, scale: f64, seed: u64) -> LabReport {
    let lab = ordlab::catalog::find(id).expect("built-in lab");
    let services = Services::start(&local()).await.expect("local servers start");
    let mut opts = RunOptions::new(scale, seed);
    opts.runs = Some(runs);
    opts.variant = variant.map(str::to_string);
    let report = {
        let mut runner = Runner::new(&services, ordlab_exe()).await.expect("runner connects");
        runner.run_lab(&lab, &opts).await.expect("lab runs")
    };
    services.stop().await;
    report
}

/// The lab as its snapshot test runs it (`ordlab diff` runs it the same way).
pub async fn snapshot_run(id: &str) -> LabReport {
    let lab = ordlab::catalog::find(id).expect("built-in lab");
    ordlab::runner::run_as_snapshot(&lab, &local(), ordlab_exe()).await.expect("lab runs")
}

/// A variant of a report, by id.
pub fn variant<'a>(r: &'a LabReport, id: &str) -> &'a VariantReport {
    r.variants.iter().find(|v| v.id == id).unwrap_or_else(|| panic!("no variant {id}"))
}

/// What a run of a variant of kind `P` measured, typed.
pub fn facts<P: Kind>(v: &VariantReport, r: &RunRecord) -> P::Facts {
    v.procedure.facts_of::<P>(r).unwrap_or_else(|| panic!("{} run {} is a {} run", v.id, r.run, r.observed.kind()))
}

/// The orders table after a run, whatever the lab kind.
pub fn final_rows(r: &RunRecord) -> Vec<OrderRow> {
    match &r.observed {
        Observed::Stream(o) => o.final_rows.clone(),
        Observed::SqlRace(o) => o.final_rows.clone(),
        Observed::Outbox(o) => o.final_rows.clone(),
        Observed::OutboxRollback(o) => o.final_rows.clone(),
        Observed::Failover(o) => o.final_rows.clone(),
        Observed::Load(o) => o.final_rows.clone(),
        // Kinds without an orders table.
        _ => Vec::new(),
    }
}

/// The stream after a run (empty for labs without one).
pub fn stream(r: &RunRecord) -> Vec<StreamEntry> {
    match &r.observed {
        Observed::Stream(o) => o.stream.clone(),
        Observed::Outbox(o) => o.stream.clone(),
        _ => Vec::new(),
    }
}

/// The order in which a stream run's consumers started waiting (empty for other kinds).
pub fn waiting_order(r: &RunRecord) -> Vec<u32> {
    match &r.observed {
        Observed::Stream(o) => o.waiting_order.clone(),
        _ => Vec::new(),
    }
}

/// Every process below `root` (children, grandchildren, …), from /proc.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the parenthesised command name: state, ppid, …
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else { continue };
        let ppid: u32 = rest.split(' ').nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        parent_of.push((pid, ppid));
    }
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, ppid) in &parent_of {
            if *ppid == p && !out.contains(pid) {
                out.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    out
}

/// The parent of `pid`, while `pid` exists (a zombie too).
pub fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

/// When `pid` started (clock ticks since boot): with the pid, it names one process.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; the fields after the command name start at field 3.
    stat.rsplit_once(") ")?.1.split(' ').nth(19)?.parse().ok()
}

/// Is `pid` still a live process (a zombie counts as gone)?
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')),
        Err(_) => false,
    }
}

/// Poll `cond` every 10 ms for up to `secs` seconds.
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    cond()
}

/// Entries left in a directory.
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Is some process below `root` a role process (`ordlab __role`, e.g. a consumer)?
pub fn is_role_running(root: u32) -> bool {
    descendants(root)
        .iter()
        .any(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains("__role")))
}

/// Whether a test that needs a runtime (`what`: "node with ioredis") can run: `missing` is why
/// not, if so. Missing, it says NOT TESTED and why; under CI (which installs every runtime)
/// that is a failure.
pub fn has_runtime(what: &str, missing: Option<String>) -> bool {
    let Some(why) = missing else { return true };
    assert!(std::env::var_os("CI").is_none(), "{what} must be installed in CI (scripts/setup-workers.sh): {why}");
    eprintln!("NOT TESTED: needs {what}: {why}");
    false
}

/// A record to serve: `ordlab run baseline --runs 1 --time-scale 0.25 --out DIR` (~1 s).
pub fn write_baseline_record(dir: &std::path::Path) {
    let tmp = tempfile::tempdir().unwrap();
    let out = ordlab(tmp.path())
        .args(["run", "baseline", "--runs", "1", "--time-scale", "0.25", "--quiet", "--backend", "local", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "ordlab run: {}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("records/baseline.json.gz").is_file());
}

/// `ordlab serve --out DIR --backend local` on a free port, its servers' private dirs below
/// `tmp_root`. Dropping it sends SIGINT and waits for the process.
pub struct Served {
    pub child: std::process::Child,
    pub port: u16,
}

impl Served {
    pub fn start(dir: &std::path::Path, tmp_root: &std::path::Path, extra: &[&str]) -> Served {
        use std::io::BufRead;
        let mut child = ordlab(tmp_root)
            .args(["serve", "--backend", "local", "--out"])
            .arg(dir)
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let port = first
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address in serve's first line: {first:?}"));
        Served { child, port }
    }

    /// SIGINT, as Ctrl-C sends it; then its exit code and stderr.
    pub fn interrupt(mut self) -> (Option<i32>, String) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let code = self.child.wait().unwrap().code();
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        (code, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = self.child.wait();
        }
    }
}
