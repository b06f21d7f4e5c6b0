//! The outbox dispatcher: polls the outbox table and publishes its rows to the stream, with
//! optional injected publish failures, publish latency and a planned crash. Order survives only
//! if the dispatcher is sequential per key: a failed row must hold back the later rows of its
//! key.
//!
//! # Several dispatchers (`outbox-multi`)
//!
//! Each dispatcher is its own task with its own connections, polling the same table:
//!
//! - [`Exclusion::None`]: each polls `ORDER BY aggregate_id, id` with no lock, and before
//!   publishing a row checks that nobody marked it published meanwhile (a check without a
//!   lock). A slow dispatcher that checked a row, then spent its publish latency, publishes it
//!   after a fast one already published the row *and its successors*: the row is in the
//!   stream twice, the stale copy last, and a plain-UPDATE consumer ends in the old state.
//! - [`Exclusion::SkipLocked`]: one transaction per key. A dispatcher locks the *earliest
//!   pending row* of some key with `FOR UPDATE OF o SKIP LOCKED` (a row is a key's earliest
//!   pending one if no pending row of the key has a smaller id); only then does it lock and
//!   read the key's other pending rows, publish them in id order, mark each published, and
//!   COMMIT. Order per key holds because whoever holds the head row holds the whole key: any
//!   other dispatcher sees the same head (the marks are not committed yet), finds it locked
//!   and skips the key; after COMMIT the rows are no longer pending. Locking any other row
//!   (`SKIP LOCKED` on all pending rows) would let two dispatchers split one key's rows and
//!   race them into the stream out of order.
//! - [`Exclusion::AdvisoryLock`]: per pending key, `BEGIN; SELECT pg_try_advisory_xact_lock(key)`;
//!   on `false` another dispatcher has the key and this one skips it; on `true` it reads the
//!   key's pending rows (a fresh statement, so it sees every mark the previous holder
//!   committed), publishes and marks them in order, and COMMIT releases the lock.
//!
//! Rows still pending at the end of a round (held by another dispatcher) are reported as
//! held back in the round's `outbox_round` event.
//!
//! # A crash between XADD and the mark (`outbox-crash`)
//!
//! Publishing is two writes to two systems: XADD, then `UPDATE outbox SET published_at`.
//! A dispatcher run as its own process ([`run_process`], `ordlab __role`) with
//! `crash_after_xadd_of_row = N` announces a planned crash after the XADD of row N and kills
//! itself with SIGKILL. The next dispatcher finds row N unpublished and publishes it again:
//! the event is in the stream twice. The outbox gives at-least-once, never exactly-once; the
//! consumer must be idempotent ([`crate::handler::order::idempotent`]).

use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::fault::{crash_now, TimeScale};
use crate::labs::outbox::table::OutboxEvent;
use crate::lang::Words;
use crate::roles::RoleEnv;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Job, RawEvent, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// `outbox = { … }` in a scenario: which rows a dispatcher takes in what order, how often it
/// polls, which rows fail to publish on their first attempts, and how several share one table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSpec {
    pub dispatcher: DispatcherKind,
    #[serde(default = "DispatcherSpec::default_poll")]
    pub poll_ms: f64,
    #[serde(default)]
    pub failing_rows: Vec<FailingRow>,
    /// How many dispatchers poll the same outbox at once, each with its own connections.
    #[serde(default = "DispatcherSpec::default_dispatchers")]
    pub dispatchers: u32,
    /// How concurrent dispatchers keep out of each other's way.
    #[serde(default)]
    pub exclusion: Exclusion,
    /// Latency before each XADD, per dispatcher (`[D1, D2, …]`, ms before `--time-scale`;
    /// missing entries are 0): a slow network to the broker.
    #[serde(default)]
    pub publish_ms: Vec<f64>,
    /// The dispatcher (its own OS process) is killed with SIGKILL right after the XADD of this
    /// outbox row, before marking it published; a new dispatcher process then takes over.
    #[serde(default)]
    pub crash_after_xadd_of_row: Option<i64>,
}

impl DispatcherSpec {
    fn default_poll() -> f64 {
        200.0
    }
    fn default_dispatchers() -> u32 {
        1
    }
    /// Latency before each XADD of dispatcher `index` (1-based), unscaled ms.
    pub fn publish_latency_ms(&self, index: u32) -> f64 {
        self.publish_ms.get(index as usize - 1).copied().unwrap_or(0.0)
    }
    /// Several dispatchers or a crash: the stream may hold an event twice or out of order, so
    /// the checker also counts duplicates, out-of-order pairs and side effects.
    pub fn checks_delivery(&self) -> bool {
        self.dispatchers > 1 || self.crash_after_xadd_of_row.is_some()
    }
}

