//! The supervising process seed 003 says "can easily scan" the processing list and that it
//! never writes: a reaper (actor `reaper`) that puts back every job whose lease ran out, and a
//! scheduler (actor `scheduler`) that moves due retries from the delayed set back to the
//! queue. Both are one script call per look, on the server's clock, stamped when sent; one
//! process does both.

use crate::error::{Context, Error};
use crate::list_queue::events::ListEvent;
use crate::list_queue::{self, payload_label, ListKeys};
use crate::roles::RoleEnv;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, Sink, StdoutSink};
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};

/// What the supervisor does, and how often it looks (ms, before the time scale).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListSupervisorConfig {
    pub env: RoleEnv,
    pub client_name: String,
    pub keys: ListKeys,
    /// Put back jobs whose lease ran out, looking every `reaper_poll_ms`.
    pub reaper_poll_ms: Option<f64>,
    /// Move due retries back, looking every `scheduler_poll_ms`.
    pub scheduler_poll_ms: Option<f64>,
}

impl ListSupervisorConfig {
    /// The actor the process is named after: the reaper if it reaps, else the scheduler.
    pub fn actor(&self) -> Actor {
        if self.reaper_poll_ms.is_some() {
            Actor::Reaper
        } else {
            Actor::Scheduler
        }
    }
}

pub async fn run(cfg: ListSupervisorConfig) -> Result<(), Error> {
    let mut conn = crate::connect::redis(&cfg.env.redis_url).await.context("supervisor connect")?;
    crate::roles::client_list::name_connection(&mut conn, &cfg.client_name).await?;
    run_loop(&mut conn, &cfg, &StdoutSink).await
}

/// Look for expired leases and due retries, each on its own period, until an error.
pub async fn run_loop<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListSupervisorConfig,
    events: &dyn Sink,
) -> Result<(), Error> {
    let scale = cfg.env.scale;
    // Under the explorer (time scale 0) a lease runs out, a retry comes due, as a timer step
    // that sets its deadline to 0: how long ago that was says nothing.
    let by_the_clock = scale.0 > 0.0;
    let period = |ms: Option<f64>| ms.map(|ms| scale.duration(ms));
    let (reap_every, move_every) = (period(cfg.reaper_poll_ms), period(cfg.scheduler_poll_ms));
    if reap_every.is_some() {
        events.emit(Actor::Reaper, EventKind::Ready);
    }
    if move_every.is_some() {
        events.emit(Actor::Scheduler, EventKind::Ready);
    }
    let start = tokio::time::Instant::now();
    let (mut next_reap, mut next_move) = (start, start);
    loop {
        let now = tokio::time::Instant::now();
        // A put-back is stamped when its script is sent: a worker polling the queue can take
        // the job as soon as the script has run, before this process (stalled on a loaded
        // machine) reads the reply, and its take must not come first on the timeline. Under
        // the explorer the script is held at the wire until a lease has run out (long after it
        // was sent), and no other step runs before its reply is in: stamped at the reply.
        let stamp = |sent: u64| if by_the_clock { sent } else { crate::clock::now_ns() };
        if let Some(every) = reap_every.filter(|_| now >= next_reap) {
            let sent = crate::clock::now_ns();
            let requeued = list_queue::requeue_expired(conn, &cfg.keys).await.context("requeue expired leases")?;
            let at = stamp(sent);
            for r in requeued {
                let expired_ms_ago = by_the_clock.then_some(r.expired_ms_ago);
                let kind = ListEvent::Requeued { job: payload_label(&r.payload), expired_ms_ago }.event();
                events.record(RawEvent { mono_ns: at, actor: Actor::Reaper, kind });
            }
            next_reap = now + every;
        }
        if let Some(every) = move_every.filter(|_| now >= next_move) {
            let sent = crate::clock::now_ns();
            let moved = list_queue::move_due(conn, &cfg.keys).await.context("move due retries")?;
            let at = stamp(sent);
            for (payload, late_ms) in moved {
                let late_ms = by_the_clock.then_some(late_ms);
                let kind = ListEvent::MovedDue { job: payload_label(&payload), late_ms }.event();
                events.record(RawEvent { mono_ns: at, actor: Actor::Scheduler, kind });
            }
            next_move = now + every;
        }
        let wake = [reap_every.map(|_| next_reap), move_every.map(|_| next_move)].into_iter().flatten().min();
        match wake {
            Some(at) => tokio::time::sleep_until(at).await,
            None => return Ok(()),
        }
    }
}

impl crate::roles::Role for ListSupervisorConfig {
    const NAME: &'static str = "list-supervisor";

    fn actor(&self) -> crate::timeline::Actor {
        ListSupervisorConfig::actor(self)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}
