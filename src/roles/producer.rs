//! The producer (a task of the orchestrator): publishes the lab's events to the stream with XADD, each on its schedule,
//! and fails on purpose where the scenario says so (a network blip), retrying with backoff.
//! A retried event can land in the log after a newer one: the log itself is then out of order.

use crate::error::{Context, Error};
use crate::fault::TimeScale;
use crate::orders::EventSpec;
use crate::orders::PublishSchedule;
use crate::streams::xadd;
use crate::timeline::{Actor, EventKind, PublishFailure, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::Duration;

/// Where and how to publish.
pub struct Producer {
    pub redis: MultiplexedConnection,
    /// One stream per shard; an order goes to `streams[order mod streams.len()]`.
    pub streams: Vec<String>,
    /// Bytes of state document each entry carries (0: none).
    pub state_bytes: usize,
    pub scale: TimeScale,
    pub sink: Arc<dyn Sink>,
}

impl Producer {
    /// Publish every event; returns when each has been published (after any retries).
    /// `t0_ns` is the run's zero on the monotonic clock.
    pub async fn publish_all(&self, events: &[EventSpec], t0_ns: u64) -> Result<(), Error> {
        let mut retries = tokio::task::JoinSet::new();
        for spec in events {
            if let Some(at) = spec.at_ms {
                sleep_until(t0_ns, self.scale.duration(at)).await;
            }
            let fields = payload_fields(events, spec, self.state_bytes);
            let first_ns = crate::clock::now_ns();
            if self.attempt(spec, &fields, 1).await? {
                continue;
            }
            let me = self.clone_for_task();
            let spec = spec.clone();
            retries.spawn(async move {
                let schedule = PublishSchedule(&spec);
                let mut attempt = 2;
                loop {
                    sleep_until(first_ns, me.scale.duration(schedule.retry_offset_ms(attempt))).await;
                    if me.attempt(&spec, &fields, attempt).await? {
                        return Ok::<(), Error>(());
                    }
                    attempt += 1;
                }
            });
        }
        while let Some(done) = retries.join_next().await {
            done.expect("publish task does not panic")?;
        }
        Ok(())
    }

    /// One publish attempt; Ok(true) when the entry is in the stream.
    async fn attempt(&self, spec: &EventSpec, fields: &[(&'static str, String)], attempt: u32) -> Result<bool, Error> {
        let job = spec.job();
        let schedule = PublishSchedule(spec);
        let started = crate::clock::now_ns();
        if schedule.fails(attempt) {
            self.sink.record(RawEvent {
                mono_ns: started,
                actor: Actor::Producer,
                kind: EventKind::PublishFailed {
                    job,
                    attempt,
                    retry_in_ms: Some(schedule.wait_after_ms(attempt)),
                    reason: "injected network blip".into(),
                    cause: PublishFailure::Injected,
                },
            });
            return Ok(false);
        }
        let mut conn = self.redis.clone();
        let stream = &self.streams[job.order.rem_euclid(self.streams.len() as i64) as usize];
        let mut xadd = xadd(stream, &job);
        for (field, value) in fields {
            xadd.arg(*field).arg(value);
        }
        let entry_id: String = xadd.query_async(&mut conn).await.context("XADD")?;
        // Under the explorer (time scale 0) the XADD waited at the wire for its step: the
        // publish happened when the step ran, so a replay's timeline follows its schedule.
        let at = if self.scale.0 == 0.0 { crate::clock::now_ns() } else { started };
        self.sink.record(RawEvent {
            mono_ns: at,
            actor: Actor::Producer,
            kind: EventKind::Published { entry_id, job, attempt },
        });
        Ok(true)
    }

    /// Publish every event on its schedule, following the primary across a failover: an XADD
    /// that fails (the primary died under it: no reply, so the producer cannot know whether it
    /// landed) is recorded as failed, the producer finds the node that is primary now among
    /// `nodes`, says so (`reconnected`), and sends the same event again there — a retry that
    /// can add a second copy if the first had landed and replicated. Later events keep their
    /// schedule.
    pub async fn publish_following_primary(
        &mut self,
        events: &[EventSpec],
        t0_ns: u64,
        nodes: &[String],
    ) -> Result<(), Error> {
        for spec in events {
            if let Some(at) = spec.at_ms {
                sleep_until(t0_ns, self.scale.duration(at)).await;
            }
            let job = spec.job();
            let mut attempt = 1;
            loop {
                let started = crate::clock::now_ns();
                let stream = &self.streams[job.order.rem_euclid(self.streams.len() as i64) as usize];
                match xadd(stream, &job).query_async::<String>(&mut self.redis).await {
                    Ok(entry_id) => {
                        let kind = EventKind::Published { entry_id, job: job.clone(), attempt };
                        self.sink.record(RawEvent { mono_ns: started, actor: Actor::Producer, kind });
                        break;
                    }
                    Err(_) => {
                        let reason = crate::timeline::PRIMARY_GONE.to_string();
                        let cause = PublishFailure::PrimaryGone;
                        let kind =
                            EventKind::PublishFailed { job: job.clone(), attempt, retry_in_ms: None, reason, cause };
                        self.sink.record(RawEvent { mono_ns: started, actor: Actor::Producer, kind });
                        let (url, conn) = super::primary::find(nodes).await?;
                        self.redis = conn;
                        let server = super::primary::node_name(nodes, &url).to_string();
                        self.sink.emit(Actor::Producer, EventKind::Reconnected { server });
                        attempt += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn clone_for_task(&self) -> Producer {
        Producer {
            redis: self.redis.clone(),
            streams: self.streams.clone(),
            state_bytes: self.state_bytes,
            scale: self.scale,
            sink: self.sink.clone(),
        }
    }
}

/// What an entry carries beyond order, type and version: the change of a delta event
/// (`change`, its item as JSON) and, when events carry state (`state_bytes` > 0), the order's
/// whole document after the event (`state`), padded to about `state_bytes` bytes.
pub fn payload_fields(events: &[EventSpec], spec: &EventSpec, state_bytes: usize) -> Vec<(&'static str, String)> {
    let mut fields = Vec::new();
    if let Some(item) = &spec.item {
        fields.push(("change", serde_json::to_string(item).expect("items serialize")));
    }
    if state_bytes > 0 {
        let doc = crate::orders::document_after(events, spec.order, spec.version);
        fields.push(("state", crate::order_document::payload(&doc, state_bytes)));
    }
    fields
}

/// Sleep until `offset` after `base_ns` on the monotonic clock.
pub async fn sleep_until(base_ns: u64, offset: Duration) {
    let due = base_ns + offset.as_nanos() as u64;
    let now = crate::clock::now_ns();
    if due > now {
        tokio::time::sleep(Duration::from_nanos(due - now)).await;
    }
}

#[cfg(test)]
mod tests {
    use crate::orders::EventSpec;

    #[test]
    fn a_state_event_carries_its_document_and_a_delta_its_change() {
        let item = crate::order_document::Item { name: "book".into(), cents: 2500 };
        let events =
            [EventSpec::new(42, "created", 1), EventSpec { item: Some(item), ..EventSpec::new(42, "item-added", 2) }];
        let delta = super::payload_fields(&events, &events[1], 0);
        assert_eq!(delta, [("change", r#"{"name":"book","cents":2500}"#.to_string())]);
        let state = super::payload_fields(&events, &events[1], 512);
        assert_eq!(state[1].0, "state");
        assert_eq!(state[1].1.len(), 512);
        let doc: crate::order_document::Document = serde_json::from_str(&state[1].1).unwrap();
        assert_eq!((doc.status.as_str(), doc.total), ("created", 2500));
    }
}
