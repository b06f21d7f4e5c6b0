//! A server's fault: SIGKILL the redis-server of the run's own (its whole process group, so a
//! snapshot child dies with it) and start it again on the same data directory with the same
//! persistence setting. What it had not written to its files is gone; the page cache, as with
//! any process kill, is not.
//!
//! The node is the service layer's ([`crate::service::RedisNode`]: the `persistence` lab's
//! server); this module only decides when, through the injector, and records it.

use super::injector::Injector;
use super::trigger::Occurrence;
use super::{Action, TimeScale};
use crate::service::{RedisNode, ServiceError};
use crate::timeline::{Actor, EventKind, RawEvent, Sink};
use std::time::{Duration, Instant};

/// SIGKILL `node` and start it again on its files; returns how long it took to answer again.
pub async fn restart(node: &mut RedisNode) -> Result<Duration, ServiceError> {
    node.kill().await?;
    let started = Instant::now();
    node.restart().await?;
    Ok(started.elapsed())
}

/// The faults of one server of the run, under the run's clock.
pub struct ServerFaults {
    injector: Injector,
    scale: TimeScale,
}

impl ServerFaults {
    /// The faults aimed at a server among `faults` (the others are left to their processes).
    pub fn new(faults: &[super::Fault], seed: u64, scale: TimeScale) -> ServerFaults {
        let own = faults.iter().filter(|f| matches!(f.target, super::Target::Server(_))).cloned().collect();
        ServerFaults { injector: Injector::new(own, seed), scale }
    }

    pub fn is_empty(&self) -> bool {
        self.injector.is_empty()
    }

    /// The first moment (ms after the start, unscaled) at which a fault waits.
    pub fn next_moment(&self) -> Option<f64> {
        self.injector.moments().first().copied()
    }

    /// Fire every fault due at its moment after `t0` (the run's start), carrying each out on
    /// `node` and recording it on `sink` (as the runner's: the harness restarts the server).
    /// Returns when the last one is done.
    pub async fn run(&self, node: &mut RedisNode, t0: Instant, sink: &dyn Sink) -> Result<(), ServiceError> {
        for after_ms in self.injector.moments() {
            tokio::time::sleep_until((t0 + self.scale.duration(after_ms)).into()).await;
            for fired in self.injector.fire(&Occurrence::Time { after_ms }) {
                fired.announce(sink, Actor::Runner);
                if fired.fault.action == Action::Restart {
                    node.kill().await?;
                    sink.record(RawEvent::now(
                        Actor::Runner,
                        EventKind::ServerKilled { server: "redis-server".into(), signal: "SIGKILL".into() },
                    ));
                    node.restart().await?;
                    sink.record(RawEvent::now(Actor::Runner, fired.over(Actor::Runner)));
                }
            }
        }
        Ok(())
    }
}