/// How several dispatchers share one outbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exclusion {
    /// Each polls the pending rows with no locking at all.
    #[default]
    None,
    /// A dispatcher takes a key only if `FOR UPDATE SKIP LOCKED` locks the key's earliest
    /// pending row; it publishes and marks the key's rows before COMMIT.
    SkipLocked,
    /// A dispatcher takes a key only if `pg_try_advisory_xact_lock(aggregate_id)` succeeds.
    AdvisoryLock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatcherKind {
    /// `ORDER BY id`, a failed row is skipped and retried next round.
    Naive,
    /// `ORDER BY aggregate_id, id`, a failed row holds back later rows of its key only.
    PerKey,
}

/// Where an unlocked dispatcher's poll looks: rows not published yet.
pub const PENDING: &str = "published_at IS NULL";

/// An unlocked dispatcher's poll: every row not published yet, in the order it publishes them.
pub fn pending_sql(kind: DispatcherKind) -> String {
    let order_by = match kind {
        DispatcherKind::Naive => "id",
        DispatcherKind::PerKey => "aggregate_id, id",
    };
    format!("SELECT {PENDING_COLUMNS} FROM {SCHEMA}.outbox WHERE {PENDING} ORDER BY {order_by}")
}

/// Outbox row `row` (1-based id) fails its first `attempts` publish attempts.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailingRow {
    pub row: i64,
    pub attempts: u32,
}

/// A polling dispatcher publishing outbox rows to `stream`.
pub struct Dispatcher {
    pub pg: tokio_postgres::Client,
    pub redis: MultiplexedConnection,
    pub stream: String,
    pub spec: DispatcherSpec,
    pub scale: TimeScale,
    pub sink: Arc<dyn Sink>,
    /// 1-based: `D<index>` in the timeline; picks its entry of `spec.publish_ms`.
    pub index: u32,
    /// Honour `spec.crash_after_xadd_of_row` (SIGKILL to this process): only in a dispatcher
    /// process of its own, never in the orchestrator.
    pub may_crash: bool,
}

const PENDING_COLUMNS: &str = "id, aggregate_id, event_type, version";

impl Dispatcher {
    fn actor(&self) -> Actor {
        Actor::Dispatcher(self.index)
    }

    /// Poll every `poll_ms` from t0 until every row is published; one `outbox_round` event
    /// per round, one `published` or `publish_failed` per attempt.
    pub async fn run(&mut self, t0_ns: u64) -> Result<(), Error> {
        match self.spec.exclusion {
            Exclusion::None => self.run_unlocked(t0_ns).await,
            Exclusion::SkipLocked | Exclusion::AdvisoryLock => self.run_exclusive(t0_ns).await,
        }
    }

    /// The summary of a round, stamped when the round began: the timeline shows the round,
    /// then what its publishes caused.
    fn round_done(&self, started_ns: u64, kind: EventKind) {
        self.sink.record(RawEvent { mono_ns: started_ns, actor: self.actor(), kind });
    }

    /// Sleep until round `round`'s slot: t0 + (round - 1) × poll.
    async fn sleep_until_round(&self, t0_ns: u64, round: u32) {
        let due = t0_ns + self.scale.duration(self.spec.poll_ms * (round - 1) as f64).as_nanos() as u64;
        let now = crate::clock::now_ns();
        if due > now {
            tokio::time::sleep(std::time::Duration::from_nanos(due - now)).await;
        }
    }

