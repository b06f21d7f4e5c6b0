//! Past one Redis node. Seed 003 ends by promising that more worker processes on more servers
//! scale its list queue "very easily"; on a Redis Cluster a list is one key, a key is one hash
//! slot and a slot lives on one master. This lab runs the queue on a real cluster of three
//! masters through redis-rs's cluster client and measures what that means.
//!
//! The seed's keys (`queue:default`, `processing:default`) hash to different slots, so its
//! BRPOPLPUSH (here BLMOVE) is refused with CROSSSLOT. One hash-tagged queue works, and loads
//! one master while the others idle. Per-shard queues spread the load only when their hash
//! tags land on different masters (`{shard-0..2}` do not, on the usual slot split). One worker
//! per queue keeps each order's steps in order across shards (S2 at cluster scale); two do
//! not. Moving a queue's hash slot to another master while its worker runs (resharding) costs
//! a stall and nothing else, and the client's retry policy sets how long.
//!
//! One run: the cluster (three masters of the run's own, or the user's with
//! `--redis-cluster-url`); per queue, its list, processing list and applied list under one
//! hash tag, after the run's prefix (`ordlab:<nonce>:cluster:…:{tag}:queue`); worker processes blocked in BLMOVE; the producer pushes every job (at once, or
//! one every `publish_every_ms`), then a stop marker per worker; optionally a queue's slot
//! moves to the next master after `after_jobs` pushes. A throughput run repeats the burst for
//! each worker count of `workers_per_queue = [1, 3, 6]` (fresh keys and workers each time).
//! Each master's own INFO before and after says what a burst cost it; the applied lists say
//! what took effect, and in which order.

mod charts;
mod lines;
mod queue;

use crate::chart::Chart;
use crate::checker::{health::health, RunVerdict};
use crate::cluster_queue::ClusterEvent;
use crate::error::{Context, Error};
use crate::labs::cluster::slot_migration::SlotMove;
use crate::fault::TimeScale;
use crate::orders::HandlerWork;
use crate::labs::cluster::job_effects::{tally, EffectTally};
use crate::labs::cluster::spread;
use crate::labs::order_stream::{self as stream, shard_of};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Needs, Present, RunContext, RunOutcome, RunView,
    TimelineDisplay, VariantRuns,
};
use crate::lang::{pick, Lang};
use crate::roles::client_list::ClientState;
use crate::roles::cluster_worker::{QueueKeys, QueuedJob, RetryWait};
use crate::service::cluster::stats::NodeCounters;
use crate::service::cluster::{tag_on, ClusterNode, RedisCluster};
use crate::timeline::{Event, EventKind, Job, NullSink, RawEvent};
use lines::{master_lines, point_line, queue_lines, reshard_lines};
use queue::{
    delete_keys, last_effect_ns, place, read_back, sample_all, stop, wait_for_event, watch_run, Ending, Publisher,
    Queue, QueueObserved, WorkerPlan,
};
use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// The seed's sleep after any error in its worker loop.
const SEED_ERROR_SLEEP_MS: f64 = 1000.0;

/// `kind = "cluster"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Masters of the lab's own cluster (the user's cluster has its own number).
    #[serde(default = "three")]
    pub masters: u32,
    pub keys: KeyLayout,
    /// Queues of `naive-tags`; `balanced-tags` has one per master, the others one.
    #[serde(default = "three")]
    pub shards: u32,
    /// Workers per queue; a list makes a throughput run with one burst per count.
    #[serde(default)]
    pub workers_per_queue: WorkerCounts,
    /// Orders 1..=orders, each with one job per step, pushed order by order; an order's jobs
    /// go to queue `order mod queues`.
    pub orders: u32,
    #[serde(default = "default_steps")]
    pub steps: Vec<String>,
    /// Injected handler work in ms per step (before `--time-scale`).
    #[serde(default)]
    pub cost_ms: BTreeMap<String, f64>,
    /// One job every this many ms; absent: every job at once (one LPUSH per queue).
    #[serde(default)]
    pub publish_every_ms: Option<f64>,
    /// A timeline event per step of every job; false: only each worker's summary (a
    /// throughput run, where per-job events would measure the harness).
    #[serde(default = "yes")]
    pub per_job_events: bool,
    #[serde(default)]
    pub reshard: Option<ReshardPlan>,
    /// The workers' cluster client waits this long before retrying a TRYAGAIN (default:
    /// redis-rs's own, at least 1280 ms).
    #[serde(default)]
    pub retry_wait_ms: Option<RetryWait>,
    /// With per-job events, the run ends once no worker has taken or applied a job for this
    /// long (ms, before the scale) after the last push: what is not done by then is not done.
    #[serde(default = "default_idle_ms")]
    pub idle_ms: f64,
}

