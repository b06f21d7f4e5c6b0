//! Failover: a primary with an asynchronous replica confirms writes and acknowledgements the
//! replica does not have yet; when the primary dies and the replica is promoted, what the
//! replica had not received is gone — entries, deliveries, acknowledgements. How much is
//! decided by the replication link and the moment of the crash, and measured here.
//!
//! One run, on two redis-servers of its own (PostgreSQL is the shared one and survives):
//!
//! 1. the replica replicates through a link of the harness ([`crate::interposer::link`]: a delay,
//!    a bandwidth, a partition) or directly on loopback; consumer processes read the group on
//!    the primary, each ready to follow the primary elsewhere;
//! 2. a steady producer publishes each order's `created`, then its `paid` a little later;
//! 3. at a moment drawn per run from `--seed`, the primary's machine dies: the link drops what
//!    it had not sent yet and the redis-server gets SIGKILL; the replica is promoted
//!    (`REPLICAOF NO ONE`) right away or after `promote_after_ms`;
//! 4. the producer and the consumers find the new primary by themselves (`ROLE` on each
//!    node); a consumer re-reads its own pending entries there first, then new ones; the run
//!    ends when everything on the new primary is acknowledged.
//!
//! Counted from the promoted replica's stream, group and pending list right after the
//! promotion, against what the old primary had confirmed to each role
//! ([`crate::labs::delivery::counts`]). A run is wrong when an order's stored state is older than
//! one a consumer had written (a stale event re-applied over a newer one).

pub mod events;

use crate::checker::{health::health, RunVerdict, Verdict};
use crate::error::{Context as _, Error};
use crate::interposer::link::{Link, LinkCounts, LinkShape};
use crate::fault::TimeScale;
use crate::orders::HandlerWork;
use crate::handler::order::Strategy;
use crate::labs::consumer_group::{drain, drive, ConsumerGroup, GroupSpec, Server};
use crate::labs::delivery::counts::{self as counting, FailoverCounts, Promoted};
use crate::labs::delivery::failover::events::FailoverEvent;
use crate::labs::order_stream::{self as stream, order_items};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunOutcome, RunView,
    TimelineDisplay,
};
use crate::lang::{pick, Lang};
use crate::orders::{self, EventSpec, OrderRow};
use crate::roles::client_list;
use crate::roles::producer::{sleep_until, Producer};
use crate::service::{NodeSpec, RedisNode, ServiceError, Services};
use crate::stats::quantile;
use crate::streams::{self, GROUP};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, Event, EventKind, RawEvent, Sink};
use rand::Rng;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

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
}

/// `failover = { … }`: a steady stream of orders (order k's `created` at k × `order_every_ms`,
/// its `paid` `paid_after_ms` later), the primary killed at a moment drawn in
/// `kill_between_ms`, the replica promoted `promote_after_ms` after the kill.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailoverPlan {
    #[serde(default = "FailoverPlan::default_orders")]
    pub orders: u32,
    #[serde(default = "FailoverPlan::default_every")]
    pub order_every_ms: f64,
    #[serde(default = "FailoverPlan::default_paid_after")]
    pub paid_after_ms: f64,
    pub kill_between_ms: [f64; 2],
    #[serde(default)]
    pub promote_after_ms: f64,
    #[serde(default)]
    pub link: LinkPlan,
}

/// `link = { … }`: how the replica reaches the primary. `proxy = false`: directly, on
/// loopback (no injected lag). Otherwise through the harness's link: `delay_ms` one way,
/// `kb_per_s` (1000 bytes) primary → replica, and a partition `partition_ms` before the kill.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPlan {
    #[serde(default = "LinkPlan::yes")]
    pub proxy: bool,
    #[serde(default)]
    pub delay_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kb_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_ms: Option<f64>,
}

impl Default for LinkPlan {
    fn default() -> Self {
        LinkPlan { proxy: true, delay_ms: 0.0, kb_per_s: None, partition_ms: None }
    }
}

impl LinkPlan {
    fn yes() -> bool {
        true
    }

    /// The shape under `--time-scale`: delays shrink with it, and the bandwidth grows, as the
    /// publish rate does, so the same run loses the same entries at any scale.
    fn shape(&self, scale: TimeScale) -> LinkShape {
        LinkShape {
            delay: scale.duration(self.delay_ms),
            bytes_per_s: self.kb_per_s.map(|kb| (kb * 1000.0 / scale.0.max(1e-6)) as u64),
        }
    }
}

impl FailoverPlan {
    fn default_orders() -> u32 {
        300
    }
    fn default_every() -> f64 {
        5.0
    }
    fn default_paid_after() -> f64 {
        80.0
    }

    /// Order k's `created` at (k-1) × `order_every_ms`, its `paid` `paid_after_ms` later, in
    /// time order.
    pub fn events(&self) -> Vec<EventSpec> {
        let mut out: Vec<EventSpec> = (1..=self.orders as i64)
            .flat_map(|k| {
                let at = (k - 1) as f64 * self.order_every_ms;
                [
                    EventSpec { at_ms: Some(at), ..EventSpec::new(k, "created", 1) },
                    EventSpec { at_ms: Some(at + self.paid_after_ms), ..EventSpec::new(k, "paid", 2) },
                ]
            })
            .collect();
        out.sort_by(|a, b| a.at_ms.unwrap_or(0.0).total_cmp(&b.at_ms.unwrap_or(0.0)));
        out
    }

