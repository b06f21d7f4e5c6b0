use crate::support::{local, ordlab_exe};
use ordlab::runner::RunOptions;
use ordlab::timing::{Breakdown, Step};

/// A batch of two runs of baseline records a span for each: both runs, with their own spans
/// (the race: the slow created's 200 ms at time scale 0.25) inside their wall time, the
/// variant around them, the servers' start and stop and the runner's connect.
#[tokio::test]
async fn a_batch_records_where_its_time_goes() {
    let lab = ordlab::catalog::find("baseline").expect("built-in lab");
    let mut opts = RunOptions::new(0.25, 7);
    opts.runs = Some(2);
    let (reports, spans) =
        ordlab::schedule::run_labs_timed(std::slice::from_ref(&lab), &opts, &local(), 1, ordlab_exe(), &mut |_| {})
            .await
            .expect("lab runs");
    assert_eq!(reports.len(), 1);
    let count = |f: fn(&Step) -> bool| spans.iter().filter(|s| f(&s.step)).count();
    assert_eq!(count(|s| matches!(s, Step::ServerStart)), 1);
    assert_eq!(count(|s| matches!(s, Step::ServerStop)), 1);
    assert_eq!(count(|s| matches!(s, Step::Connect)), 1);
    assert_eq!(count(|s| matches!(s, Step::Variant)), 1);
    let runs: Vec<(f64, f64)> = spans
        .iter()
        .filter_map(|s| match s.step {
            Step::Run { own_ms } => Some((own_ms, s.ms)),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 2, "{spans:?}");
    for (own, wall) in &runs {
        // created's work alone is 800 ms × 0.25 on the race's own span.
        assert!(*own >= 200.0 && own < wall, "own {own} ms, wall {wall} ms");
    }
    let b = Breakdown::of(&spans);
    let baseline = &b.labs["baseline"];
    assert_eq!(baseline.runs, 2);
    assert!(baseline.setup_ms() > 0.0 && b.server_start_ms > 0.0 && b.server_stop_ms > 0.0, "{b:?}");
}
