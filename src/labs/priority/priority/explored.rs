//! A priority run under the explorer: the worker C1 and the producer connect through gated
//! endpoints, so each of C1's reads and acknowledgements and the producer's arrival are steps
//! the explorer orders; a read's `BLOCK` runs out only as a timer step (`N CLIENT UNBLOCK C1
//! TIMEOUT`), never by the clock.
//!
//! The backlog is queued before C1 starts, as in a sampled run (its order is the lab's, not a
//! race), cut to one job more than the loop's largest COUNT per priority
//! ([`PrioritySpec::explored_jobs`]). Then one critical job arrives (the probe, the first of the trickle) at every point
//! of C1's loop the explorer can tell apart: while it reads critical, while it is blocked in
//! its read of another stream, between a read and its jobs. A polling loop that finds nothing
//! goes round once per change ([`crate::explore::timer::Timers::polling_streams`]): after the
//! backlog is drained C1 times out of critical, normal and low once, then waits in critical,
//! so the arrival can find it in each of its reads.
//!
//! Handler work takes no time, and the claims judged are about order
//! ([`crate::labs::priority::order_claims`]): a lower job taken while a higher one it had seen
//! waits, a critical job that waits until a read of another stream runs out of time.

use super::PrioritySpec;
use crate::labs::priority::worker::QueuedJob;
use crate::error::{Context, Error};
use crate::explore::timer::Timers;
use crate::explore::Control;
use crate::labs::RunContext;
use crate::roles::{RoleConfig, RoleProcess};
use crate::timeline::{Actor, RawEvent, Sink};
use std::time::Duration;
use tokio::sync::mpsc;

/// Queue `jobs` through `conn`, one XADD at a time (each a step where `conn` is gated),
/// recording each as queued by the producer when its XADD is answered: a gated XADD waits at
/// the interposer until the explorer releases it, and the timeline's order is the steps'.
/// With `ids`, the k-th job gets entry ID `k-1`: unique across the three streams, where two
/// streams' entries appended in the same millisecond would share an ID (the explorer numbers
/// an ID a read over several streams returns by the ID alone, and a replay must number alike).
async fn queue(
    conn: &mut redis::aio::MultiplexedConnection,
    streams: &[String],
    jobs: Vec<QueuedJob>,
    ids: bool,
    tx: &mpsc::UnboundedSender<RawEvent>,
) -> Result<(), Error> {
    for (k, mut j) in jobs.into_iter().enumerate() {
        j.queued_ns = crate::clock::now_ns();
        let mut xadd = j.xadd(&streams[j.priority.index()]);
        if ids {
            xadd = j.xadd_with_id(&streams[j.priority.index()], &format!("{}-1", k + 1));
        }
        xadd.query_async::<String>(conn).await.context("XADD")?;
        j.queued_ns = crate::clock::now_ns();
        tx.record(j.queued_event(Actor::Producer, None));
    }
    Ok(())
}

/// Run the priority lab once under `control`: the backlog, C1 through its endpoints, the
/// arrival as the producer's step; until the schedule is over. Returns the events and
/// whether the run ended with its schedule.
pub(super) async fn run(
    spec: &PrioritySpec,
    ctx: &RunContext<'_>,
    control: &Control,
    streams: &[String],
) -> Result<(Vec<RawEvent>, bool), Error> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let prefix = ctx.key_prefix();
    let mut harness = ctx.redis.clone();
    let (backlog, arrival) = spec.explored_jobs();
    queue(&mut harness, streams, backlog, true, &tx).await?;
    let c1 = Actor::Consumer(1);
    let urls = control.endpoints(c1, &ctx.client_name(c1), &prefix).await?;
    let mut cfg = spec.worker_config(ctx, streams);
    cfg.env.redis_url = urls.redis_url;
    let worker: RoleProcess = ctx.spawn(&RoleConfig::of(&cfg), tx.clone())?;
    control.watch_exit(c1, worker.exit_check());
    let producer_urls = control.endpoints(Actor::Producer, &ctx.client_name(Actor::Producer), &prefix).await?;
    let mut producer = crate::connect::redis(&producer_urls.redis_url).await.context("producer connect")?;
    let short: Vec<String> = streams.iter().map(|s| s.strip_prefix(&prefix).unwrap_or(s).to_string()).collect();
    control.set_timers(Timers { block_timeout: true, polling_streams: short, key_prefix: prefix, ..Timers::default() });
    control.ready(c1).await?;
    control.begin();
    let produce = async {
        queue(&mut producer, streams, vec![arrival], false, &tx).await?;
        control.finished(Actor::Producer);
        Ok::<_, Error>(())
    };
    tokio::pin!(produce);
    // Under the explorer the run takes as long as its schedule: the deadline only catches a fault.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let (mut raw, mut produced) = (Vec::new(), false);
    let finished = loop {
        tokio::select! {
            r = &mut produce, if !produced => { r?; produced = true; }
            ev = rx.recv() => match ev {
                Some(ev) => raw.push(ev),
                None => break false,
            },
            _ = control.over() => break true,
            _ = tokio::time::sleep_until(deadline) => break false,
        }
    };
    worker.stop().await;
    while let Ok(ev) = rx.try_recv() {
        raw.push(ev);
    }
    raw.extend(control.take_events());
    Ok((raw, finished))
}
