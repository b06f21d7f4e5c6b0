//! What limited a throughput measurement, from CPU readings taken over its window: the
//! reader process (one core), the Redis server (one core), the whole machine, or — when none
//! of them is saturated — the handlers themselves (throughput follows workers / handler time).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Handlers,
    Reader,
    Redis,
    Machine,
}

/// CPU use over a measurement window, in percent (a process: of one core; the machine: of all).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuReading {
    pub reader_pct: f64,
    /// None where the backend does not expose the server's process (docker, external).
    pub redis_pct: Option<f64>,
    pub machine_pct: f64,
}

/// A process at ≥ 90 % of a core is saturated (the rest is scheduling noise); the machine at
/// ≥ 95 % of all cores is.
pub const PROCESS_SATURATED_PCT: f64 = 90.0;
pub const MACHINE_SATURATED_PCT: f64 = 95.0;

pub fn classify(cpu: &CpuReading) -> Limit {
    if cpu.reader_pct >= PROCESS_SATURATED_PCT {
        Limit::Reader
    } else if cpu.redis_pct.is_some_and(|p| p >= PROCESS_SATURATED_PCT) {
        Limit::Redis
    } else if cpu.machine_pct >= MACHINE_SATURATED_PCT {
        Limit::Machine
    } else {
        Limit::Handlers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(reader: f64, redis: Option<f64>, machine: f64) -> CpuReading {
        CpuReading { reader_pct: reader, redis_pct: redis, machine_pct: machine }
    }

    #[test]
    fn the_first_saturated_party_is_the_limit() {
        assert_eq!(classify(&cpu(97.0, Some(99.0), 100.0)), Limit::Reader);
        assert_eq!(classify(&cpu(40.0, Some(93.0), 100.0)), Limit::Redis);
        assert_eq!(classify(&cpu(40.0, None, 100.0)), Limit::Machine);
        assert_eq!(classify(&cpu(8.0, Some(5.0), 30.0)), Limit::Handlers);
    }
}
