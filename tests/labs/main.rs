//! One integration-test binary with a module per area (ripgrep's layout). Every test talks to
//! real servers that it starts itself (local backend) and stops before it ends.

mod support;

/// Nothing is left running after a run, a failed run, or Ctrl-C in the middle of one.
mod cleanup;
/// Bad input: one clear line, exit code 2, nothing started or left behind.
mod cli;
/// The seed's first two labs: `baseline` (the bug) and `s1` (one consumer).
mod core_labs;
/// `failover`: a promoted asynchronous replica loses acknowledged entries and undoes acks.
mod failover_lab;
/// Jobs with side effects under at-least-once delivery (seed 000): `idempotency`,
/// `idem-antipatterns`, `multistep`; effects counted in the side-effect sink.
mod job_labs;
/// Labs the seed named but never ran: `shard`, `upsert`, `state-event`, `reorder-buffer`.
mod new_labs;
/// Outbox follow-ups: `outbox-multi` (several dispatchers, with and without per-key
/// exclusion) and `outbox-crash` (SIGKILL between XADD and the mark, idempotent consumer).
mod outbox_labs;
/// Crashes before XACK: `redelivery` (XAUTOCLAIM hands an entry back, same ID, delivery
/// count 2) and `fanout` (S3: one reader, a worker per order; a dead reader's entries stay
/// pending).
mod redelivery_labs;
/// The Redis ≥ 8.4 lock release (`DELEX IFEQ`) and ≥ 8.6 `XADD … IDMP`, run when a Redis 8
/// server is at hand.
mod redis8;
/// The seed's other published labs: `lock`, `cas`, `reorder`, `p2`, `outbox`.
mod seed_labs;
/// The service role: servers start, answer, stop, and leave nothing behind.
mod services;
/// The side-effect sink: its ledger, idempotency keys, injected partner failures, requests
/// that outlive their caller.
mod side_effect;
