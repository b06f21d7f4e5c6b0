//! Failover: a primary with an asynchronous replica confirms writes and acknowledgements the
//! replica does not have yet, so when the primary dies and the replica is promoted, entries
//! that were added and acknowledged are gone and acknowledgements are undone (applied entries
//! are delivered again).
//!
//! One run, on two redis-servers of its own (PostgreSQL is the shared one and survives):
//!
//! 1. the replica (`--replicaof`) syncs; consumer processes `C1..Cn` read the group on the
//!    primary; the producer publishes every `created`, faster than the consumers apply them;
//! 2. after `cut_after` events the replica's link is cut: `REPLICAOF 127.0.0.1 <closed port>`
//!    on the replica, standing in for a partition or a stalled link. The replica keeps its
//!    data but receives nothing more; the primary carries on (asynchronous replication never
//!    waits), so every XADD, XREADGROUP and XACK from then on exists on the primary only.
//!    `DEBUG SLEEP` or `CLIENT PAUSE` on the replica do not make a gap on one machine: the
//!    primary's stream waits in the replica's socket buffer, even after the primary is killed,
//!    and is applied when the replica wakes up (tried on Redis 7.0: 21 of 21 entries arrived);
//! 3. the producer publishes up to `kill_after`; once the consumers have acknowledged
//!    everything, they are stopped and the primary is killed with SIGKILL;
//! 4. the replica is promoted (`REPLICAOF NO ONE`), new consumers `Cn+1..C2n` read the same
//!    group on it, and the producer publishes the remaining events there.
//!
//! The counts (the run record's `facts`) come from the promoted replica's stream, group and
//! pending list, compared with the timeline (what the old primary confirmed).

use crate::consumer::ConsumerConfig;
use crate::error::{Context as _, Error};
use crate::fault::TimeScale;
use crate::producer::Producer;
use crate::report::StreamEntry;
use crate::runner::RoleProcess;
use crate::scenario::Variant;
use crate::service::{start_local_redis, LocalRedis};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the runner hands over.
pub struct Context<'a, F: Fn(u32) -> u64> {
    /// The `ordlab` binary (consumer processes).
    pub exe: &'a Path,
    pub pg_config: &'a str,
    /// Prefix of the run's Redis keys.
    pub prefix: String,
    /// Prefix of the consumers' client names.
    pub client_prefix: String,
    /// Seed of consumer process `index`.
    pub seed: F,
}

/// A finished run, for the runner to judge.
pub struct Outcome {
    pub t0: u64,
    pub raw: Vec<RawEvent>,
    /// The promoted replica's stream after the run.
    pub stream: Vec<StreamEntry>,
    pub timed_out: bool,
    pub facts: BTreeMap<String, i64>,
}

const GROUP: &str = "order-processor";