    /// The run's kill moment, in ms after t=0 before time scale, from the run's own seed.
    fn kill_at_ms(&self, rng: &mut impl Rng) -> f64 {
        let [from, to] = self.kill_between_ms;
        (rng.random_range(from..=to) * 10.0).round() / 10.0
    }
}

/// What a run left and measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailoverObserved {
    pub final_rows: Vec<OrderRow>,
    /// The drawn kill moment (ms after t=0, before time scale).
    pub kill_at_ms: f64,
    /// From the kill to `REPLICAOF NO ONE` answered (ms, as it ran).
    pub promoted_after_ms: f64,
    pub counts: FailoverCounts,
    pub lag: LagSummary,
    /// Replication stream the replica lacked when promoted (the primary's offset just before
    /// the kill minus the replica's at promotion).
    pub behind_bytes: i64,
    /// Events that are twice in the new primary's stream (a producer retry of an XADD whose
    /// reply was lost but which had landed and replicated).
    pub duplicates: i64,
    /// Entries still pending on the new primary after the run (nobody came back for them).
    pub stuck_pending: i64,
    /// Orders whose stored state is older than one a consumer wrote.
    pub stale_orders: Vec<i64>,
    /// What went through the harness's link (None: the replica replicated directly).
    #[serde(default)]
    pub link: Option<LinkCounts>,
}

/// The replica's lag, sampled on the replica until the kill: the age of the oldest entry the
/// primary had confirmed and the replica did not have yet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    pub p50_ms: f64,
    pub max_ms: f64,
    pub at_kill_ms: f64,
    /// (ms since t=0, lag ms), thinned to at most [`LAG_POINTS`] points, for charts.
    pub samples: Vec<(f64, f64)>,
}

/// At most this many lag samples are kept per run.
const LAG_POINTS: usize = 120;
/// How often the replica's newest entry is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(2);

/// The servers of one run (Redis nodes on the run's backend) and the link between them.
struct Nodes {
    primary: RedisNode,
    replica: RedisNode,
    link: Option<Link>,
    p: MultiplexedConnection,
    r: MultiplexedConnection,
}

impl Nodes {
    /// Where the roles may find a primary: the primary first, then the replica.
    fn urls(&self) -> Vec<String> {
        vec![self.primary.url.clone(), self.replica.url.clone()]
    }
}

impl FailoverSpec {
    fn events(&self) -> Vec<EventSpec> {
        self.failover.events()
    }

    fn work(&self) -> HandlerWork {
        HandlerWork::new(&self.cost_ms, &self.events())
    }

    /// A generous bound: the publish span, every job's work, tripled, plus 15 s.
    fn bound(&self, scale: TimeScale) -> Duration {
        let events = self.events();
        let work = self.work();
        let total: f64 = events.iter().map(|e| work.cost_ms(&e.job())).sum();
        let span = events.last().and_then(|e| e.at_ms).unwrap_or(0.0) + self.failover.promote_after_ms;
        scale.duration((total + span) * 3.0) + Duration::from_secs(15)
    }

    /// Business version of each event type (`created` 1, `paid` 2).
    fn versions(&self) -> HashMap<String, i64> {
        self.events().into_iter().map(|e| (e.event_type, e.version)).collect()
    }
}

/// What a failover run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailoverFacts {
    pub kill_at_ms: i64,
    pub promoted_after_ms: i64,
    pub lag_at_kill_ms: i64,
    pub lag_max_ms: i64,
    pub behind_bytes: i64,
    pub confirmed: i64,
    pub lost_entries: i64,
    pub lost_applied: i64,
    pub lost_never_applied: i64,
    pub acks_lost: i64,
    pub redelivered_acked: i64,
    pub redelivered_in_flight: i64,
    pub duplicates: i64,
    pub stuck_pending: i64,
    /// Orders whose row went back to an older version.
    pub wrong_stale: i64,
    /// The strategy (CAS) never lowers a version: `wrong_stale` is 0 in every run, a figure a
    /// snapshot keeps.
    pub never_lowers_versions: bool,
    pub orders_last_event_lost: i64,
}

impl Facts for FailoverFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![
            FactRow::stable("kill_at_ms", self.kill_at_ms),
            FactRow::measured("promoted_after_ms", self.promoted_after_ms),
            FactRow::measured("lag_at_kill_ms", self.lag_at_kill_ms),
            FactRow::measured("lag_max_ms", self.lag_max_ms),
            FactRow::measured("behind_bytes", self.behind_bytes),
            FactRow::measured("confirmed", self.confirmed),
            FactRow::measured("lost_entries", self.lost_entries),
            FactRow::measured("lost_applied", self.lost_applied),
            FactRow::measured("lost_never_applied", self.lost_never_applied),
            FactRow::measured("acks_lost", self.acks_lost),
            FactRow::measured("redelivered_acked", self.redelivered_acked),
            FactRow::measured("redelivered_in_flight", self.redelivered_in_flight),
            FactRow::measured("duplicates", self.duplicates),
            FactRow::stable("stuck_pending", self.stuck_pending),
            FactRow::new("wrong_stale", self.wrong_stale, self.never_lowers_versions),
            FactRow::measured("orders_last_event_lost", self.orders_last_event_lost),
        ]
    }
}

impl LabProcedure for FailoverSpec {
    fn needs(&self) -> crate::labs::Needs {
        crate::labs::Needs {
            not_external: Some("it starts Redis servers of its own (a primary and a replica it kills and promotes)"),
            ..Default::default()
        }
    }

