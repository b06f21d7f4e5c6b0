//! The side-effect sink: a separate party that receives every external effect a job causes
//! (an e-mail sent, a card charged, a partner API called) and keeps the ledger checkers count
//! from. It is its own PostgreSQL schema, `ordlab_sink`, in the lab's database, reached over a
//! connection of its own, so no effect can ever be part of (or be rolled back with) a worker's
//! transaction; every statement names the schema in full (no `search_path` is relied on).
//!
//! All of its logic is one server-side function, `perform_effect`: one round trip, atomic,
//! and it runs to the end even when the caller dies mid-request, like a remote API. It can
//! honour an idempotency key the way payment APIs do (same key → the first request's receipt,
//! no second effect), be slow (`latency`), and carry out the faults aimed at the partner
//! ([`crate::fault::Fault`] with `on = "partner"`, kept in its own table so every caller's
//! request counts, whichever process sends it): refuse a request (nothing happens), apply it
//! and lose the reply (the caller cannot tell it happened), or answer it late. Each request a
//! fault hit names the fault in the ledger, and becomes a fault event on the timeline.

pub mod http;

use crate::fault::{Action, Fault, Target, TimeScale, Trigger};
pub use crate::timeline::EffectOutcome;
use crate::timeline::{Actor, EventKind, RawEvent};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The sink's schema in the lab's database (never a database of its own: on a user's server
/// ordlab creates schemas only, see [`crate::service::namespace`]).
pub const SCHEMA: &str = crate::connect::SINK_SCHEMA;

/// Why the sink could not do what was asked. `Refused` and `ReplyLost` are injected partner
/// failures a worker must handle; the others are infrastructure errors.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("the partner refused {effect} for {job} (injected failure; nothing happened)")]
    Refused { job: String, effect: String },
    #[error("the partner's reply to {effect} for {job} was lost (injected; the effect did happen)")]
    ReplyLost { job: String, effect: String },
    #[error("side-effect sink: cannot create schema {SCHEMA}: {} (the lab's user needs CREATE on the database: GRANT CREATE ON DATABASE <db> TO <user>)", crate::connect::postgres_said(source))]
    Create { source: tokio_postgres::Error },
    #[error("side-effect sink: {context}: {}", crate::connect::postgres_said(source))]
    Postgres { context: &'static str, source: tokio_postgres::Error },
    #[error("side-effect sink over HTTP: cannot listen on loopback: {0}")]
    Listen(std::io::Error),
    #[error("side-effect sink: bad config {0:?}")]
    Config(String),
}

impl SinkError {
    /// An injected partner failure (the worker should retry), not a broken harness.
    pub fn is_partner_failure(&self) -> bool {
        matches!(self, SinkError::Refused { .. } | SinkError::ReplyLost { .. })
    }
}

fn pg(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SinkError {
    move |source| SinkError::Postgres { context, source }
}

/// Where the sink is and which run its rows belong to. Travels inside a role's JSON config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkConfig {
    /// tokio-postgres config string of database [`DATABASE`].
    pub pg_config: String,
    /// Scope of every row: `<nonce>:<lab>:<variant>:<run>`.
    pub run: String,
}

impl SinkConfig {
    /// Once per invocation: create the schema, its tables and its function if missing (a
    /// concurrent creator is fine). Returns the sink's config with an empty run scope; the
    /// sink connects to the lab's database with a connection of its own.
    pub async fn prepare(main_pg_config: &str) -> Result<SinkConfig, SinkError> {
        let sink = crate::connect::postgres(main_pg_config).await.map_err(pg("connect"))?;
        // Two invocations may create the schema at once; serialise them.
        let sql = format!("SELECT pg_advisory_lock(7411); {SCHEMA_SQL} SELECT pg_advisory_unlock(7411);");
        if let Err(e) = sink.batch_execute(&sql).await {
            let _ = sink.batch_execute("SELECT pg_advisory_unlock_all()").await;
            return Err(match e.code() {
                Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => SinkError::Create { source: e },
                _ => SinkError::Postgres { context: "create tables", source: e },
            });
        }
        Ok(SinkConfig { pg_config: main_pg_config.to_string(), run: String::new() })
    }

    /// The same sink scoped to one run.
    pub fn for_run(&self, run: impl Into<String>) -> SinkConfig {
        SinkConfig { pg_config: self.pg_config.clone(), run: run.into() }
    }
}

const SCHEMA_SQL: &str = r#"
CREATE SCHEMA IF NOT EXISTS ordlab_sink;
CREATE TABLE IF NOT EXISTS ordlab_sink.requests (
  id bigint PRIMARY KEY, run text NOT NULL, job text NOT NULL, effect text NOT NULL,
  idem_key text, actor text NOT NULL, delivery int, mono_ns bigint NOT NULL,
  outcome text NOT NULL, replay_of bigint, recorded_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX IF NOT EXISTS requests_run ON ordlab_sink.requests (run, id);
CREATE SEQUENCE IF NOT EXISTS ordlab_sink.request_ids;
CREATE TABLE IF NOT EXISTS ordlab_sink.idem_keys (run text NOT NULL, idem_key text NOT NULL, request_id bigint NOT NULL,
  PRIMARY KEY (run, idem_key));
CREATE TABLE IF NOT EXISTS ordlab_sink.faults (id bigserial PRIMARY KEY, run text NOT NULL, job text, effect text,
  kind text NOT NULL, remaining int NOT NULL);
ALTER TABLE ordlab_sink.faults ADD COLUMN IF NOT EXISTS skip int NOT NULL DEFAULT 0;
ALTER TABLE ordlab_sink.faults ADD COLUMN IF NOT EXISTS delay_s double precision;
ALTER TABLE ordlab_sink.faults ADD COLUMN IF NOT EXISTS spec text;
ALTER TABLE ordlab_sink.requests ADD COLUMN IF NOT EXISTS fault text;
CREATE TABLE IF NOT EXISTS ordlab_sink.latency (run text NOT NULL, effect text NOT NULL, seconds double precision NOT NULL,
  PRIMARY KEY (run, effect));
CREATE OR REPLACE FUNCTION ordlab_sink.perform_effect(p_run text, p_job text, p_effect text, p_key text, p_actor text,
  p_delivery int, p_mono bigint, OUT request_id bigint, OUT outcome text, OUT first_request bigint) AS $$
DECLARE lat double precision; fault text; fid bigint; fskip int; fdelay double precision; fspec text;
BEGIN
  SELECT l.seconds INTO lat FROM ordlab_sink.latency l WHERE l.run = p_run AND l.effect = p_effect;
  IF lat IS NOT NULL THEN PERFORM pg_sleep(lat); END IF;
  request_id := nextval('ordlab_sink.request_ids');
  SELECT f2.id, f2.skip, f2.kind, f2.delay_s, f2.spec INTO fid, fskip, fault, fdelay, fspec FROM ordlab_sink.faults f2
    WHERE f2.run = p_run AND (f2.job IS NULL OR f2.job = p_job) AND (f2.effect IS NULL OR f2.effect = p_effect)
    AND f2.remaining > 0 ORDER BY f2.id LIMIT 1 FOR UPDATE;
  IF fid IS NOT NULL AND fskip > 0 THEN
    UPDATE ordlab_sink.faults SET skip = skip - 1 WHERE id = fid;
    fault := NULL; fspec := NULL;
  ELSIF fid IS NOT NULL THEN
    UPDATE ordlab_sink.faults SET remaining = remaining - 1 WHERE id = fid;
  END IF;
  IF fault = 'delay' THEN PERFORM pg_sleep(fdelay); END IF;
  IF fault = 'refuse' THEN
    outcome := 'refused';
  ELSIF p_key IS NOT NULL THEN
    INSERT INTO ordlab_sink.idem_keys VALUES (p_run, p_key, request_id) ON CONFLICT DO NOTHING;
    IF FOUND THEN
      outcome := 'applied'; first_request := request_id;
    ELSE
      outcome := 'replayed';
      SELECT k.request_id INTO first_request FROM ordlab_sink.idem_keys k WHERE k.run = p_run AND k.idem_key = p_key;
    END IF;
  ELSE
    outcome := 'applied'; first_request := request_id;
  END IF;
  INSERT INTO ordlab_sink.requests (id, run, job, effect, idem_key, actor, delivery, mono_ns, outcome, replay_of, fault)
    VALUES (request_id, p_run, p_job, p_effect, p_key, p_actor, p_delivery, p_mono, outcome,
            CASE WHEN outcome = 'replayed' THEN first_request END, fspec);
  IF fault = 'apply-then-fail' THEN outcome := 'reply-lost'; END IF;
END $$ LANGUAGE plpgsql SET search_path = pg_catalog;
"#;

/// One effect a worker asks the partner for.
#[derive(Clone, Copy, Debug)]
pub struct EffectRequest<'a> {
    /// Stable job id from the payload (never the stream entry ID).
    pub job: &'a str,
    /// What the partner does: `email`, `charge`, `partner_api`, …
    pub effect: &'a str,
    /// The partner deduplicates requests with the same key (None: it cannot).
    pub idem_key: Option<&'a str>,
    pub actor: Actor,
    /// The delivery count the caller saw, if it knows it.
    pub delivery: Option<u32>,
}

/// The partner's answer to a request that did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectReceipt {
    pub request_id: i64,
    /// The key was seen before: this is the first request's receipt, and no new effect.
    pub replayed: bool,
    pub first_request: i64,
}