pub async fn run<F: Fn(u32) -> u64>(ctx: &Context<'_, F>, v: &Variant, scale: TimeScale) -> Result<Outcome, Error> {
    let spec = v.setup.failover.as_ref().expect("resolved failover set-up has its spec");
    let events = &v.setup.events;
    let (cut, kill) = (spec.cut_after as usize, spec.kill_after as usize);
    let stream = format!("{}orders", ctx.prefix);

    // Both servers are killed when dropped, on every path out of here.
    let primary = start_local_redis(&["--repl-diskless-sync-delay".into(), "0".into()]).await?;
    let replica = start_local_redis(&["--replicaof".into(), "127.0.0.1".into(), primary.port.to_string()]).await?;
    let mut p = crate::connect::redis(&primary.url).await.context("connect to the primary")?;
    let mut r = crate::connect::redis(&replica.url).await.context("connect to the replica")?;
    wait_for(&r, "replica link up", |mut r| async move {
        Ok(info(&mut r, "replication").await?.contains("master_link_status:up"))
    })
    .await?;
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&stream)
        .arg(GROUP)
        .arg("$")
        .arg("MKSTREAM")
        .query_async(&mut p)
        .await
        .context("XGROUP CREATE")?;
    let key = stream.clone();
    wait_for(&r, "group on the replica", move |mut r| {
        let key = key.clone();
        async move { Ok(redis::cmd("EXISTS").arg(&key).query_async::<i64>(&mut r).await.context("EXISTS")? == 1) }
    })
    .await?;

    let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
    let consumers = start_consumers(ctx, v, scale, &primary, &stream, 1, &tx).await?;
    let cut_port = crate::service::process::free_port().context("pick a closed port")?;
    let producer = Producer {
        redis: crate::connect::redis(&primary.url).await.context("producer connect")?,
        streams: vec![stream.clone()],
        state_bytes: 0,
        scale,
        sink: Arc::new(tx.clone()),
    };
    let runner_sink = tx.clone();
    let work: f64 = events.iter().map(|e| v.setup.cost_of(&e.event_type)).sum();
    let publish_ms = events.last().and_then(|e| e.at_ms).unwrap_or(0.0);
    let bound = scale.duration((work + publish_ms) * 3.0) + Duration::from_secs(10);

    // Phase 1: the old primary, with the link cut after `cut` events.
    let t0 = crate::clock::now_ns();
    let mut r_cut = r.clone();
    let publish = async {
        producer.publish_all(&events[..cut], t0).await?;
        let _: () = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(cut_port)
            .query_async(&mut r_cut)
            .await
            .context("REPLICAOF <closed port> on the replica")?;
        let at = crate::clock::now_ns();
        runner_sink.record(RawEvent {
            mono_ns: at,
            actor: Actor::Runner,
            kind: EventKind::LagWindow { how: format!("REPLICAOF 127.0.0.1 {cut_port}, a closed port") },
        });
        producer.publish_all(&events[cut..kill], t0).await?;
        Ok::<u64, Error>(at)
    };
    let mut raw = Vec::new();
    let (mut published, mut acked) = (Vec::<String>::new(), HashSet::<String>::new());
    let phase1 = collect(publish, &mut rx, &mut raw, bound, |ev, done| {
        match ev.map(|e| &e.kind) {
            Some(EventKind::Published { entry_id, .. }) => published.push(entry_id.clone()),
            Some(EventKind::Acked { entry_id }) => {
                acked.insert(entry_id.clone());
            }
            _ => {}
        }
        // Every entry applied and acknowledged on the primary.
        done && published.iter().all(|id| acked.contains(id))
    })
    .await?;
    let timed_out_1 = phase1.is_none();
    let cut_ns = phase1.unwrap_or(u64::MAX);

    // The crash: consumers stop with the primary (idle, all acknowledged), then SIGKILL.
    for c in consumers {
        c.stop().await;
    }
    let primary_offset = repl_offset(&mut p).await?;
    primary.kill(nix::sys::signal::Signal::SIGKILL)?;
    tx.emit(Actor::Runner, EventKind::ServerKilled { server: "primary".into(), signal: "SIGKILL".into() });
    primary.stop().await;
    let replica_offset = repl_offset(&mut r).await?;
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut r).await.context("REPLICAOF NO ONE")?;
    let behind_bytes = primary_offset - replica_offset;
    tx.emit(Actor::Runner, EventKind::ReplicaPromoted { behind_bytes });

    // What the promoted replica knows.
    let on_replica: HashSet<String> = read_stream(&mut r, &stream).await?.into_iter().map(|e| e.entry_id).collect();
    let groups: redis::streams::StreamInfoGroupsReply =
        redis::cmd("XINFO").arg("GROUPS").arg(&stream).query_async(&mut r).await.context("XINFO GROUPS")?;
    let last_delivered =
        groups.groups.iter().find(|g| g.name == GROUP).map(|g| g.last_delivered_id.clone()).unwrap_or_default();
    let pending: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(&stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(100_000)
        .query_async(&mut r)
        .await
        .context("XPENDING")?;
    let pending: HashSet<String> = pending.ids.into_iter().map(|p| p.id).collect();
    let undelivered = |id: &str| id_key(id) > id_key(&last_delivered);
    // New readers (`>`) get the entries past the group's last-delivered ID, and the rest.
    let mut expect_new: HashSet<String> = on_replica.iter().filter(|id| undelivered(id)).cloned().collect();

    // Phase 2: the promoted replica.
    let first_new = v.setup.consumers + 1;
    let consumers = start_consumers(ctx, v, scale, &replica, &stream, first_new, &tx).await?;
    let producer = Producer {
        redis: crate::connect::redis(&replica.url).await.context("producer connect")?,
        streams: vec![stream.clone()],
        state_bytes: 0,
        scale,
        sink: Arc::new(tx.clone()),
    };
    let resume = crate::clock::now_ns()
        .saturating_sub(scale.duration(events.get(kill).and_then(|e| e.at_ms).unwrap_or(0.0)).as_nanos() as u64);
    let rest = &events[kill..];
    let publish = producer.publish_all(rest, resume);
    let mut acked_new = HashSet::<String>::new();
    let mut published_new = 0;
    let mut received_new = Vec::<String>::new();
    let timed_out_2 = collect(publish, &mut rx, &mut raw, bound, |ev, done| {
        if let Some(ev) = ev {
            let new = matches!(ev.actor, Actor::Consumer(n) if n >= first_new);
            match &ev.kind {
                EventKind::Published { entry_id, .. } => {
                    expect_new.insert(entry_id.clone());
                    published_new += 1;
                }
                EventKind::Received { entry_id, .. } if new => received_new.push(entry_id.clone()),
                EventKind::Acked { entry_id } if new => {
                    acked_new.insert(entry_id.clone());
                }
                _ => {}
            }
        }
        done && published_new == rest.len() && acked_new.is_superset(&expect_new)
    })
    .await?
    .is_none();
    for c in consumers {
        c.stop().await;
    }
    drop(tx);
    while let Ok(ev) = rx.try_recv() {
        raw.push(ev);
    }
    let final_stream = read_stream(&mut r, &stream).await?;
    replica.stop().await;

    let after_cut = |ev: &&RawEvent| ev.mono_ns >= cut_ns;
    let old = |ev: &&RawEvent| matches!(ev.actor, Actor::Consumer(n) if n < first_new);
    let lost: Vec<&String> = published.iter().filter(|id| !on_replica.contains(*id)).collect();
    let acks_lost: Vec<&String> =
        acked.iter().filter(|id| on_replica.contains(*id) && (pending.contains(*id) || undelivered(id))).collect();
    let count = |n: usize| n as i64;
    let facts = BTreeMap::from([
        (
            "in_flight_entries".to_string(),
            count(raw.iter().filter(after_cut).filter(|e| matches!(e.kind, EventKind::Published { .. })).count())
                - count(published_new),
        ),
        (
            "in_flight_acks".to_string(),
            count(
                raw.iter().filter(after_cut).filter(old).filter(|e| matches!(e.kind, EventKind::Acked { .. })).count(),
            ),
        ),
        ("lost_entries".to_string(), count(lost.len())),
        ("lost_acked_entries".to_string(), count(lost.iter().filter(|id| acked.contains(**id)).count())),
        ("acks_lost".to_string(), count(acks_lost.len())),
        ("redelivered".to_string(), count(received_new.iter().filter(|id| acked.contains(*id)).count())),
        ("stuck_pending".to_string(), count(acked.iter().filter(|id| pending.contains(*id)).count())),
        ("behind_bytes".to_string(), behind_bytes),
    ]);
    Ok(Outcome { t0, raw, stream: final_stream, timed_out: timed_out_1 || timed_out_2, facts })
}

