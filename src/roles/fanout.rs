//! S3, the fan-out reader: one reader per process takes entries from the stream and hands each
//! to an in-memory queue per order, where a worker task per order applies them in order and
//! acknowledges. Order per key is kept without a router, and a slow order does not hold up
//! the others; the price is one reader's throughput and, when it dies, every entry it had
//! read but not acknowledged stays pending in its name until someone claims it.
//!
//! The reader reads `XREADGROUP … COUNT 10 BLOCK 0`; a worker is spawned the first time its
//! order is seen and lives as long as the process. Timeline lines of a worker carry the
//! process's actor; the reader's `queued` line names the worker (`C1/#42`).

use super::consumer::{maybe_crash, named_connection, Applier, ConsumerConfig};
use crate::error::{Context, Error};
use crate::strategy::Payload;
use crate::streams::job_of;
use crate::timeline::{EventKind, Job, Sink, StdoutSink};
use redis::streams::StreamReadReply;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Entries one read may return.
pub const READ_COUNT: usize = 10;

/// An entry on its way to its order's worker.
struct Item {
    entry_id: String,
    job: Job,
    payload: Payload,
}

/// The worker label the timeline shows: reader actor and order.
pub fn worker_name(reader: &str, order: i64) -> String {
    format!("{reader}/#{order}")
}

/// The reader loop; returns only on error. A worker that fails ends the process (status 1),
/// which the orchestrator reports as an unplanned death.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    let cfg = Arc::new(cfg);
    let actor = cfg.actor();
    let mut reader = named_connection(&cfg.env.redis_url, &cfg.client_name).await?;
    // Every worker shares the process's connections; each has its own random stream.
    let shared = Applier::connect(actor, cfg.clone(), cfg.env.seed).await?;
    let mut queues: HashMap<i64, mpsc::UnboundedSender<Item>> = HashMap::new();
    let mut received = 0u32;
    StdoutSink.emit(actor, EventKind::Ready);
    loop {
        let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&cfg.group)
            .arg(actor.to_string())
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg(0)
            .arg("STREAMS")
            .arg(&cfg.stream)
            .arg(">")
            .query_async(&mut reader)
            .await
            .context("XREADGROUP")?;
        for entry in reply.unwrap_or_default().keys.iter().flat_map(|k| k.ids.iter()) {
            let Some(job) = job_of(entry) else {
                let detail = format!("undecodable entry {}", entry.id);
                StdoutSink.emit(actor, EventKind::Crashed { planned: false, detail });
                continue;
            };
            StdoutSink
                .emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
            received += 1;
            // Nothing awaits between the read and this point: a crash here finds every entry
            // of the batch read, none of them acknowledged.
            maybe_crash(&cfg, received, &job);
            let order = job.order;
            let queue = queues.entry(order).or_insert_with(|| spawn_worker(&shared, order));
            let worker = worker_name(&actor.to_string(), order);
            StdoutSink.emit(actor, EventKind::Queued { entry_id: entry.id.clone(), worker });
            let item = Item { entry_id: entry.id.clone(), job, payload: Payload::of(entry) };
            queue.send(item).expect("a worker lives as long as the process");
        }
    }
}

/// A worker task for `order`: applies its queue in arrival order, one entry at a time.
fn spawn_worker(shared: &Applier, order: i64) -> mpsc::UnboundedSender<Item> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
    let mut applier = Applier {
        actor: shared.actor,
        cfg: shared.cfg.clone(),
        conn: shared.conn.clone(),
        pg: shared.pg.clone(),
        rng: rand::SeedableRng::seed_from_u64(shared.cfg.env.seed ^ order as u64),
    };
    tokio::spawn(async move {
        while let Some(item) = rx.recv().await {
            if let Err(e) = applier.apply_and_ack(&item.entry_id, &item.job, &item.payload).await {
                eprintln!("ordlab __role: worker {}: {e}", worker_name(&applier.actor.to_string(), order));
                std::process::exit(1);
            }
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_worker_is_named_by_reader_and_order() {
        assert_eq!(super::worker_name("C1", 42), "C1/#42");
    }
}
