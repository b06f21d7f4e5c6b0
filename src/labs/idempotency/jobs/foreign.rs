//! Job workers from a command line: a scenario's `worker = { command = [...] }` takes the place
//! of ordlab's own job worker, readers `C<n>` and the claimer alike, each through its own
//! interposer; the run reads what it needs off their recorded commands.
//!
//! A reader gets `ORDLAB_STREAM`, `ORDLAB_GROUP`, `ORDLAB_CONSUMER` (`C1`), `ORDLAB_SINK_URL`
//! and `ORDLAB_EFFECT` (the HTTP side-effect sink and the one-effect techniques' effect),
//! `ORDLAB_WORKER` (its name, the body's `from`) and `ORDLAB_ORDERS_TABLE`; the claimer gets
//! the same as `reaper` plus `ORDLAB_CLAIM_MIN_IDLE_MS` and `ORDLAB_CLAIM_POLL_MS` (time scale
//! applied): it retries with `XAUTOCLAIM` instead of reading new jobs. At the wire, an entry
//! an `XREADGROUP` or `XAUTOCLAIM` reply hands over is a job received (its delivery counted
//! from the deliveries seen), an `XACK` is its acknowledgement, and a reader seen blocked in
//! `XREADGROUP` again is done with what it held (it failed and left it pending, or finished).

use crate::error::{Context, Error};
use crate::handler::job::events::JobEvent;
use crate::labs::RunContext;
use crate::roles::claimer::ReaperSpec;
use crate::roles::client_list::{is_blocked, ClientState};
use crate::roles::command_worker::{CommandWorker, Upstreams, WorkerCommand, WorkerEnv};
use crate::side_effect::http::HttpSink;
use crate::side_effect::SinkConfig;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent};
use std::collections::{BTreeMap, HashMap};
use tokio::sync::mpsc;

/// The worker processes of a run from the scenario's command line, and the HTTP sink they
/// send their effects to.
pub struct ForeignCrew {
    spec: WorkerCommand,
    stream: String,
    effect: String,
    reaper: ReaperSpec,
    http: HttpSink,
    workers: Vec<CommandWorker>,
    last_reader: u32,
    claimers: u32,
}