/// Which keys the queue uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyLayout {
    /// The seed's `queue:default` and `processing:default`: two slots.
    Seed,
    /// One queue, its keys under one hash tag `{queue:default}`.
    OneKey,
    /// `{shard-0}`, `{shard-1}`, … as one would write them, wherever their slots land.
    NaiveTags,
    /// One queue per master, each tag picked so its slot is on that master.
    BalancedTags,
}

/// `workers_per_queue = 2` or `[1, 3, 6]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum WorkerCounts {
    One(u32),
    Sweep(Vec<u32>),
}

impl Default for WorkerCounts {
    fn default() -> Self {
        WorkerCounts::One(1)
    }
}

impl WorkerCounts {
    pub fn counts(&self) -> Vec<u32> {
        match self {
            WorkerCounts::One(n) => vec![*n],
            WorkerCounts::Sweep(v) => v.clone(),
        }
    }
}

/// `reshard = { queue = 0, after_jobs = 60, window_ms = 300 }`: once `after_jobs` jobs are
/// pushed, queue `queue`'s hash slot moves to the next master; its keys wait `window_ms`
/// between the slot being marked and being moved.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReshardPlan {
    #[serde(default)]
    pub queue: u32,
    pub after_jobs: u32,
    pub window_ms: f64,
}

/// What one run observed: one point per worker count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterObserved {
    pub points: Vec<PointObserved>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reshard: Option<ReshardObserved>,
    /// The user's cluster, not the lab's own.
    pub external: bool,
}

/// One burst (or one paced run) with `workers_per_queue` workers per queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointObserved {
    pub workers_per_queue: u32,
    /// Per master, in name order: its slots when the point began and its counters over it.
    pub masters: Vec<MasterLoad>,
    pub queues: Vec<QueueObserved>,
    /// Wall time between the two INFO samples, µs.
    pub window_us: i64,
    /// From the first push to the last job taking effect, µs (0 when none did).
    pub elapsed_us: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MasterLoad {
    pub name: String,
    pub slots: Vec<(u16, u16)>,
    pub counters: NodeCounters,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReshardObserved {
    pub tag: String,
    pub slot: u16,
    pub from: String,
    pub to: String,
    pub keys_moved: u64,
}

fn three() -> u32 {
    3
}
fn yes() -> bool {
    true
}
fn default_steps() -> Vec<String> {
    vec!["created".into(), "paid".into()]
}
fn default_idle_ms() -> f64 {
    5000.0
}

/// What a run keeps open while it goes: the masters, a connection to each, a cluster
/// connection of the orchestrator's own, and the events so far.
struct Session<'a> {
    urls: &'a [String],
    masters: Vec<ClusterNode>,
    conns: Vec<MultiplexedConnection>,
    conn: ClusterConnection,
    raw: Vec<RawEvent>,
}

impl ClusterSpec {
    /// Every job, order by order: `job-000001` is order 1's first step.
    pub fn jobs(&self) -> Vec<QueuedJob> {
        let steps = self.steps.iter().enumerate();
        (1..=self.orders as i64)
            .flat_map(|order| steps.clone().map(move |(i, s)| Job::new(order, s, i as i64 + 1)))
            .enumerate()
            .map(|(n, job)| QueuedJob { id: format!("job-{:06}", n + 1), job })
            .collect()
    }

    fn expected(&self) -> Vec<(i64, i64)> {
        self.jobs().iter().map(|j| (j.job.order, j.job.version)).collect()
    }

    /// Queues on a cluster of `masters` masters.
    fn queue_count(&self, masters: usize) -> usize {
        match self.keys {
            KeyLayout::Seed | KeyLayout::OneKey => 1,
            KeyLayout::NaiveTags => self.shards as usize,
            KeyLayout::BalancedTags => masters,
        }
    }

    fn work(&self) -> HandlerWork {
        HandlerWork::new(&self.cost_ms, &[])
    }

    /// Every job pushed at once and only each worker's summary recorded: what the run measures
    /// is throughput and where the load went.
    fn is_throughput_run(&self) -> bool {
        !self.per_job_events
    }

    /// The spread is judged for a queue that works (not the seed's keys) on a fixed layout
    /// (no reshard).
    fn judges_spread(&self) -> bool {
        self.keys != KeyLayout::Seed && self.reshard.is_none()
    }

    /// One worker per queue: each order's steps are taken one at a time, so their order is
    /// certain (a fact the same in every run).
    fn order_is_certain(&self) -> bool {
        self.workers_per_queue.counts().iter().all(|n| *n == 1)
    }

