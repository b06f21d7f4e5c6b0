//! Faults injected on purpose: handler work (a sleep standing in for an API call), publish
//! failures with their retry schedule, and the time scale that stretches or shrinks them all.
//! Each fault is data from the scenario; a scenario without faults gets the no-op version.

use crate::scenario::EventSpec;
use std::time::Duration;

/// Multiplies every duration of a lab (`--time-scale`): handler work, publish times, retries,
/// lock TTLs and retry intervals. Verdicts must not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimeScale(pub f64);

impl TimeScale {
    pub const REAL: TimeScale = TimeScale(1.0);

    pub fn duration(self, ms: f64) -> Duration {
        Duration::from_secs_f64((ms * self.0).max(0.0) / 1000.0)
    }

    /// Scaled milliseconds, rounded up so a positive TTL never becomes 0.
    pub fn ms_ceil(self, ms: u64) -> u64 {
        ((ms as f64) * self.0).ceil().max(1.0) as u64
    }

    pub async fn sleep(self, ms: f64) {
        if ms > 0.0 {
            tokio::time::sleep(self.duration(ms)).await;
        }
    }
}

/// When each publish attempt of an event happens and whether it fails.
///
/// Attempt 1 is at the event's `at_ms`; attempts 1..=`fail_attempts` fail (a simulated network
/// blip: the XADD is never sent). Retry k is due `retry_ms × backoff^(k-1)` after the first
/// attempt, so with 500 ms and ×2 the retries fall at 500 ms and 1000 ms, as in seed 001.
pub struct PublishSchedule<'a>(pub &'a EventSpec);

impl PublishSchedule<'_> {
    pub fn fails(&self, attempt: u32) -> bool {
        attempt <= self.0.fail_attempts
    }

    /// Offset of `attempt` (≥ 2) from the first attempt, in unscaled ms.
    pub fn retry_offset_ms(&self, attempt: u32) -> f64 {
        debug_assert!(attempt >= 2);
        self.0.retry_ms * self.0.backoff.powi(attempt as i32 - 2)
    }

    /// Wait between attempt `attempt` (which just failed) and the next one, in unscaled ms.
    pub fn wait_after_ms(&self, attempt: u32) -> f64 {
        let prev = if attempt == 1 { 0.0 } else { self.retry_offset_ms(attempt) };
        self.retry_offset_ms(attempt + 1) - prev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fail_attempts: u32) -> EventSpec {
        EventSpec {
            order: 42,
            event_type: "created".into(),
            version: 1,
            at_ms: Some(0.0),
            fail_attempts,
            retry_ms: 500.0,
            backoff: 2.0,
            cost_ms: None,
        }
    }

    #[test]
    fn seed_schedule_retries_at_500_and_1000() {
        let s = spec(2);
        let sched = PublishSchedule(&s);
        assert!(sched.fails(1) && sched.fails(2) && !sched.fails(3));
        assert_eq!(sched.retry_offset_ms(2), 500.0);
        assert_eq!(sched.retry_offset_ms(3), 1000.0);
        assert_eq!(sched.wait_after_ms(1), 500.0);
        assert_eq!(sched.wait_after_ms(2), 500.0);
        assert_eq!(sched.wait_after_ms(3), 1000.0);
    }

    #[test]
    fn no_faults_means_first_attempt_succeeds() {
        assert!(!PublishSchedule(&spec(0)).fails(1));
    }

    #[test]
    fn time_scale_shrinks_durations_but_keeps_ttls_positive() {
        let s = TimeScale(0.25);
        assert_eq!(s.duration(800.0), Duration::from_millis(200));
        assert_eq!(s.ms_ceil(5000), 1250);
        assert_eq!(TimeScale(0.0001).ms_ceil(20), 1);
    }
}