impl ForeignCrew {
    /// Start `readers` readers, each blocked in XREADGROUP before the next starts.
    pub async fn start(
        ctx: &mut RunContext<'_>,
        spec: &WorkerCommand,
        (stream, effect, reaper): (&str, &str, &ReaperSpec),
        sink: SinkConfig,
        readers: u32,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<ForeignCrew, Error> {
        let mut crew = ForeignCrew::idle(spec, (stream, effect, reaper), sink).await?;
        for _ in 0..readers {
            crew.start_reader(ctx, tx, true).await?;
        }
        Ok(crew)
    }

    /// The crew with its HTTP sink and no process yet: a sampled run starts its readers at
    /// once, a stepped one each as the explorer's run wants it ([`ForeignCrew::start_gated`]).
    pub async fn idle(
        spec: &WorkerCommand,
        (stream, effect, reaper): (&str, &str, &ReaperSpec),
        sink: SinkConfig,
    ) -> Result<ForeignCrew, Error> {
        Ok(ForeignCrew {
            spec: spec.clone(),
            stream: stream.to_string(),
            effect: effect.to_string(),
            reaper: reaper.clone(),
            http: HttpSink::start(sink).await?,
            workers: Vec::new(),
            last_reader: 0,
            claimers: 0,
        })
    }

    /// Start `actor` (a reader `C<n>`, or the claimer with index 1000+) through gated endpoints
    /// of the explorer's (`ctx.control`), which waits for its first command; its exit watched.
    pub async fn start_gated(
        &mut self,
        ctx: &mut RunContext<'_>,
        actor: Actor,
        index: u32,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        self.spawn(ctx, actor, index, None, tx).await?;
        if let (Some(control), Some(w)) = (ctx.control, self.workers.last()) {
            control.watch_exit(actor, w.process.exit_check());
        }
        Ok(())
    }

    /// The next reader `C<n>`; `wait`: until it is blocked in XREADGROUP.
    async fn start_reader(
        &mut self,
        ctx: &mut RunContext<'_>,
        tx: &mpsc::UnboundedSender<RawEvent>,
        wait: bool,
    ) -> Result<(), Error> {
        self.last_reader += 1;
        let index = self.last_reader;
        let want = wait.then_some(ClientState::BlockedInXreadgroup);
        self.spawn(ctx, Actor::Consumer(index), index, want, tx).await
    }

    /// The claimer (`reaper`, indices 1000+), waited for until it is connected.
    pub async fn start_claimer(
        &mut self,
        ctx: &mut RunContext<'_>,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        self.claimers += 1;
        self.spawn(ctx, Actor::Reaper, 1000 + self.claimers, Some(ClientState::Connected), tx).await
    }

    /// A new process in place of `dead` (killed at a planned command boundary), not waited for.
    pub async fn replace(
        &mut self,
        ctx: &mut RunContext<'_>,
        dead: Actor,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        match dead {
            Actor::Reaper => {
                self.claimers += 1;
                self.spawn(ctx, Actor::Reaper, 1000 + self.claimers, None, tx).await
            }
            _ => self.start_reader(ctx, tx, false).await,
        }
    }

    async fn spawn(
        &mut self,
        ctx: &mut RunContext<'_>,
        actor: Actor,
        index: u32,
        want: Option<ClientState>,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<(), Error> {
        let client_name = ctx.client_name(actor);
        let mut extra = BTreeMap::from([
            ("ORDLAB_SINK_URL".to_string(), self.http.url()),
            ("ORDLAB_EFFECT".to_string(), self.effect.clone()),
            ("ORDLAB_WORKER".to_string(), actor.to_string()),
        ]);
        if actor == Actor::Reaper {
            let ms = |v: f64| (ctx.scale.duration(v).as_secs_f64() * 1000.0).round().max(1.0).to_string();
            // A timer: under the explorer (time scale 0) an entry is never idle by the clock,
            // only by the explorer's timer step.
            let min_idle = ctx.scale.timer_ms(self.reaper.min_idle_ms.round() as u64).max(1);
            extra.insert("ORDLAB_CLAIM_MIN_IDLE_MS".into(), min_idle.to_string());
            extra.insert("ORDLAB_CLAIM_POLL_MS".into(), ms(self.reaper.poll_ms));
        }
        let env = WorkerEnv {
            scale: Some(ctx.scale),
            index,
            stream: self.stream.clone(),
            group: crate::streams::GROUP.to_string(),
            consumer: actor.to_string(),
            key_prefix: ctx.key_prefix(),
            orders_table: format!("{}.orders", crate::connect::SCHEMA),
            cost_ms: BTreeMap::new(),
            seed: ctx.seed_for(index),
            redis_db: 0,
            extra,
        };
        let upstreams =
            Upstreams { redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, control: ctx.control };
        let w = CommandWorker::start(&self.spec, &env, actor, &client_name, upstreams, tx.clone()).await?;
        let ready = match want {
            Some(want) => w.ready(&mut ctx.redis, &client_name, want, &self.spec).await,
            None => Ok(()),
        };
        self.workers.push(w);
        ready
    }

    /// Which of `readers` (holding a job) are blocked in XREADGROUP now: done with it.
    pub async fn blocked_readers(&self, ctx: &mut RunContext<'_>, readers: &[Actor]) -> Result<Vec<Actor>, Error> {
        if readers.is_empty() {
            return Ok(Vec::new());
        }
        let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut ctx.redis).await.context("CLIENT LIST")?;
        Ok(readers.iter().copied().filter(|a| blocked_in_xreadgroup(&list, &ctx.client_name(*a))).collect())
    }

    /// Kill every process, the last started first (the claimer before the readers: a retry
    /// waiting on a reader's row lock is gone before the reader's end releases it, so what a
    /// run records after it gave up does not depend on which kill lands first), wait until
    /// its output is drained, stop the HTTP sink.
    pub async fn stop(self) {
        for w in self.workers.into_iter().rev() {
            w.stop().await;
        }
        drop(self.http);
    }
}

/// Is a connection named `client_name` blocked in XREADGROUP in this CLIENT LIST?
fn blocked_in_xreadgroup(list: &str, client_name: &str) -> bool {
    let needle = format!(" name={client_name} ");
    list.lines().any(|l| l.contains(&needle) && l.contains(" cmd=xreadgroup") && is_blocked(l))
}

/// An `XAUTOCLAIM` that found nothing idle long enough.
pub fn empty_poll(ev: &RawEvent) -> bool {
    matches!(&ev.kind, EventKind::ServerCommand { args, entries, error: false, .. }
        if entries.is_empty() && args.first().is_some_and(|c| c.eq_ignore_ascii_case("XAUTOCLAIM")))
}

/// The jobs family's events read off the recorded commands of workers from a command line.
#[derive(Debug, Default)]
pub struct WireJobs {
    /// Entry ID → (job, deliveries seen so far).
    entries: HashMap<String, (String, u64)>,
}

impl WireJobs {
    /// The job events `ev` stands for: `JobReceived` for each entry an `XREADGROUP` or
    /// `XAUTOCLAIM` reply handed over, `JobAcked` for each entry an `XACK` names; placed at
    /// the reply.
    pub fn translate(&mut self, ev: &RawEvent) -> Vec<RawEvent> {
        let EventKind::ServerCommand { args, error: false, entries, .. } = &ev.kind else {
            return Vec::new();
        };
        let at = |e: JobEvent| RawEvent { mono_ns: ev.mono_ns, actor: ev.actor, kind: e.event() };
        match args.first().map(|c| c.to_ascii_uppercase()).as_deref() {
            Some("XREADGROUP" | "XAUTOCLAIM") => entries
                .iter()
                .filter_map(|e| {
                    let job = e.fields.iter().find(|(k, _)| k == "job")?.1.clone();
                    let seen = self.entries.entry(e.id.clone()).or_insert((job.clone(), 0));
                    seen.1 += 1;
                    Some(at(JobEvent::JobReceived { entry_id: e.id.clone(), job, deliveries: seen.1 }))
                })
                .collect(),
            Some("XACK") => args
                .iter()
                .skip(3)
                .filter_map(|id| {
                    let (job, _) = self.entries.get(id)?;
                    Some(at(JobEvent::JobAcked { entry_id: id.clone(), job: job.clone() }))
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{ServerKind, WireEntry};

    fn command(actor: Actor, args: &[&str], entries: &[(&str, &str)]) -> RawEvent {
        let entries = entries
            .iter()
            .map(|(id, job)| WireEntry { id: id.to_string(), fields: vec![("job".into(), job.to_string())] })
            .collect();
        let kind = EventKind::ServerCommand {
            server: ServerKind::Redis,
            connection: 1,
            args: args.iter().map(|a| a.to_string()).collect(),
            reply: String::new(),
            error: false,
            entries,
            round_trip_us: None,
        };
        RawEvent { mono_ns: 7, actor, kind }
    }

    fn jobs(evs: Vec<RawEvent>) -> Vec<JobEvent> {
        evs.into_iter().filter_map(|e| e.kind.family::<JobEvent>()).collect()
    }

    #[test]
    fn reads_claims_and_acks_become_job_events_with_their_delivery_count() {
        let mut w = WireJobs::default();
        let read = command(Actor::Consumer(1), &["XREADGROUP", "GROUP", "g", "C1"], &[("1-0", "job-1")]);
        let got = jobs(w.translate(&read));
        assert_eq!(got, [JobEvent::JobReceived { entry_id: "1-0".into(), job: "job-1".into(), deliveries: 1 }]);
        let claim = command(Actor::Reaper, &["XAUTOCLAIM", "jobs", "g", "reaper", "500", "0-0"], &[("1-0", "job-1")]);
        let got = jobs(w.translate(&claim));
        assert_eq!(got, [JobEvent::JobReceived { entry_id: "1-0".into(), job: "job-1".into(), deliveries: 2 }]);
        let ack = command(Actor::Reaper, &["XACK", "jobs", "g", "1-0", "9-0"], &[]);
        assert_eq!(jobs(w.translate(&ack)), [JobEvent::JobAcked { entry_id: "1-0".into(), job: "job-1".into() }]);
        // Anything else stands for no job event.
        assert!(w.translate(&command(Actor::Consumer(1), &["SET", "idem:job-1", "1"], &[])).is_empty());
        assert!(!empty_poll(&claim) && empty_poll(&command(Actor::Reaper, &["XAUTOCLAIM", "jobs"], &[])));
    }

    #[test]
    fn a_reader_is_done_when_its_connection_blocks_in_xreadgroup_again() {
        let list = "id=3 addr=x name=ordlab-C1 age=0 flags=b db=0 cmd=xreadgroup\n\
                    id=4 addr=x name=ordlab-C2 age=0 flags=N db=0 cmd=set\n";
        assert!(blocked_in_xreadgroup(list, "ordlab-C1"));
        assert!(!blocked_in_xreadgroup(list, "ordlab-C2"));
        assert!(!blocked_in_xreadgroup(list, "ordlab-C"));
    }
}