    /// A point's hard limit: every job's work done by one worker, the pushes, a reshard, the
    /// idle time, three times over, plus 30 s.
    fn bound(&self, scale: TimeScale) -> Duration {
        let jobs = self.jobs();
        let work: f64 = jobs.iter().map(|j| self.work().cost_ms(&j.job)).sum();
        let pushes = self.publish_every_ms.unwrap_or(0.0) * jobs.len() as f64;
        let reshard = self.reshard.as_ref().map_or(0.0, |r| r.window_ms);
        scale.duration((work + pushes + reshard + self.idle_ms) * 3.0) + Duration::from_secs(30)
    }

    /// The queues' keys for one point (prefix `…:p<point>:`): the layout's tags.
    fn keys_of(&self, prefix: &str, tags: &[String]) -> Vec<QueueKeys> {
        if self.keys == KeyLayout::Seed {
            let key = |name: &str| format!("{prefix}{name}:default");
            let (queue, processing, applied) = (key("queue"), key("processing"), key("applied"));
            return vec![QueueKeys { tag: "queue:default".into(), queue, processing, applied }];
        }
        tags.iter()
            .map(|tag| QueueKeys {
                queue: format!("{prefix}{tag}:queue"),
                processing: format!("{prefix}{tag}:processing"),
                applied: format!("{prefix}{tag}:applied"),
                tag: tag.clone(),
            })
            .collect()
    }

    /// The hash tags of the layout (none for the seed's keys).
    async fn tags(&self, conn: &mut ClusterConnection, masters: &[ClusterNode]) -> Result<Vec<String>, Error> {
        Ok(match self.keys {
            KeyLayout::Seed => Vec::new(),
            KeyLayout::OneKey => vec!["{queue:default}".into()],
            KeyLayout::NaiveTags => (0..self.shards).map(|k| format!("{{shard-{k}}}")).collect(),
            KeyLayout::BalancedTags => {
                let (mut taken, mut tags) = (Vec::new(), Vec::new());
                for (i, m) in masters.iter().enumerate() {
                    let picked = tag_on(conn, &format!("shard-{i}"), m, &taken).await.context("CLUSTER KEYSLOT")?;
                    let (tag, slot) = picked.ok_or_else(|| Error::NotReady {
                        what: format!("a hash tag on master {}", m.name),
                        detail: "none of 1000 candidates has its slot there: the master owns almost no slots".into(),
                    })?;
                    taken.push(slot);
                    tags.push(tag);
                }
                tags
            }
        })
    }
}

/// What one point of a run gives back.
struct PointOutcome {
    point: PointObserved,
    reshard: Option<ReshardObserved>,
    /// When its first push began (raw ns).
    started_ns: u64,
    timed_out: bool,
}

impl ClusterSpec {
    /// One run on `cluster`: the tags, then one point per worker count.
    async fn run_on(&self, ctx: &RunContext<'_>, cluster: &RedisCluster) -> Result<RunOutcome<ClusterObserved>, Error> {
        let masters = cluster.masters().await?;
        let mut conns = Vec::new();
        for m in &masters {
            conns.push(crate::connect::redis(&m.url).await.context(&format!("connect to master {}", m.name))?);
        }
        let client = cluster.client().context("cluster client")?;
        let conn = client.get_async_connection().await.context("cluster connect")?;
        let mut s = Session { urls: &cluster.urls, masters, conns, conn, raw: Vec::new() };
        let tags = self.tags(&mut s.conn, &s.masters).await?;
        let (mut points, mut reshard, mut timed_out, mut t0) = (Vec::new(), None, false, None);
        let mut first = 1;
        for (p, per_queue) in self.workers_per_queue.counts().into_iter().enumerate() {
            let prefix = format!("{}p{}:", ctx.key_prefix(), p + 1);
            let queues = place(&mut s.conn, self.keys_of(&prefix, &tags), &s.masters).await?;
            let out = self.run_point(ctx, &mut s, &queues, per_queue, first).await;
            // On the user's cluster they stay until the run ends: its namespace removes them
            // then, or `--keep` keeps them to look at (service::namespace).
            if cluster.is_own() {
                delete_keys(&mut s.conn, &queues).await?;
            }
            let out = out?;
            if let Some(r) = &out.reshard {
                move_back(r, &s.masters, ctx.scale).await?;
            }
            first += per_queue * queues.len() as u32;
            t0.get_or_insert(out.started_ns);
            timed_out |= out.timed_out;
            reshard = reshard.or(out.reshard);
            points.push(out.point);
            if timed_out {
                break;
            }
        }
        let observed = ClusterObserved { points, reshard, external: !cluster.is_own() };
        let t0_ns = t0.unwrap_or_else(crate::clock::now_ns);
        Ok(RunOutcome { t0_ns, raw: s.raw, timed_out, observed })
    }

