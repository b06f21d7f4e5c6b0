//! The runner wires the roles for one lab: for each variant and run it prepares a fresh
//! stream and fresh rows, starts the consumer processes, waits until every one is blocked in
//! XREADGROUP, starts the producer (t=0), collects the timeline until every published entry
//! is acknowledged, stops the processes, reads the final state and asks the checker.

use crate::checker::{self, RunView};
use crate::connect::{self, SCHEMA};
use crate::consumer::{self, ConsumerConfig};
use crate::error::{Context, Error};
use crate::fault::{PublishSchedule, TimeScale};
use crate::producer::Producer;
use crate::report::{Environment, LabInfo, LabReport, RunRecord, StreamEntry, VariantReport};
use crate::scenario::{LabKind, OrderRow, Scenario, Variant};
use crate::service::Services;
use crate::timeline::{self, Actor, Event, EventKind, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// Progress callback: (variant id, run just finished, runs of the variant).
pub type OnRun = Arc<dyn Fn(&str, u32, u32) + Send + Sync>;

/// How to run a lab.
#[derive(Clone)]
pub struct RunOptions {
    /// Override every variant's number of runs.
    pub runs: Option<u32>,
    /// Cap every variant's number of runs (snapshots: a few runs, but never more than the
    /// lab itself asks for).
    pub max_runs: Option<u32>,
    pub scale: TimeScale,
    pub seed: u64,
    /// Run only this variant.
    pub variant: Option<String>,
    /// The command line, for the report header.
    pub command_line: String,
    /// Called after each run with (variant id, run, runs of the variant).
    pub on_run: Option<OnRun>,
}

impl RunOptions {
    pub fn new(scale: f64, seed: u64) -> RunOptions {
        RunOptions {
            runs: None,
            max_runs: None,
            scale: TimeScale(scale),
            seed,
            variant: None,
            command_line: String::new(),
            on_run: None,
        }
    }
}

/// Runs labs against one pair of servers.
pub struct Runner<'a> {
    services: &'a Services,
    /// The `ordlab` binary that consumer processes run (`ordlab __consumer …`).
    exe: PathBuf,
    redis: MultiplexedConnection,
    pg: tokio_postgres::Client,
    /// Random per invocation: every Redis key starts with `ordlab:<nonce>:`.
    nonce: String,
}

