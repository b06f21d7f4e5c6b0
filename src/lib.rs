//! ordlab reproduces, on real Redis and real PostgreSQL, what goes wrong when background jobs
//! are processed out of order, and measures what each fix costs.
//!
//! # How a lab flows
//!
//! ```text
//! scenarios/<id>.toml ──► scenario: parsed, variants resolved, each with its lab procedure
//!                              │    (labs::Procedure, one arm per kind of a family in src/labs/)
//!   service ──► one Redis + one PostgreSQL per invocation (local, docker or external)
//!                              │
//!   runner  ──► variants × runs: procedure.run(RunContext) on fresh keys and rows
//!                              │
//!   labs/<family>/<kind> ──► starts roles (shared ones in roles/, a family's own in its
//!               folder, all OS processes; the producer as a task), injects faults (fault/),
//!               waits until the run is over, reads what the servers hold
//!                              │ typed events as JSON lines from every process
//!   timeline ◄─────────────────┘ one monotonic clock, t=0 at producer start; a core
//!               vocabulary, and each family's own events (timeline::vocabulary)
//!                              │
//!   checker ──► pure functions per concern, composed by the lab: right / wrong / unknown
//!                              │
//!   report  ──► text (the seed's timeline shape), JSON with a schema version, SVG,
//!               SUMMARY.md, snapshots through one redactor; words in lang (en, vi)
//! ```
//!
//! Roles are small modules: [`service`] (start, ready, stop), [`roles`] (producer, consumers
//! and the other processes), [`handler`] (how a handler applies what it is handed: the
//! strategies of [`handler::order`] for a stream consumer's order events, the idempotency
//! techniques of [`handler::job`] for a job's side effects), [`fault`] (delays, crashes,
//! publish failures), [`checker`] (verdicts), [`report`] (renderers), [`interposer`] (the wire
//! between a worker from a command line and the servers: RESP2/3 and PostgreSQL v3 recorded,
//! faulted at command boundaries, held for a controlled step), [`grade`] (a class exercise
//! against a student's worker).
//! [`labs`] holds the lab families, a folder each (its kinds, and the roles, checkers, charts
//! and events only it uses); [`runner`] loops variants and runs; [`catalog`] knows the
//! built-in labs in `scenarios/`. Shared pieces: [`streams`] (Redis Streams helpers),
//! [`orders`] (the orders table), [`order_document`] (an order as a document, P4),
//! [`priority_queue`], [`list_queue`] and [`cluster_queue`] (what several families share of a
//! queue: keys, scripts, the events of its workers), [`timeline`] (the record and its core
//! vocabulary), [`clock`], and [`side_effect`] (the outside party that receives e-mails,
//! charges and API calls, in its own schema, and keeps the ledger the idempotency labs count
//! from), [`pg_locks`] (who waits for whom in PostgreSQL, read by the harness while a run's
//! processes work).

pub mod bench;
pub mod catalog;
pub mod chart;
pub mod checker;
pub mod clock;
pub mod cluster_queue;
pub mod connect;
pub mod cpu_time;
pub mod error;
pub mod exploration;
pub mod explore;
pub mod fault;
pub mod grade;
pub mod handler;
pub mod interposer;
pub mod labs;
pub mod lang;
pub mod list_queue;
pub mod order_document;
pub mod orders;
pub mod pg_locks;
pub mod priority_queue;
pub mod redis_info;
pub mod report;
pub mod roles;
pub mod runner;
pub mod scenario;
pub mod schedule;
pub mod serve;
pub mod service;
pub mod side_effect;
pub mod stats;
pub mod streams;
pub mod timeline;
pub mod timing;

pub use error::Error;

/// Version of the JSON written to `results/<id>.json` and printed by `--format json`.
/// Bump it when a field changes meaning or disappears; adding a field does not bump it.
/// 2: runs record what their lab kind observed (`observed`), variants carry their procedure
/// and the seed's figure.
pub const SCHEMA_VERSION: u32 = 2;