/// One request as the sink recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EffectRecord {
    pub request_id: i64,
    pub job: String,
    pub effect: String,
    pub idem_key: Option<String>,
    pub actor: Actor,
    pub delivery: Option<u32>,
    /// The caller's monotonic clock when it sent the request.
    pub mono_ns: u64,
    pub outcome: EffectOutcome,
    pub replay_of: Option<i64>,
    /// The partner's fault that hit this request, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

/// The partner's side of a fault aimed at it: which requests (a job, an effect: `event` is
/// the effect's name, or `request` for any), which of them (`nth`, then each one, `times`
/// times) and what it does (`refuse`, `lose-reply`, `{ delay_ms = … }`).
fn partner_row(
    fault: &Fault,
    scale: TimeScale,
) -> Result<(Option<String>, Option<String>, &'static str, i32, i32, Option<f64>), SinkError> {
    let bad = |why: &str| SinkError::Config(format!("a partner's fault {}: {why}", fault.label().en));
    if fault.target != Target::Partner {
        return Err(bad("is not aimed at the partner (on = \"partner\")"));
    }
    let Trigger::Event { event, job, .. } = &fault.trigger else {
        return Err(bad("its trigger is a request: event = \"request\" (any effect) or the effect's name"));
    };
    if fault.count.every.is_some_and(|e| e > 1) || fault.probability.is_some() {
        return Err(bad("the partner counts the first requests only (nth, times)"));
    }
    let (kind, delay) = match fault.action {
        Action::Refuse => ("refuse", None),
        Action::LoseReply => ("apply-then-fail", None),
        Action::DelayMs(ms) => ("delay", Some(scale.duration(ms).as_secs_f64())),
        _ => return Err(bad("the partner can refuse, lose-reply or { delay_ms = … }")),
    };
    let effect = (event != "request").then(|| event.clone());
    let times = fault.count.most().map_or(i32::MAX, |t| t as i32);
    Ok((job.clone(), effect, kind, (fault.count.nth - 1) as i32, times, delay))
}