    /// Publish one row: the dispatcher's latency, XADD, (the planned crash), mark it published.
    async fn publish_row(&mut self, id: i64, job: Job, attempt: u32) -> Result<(), Error> {
        self.scale.sleep(self.spec.publish_latency_ms(self.index)).await;
        let started = crate::clock::now_ns();
        let entry_id: String =
            crate::streams::xadd(&self.stream, &job).query_async(&mut self.redis).await.context("dispatcher XADD")?;
        if self.may_crash && self.spec.crash_after_xadd_of_row == Some(id) {
            self.sink.record(RawEvent {
                mono_ns: started,
                actor: self.actor(),
                kind: EventKind::Published { entry_id: entry_id.clone(), job: job.clone(), attempt },
            });
            // A real kill: no destructor, no flush, no rollback message to PostgreSQL.
            crash_now(
                self.sink.as_ref(),
                self.actor(),
                Words::new(
                    format!("after XADD, before marking row {id} published"),
                    format!("sau XADD, trước khi đánh dấu dòng {id} đã publish"),
                ),
            );
        }
        self.pg
            .execute(&format!("UPDATE {SCHEMA}.outbox SET published_at = now() WHERE id = $1"), &[&id])
            .await
            .context("mark outbox row published")?;
        self.sink.record(RawEvent {
            mono_ns: started,
            actor: self.actor(),
            kind: EventKind::Published { entry_id, job, attempt },
        });
        Ok(())
    }

    /// No exclusion: the seed's dispatcher. With several dispatchers, each re-checks a row is
    /// still unpublished just before publishing it (a check without a lock).
    async fn run_unlocked(&mut self, t0_ns: u64) -> Result<(), Error> {
        let pending_sql = pending_sql(self.spec.dispatcher);
        let still_pending_sql = format!("SELECT published_at IS NULL FROM {SCHEMA}.outbox WHERE id = $1");
        let mut attempts: HashMap<i64, u32> = HashMap::new();
        for round in 1u32.. {
            self.sleep_until_round(t0_ns, round).await;
            let round_started = crate::clock::now_ns();
            let rows = self.pg.query(&pending_sql, &[]).await.context("outbox poll")?;
            if rows.is_empty() {
                return Ok(());
            }
            let (mut published, mut failed, mut held_back) = (Vec::new(), Vec::new(), Vec::new());
            let mut blocked: HashSet<i64> = HashSet::new();
            for row in rows {
                let (id, key): (i64, i64) = (row.get(0), row.get(1));
                let job = Job { order: key, event_type: row.get(2), version: row.get(3) };
                if self.spec.dispatcher == DispatcherKind::PerKey && blocked.contains(&key) {
                    held_back.push(id);
                    continue;
                }
                if self.spec.dispatchers > 1 {
                    let pending: bool =
                        self.pg.query_one(&still_pending_sql, &[&id]).await.context("outbox re-check")?.get(0);
                    if !pending {
                        continue;
                    }
                }
                let attempt = *attempts.entry(id).and_modify(|a| *a += 1).or_insert(1);
                let fails = self.spec.failing_rows.iter().any(|f| f.row == id && attempt <= f.attempts);
                if fails {
                    self.sink.emit(
                        self.actor(),
                        EventKind::PublishFailed {
                            job,
                            attempt,
                            retry_in_ms: Some(self.spec.poll_ms),
                            reason: format!("injected failure publishing outbox row {id}"),
                            cause: crate::timeline::PublishFailure::Injected,
                        },
                    );
                    failed.push(id);
                    blocked.insert(key);
                    continue;
                }
                self.publish_row(id, job, attempt).await?;
                published.push(id);
            }
            self.round_done(round_started, OutboxEvent::OutboxRound { round, published, failed, held_back }.event());
        }
        unreachable!("the round counter does not run out")
    }

