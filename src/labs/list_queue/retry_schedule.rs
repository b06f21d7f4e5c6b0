//! Retry schedule: did each retry of a failed job start no earlier than its backoff said, how
//! late did it start, and how many attempts did the job get? Pure: attempt times per job (from
//! the timeline) and the backoff policy.

use crate::list_queue::Backoff;
use serde::{Deserialize, Serialize};

/// One attempt of one job, on the run's clock (ms): when it was taken, when (if) it failed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub started_ms: f64,
    pub failed_ms: Option<f64>,
}

/// How one job's attempts compare with the schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSchedule {
    pub attempts: u32,
    /// Per retry: (the backoff's delay, the gap from the failure to the next start), ms.
    pub gaps: Vec<(f64, f64)>,
    /// Retries that started before their delay had passed (beyond `tolerance_ms`).
    pub early: u32,
    pub max_late_ms: f64,
}

/// `delay_after(k)` is the backoff's delay after failed attempt k (already time-scaled);
/// `tolerance_ms` covers the two clocks' rounding (server TIME in ms, the run's in µs).
pub fn job_schedule(attempts: &[Attempt], delay_after: impl Fn(u32) -> f64, tolerance_ms: f64) -> JobSchedule {
    let mut out = JobSchedule { attempts: attempts.len() as u32, ..JobSchedule::default() };
    for (k, pair) in attempts.windows(2).enumerate() {
        let Some(failed) = pair[0].failed_ms else { continue };
        let due = delay_after(k as u32 + 1);
        let gap = pair[1].started_ms - failed;
        if gap + tolerance_ms < due {
            out.early += 1;
        }
        out.max_late_ms = out.max_late_ms.max(gap - due);
        out.gaps.push((due, gap));
    }
    out
}

/// The backoff's delays, scaled: the function `job_schedule` wants.
pub fn scaled_delays(b: Backoff, scale: f64) -> impl Fn(u32) -> f64 {
    move |k| b.delay_after(k) * scale
}

#[cfg(test)]
mod tests {
    use crate::labs::list_queue::retry_schedule::*;

    fn delays() -> impl Fn(u32) -> f64 {
        scaled_delays(Backoff { base_ms: 200.0, factor: 2.0, max_attempts: 4 }, 1.0)
    }

    #[test]
    fn on_time_retries_are_not_early_and_lateness_is_measured() {
        let a = [
            Attempt { started_ms: 0.0, failed_ms: Some(20.0) },
            Attempt { started_ms: 235.0, failed_ms: Some(255.0) },
            Attempt { started_ms: 660.0, failed_ms: None },
        ];
        let s = job_schedule(&a, delays(), 2.0);
        assert_eq!((s.attempts, s.early), (3, 0));
        assert_eq!(s.gaps, vec![(200.0, 215.0), (400.0, 405.0)]);
        assert_eq!(s.max_late_ms, 15.0);
    }

    #[test]
    fn an_immediate_retry_is_early() {
        let a = [Attempt { started_ms: 0.0, failed_ms: Some(20.0) }, Attempt { started_ms: 21.0, failed_ms: None }];
        assert_eq!(job_schedule(&a, delays(), 2.0).early, 1);
    }

    #[test]
    fn the_scale_shrinks_every_delay() {
        let half = scaled_delays(Backoff { base_ms: 200.0, factor: 2.0, max_attempts: 4 }, 0.5);
        assert_eq!((half(1), half(3)), (100.0, 400.0));
    }
}