    /// Workers blocked on the queues, every job pushed (and the slot moved), until every
    /// worker took its stop marker; each master's counters before and after.
    async fn run_point(
        &self,
        ctx: &RunContext<'_>,
        s: &mut Session<'_>,
        queues: &[Queue],
        per_queue: u32,
        first: u32,
    ) -> Result<PointOutcome, Error> {
        delete_keys(&mut s.conn, queues).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let ready = if self.keys == KeyLayout::Seed { ClientState::Connected } else { ClientState::BlockedInBlmove };
        let plan = WorkerPlan {
            urls: s.urls,
            per_queue,
            first,
            work: self.work(),
            per_job_events: self.per_job_events,
            error_sleep_ms: SEED_ERROR_SLEEP_MS,
            retry_wait: self.retry_wait_ms,
            ready,
        };
        let workers = plan.start(ctx, queues, &mut s.conns, &tx).await?;
        if self.keys == KeyLayout::Seed {
            // Its BLMOVE is refused at once, so it never blocks: ready once it is in its loop.
            let first_error =
                |k: &EventKind| matches!(k.family::<ClusterEvent>(), Some(ClusterEvent::QueueError { .. }));
            wait_for_event(&mut rx, &mut s.raw, "the worker's first BLMOVE", first_error).await?;
        }
        let before = sample_all(&mut s.conns).await?;
        let (sampled, started_ns, from) = (Instant::now(), crate::clock::now_ns(), s.raw.len());
        let n = queues.len() as u32;
        let publisher = Publisher {
            conn: s.conn.clone(),
            queues,
            jobs: self.jobs().into_iter().map(|j| (shard_of(j.job.order, n) as usize, j)).collect(),
            every_ms: self.publish_every_ms,
            per_job_events: self.per_job_events,
            stops_per_queue: per_queue,
            scale: ctx.scale,
            sink: &tx,
        };
        let (pushed_tx, pushed_rx) = watch::channel(0usize);
        let masters = &s.masters;
        let publish = async {
            let resharder = self.reshard(queues, masters, ctx.scale, pushed_rx, &tx);
            let ((), moved) = tokio::try_join!(publisher.publish(pushed_tx), resharder)?;
            Ok::<_, Error>(moved)
        };
        let idle = self.per_job_events.then(|| ctx.scale.duration(self.idle_ms));
        let deadline = Instant::now() + self.bound(ctx.scale);
        let (moved, ending) = watch_run(publish, &mut rx, &mut s.raw, workers.len(), idle, deadline).await?;
        let after = sample_all(&mut s.conns).await?;
        let window_us = sampled.elapsed().as_micros() as i64;
        stop(workers, tx, rx, &mut s.raw).await;
        let elapsed_us = last_effect_ns(&s.raw[from..]).map_or(0, |t| (t.saturating_sub(started_ns) / 1000) as i64);
        let masters = s
            .masters
            .iter()
            .zip(before.iter().zip(&after))
            .map(|(m, (b, a))| MasterLoad { name: m.name.clone(), slots: m.slots.clone(), counters: a.since(b) })
            .collect();
        let queues = read_back(&mut s.conn, queues, &s.masters).await?;
        let point = PointObserved { workers_per_queue: per_queue, masters, queues, window_us, elapsed_us };
        let timed_out = ending == Ending::TimedOut;
        Ok(PointOutcome { point, reshard: moved.flatten(), started_ns, timed_out })
    }

