//! How a consumer applies one event: do the handler's work, then write the row, possibly
//! guarded by a lock or made conditional on a version. One file per strategy below.

pub mod cas;
pub mod idempotent;
pub mod lock;
pub mod plain;
pub mod reorder_buffer;
pub mod state;
pub mod upsert;

use crate::error::Error;
use crate::fault::TimeScale;
use crate::scenario::Strategy;
use crate::timeline::{Actor, EventKind, Job, Sink};
use rand_chacha::ChaCha8Rng;
use redis::aio::MultiplexedConnection;

/// What a strategy may use while applying an event.
pub struct Handler<'a> {
    pub actor: Actor,
    pub redis: &'a mut MultiplexedConnection,
    pub pg: &'a tokio_postgres::Client,
    pub sink: &'a dyn Sink,
    pub scale: TimeScale,
    pub rng: &'a mut ChaCha8Rng,
    /// Prefix of every Redis key of this run (isolation); reports show keys without it.
    pub key_prefix: &'a str,
    /// The server has `DELEX key IFEQ token` (Redis ≥ 8.4).
    pub has_delex: bool,
}

/// One entry as the consumer received it.
pub struct Delivery<'a> {
    pub entry_id: &'a str,
    pub job: &'a Job,
    /// Injected handler work in unscaled ms.
    pub cost_ms: f64,
    /// The state document the event carries, if the lab sends one.
    pub state: Option<&'a str>,
}

impl Handler<'_> {
    fn emit(&self, kind: EventKind) {
        self.sink.emit(self.actor, kind);
    }

    /// Record a write of `rows` rows; `version` is shown for conditional writes.
    fn wrote(&self, d: &Delivery<'_>, version: Option<i64>, rows: u64) {
        self.emit(EventKind::Wrote {
            entry_id: d.entry_id.to_string(),
            order: d.job.order,
            status: d.job.event_type.clone(),
            version,
            rows,
        });
    }

    /// The handler's own work: an injected sleep standing in for an API call or a DB write.
    async fn work(&self, d: &Delivery<'_>) {
        self.emit(EventKind::WorkStarted { entry_id: d.entry_id.to_string(), ms: d.cost_ms * self.scale.0 });
        self.scale.sleep(d.cost_ms).await;
    }
}

/// Apply one delivery with `strategy`.
pub async fn apply(h: &mut Handler<'_>, strategy: &Strategy, d: &Delivery<'_>) -> Result<(), Error> {
    match strategy {
        Strategy::Plain => {
            h.work(d).await;
            plain::write(h, d).await
        }
        Strategy::Cas { version } => {
            h.work(d).await;
            cas::write(h, d, *version).await
        }
        Strategy::Lock(spec) => {
            let held = lock::acquire(h, spec, d.job.order).await?;
            h.work(d).await;
            plain::write(h, d).await?;
            lock::release(h, held).await
        }
        Strategy::Upsert => {
            h.work(d).await;
            upsert::conditional(h, d).await
        }
        Strategy::UpdateThenInsert { gap_ms } => {
            h.work(d).await;
            upsert::update_then_insert(h, d, *gap_ms).await
        }
        Strategy::State => {
            h.work(d).await;
            state::keep_newest(h, d).await
        }
        // The buffer decides when; once released, an event is applied with a plain write.
        Strategy::ReorderBuffer { .. } => {
            h.work(d).await;
            plain::write(h, d).await
        }
        Strategy::Idempotent => {
            h.work(d).await;
            idempotent::write(h, d).await
        }
        // The fan-out reader keeps each order's entries in order ([`crate::fanout`]); its
        // worker applies them with a plain write.
        Strategy::Fanout => {
            h.work(d).await;
            plain::write(h, d).await
        }
    }
}
