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
//! A worker from a command line is stepped the same way: it gets its own gated endpoints when
//! it starts, is told a time scale that makes its BLOCKs last until a timer step
//! ([`FOREIGN_TIME_SCALE`]), and its recorded reads and acknowledgements become the family's
//! events ([`WireJobs`]), as in a sampled run.
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
use crate::fault::NEVER_BY_THE_CLOCK_MS;
use crate::labs::priority::wire::WireJobs;
use crate::roles::command_worker::{CommandWorker, Upstreams};
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
    let worker = start_worker(spec, ctx, control, streams, &tx).await?;
    let producer_urls = control.endpoints(Actor::Producer, &ctx.client_name(Actor::Producer), &prefix).await?;
    let mut producer = crate::connect::redis(&producer_urls.redis_url).await.context("producer connect")?;
    let short: Vec<String> = streams.iter().map(|s| s.strip_prefix(&prefix).unwrap_or(s).to_string()).collect();
    control.set_timers(Timers { block_timeout: true, polling_streams: short, key_prefix: prefix, ..Timers::default() });
    control.ready(c1).await?;
    control.begin();
    let mut wire = matches!(worker, C1::Foreign(_)).then(|| WireJobs::shown_at_scale_1(FOREIGN_TIME_SCALE));
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
                Some(ev) => {
                    raw.extend(wire.as_mut().map(|w| w.translate(&ev)).unwrap_or_default());
                    raw.push(ev);
                }
                None => break false,
            },
            _ = control.over() => break true,
            _ = tokio::time::sleep_until(deadline) => break false,
        }
    };
    match worker {
        C1::Own(p) => p.stop().await,
        C1::Foreign(w) => w.stop().await,
    }
    while let Ok(ev) = rx.try_recv() {
        raw.extend(wire.as_mut().map(|w| w.translate(&ev)).unwrap_or_default());
        raw.push(ev);
    }
    raw.extend(control.take_events());
    Ok((raw, finished))
}

/// C1: ordlab's own worker, or the scenario's command line.
enum C1 {
    Own(RoleProcess),
    Foreign(CommandWorker),
}

/// The time scale a worker from a command line is told: its BLOCKs, multiplied by it, last
/// until a timer step ends them (the seed's shortest, 100 ms, becomes
/// [`NEVER_BY_THE_CLOCK_MS`]); its work per job is 0 ms, as ordlab's own worker's.
pub const FOREIGN_TIME_SCALE: f64 = NEVER_BY_THE_CLOCK_MS as f64 / 100.0;

/// Start C1 through gated endpoints: ordlab's own worker with its BLOCKs left to timer steps,
/// or the command line's (its endpoints are its own, made when it starts).
async fn start_worker(
    spec: &PrioritySpec,
    ctx: &RunContext<'_>,
    control: &Control,
    streams: &[String],
    tx: &mpsc::UnboundedSender<RawEvent>,
) -> Result<C1, Error> {
    let c1 = Actor::Consumer(1);
    let name = ctx.client_name(c1);
    let Some(command) = &spec.worker else {
        let urls = control.endpoints(c1, &name, &ctx.key_prefix()).await?;
        let mut cfg = spec.worker_config(ctx, streams);
        cfg.env.redis_url = urls.redis_url;
        let worker = ctx.spawn(&RoleConfig::of(&cfg), tx.clone())?;
        control.watch_exit(c1, worker.exit_check());
        return Ok(C1::Own(worker));
    };
    let mut env = spec.worker_env(ctx, streams);
    env.extra.insert("ORDLAB_TIME_SCALE".to_string(), FOREIGN_TIME_SCALE.to_string());
    let upstreams =
        Upstreams { redis_url: &ctx.services.redis_url, pg_config: &ctx.services.pg_config, control: Some(control) };
    let w = CommandWorker::start(command, &env, c1, &name, upstreams, tx.clone()).await?;
    control.watch_exit(c1, w.process.exit_check());
    Ok(C1::Foreign(w))
}
