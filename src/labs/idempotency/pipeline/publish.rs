//! The producer of a pipeline run (a task of the orchestrator): each planned job is sent with
//! `XADD` to its priority's stream at its planned time after t=0, so arrivals follow the
//! workload and not how fast the harness can send.

use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::handler::job::events::JobEvent;
use crate::labs::idempotency::pipeline::plan::PlannedJob;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, Sink};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;

/// Publish every job on `streams[job.priority]` at its time.
pub async fn publish(
    mut conn: MultiplexedConnection,
    streams: Vec<String>,
    jobs: Vec<PlannedJob>,
    scale: TimeScale,
    sink: Arc<dyn Sink>,
) -> Result<(), Error> {
    let start = tokio::time::Instant::now();
    for job in jobs {
        tokio::time::sleep_until(start + scale.duration(job.at_ms)).await;
        let entry_id: String = redis::cmd("XADD")
            .arg(&streams[job.priority])
            .arg("*")
            .arg("job")
            .arg(&job.job)
            .arg("payload")
            .arg(job.payload())
            .query_async(&mut conn)
            .await
            .context("XADD")?;
        let kind =
            JobEvent::JobPublished { entry_id, job: job.job, attempt: 1, reply_lost: false, same_id: false }.event();
        sink.emit(Actor::Producer, kind);
    }
    Ok(())
}
