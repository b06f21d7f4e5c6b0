//! The producer (a task of the orchestrator): publishes the lab's events to the stream with XADD, each on its schedule,
//! and fails on purpose where the scenario says so (a network blip), retrying with backoff.
//! A retried event can land in the log after a newer one: the log itself is then out of order.

use crate::error::{Context, Error};
use crate::fault::{PublishSchedule, TimeScale};
use crate::orders::EventSpec;
use crate::streams::xadd;
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
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
            let first_ns = crate::clock::now_ns();
            if self.attempt(spec, 1).await? {
                continue;
            }
            let me = self.clone_for_task();
            let spec = spec.clone();
            retries.spawn(async move {
                let schedule = PublishSchedule(&spec);
                let mut attempt = 2;
                loop {
                    sleep_until(first_ns, me.scale.duration(schedule.retry_offset_ms(attempt))).await;
                    if me.attempt(&spec, attempt).await? {
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
    async fn attempt(&self, spec: &EventSpec, attempt: u32) -> Result<bool, Error> {
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
                },
            });
            return Ok(false);
        }
        let mut conn = self.redis.clone();
        let stream = &self.streams[job.order.rem_euclid(self.streams.len() as i64) as usize];
        let mut xadd = xadd(stream, &job);
        if self.state_bytes > 0 {
            xadd.arg("state").arg(state_document(&job, self.state_bytes));
        }
        let entry_id: String = xadd.query_async(&mut conn).await.context("XADD")?;
        self.sink.record(RawEvent {
            mono_ns: started,
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
                        let kind = EventKind::PublishFailed { job: job.clone(), attempt, retry_in_ms: None, reason };
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

/// The whole state of the order after `job`, padded to about `bytes` bytes: what an event
/// that carries state (instead of a delta) puts in every entry.
pub fn state_document(job: &crate::timeline::Job, bytes: usize) -> String {
    let head =
        format!("{{\"order\":{},\"status\":\"{}\",\"version\":{},\"doc\":\"", job.order, job.event_type, job.version);
    let pad = bytes.saturating_sub(head.len() + 2);
    format!("{head}{}\"}}", "x".repeat(pad))
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
    #[test]
    fn a_state_document_has_the_asked_size_and_the_state() {
        let job = crate::timeline::Job { order: 42, event_type: "paid".into(), version: 2 };
        let doc = super::state_document(&job, 512);
        assert_eq!(doc.len(), 512);
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!((v["status"].as_str(), v["version"].as_i64()), (Some("paid"), Some(2)));
    }
}
