//! The list-queue side of a run on a Redis Cluster: queues placed on their masters, worker
//! processes each seen blocked in BLMOVE on its queue's master before the next starts, the
//! producer (every job at once, or one every few ms, then a stop marker per worker), the watch
//! that records events until every worker took its marker, and the read-back of what each
//! queue's lists hold afterwards.

use crate::cluster_queue::ClusterEvent;
use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::orders::HandlerWork;
use crate::labs::consumer_group::drain;
use crate::labs::RunContext;
use crate::roles::client_list::{wait_for_client, ClientState};
use crate::roles::cluster_worker::{parse_effect, ClusterWorkerConfig, QueueKeys, QueuedJob, RetryWait, STOP};
use crate::roles::{RoleConfig, RoleProcess};
use crate::service::cluster::stats::{self, NodeCounters};
use crate::service::cluster::{keyslot, ClusterNode};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// A queue of the run: its keys, its hash slot, and its master (index) when the run began.
pub struct Queue {
    pub keys: QueueKeys,
    pub slot: u16,
    /// The processing list's slot: the queue's own, unless the keys have no common hash tag.
    pub processing_slot: u16,
    pub master: usize,
}

/// What a queue's lists held after the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueObserved {
    /// The hash tag (or the seed's key name).
    pub tag: String,
    /// The queue list's slot and the master that owned it when the run began.
    pub slot: u16,
    /// The processing list's slot (the same, unless the keys share no hash tag).
    pub processing_slot: u16,
    pub master: String,
    /// `(order, version)` per applied job, in the order they took effect.
    pub applied: Vec<(i64, i64)>,
    /// Jobs (not stop markers) still in the queue and in the processing list.
    pub left_in_queue: u64,
    pub left_in_processing: u64,
}

/// Each queue's slot and master, as the cluster says.
pub async fn place(
    conn: &mut ClusterConnection,
    keys: Vec<QueueKeys>,
    masters: &[ClusterNode],
) -> Result<Vec<Queue>, Error> {
    let mut queues = Vec::new();
    for k in keys {
        let slot = keyslot(conn, &k.queue).await.context("CLUSTER KEYSLOT")?;
        let processing_slot = keyslot(conn, &k.processing).await.context("CLUSTER KEYSLOT")?;
        let master = masters.iter().position(|m| m.owns(slot)).unwrap_or(0);
        queues.push(Queue { keys: k, slot, processing_slot, master });
    }
    Ok(queues)
}

/// How the workers of one burst (or one paced run) work.
pub struct WorkerPlan<'a> {
    pub urls: &'a [String],
    pub per_queue: u32,
    /// The first worker is `C<first>`.
    pub first: u32,
    pub work: HandlerWork,
    pub per_job_events: bool,
    pub error_sleep_ms: f64,
    pub retry_wait: Option<RetryWait>,
    /// What CLIENT LIST must show before the next worker starts.
    pub ready: ClientState,
}

impl WorkerPlan<'_> {
    /// `per_queue` workers per queue, each seen `ready` on its queue's master before the next.
    pub async fn start(
        &self,
        ctx: &RunContext<'_>,
        queues: &[Queue],
        conns: &mut [MultiplexedConnection],
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Vec<RoleProcess>, Error> {
        let mut workers = Vec::new();
        let mut index = self.first;
        for queue in queues {
            for _ in 0..self.per_queue {
                let cfg = ClusterWorkerConfig {
                    index,
                    cluster_urls: self.urls.to_vec(),
                    client_name: ctx.client_name(Actor::Consumer(index)),
                    keys: queue.keys.clone(),
                    work: self.work.clone(),
                    scale: ctx.scale,
                    per_job_events: self.per_job_events,
                    error_sleep_ms: self.error_sleep_ms,
                    retry_wait: self.retry_wait,
                };
                let name = cfg.client_name.clone();
                workers.push(ctx.spawn(&RoleConfig::of(&cfg), tx.clone())?);
                let child = workers.last().expect("just pushed");
                wait_for_client(&mut conns[queue.master], &name, self.ready, child).await?;
                index += 1;
            }
        }
        Ok(workers)
    }
}

