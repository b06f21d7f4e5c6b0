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

/// A machine whose processes pass each job back and forth (workers and the server, a round
/// trip at a time) is full at ≥ 80 %: the rest is time between a process being woken and
/// running. On this project's 2-core machine 4 zero-cost workers and Redis measured 85–92 %
/// busy, 2 workers 74–81 %, and doubling the workers from 2 added at most a quarter.
pub const CONTENDED_MACHINE_PCT: f64 = 80.0;

pub fn classify(cpu: &CpuReading) -> Limit {
    classify_at(cpu, MACHINE_SATURATED_PCT)
}

/// [`classify`] with the machine full at `machine_full_pct`.
pub fn classify_at(cpu: &CpuReading, machine_full_pct: f64) -> Limit {
    if cpu.reader_pct >= PROCESS_SATURATED_PCT {
        Limit::Reader
    } else if cpu.redis_pct.is_some_and(|p| p >= PROCESS_SATURATED_PCT) {
        Limit::Redis
    } else if cpu.machine_pct >= machine_full_pct {
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
        assert_eq!(classify(&cpu(0.0, Some(60.0), 91.0)), Limit::Handlers);
        assert_eq!(classify_at(&cpu(0.0, Some(60.0), 91.0), CONTENDED_MACHINE_PCT), Limit::Machine);
    }
}