/// A connection to the sink: one per process that talks to it, never a worker's own client.
pub struct SideEffectSink {
    client: tokio_postgres::Client,
    run: String,
}

impl SideEffectSink {
    pub async fn connect(cfg: &SinkConfig) -> Result<SideEffectSink, SinkError> {
        let client = crate::connect::postgres(&cfg.pg_config).await.map_err(pg("connect"))?;
        Ok(SideEffectSink { client, run: cfg.run.clone() })
    }

    /// Ask the partner for one effect (see the module doc for what each answer means).
    pub async fn perform(&self, req: &EffectRequest<'_>) -> Result<EffectReceipt, SinkError> {
        let delivery = req.delivery.map(|d| d as i32);
        let mono = crate::clock::now_ns() as i64;
        let row = self
            .client
            .query_one(
                "SELECT request_id, outcome, first_request FROM ordlab_sink.perform_effect($1, $2, $3, $4, $5, $6, $7)",
                &[&self.run, &req.job, &req.effect, &req.idem_key, &req.actor.to_string(), &delivery, &mono],
            )
            .await
            .map_err(pg("perform_effect"))?;
        let (request_id, outcome): (i64, String) = (row.get(0), row.get(1));
        let first_request: Option<i64> = row.get(2);
        let (job, effect) = (req.job.to_string(), req.effect.to_string());
        match outcome.as_str() {
            "refused" => Err(SinkError::Refused { job, effect }),
            "reply-lost" => Err(SinkError::ReplyLost { job, effect }),
            o => Ok(EffectReceipt {
                request_id,
                replayed: o == "replayed",
                first_request: first_request.unwrap_or(request_id),
            }),
        }
    }

