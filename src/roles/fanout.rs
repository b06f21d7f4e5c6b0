//! S3, the fan-out reader: one reader per process reads the stream and hands each entry to an
//! in-memory queue per order; a fixed number of workers (the handler budget) apply the
//! queues, one entry of an order at a time, in arrival order, and acknowledge. Order per key
//! is kept without a router and a slow order holds up only its own queue; the price is that
//! one process reads (and acknowledges) everything, and that when it dies, every entry it had
//! read but not acknowledged stays pending in its name until someone claims it.
//!
//! The reader's work per entry: parse (decode the fields), route (find or create the order's
//! queue), hand over (queue it; wake a worker if the order was idle), account (entries read
//! and not yet acknowledged: past `max_in_flight` the reader stops reading until a worker
//! finishes). Timeline lines of a worker carry the process's actor; the reader's `queued` line
//! names the order's queue (`C1/#42`).

use super::consumer::{named_connection, Applier, ConsumerConfig, HandlerMode};
use super::keyed_queues::KeyedQueues;
use crate::error::{Context, Error};
use crate::handler::order::events::HandlerEvent;
use crate::handler::order::fanout::Fanout;
use crate::handler::order::Payload;
use crate::streams::job_of;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Job, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamReadReply};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// An entry on its way to a worker.
struct Item {
    entry_id: String,
    job: Job,
    payload: Payload,
}

/// What the reader and its workers share.
struct Shared {
    queues: Mutex<KeyedQueues<i64, Item>>,
    /// A key became ready: one worker may take it.
    work: Notify,
    /// A worker finished an entry: the reader may read more.
    room: Notify,
}

/// The queue label the timeline shows: reader actor and order.
pub fn worker_name(reader: &str, order: i64) -> String {
    format!("{reader}/#{order}")
}

/// The reader loop; returns only on error. A worker that fails ends the process (status 1),
/// which the orchestrator reports as an unplanned death.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    let Some(options) = cfg.strategy.spec::<Fanout>().cloned() else {
        unreachable!("the fan-out role runs only with the fanout strategy")
    };
    crate::fault::role::install(&cfg.faults, cfg.env.seed, cfg.env.scale);
    let cfg = Arc::new(cfg);
    let actor = cfg.actor();
    let mut reader = named_connection(&cfg.env.redis_url, &cfg.client_name).await?;
    let shared =
        Arc::new(Shared { queues: Mutex::new(KeyedQueues::default()), work: Notify::new(), room: Notify::new() });
    if cfg.handler.is_strategy() {
        for w in 0..options.workers {
            // Each worker has its own connections, as each consumer process has.
            let applier = Applier::connect(actor, cfg.clone(), cfg.env.seed ^ u64::from(w)).await?;
            tokio::spawn(worker(applier, shared.clone()));
        }
    } else {
        // A measurement of the reader: workers share one connection for their XACKs, and look
        // their work up by key (a scan of the workload per entry would cost more than the reader).
        let conn = crate::connect::redis(&cfg.env.redis_url).await.context("fanout connect")?;
        let costs: Arc<CostTable> =
            Arc::new(cfg.work.per_event.iter().map(|(o, t, v, c)| ((*o, t.clone(), *v), *c)).collect());
        for _ in 0..options.workers {
            tokio::spawn(bare_worker(cfg.clone(), costs.clone(), conn.clone(), shared.clone()));
        }
    }
    StdoutSink.emit(actor, EventKind::Ready);
    loop {
        let room = options.in_flight_limit().saturating_sub(shared.queues.lock().unwrap().in_flight());
        if room == 0 {
            shared.room.notified().await;
            continue;
        }
        for entry in read(&mut reader, &cfg, &options, room).await? {
            hand_over(&cfg, actor, &shared, &entry);
        }
    }
}