    fn validate(&mut self) -> Result<(), String> {
        stream::check_consumers(self.consumers)?;
        stream::check_costs(&self.cost_ms)?;
        let f = &self.failover;
        let span = f.orders.saturating_sub(1) as f64 * f.order_every_ms + f.paid_after_ms;
        let [from, to] = f.kill_between_ms;
        if f.orders == 0 || f.order_every_ms <= 0.0 || f.paid_after_ms < 0.0 || f.promote_after_ms < 0.0 {
            return Err(
                "setup.failover: use orders ≥ 1, order_every_ms > 0, paid_after_ms ≥ 0, promote_after_ms ≥ 0".into()
            );
        }
        if !(0.0 < from && from <= to && to < span) {
            return Err(format!(
                "setup.failover.kill_between_ms = [{from}, {to}]: use 0 < from ≤ to < {span} (the publish span)"
            ));
        }
        let l = &f.link;
        if !l.proxy && (l.delay_ms != 0.0 || l.kb_per_s.is_some() || l.partition_ms.is_some()) {
            return Err(
                "setup.failover.link: proxy = false is a direct link; drop delay_ms, kb_per_s, partition_ms".into()
            );
        }
        if l.delay_ms < 0.0
            || l.kb_per_s.is_some_and(|b| b <= 0.0)
            || l.partition_ms.is_some_and(|p| p <= 0.0 || p >= from)
        {
            return Err(format!(
                "setup.failover.link: use delay_ms ≥ 0, kb_per_s > 0, 0 < partition_ms < kill_between_ms[0] ({from})"
            ));
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<FailoverObserved>, Error> {
        let events = self.events();
        orders::reset(ctx.pg, &orders::default_initial(&events)).await?;
        let stream = format!("{}orders", ctx.key_prefix());
        let mut nodes = start_nodes(ctx.services, &self.failover.link, ctx.scale, &stream).await?;
        let urls = nodes.urls();
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let group_spec = GroupSpec {
            consumers: self.consumers,
            shards: 1,
            strategy: &self.strategy,
            work: self.work(),
            faults: &[],
            reaper: None,
            follow_primary: &urls,
            worker: None,
            waiting_order: None,
            patience_ms: None,
        };
        let server = Server { url: &urls[0], conn: &mut nodes.p.clone() };
        let group = ConsumerGroup::start_on(ctx, server, vec![stream.clone()], &group_spec, 1, &tx).await?;
        let kill_at_ms = self.failover.kill_at_ms(&mut ctx.rng());
        let deadline = tokio::time::Instant::now() + self.bound(ctx.scale);
        let (stop_sampling, sampling) = watch::channel(false);
        let sampler = tokio::spawn(sample_replica(nodes.r.clone(), stream.clone(), sampling));
        let t0_ns = crate::clock::now_ns();
        let mut producer = Producer {
            redis: nodes.p.clone(),
            streams: vec![stream.clone()],
            state_bytes: 0,
            scale: ctx.scale,
            sink: Arc::new(tx.clone()),
        };
        let crash = Crash { plan: &self.failover, scale: ctx.scale, t0_ns, kill_at_ms, stop_sampling };
        let run = async {
            let (published, promoted) = tokio::join!(
                producer.publish_following_primary(&events, t0_ns, &urls),
                crash.run(&mut nodes, &stream, &tx)
            );
            published?;
            promoted
        };
        let mut raw = Vec::new();
        let promoted = drive(run, &mut rx, &mut raw, deadline, |_, done| done).await?;
        let settled = promoted.is_some() && settle(&mut nodes.r, &stream, &mut rx, &mut raw, deadline).await?;
        group.stop().await;
        drop(tx);
        drain(rx, &mut raw);
        let samples = sampler.await.expect("sampler does not panic");
        raw.sort_by_key(|e| e.mono_ns);
        let observed = self.observe(ctx, &mut nodes, &stream, &raw, promoted, samples, (t0_ns, kill_at_ms)).await?;
        tokio::join!(nodes.replica.stop(), nodes.primary.stop());
        Ok(RunOutcome { t0_ns, raw, timed_out: !settled, observed })
    }
}

impl Judge for FailoverSpec {
    type Observed = FailoverObserved;
    type Facts = FailoverFacts;

    fn judge(&self, run: &RunView<'_, FailoverObserved>) -> RunVerdict {
        let mut verdict = health(run.events, run.timed_out);
        for (order, stored, newest) in stale(&self.versions(), run.events, &run.observed.final_rows) {
            verdict.add(
                Verdict::Wrong,
                format!("order {order} ended at v={stored} though v={newest} had been written: a stale event re-applied over it"),
            );
        }
        verdict
    }

    fn final_state(&self, observed: &FailoverObserved) -> Vec<FinalItem> {
        // Only an order that went back is wrong here; one whose last event was lost with the
        // old primary is counted apart (`orders_last_event_lost`).
        let expected = orders::expected_statuses(&self.events());
        order_items(&expected, &observed.final_rows)
            .into_iter()
            .map(|mut item| {
                let lost_only =
                    item.should_be.is_some() && !item.order.is_some_and(|o| observed.stale_orders.contains(&o));
                if lost_only {
                    item.should_be = None;
                }
                item
            })
            .collect()
    }

    fn facts(&self, run: &RunView<'_, FailoverObserved>) -> FailoverFacts {
        let o = run.observed;
        let c = &o.counts;
        FailoverFacts {
            kill_at_ms: o.kill_at_ms.round() as i64,
            promoted_after_ms: o.promoted_after_ms.round() as i64,
            lag_at_kill_ms: o.lag.at_kill_ms.round() as i64,
            lag_max_ms: o.lag.max_ms.round() as i64,
            behind_bytes: o.behind_bytes,
            confirmed: c.confirmed as i64,
            lost_entries: c.lost() as i64,
            lost_applied: c.lost_applied as i64,
            lost_never_applied: c.lost_never_applied as i64,
            acks_lost: c.acks_lost as i64,
            redelivered_acked: c.redelivered_acked as i64,
            redelivered_in_flight: c.redelivered_in_flight as i64,
            duplicates: o.duplicates,
            stuck_pending: o.stuck_pending,
            wrong_stale: stale(&self.versions(), run.events, &o.final_rows).len() as i64,
            never_lowers_versions: self.strategy.never_lowers_version(),
            orders_last_event_lost: o.last_event_lost(&self.events()) as i64,
        }
    }
}

impl Present for FailoverSpec {
    fn describe(&self, lang: Lang) -> String {
        let f = &self.failover;
        let (orders, every, paid, n) = (f.orders, f.order_every_ms, f.paid_after_ms, self.consumers);
        let [from, to] = f.kill_between_ms;
        let mut parts = vec![
            crate::tr!(
                lang,
                "primary + 1 async replica, {}",
                "primary + 1 replica bất đồng bộ, {}",
                link_phrase(&f.link, lang)
            ),
            crate::tr!(
                lang,
                "{orders} orders, one every {every} ms, paid {paid} ms after created",
                "{orders} đơn, mỗi {every} ms một đơn, paid sau created {paid} ms"
            ),
        ];
        parts.extend(stream::costs_phrase(&self.cost_ms, &self.events()));
        let promote = match (f.promote_after_ms, lang) {
            (p, Lang::En) if p > 0.0 => format!("the replica promoted {p} ms after"),
            (p, Lang::Vi) if p > 0.0 => format!("replica lên primary sau {p} ms"),
            (_, Lang::En) => "the replica promoted at once".to_string(),
            (_, Lang::Vi) => "replica lên primary ngay".to_string(),
        };
        parts.push(crate::tr!(
            lang,
            "the primary's machine dies at a random moment in {from}–{to} ms (SIGKILL), {promote}",
            "máy primary chết vào một lúc ngẫu nhiên trong {from}–{to} ms (SIGKILL), {promote}"
        ));
        parts.push(crate::tr!(
            lang,
            "{n} consumers that follow the primary, {}",
            "{n} consumer đi theo primary, {}",
            self.strategy.describe(lang)
        ));
        parts.join("; ")
    }

    fn approach(&self) -> String {
        self.strategy.short()
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(
            lang,
            "an order's state older than one already written (a stale event re-applied)",
            "trạng thái đơn cũ hơn trạng thái đã ghi (sự kiện cũ bị áp dụng lại)",
        )
        .to_string()
    }

    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay { shows_publishing: true, many_orders: true, ..TimelineDisplay::default() }
    }

    fn per_run_lines(&self, runs: &[RunView<'_, FailoverObserved>], lang: Lang) -> Vec<Line> {
        let rows: Vec<RunFigures> = runs.iter().map(|r| RunFigures::of(self, r)).collect();
        let mut lines = distribution(&rows, lang);
        lines.extend(rows.iter().map(|f| f.line(lang)));
        lines
    }
}

impl FailoverObserved {
    /// Orders whose last event (the newest version published for it) never reached their row:
    /// lost with the old primary before any consumer applied it (not a stale overwrite).
    fn last_event_lost(&self, events: &[EventSpec]) -> usize {
        let newest: BTreeMap<i64, i64> = events.iter().fold(BTreeMap::new(), |mut m, e| {
            let v = m.entry(e.order).or_insert(e.version);
            *v = (*v).max(e.version);
            m
        });
        self.final_rows
            .iter()
            .filter(|r| newest.get(&r.order).is_some_and(|v| r.version < *v) && !self.stale_orders.contains(&r.order))
            .count()
    }
}

/// (order, stored version, newest written version) of every order that went back.
fn stale(versions: &HashMap<String, i64>, events: &[Event], rows: &[OrderRow]) -> Vec<(i64, i64, i64)> {
    stale_in(versions, events.iter().map(|e| &e.kind), rows)
}

fn stale_in<'a>(
    versions: &HashMap<String, i64>,
    kinds: impl Iterator<Item = &'a EventKind>,
    rows: &[OrderRow],
) -> Vec<(i64, i64, i64)> {
    let written: Vec<(i64, i64)> = kinds
        .filter_map(|k| match k {
            EventKind::Wrote { order, status, rows, .. } if *rows > 0 => versions.get(status).map(|v| (*order, *v)),
            _ => None,
        })
        .collect();
    let stored: BTreeMap<i64, i64> = rows.iter().map(|r| (r.order, r.version)).collect();
    counting::stale_orders(&written, &stored)
}

/// The link in words.
fn link_phrase(l: &LinkPlan, lang: Lang) -> String {
    if !l.proxy {
        return pick(
            lang,
            "replicating directly on loopback (no injected lag)",
            "replicate trực tiếp qua loopback (không thêm trễ)",
        )
        .into();
    }
    let mut parts = Vec::new();
    if l.delay_ms > 0.0 {
        let d = l.delay_ms;
        parts.push(crate::tr!(lang, "{d} ms one way", "trễ {d} ms mỗi chiều"));
    }
    if let Some(kb) = l.kb_per_s {
        parts.push(crate::tr!(lang, "{kb} KB/s primary → replica", "{kb} KB/s primary → replica"));
    }
    if let Some(p) = l.partition_ms {
        parts.push(crate::tr!(
            lang,
            "a partition {p} ms before the kill",
            "mất kết nối (partition) {p} ms trước khi kill"
        ));
    }
    if parts.is_empty() {
        parts.push(pick(lang, "no delay", "không trễ").into());
    }
    crate::tr!(lang, "replicating through a link: {}", "replicate qua một link: {}", parts.join(", "))
}

/// Primary, link, replica synced, the group on the primary and seen on the replica: two
/// Redis nodes on the run's backend (local servers or containers), of the same Redis as the
/// run's own server, which the report's header names.
async fn start_nodes(services: &Services, link: &LinkPlan, scale: TimeScale, stream: &str) -> Result<Nodes, Error> {
    // Both nodes are stopped when dropped, on every path out of here.
    let primary = services
        .start_redis_node(&NodeSpec::new(["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]))
        .await?;
    let mut p = crate::connect::redis(&primary.url).await.context("connect to the primary")?;
    same_redis_as_the_header(&mut p, &services.info.redis_version).await?;
    let link = match link.proxy {
        true => {
            let listener = services.listen_for_nodes().await?;
            let started = Link::start_on(listener, primary.addr(), link.shape(scale));
            Some(started.map_err(|source| Error::Io { context: "start the replication link".into(), source })?)
        }
        false => None,
    };
    let (host, port) = match &link {
        Some(l) => (l.addr().ip().to_string(), l.addr().port()),
        None => (primary.peer.host.clone(), primary.peer.port),
    };
    let replica =
        services.start_redis_node(&NodeSpec::new(["--replicaof".to_string(), host, port.to_string()])).await?;
    if let Some(link) = &link {
        replica_reaches(link).await?;
    }
    let mut r = crate::connect::redis(&replica.url).await.context("connect to the replica")?;
    same_redis_as_the_header(&mut r, &services.info.redis_version).await?;
    client_list::until("the replica's link to the primary", || {
        let mut r = r.clone();
        async move { Ok(info(&mut r, "replication").await?.contains("master_link_status:up")) }
    })
    .await?;
    streams::create_group(&mut p, stream, GROUP).await?;
    client_list::until("the group on the replica", || {
        let mut r = r.clone();
        let key = stream.to_string();
        async move { Ok(redis::cmd("EXISTS").arg(&key).query_async::<i64>(&mut r).await.context("EXISTS")? == 1) }
    })
    .await?;
    Ok(Nodes { primary, replica, link, p, r })
}

/// How long the replica may take to open its connection to the link.
const LINK_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The replica opened a connection to the link: it can reach this process (on Docker, a
/// firewall between the containers and the host would drop it).
async fn replica_reaches(link: &Link) -> Result<(), Error> {
    let connected = crate::service::readiness::poll_until(LINK_CONNECT_TIMEOUT, Duration::from_millis(10), || async {
        match link.connections() {
            0 => crate::service::readiness::Attempt::Retry("no connection yet".to_string()),
            _ => crate::service::readiness::Attempt::Ready(()),
        }
    })
    .await;
    connected.map_err(|_| {
        let reason = format!(
            "the replica did not connect within {} s; a firewall between the containers and this host?",
            LINK_CONNECT_TIMEOUT.as_secs()
        );
        Error::Service(ServiceError::HostUnreachable { addr: link.addr().to_string(), reason })
    })
}

/// The lab's nodes run the Redis the report's header names (the run's own server's).
async fn same_redis_as_the_header(conn: &mut MultiplexedConnection, header: &str) -> Result<(), Error> {
    node_runs_the_header_redis(&info(conn, "server").await?, header)
}

/// `redis_version` of a node's INFO server is the header's, or the one-line refusal.
fn node_runs_the_header_redis(info_server: &str, header: &str) -> Result<(), Error> {
    let node = info_server.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("unknown").trim();
    match node == header {
        true => Ok(()),
        false => Err(Error::NodeVersion { node: node.to_string(), header: header.to_string() }),
    }
}

/// The crash of one run: when, and how the replica takes over.
struct Crash<'a> {
    plan: &'a FailoverPlan,
    scale: TimeScale,
    t0_ns: u64,
    kill_at_ms: f64,
    stop_sampling: watch::Sender<bool>,
}

/// What the promoted replica held, and the crash's own figures.
struct Takeover {
    view: Promoted,
    promoted_after_ms: f64,
    behind_bytes: i64,
}

impl Crash<'_> {
    /// At the drawn moment (after the partition, if any): the primary's machine dies, then
    /// the replica is promoted; what it holds then.
    async fn run(
        &self,
        nodes: &mut Nodes,
        stream: &str,
        tx: &mpsc::UnboundedSender<RawEvent>,
    ) -> Result<Takeover, Error> {
        if let (Some(p), Some(link)) = (self.plan.link.partition_ms, &nodes.link) {
            sleep_until(self.t0_ns, self.scale.duration(self.kill_at_ms - p)).await;
            link.partition();
            let how =
                "a partition: the link drops everything both ways; each side still sees the connection up".to_string();
            tx.emit(Actor::Runner, FailoverEvent::LagWindow { how }.event());
        }
        sleep_until(self.t0_ns, self.scale.duration(self.kill_at_ms)).await;
        let _ = self.stop_sampling.send(true);
        let primary_offset = die(&mut nodes.p).await?;
        let died_ns = crate::clock::now_ns();
        if let Some(link) = &nodes.link {
            link.crash(self.scale.duration(self.plan.promote_after_ms));
        }
        tx.emit(Actor::Runner, EventKind::ServerKilled { server: "primary".into(), signal: "SIGKILL".into() });
        nodes.primary.kill().await?;
        sleep_until(died_ns, self.scale.duration(self.plan.promote_after_ms)).await;
        let replica_offset = repl_offset(&mut nodes.r).await?;
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query_async::<()>(&mut nodes.r)
            .await
            .context("REPLICAOF NO ONE")?;
        let promoted_after_ms = (crate::clock::now_ns() - died_ns) as f64 / 1e6;
        let behind_bytes = (primary_offset - replica_offset).max(0);
        tx.emit(Actor::Runner, FailoverEvent::ReplicaPromoted { behind_bytes }.event());
        let view = promoted_view(&mut nodes.r, stream).await?;
        Ok(Takeover { view, promoted_after_ms, behind_bytes })
    }
}

/// The primary's machine dies now: from this moment it confirms nothing (`CLIENT PAUSE`: the
/// commands of every client wait, and die with it), whatever the backend takes to SIGKILL it
/// afterwards (a local signal is instant; the Docker engine takes milliseconds, in which the
/// old primary would otherwise go on confirming writes the replica never gets). Returns its
/// replication offset at that moment.
async fn die(p: &mut MultiplexedConnection) -> Result<i64, Error> {
    let (text, ()): (String, ()) = redis::pipe()
        .cmd("INFO")
        .arg("replication")
        .cmd("CLIENT")
        .arg("PAUSE")
        .arg(PAUSE_UNTIL_KILLED.as_millis() as u64)
        .query_async(p)
        .await
        .context("INFO replication + CLIENT PAUSE on the primary")?;
    Ok(offset_in(&text))
}

/// Longer than any SIGKILL takes; the server is gone before it ends.
const PAUSE_UNTIL_KILLED: Duration = Duration::from_secs(120);

/// The promoted replica's entries, group position and pending list.
async fn promoted_view(r: &mut MultiplexedConnection, stream: &str) -> Result<Promoted, Error> {
    let entries = streams::read_entries(r, stream, 0).await?.into_iter().map(|e| e.entry_id).collect();
    let groups: redis::streams::StreamInfoGroupsReply =
        redis::cmd("XINFO").arg("GROUPS").arg(stream).query_async(r).await.context("XINFO GROUPS")?;
    let last_delivered =
        groups.groups.iter().find(|g| g.name == GROUP).map(|g| g.last_delivered_id.clone()).unwrap_or_default();
    let pending: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(1_000_000)
        .query_async(r)
        .await
        .context("XPENDING")?;
    Ok(Promoted { entries, last_delivered, pending: pending.ids.into_iter().map(|p| p.id).collect() })
}

/// The replica's newest entry ID every few ms, until told to stop: (monotonic ns, ID).
async fn sample_replica(
    mut r: MultiplexedConnection,
    stream: String,
    mut stop: watch::Receiver<bool>,
) -> Vec<(u64, Option<String>)> {
    let mut samples = Vec::new();
    while !*stop.borrow() {
        let newest: Result<redis::streams::StreamRangeReply, _> =
            redis::cmd("XREVRANGE").arg(&stream).arg("+").arg("-").arg("COUNT").arg(1).query_async(&mut r).await;
        let Ok(newest) = newest else { break };
        samples.push((crate::clock::now_ns(), newest.ids.first().map(|e| e.id.clone())));
        tokio::select! {
            _ = tokio::time::sleep(SAMPLE_EVERY) => {}
            _ = stop.changed() => {}
        }
    }
    samples
}

/// Record events until the new primary has delivered and acknowledged everything it holds
/// (XPENDING empty, the group's last-delivered ID its newest entry); false at the deadline.
async fn settle(
    r: &mut MultiplexedConnection,
    stream: &str,
    rx: &mut mpsc::UnboundedReceiver<RawEvent>,
    raw: &mut Vec<RawEvent>,
    deadline: tokio::time::Instant,
) -> Result<bool, Error> {
    loop {
        let pending = streams::pending_count(r, stream, GROUP).await?;
        let groups: redis::streams::StreamInfoGroupsReply =
            redis::cmd("XINFO").arg("GROUPS").arg(stream).query_async(r).await.context("XINFO GROUPS")?;
        let newest = streams::read_entries(r, stream, 0).await?.last().map(|e| e.entry_id.clone());
        let delivered = groups.groups.iter().find(|g| g.name == GROUP).map(|g| g.last_delivered_id.clone());
        if pending == 0 && newest == delivered {
            return Ok(true);
        }
        if tokio::time::Instant::now() > deadline {
            return Ok(false);
        }
        let until = tokio::time::Instant::now() + Duration::from_millis(10);
        while let Ok(Some(ev)) = tokio::time::timeout_at(until, rx.recv()).await {
            raw.push(ev);
        }
    }
}

impl FailoverSpec {
    /// Counts, lag, and what the new primary holds after the run.
    #[allow(clippy::too_many_arguments)]
    async fn observe(
        &self,
        ctx: &RunContext<'_>,
        nodes: &mut Nodes,
        stream: &str,
        raw: &[RawEvent],
        takeover: Option<Takeover>,
        samples: Vec<(u64, Option<String>)>,
        (t0_ns, kill_at_ms): (u64, f64),
    ) -> Result<FailoverObserved, Error> {
        let old = counting::split(raw.iter().map(|e| (e.actor, &e.kind)));
        let counts = takeover.as_ref().map(|t| counting::count(&old, &t.view)).unwrap_or_default();
        let final_stream = streams::read_entries(&mut nodes.r, stream, 0).await?;
        let mut seen = HashSet::new();
        let duplicates = final_stream.iter().filter(|e| !seen.insert((e.job.order, e.job.version))).count() as i64;
        let stuck_pending = streams::pending_count(&mut nodes.r, stream, GROUP).await?;
        let final_rows = orders::final_rows(ctx.pg, &orders::orders_of(&[], &self.events())).await?;
        let stale_orders =
            stale_in(&self.versions(), raw.iter().map(|e| &e.kind), &final_rows).iter().map(|s| s.0).collect();
        Ok(FailoverObserved {
            stale_orders,
            final_rows,
            kill_at_ms,
            promoted_after_ms: takeover.as_ref().map_or(0.0, |t| t.promoted_after_ms),
            counts,
            lag: lag_summary(raw, &samples, t0_ns),
            behind_bytes: takeover.as_ref().map_or(0, |t| t.behind_bytes),
            duplicates,
            stuck_pending,
            link: nodes.link.as_ref().map(Link::counts),
        })
    }
}

/// Lag at each sample: the age of the oldest entry the old primary had confirmed (publish
/// started before the sample) that is newer than the replica's newest.
fn lag_summary(raw: &[RawEvent], samples: &[(u64, Option<String>)], t0_ns: u64) -> LagSummary {
    let mut confirmed: Vec<((u64, u64), u64)> = Vec::new();
    for e in raw {
        match &e.kind {
            EventKind::Reconnected { .. } if e.actor == Actor::Producer => break,
            EventKind::Published { entry_id, .. } => confirmed.push((streams::id_order(entry_id), e.mono_ns)),
            _ => {}
        }
    }
    confirmed.sort();
    let lags: Vec<(f64, f64)> = samples
        .iter()
        .map(|(at, newest)| {
            let have = newest.as_deref().map(streams::id_order).unwrap_or((0, 0));
            let oldest_missing = confirmed.iter().find(|(id, published)| *id > have && *published <= *at);
            let lag = oldest_missing.map_or(0.0, |(_, published)| (at - published) as f64 / 1e6);
            ((*at as f64 - t0_ns as f64) / 1e6, lag)
        })
        .collect();
    let values: Vec<f64> = lags.iter().map(|(_, l)| *l).collect();
    let step = lags.len().div_ceil(LAG_POINTS).max(1);
    LagSummary {
        p50_ms: quantile(&values, 0.5).unwrap_or(0.0),
        max_ms: values.iter().copied().fold(0.0, f64::max),
        at_kill_ms: values.last().copied().unwrap_or(0.0),
        samples: lags.iter().step_by(step).copied().collect(),
    }
}

/// One run's figures for the report.
struct RunFigures {
    run: u32,
    kill_at_ms: f64,
    lag_ms: f64,
    counts: FailoverCounts,
    stale: usize,
    last_lost: usize,
}

impl RunFigures {
    fn of(spec: &FailoverSpec, r: &RunView<'_, FailoverObserved>) -> RunFigures {
        let o = r.observed;
        RunFigures {
            run: r.run,
            kill_at_ms: o.kill_at_ms,
            lag_ms: o.lag.at_kill_ms,
            counts: o.counts,
            stale: stale(&spec.versions(), r.events, &o.final_rows).len(),
            last_lost: o.last_event_lost(&spec.events()),
        }
    }

    /// `run 3: kill at 734 ms, lag 101 ms → lost 38 (38 applied), acks lost 5, …`.
    fn line(&self, lang: Lang) -> Line {
        let c = &self.counts;
        let n = |x: u32| Piece::Count(x as i64);
        let kill = self.kill_at_ms.round();
        let head = crate::tr!(lang, "run {}: kill at {kill} ms, lag ", "lần {}: kill lúc {kill} ms, trễ ", self.run);
        Line::text(head)
            .and(Piece::Count(self.lag_ms.round() as i64))
            .and_text(pick(lang, " ms → lost ", " ms → mất "))
            .and(n(c.lost()))
            .and_text(pick(lang, " (applied ", " (đã áp dụng "))
            .and(n(c.lost_applied))
            .and_text(pick(lang, "), acks lost ", "), mất ack "))
            .and(n(c.acks_lost))
            .and_text(pick(lang, ", redelivered ", ", giao lại "))
            .and(n(c.redelivered_acked))
            .and_text(" + ")
            .and(n(c.redelivered_in_flight))
            .and_text(pick(lang, " in flight, stale ", " đang xử lý, bị ghi đè cũ "))
            .and(Piece::Count(self.stale as i64))
            .and_text(pick(lang, ", last event lost ", ", mất sự kiện cuối "))
            .and(Piece::Count(self.last_lost as i64))
    }
}

/// A figure of the distribution table: its words (en, vi) and how to read it off a run.
type Figure = (&'static str, &'static str, fn(&RunFigures) -> f64);

/// Min / median / max over the runs of each figure.
fn distribution(rows: &[RunFigures], lang: Lang) -> Vec<Line> {
    if rows.is_empty() {
        return Vec::new();
    }
    let figures: [Figure; 7] = [
        ("replica lag at the kill (ms)", "độ trễ replica lúc kill (ms)", |f| f.lag_ms),
        (
            "entries lost (confirmed, missing on the new primary)",
            "entry mất (đã xác nhận, không có ở primary mới)",
            |f| f.counts.lost() as f64,
        ),
        ("  … never applied", "  … chưa từng được áp dụng", |f| f.counts.lost_never_applied as f64),
        ("acks lost", "ack bị mất", |f| f.counts.acks_lost as f64),
        ("redelivered (acked + in flight)", "giao lại (đã ack + đang xử lý)", |f| {
            f.counts.redelivered() as f64
        }),
        ("orders wrong: stale state", "đơn sai: trạng thái cũ", |f| f.stale as f64),
        ("orders whose last event was lost", "đơn mất sự kiện cuối", |f| f.last_lost as f64),
    ];
    let runs = rows.len();
    let mut lines = vec![Line::text(crate::tr!(
        lang,
        "over {runs} runs (min / median / max):",
        "qua {runs} lần (min / trung vị / max):"
    ))];
    for (en, vi, get) in figures {
        let values: Vec<f64> = rows.iter().map(get).collect();
        let q = |p: f64| Piece::Count(quantile(&values, p).unwrap_or(0.0).round() as i64);
        lines.push(
            Line::text(format!("  {:<54} ", pick(lang, en, vi)))
                .and(q(0.0))
                .and_text(" / ")
                .and(q(0.5))
                .and_text(" / ")
                .and(q(1.0)),
        );
    }
    lines
}

async fn info(conn: &mut MultiplexedConnection, section: &str) -> Result<String, Error> {
    redis::cmd("INFO").arg(section).query_async(conn).await.context("INFO")
}

/// `master_repl_offset` from INFO replication: how much replication stream this server has.
async fn repl_offset(conn: &mut MultiplexedConnection) -> Result<i64, Error> {
    Ok(offset_in(&info(conn, "replication").await?))
}

fn offset_in(info_replication: &str) -> i64 {
    info_replication
        .lines()
        .find_map(|l| l.strip_prefix("master_repl_offset:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use crate::labs::delivery::failover::*;

    #[test]
    fn a_node_of_another_redis_than_the_header_is_refused_in_one_line() {
        let info = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
        assert!(node_runs_the_header_redis(info, "7.0.15").is_ok());
        let line = node_runs_the_header_redis(info, "8.6.3").unwrap_err().to_string();
        assert!(line.contains("7.0.15") && line.contains("8.6.3") && !line.contains('\n'), "{line}");
        assert!(node_runs_the_header_redis("# Server\r\n", "8.6.3").is_err());
    }

    fn plan() -> FailoverPlan {
        FailoverPlan {
            orders: 3,
            order_every_ms: 5.0,
            paid_after_ms: 8.0,
            kill_between_ms: [4.0, 6.0],
            promote_after_ms: 0.0,
            link: LinkPlan::default(),
        }
    }

    #[test]
    fn a_steady_stream_publishes_each_paid_after_its_created_in_time_order() {
        let at: Vec<(i64, &str, f64)> = plan()
            .events()
            .iter()
            .map(|e| (e.order, if e.version == 1 { "c" } else { "p" }, e.at_ms.unwrap()))
            .collect();
        assert_eq!(at, [(1, "c", 0.0), (2, "c", 5.0), (1, "p", 8.0), (3, "c", 10.0), (2, "p", 13.0), (3, "p", 18.0)]);
    }

    #[test]
    fn the_kill_moment_is_drawn_in_its_window_and_repeats_per_seed() {
        use rand::SeedableRng;
        let p = FailoverPlan { kill_between_ms: [400.0, 1200.0], ..plan() };
        let draw = |seed| p.kill_at_ms(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        assert_eq!(draw(7), draw(7));
        let moments: Vec<f64> = (0..20).map(draw).collect();
        assert!(moments.iter().all(|m| (400.0..=1200.0).contains(m)));
        assert!(moments.iter().any(|m| *m != moments[0]));
    }

    #[test]
    fn bandwidth_scales_with_the_publish_rate() {
        let l = LinkPlan { kb_per_s: Some(100.0), delay_ms: 100.0, ..LinkPlan::default() };
        let s = l.shape(TimeScale(0.5));
        assert_eq!((s.delay, s.bytes_per_s), (Duration::from_millis(50), Some(200_000)));
    }

    #[test]
    fn lag_is_the_age_of_the_oldest_confirmed_entry_the_replica_lacks() {
        let published = |id: &str, at: u64| RawEvent {
            mono_ns: at,
            actor: Actor::Producer,
            kind: EventKind::Published {
                entry_id: id.into(),
                job: crate::timeline::Job::new(1, "created", 1),
                attempt: 1,
            },
        };
        let raw = vec![published("1-0", 1_000_000), published("2-0", 2_000_000), published("3-0", 3_000_000)];
        // At 3.5 ms the replica has 1-0: 2-0 (published at 2 ms) is 1.5 ms old.
        let samples = vec![(3_500_000, Some("1-0".to_string())), (4_000_000, Some("3-0".to_string()))];
        let lag = lag_summary(&raw, &samples, 0);
        assert_eq!(lag.samples, [(3.5, 1.5), (4.0, 0.0)]);
        assert_eq!((lag.max_ms, lag.at_kill_ms), (1.5, 0.0));
    }
}
