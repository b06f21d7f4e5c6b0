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
//! The counts come from the promoted replica's stream, group and pending list, compared with
//! the timeline (what the old primary confirmed).

use super::consumer_group::{drain, drive, ConsumerGroup, GroupSpec, Server};
use super::stream::{self, order_items};
use super::{Fact, FinalItem, LabProcedure, RunContext, RunOutcome, RunView};
use crate::checker::{final_state::final_state, health::health, RunVerdict};
use crate::error::{Context as _, Error};
use crate::fault::{HandlerWork, TimeScale};
use crate::orders::{self, EventSpec, OrderRow};
use crate::lang::Lang;
use crate::roles::producer::Producer;
use crate::roles::readiness;
use crate::service::{start_local_redis, LocalRedis};
use crate::strategy::Strategy;
use crate::streams::{self, id_order, StreamEntry, GROUP};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// `kind = "failover"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailoverSpec {
    pub failover: FailoverPlan,
    #[serde(default = "stream::one")]
    pub consumers: u32,
    #[serde(default)]
    pub strategy: Strategy,
    #[serde(default)]
    pub cost_ms: BTreeMap<String, f64>,
    /// Generated from `failover` unless listed.
    #[serde(default)]
    pub events: Vec<EventSpec>,
}

/// `failover = { … }`: `orders` orders, every `created` (v=1) first, then every `paid` (v=2),
/// one every `publish_every_ms`. The replica's link is cut after `cut_after` published
/// events; the primary is killed after `kill_after`, once its consumers have acknowledged
/// everything; the rest is published to the promoted replica.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailoverPlan {
    #[serde(default = "FailoverPlan::default_orders")]
    pub orders: u32,
    #[serde(default = "FailoverPlan::default_every")]
    pub publish_every_ms: f64,
    pub cut_after: u32,
    pub kill_after: u32,
}

/// What the promoted replica held, against what the old primary confirmed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailoverObserved {
    /// The promoted replica's stream after the run.
    pub stream: Vec<StreamEntry>,
    pub final_rows: Vec<OrderRow>,
    pub counts: FailoverCounts,
}

/// The figures of one failover, read from the servers and the timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailoverCounts {
    /// Entries sent to the primary after the cut (never replicated).
    pub in_flight_entries: i64,
    /// Acks sent to the primary after the cut.
    pub in_flight_acks: i64,
    /// Entries the old primary confirmed that the promoted replica does not have.
    pub lost_entries: i64,
    /// Of those, entries that had been applied and acknowledged.
    pub lost_acked_entries: i64,
    /// Acked on the primary, pending or undelivered on the replica.
    pub acks_lost: i64,
    /// Acked entries received again by the new consumers.
    pub redelivered: i64,
    /// Acked entries left in the dead consumers' pending lists (never redelivered to `>`).
    pub stuck_pending: i64,
    /// Replication stream the replica lacked when promoted.
    pub behind_bytes: i64,
}

impl FailoverPlan {
    fn default_orders() -> u32 {
        50
    }
    fn default_every() -> f64 {
        2.0
    }

    /// `created` for every order, then `paid` for every order, evenly paced.
    pub fn events(&self) -> Vec<EventSpec> {
        let jobs = ["created", "paid"]
            .iter()
            .enumerate()
            .flat_map(|(i, t)| (1..=self.orders as i64).map(move |o| (o, *t, i as i64 + 1)));
        jobs.enumerate()
            .map(|(n, (order, t, version))| EventSpec {
                at_ms: Some(n as f64 * self.publish_every_ms),
                ..EventSpec::new(order, t, version)
            })
            .collect()
    }
}

/// The two servers of a run and the orchestrator's connections to them.
struct Pair {
    primary: LocalRedis,
    replica: LocalRedis,
    p: MultiplexedConnection,
    r: MultiplexedConnection,
}

impl FailoverSpec {
    fn group_spec(&self) -> GroupSpec<'_> {
        GroupSpec {
            consumers: self.consumers,
            shards: 1,
            strategy: &self.strategy,
            work: HandlerWork::new(&self.cost_ms, &self.events),
            crash: None,
            reaper: None,
        }
    }

    fn bound(&self, scale: TimeScale) -> Duration {
        let work = HandlerWork::new(&self.cost_ms, &self.events);
        let total: f64 = self.events.iter().map(|e| work.cost_ms(&e.job())).sum();
        let publish_ms = self.events.last().and_then(|e| e.at_ms).unwrap_or(0.0);
        scale.duration((total + publish_ms) * 3.0) + Duration::from_secs(10)
    }

    fn producer(&self, conn: MultiplexedConnection, stream: &str, scale: TimeScale, tx: &mpsc::UnboundedSender<RawEvent>) -> Producer {
        Producer { redis: conn, streams: vec![stream.to_string()], state_bytes: 0, scale, sink: Arc::new(tx.clone()) }
    }
}

