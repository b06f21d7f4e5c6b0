//! A priority worker: one OS process that polls one stream per priority with a loop from
//! [`crate::roles::priority_loop`], handles each job (injected work per priority) and acknowledges it.
//! Every read is a timeline line with how long it waited, so a loop's blocks show.
//!
//! A job on a priority stream is an entry with `job`, `priority`, `phase`, `traced` and
//! `queued_ns` (the producer's monotonic clock when it sent XADD, the same clock as this
//! process's, so the worker can say how long the job waited).

use crate::error::{Context, Error};
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{Phase, Priority};
use crate::roles::consumer::named_connection;
use crate::roles::priority_loop::{self, LoopSpec, Planner, Read};
use crate::roles::RoleEnv;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use redis::streams::StreamId;
use serde::{Deserialize, Serialize};

/// Everything a priority worker needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PriorityWorkerConfig {
    pub env: RoleEnv,
    /// 1-based; the process is `C<index>` in the timeline.
    pub index: u32,
    pub client_name: String,
    /// One stream per priority, highest first.
    pub streams: Vec<String>,
    pub group: String,
    #[serde(rename = "loop")]
    pub worker_loop: LoopSpec,
    /// Handler work per priority in ms (critical, normal, low; before the time scale).
    pub cost_ms: [f64; 3],
    /// Stepped by the explorer: a BLOCK with a time limit lasts until a timer step ends it,
    /// and the timeline shows the scenario's figure.
    #[serde(default)]
    pub explored: bool,
}

impl PriorityWorkerConfig {
    pub fn actor(&self) -> Actor {
        Actor::Consumer(self.index)
    }
}

/// A job as it travels on a priority queue.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuedJob {
    pub job: String,
    pub priority: Priority,
    /// The phase of the run that queued it (`backlog`, `probe`, …).
    pub phase: Phase,
    /// Shown on a line of its own in the text timeline.
    pub traced: bool,
    /// The producer's monotonic clock just before it queued the job.
    pub queued_ns: u64,
}

impl QueuedJob {
    /// `XADD <stream> * job … priority … phase … traced … queued_ns …`.
    pub fn xadd(&self, stream: &str) -> redis::Cmd {
        self.xadd_with_id(stream, "*")
    }

    /// The same with entry ID `id`.
    pub fn xadd_with_id(&self, stream: &str, id: &str) -> redis::Cmd {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(stream).arg(id);
        cmd.arg("job").arg(&self.job).arg("priority").arg(self.priority.name()).arg("phase").arg(self.phase.as_str());
        cmd.arg("traced").arg(u8::from(self.traced)).arg("queued_ns").arg(self.queued_ns);
        cmd
    }

    /// Decode an entry written by [`QueuedJob::xadd`].
    pub fn from_entry(entry: &StreamId) -> Option<QueuedJob> {
        let priority = match entry.get::<String>("priority")?.as_str() {
            "critical" => Priority::Critical,
            "normal" => Priority::Normal,
            "low" => Priority::Low,
            _ => return None,
        };
        Some(QueuedJob {
            job: entry.get("job")?,
            priority,
            phase: entry.get::<String>("phase")?.parse().ok()?,
            traced: entry.get::<String>("traced")? == "1",
            queued_ns: entry.get::<String>("queued_ns")?.parse().ok()?,
        })
    }

    /// The event that says it was queued, stamped when it was.
    pub fn queued_event(&self, actor: Actor, score: Option<f64>) -> crate::timeline::RawEvent {
        let kind = PriorityEvent::JobQueued {
            job: self.job.clone(),
            priority: self.priority,
            phase: self.phase,
            traced: self.traced,
            score,
        }
        .event();
        crate::timeline::RawEvent { mono_ns: self.queued_ns, actor, kind }
    }
}