/// Pushes the jobs of a run onto their queues.
pub struct Publisher<'a> {
    pub conn: ClusterConnection,
    pub queues: &'a [Queue],
    /// Queue index per job.
    pub jobs: Vec<(usize, QueuedJob)>,
    /// None: every job at once, one LPUSH per queue.
    pub every_ms: Option<f64>,
    pub per_job_events: bool,
    /// Stop markers per queue, pushed after its jobs.
    pub stops_per_queue: u32,
    pub scale: TimeScale,
    pub sink: &'a mpsc::UnboundedSender<RawEvent>,
}

impl Publisher<'_> {
    /// Push every job, then the stop markers; `pushed` counts the jobs pushed so far.
    pub async fn publish(mut self, pushed: watch::Sender<usize>) -> Result<(), Error> {
        let stops: Vec<String> = (0..self.stops_per_queue).map(|_| STOP.to_string()).collect();
        let Some(every) = self.every_ms else {
            let (jobs, queues) = (self.jobs.len() as u64, self.queues.len() as u32);
            self.sink.emit(Actor::Producer, ClusterEvent::JobsPushed { jobs, queues }.event());
            for (q, queue) in self.queues.iter().enumerate() {
                let mut payloads: Vec<String> =
                    self.jobs.iter().filter(|(of, _)| *of == q).map(|(_, j)| j.payload()).collect();
                payloads.extend(stops.iter().cloned());
                lpush(&mut self.conn, &queue.keys.queue, &payloads).await?;
            }
            pushed.send_replace(self.jobs.len());
            return Ok(());
        };
        let start = Instant::now();
        for (i, (q, job)) in self.jobs.iter().enumerate() {
            // The first job one interval in: what happened before it stands apart on the timeline.
            tokio::time::sleep_until(start + self.scale.duration((i + 1) as f64 * every)).await;
            let keys = &self.queues[*q].keys;
            // Stamped when the job is handed to Redis: a worker may take it before LPUSH's
            // reply is back.
            let at = crate::clock::now_ns();
            lpush(&mut self.conn, &keys.queue, &[job.payload()]).await?;
            if self.per_job_events {
                let kind =
                    ClusterEvent::JobPushed { job_id: job.id.clone(), job: job.job.clone(), queue: keys.tag.clone() }
                        .event();
                self.sink.record(RawEvent { mono_ns: at, actor: Actor::Producer, kind });
            }
            pushed.send_replace(i + 1);
        }
        for queue in self.queues {
            lpush(&mut self.conn, &queue.keys.queue, &stops).await?;
        }
        Ok(())
    }
}

async fn lpush(conn: &mut ClusterConnection, key: &str, values: &[String]) -> Result<(), Error> {
    if values.is_empty() {
        return Ok(());
    }
    redis::cmd("LPUSH").arg(key).arg(values).query_async::<i64>(conn).await.map(drop).context("LPUSH")
}

/// How a run's watch ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every worker took its stop marker.
    Finished,
    /// Nothing happened for the idle time after the last push.
    Idle,
    TimedOut,
}

/// Record events while `publish` runs, until `workers` workers took their stop markers,
/// nothing was taken or applied for `idle` after the last push, or the deadline passed.
pub async fn watch_run<T>(
    publish: impl Future<Output = Result<T, Error>>,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    workers: usize,
    idle: Option<Duration>,
    deadline: Instant,
) -> Result<(Option<T>, Ending), Error> {
    tokio::pin!(publish);
    let (mut result, mut done, mut last) = (None, 0, Instant::now());
    loop {
        if result.is_some() && done >= workers {
            return Ok((result, Ending::Finished));
        }
        let idle_at = idle.filter(|_| result.is_some()).map(|d| last + d);
        tokio::select! {
            r = &mut publish, if result.is_none() => { result = Some(r?); last = Instant::now(); }
            ev = rx.recv() => match ev {
                Some(ev) => {
                    match ev.kind.family::<ClusterEvent>().as_ref() {
                        Some(ClusterEvent::JobTaken { .. }) | Some(ClusterEvent::JobApplied { .. }) => last = Instant::now(),
                        Some(ClusterEvent::WorkerDone { .. }) => { done += 1; last = Instant::now(); }
                        _ => {}
                    }
                    raw.push(ev);
                }
                None => return Ok((result, Ending::TimedOut)),
            },
            _ = tokio::time::sleep_until(idle_at.unwrap_or(deadline)), if idle_at.is_some() => {
                return Ok((result, Ending::Idle));
            }
            _ = tokio::time::sleep_until(deadline) => return Ok((result, Ending::TimedOut)),
        }
    }
}

