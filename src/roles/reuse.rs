//! A role process kept across the runs of an exploration: at the end of a run it is parked,
//! not killed, and the next run's config on its stdin starts the role again in the same process.
//! A run of it is what a run of a fresh process is (the role's state, connections and all, lives
//! in the run, which parking drops); what it saves is a process's start, most of a schedule's set-up.
//!
//! The role side ([`serve`], `ordlab __role --reusable`) reads one config per line; the line
//! [`PARK`] ends the run where it is and is answered by [`PARKED`] on stdout, after every event
//! of the run. The orchestrator side ([`RolePool`]) keeps parked processes by actor; one that
//! exited (a planned crash) or did not park is gone, and the next run starts a fresh one.

use super::{RoleConfig, RoleProcess, RoleRegistry};
use crate::error::Error;
use crate::timeline::{Actor, RawEvent};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// The order, on a reusable process's stdin, to end its run and wait for the next.
pub const PARK: &str = "park";

/// Its answer on stdout: parked, every event of the run written before this line.
pub const PARKED: &str = "{\"ordlab\":\"parked\"}";

/// How long a process may take to park before it is killed instead (a role stops at its next
/// await, which is at once: it waits on a server or at the interposer).
pub const PARK_WITHIN: Duration = Duration::from_secs(5);

/// The body of `ordlab __role --reusable`: run each config read from stdin until [`PARK`], then
/// say [`PARKED`]; stdin closed, or the role's own end, ends the process.
pub async fn serve(registry: &RoleRegistry) -> Result<(), Error> {
    let (tx, mut lines) = mpsc::unbounded_channel::<String>();
    // std's stdin on a thread of its own: the role's single-threaded runtime is never blocked.
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(config) = lines.recv().await {
        if config != PARK {
            tokio::select! {
                // A role that ends on its own (status 0) ends its process, as an unparked one does.
                done = registry.run(&config) => return done,
                order = lines.recv() => match order {
                    Some(line) if line == PARK => {}
                    Some(_) => return Err(Error::RoleConfig("a config came before the order to park".into())),
                    None => return Ok(()),
                },
            }
        }
        parked();
    }
    Ok(())
}

/// Say [`PARKED`], after everything the run wrote.
fn parked() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{PARKED}").and_then(|_| out.flush()).is_err() {
        std::process::exit(3);
    }
}

/// Parked role processes by actor, and the processes ever started: what an exploration keeps
/// from one run to the next.
pub struct RolePool {
    /// False: every run starts its own processes and stops them (nothing is parked).
    reuse: bool,
    parked: Mutex<BTreeMap<Actor, RoleProcess>>,
    started: Mutex<Vec<u32>>,
}

impl RolePool {
    pub fn new(reuse: bool) -> RolePool {
        RolePool { reuse, parked: Mutex::default(), started: Mutex::default() }
    }

    /// `config`'s actor running `config`, its events to `sink`: the parked process of that
    /// actor if there is one, else a new reusable process of `exe`.
    pub async fn start(
        &self,
        exe: &Path,
        config: &RoleConfig,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, Error> {
        let parked = self.parked.lock().unwrap().remove(&config.actor());
        if let Some(mut process) = parked {
            if process.exited().is_none() && process.rerun(config, sink.clone()).await.is_ok() {
                return Ok(process);
            }
            process.stop().await;
        }
        let process = match self.reuse {
            true => RoleProcess::spawn_reusable(exe, config, sink).await?,
            false => RoleProcess::spawn(exe, config, sink)?,
        };
        self.started.lock().unwrap().push(process.pid().unwrap_or(0));
        Ok(process)
    }

    /// At the end of a run: park `process` for the next, or stop it if it cannot be parked.
    pub async fn park(&self, mut process: RoleProcess) {
        if self.reuse && process.park().await {
            // Two of one actor in a run (a replacement): the older is killed.
            let older = self.parked.lock().unwrap().insert(process.actor(), process);
            drop(older);
        } else {
            process.stop().await;
        }
    }

    /// The process IDs of every process this pool started, in order.
    pub fn started(&self) -> Vec<u32> {
        self.started.lock().unwrap().clone()
    }

    /// Stop every parked process.
    pub async fn stop(&self) {
        let parked = std::mem::take(&mut *self.parked.lock().unwrap());
        for (_, p) in parked {
            p.stop().await;
        }
    }
}
