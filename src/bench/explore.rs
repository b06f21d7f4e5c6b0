//! How fast the explorer goes through schedules: runs per second for `baseline` (ordlab's own
//! consumers; also with every run's processes started afresh, to show what reuse saves), `s1`
//! (one consumer of ordlab's: a two-process lab) and `s1` with the example Python consumer,
//! each on servers started once (state reset between runs on the same servers, never new servers).
//!
//! A run is a whole lab run: reset the keys and rows, start (or wake) the processes, step every
//! command, park (or stop) them, read and judge the final state. The aim is 20
//! schedules/s for a two-process lab on this 2-core machine.

use crate::error::Error;
use crate::exploration::{explore, ExploreOptions, Search};
use crate::service::{ServiceOptions, Services};
use std::path::PathBuf;

/// The labs measured: (lab or scenario file, whether ordlab's own processes are reused, what it is).
const MEASURED: [(&str, bool, &str); 4] = [
    ("baseline", true, "baseline, ordlab's own consumers (3 processes)"),
    ("baseline", false, "baseline, every run's consumers started afresh"),
    ("s1", true, "s1, ordlab's own consumer (2 processes)"),
    ("tests/scenarios/explore-python-s1.toml", true, "s1 with the Python example consumer (2 processes)"),
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
    println!("explore: schedules per second (aim ≥ 20 for a two-process lab)");
    for (id, reuse_processes, what) in MEASURED {
        let lab = match crate::catalog::find(id) {
            Ok(lab) => lab,
            Err(e) => {
                println!("  {what}: NOT MEASURED ({e})");
                continue;
            }
        };
        let v = &lab.variants[0];
        let opts = ExploreOptions {
            search: Search::Exhaustive { preemptions: None },
            max_schedules: MAX_RUNS,
            reuse_processes,
            ..Default::default()
        };
        match explore(services, exe.clone(), &lab, v, &opts).await {
            Ok((x, _)) => {
                let rate = x.runs as f64 / x.seconds.max(1e-9);
                let verdict = if rate >= 20.0 { "meets the aim" } else { "below the aim" };
                println!(
                    "  {what}: {} runs in {:.1} s = {rate:.1} schedules/s ({verdict}); {} of ordlab's processes started",
                    x.runs, x.seconds, x.role_processes_started
                );
            }
            Err(e) => println!("  {what}: NOT MEASURED ({e})"),
        }
    }
    Ok(())
}
