//! S3, fan-out: one reader per process hands each entry to an in-memory queue per order, and
//! a fixed number of workers apply the queues, one entry of an order at a time, in order, with
//! a plain write. The reader itself is a role ([`crate::roles::fanout`]); this file is the
//! strategy's options and words.

use super::{plain, Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::error::Error;
use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// `strategy = { kind = "fanout", workers = 4 }`: `workers` handlers at most run at once
/// (the handler budget, as `consumers` is for the other strategies); the reader keeps at most
/// `max_in_flight` entries read and not yet acknowledged (default: 16 per worker, at least
/// 100) and reads `read_count` entries per XREADGROUP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fanout {
    #[serde(default = "Fanout::default_workers")]
    pub workers: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    #[serde(default = "Fanout::default_read_count")]
    pub read_count: u32,
}

impl Default for Fanout {
    fn default() -> Self {
        Fanout { workers: Fanout::default_workers(), max_in_flight: None, read_count: Fanout::default_read_count() }
    }
}

impl Fanout {
    fn default_workers() -> u32 {
        4
    }

    fn default_read_count() -> u32 {
        10
    }

    /// Entries the reader may hold read and not yet acknowledged before it stops reading.
    pub fn in_flight_limit(&self) -> usize {
        self.max_in_flight.map_or((16 * self.workers).max(100), |m| m.max(1)) as usize
    }
}

impl Described for Fanout {
    fn describe(&self, lang: Lang) -> String {
        let w = self.workers;
        crate::tr!(
            lang,
            "fan-out: one reader, a queue per order, {w} workers (one entry of an order at a time), plain UPDATE",
            "fan-out: một reader, mỗi đơn một hàng đợi, {w} worker (mỗi đơn một entry một lúc), UPDATE thường"
        )
    }

    fn short(&self) -> String {
        format!("fan-out (S3: one reader, {} workers)", self.workers)
    }
}

impl StrategyKind for Fanout {
    /// A worker applies one entry of an order with a plain write.
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        plain::write(h, d).await
    }

    fn check(&self) -> Result<(), String> {
        if self.workers == 0 || self.read_count == 0 {
            return Err("strategy fanout: use workers ≥ 1 and read_count ≥ 1".into());
        }
        Ok(())
    }

    fn reads_through_fanout(&self) -> bool {
        true
    }

    fn handlers_per_consumer(&self) -> u32 {
        self.workers
    }
}