impl<'a> Runner<'a> {
    /// Connect and create the schema the tool owns.
    pub async fn new(services: &'a Services, exe: PathBuf) -> Result<Runner<'a>, Error> {
        let redis = connect::redis(&services.redis_url).await.context("connect")?;
        let pg = connect::postgres(&services.pg_config).await.context("connect")?;
        pg.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
             CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (id bigint PRIMARY KEY, status text NOT NULL, version bigint NOT NULL);"
        ))
        .await
        .context("create schema")?;
        pg.batch_execute(&format!("ALTER TABLE {SCHEMA}.orders ADD COLUMN IF NOT EXISTS state text"))
            .await
            .context("add state column")?;
        crate::outbox::create_table(&pg).await?;
        pg.batch_execute(&crate::strategy::idempotent::create_table_sql()).await.context("create processed table")?;
        let nonce = format!("{:08x}", rand::random::<u32>());
        Ok(Runner { services, exe, redis, pg, nonce })
    }

    /// The header every report of this invocation carries.
    pub fn environment(&self, opts: &RunOptions) -> Environment {
        let info = &self.services.info;
        Environment {
            ordlab_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("ORDLAB_GIT_COMMIT").to_string(),
            backend: self.services.backend.to_string(),
            redis_version: info.redis_version.clone(),
            postgres_version: info.postgres_version.clone(),
            lock_release: if info.redis.delex {
                "DELEX IFEQ"
            } else {
                "Lua compare-and-delete (no DELEX before Redis 8.4)"
            }
            .to_string(),
            command_line: opts.command_line.clone(),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            seed: opts.seed,
            time_scale: opts.scale.0,
        }
    }

    /// Run every variant of a lab (or the one `opts.variant` names).
    pub async fn run_lab(&mut self, lab: &Scenario, opts: &RunOptions) -> Result<LabReport, Error> {
        let mut variants = Vec::new();
        for v in &lab.variants {
            if opts.variant.as_ref().is_some_and(|only| *only != v.id) {
                continue;
            }
            let runs = opts.runs.unwrap_or(v.runs).min(opts.max_runs.unwrap_or(u32::MAX));
            let mut records = Vec::new();
            for run in 1..=runs {
                records.push(self.run_once(&lab.id, v, run, opts).await?);
                if let Some(cb) = &opts.on_run {
                    cb(&v.id, run, runs);
                }
            }
            variants.push(VariantReport::tally(
                v.id.clone(),
                v.title.clone(),
                v.setup.clone(),
                v.expect.clone(),
                v.scheduler_race,
                records,
            ));
        }
        Ok(LabReport {
            schema_version: crate::SCHEMA_VERSION,
            environment: self.environment(opts),
            lab: LabInfo {
                id: lab.id.clone(),
                title: lab.title.clone(),
                source: lab.source.clone(),
                description: lab.description.clone(),
            },
            variants,
        })
    }

    async fn run_once(&mut self, lab: &str, v: &Variant, run: u32, opts: &RunOptions) -> Result<RunRecord, Error> {
        match v.setup.kind {
            LabKind::Stream | LabKind::Outbox => self.run_stream(lab, v, run, opts).await,
            LabKind::SqlRace => self.run_sql_race(v, run, opts).await,
            LabKind::OutboxRollback => self.run_rollback(v, run).await,
            LabKind::Failover => self.run_failover(lab, v, run, opts).await,
        }
    }

    /// Two SQL sessions per case, no stream.
    async fn run_sql_race(&mut self, v: &Variant, run: u32, opts: &RunOptions) -> Result<RunRecord, Error> {
        let spec = v.setup.sql_race.as_ref().expect("resolved sql-race set-up has its spec");
        self.reset_rows(&v.setup.initial).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0 = crate::clock::now_ns();
        crate::sql_race::run(&self.services.pg_config, spec, opts.scale, Arc::new(tx)).await?;
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        self.finish(v, run, t0, raw, Vec::new(), false, None).await
    }

    /// One transaction holding the state change and its outbox row, rolled back.
    async fn run_rollback(&mut self, v: &Variant, run: u32) -> Result<RunRecord, Error> {
        self.reset_rows(&v.setup.initial).await?;
        crate::outbox::fill(&self.pg, &[]).await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0 = crate::clock::now_ns();
        for e in &v.setup.events {
            crate::outbox::rolled_back_change(&self.pg, e, &tx).await?;
        }
        let mut raw = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        let outbox_rows = crate::outbox::row_count(&self.pg).await?;
        self.finish(v, run, t0, raw, Vec::new(), false, Some(outbox_rows)).await
    }

    /// A primary and a replica of its own, the primary killed and the replica promoted.
    async fn run_failover(&mut self, lab: &str, v: &Variant, run: u32, opts: &RunOptions) -> Result<RunRecord, Error> {
        self.reset_rows(&v.setup.initial).await?;
        let ctx = crate::failover::Context {
            exe: &self.exe,
            pg_config: &self.services.pg_config,
            prefix: format!("ordlab:{}:{lab}:{}:{run}:", self.nonce, v.id),
            client_prefix: format!("ordlab-{}", self.nonce),
            seed: |index| mix(opts.seed, &[lab, &v.id], run, index),
        };
        let out = crate::failover::run(&ctx, v, opts.scale).await?;
        let mut record = self.finish(v, run, out.t0, out.raw, out.stream, out.timed_out, None).await?;
        record.facts = out.facts;
        let wrong = record.final_rows.iter().filter(|r| v.setup.expected_status(r.order) != Some(r.status.as_str()));
        record.facts.insert("wrong_orders".into(), wrong.count() as i64);
        Ok(record)
    }

    /// Place events on the run's clock, read the final rows and judge the run.
    #[allow(clippy::too_many_arguments)]
    async fn finish(
        &mut self,
        v: &Variant,
        run: u32,
        t0: u64,
        raw: Vec<RawEvent>,
        stream: Vec<StreamEntry>,
        timed_out: bool,
        outbox_rows: Option<i64>,
    ) -> Result<RunRecord, Error> {
        let mut events: Vec<Event> = raw.into_iter().map(|e| e.at(t0)).collect();
        timeline::sort(&mut events);
        let final_rows = self.final_rows(&v.setup.orders()).await?;
        let verdict = checker::judge(
            &v.setup,
            &RunView { events: &events, final_rows: &final_rows, timed_out, outbox_rows },
            &stream,
        );
        Ok(RunRecord { run, stream, events, final_rows, outbox_rows, facts: BTreeMap::new(), timed_out, verdict })
    }

    /// A stream with consumer processes, fed by the producer or by an outbox dispatcher.
    async fn run_stream(&mut self, lab: &str, v: &Variant, run: u32, opts: &RunOptions) -> Result<RunRecord, Error> {
        let prefix = format!("ordlab:{}:{lab}:{}:{run}:", self.nonce, v.id);
        let streams: Vec<String> = if v.setup.shards == 1 {
            vec![format!("{prefix}orders")]
        } else {
            (0..v.setup.shards).map(|k| format!("{prefix}orders:{k}")).collect()
        };
        let stream = streams[0].clone();
        let group = "order-processor";
        self.reset_rows(&v.setup.initial).await?;
        if v.setup.kind == LabKind::Outbox {
            crate::outbox::fill(&self.pg, &v.setup.events).await?;
        }
        for s in &streams {
            let _: () = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(s)
                .arg(group)
                .arg("$")
                .arg("MKSTREAM")
                .query_async(&mut self.redis)
                .await
                .context("XGROUP CREATE")?;
        }

        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let mut consumers = Vec::new();
        for index in 1..=v.setup.consumers {
            let cfg = ConsumerConfig {
                index,
                redis_url: self.services.redis_url.clone(),
                pg_config: self.services.pg_config.clone(),
                stream: streams[(index - 1) as usize % streams.len()].clone(),
                group: group.to_string(),
                client_name: format!("ordlab-{}-C{index}", self.nonce),
                key_prefix: prefix.clone(),
                setup: v.setup.clone(),
                scale: opts.scale,
                seed: mix(opts.seed, &[lab, &v.id], run, index),
                has_delex: self.services.info.redis.delex,
                claimer: false,
            };
            // One at a time, each blocked before the next starts: Redis serves blocked
            // readers first come, first served, so C1 gets the first entry in every run.
            let child = RoleProcess::spawn(&self.exe, &cfg, tx.clone())?;
            consumers.push(child);
            self.wait_blocked(&cfg.client_name, consumers.last_mut().unwrap()).await?;
        }
        // The claimer (`reaper`) polls XAUTOCLAIM instead of blocking: wait until it is connected.
        if v.setup.reaper.is_some() {
            let index = v.setup.consumers + 1;
            let cfg = ConsumerConfig {
                index,
                redis_url: self.services.redis_url.clone(),
                pg_config: self.services.pg_config.clone(),
                stream: stream.clone(),
                group: group.to_string(),
                client_name: format!("ordlab-{}-reaper", self.nonce),
                key_prefix: prefix.clone(),
                setup: v.setup.clone(),
                scale: opts.scale,
                seed: mix(opts.seed, &[lab, &v.id], run, index),
                has_delex: self.services.info.redis.delex,
                claimer: true,
            };
            consumers.push(RoleProcess::spawn(&self.exe, &cfg, tx.clone())?);
            self.wait_connected(&cfg.client_name, consumers.last_mut().unwrap()).await?;
        }

        let producer = Producer {
            redis: connect::redis(&self.services.redis_url).await.context("producer connect")?,
            streams: streams.clone(),
            state_bytes: v.setup.state_bytes,
            scale: opts.scale,
            sink: Arc::new(tx.clone()),
        };
        let spec = v.setup.outbox.clone().filter(|_| v.setup.kind == LabKind::Outbox);
        // A planned crash needs dispatchers as processes of their own; otherwise they are
        // tasks here, each with its own connections.
        let crash = spec.as_ref().is_some_and(|s| s.crash_after_xadd_of_row.is_some());
        let mut dispatchers = Vec::new();
        for index in 1..=spec.as_ref().filter(|_| !crash).map_or(0, |s| s.dispatchers) {
            dispatchers.push(crate::outbox::Dispatcher {
                pg: connect::postgres(&self.services.pg_config).await.context("dispatcher connect")?,
                redis: connect::redis(&self.services.redis_url).await.context("dispatcher connect")?,
                stream: stream.clone(),
                spec: spec.clone().expect("outbox lab"),
                scale: opts.scale,
                sink: Arc::new(tx.clone()),
                index,
                may_crash: false,
            });
        }
        let dispatcher_processes = match &spec {
            Some(spec) if crash => Some((
                crate::outbox::DispatcherConfig {
                    index: 1,
                    redis_url: self.services.redis_url.clone(),
                    pg_config: self.services.pg_config.clone(),
                    stream: stream.clone(),
                    spec: spec.clone(),
                    scale: opts.scale,
                    may_crash: true,
                },
                self.exe.clone(),
                tx.clone(),
            )),
            _ => None,
        };
        drop(tx);
        let deadline = tokio::time::Instant::now() + run_deadline(v, opts.scale);
        let t0 = crate::clock::now_ns();
        let publish = async {
            if let Some((cfg, exe, sink)) = dispatcher_processes {
                return run_dispatcher_processes(&exe, cfg, sink).await;
            }
            if dispatchers.is_empty() {
                return producer.publish_all(&v.setup.events, t0).await;
            }
            // Dropped with the future (deadline): every dispatcher task is aborted.
            let mut tasks = tokio::task::JoinSet::new();
            for mut d in dispatchers {
                tasks.spawn(async move { d.run(t0).await });
            }
            while let Some(done) = tasks.join_next().await {
                done.expect("dispatcher task does not panic")?;
            }
            Ok(())
        };
        tokio::pin!(publish);
        let mut published_done = false;
        let (mut published, mut acked) = (HashSet::new(), HashSet::new());
        let mut raw = Vec::new();
        let mut timed_out = false;
        let mut crashes = crate::redelivery::Crashes::default();
        loop {
            // Every event is published at least once in the end (failed attempts retry; several
            // dispatchers or a crash may publish one twice), so the run is over when the
            // publisher is done and every entry is acknowledged.
            if published_done && published.len() >= v.setup.events.len() && acked.is_superset(&published) {
                break;
            }
            // A consumer that crashed as planned leaves what it read pending; with no claimer
            // nobody ever acknowledges it: the run is over without it ([`crate::redelivery`]).
            if published_done && v.setup.reaper.is_none() && crashes.settled(&published, &acked, v.setup.consumers) {
                break;
            }
            tokio::select! {
                r = &mut publish, if !published_done => { r?; published_done = true; }
                ev = rx.recv() => match ev {
                    Some(ev) => {
                        match &ev.kind {
                            // Entry IDs are unique per stream only: key them by shard.
                            EventKind::Published { entry_id, job, .. } => {
                                published.insert((v.setup.shard_of(job.order), entry_id.clone()));
                            }
                            EventKind::Acked { entry_id } => {
                                let shard = match ev.actor {
                                    Actor::Consumer(i) => (i - 1) % v.setup.shards,
                                    _ => 0,
                                };
                                acked.insert((shard, entry_id.clone()));
                            }
                            _ => {}
                        }
                        crashes.observe(&ev);
                        raw.push(ev);
                    }
                    // Every consumer is gone and the producer too: nothing more can happen.
                    None => { timed_out = !published_done || !acked.is_superset(&published); break; }
                },
                _ = tokio::time::sleep_until(deadline) => { timed_out = true; break; }
            }
        }
        for c in consumers {
            c.stop().await;
        }
        while let Ok(ev) = rx.try_recv() {
            raw.push(ev);
        }
        let mut stream_entries = Vec::new();
        for (k, s) in streams.iter().enumerate() {
            stream_entries.extend(self.read_stream(s, k as u32).await?);
        }
        stream_entries.sort_by_key(|e| crate::strategy::cas::entry_id_version(&e.entry_id));
        let mut facts = if v.setup.state_bytes > 0 { self.entry_sizes(&streams).await? } else { BTreeMap::new() };
        if v.setup.crash.is_some() || v.setup.reaper.is_some() {
            facts.insert("pending_after_run".into(), self.pending_count(&streams, group).await?);
        }
        self.delete_keys(&prefix).await?;
        let outbox_rows = match v.setup.kind {
            LabKind::Outbox => Some(crate::outbox::row_count(&self.pg).await?),
            _ => None,
        };
        let mut record = self.finish(v, run, t0, raw, stream_entries, timed_out, outbox_rows).await?;
        if v.setup.crash.is_some() || v.setup.reaper.is_some() {
            facts.extend(crate::redelivery::timeline_facts(&record.events));
        }
        record.facts = facts;
        if v.setup.generate.is_some() {
            record.facts.extend(crate::bench::load_facts(&v.setup, &record.events, &record.final_rows));
            // The producer's own rate against redis-benchmark's on the same quiet server (during
            // the run, consumers compete with the producer for the CPU): three alternating
            // rounds, the best of each, so a passing hiccup does not decide the comparison.
            let (mut ours, mut theirs) = (0i64, None::<i64>);
            for round in 0..3 {
                let probe = Producer {
                    redis: connect::redis(&self.services.redis_url).await.context("producer connect")?,
                    streams: vec![format!("{prefix}probe{round}")],
                    state_bytes: 0,
                    scale: opts.scale,
                    sink: Arc::new(crate::timeline::NullSink),
                };
                let started = crate::clock::now_ns();
                probe.publish_all(&v.setup.events, started).await?;
                let secs = (crate::clock::now_ns() - started) as f64 / 1e9;
                ours = ours.max((v.setup.events.len() as f64 / secs) as i64);
                let (url, key) = (self.services.redis_url.clone(), format!("{prefix}bench"));
                let bench = tokio::task::spawn_blocking(move || crate::bench::redis_benchmark_xadd(&url, &key, 5000))
                    .await
                    .expect("benchmark task does not panic");
                theirs = theirs.max(bench);
            }
            record.facts.insert("producer_alone_xadd_per_s".into(), ours);
            if let Some(rps) = theirs {
                record.facts.insert("benchmark_xadd_per_s".into(), rps);
                record.facts.insert("producer_vs_benchmark_pct".into(), ours * 100 / rps.max(1));
            }
            self.delete_keys(&prefix).await?;
        }
        Ok(record)
    }

    /// Entries delivered and not acknowledged, from the server (`XPENDING <stream> <group>`).
    async fn pending_count(&mut self, streams: &[String], group: &str) -> Result<i64, Error> {
        let mut n = 0;
        for s in streams {
            let reply: redis::streams::StreamPendingReply =
                redis::cmd("XPENDING").arg(s).arg(group).query_async(&mut self.redis).await.context("XPENDING")?;
            n += reply.count() as i64;
        }
        Ok(n)
    }

    /// Readiness of a role that does not block (the claimer): its named connection exists.
    async fn wait_connected(&mut self, client_name: &str, child: &mut RoleProcess) -> Result<(), Error> {
        self.wait_client(client_name, child, ClientState::Connected).await
    }

    /// Readiness of a consumer: blocked in XREADGROUP.
    async fn wait_blocked(&mut self, client_name: &str, child: &mut RoleProcess) -> Result<(), Error> {
        self.wait_client(client_name, child, ClientState::BlockedInXreadgroup).await
    }

    /// Readiness as data: poll CLIENT LIST until the role's named connection is in `want`,
    /// the process exits (its stderr says why), or 15 s pass.
    async fn wait_client(
        &mut self,
        client_name: &str,
        child: &mut RoleProcess,
        want: ClientState,
    ) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        let needle = format!(" name={client_name} ");
        loop {
            let list: String =
                redis::cmd("CLIENT").arg("LIST").query_async(&mut self.redis).await.context("CLIENT LIST")?;
            if list.lines().any(|l| l.contains(&needle) && want.holds(l)) {
                return Ok(());
            }
            if let Some(detail) = child.exited() {
                return Err(Error::RoleNotReady { actor: child.actor.to_string(), detail });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::RoleNotReady { actor: child.actor.to_string(), detail: want.missing().into() });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Mean bytes of an entry's fields, with its state document and without it (what a
    /// delta event would carry), measured on the server's copy.
    async fn entry_sizes(&mut self, streams: &[String]) -> Result<BTreeMap<String, i64>, Error> {
        let (mut with_state, mut delta, mut n) = (0usize, 0usize, 0usize);
        for s in streams {
            let reply: redis::streams::StreamRangeReply =
                redis::cmd("XRANGE").arg(s).arg("-").arg("+").query_async(&mut self.redis).await.context("XRANGE")?;
            for e in &reply.ids {
                for (field, value) in &e.map {
                    let len = field.len() + redis::from_redis_value_ref::<String>(value).map(|v| v.len()).unwrap_or(0);
                    with_state += len;
                    if field != "state" {
                        delta += len;
                    }
                }
                n += 1;
            }
        }
        let mean = |x: usize| x.checked_div(n).unwrap_or(0) as i64;
        Ok(BTreeMap::from([
            ("entry_bytes".to_string(), mean(with_state)),
            ("delta_entry_bytes".to_string(), mean(delta)),
        ]))
    }

    async fn reset_rows(&self, rows: &[OrderRow]) -> Result<(), Error> {
        self.pg.execute(&format!("TRUNCATE {SCHEMA}.orders, {SCHEMA}.processed"), &[]).await.context("reset rows")?;
        for r in rows {
            self.pg
                .execute(
                    &format!("INSERT INTO {SCHEMA}.orders (id, status, version) VALUES ($1, $2, $3)"),
                    &[&r.order, &r.status, &r.version],
                )
                .await
                .context("insert initial row")?;
        }
        Ok(())
    }

    async fn read_stream(&mut self, stream: &str, shard: u32) -> Result<Vec<StreamEntry>, Error> {
        let reply: redis::streams::StreamRangeReply =
            redis::cmd("XRANGE").arg(stream).arg("-").arg("+").query_async(&mut self.redis).await.context("XRANGE")?;
        Ok(reply
            .ids
            .iter()
            .filter_map(|e| consumer::job_of(e).map(|job| StreamEntry { shard, entry_id: e.id.clone(), job }))
            .collect())
    }

    async fn final_rows(&self, orders: &[i64]) -> Result<Vec<OrderRow>, Error> {
        let rows = self
            .pg
            .query(
                &format!("SELECT id, status, version FROM {SCHEMA}.orders WHERE id = ANY($1) ORDER BY id"),
                &[&orders],
            )
            .await
            .context("read final state")?;
        Ok(rows.iter().map(|r| OrderRow { order: r.get(0), status: r.get(1), version: r.get(2) }).collect())
    }

    async fn delete_keys(&mut self, prefix: &str) -> Result<(), Error> {
        let keys: Vec<String> =
            redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(&mut self.redis).await.context("KEYS")?;
        if !keys.is_empty() {
            let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut self.redis).await.context("DEL")?;
        }
        Ok(())
    }
}