/// Wait (up to 15 s) until an event that `seen` accepts arrives, recording every event into
/// `raw`: readiness of a worker that never blocks (it is in its error loop).
pub async fn wait_for_event(
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    what: &str,
    seen: impl Fn(&EventKind) -> bool,
) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv()).await;
        let Ok(Some(ev)) = ev else {
            return Err(Error::NotReady { what: what.to_string(), detail: "nothing after 15 s".into() });
        };
        let done = seen(&ev.kind);
        raw.push(ev);
        if done {
            return Ok(());
        }
    }
}

/// Stop the workers and take every event still on its way.
pub async fn stop(
    workers: Vec<RoleProcess>,
    tx: mpsc::UnboundedSender<RawEvent>,
    rx: mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
) {
    for w in workers {
        w.stop().await;
    }
    drop(tx);
    drain(rx, raw);
}

/// The last moment a job took effect, among `events` (raw ns), if any did.
pub fn last_effect_ns(events: &[RawEvent]) -> Option<u64> {
    events
        .iter()
        .filter(|e| match e.kind.family::<ClusterEvent>().as_ref() {
            Some(ClusterEvent::JobApplied { .. }) => true,
            Some(ClusterEvent::WorkerDone { jobs, .. }) => *jobs > 0,
            _ => false,
        })
        .map(|e| e.mono_ns)
        .max()
}

/// Each master's counters now.
pub async fn sample_all(conns: &mut [MultiplexedConnection]) -> Result<Vec<NodeCounters>, Error> {
    let mut out = Vec::new();
    for c in conns.iter_mut() {
        out.push(stats::sample(c).await.context("INFO")?);
    }
    Ok(out)
}

/// What each queue holds after the run.
pub async fn read_back(
    conn: &mut ClusterConnection,
    queues: &[Queue],
    masters: &[ClusterNode],
) -> Result<Vec<QueueObserved>, Error> {
    let mut out = Vec::new();
    for q in queues {
        let k = &q.keys;
        let applied: Vec<String> =
            redis::cmd("LRANGE").arg(&k.applied).arg(0).arg(-1).query_async(conn).await.context("LRANGE")?;
        out.push(QueueObserved {
            tag: k.tag.clone(),
            slot: q.slot,
            processing_slot: q.processing_slot,
            master: masters[q.master].name.clone(),
            applied: applied.iter().filter_map(|e| parse_effect(e)).collect(),
            left_in_queue: jobs_in(conn, &k.queue).await?,
            left_in_processing: jobs_in(conn, &k.processing).await?,
        });
    }
    Ok(out)
}

/// Jobs left in a list (stop markers not counted).
async fn jobs_in(conn: &mut ClusterConnection, key: &str) -> Result<u64, Error> {
    let all: Vec<String> = redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(conn).await.context("LRANGE")?;
    Ok(all.iter().filter(|e| *e != STOP).count() as u64)
}

/// Delete the queues' keys, one command per key (they live in different slots).
pub async fn delete_keys(conn: &mut ClusterConnection, queues: &[Queue]) -> Result<(), Error> {
    for q in queues {
        for key in [&q.keys.queue, &q.keys.processing, &q.keys.applied] {
            redis::cmd("DEL").arg(key).query_async::<i64>(conn).await.context("DEL")?;
        }
    }
    Ok(())
}