/// `XREADGROUP … COUNT n BLOCK 0`: at most the room left under `max_in_flight`.
async fn read(
    reader: &mut MultiplexedConnection,
    cfg: &ConsumerConfig,
    options: &Fanout,
    room: usize,
) -> Result<Vec<StreamId>, Error> {
    let count = room.min(options.read_count as usize);
    let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(&cfg.group)
        .arg(cfg.actor().to_string())
        .arg("COUNT")
        .arg(count)
        .arg("BLOCK")
        .arg(0)
        .arg("STREAMS")
        .arg(&cfg.stream)
        .arg(">")
        .query_async(reader)
        .await
        .context("XREADGROUP")?;
    Ok(reply.unwrap_or_default().keys.into_iter().flat_map(|k| k.ids).collect())
}

/// Parse, route, hand over, account: the reader's work for one entry.
fn hand_over(cfg: &ConsumerConfig, actor: Actor, shared: &Shared, entry: &StreamId) {
    let Some(job) = job_of(entry) else {
        let detail = format!("undecodable entry {}", entry.id);
        StdoutSink.emit(actor, EventKind::crashed(false, detail));
        return;
    };
    if !cfg.handler.is_strategy() {
        // Measuring the reader: no per-entry timeline (a line costs more than the hand-over).
        let order = job.order;
        if shared
            .queues
            .lock()
            .unwrap()
            .offer(order, Item { entry_id: entry.id.clone(), job, payload: Payload::default() })
        {
            shared.work.notify_one();
        }
        return;
    }
    StdoutSink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
    // A fault at the receive fires as it is reported, before anything awaits: a crash there
    // finds every entry of the batch read, none of them acknowledged.
    let order = job.order;
    StdoutSink.emit(
        actor,
        HandlerEvent::Queued { entry_id: entry.id.clone(), worker: worker_name(&actor.to_string(), order) }.event(),
    );
    let item = Item { entry_id: entry.id.clone(), job, payload: Payload::of(entry) };
    if shared.queues.lock().unwrap().offer(order, item) {
        shared.work.notify_one();
    }
}

/// A worker: takes the next ready order's head entry, applies and acknowledges it, gives the
/// order back (to the tail of the ready queue if it has more).
async fn worker(mut applier: Applier, shared: Arc<Shared>) {
    loop {
        let next = shared.queues.lock().unwrap().take();
        let Some((order, item)) = next else {
            shared.work.notified().await;
            continue;
        };
        if let Err(e) = applier.apply_and_ack(&item.entry_id, &item.job, &item.payload).await {
            eprintln!("ordlab __role: worker {}: {e}", worker_name(&applier.actor.to_string(), order));
            std::process::exit(1);
        }
        let ready_again = shared.queues.lock().unwrap().finish(&order);
        if ready_again {
            shared.work.notify_one();
        }
        shared.room.notify_one();
    }
}

/// Work per event (order, type, version) in ms.
type CostTable = std::collections::HashMap<(i64, String, i64), f64>;

/// A worker of a reader measurement: the injected wait (or nothing), then XACK, silently.
async fn bare_worker(
    cfg: Arc<ConsumerConfig>,
    costs: Arc<CostTable>,
    mut conn: MultiplexedConnection,
    shared: Arc<Shared>,
) {
    loop {
        let next = shared.queues.lock().unwrap().take();
        let Some((order, item)) = next else {
            shared.work.notified().await;
            continue;
        };
        if cfg.handler == HandlerMode::Wait {
            let j = &item.job;
            let key = (j.order, j.event_type.clone(), j.version);
            let ms = costs.get(&key).copied().unwrap_or_else(|| cfg.work.of_type(&j.event_type));
            cfg.env.scale.sleep(ms).await;
        }
        let acked =
            redis::cmd("XACK").arg(&cfg.stream).arg(&cfg.group).arg(&item.entry_id).query_async::<i64>(&mut conn).await;
        if let Err(e) = acked {
            eprintln!("ordlab __role: worker {}: XACK: {e}", worker_name(&cfg.actor().to_string(), order));
            std::process::exit(1);
        }
        if shared.queues.lock().unwrap().finish(&order) {
            shared.work.notify_one();
        }
        shared.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_queue_is_named_by_reader_and_order() {
        assert_eq!(super::worker_name("C1", 42), "C1/#42");
    }
}
