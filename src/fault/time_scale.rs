//! `--time-scale`: one factor that multiplies every duration of a lab (handler work, publish
//! times, retries, lock TTLs and retry intervals). Verdicts must not depend on it; tests run
//! labs faster with it, results/ run them at 1.

use std::time::Duration;

/// A server timer under the explorer: about 115 days, so only a timer step ends it.
pub const NEVER_BY_THE_CLOCK_MS: u64 = 10_000_000_000;

/// Multiplies every duration of a lab.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimeScale(pub f64);

impl TimeScale {
    pub const REAL: TimeScale = TimeScale(1.0);

    pub fn duration(self, ms: f64) -> Duration {
        Duration::from_secs_f64((ms * self.0).max(0.0) / 1000.0)
    }

    /// Scaled milliseconds, rounded up so a positive TTL never becomes 0. At time scale 0
    /// (`explore`: work takes no wall time, the explorer orders the steps) a TTL keeps its full
    /// length, so it never runs out by the clock in the middle of a schedule.
    pub fn ms_ceil(self, ms: u64) -> u64 {
        if self.0 == 0.0 {
            return ms;
        }
        ((ms as f64) * self.0).ceil().max(1.0) as u64
    }

    /// A server timer's length (a lock's TTL, a claimer's min-idle) in milliseconds: scaled as
    /// [`TimeScale::ms_ceil`], but at time scale 0 (`explore`) so long that it never runs out
    /// by the clock: the explorer makes it run out as a step (`crate::explore::timer`).
    pub fn timer_ms(self, ms: u64) -> u64 {
        if self.0 == 0.0 {
            return NEVER_BY_THE_CLOCK_MS;
        }
        self.ms_ceil(ms)
    }

    pub async fn sleep(self, ms: f64) {
        if ms > 0.0 {
            tokio::time::sleep(self.duration(ms)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_scale_shrinks_durations_but_keeps_ttls_positive() {
        let s = TimeScale(0.25);
        assert_eq!(s.duration(800.0), Duration::from_millis(200));
        assert_eq!(s.ms_ceil(5000), 1250);
        assert_eq!(TimeScale(0.0001).ms_ceil(20), 1);
        assert_eq!(TimeScale(0.0).ms_ceil(5000), 5000);
        assert_eq!(
            TimeScale(0.0).timer_ms(500),
            NEVER_BY_THE_CLOCK_MS,
            "under exploration a TTL runs out only as a step"
        );
        assert_eq!(TimeScale(0.5).timer_ms(500), 250);
        assert_eq!(TimeScale(0.0).duration(800.0), Duration::ZERO);
    }
}
