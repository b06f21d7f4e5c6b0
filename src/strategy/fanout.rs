//! S3, fan-out: one reader per process hands each entry to an in-memory queue per order, and
//! a worker per order applies its queue in order with a plain write. The reader itself is a
//! role ([`crate::roles::fanout`]); this file is the strategy's name and words.

use super::{plain, Delivery, Handler, StrategyKind};
use crate::error::Error;
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = "fanout"` (no options).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fanout {}

impl StrategyKind for Fanout {
    fn describe(&self, lang: Lang) -> String {
        pick(
            lang,
            "fan-out: one reader, an in-memory queue and a worker per order, plain UPDATE",
            "fan-out: một reader, mỗi đơn một hàng đợi trong bộ nhớ và một worker, UPDATE thường",
        )
        .to_string()
    }

    fn short(&self) -> String {
        "fan-out (S3: worker per order)".into()
    }

    /// The worker of an order applies its queue in order, with a plain write.
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        plain::write(h, d).await
    }
}
