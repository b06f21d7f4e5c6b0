//! The generated workload both load kinds run: many orders, a few of them slow, the same for
//! every strategy.

use crate::orders::EventSpec;
use serde::{Deserialize, Serialize};

/// `generate = { … }`: `orders` orders, each with one event per type in `types` (versions
/// 1, 2, …), published interleaved order by order as fast as one producer can. A
/// `slow_share` of the orders have a slow first event (`slow_ms`, an external call); every
/// other event costs `fast_ms`. Which orders are slow is fixed by their id (a hash), so every
/// strategy sees the same workload.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateSpec {
    pub orders: u32,
    #[serde(default = "GenerateSpec::default_types")]
    pub types: Vec<String>,
    pub slow_share: f64,
    pub slow_ms: f64,
    pub fast_ms: f64,
}

impl GenerateSpec {
    pub(crate) fn default_types() -> Vec<String> {
        vec!["created".into(), "paid".into()]
    }

    /// Is `order`'s first event slow? A multiplicative hash spreads the slow orders evenly.
    pub fn is_slow(&self, order: i64) -> bool {
        let h = (order as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (h % 10_000) < (self.slow_share * 10_000.0) as u64
    }

    pub fn events(&self) -> Vec<EventSpec> {
        let mut out = Vec::new();
        for order in 1..=self.orders as i64 {
            for (i, t) in self.types.iter().enumerate() {
                let cost = if i == 0 && self.is_slow(order) { self.slow_ms } else { self.fast_ms };
                out.push(EventSpec { cost_ms: Some(cost), ..EventSpec::new(order, t, i as i64 + 1) });
            }
        }
        out
    }
}
