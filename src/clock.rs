//! One clock for every process of a run: Linux's `CLOCK_MONOTONIC`, which all processes on the
//! machine share. Each process stamps its events with raw monotonic nanoseconds; the runner
//! subtracts the producer's start so every timeline line reads `t=<ms>` from t=0.

/// Nanoseconds on the machine-wide monotonic clock (not comparable across machines or boots).
pub fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available on Linux");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_never_goes_back() {
        let a = super::now_ns();
        let b = super::now_ns();
        assert!(b >= a);
    }
}
