//! Publish failures: the first attempts of an event fail (a simulated network blip: the XADD
//! is never sent) and the producer retries with backoff. A retried event can land in the log
//! after a newer one, so the log itself is then out of order.

use super::EventSpec;

/// When each publish attempt of an event happens and whether it fails.
///
/// Attempt 1 is at the event's `at_ms`; attempts 1..=`fail_attempts` fail. Retry k is due
/// `retry_ms × backoff^(k-1)` after the first attempt, so with 500 ms and ×2 the retries fall
/// at 500 ms and 1000 ms, as in seed 001.
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

    /// When the attempt that finally succeeds starts, in unscaled ms after the first one.
    pub fn last_offset_ms(&self) -> f64 {
        if self.0.fail_attempts == 0 {
            0.0
        } else {
            self.retry_offset_ms(self.0.fail_attempts + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fail_attempts: u32) -> EventSpec {
        EventSpec { fail_attempts, ..EventSpec::new(42, "created", 1) }
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
        assert_eq!(sched.last_offset_ms(), 1000.0);
    }

    #[test]
    fn no_faults_means_first_attempt_succeeds() {
        assert!(!PublishSchedule(&spec(0)).fails(1));
        assert_eq!(PublishSchedule(&spec(0)).last_offset_ms(), 0.0);
    }
}
