//! How fast the explorer goes through schedules: runs per second for `baseline` (ordlab's own
//! consumers; also with every run's processes started afresh, to show what reuse saves), `s1`
//! (one consumer of ordlab's: a two-process lab), `s1` with the example Python consumer, and
//! baseline with two Python consumers (foreign-ordering python-plain), forked from one
//! interpreter that imported them (the default) and started afresh every run, each on servers
//! started once (state reset between runs on the same servers, never new servers).
//!
//! A run is a whole lab run: reset the keys and rows, start (or wake) the processes, step every
//! command, park (or stop) them, read and judge the final state. The aim is 20
//! schedules/s for a two-process lab on this 2-core machine.

use crate::error::Error;
use crate::exploration::{explore, ExploreOptions, Search};
use crate::service::{ServiceOptions, Services};
use std::path::PathBuf;

/// The labs measured: (lab or scenario file, variant (None: the first), whether processes are
/// reused (ordlab's own parked, a Python worker forked), the aim in schedules/s (20 for
/// ordlab's own, 10 for the Python example on baseline: issue 34), what it is).
type Measured = (&'static str, Option<&'static str>, bool, f64, &'static str);
const MEASURED: [Measured; 6] = [
    ("baseline", None, true, 20.0, "baseline, ordlab's own consumers (3 processes)"),
    ("baseline", None, false, 20.0, "baseline, every run's consumers started afresh"),
    ("s1", None, true, 20.0, "s1, ordlab's own consumer (2 processes)"),
    (
        "tests/scenarios/explore-python-s1.toml",
        None,
        true,
        10.0,
        "s1 with the Python example consumer, forked (2 processes; 5 runs, the fork server's start in them)",
    ),
    (
        "foreign-ordering",
        Some("python-plain"),
        true,
        10.0,
        "baseline with the Python example consumers, forked (3 processes)",
    ),
    (
        "foreign-ordering",
        Some("python-plain"),
        false,
        10.0,
        "baseline with the Python example consumers, each run's started afresh",
    ),
];

/// Runs an exploration may take when measured (baseline has 130; enough for a stable rate).
const MAX_RUNS: usize = 60;

pub async fn run(svc: &ServiceOptions, exe: PathBuf) -> Result<(), Error> {
    let services = Services::start(svc).await?;
    let result = measure(&services, exe).await;
    services.stop().await;
    result
}

async fn measure(services: &Services, exe: PathBuf) -> Result<(), Error> {
    println!("explore: schedules per second (aim ≥ 20 for ordlab's own processes, ≥ 10 for a Python worker)");
    for (id, variant, reuse_processes, aim, what) in MEASURED {
        let lab = match crate::catalog::find(id) {
            Ok(lab) => lab,
            Err(e) => {
                println!("  {what}: NOT MEASURED ({e})");
                continue;
            }
        };
        let Some(v) = lab.variants.iter().find(|v| variant.is_none_or(|id| v.id == id)) else {
            println!("  {what}: NOT MEASURED (no variant {variant:?})");
            continue;
        };
        let opts = ExploreOptions {
            search: Search::Exhaustive { preemptions: None },
            max_schedules: MAX_RUNS,
            reuse_processes,
            ..Default::default()
        };
        match explore(services, exe.clone(), &lab, v, &opts).await {
            Ok((x, _)) => {
                let rate = x.runs as f64 / x.seconds.max(1e-9);
                let verdict =
                    if rate >= aim { format!("meets the aim of {aim}") } else { format!("below the aim of {aim}") };
                println!(
                    "  {what}: {} runs in {:.1} s = {rate:.1} schedules/s ({verdict}); {} of ordlab's processes started{}",
                    x.runs,
                    x.seconds,
                    x.role_processes_started,
                    if x.workers_forked > 0 { format!(", {} Python workers forked", x.workers_forked) } else { String::new() }
                );
            }
            Err(e) => println!("  {what}: NOT MEASURED ({e})"),
        }
    }
    Ok(())
}
