//! S3, fan-out: one reader per process takes entries from the stream and hands each to an
//! in-memory queue per order, where a worker task per order applies them in order and
//! acknowledges. Order per key is kept without a router, and a slow order does not hold up
//! the others; the price is one reader's throughput and, when it dies, every entry it had
//! read but not acknowledged stays pending in its name until someone claims it.
//!
//! Selected with `strategy = "fanout"`; every consumer process of such a lab runs [`run`].
//! The reader reads `XREADGROUP … COUNT 10 BLOCK 0`; a worker is spawned the first time its
//! order is seen and lives as long as the process. Timeline lines of a worker carry the
//! process's actor; the reader's `queued` line names the worker (`C1/#42`).

use crate::connect;
use crate::consumer::{job_of, ConsumerConfig};
use crate::error::{Context, Error};
use crate::timeline::{EventKind, Job, Sink, StdoutSink};
use rand::SeedableRng;
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
    state: Option<String>,
}

/// The worker label the timeline shows: reader actor and order.
pub fn worker_name(reader: &str, order: i64) -> String {
    format!("{reader}/#{order}")
}

/// The reader loop; returns only on error. A worker that fails ends the process (status 1),
/// which the runner reports as an unplanned death.
pub async fn run(cfg: ConsumerConfig) -> Result<(), Error> {
    let cfg = Arc::new(cfg);
    let sink = StdoutSink;
    let actor = cfg.actor();
    let mut reader = crate::consumer::named_connection(&cfg).await?;
    let writer = connect::redis(&cfg.redis_url).await.context("fanout connect")?;
    let pg = Arc::new(connect::postgres(&cfg.pg_config).await.context("fanout connect")?);
    let mut queues: HashMap<i64, mpsc::UnboundedSender<Item>> = HashMap::new();
    let mut received = 0u32;
    sink.emit(actor, EventKind::Ready);
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
                sink.emit(actor, EventKind::Crashed { planned: false, detail });
                continue;
            };
            sink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries: None });
            received += 1;
            // Nothing awaits between the read and this point: a crash here finds every entry
            // of the batch read, none of them acknowledged.
            crate::redelivery::maybe_crash(&cfg, &sink, received, &job);
            let order = job.order;
            let queue =
                queues.entry(order).or_insert_with(|| spawn_worker(cfg.clone(), order, writer.clone(), pg.clone()));
            sink.emit(
                actor,
                EventKind::Queued { entry_id: entry.id.clone(), worker: worker_name(&actor.to_string(), order) },
            );
            let item = Item { entry_id: entry.id.clone(), job, state: entry.get("state") };
            queue.send(item).expect("a worker lives as long as the process");
        }
    }
}

/// A worker task for `order`: applies its queue in arrival order, one entry at a time.
fn spawn_worker(
    cfg: Arc<ConsumerConfig>,
    order: i64,
    mut conn: redis::aio::MultiplexedConnection,
    pg: Arc<tokio_postgres::Client>,
) -> mpsc::UnboundedSender<Item> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
    tokio::spawn(async move {
        let actor = cfg.actor();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ order as u64);
        while let Some(item) = rx.recv().await {
            let result = crate::consumer::apply_and_ack(
                &cfg,
                &mut conn,
                &pg,
                &mut rng,
                &item.entry_id,
                &item.job,
                item.state.as_deref(),
            )
            .await;
            if let Err(e) = result {
                eprintln!("ordlab __consumer: worker {}: {e}", worker_name(&actor.to_string(), order));
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