/// What CLIENT LIST must show of a role's connection before the run goes on.
#[derive(Clone, Copy)]
enum ClientState {
    Connected,
    BlockedInXreadgroup,
}

impl ClientState {
    fn holds(self, client_line: &str) -> bool {
        match self {
            ClientState::Connected => true,
            ClientState::BlockedInXreadgroup => client_line.contains(" cmd=xreadgroup") && is_blocked(client_line),
        }
    }

    fn missing(self) -> &'static str {
        match self {
            ClientState::Connected => "not connected after 15 s",
            ClientState::BlockedInXreadgroup => "not blocked in XREADGROUP after 15 s",
        }
    }
}

pub(crate) fn is_blocked(client_line: &str) -> bool {
    client_line.split(' ').any(|kv| kv.strip_prefix("flags=").is_some_and(|f| f.contains('b')))
}

/// A generous bound on a run's length: everything it could wait for, tripled, plus 10 s.
/// Only a hung run ever reaches it (its verdict is then unknown).
fn run_deadline(v: &Variant, scale: TimeScale) -> Duration {
    let work: f64 = v.setup.events.iter().map(|e| v.setup.cost_for(&e.job())).sum();
    let publish: f64 = v
        .setup
        .events
        .iter()
        .map(|e| {
            e.at_ms.unwrap_or(0.0)
                + if e.fail_attempts > 0 { PublishSchedule(e).retry_offset_ms(e.fail_attempts + 1) } else { 0.0 }
        })
        .fold(0.0, f64::max);
    let lock_waits: f64 = match &v.setup.strategy {
        crate::scenario::Strategy::Lock(l) => (l.ttl_ms + l.prework_max_ms) as f64 * v.setup.events.len() as f64,
        _ => 0.0,
    };
    let dispatch: f64 = v
        .setup
        .outbox
        .as_ref()
        .map(|o| {
            o.poll_ms * (o.failing_rows.iter().map(|f| f.attempts).sum::<u32>() + 1) as f64
                + o.publish_ms.iter().sum::<f64>() * v.setup.events.len() as f64
        })
        .unwrap_or(0.0);
    scale.duration((work + publish + lock_waits + dispatch) * 3.0) + Duration::from_secs(10)
}