    /// Move the planned queue's slot to the next master once enough jobs are pushed.
    async fn reshard(
        &self,
        queues: &[Queue],
        masters: &[ClusterNode],
        scale: TimeScale,
        mut pushed: watch::Receiver<usize>,
        sink: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Option<ReshardObserved>, Error> {
        let Some(plan) = &self.reshard else { return Ok(None) };
        let after = plan.after_jobs as usize;
        // The producer's sender lives until it has pushed everything.
        let _ = pushed.wait_for(|n| *n >= after).await;
        let queue = queues.get(plan.queue as usize).ok_or_else(|| Error::NotReady {
            what: format!("queue {} to reshard", plan.queue),
            detail: format!("this cluster gives {} queues", queues.len()),
        })?;
        let (from, to) = (&masters[queue.master], &masters[(queue.master + 1) % masters.len()]);
        let slot = queue.slot;
        let moved = SlotMove { slot, from, to, masters, window_ms: plan.window_ms, scale };
        let keys_moved = moved.run(sink).await?;
        let (tag, from, to) = (queue.keys.tag.clone(), from.name.clone(), to.name.clone());
        Ok(Some(ReshardObserved { tag, slot, from, to, keys_moved }))
    }

    fn tally(&self, point: &PointObserved) -> EffectTally {
        let lists: Vec<Vec<(i64, i64)>> = point.queues.iter().map(|q| q.applied.clone()).collect();
        tally(&self.expected(), &lists)
    }
}

/// Give a moved slot back to its first master (its keys are deleted by now), so the next run
/// finds the cluster as it was first read. Not on the timeline: it is not part of the lab.
async fn move_back(r: &ReshardObserved, masters: &[ClusterNode], scale: TimeScale) -> Result<(), Error> {
    let by_name = |n: &str| masters.iter().find(|m| m.name == n);
    let (Some(from), Some(to)) = (by_name(&r.to), by_name(&r.from)) else { return Ok(()) };
    SlotMove { slot: r.slot, from, to, masters, window_ms: 0.0, scale }.run(&NullSink).await.map(drop)
}

/// What one point measured.
#[derive(Debug, Default, PartialEq)]
struct Measures {
    workers: u32,
    /// Jobs that took effect per second, from the first push to the last one.
    jobs_per_s: i64,
    /// Per master: its share of the queue commands and its main thread's busy time, in %.
    shares: Vec<f64>,
    busy: Vec<f64>,
    /// Jobs per second of the busiest master's main-thread CPU: the rate at which that
    /// master's one thread would be full, at this point's cost per job.
    ceiling_jobs_per_s: i64,
}

fn measure(p: &PointObserved) -> Measures {
    let applied: usize = p.queues.iter().map(|q| q.applied.len()).sum();
    let per_master: Vec<(String, u64)> =
        p.masters.iter().map(|m| (m.name.clone(), m.counters.queue_commands)).collect();
    let busiest_cpu = p.masters.iter().map(|m| m.counters.cpu_us).max().unwrap_or(0);
    let per_s = |n: usize, us: i64| if us > 0 { (n as f64 * 1e6 / us as f64) as i64 } else { 0 };
    Measures {
        workers: p.workers_per_queue * p.queues.len() as u32,
        jobs_per_s: per_s(applied, p.elapsed_us),
        shares: spread::shares(&per_master),
        busy: p.masters.iter().map(|m| m.counters.cpu_us as f64 * 100.0 / p.window_us.max(1) as f64).collect(),
        ceiling_jobs_per_s: per_s(applied, busiest_cpu),
    }
}

/// The longest gap between consecutive effects on queue `tag`, and the longest on any other.
fn gaps(events: &[Event], tag: &str) -> (i64, i64) {
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    let (mut mine, mut others) = (0, 0);
    let decoded: Vec<(i64, ClusterEvent)> =
        events.iter().filter_map(|e| e.kind.family().map(|c| (e.t_us, c))).collect();
    for (t_us, e) in &decoded {
        if let ClusterEvent::JobApplied { queue, .. } = e {
            if let Some(prev) = last.insert(queue.as_str(), *t_us) {
                let gap = t_us - prev;
                if queue == tag {
                    mine = mine.max(gap);
                } else {
                    others = others.max(gap);
                }
            }
        }
    }
    (mine, others)
}

/// What a cluster run measured. The seed's key layout measures only CROSSSLOT errors beyond
/// the counts; the others measure how jobs spread over the masters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterFacts {
    pub jobs: i64,
    pub applied: i64,
    pub duplicated: i64,
    pub out_of_order: i64,
    /// The layout keeps each queue's order, so `out_of_order` is the same in every run.
    pub order_is_certain: bool,
    /// CROSSSLOT errors (the seed's key layout only).
    pub crossslot: Option<i64>,
    /// The largest and smallest share of the jobs one master held, in percent.
    pub max_share_pct: Option<i64>,
    pub min_share_pct: Option<i64>,
    /// The point with the highest throughput, in a throughput run.
    pub peak: Option<ClusterPeak>,
    /// What moving a hash slot did, where the run moved one.
    pub reshard: Option<ReshardFacts>,
}

/// The point of a throughput run with the most jobs per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterPeak {
    pub jobs_per_s: i64,
    pub workers: i64,
    /// The run had a single point, so `workers` is the same in every run.
    pub one_point: bool,
    pub max_busy_pct: i64,
    pub ceiling_jobs_per_s: i64,
}

/// What a hash slot moved while workers ran did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReshardFacts {
    /// The longest gap between consecutive effects on the moved slot's queue, and on any other.
    pub stall_ms: i64,
    pub other_queues_max_gap_ms: i64,
    pub keys_moved: i64,
    /// ASK, MOVED and TRYAGAIN replies the masters counted.
    pub ask: i64,
    pub moved: i64,
    pub tryagain: i64,
}