/// The worker loop; returns only on error.
pub async fn run(cfg: PriorityWorkerConfig) -> Result<(), Error> {
    let mut conn = named_connection(&cfg.env.redis_url, &cfg.client_name).await?;
    let mut planner = Planner::new(cfg.worker_loop.clone(), cfg.streams.len());
    let actor = cfg.actor();
    StdoutSink.emit(actor, EventKind::Ready);
    loop {
        let read = planner.next();
        let started = crate::clock::now_ns();
        let consumer = actor.to_string();
        let (block, shown_at) = match cfg.explored {
            true => (read.block.arg_explored(), crate::fault::TimeScale(1.0)),
            false => (read.block.arg(cfg.env.scale), cfg.env.scale),
        };
        let entries = priority_loop::read(&mut conn, &cfg.group, &consumer, &cfg.streams, &read, block).await?;
        let waited_ms = (crate::clock::now_ns() - started) as f64 / 1e6;
        let per_stream = priority_loop::per_stream(&entries, cfg.streams.len());
        planner.got(&per_stream);
        let queues = read.streams.iter().map(|i| Priority::ALL[*i]).collect();
        let got = read.streams.iter().map(|i| per_stream[*i]).collect();
        let (line, count) = (describe(&read, shown_at), read.count);
        StdoutSink.emit(actor, PriorityEvent::QueueRead { read: line, queues, count, got, waited_ms }.event());
        for (i, entry) in &entries {
            handle(&mut conn, &cfg, *i, entry).await?;
        }
    }
}

/// One job: announced, its work, XACK, done.
async fn handle(
    conn: &mut MultiplexedConnection,
    cfg: &PriorityWorkerConfig,
    stream: usize,
    entry: &StreamId,
) -> Result<(), Error> {
    let actor = cfg.actor();
    let Some(job) = QueuedJob::from_entry(entry) else {
        let detail = format!("undecodable entry {}", entry.id);
        StdoutSink.emit(actor, EventKind::crashed(false, detail));
        return Ok(());
    };
    let waited_ms = Some(crate::clock::now_ns().saturating_sub(job.queued_ns) as f64 / 1e6);
    let (priority, traced) = (job.priority, job.traced);
    StdoutSink.emit(
        actor,
        PriorityEvent::PriorityJobTaken { job: job.job.clone(), priority, phase: job.phase, traced, waited_ms }.event(),
    );
    cfg.env.scale.sleep(cfg.cost_ms[priority.index()]).await;
    redis::cmd("XACK")
        .arg(&cfg.streams[stream])
        .arg(&cfg.group)
        .arg(&entry.id)
        .query_async::<i64>(conn)
        .await
        .context("XACK")?;
    StdoutSink.emit(actor, PriorityEvent::JobDone { job: job.job }.event());
    Ok(())
}

/// The read as a timeline shows it: `XREADGROUP low COUNT 10 BLOCK 5000` (BLOCK as sent).
pub fn describe(read: &Read, scale: crate::fault::TimeScale) -> String {
    let names: Vec<&str> = read.streams.iter().map(|i| Priority::ALL[*i].name()).collect();
    let block = match read.block.arg(scale) {
        Some(ms) => format!(" BLOCK {ms}"),
        None => String::new(),
    };
    format!("XREADGROUP {} COUNT {}{block}", names.join(" "), read.count)
}

impl crate::roles::Role for PriorityWorkerConfig {
    const NAME: &'static str = "priority-worker";

    fn actor(&self) -> crate::timeline::Actor {
        PriorityWorkerConfig::actor(self)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}

#[cfg(test)]
mod tests {
    use crate::fault::TimeScale;
    use crate::labs::priority::worker::*;
    use crate::roles::priority_loop::Block;

    #[test]
    fn reads_are_worded_as_sent() {
        let r = Read { streams: vec![2], count: 10, block: Block::Ms(5000.0) };
        assert_eq!(describe(&r, TimeScale(1.0)), "XREADGROUP low COUNT 10 BLOCK 5000");
        assert_eq!(describe(&r, TimeScale(0.2)), "XREADGROUP low COUNT 10 BLOCK 1000");
        let all = Read { streams: vec![0, 1, 2], count: 1, block: Block::No };
        assert_eq!(describe(&all, TimeScale(1.0)), "XREADGROUP critical normal low COUNT 1");
    }
}
