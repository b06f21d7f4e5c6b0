//! What a role process is told when it starts: which role, with what. A role is a config type
//! that implements [`Role`]; the orchestrator writes it as JSON (tagged with the role's name)
//! on the child's stdin, and `ordlab __role` finds the role by that name in a [`RoleRegistry`]
//! and runs it until it is killed (or, for a dispatcher, until its outbox is published).

use crate::error::Error;
use crate::fault::TimeScale;
use crate::timeline::Actor;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// What every role of a run shares: where the servers are, the run's key prefix and clock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoleEnv {
    pub redis_url: String,
    pub pg_config: String,
    /// Prefix of every Redis key of the run (isolation between runs and invocations).
    pub key_prefix: String,
    pub scale: TimeScale,
    /// The process's own seed (every random choice repeats with `--seed`).
    pub seed: u64,
    /// The server has `DELEX key IFEQ token` (Redis ≥ 8.4).
    pub has_delex: bool,
}

/// A kind of process a lab starts: its config is `Self`. Adding one: a config type that
/// implements this beside the role's code, and a line in a registry.
#[allow(async_fn_in_trait)] // Roles run on a single-threaded runtime.
pub trait Role: Serialize + DeserializeOwned + 'static {
    /// The `role` tag of its config (`consumer`, `zset-worker`).
    const NAME: &'static str;

    /// Who the process is on the timeline.
    fn actor(&self) -> Actor;

    /// Run until killed or done: the body of `ordlab __role`.
    async fn run(self) -> Result<(), Error>;
}

/// One role process's config, tagged with its role: what a child reads on its stdin.
#[derive(Clone, Debug)]
pub struct RoleConfig {
    actor: Actor,
    json: serde_json::Value,
}

impl RoleConfig {
    /// The config of role `R`, as the child reads it.
    pub fn of<R: Role>(role: &R) -> RoleConfig {
        let mut json = serde_json::to_value(role).expect("role configs serialize");
        let fields = json.as_object_mut().expect("a role's config is a struct");
        fields.insert("role".into(), serde_json::Value::String(R::NAME.into()));
        RoleConfig { actor: role.actor(), json }
    }

    /// Who the process is on the timeline.
    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// The JSON written to the child's stdin.
    pub fn to_json(&self) -> String {
        self.json.to_string()
    }
}

type RoleFuture = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

/// One role as a registry lists it.
pub struct RoleEntry {
    name: &'static str,
    run: fn(serde_json::Value) -> Result<RoleFuture, serde_json::Error>,
}

fn start<R: Role>(json: serde_json::Value) -> Result<RoleFuture, serde_json::Error> {
    let role: R = serde_json::from_value(json)?;
    Ok(Box::pin(role.run()))
}

/// The entry of role `R`.
pub const fn role<R: Role>() -> RoleEntry {
    RoleEntry { name: R::NAME, run: start::<R> }
}

/// Every role a build can start, found by name.
pub struct RoleRegistry(pub &'static [&'static [RoleEntry]]);

impl RoleRegistry {
    /// Run the role a child's config names: the body of `ordlab __role`.
    pub async fn run(&self, config: &str) -> Result<(), Error> {
        let mut json: serde_json::Value =
            serde_json::from_str(config).map_err(|e| Error::RoleConfig(format!("bad role config: {e}")))?;
        let name = json
            .as_object_mut()
            .and_then(|o| o.remove("role"))
            .and_then(|r| r.as_str().map(str::to_string))
            .ok_or_else(|| Error::RoleConfig("bad role config: no `role`".into()))?;
        let entry = self
            .0
            .iter()
            .flat_map(|list| list.iter())
            .find(|e| e.name == name)
            .ok_or_else(|| Error::RoleConfig(format!("bad role config: unknown role {name:?}")))?;
        let future = (entry.run)(json).map_err(|e| Error::RoleConfig(format!("bad {name} config: {e}")))?;
        future.await
    }

    /// Role names listed twice (a registry must have none).
    pub fn clashes(&self) -> Vec<&'static str> {
        let names: Vec<&'static str> = self.0.iter().flat_map(|l| l.iter().map(|e| e.name)).collect();
        names.iter().enumerate().filter(|(i, n)| names[..*i].contains(n)).map(|(_, n)| *n).collect()
    }
}