impl Facts for ClusterFacts {
    fn rows(&self) -> Vec<FactRow> {
        let mut rows = vec![
            FactRow::stable("jobs", self.jobs),
            FactRow::stable("applied", self.applied),
            FactRow::stable("duplicated", self.duplicated),
            FactRow::new("out_of_order", self.out_of_order, self.order_is_certain),
        ];
        rows.extend(self.crossslot.map(|n| FactRow::measured("crossslot", n)));
        rows.extend(self.max_share_pct.map(|n| FactRow::measured("max_share_pct", n)));
        rows.extend(self.min_share_pct.map(|n| FactRow::measured("min_share_pct", n)));
        if let Some(p) = &self.peak {
            rows.extend([
                FactRow::measured("peak_jobs_per_s", p.jobs_per_s),
                FactRow::new("peak_workers", p.workers, p.one_point),
                FactRow::measured("peak_max_busy_pct", p.max_busy_pct),
                FactRow::measured("peak_ceiling_jobs_per_s", p.ceiling_jobs_per_s),
            ]);
        }
        if let Some(r) = &self.reshard {
            rows.extend([
                FactRow::measured("stall_ms", r.stall_ms),
                FactRow::measured("other_queues_max_gap_ms", r.other_queues_max_gap_ms),
                FactRow::measured("keys_moved", r.keys_moved),
                FactRow::measured("ask", r.ask),
                FactRow::measured("moved", r.moved),
                FactRow::measured("tryagain", r.tryagain),
            ]);
        }
        rows
    }
}

