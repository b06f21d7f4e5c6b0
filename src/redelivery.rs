//! Redelivery: a consumer dies between receiving an entry and acknowledging it, and the entry
//! stays pending in its name until a claimer takes it over with `XAUTOCLAIM`. The claimed
//! entry keeps its ID and the server raises its delivery count; the timeline shows both.
//!
//! The planned crash ([`maybe_crash`]) is a real SIGKILL of the consumer process, announced
//! first so the run is not judged unknown. The claimer ([`run_claimer`], actor `reaper`) is a
//! consumer process in claim mode: it polls `XAUTOCLAIM <stream> <group> reaper <min-idle>
//! 0-0 COUNT 1`, reads the delivery count with `XPENDING`, applies with the lab's strategy and
//! acknowledges. [`redelivered`] checks, from the timeline alone, that a claimed entry is the
//! same entry a consumer had received, delivered once more.

use crate::connect;
use crate::consumer::{job_of, ConsumerConfig};
use crate::error::{Context, Error};
use crate::timeline::RawEvent;
use crate::timeline::{Actor, Event, EventKind, Sink, StdoutSink};
use rand::SeedableRng;
use redis::streams::{StreamAutoClaimReply, StreamPendingCountReply};
use std::collections::{BTreeMap, HashMap, HashSet};

/// If the set-up's crash fires for this consumer at its `received`-th entry `job`: announce a
/// planned crash and kill this process with SIGKILL (no ack, no cleanup). Never returns then.
pub fn maybe_crash(cfg: &ConsumerConfig, sink: &dyn Sink, received: u32, job: &crate::timeline::Job) {
    let Some(crash) = &cfg.setup.crash else { return };
    if cfg.claimer || !crash.fires(cfg.index, received, job) {
        return;
    }
    let detail = format!("after receiving {}, before XACK", job.event_type);
    sink.emit(cfg.actor(), EventKind::Crashed { planned: true, detail });
    let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
    loop {
        std::thread::park();
    }
}

/// The claimer loop; returns only on error.
pub async fn run_claimer(cfg: ConsumerConfig) -> Result<(), Error> {
    let spec = cfg.setup.reaper.clone().expect("a claimer runs only with setup.reaper");
    let sink = StdoutSink;
    let actor = cfg.actor();
    let mut conn = crate::consumer::named_connection(&cfg).await?;
    let pg = connect::postgres(&cfg.pg_config).await.context("claimer connect")?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let min_idle = cfg.scale.duration(spec.min_idle_ms).as_millis().max(1) as u64;
    sink.emit(actor, EventKind::Ready);
    loop {
        let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(&cfg.stream)
            .arg(&cfg.group)
            .arg(actor.to_string())
            .arg(min_idle)
            .arg("0-0")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut conn)
            .await
            .context("XAUTOCLAIM")?;
        if reply.claimed.is_empty() {
            cfg.scale.sleep(spec.poll_ms).await;
            continue;
        }
        for entry in &reply.claimed {
            let Some(job) = job_of(entry) else { continue };
            // The server's own count, after the claim raised it.
            let pending: StreamPendingCountReply = redis::cmd("XPENDING")
                .arg(&cfg.stream)
                .arg(&cfg.group)
                .arg(&entry.id)
                .arg(&entry.id)
                .arg(1)
                .query_async(&mut conn)
                .await
                .context("XPENDING")?;
            let deliveries = pending.ids.first().map(|p| p.times_delivered as u64);
            sink.emit(actor, EventKind::Received { entry_id: entry.id.clone(), job: job.clone(), deliveries });
            let state: Option<String> = entry.get("state");
            crate::consumer::apply_and_ack(&cfg, &mut conn, &pg, &mut rng, &entry.id, &job, state.as_deref()).await?;
        }
    }
}

/// One entry the claimer received after a consumer had received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redelivered {
    pub entry_id: String,
    /// Who received it first.
    pub first: Actor,
    /// The delivery count the server reported to the claimer.
    pub deliveries: Option<u64>,
}

/// Every entry the `reaper` received that a consumer had received before, under the same
/// entry ID, with the delivery count the server gave the claimer. A claim that produced a new
/// ID (a re-publish) would not appear here: its ID was never received before.
pub fn redelivered(events: &[Event]) -> Vec<Redelivered> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.actor == Actor::Reaper) {
        let EventKind::Received { entry_id, deliveries, .. } = &e.kind else { continue };
        let first = events.iter().find(|f| {
            f.actor != Actor::Reaper
                && f.t_us <= e.t_us
                && matches!(&f.kind, EventKind::Received { entry_id: id, .. } if id == entry_id)
        });
        if let Some(first) = first {
            out.push(Redelivered { entry_id: entry_id.clone(), first: first.actor, deliveries: *deliveries });
        }
    }
    out
}

/// What the runner knows of planned consumer crashes while a run goes on.
#[derive(Debug, Default)]
pub struct Crashes {
    /// Consumers (by index) that announced a planned crash.
    crashed: HashSet<u32>,
    /// Who received each entry ID last.
    received_by: HashMap<String, u32>,
}

