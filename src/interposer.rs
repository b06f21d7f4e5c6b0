//! The interposer sits on the wire between a worker process and the run's servers: each worker
//! gets its own loopback endpoints that forward to the real Redis and PostgreSQL, and every
//! command and statement that passes becomes a timeline event of that worker.
//!
//! Because it speaks the real protocols (RESP2/RESP3 in [`redis`], PostgreSQL v3 in
//! [`postgres`]), the worker can be anyone's program in any language: ordlab records what it
//! did at the only place every client library must pass. The same place is where faults are
//! injected at command boundaries ([`Rule`]: kill the worker right after the reply to its n-th
//! `XREADGROUP`, when it sends `XACK`, drop a reply, close the connection, delay a command), and
//! where a command can be held until the runner lets it go (what `explore` steps through).
//!
//! A connection is parsed in both directions by pure, incremental parsers (frames split across
//! reads, pipelines, push frames); the forwarding itself copies bytes unchanged, so the worker's
//! client library sees exactly what the server sent.

pub mod postgres;
pub mod redis;
mod rules;

pub use rules::{Action, Moment, Rule, RuleSet};

use crate::timeline::ServerKind;

/// What the interposer knows of one command (Redis) or statement (PostgreSQL) when it decides
/// what to do with it: who sent it, on which of its connections, and the command's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandView<'a> {
    pub server: ServerKind,
    /// 1-based, per worker and server, in the order the worker opened its connections.
    pub connection: u32,
    /// Redis: the command's arguments (the name upper-cased); PostgreSQL: the statement's text
    /// then its parameter values.
    pub args: &'a [String],
}
