//! What a procedure gets for one run: the servers and the orchestrator's own connections,
//! the run's identity (lab, variant, run number) from which every key, client name and seed
//! is derived, and the time scale. Two runs never share a key; the same `--seed` repeats
//! every random choice.

use crate::fault::TimeScale;
use crate::roles::{RoleConfig, RoleEnv, RoleProcess};
use crate::service::Services;
use crate::timeline::{Actor, RawEvent};
use rand::SeedableRng;
use redis::aio::MultiplexedConnection;
use std::path::Path;
use tokio::sync::mpsc;

pub struct RunContext<'a> {
    pub services: &'a Services,
    /// The `ordlab` binary role processes run (`ordlab __role`).
    pub exe: &'a Path,
    /// The orchestrator's own Redis connection (set-up, reads after the run).
    pub redis: MultiplexedConnection,
    /// The orchestrator's own PostgreSQL session.
    pub pg: &'a tokio_postgres::Client,
    pub scale: TimeScale,
    pub lab: &'a str,
    pub variant: &'a str,
    /// 1-based.
    pub run: u32,
    /// The invocation's `--seed`.
    pub seed: u64,
    /// Random per invocation, in every key and client name, so invocations never collide.
    pub nonce: &'a str,
    /// Under `explore`: every process connects through the explorer's gated interposer, and
    /// the run ends when the explorer's schedule does.
    pub control: Option<&'a crate::explore::Control>,
    /// Under `explore`: role processes parked by the last run, reused by this one
    /// ([`crate::roles::reuse`]); None: every run starts its own.
    pub roles: Option<&'a crate::roles::reuse::RolePool>,
}

impl RunContext<'_> {
    /// Prefix of every Redis key of this run: `ordlab:<nonce>:<lab>:<variant>:<run>:`.
    pub fn key_prefix(&self) -> String {
        format!("ordlab:{}:{}:{}:{}:", self.nonce, self.lab, self.variant, self.run)
    }

    /// The CLIENT SETNAME of `actor`'s connection in this invocation.
    pub fn client_name(&self, actor: Actor) -> String {
        format!("ordlab-{}-{actor}", self.nonce)
    }

    /// The seed of process `index` in this run: same `--seed`, same random choices.
    pub fn seed_for(&self, index: u32) -> u64 {
        mix(self.seed, &[self.lab, self.variant], self.run, index)
    }

    /// A random stream of the orchestrator's own for this run (index 0 is never a process).
    pub fn rng(&self) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(self.seed_for(0))
    }

    /// The order in which consumers `first..first + n` start waiting in XREADGROUP, drawn
    /// from the seed: Redis hands a new entry to the longest waiter, so this order, not the
    /// harness, must decide who receives what. Real consumers start and finish their jobs at
    /// unrelated moments, so any order is as likely as any other.
    pub fn waiting_order(&self, first: u32, n: u32) -> Vec<u32> {
        use rand::seq::SliceRandom;
        let mut order: Vec<u32> = (first..first + n).collect();
        let seed = mix(self.seed, &[self.lab, self.variant, "waiting-order"], self.run, 0);
        order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        order
    }

    /// What every role process of this run shares; `index` picks its seed.
    pub fn role_env(&self, index: u32) -> RoleEnv {
        RoleEnv {
            redis_url: self.services.redis_url.clone(),
            pg_config: self.services.pg_config.clone(),
            key_prefix: self.key_prefix(),
            scale: self.scale,
            seed: self.seed_for(index),
            has_delex: self.services.info.redis.delex,
        }
    }

    /// Delete every Redis key of this run.
    pub async fn delete_run_keys(&mut self) -> Result<(), crate::Error> {
        let prefix = self.key_prefix();
        crate::streams::delete_keys(&mut self.redis, &prefix).await
    }

    /// Start a role process whose events go to `sink`.
    pub fn spawn(
        &self,
        config: &RoleConfig,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, crate::Error> {
        RoleProcess::spawn(self.exe, config, sink)
    }
}

/// A per-process seed from the invocation's seed.
fn mix(seed: u64, names: &[&str], run: u32, index: u32) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut step = |x: u64| {
        h = (h ^ x).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 31;
    };
    for n in names {
        n.bytes().for_each(|b| step(b as u64));
    }
    step(run as u64);
    step(index as u64);
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_differ_per_process_and_repeat_per_seed() {
        let a = super::mix(1, &["lock", "s4b"], 1, 1);
        assert_eq!(a, super::mix(1, &["lock", "s4b"], 1, 1));
        assert_ne!(a, super::mix(1, &["lock", "s4b"], 1, 2));
        assert_ne!(a, super::mix(2, &["lock", "s4b"], 1, 1));
    }
}
