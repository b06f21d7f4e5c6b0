//! One integration-test binary with a module per area (ripgrep's layout). Every test talks to
//! real servers that it starts itself (local backend) and stops before it ends.

mod support;

/// The build script, compiled once and run for another checkout, reads that checkout.
mod build_script;
/// Nothing is left running after a run, a failed run, a server that fails to start, or Ctrl-C
/// while the servers start or while the lab runs.
mod cleanup;
/// Bad input: one clear line, exit code 2, nothing started or left behind.
mod cli;
/// `cluster`: a list queue on a Redis Cluster (one key on one master, hash tags, order per
/// queue, a hash slot moved while workers run), on the lab's own cluster and on one given by
/// URLs.
mod cluster;
/// The seed's first two labs: `baseline` (the bug) and `s1` (one consumer).
mod core_labs;
/// The Docker backend on a real engine (run by `just test` when one answers).
mod docker_backend;
/// Seed 003's server advice: `persistence` (SIGKILL and restart per persistence mode) and
/// `eviction` (a full Redis under each maxmemory policy).
mod durability_labs;
/// `ordlab explore`: every order of a lab's steps on real servers, classes, replays, PCT.
mod explore;
/// Every built-in lab on servers ordlab did not start: the user's data unchanged, nothing of
/// ordlab's left (`--keep` aside), a missing CREATE privilege refused in one line.
mod external_namespace;
/// `failover`: a promoted asynchronous replica lacks what its link held at the crash
/// (entries, deliveries, acks); plain goes wrong, CAS does not.
mod failover_lab;
/// The fault layer's small labs: a lock holder paused past its TTL (`lock-pause`), a lost
/// reply to XACK (`xack-lost-reply`).
mod fault_labs;
/// Every action of the fault layer on a real server and a real process (pause, lose a reply,
/// reset, delay, refuse connections, kill, skew a clock, restart a server).
mod faults;
/// A list worker from a command line (seed 003's Node worker) beside ordlab's own: `foreign-list`.
mod foreign_list;
/// Workers from a command line (the examples' Python and PHP consumers) under the baseline race
/// and the S4 lock, seed 000's priority loops in Python, and its idempotent wrapper and
/// multi-step job in Python: `foreign-ordering`, `foreign-priority`, `foreign-jobs`.
mod foreign_workers;
/// `ordlab grade` against examples/grade's student workers: each check tells one mistake apart,
/// workers judged once back waiting, their output never breaking a run, a class's gradebook.
mod grade;
/// `XADD … IDMP` on Redis ≥ 8.6, and its variants skipped on Redis 7; each run when its
/// server is at hand.
mod idmp;
/// The interposer between a worker and real servers: recording, faults at command boundaries.
mod interposer;
/// Jobs with side effects under at-least-once delivery (seed 000): `idempotency`,
/// `idem-antipatterns`, `multistep`; effects counted in the side-effect sink.
mod job_labs;
/// SIGKILL at seeded-random moments of start, runs and teardown (baseline, failover, Python
/// workers), then one more run: no process, private dir or shared-memory segment is left.
mod kill;
/// The lab book (`results/index.html`) in headless Chromium.
mod lab_book;
/// Real job-queue libraries at pinned versions (`library-*`): each documented failure beside its
/// fix, and their snapshots.
mod libraries;
/// Seed 003's list queue: `list-crash` (crashes per way of taking a job) and `list-retry`
/// (failures, backoff, dead letters, poison).
mod list_labs;
/// The list-queue scripts of seed 003's labs on a real server.
mod list_queue_scripts;
/// `list-scale`: worker processes on a list and on a stream group, until something is full.
mod list_scale;
/// `load`: every strategy at one handler budget under many orders; S3's single-reader ceiling.
mod load_lab;
/// The lock release on both Redis generations: `DELEX IFEQ` (≥ 8.4) and Lua (7), each run
/// when its server is at hand.
mod lock_release;
/// Labs the seed named but never ran: `shard`, `upsert`, `state-event`, `reorder-buffer`.
mod new_labs;
/// Outbox follow-ups: `outbox-multi` (several dispatchers, with and without per-key
/// exclusion) and `outbox-crash` (SIGKILL between XADD and the mark, idempotent consumer).
mod outbox_labs;
/// `pipeline`: the seed's production worker and the corrected one under load, faults and
/// SIGKILLs; every job once or in the DLQ.
mod pipeline_lab;
/// The priority family of seed 000: `priority-strict`, `priority-weighted` (one stream per
/// priority, the seed's loops and corrected ones) and `priority-zset` (one sorted set).
mod priority;
/// What a SIGKILLed run leaves, and the next run reclaiming it (local backend).
mod reaper;
/// Crashes before XACK: `redelivery` (XAUTOCLAIM hands an entry back, same ID, delivery
/// count 2) and `fanout` (S3: one reader, a queue per order and a few workers; a dead reader's
/// entries stay pending).
mod redelivery_labs;
/// The Redis node API exercised on one backend (used by `services` and `docker_backend`).
mod redis_nodes;
/// Results that stay whole: one lab's run keeps the others' records; `ordlab book` from records.
mod results_whole;
/// The seed's other published labs: `lock`, `cas`, `reorder`, `p2`, `outbox`.
mod seed_labs;
/// `ordlab serve` over HTTP: a run's lines stream before its verdict, one run at a time, bad
/// input and a port in use in one line, Ctrl-C stops everything.
mod serve;
/// The service role: servers start, answer, stop, and leave nothing behind.
mod services;
/// The side-effect sink: its ledger, idempotency keys, injected partner failures, requests
/// that outlive their caller.
mod side_effect;
/// Where a batch's time goes: the spans the runner and the scheduler record.
mod timing;
/// Hostile workers at the wire: frames over the servers' own limits are refused in the servers'
/// words, with the interposer's memory bounded.
mod wire_limits;
