//! The library's worker processes of a run: each started through its interposer (its faults
//! at named commands, a script named by the adapter's scripts map; its gate when the lab holds
//! one of its commands), then waited for until it is ready as the adapter's manifest says:
//! blocked in a blocking command (`CLIENT LIST`), or past the reply to a named command
//! (`LISTEN`, a statement that mentions `get_job`) as the interposer recorded it.

use super::super::stage::Stage;
use super::super::LibrarySpec;
use crate::error::Error;
use crate::fault::{Fault, Occurrence};
use crate::labs::library::adapter::LIBRARY_DB;
use crate::labs::library::manifest::Manifest;
use crate::labs::RunContext;
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerCommand, WorkerEnv};
use crate::timeline::{Actor, EventKind, RawEvent};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How long a worker may take to be ready (a Python or Ruby worker importing its library on a
/// loaded 2-core machine takes seconds).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Crew<'a> {
    spec: &'a LibrarySpec,
    manifest: &'a Manifest,
    stage: Arc<Stage>,
    tx: mpsc::UnboundedSender<RawEvent>,
    scripts: &'a BTreeMap<String, String>,
    /// `W<i+1>` at index i, with the queues it serves.
    workers: Vec<(CommandWorker, Vec<String>)>,
}

impl<'a> Crew<'a> {
    pub fn new(
        spec: &'a LibrarySpec,
        manifest: &'a Manifest,
        stage: Arc<Stage>,
        tx: mpsc::UnboundedSender<RawEvent>,
        scripts: &'a BTreeMap<String, String>,
    ) -> Crew<'a> {
        Crew { spec, manifest, stage, tx, scripts, workers: Vec::new() }
    }

    /// Is worker `W<n>`'s process still there (running, or paused)?
    pub fn is_alive(&self, n: u32) -> bool {
        self.workers.get(n as usize - 1).is_some_and(|(w, _)| w.process.exited().is_none())
    }

    /// The queues worker `W<n>` serves.
    pub fn queues_of(&self, n: u32) -> Vec<String> {
        self.workers.get(n as usize - 1).map(|(_, q)| q.clone()).unwrap_or_default()
    }

    /// A fault as the interposer matches it, aimed at `actor` ([`super::wire_fault`]).
    fn wire_fault(&self, f: &Fault, actor: Actor) -> Fault {
        super::wire_fault(f, actor, self.scripts)
    }

    /// Start `W<n+1>` on `queues` (the scenario's worker `scenario` with its faults, hold and
    /// stop; a replacement has none) and wait until it is ready, or (`or_killed`) killed or
    /// stopped by the lab first (a fault at its first fetch).
    pub async fn start(
        &mut self,
        ctx: &mut RunContext<'_>,
        queues: &[String],
        scenario: Option<usize>,
        or_killed: bool,
    ) -> Result<(), Error> {
        let index = self.workers.len() as u32 + 1;
        let actor = Actor::Worker(index);
        let client_name = ctx.client_name(actor);
        let planned = scenario.map(|i| &self.spec.workers[i]);
        let faults = planned.map(|w| w.faults.as_slice()).unwrap_or_default();
        let command = WorkerCommand {
            command: self.manifest.worker.clone(),
            count: None,
            faults: faults.iter().map(|f| self.wire_fault(f, actor)).collect(),
            env: BTreeMap::new(),
        };
        let mut extra: BTreeMap<String, String> = self.stage.place().env.iter().cloned().collect();
        extra.insert("ORDLAB_WORKER".into(), actor.to_string());
        extra.insert("ORDLAB_WORKER_NAME".into(), client_name.clone());
        extra.insert("ORDLAB_QUEUES".into(), queues.join(" "));
        let env = WorkerEnv {
            index,
            redis_db: LIBRARY_DB,
            seed: ctx.seed_for(index),
            extra,
            scale: Some(ctx.scale),
            ..WorkerEnv::default()
        };
        let place = self.stage.place();
        let upstreams = Upstreams { redis_url: &place.redis_url, pg_config: &place.pg_config, control: None };
        let gate = planned.and_then(|w| w.hold.clone()).map(|hold| {
            let (gate, held) = mpsc::unbounded_channel();
            self.stage.serve_gate(actor, hold, held);
            gate
        });
        let (sink, ready) = self.watch_ready(actor);
        let w = CommandWorker::start_gated(&command, &env, actor, &client_name, upstreams, sink, gate).await?;
        self.stage.register(index, w.signaller(), w.tap().clone());
        let result = self.wait(ctx, &w, &client_name, ready, or_killed, &command).await;
        self.workers.push((w, queues.to_vec()));
        result
    }

    /// The worker's event sink: its events go on to the run's, and the first reply to the
    /// command the manifest's `ready.after` names flips the returned flag.
    fn watch_ready(&self, actor: Actor) -> (mpsc::UnboundedSender<RawEvent>, watch::Receiver<bool>) {
        let (sink, mut events) = mpsc::unbounded_channel::<RawEvent>();
        let (flag, ready) = watch::channel(false);
        let tx = self.tx.clone();
        let after = self.manifest.ready.trigger();
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                if let (Some(rule), EventKind::ServerCommand { server, connection, args, error: false, .. }) =
                    (&after, &e.kind)
                {
                    let _ = connection;
                    let seen =
                        Occurrence::Command { by: e.actor, server: *server, args, moment: crate::fault::Moment::Reply };
                    if e.actor == actor && !*flag.borrow() && rule.matches(&seen, Some(actor)) {
                        let _ = flag.send(true);
                    }
                }
                if tx.send(e).is_err() {
                    return;
                }
            }
        });
        (sink, ready)
    }

    /// Wait until the worker is ready: blocked in a blocking command (`CLIENT LIST`), or past
    /// its reply to the `ready.after` command; with `or_killed` (the jobs were enqueued first,
    /// so its first fetch takes one), also done once the lab has killed or stopped it, or its
    /// handler has started a job (a worker paused in its handler would not be ready before its
    /// pause ends, and the run must be watching by then). Otherwise one line says why not: it
    /// exited (its last line), or it never got there.
    async fn wait(
        &self,
        ctx: &mut RunContext<'_>,
        w: &CommandWorker,
        client_name: &str,
        ready: watch::Receiver<bool>,
        or_killed: bool,
        command: &WorkerCommand,
    ) -> Result<(), Error> {
        let signaller = w.signaller();
        let actor = signaller.actor();
        let broke = |detail: String| Error::WorkerCommand { command: command.shown(), detail };
        let started = Instant::now();
        loop {
            let at_work = matches!(actor, Actor::Worker(n) if self.stage.at_work(n));
            if or_killed && (signaller.is_planned() || at_work) {
                return Ok(());
            }
            if let Some(detail) = w.process.exited() {
                return Err(broke(format!("{actor} exited before it was ready: {detail}")));
            }
            let is_ready = match &self.manifest.ready.after {
                Some(_) => *ready.borrow(),
                None => {
                    let list: String = redis::cmd("CLIENT")
                        .arg("LIST")
                        .query_async(&mut ctx.redis)
                        .await
                        .map_err(|e| broke(format!("CLIENT LIST: {e}")))?;
                    list.lines().any(|l| names(l, client_name) && crate::roles::client_list::is_blocked(l))
                }
            };
            if is_ready {
                return Ok(());
            }
            if started.elapsed() >= READY_TIMEOUT {
                let wanted = match &self.manifest.ready.after {
                    Some(after) => format!("never sent {after}"),
                    None => "never waited in a blocking command".into(),
                };
                return Err(broke(format!(
                    "{actor} {wanted} in {} s: does the worker connect to ORDLAB_REDIS_URL / ORDLAB_PG_URL?",
                    READY_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stop every worker (and close its endpoints).
    pub async fn stop(&mut self) {
        for (w, _) in std::mem::take(&mut self.workers) {
            w.stop().await;
        }
    }
}

/// Is `client_line` (of `CLIENT LIST`) a connection named `name` by the interposer, or by a
/// library that names its connections itself and keeps the worker's name at the end (BullMQ:
/// `bull:<queue>:w:<worker name>`)?
fn names(client_line: &str, name: &str) -> bool {
    client_line
        .split(' ')
        .filter_map(|kv| kv.strip_prefix("name="))
        .any(|n| n == name || n.strip_suffix(name).is_some_and(|head| head.ends_with(':')))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_connection_is_the_worker_s_by_its_name_or_a_library_s_name_ending_in_it() {
        let line = |name: &str| format!("id=7 addr=127.0.0.1:1 name={name} age=1 flags=b cmd=bzpopmin");
        assert!(super::names(&line("ordlab-1-W1"), "ordlab-1-W1"));
        assert!(super::names(&line("bull:ZGVmYXVsdA==:w:ordlab-1-W1"), "ordlab-1-W1"));
        assert!(!super::names(&line("ordlab-1-W11"), "ordlab-1-W1"));
        assert!(!super::names(&line("xordlab-1-W1"), "ordlab-1-W1"));
    }
}