impl LabProcedure for ClusterSpec {
    fn validate(&mut self) -> Result<(), String> {
        let counts = self.workers_per_queue.counts();
        if self.masters == 0 || self.shards == 0 || self.orders == 0 || counts.is_empty() || counts.contains(&0) {
            return Err("setup: masters, shards, orders and every workers_per_queue must be at least 1".into());
        }
        if self.steps.is_empty() {
            return Err("setup.steps is empty: name at least one step (\"created\")".into());
        }
        stream::check_costs(&self.cost_ms)?;
        if self.publish_every_ms.is_some_and(|e| !e.is_finite() || e < 0.0)
            || self.idle_ms.is_nan()
            || self.idle_ms <= 0.0
        {
            return Err("setup: publish_every_ms must be ≥ 0 and idle_ms > 0 (ms)".into());
        }
        if counts.len() > 1 && self.per_job_events {
            return Err(
                "setup.workers_per_queue lists several counts: that is a throughput run, set per_job_events = false"
                    .into(),
            );
        }
        let Some(plan) = &self.reshard else { return Ok(()) };
        let jobs = self.orders as usize * self.steps.len();
        if self.publish_every_ms.is_none() || !self.per_job_events || self.keys == KeyLayout::Seed || counts.len() > 1 {
            return Err("setup.reshard needs tagged keys, a steady producer (publish_every_ms), per_job_events = true and one worker count".into());
        }
        if plan.queue as usize >= self.queue_count(self.masters as usize) || plan.after_jobs as usize > jobs {
            return Err(format!(
                "setup.reshard: queue must name one of the queues, after_jobs at most the {jobs} jobs"
            ));
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<ClusterObserved>, Error> {
        // Ours is kept for the next runs and stopped with the services (killed if dropped).
        let cluster = ctx.services.redis_cluster(self.masters).await?;
        self.run_on(ctx, &cluster).await
    }

    fn needs(&self) -> Needs {
        let not_external = self.reshard.as_ref().map(|_| "it moves a hash slot between the cluster's masters");
        Needs { cluster: true, not_external, ..Needs::default() }
    }
}

impl Judge for ClusterSpec {
    type Observed = ClusterObserved;
    type Facts = ClusterFacts;

    fn judge(&self, run: &RunView<'_, ClusterObserved>) -> RunVerdict {
        let o = run.observed;
        let mut v = health(run.events, run.timed_out);
        for p in &o.points {
            let mut found = self.tally(p).verdict(true);
            if self.judges_spread() {
                let per_master: Vec<(String, u64)> =
                    p.masters.iter().map(|m| (m.name.clone(), m.counters.queue_commands)).collect();
                found = found.and(spread::spread(&per_master));
            }
            if o.points.len() > 1 {
                let w = p.workers_per_queue;
                found.reasons.iter_mut().for_each(|r| *r = format!("with {w} per queue: {r}"));
            }
            v = v.and(found);
        }
        v
    }

    fn final_state(&self, o: &ClusterObserved) -> Vec<FinalItem> {
        let jobs = self.jobs();
        let mut items: Vec<FinalItem> = Vec::new();
        for p in &o.points {
            let n = p.queues.len() as u32;
            for (q, seen) in p.queues.iter().enumerate() {
                let want = jobs.iter().filter(|j| shard_of(j.job.order, n) as usize == q).count();
                let done = seen.applied.len();
                let subject = if o.points.len() > 1 {
                    format!("{}×{}", seen.tag, p.workers_per_queue)
                } else {
                    seen.tag.clone()
                };
                let should_be = (done != want).then(|| format!("{want}/{want}"));
                items.push(FinalItem { order: None, subject, value: format!("{done}/{want}"), should_be });
            }
            let late = self.tally(p).out_of_order.len();
            if late > 0 {
                let subject = "out-of-order".to_string();
                items.push(FinalItem { order: None, subject, value: late.to_string(), should_be: Some("0".into()) });
            }
        }
        items
    }

    fn facts(&self, run: &RunView<'_, ClusterObserved>) -> ClusterFacts {
        let o = run.observed;
        let tallies: Vec<EffectTally> = o.points.iter().map(|p| self.tally(p)).collect();
        let measures: Vec<Measures> = o.points.iter().map(measure).collect();
        let total = |f: fn(&EffectTally) -> usize| tallies.iter().map(f).sum::<usize>() as i64;
        let mut facts = ClusterFacts {
            jobs: self.jobs().len() as i64,
            applied: total(|t| t.applied),
            duplicated: total(|t| t.duplicated.len()),
            out_of_order: total(|t| t.out_of_order.len()),
            order_is_certain: self.order_is_certain(),
            ..ClusterFacts::default()
        };
        let sum = |f: fn(&NodeCounters) -> u64| {
            o.points.iter().flat_map(|p| &p.masters).map(|m| f(&m.counters) as i64).sum::<i64>()
        };
        if self.keys == KeyLayout::Seed {
            facts.crossslot = Some(sum(|c| c.crossslot));
            return facts;
        }
        let shares = measures.iter().flat_map(|m| m.shares.iter().copied());
        let (hi, lo) = shares.fold((0.0f64, 100.0f64), |(h, l), s| (h.max(s), l.min(s)));
        (facts.max_share_pct, facts.min_share_pct) = (Some(hi.round() as i64), Some(lo.round() as i64));
        if let Some(peak) = measures.iter().max_by_key(|m| m.jobs_per_s).filter(|_| self.is_throughput_run()) {
            facts.peak = Some(ClusterPeak {
                jobs_per_s: peak.jobs_per_s,
                workers: peak.workers as i64,
                one_point: measures.len() == 1,
                max_busy_pct: peak.busy.iter().copied().fold(0.0f64, f64::max).round() as i64,
                ceiling_jobs_per_s: peak.ceiling_jobs_per_s,
            });
        }
        if let Some(r) = &o.reshard {
            let (stall, other) = gaps(run.events, &r.tag);
            facts.reshard = Some(ReshardFacts {
                stall_ms: stall / 1000,
                other_queues_max_gap_ms: other / 1000,
                keys_moved: r.keys_moved as i64,
                ask: sum(|c| c.ask),
                moved: sum(|c| c.moved),
                tryagain: sum(|c| c.tryagain),
            });
        }
        facts
    }
}

impl Present for ClusterSpec {
    fn describe(&self, lang: Lang) -> String {
        let masters = self.masters;
        let keys = match (self.keys, lang) {
            (KeyLayout::Seed, Lang::En) => "the seed's keys queue:default + processing:default".to_string(),
            (KeyLayout::Seed, Lang::Vi) => "key của seed queue:default + processing:default".to_string(),
            (KeyLayout::OneKey, _) => crate::tr!(lang, "one queue {{queue:default}}", "một hàng đợi {{queue:default}}"),
            (KeyLayout::NaiveTags, _) => {
                let last = self.shards - 1;
                crate::tr!(lang, "queues {{shard-0}}…{{shard-{last}}}", "các hàng đợi {{shard-0}}…{{shard-{last}}}")
            }
            (KeyLayout::BalancedTags, _) => {
                crate::tr!(
                    lang,
                    "one queue per master, tags picked by slot",
                    "mỗi master một hàng đợi, tag chọn theo slot"
                )
            }
        };
        let counts = self.workers_per_queue.counts();
        let w: Vec<String> = counts.iter().map(u32::to_string).collect();
        let w = w.join(", ");
        let workers = if counts == [1] {
            pick(lang, "1 worker per queue (BLMOVE, LREM)", "1 worker mỗi hàng đợi (BLMOVE, LREM)").to_string()
        } else {
            crate::tr!(lang, "{w} workers per queue (BLMOVE, LREM)", "{w} worker mỗi hàng đợi (BLMOVE, LREM)")
        };
        let mut parts = vec![
            crate::tr!(lang, "Redis Cluster of {masters} masters", "Redis Cluster {masters} master"),
            keys,
            workers,
            self.jobs_phrase(lang),
        ];
        if let Some(r) = &self.reshard {
            let (q, after, window) = (r.queue, r.after_jobs, r.window_ms);
            parts.push(crate::tr!(
                lang,
                "after {after} jobs queue {q}'s slot moves to the next master ({window} ms between MIGRATING and MIGRATE)",
                "sau {after} job, slot của hàng đợi {q} chuyển sang master kế tiếp ({window} ms giữa MIGRATING và MIGRATE)"
            ));
        }
        if self.reshard.is_some() {
            parts.push(self.client_phrase(lang));
        }
        parts.join("; ")
    }

    fn approach(&self) -> String {
        let keys = match self.keys {
            KeyLayout::Seed => "seed keys",
            KeyLayout::OneKey => "one key",
            KeyLayout::NaiveTags => "naive hash tags",
            KeyLayout::BalancedTags => "hash tags per master",
        };
        let w: Vec<String> = self.workers_per_queue.counts().iter().map(u32::to_string).collect();
        let reshard = if self.reshard.is_some() { ", slot moved" } else { "" };
        format!("{keys}, {} per queue{reshard}", w.join("/"))
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let spread = if self.judges_spread() {
            pick(lang, ", or the load not spread over the masters", ", hoặc tải không trải đều các master")
        } else {
            ""
        };
        crate::tr!(
            lang,
            "wrong: a job not done or done twice, an order's steps out of order{spread}",
            "SAI: job không chạy hoặc chạy hai lần, các bước của một đơn sai thứ tự{spread}"
        )
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay { many_orders: true, ..TimelineDisplay::default() }
    }

    fn compare(variants: &[VariantRuns<'_, Self>]) -> Vec<Chart> {
        charts::compare(variants)
    }

    fn per_run_lines(&self, runs: &[RunView<'_, ClusterObserved>], lang: Lang) -> Vec<Line> {
        let Some(run) = runs.first() else { return Vec::new() };
        let o = run.observed;
        let Some(first) = o.points.first() else { return Vec::new() };
        let mut lines = queue_lines(first, o.points.len() == 1, lang);
        if self.is_throughput_run() {
            lines.extend(o.points.iter().map(|p| point_line(p, &measure(p), self.tally(p).out_of_order.len(), lang)));
        } else if self.keys != KeyLayout::Seed {
            lines.extend(master_lines(first, &measure(first), lang));
        }
        if let Some(r) = &o.reshard {
            lines.extend(reshard_lines(o, r, run.events, lang));
        }
        lines
    }
}

impl ClusterSpec {
    /// What the workers' cluster client does with redirections and TRYAGAIN.
    fn client_phrase(&self, lang: Lang) -> String {
        let wait = match self.retry_wait_ms {
            Some(RetryWait { min, max }) => crate::tr!(lang, "after {min}–{max} ms", "sau {min}–{max} ms"),
            None => pick(lang, "after at least 1280 ms (its default)", "sau ít nhất 1280 ms (mặc định)").to_string(),
        };
        crate::tr!(
            lang,
            "redis-rs 1.8 cluster client: MOVED and ASK followed at once, TRYAGAIN retried (up to 16 times) {wait}",
            "cluster client redis-rs 1.8: MOVED và ASK chuyển hướng ngay, TRYAGAIN thử lại (tối đa 16 lần) {wait}"
        )
    }

    /// `60 orders × created/paid, pushed at once` or `… one job every 10 ms`.
    fn jobs_phrase(&self, lang: Lang) -> String {
        let (orders, steps) = (self.orders, self.steps.join("/"));
        let costs: Vec<String> = self
            .steps
            .iter()
            .filter_map(|s| self.cost_ms.get(s).filter(|c| **c > 0.0).map(|c| format!("{s} {c} ms")))
            .collect();
        let work = if costs.is_empty() { String::new() } else { format!(" ({})", costs.join(", ")) };
        match self.publish_every_ms {
            None => crate::tr!(
                lang,
                "{orders} orders × {steps}{work}, pushed at once",
                "{orders} đơn × {steps}{work}, đẩy một lần"
            ),
            Some(e) => crate::tr!(
                lang,
                "{orders} orders × {steps}{work}, one job every {e} ms",
                "{orders} đơn × {steps}{work}, mỗi {e} ms một job"
            ),
        }
    }
}
