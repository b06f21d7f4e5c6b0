//! ordlab reproduces, on real Redis and real PostgreSQL, what goes wrong when background jobs
//! are processed out of order, and measures what each fix costs.
//!
//! # How a lab flows
//!
//! ```text
//! scenarios/<id>.toml ──► scenario (parsed, variants resolved)
//!                              │
//!   service ──► one Redis + one PostgreSQL per invocation (local, docker or external)
//!                              │
//!   runner  ──► per run: fresh stream + rows, consumer processes (each `ordlab __consumer`),
//!               wait until every consumer is blocked in XREADGROUP, then the producer
//!               publishes on its schedule (faults: publish failures, delays, crashes)
//!                              │ typed events as JSON lines on each child's stdout
//!   timeline ◄─────────────────┘ one monotonic clock, t=0 at producer start
//!                              │
//!   checker ──► pure function: timeline + final rows → verdict (right / wrong / unknown)
//!                              │
//!   report  ──► text (the seed's timeline shape), JSON Lines-free JSON with a schema
//!               version, normalized snapshot text for insta
//! ```
//!
//! Roles are small modules: [`service`] (start, ready, stop), [`producer`] (publishes, fails on
//! schedule), [`consumer`] (applies events with a [`strategy`]), [`fault`] (delays, crashes,
//! publish failures), [`checker`] (verdicts), [`report`] (renderers). [`runner`] wires them for
//! one lab; [`catalog`] knows the built-in labs in `scenarios/`.

pub mod bench;
pub mod catalog;
pub mod checker;
pub mod clock;
pub mod connect;
pub mod consumer;
pub mod error;
pub mod failover;
pub mod fanout;
pub mod fault;
pub mod outbox;
pub mod producer;
pub mod redelivery;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod service;
pub mod sql_race;
pub mod strategy;
pub mod timeline;

pub use error::Error;

/// Version of the JSON written to `results/<id>.json` and printed by `--format json`.
/// Bump it when a field changes meaning or disappears; adding a field does not bump it.
pub const SCHEMA_VERSION: u32 = 1;