    /// SKIP LOCKED or advisory lock: one transaction per key, rows published and marked in id
    /// order before COMMIT; a key another dispatcher holds is skipped this round.
    async fn run_exclusive(&mut self, t0_ns: u64) -> Result<(), Error> {
        let key_rows_sql = format!(
            "SELECT {PENDING_COLUMNS} FROM {SCHEMA}.outbox WHERE aggregate_id = $1 AND published_at IS NULL ORDER BY id"
        );
        let pending_ids_sql = format!("SELECT id FROM {SCHEMA}.outbox WHERE published_at IS NULL ORDER BY id");
        for round in 1u32.. {
            self.sleep_until_round(t0_ns, round).await;
            let round_started = crate::clock::now_ns();
            let pending = self.pg.query(&pending_ids_sql, &[]).await.context("outbox poll")?;
            if pending.is_empty() {
                return Ok(());
            }
            let mut published = Vec::new();
            match self.spec.exclusion {
                Exclusion::SkipLocked => {
                    let head_sql = format!(
                        "SELECT aggregate_id FROM {SCHEMA}.outbox o WHERE published_at IS NULL
                         AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.outbox e
                                         WHERE e.aggregate_id = o.aggregate_id AND e.published_at IS NULL AND e.id < o.id)
                         ORDER BY aggregate_id LIMIT 1 FOR UPDATE OF o SKIP LOCKED"
                    );
                    loop {
                        self.pg.batch_execute("BEGIN").await.context("outbox BEGIN")?;
                        let Some(head) = self.pg.query_opt(&head_sql, &[]).await.context("outbox SKIP LOCKED")? else {
                            self.pg.batch_execute("ROLLBACK").await.context("outbox ROLLBACK")?;
                            break;
                        };
                        let key: i64 = head.get(0);
                        let sql = format!("{key_rows_sql} FOR UPDATE");
                        let rows = self.pg.query(&sql, &[&key]).await.context("outbox key rows")?;
                        published.extend(self.publish_key(rows).await?);
                        self.pg.batch_execute("COMMIT").await.context("outbox COMMIT")?;
                    }
                }
                Exclusion::AdvisoryLock => {
                    let keys_sql = format!(
                        "SELECT DISTINCT aggregate_id FROM {SCHEMA}.outbox WHERE published_at IS NULL ORDER BY 1"
                    );
                    let keys: Vec<i64> =
                        self.pg.query(&keys_sql, &[]).await.context("outbox keys")?.iter().map(|r| r.get(0)).collect();
                    for key in keys {
                        self.pg.batch_execute("BEGIN").await.context("outbox BEGIN")?;
                        let locked: bool = self
                            .pg
                            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&key])
                            .await
                            .context("pg_try_advisory_xact_lock")?
                            .get(0);
                        if locked {
                            let rows = self.pg.query(&key_rows_sql, &[&key]).await.context("outbox key rows")?;
                            published.extend(self.publish_key(rows).await?);
                        }
                        self.pg.batch_execute("COMMIT").await.context("outbox COMMIT")?;
                    }
                }
                Exclusion::None => unreachable!("run_unlocked handles it"),
            }
            // What is still pending now is held by another dispatcher (not committed yet).
            let held_back: Vec<i64> =
                self.pg.query(&pending_ids_sql, &[]).await.context("outbox poll")?.iter().map(|r| r.get(0)).collect();
            self.round_done(
                round_started,
                OutboxEvent::OutboxRound { round, published, failed: vec![], held_back }.event(),
            );
        }
        unreachable!("the round counter does not run out")
    }

    async fn publish_key(&mut self, rows: Vec<tokio_postgres::Row>) -> Result<Vec<i64>, Error> {
        let mut ids = Vec::new();
        for row in rows {
            let id: i64 = row.get(0);
            let job = Job { order: row.get(1), event_type: row.get(2), version: row.get(3) };
            self.publish_row(id, job, 1).await?;
            ids.push(id);
        }
        Ok(ids)
    }
}

/// A dispatcher process (`ordlab __role`), for a planned crash: the kill must hit a process
/// of its own, never the orchestrator.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DispatcherConfig {
    pub env: RoleEnv,
    /// 1-based; the process is `D<index>` in the timeline.
    pub index: u32,
    pub stream: String,
    pub spec: DispatcherSpec,
    /// This process carries out `spec.crash_after_xadd_of_row`.
    pub may_crash: bool,
    /// When its first round is due on the machine-wide monotonic clock (None: at once). A
    /// dispatcher that takes over polls at the run's next round (t0 + k × poll), as a polling
    /// service would, not the instant its process is up.
    pub first_round_ns: Option<u64>,
}

/// A dispatcher process: polls from its own start until every row is published, then exits
/// with status 0 (or kills itself at its planned crash).
pub async fn run_process(cfg: DispatcherConfig) -> Result<(), Error> {
    let mut d = Dispatcher {
        pg: crate::connect::postgres(&cfg.env.pg_config).await.context("dispatcher connect")?,
        redis: crate::connect::redis(&cfg.env.redis_url).await.context("dispatcher connect")?,
        stream: cfg.stream.clone(),
        spec: cfg.spec.clone(),
        scale: cfg.env.scale,
        sink: Arc::new(StdoutSink),
        index: cfg.index,
        may_crash: cfg.may_crash,
    };
    d.run(cfg.first_round_ns.unwrap_or_else(crate::clock::now_ns)).await
}

impl crate::roles::Role for DispatcherConfig {
    const NAME: &'static str = "dispatcher";

    fn actor(&self) -> crate::timeline::Actor {
        use crate::timeline::Actor;
        Actor::Dispatcher(self.index)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run_process(self).await
    }
}
