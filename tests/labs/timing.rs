use crate::support::{local, ordlab_exe};
use ordlab::runner::RunOptions;
use ordlab::timing::{Breakdown, Span, Step};

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
    let runs = own_and_wall_of_runs(&spans);
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

/// A list run at rest ends then, not after `observe_ms` (1500 ms, 3 s at time scale 2) of
/// quiet: list-crash's brpop once its only worker is blocked in BRPOP again with the queue
/// empty (the killed worker's job is lost), lrem-identical once W2's LREM + ZREM took the only
/// lease and W1 was killed (no lease left for the reaper). Both verdicts stay wrong.
#[tokio::test]
async fn a_list_run_at_rest_ends_without_waiting_for_quiet() {
    let mut lab = ordlab::catalog::find("list-crash").expect("built-in lab");
    lab.variants.retain(|v| v.id == "brpop" || v.id == "lrem-identical");
    let mut opts = RunOptions::new(2.0, 7);
    opts.runs = Some(1);
    let (reports, spans) =
        ordlab::schedule::run_labs_timed(std::slice::from_ref(&lab), &opts, &local(), 1, ordlab_exe(), &mut |_| {})
            .await
            .expect("lab runs");
    assert!(reports[0].variants.iter().all(|v| v.wrong == 1), "the job is lost, or stuck without a lease");
    let runs = own_and_wall_of_runs(&spans);
    assert_eq!(runs.len(), 2, "{spans:?}");
    // Set-up (workers, reaper) and teardown take ~0.2 s; the quiet window 3 s.
    for (own, wall) in runs {
        assert!(wall - own < 1500.0, "{:.0} ms beyond the run's own {own:.0} ms", wall - own);
    }
}

/// Each run's (own span, wall time) in ms, in the order run.
fn own_and_wall_of_runs(spans: &[Span]) -> Vec<(f64, f64)> {
    spans
        .iter()
        .filter_map(|s| match s.step {
            Step::Run { own_ms } => Some((own_ms, s.ms)),
            _ => None,
        })
        .collect()
}