impl LabProcedure for FailoverSpec {
    type Observed = FailoverObserved;

    fn validate(&mut self) -> Result<(), String> {
        stream::check_consumers(self.consumers)?;
        stream::check_costs(&self.cost_ms)?;
        if self.events.is_empty() {
            self.events = self.failover.events();
        }
        let (cut, kill, n) = (self.failover.cut_after, self.failover.kill_after, self.events.len() as u32);
        if !(1..=n).contains(&cut) || !(cut + 1..=n).contains(&kill) {
            return Err(format!(
                "setup.failover: use 1 ≤ cut_after ({cut}) < kill_after ({kill}) ≤ the number of events ({n})"
            ));
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<FailoverObserved>, Error> {
        orders::reset(ctx.pg, &orders::default_initial(&self.events)).await?;
        let stream = format!("{}orders", ctx.key_prefix());
        let mut pair = start_pair(&stream).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let mut raw = Vec::new();
        let t0_ns = crate::clock::now_ns();
        let before = self.on_primary(ctx, &mut pair, &stream, &tx, &mut rx, &mut raw, t0_ns).await?;
        let replica = promote(&mut pair, &stream, &tx).await?;
        let mut counts = before.counts(&replica);
        let after = self.on_replica(ctx, &mut pair, &stream, &tx, &mut rx, &mut raw, &replica).await?;
        drop(tx);
        drain(rx, &mut raw);
        counts.redelivered = after.received.iter().filter(|id| before.acked.contains(*id)).count() as i64;
        counts.in_flight_entries = raw
            .iter()
            .filter(|e| e.mono_ns >= before.cut_ns && matches!(e.kind, EventKind::Published { .. }))
            .count() as i64
            - after.published as i64;
        counts.in_flight_acks = raw
            .iter()
            .filter(|e| e.mono_ns >= before.cut_ns && matches!(e.actor, Actor::Consumer(n) if n <= self.consumers))
            .filter(|e| matches!(e.kind, EventKind::Acked { .. }))
            .count() as i64;
        let final_stream = streams::read_entries(&mut pair.r, &stream, 0).await?;
        pair.replica.stop().await;
        let final_rows = orders::final_rows(ctx.pg, &orders::orders_of(&[], &self.events)).await?;
        let observed = FailoverObserved { stream: final_stream, final_rows, counts };
        Ok(RunOutcome { t0_ns, raw, timed_out: before.timed_out || after.timed_out, observed })
    }

    fn judge(&self, run: &RunView<'_, FailoverObserved>) -> RunVerdict {
        let expected = orders::expected_statuses(&self.events);
        health(run.events, run.timed_out).and(final_state(&expected, &run.observed.final_rows))
    }

    fn describe(&self, lang: Lang) -> String {
        let f = &self.failover;
        let (orders, every, cut, kill, n) = (f.orders, f.publish_every_ms, f.cut_after, f.kill_after, self.consumers);
        let strategy = self.strategy.describe(lang);
        crate::tr!(
            lang,
            "primary + 1 async replica, {orders} orders × created/paid every {every} ms, replica link cut after {cut} events, primary SIGKILLed after {kill}, {n} consumers, {strategy}",
            "primary + 1 replica bất đồng bộ, {orders} order × created/paid mỗi {every} ms, cắt link replica sau {cut} event, kill -9 primary sau {kill}, {n} consumer, {strategy}"
        )
    }

    fn approach(&self) -> String {
        self.strategy.short()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        let expected = stream::expected_label(&self.events, lang);
        crate::tr!(lang, "wrong final state (not {expected})", "SAI trạng thái cuối (không phải {expected})")
    }

    fn final_state(&self, observed: &FailoverObserved) -> Vec<FinalItem> {
        order_items(&orders::expected_statuses(&self.events), &observed.final_rows)
    }

    fn shows_publishing(&self) -> bool {
        true
    }

    fn many_orders(&self) -> bool {
        true
    }

    fn facts(&self, run: &RunView<'_, FailoverObserved>) -> Vec<Fact> {
        let c = &run.observed.counts;
        let wrong = self.final_state(run.observed).iter().filter(|i| i.is_wrong()).count() as i64;
        vec![
            Fact::measured("acks_lost", c.acks_lost),
            Fact::measured("behind_bytes", c.behind_bytes),
            Fact::measured("in_flight_acks", c.in_flight_acks),
            Fact::measured("in_flight_entries", c.in_flight_entries),
            Fact::measured("lost_acked_entries", c.lost_acked_entries),
            Fact::measured("lost_entries", c.lost_entries),
            Fact::measured("redelivered", c.redelivered),
            Fact::measured("stuck_pending", c.stuck_pending),
            Fact::measured("wrong_orders", wrong),
        ]
    }
}

/// A primary, its replica synced, and the group on the primary (seen on the replica too).
async fn start_pair(stream: &str) -> Result<Pair, Error> {
    // Both servers are killed when dropped, on every path out of here.
    let primary = start_local_redis(&["--repl-diskless-sync-delay".into(), "0".into()]).await?;
    let replica = start_local_redis(&["--replicaof".into(), "127.0.0.1".into(), primary.port.to_string()]).await?;
    let mut p = crate::connect::redis(&primary.url).await.context("connect to the primary")?;
    let r = crate::connect::redis(&replica.url).await.context("connect to the replica")?;
    readiness::until("the replica's link to the primary", || {
        let mut r = r.clone();
        async move { Ok(info(&mut r, "replication").await?.contains("master_link_status:up")) }
    })
    .await?;
    streams::create_group(&mut p, stream, GROUP).await?;
    readiness::until("the group on the replica", || {
        let mut r = r.clone();
        let key = stream.to_string();
        async move { Ok(redis::cmd("EXISTS").arg(&key).query_async::<i64>(&mut r).await.context("EXISTS")? == 1) }
    })
    .await?;
    Ok(Pair { primary, replica, p, r })
}

/// What phase 1 confirmed on the old primary.
struct BeforeKill {
    published: Vec<String>,
    acked: HashSet<String>,
    /// When the link was cut (monotonic ns).
    cut_ns: u64,
    timed_out: bool,
}

/// What the promoted replica knows of the stream and its group.
struct ReplicaView {
    entries: HashSet<String>,
    last_delivered: String,
    pending: HashSet<String>,
    behind_bytes: i64,
}

impl ReplicaView {
    /// Past the group's last-delivered ID: new readers (`>`) get it.
    fn undelivered(&self, id: &str) -> bool {
        id_order(id) > id_order(&self.last_delivered)
    }
}

impl BeforeKill {
    fn counts(&self, replica: &ReplicaView) -> FailoverCounts {
        let lost: Vec<&String> = self.published.iter().filter(|id| !replica.entries.contains(*id)).collect();
        let acks_lost = self
            .acked
            .iter()
            .filter(|id| replica.entries.contains(*id) && (replica.pending.contains(*id) || replica.undelivered(id)));
        FailoverCounts {
            lost_entries: lost.len() as i64,
            lost_acked_entries: lost.iter().filter(|id| self.acked.contains(**id)).count() as i64,
            acks_lost: acks_lost.count() as i64,
            stuck_pending: self.acked.iter().filter(|id| replica.pending.contains(*id)).count() as i64,
            behind_bytes: replica.behind_bytes,
            ..FailoverCounts::default()
        }
    }
}

/// What phase 2 saw on the promoted replica.
struct AfterKill {
    /// Entries the new consumers received.
    received: Vec<String>,
    published: usize,
    timed_out: bool,
}

impl FailoverSpec {
    /// Phase 1: consumers on the primary; publish, cut the link after `cut_after` events,
    /// publish up to `kill_after`, until everything is acknowledged; then stop the consumers.
    #[allow(clippy::too_many_arguments)]
    async fn on_primary(
        &self,
        ctx: &RunContext<'_>,
        pair: &mut Pair,
        stream: &str,
        tx: &mpsc::UnboundedSender<RawEvent>,
        rx: &mut mpsc::UnboundedReceiver<RawEvent>,
        raw: &mut Vec<RawEvent>,
        t0_ns: u64,
    ) -> Result<BeforeKill, Error> {
        let (cut, kill) = (self.failover.cut_after as usize, self.failover.kill_after as usize);
        let server = Server { url: &pair.primary.url.clone(), conn: &mut pair.p.clone() };
        let group = ConsumerGroup::start_on(ctx, server, vec![stream.to_string()], &self.group_spec(), 1, tx).await?;
        let producer = self.producer(pair.p.clone(), stream, ctx.scale, tx);
        let cut_port = crate::service::process::free_port().context("pick a closed port")?;
        let mut r_cut = pair.r.clone();
        let publish = async {
            producer.publish_all(&self.events[..cut], t0_ns).await?;
            redis::cmd("REPLICAOF")
                .arg("127.0.0.1")
                .arg(cut_port)
                .query_async::<()>(&mut r_cut)
                .await
                .context("REPLICAOF <closed port> on the replica")?;
            let at = crate::clock::now_ns();
            let how = format!("REPLICAOF 127.0.0.1 {cut_port}, a closed port");
            tx.record(RawEvent { mono_ns: at, actor: Actor::Runner, kind: EventKind::LagWindow { how } });
            producer.publish_all(&self.events[cut..kill], t0_ns).await?;
            Ok::<u64, Error>(at)
        };
        let (mut published, mut acked) = (Vec::<String>::new(), HashSet::<String>::new());
        let deadline = tokio::time::Instant::now() + self.bound(ctx.scale);
        let cut_at = drive(publish, rx, raw, deadline, |ev, done| {
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
        // The consumers stop with the primary (idle, all acknowledged).
        group.stop().await;
        Ok(BeforeKill { published, acked, cut_ns: cut_at.unwrap_or(u64::MAX), timed_out: cut_at.is_none() })
    }

    /// Phase 2: new consumers on the promoted replica; publish the rest there, until
    /// everything it holds is acknowledged.
    #[allow(clippy::too_many_arguments)]
    async fn on_replica(
        &self,
        ctx: &RunContext<'_>,
        pair: &mut Pair,
        stream: &str,
        tx: &mpsc::UnboundedSender<RawEvent>,
        rx: &mut mpsc::UnboundedReceiver<RawEvent>,
        raw: &mut Vec<RawEvent>,
        replica: &ReplicaView,
    ) -> Result<AfterKill, Error> {
        let kill = self.failover.kill_after as usize;
        let first_new = self.consumers + 1;
        let server = Server { url: &pair.replica.url.clone(), conn: &mut pair.r.clone() };
        let spec = self.group_spec();
        let group = ConsumerGroup::start_on(ctx, server, vec![stream.to_string()], &spec, first_new, tx).await?;
        let producer = self.producer(pair.r.clone(), stream, ctx.scale, tx);
        let resume_at = self.events.get(kill).and_then(|e| e.at_ms).unwrap_or(0.0);
        let resume = crate::clock::now_ns().saturating_sub(ctx.scale.duration(resume_at).as_nanos() as u64);
        let rest = &self.events[kill..];
        // New readers (`>`) get the entries past the group's last-delivered ID, and the rest.
        let mut expect: HashSet<String> = replica.entries.iter().filter(|id| replica.undelivered(id)).cloned().collect();
        let (mut acked, mut published, mut received) = (HashSet::<String>::new(), 0, Vec::<String>::new());
        let deadline = tokio::time::Instant::now() + self.bound(ctx.scale);
        let finished = drive(producer.publish_all(rest, resume), rx, raw, deadline, |ev, done| {
            if let Some(ev) = ev {
                let new = matches!(ev.actor, Actor::Consumer(n) if n >= first_new);
                match &ev.kind {
                    EventKind::Published { entry_id, .. } => {
                        expect.insert(entry_id.clone());
                        published += 1;
                    }
                    EventKind::Received { entry_id, .. } if new => received.push(entry_id.clone()),
                    EventKind::Acked { entry_id } if new => {
                        acked.insert(entry_id.clone());
                    }
                    _ => {}
                }
            }
            done && published == rest.len() && acked.is_superset(&expect)
        })
        .await?;
        group.stop().await;
        Ok(AfterKill { received, published, timed_out: finished.is_none() })
    }
}

/// SIGKILL the primary and promote the replica (`REPLICAOF NO ONE`); what it holds then.
async fn promote(pair: &mut Pair, stream: &str, tx: &mpsc::UnboundedSender<RawEvent>) -> Result<ReplicaView, Error> {
    let primary_offset = repl_offset(&mut pair.p).await?;
    pair.primary.kill(nix::sys::signal::Signal::SIGKILL)?;
    tx.emit(Actor::Runner, EventKind::ServerKilled { server: "primary".into(), signal: "SIGKILL".into() });
    let replica_offset = repl_offset(&mut pair.r).await?;
    redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async::<()>(&mut pair.r).await.context("REPLICAOF NO ONE")?;
    let behind_bytes = primary_offset - replica_offset;
    tx.emit(Actor::Runner, EventKind::ReplicaPromoted { behind_bytes });
    let entries = streams::read_entries(&mut pair.r, stream, 0).await?.into_iter().map(|e| e.entry_id).collect();
    let groups: redis::streams::StreamInfoGroupsReply =
        redis::cmd("XINFO").arg("GROUPS").arg(stream).query_async(&mut pair.r).await.context("XINFO GROUPS")?;
    let last_delivered =
        groups.groups.iter().find(|g| g.name == GROUP).map(|g| g.last_delivered_id.clone()).unwrap_or_default();
    let pending: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(100_000)
        .query_async(&mut pair.r)
        .await
        .context("XPENDING")?;
    let pending = pending.ids.into_iter().map(|p| p.id).collect();
    Ok(ReplicaView { entries, last_delivered, pending, behind_bytes })
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