/// A per-process seed from the invocation's seed: same `--seed`, same random choices.
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

/// Outbox dispatchers as processes (`ordlab __dispatcher …`), one after the other: D1 runs
/// until it exits; after a planned crash D2 takes over, and so on (at most 5).
async fn run_dispatcher_processes(
    exe: &std::path::Path,
    mut cfg: crate::outbox::DispatcherConfig,
    sink: mpsc::UnboundedSender<RawEvent>,
) -> Result<(), Error> {
    loop {
        let json = serde_json::to_string(&cfg).expect("config serializes");
        let mut child = RoleProcess::spawn_role(exe, "__dispatcher", cfg.actor(), json, sink.clone())?;
        // Done (status 0) or died unplanned (the watcher recorded it): no one takes over.
        if child.wait().await != Some(true) || cfg.index >= 5 {
            return Ok(());
        }
        cfg.index += 1;
        cfg.may_crash = false;
    }
}

/// A role running as a child process (`ordlab __consumer …`, `ordlab __dispatcher …`). Its
/// stdout lines become timeline events; if it exits on its own, a `crashed` event says so
/// with its stderr tail, unless it exited with status 0 or its last line announced a planned
/// crash. Dropping it (or [`RoleProcess::stop`]) kills it; it also dies if this process dies.
pub(crate) struct RoleProcess {
    actor: Actor,
    stop: Option<oneshot::Sender<()>>,
    watcher: tokio::task::JoinHandle<()>,
    exit: Arc<Mutex<Option<String>>>,
    /// Set when it exits on its own: `true` if its last line announced a planned crash.
    planned_exit: Arc<Mutex<Option<bool>>>,
}

