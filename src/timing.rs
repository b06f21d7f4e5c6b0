//! Where a batch of labs spends its wall time: the runner and the scheduler record a span for
//! each step (servers started, a runner connected, each run, the servers stopped), always,
//! at the cost of one clock read per step. A run's span is split into its own span (from
//! its first event to its last, the race itself) and the rest (its set-up and teardown:
//! processes started, streams created and filled, keys deleted), which is what a faster
//! harness can cut.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

/// What a span timed.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// One job slot's servers started (shared by every lab the slot runs).
    ServerStart,
    /// A runner connected to its slot's servers and created the shared tables.
    Connect,
    /// One run of a variant: its wall time, of which `own_ms` lies between its first and
    /// its last event.
    Run { own_ms: f64 },
    /// A variant's runs and what the runner did around them (the variant's report).
    Variant,
    /// One job slot's servers stopped.
    ServerStop,
}

/// One timed step: of which lab (empty for a slot's servers), how long, in ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub lab: String,
    pub step: Step,
    pub ms: f64,
}

/// Elapsed ms since `start`.
pub fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// A run's own span in ms: from its first event to its last (0 without events).
pub fn own_span_ms(events: &[crate::timeline::Event]) -> f64 {
    let lo = events.iter().map(|e| e.t_us).min();
    let hi = events.iter().map(|e| e.t_us).max();
    match (lo, hi) {
        (Some(lo), Some(hi)) => (hi - lo) as f64 / 1000.0,
        _ => 0.0,
    }
}

/// The spans of one lab, added up.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LabTime {
    pub runs: usize,
    /// Σ of the runs' wall times.
    pub run_ms: f64,
    /// Σ of the runs' own spans.
    pub own_ms: f64,
    /// Σ of the variants' spans beyond their runs.
    pub around_runs_ms: f64,
}

impl LabTime {
    /// What the runs spent outside their own spans: set-up and teardown per run.
    pub fn setup_ms(&self) -> f64 {
        self.run_ms - self.own_ms
    }
}

/// Every span of a batch, added up per lab and for the servers.
#[derive(Debug, Default, PartialEq)]
pub struct Breakdown {
    pub labs: BTreeMap<String, LabTime>,
    pub server_start_ms: f64,
    pub connect_ms: f64,
    pub server_stop_ms: f64,
}

impl Breakdown {
    pub fn of(spans: &[Span]) -> Breakdown {
        let mut b = Breakdown::default();
        let mut variant_ms: BTreeMap<String, f64> = BTreeMap::new();
        for s in spans {
            match s.step {
                Step::ServerStart => b.server_start_ms += s.ms,
                Step::Connect => b.connect_ms += s.ms,
                Step::ServerStop => b.server_stop_ms += s.ms,
                Step::Variant => *variant_ms.entry(s.lab.clone()).or_default() += s.ms,
                Step::Run { own_ms } => {
                    let lab = b.labs.entry(s.lab.clone()).or_default();
                    lab.runs += 1;
                    lab.run_ms += s.ms;
                    lab.own_ms += own_ms;
                }
            }
        }
        for (id, ms) in variant_ms {
            let lab = b.labs.entry(id).or_default();
            lab.around_runs_ms = (ms - lab.run_ms).max(0.0);
        }
        b
    }

    /// Σ of every run's own span.
    pub fn own_ms(&self) -> f64 {
        self.labs.values().map(|l| l.own_ms).sum()
    }

    /// One line for the end of a batch: its wall time against the sum of its runs' own spans.
    pub fn summary_line(&self, wall_ms: f64, jobs: usize) -> String {
        let own = self.own_ms();
        format!(
            "{} labs in {:.1} s (--jobs {jobs}) · Σ runs' own spans {:.1} s · wall/spans {:.2}",
            self.labs.len(),
            wall_ms / 1000.0,
            own / 1000.0,
            wall_ms / own.max(1.0)
        )
    }

    /// The breakdown as text: one line per lab, then the servers, then the batch's wall
    /// time against the sum of its runs' own spans.
    pub fn render(&self, wall_ms: f64) -> String {
        let mut out = String::new();
        let s = |ms: f64| format!("{:.1}", ms / 1000.0);
        let _ = writeln!(
            out,
            "  {:<18} {:>5} {:>10} {:>12} {:>14} {:>12}",
            "lab", "runs", "runs s", "own spans s", "set-up/down s", "around s"
        );
        for (id, l) in &self.labs {
            let _ = writeln!(
                out,
                "  {:<18} {:>5} {:>10} {:>12} {:>14} {:>12}",
                id,
                l.runs,
                s(l.run_ms),
                s(l.own_ms),
                s(l.setup_ms()),
                s(l.around_runs_ms)
            );
        }
        let (run_ms, setup_ms): (f64, f64) =
            self.labs.values().fold((0.0, 0.0), |(r, u), l| (r + l.run_ms + l.around_runs_ms, u + l.setup_ms()));
        let _ = writeln!(
            out,
            "  servers: start {} s, runners connect {} s, stop {} s (every slot together)",
            s(self.server_start_ms),
            s(self.connect_ms),
            s(self.server_stop_ms)
        );
        let _ = writeln!(
            out,
            "  wall {} s · Σ runs' own spans {} s · Σ per-run set-up/teardown {} s · Σ slot busy {} s",
            s(wall_ms),
            s(self.own_ms()),
            s(setup_ms),
            s(run_ms)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Actor, Event, EventKind};

    fn span(lab: &str, step: Step, ms: f64) -> Span {
        Span { lab: lab.into(), step, ms }
    }

    #[test]
    fn own_span_is_first_to_last_event() {
        let ev = |t_us| Event { t_us, actor: Actor::Producer, kind: EventKind::Ready };
        assert_eq!(own_span_ms(&[ev(-500), ev(0), ev(850_000)]), 850.5);
        assert_eq!(own_span_ms(&[]), 0.0);
    }

    #[test]
    fn spans_add_up_per_lab_and_for_the_servers() {
        let spans = vec![
            span("", Step::ServerStart, 900.0),
            span("", Step::ServerStart, 1100.0),
            span("", Step::Connect, 40.0),
            span("a", Step::Run { own_ms: 850.0 }, 1000.0),
            span("a", Step::Run { own_ms: 800.0 }, 1000.0),
            span("a", Step::Variant, 2100.0),
            span("b", Step::Run { own_ms: 100.0 }, 400.0),
            span("b", Step::Variant, 400.0),
            span("", Step::ServerStop, 300.0),
        ];
        let b = Breakdown::of(&spans);
        assert_eq!((b.server_start_ms, b.connect_ms, b.server_stop_ms), (2000.0, 40.0, 300.0));
        let a = &b.labs["a"];
        assert_eq!((a.runs, a.run_ms, a.own_ms, a.setup_ms(), a.around_runs_ms), (2, 2000.0, 1650.0, 350.0, 100.0));
        assert_eq!(b.labs["b"].setup_ms(), 300.0);
        assert_eq!(b.own_ms(), 1750.0);
        let text = b.render(5000.0);
        assert!(text.contains("wall 5.0 s · Σ runs' own spans 1.8 s · Σ per-run set-up/teardown 0.7 s"), "{text}");
        assert_eq!(b.summary_line(3500.0, 2), "2 labs in 3.5 s (--jobs 2) · Σ runs' own spans 1.8 s · wall/spans 2.00");
    }
}