    /// Start of a run: forget this run's requests, keys, faults and latencies.
    pub async fn reset(&self) -> Result<(), SinkError> {
        for table in ["requests", "idem_keys", "faults", "latency"] {
            self.client
                .execute(&format!("DELETE FROM {SCHEMA}.{table} WHERE run = $1"), &[&self.run])
                .await
                .map_err(pg("reset"))?;
        }
        Ok(())
    }

    /// A fault aimed at the partner, for this run (its durations at time scale `scale`).
    pub async fn add_fault(&self, fault: &Fault, scale: TimeScale) -> Result<(), SinkError> {
        let (job, effect, kind, skip, times, delay) = partner_row(fault, scale)?;
        let spec = serde_json::to_string(fault).expect("a fault serializes");
        self.client
            .execute(
                "INSERT INTO ordlab_sink.faults (run, job, effect, kind, remaining, skip, delay_s, spec)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&self.run, &job, &effect, &kind, &times, &skip, &delay, &spec],
            )
            .await
            .map_err(pg("add fault"))?;
        Ok(())
    }

    /// Every request for `effect` takes `latency` (already time-scaled) before it happens.
    pub async fn set_latency(&self, effect: &str, latency: Duration) -> Result<(), SinkError> {
        self.client
            .execute(
                "INSERT INTO ordlab_sink.latency (run, effect, seconds) VALUES ($1, $2, $3)
                 ON CONFLICT (run, effect) DO UPDATE SET seconds = EXCLUDED.seconds",
                &[&self.run, &effect, &latency.as_secs_f64()],
            )
            .await
            .map_err(pg("set latency"))?;
        Ok(())
    }

    /// Every request of this run, in the sink's order.
    pub async fn records(&self) -> Result<Vec<EffectRecord>, SinkError> {
        let rows = self
            .client
            .query(
                "SELECT id, job, effect, idem_key, actor, delivery, mono_ns, outcome, replay_of, fault
                 FROM ordlab_sink.requests WHERE run = $1 ORDER BY id",
                &[&self.run],
            )
            .await
            .map_err(pg("read ledger"))?;
        rows.iter()
            .map(|r| {
                let actor: String = r.get(4);
                let outcome: String = r.get(7);
                Ok(EffectRecord {
                    request_id: r.get(0),
                    job: r.get(1),
                    effect: r.get(2),
                    idem_key: r.get(3),
                    actor: Actor::try_from(actor.clone()).map_err(|_| SinkError::Config(actor))?,
                    delivery: r.get::<_, Option<i32>>(5).map(|d| d as u32),
                    mono_ns: r.get::<_, i64>(6) as u64,
                    outcome: match outcome.as_str() {
                        "applied" => EffectOutcome::Applied,
                        "replayed" => EffectOutcome::Replayed,
                        _ => EffectOutcome::Refused,
                    },
                    replay_of: r.get(8),
                    fault: r.get::<_, Option<String>>(9).and_then(|f| serde_json::from_str(&f).ok()),
                })
            })
            .collect()
    }
}

/// The ledger as timeline events (actor `sink`), at each request's send time: the effect, and
/// the partner's fault that hit it.
pub fn timeline_events(records: &[EffectRecord]) -> Vec<RawEvent> {
    use crate::timeline::vocabulary::Vocabulary as _;
    let mut out = Vec::new();
    let mut hits: Vec<&Fault> = Vec::new();
    for r in records {
        out.push(RawEvent {
            mono_ns: r.mono_ns,
            actor: Actor::Sink,
            kind: EventKind::Effect {
                job: r.job.clone(),
                effect: r.effect.clone(),
                requested_by: r.actor,
                idem_key: r.idem_key.clone(),
                outcome: r.outcome,
            },
        });
        if let Some(fault) = &r.fault {
            hits.push(fault);
            let occurrence = hits.iter().filter(|f| **f == fault).count() as u32;
            let kind = crate::fault::FaultEvent::FaultFired { fault: fault.clone(), occurrence }.event();
            out.push(RawEvent { mono_ns: r.mono_ns, actor: Actor::Sink, kind });
        }
    }
    out
}