impl RoleProcess {
    pub(crate) fn spawn(
        exe: &std::path::Path,
        cfg: &ConsumerConfig,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, Error> {
        let json = serde_json::to_string(cfg).expect("config serializes");
        Self::spawn_role(exe, "__consumer", cfg.actor(), json, sink)
    }

    /// `ordlab <subcommand> <config json>` as `actor`.
    fn spawn_role(
        exe: &std::path::Path,
        subcommand: &str,
        actor: Actor,
        config_json: String,
        sink: mpsc::UnboundedSender<RawEvent>,
    ) -> Result<RoleProcess, Error> {
        let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(exe));
        // The config goes in on stdin: a generated workload is larger than an argument may be.
        cmd.arg(subcommand).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().context(&format!("start {subcommand} {actor} ({})", exe.display()))?;
        let mut stdin = child.stdin.take().expect("piped");
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A child that dies before reading its config is reported by the watcher.
            let _ = stdin.write_all(config_json.as_bytes()).await;
        });
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let lines_sink = sink.clone();
        let reader = tokio::spawn(async move {
            // Did the last event announce a planned crash (`crashed`, planned: true)?
            let mut announced = false;
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(ev) = serde_json::from_str::<RawEvent>(&line) {
                    announced = matches!(ev.kind, EventKind::Crashed { planned: true, .. });
                    lines_sink.record(ev);
                }
            }
            announced
        });
        let err_tail = tokio::spawn(async move {
            let mut buf = String::new();
            let _ = stderr.read_to_string(&mut buf).await;
            buf
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let exit = Arc::new(Mutex::new(None));
        let exit_w = exit.clone();
        let planned_exit = Arc::new(Mutex::new(None));
        let planned_w = planned_exit.clone();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    let announced = reader.await.unwrap_or(false);
                    let success = status.as_ref().is_ok_and(|s| s.success());
                    let tail = err_tail.await.unwrap_or_default();
                    let tail = tail.lines().last().unwrap_or("").to_string();
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    let detail = if tail.is_empty() { status } else { format!("{status}: {tail}") };
                    *exit_w.lock().unwrap() = Some(detail.clone());
                    *planned_w.lock().unwrap() = Some(announced);
                    // The child already said why it died (planned), or finished its work.
                    if !announced && !success {
                        sink.emit(actor, EventKind::Crashed { planned: false, detail });
                    }
                }
                _ = stop_rx => {
                    let _ = child.kill().await;
                    let _ = reader.await;
                }
            }
        });
        Ok(RoleProcess { actor, stop: Some(stop_tx), watcher, exit, planned_exit })
    }

    /// Wait until the process exits on its own, its output drained: `Some(true)` after a
    /// planned crash, `Some(false)` otherwise. Drop it afterwards (do not call `stop`).
    async fn wait(&mut self) -> Option<bool> {
        let _ = (&mut self.watcher).await;
        *self.planned_exit.lock().unwrap()
    }

    /// If the process has exited on its own: how.
    pub(crate) fn exited(&self) -> Option<String> {
        self.exit.lock().unwrap().clone()
    }

    /// Kill the process and wait until its output is drained.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.watcher).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocked_flag_is_read_from_client_list() {
        assert!(super::is_blocked("id=5 addr=x name=ordlab-1-C1 age=0 flags=b db=0 cmd=xreadgroup"));
        assert!(!super::is_blocked("id=5 addr=x name=ordlab-1-C1 age=0 flags=N db=0 cmd=xreadgroup"));
    }

    #[test]
    fn seeds_differ_per_process_and_repeat_per_seed() {
        let a = super::mix(1, &["lock", "s4b"], 1, 1);
        assert_eq!(a, super::mix(1, &["lock", "s4b"], 1, 1));
        assert_ne!(a, super::mix(1, &["lock", "s4b"], 1, 2));
        assert_ne!(a, super::mix(2, &["lock", "s4b"], 1, 1));
    }
}