impl Crashes {
    pub fn observe(&mut self, ev: &RawEvent) {
        let Actor::Consumer(i) = ev.actor else { return };
        match &ev.kind {
            EventKind::Crashed { planned: true, .. } => {
                self.crashed.insert(i);
            }
            EventKind::Received { entry_id, .. } => {
                self.received_by.insert(entry_id.clone(), i);
            }
            _ => {}
        }
    }

    /// With no claimer, once everything is published: is there nothing left that anyone can
    /// still acknowledge? True when every consumer is dead, or when every entry not
    /// acknowledged is pending in a dead consumer. Entries are `(shard, entry ID)`.
    pub fn settled(&self, published: &HashSet<(u32, String)>, acked: &HashSet<(u32, String)>, consumers: u32) -> bool {
        if self.crashed.is_empty() {
            return false;
        }
        self.crashed.len() as u32 >= consumers
            || published
                .iter()
                .all(|p| acked.contains(p) || self.received_by.get(&p.1).is_some_and(|c| self.crashed.contains(c)))
    }
}

/// Run facts read from the timeline: `redelivered_same_id` (entries the claimer got under the
/// ID a consumer had received), `claimed_delivery_count` (the highest delivery count the
/// server gave the claimer) and `never_delivered` (published entries nobody received).
pub fn timeline_facts(events: &[Event]) -> BTreeMap<String, i64> {
    let again = redelivered(events);
    let mut facts = BTreeMap::from([("redelivered_same_id".to_string(), again.len() as i64)]);
    if let Some(max) = again.iter().filter_map(|r| r.deliveries).max() {
        facts.insert("claimed_delivery_count".into(), max as i64);
    }
    let received: HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Received { entry_id, .. } => Some(entry_id.as_str()),
            _ => None,
        })
        .collect();
    let never = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Published { entry_id, .. } if !received.contains(entry_id.as_str())));
    facts.insert("never_delivered".into(), never.count() as i64);
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Job;

    fn received(t_us: i64, actor: Actor, id: &str, deliveries: Option<u64>) -> Event {
        let job = Job { order: 42, event_type: "created".into(), version: 1 };
        Event { t_us, actor, kind: EventKind::Received { entry_id: id.into(), job, deliveries } }
    }

    #[test]
    fn a_claimed_entry_keeps_its_id_and_counts_a_second_delivery() {
        let events = [
            received(0, Actor::Consumer(1), "1-0", None),
            received(10, Actor::Consumer(2), "1-1", None),
            received(400, Actor::Reaper, "1-0", Some(2)),
        ];
        assert_eq!(
            redelivered(&events),
            vec![Redelivered { entry_id: "1-0".into(), first: Actor::Consumer(1), deliveries: Some(2) }]
        );
    }

    #[test]
    fn entries_pending_in_a_dead_consumer_settle_the_run() {
        let raw = |actor, kind| RawEvent { mono_ns: 0, actor, kind };
        let job = Job { order: 42, event_type: "created".into(), version: 1 };
        let published: HashSet<(u32, String)> = [(0, "1-0".to_string()), (0, "1-1".to_string())].into();
        let acked: HashSet<(u32, String)> = [(0, "1-1".to_string())].into();
        let mut c = Crashes::default();
        c.observe(&raw(Actor::Consumer(1), EventKind::Received { entry_id: "1-0".into(), job, deliveries: None }));
        assert!(!c.settled(&published, &acked, 2), "nobody crashed yet");
        c.observe(&raw(Actor::Consumer(1), EventKind::Crashed { planned: true, detail: "x".into() }));
        assert!(c.settled(&published, &acked, 2));
        assert!(!c.settled(&published, &HashSet::new(), 2), "1-1 can still be acknowledged by C2");
        assert!(c.settled(&published, &HashSet::new(), 1), "no live consumer");
    }

    #[test]
    fn facts_count_redeliveries_and_entries_nobody_read() {
        let job = Job { order: 42, event_type: "created".into(), version: 1 };
        let published = |id: &str| Event {
            t_us: 0,
            actor: Actor::Producer,
            kind: EventKind::Published { entry_id: id.into(), job: job.clone(), attempt: 1 },
        };
        let events = [
            published("1-0"),
            published("1-1"),
            received(1, Actor::Consumer(1), "1-0", None),
            received(400, Actor::Reaper, "1-0", Some(2)),
        ];
        let f = timeline_facts(&events);
        assert_eq!((f["redelivered_same_id"], f["claimed_delivery_count"], f["never_delivered"]), (1, 2, 1));
    }

    #[test]
    fn a_new_id_is_not_a_redelivery() {
        let events = [received(0, Actor::Consumer(1), "1-0", None), received(400, Actor::Reaper, "9-0", Some(1))];
        assert!(redelivered(&events).is_empty());
    }
}