/// Start consumers `first..first+n` against `server`, each blocked in XREADGROUP before the next.
async fn start_consumers<F: Fn(u32) -> u64>(
    ctx: &Context<'_, F>,
    v: &Variant,
    scale: TimeScale,
    server: &LocalRedis,
    stream: &str,
    first: u32,
    tx: &mpsc::UnboundedSender<RawEvent>,
) -> Result<Vec<RoleProcess>, Error> {
    let mut conn = crate::connect::redis(&server.url).await.context("connect")?;
    let mut out = Vec::new();
    for index in first..first + v.setup.consumers {
        let cfg = ConsumerConfig {
            index,
            redis_url: server.url.clone(),
            pg_config: ctx.pg_config.to_string(),
            stream: stream.to_string(),
            group: GROUP.to_string(),
            client_name: format!("{}-C{index}", ctx.client_prefix),
            key_prefix: ctx.prefix.clone(),
            setup: v.setup.clone(),
            scale,
            seed: (ctx.seed)(index),
            has_delex: false,
            claimer: false,
        };
        let child = RoleProcess::spawn(ctx.exe, &cfg, tx.clone())?;
        out.push(child);
        let needle = format!(" name={} ", cfg.client_name);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn).await.context("CLIENT LIST")?;
            if list
                .lines()
                .any(|l| l.contains(&needle) && l.contains(" cmd=xreadgroup") && crate::runner::is_blocked(l))
            {
                break;
            }
            let child = out.last().unwrap();
            let detail = child.exited().or_else(|| {
                (tokio::time::Instant::now() > deadline).then(|| "not blocked in XREADGROUP after 15 s".to_string())
            });
            if let Some(detail) = detail {
                return Err(Error::RoleNotReady { actor: cfg.actor().to_string(), detail });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    Ok(out)
}

/// Drive `publish` while recording every event, until `step(None, publish done)` says the
/// phase is over (`step(Some(event), …)` sees each event first). Returns the publish result,
/// or None when `bound` ran out first.
async fn collect<T>(
    publish: impl std::future::Future<Output = Result<T, Error>>,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    bound: Duration,
    mut step: impl FnMut(Option<&RawEvent>, bool) -> bool,
) -> Result<Option<T>, Error> {
    let deadline = tokio::time::Instant::now() + bound;
    tokio::pin!(publish);
    let mut result = None;
    loop {
        if let Some(r) = result.take_if(|_| step(None, true)) {
            return Ok(Some(r));
        }
        tokio::select! {
            r = &mut publish, if result.is_none() => { result = Some(r?); }
            ev = rx.recv() => match ev {
                Some(ev) => { step(Some(&ev), result.is_some()); raw.push(ev); }
                None => return Ok(None),
            },
            _ = tokio::time::sleep_until(deadline) => return Ok(None),
        }
    }
}

async fn info(conn: &mut MultiplexedConnection, section: &str) -> Result<String, Error> {
    redis::cmd("INFO").arg(section).query_async(conn).await.context("INFO")
}

/// `master_repl_offset` from INFO replication: how much replication stream this server has.
async fn repl_offset(conn: &mut MultiplexedConnection) -> Result<i64, Error> {
    let text = info(conn, "replication").await?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("master_repl_offset:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}

/// Poll `check` every 10 ms for up to 15 s.
async fn wait_for<C, Fut>(conn: &MultiplexedConnection, what: &str, mut check: C) -> Result<(), Error>
where
    C: FnMut(MultiplexedConnection) -> Fut,
    Fut: std::future::Future<Output = Result<bool, Error>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if check(conn.clone()).await? {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::RoleNotReady { actor: "replica".into(), detail: format!("{what}: not after 15 s") });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn read_stream(conn: &mut MultiplexedConnection, stream: &str) -> Result<Vec<StreamEntry>, Error> {
    let reply: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg(stream).arg("-").arg("+").query_async(conn).await.context("XRANGE")?;
    Ok(reply
        .ids
        .iter()
        .filter_map(|e| crate::consumer::job_of(e).map(|job| StreamEntry { shard: 0, entry_id: e.id.clone(), job }))
        .collect())
}

/// A stream entry ID (`ms-seq`) as a sortable pair; `0-0` for anything else.
fn id_key(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_ids_compare_numerically() {
        assert!(super::id_key("10-0") > super::id_key("9-5"));
        assert!(super::id_key("9-10") > super::id_key("9-9"));
        assert_eq!(super::id_key("x"), (0, 0));
    }
}
