//! Small statistics the reports need: a quantile by nearest rank and the Wilson score
//! interval for a count of wrong runs. Pure functions, no I/O.

/// The q-quantile (0..=1) by nearest rank; None when empty.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Wilson score interval (95 %) for k successes in n trials, as fractions.
pub fn wilson_95(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(super::quantile(&v, 0.5), Some(50.0));
        assert_eq!(super::quantile(&v, 0.99), Some(99.0));
        assert_eq!(super::quantile(&[], 0.5), None);
    }

    #[test]
    fn wilson_interval_matches_known_values() {
        let (lo, hi) = super::wilson_95(4, 20);
        assert!((lo - 0.0807).abs() < 1e-3 && (hi - 0.4160).abs() < 1e-3, "{lo} {hi}");
        let (lo, hi) = super::wilson_95(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
    }
}
