//! A job's wait as it happened: served after a measured time, or never served and why (its
//! worker died, the lab's patience ran out, the run ended). Pure: read from the timeline. A job
//! never served gets no wait of its own: every output says "never served", with how long it had
//! waited unserved when the lab stopped waiting for it, never a number that reads as its wait.

use crate::timeline::patience;
use crate::labs::{Line, Piece};
use crate::lang::{pick, Lang};
use crate::timeline::{Actor, Event, EventKind};

/// How a job's wait ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Wait {
    /// Taken after this many ms in the queue.
    Served(f64),
    Never(NeverServed),
}

impl Wait {
    /// The measured wait, for a job that was served.
    pub fn served_ms(&self) -> Option<f64> {
        match self {
            Wait::Served(ms) => Some(*ms),
            Wait::Never(_) => None,
        }
    }

    pub fn never(&self) -> Option<&NeverServed> {
        match self {
            Wait::Served(_) => None,
            Wait::Never(n) => Some(n),
        }
    }
}

/// A job that was queued and never taken.
#[derive(Clone, Debug, PartialEq)]
pub struct NeverServed {
    /// How long it had waited, unserved, when the lab stopped waiting for it (ms): a lower
    /// bound on its wait, never its wait.
    pub unserved_ms: f64,
    pub why: Unserved,
}

/// Why the lab stopped waiting for a job.
#[derive(Clone, Debug, PartialEq)]
pub enum Unserved {
    /// The worker died unplanned at `at_us` (`detail`: its exit status and error line).
    Died { actor: Actor, at_us: i64, detail: String },
    /// The lab's patience (ms) ran out.
    Patience { patience_ms: f64 },
    /// The run ended with the job still queued, nothing said why.
    RunEnded,
}

/// How a run ended, as the timeline says: the first unplanned death, the lab giving up, the
/// last event.
#[derive(Clone, Debug, PartialEq)]
pub struct Ending {
    death: Option<(Actor, i64, String)>,
    gave_up: Option<(i64, f64)>,
    last_us: i64,
}

impl Ending {
    pub fn of(events: &[Event]) -> Ending {
        let death = events.iter().find_map(|e| match &e.kind {
            EventKind::Crashed { planned: false, detail, .. } => Some((e.actor, e.t_us, detail.clone())),
            _ => None,
        });
        let gave_up = patience::gave_up(events).map(|(t, e)| {
            let patience::PatienceEvent::GaveUp { patience_ms, .. } = e;
            (t, patience_ms)
        });
        Ending { death, gave_up, last_us: events.iter().map(|e| e.t_us).max().unwrap_or(0) }
    }

    /// A job queued at `queued_us` and never taken: why, and for how long it waited unserved.
    pub fn never_served(&self, queued_us: i64) -> NeverServed {
        let (end_us, why) = match (&self.death, self.gave_up) {
            (Some((actor, at_us, detail)), _) => {
                (*at_us, Unserved::Died { actor: *actor, at_us: *at_us, detail: detail.clone() })
            }
            (None, Some((at_us, patience_ms))) => (at_us, Unserved::Patience { patience_ms }),
            (None, None) => (self.last_us, Unserved::RunEnded),
        };
        NeverServed { unserved_ms: (end_us - queued_us).max(0) as f64 / 1000.0, why }
    }

    /// A job's wait: served after `taken - queued`, or never.
    pub fn wait(&self, queued_us: i64, taken_us: Option<i64>) -> Wait {
        match taken_us {
            Some(t) => Wait::Served((t - queued_us) as f64 / 1000.0),
            None => Wait::Never(self.never_served(queued_us)),
        }
    }
}

impl NeverServed {
    /// `never served: C1 died at t=6869 ms (exit status: 1: TimeoutError …), 5019 ms after it
    /// was queued`; `not served within the lab's patience (12 s)`.
    pub fn words(&self, lang: Lang) -> Line {
        match &self.why {
            Unserved::Patience { .. } => self.why_words(lang),
            _ => Line::text(pick(lang, "never served: ", "không bao giờ được xử lý: ")).and_line(self.why_words(lang)),
        }
    }

    /// Why, without saying it was never served: `C1 died at t=6869 ms (…), 5019 ms after it
    /// was queued`; `not served within the lab's patience (12 s)`.
    pub fn why_words(&self, lang: Lang) -> Line {
        let after = pick(lang, " after it was queued", " sau khi vào hàng đợi");
        let unserved = Piece::Ms(self.unserved_ms.round() as i64);
        match &self.why {
            Unserved::Died { actor, at_us, detail } => {
                Line::text(crate::tr!(lang, "{actor} died at t=", "{actor} chết lúc t="))
                    .and(Piece::Ms(ms_of(*at_us)))
                    .and_text(format!(" ({detail}), "))
                    .and(unserved)
                    .and_text(after)
            }
            Unserved::Patience { patience_ms } => {
                let limit = patience::PatienceEvent::limit_words(*patience_ms);
                Line::text(crate::tr!(
                    lang,
                    "not served within the lab's patience ({limit})",
                    "không được xử lý trong thời gian chờ của lab ({limit})"
                ))
            }
            Unserved::RunEnded => {
                Line::text(pick(lang, "the run ended ", "lần chạy kết thúc ")).and(unserved).and_text(after)
            }
        }
    }

    /// The same in a verdict's reason (English).
    pub fn reason(&self) -> String {
        let unserved = self.unserved_ms.round();
        match &self.why {
            Unserved::Died { actor, at_us, .. } => {
                format!("never served ({actor} died at t={} ms, {unserved:.0} ms after it was queued)", ms_of(*at_us))
            }
            Unserved::Patience { patience_ms } => {
                let limit = patience::PatienceEvent::limit_words(*patience_ms);
                format!("not served within the lab's patience ({limit})")
            }
            Unserved::RunEnded => format!("never served (the run ended {unserved:.0} ms after it was queued)"),
        }
    }

    /// A short label for a chart: `never served (C1 died)`.
    pub fn label(&self, lang: Lang) -> String {
        match &self.why {
            Unserved::Died { actor, .. } => {
                crate::tr!(lang, "never served ({actor} died)", "không được xử lý ({actor} chết)")
            }
            Unserved::Patience { .. } => pick(lang, "not served in time", "không kịp xử lý").to_string(),
            Unserved::RunEnded => pick(lang, "never served", "không được xử lý").to_string(),
        }
    }
}

/// Whole ms of a time in µs, rounded as the timeline prints it.
fn ms_of(us: i64) -> i64 {
    (us as f64 / 1000.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::vocabulary::Vocabulary as _;

    fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us: t_ms * 1000, actor, kind }
    }

    #[test]
    fn a_job_never_taken_says_why_and_has_no_wait() {
        let died = EventKind::died("exit status: 1: TimeoutError", vec!["TimeoutError".into()]);
        let events = [ev(1000, Actor::Runner, EventKind::Ready), ev(6869, Actor::Consumer(1), died)];
        let end = Ending::of(&events);
        assert_eq!(end.wait(1_000_000, Some(1_500_000)), Wait::Served(500.0));
        let never = end.wait(1_850_000, None);
        assert_eq!(never.served_ms(), None);
        let n = never.never().unwrap();
        assert_eq!(n.unserved_ms, 5019.0);
        assert_eq!(n.reason(), "never served (C1 died at t=6869 ms, 5019 ms after it was queued)");
        let text = crate::timeline::vocabulary::Redactor::NONE.line(&n.words(Lang::En));
        assert_eq!(
            text,
            "never served: C1 died at t=6869 ms (exit status: 1: TimeoutError), 5019 ms after it was queued"
        );
        // The lab's patience ran out first.
        let gave_up = patience::PatienceEvent::GaveUp { patience_ms: 12_000.0, waiting_for: vec!["c".into()] };
        let end = Ending::of(&[ev(13_850, Actor::Runner, gave_up.event())]);
        let n = end.never_served(1_850_000);
        assert_eq!((n.unserved_ms, n.reason()), (12_000.0, "not served within the lab's patience (12 s)".into()));
        assert_eq!(Ending::of(&[]).never_served(0).why, Unserved::RunEnded);
    }
}

/// A never-served probe through every output of the priority kind: the verdict, the facts, the
/// text lines, the waits chart and its table. Each would report a number without this module.
#[cfg(test)]
mod outputs {
    use crate::chart::Chart;
    use crate::checker::Verdict;
    use crate::labs::priority::priority::{waits_chart, PriorityObserved, PrioritySpec};
    use crate::labs::{Judge, Present, RunView, VariantRuns};
    use crate::lang::{Lang, Words};
    use crate::priority_queue::{Phase, PhasePlan, Priority, PriorityEvent};
    use crate::timeline::vocabulary::{Redactor, Vocabulary as _};
    use crate::timeline::{Actor, Event, EventKind};

    fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us: t_ms * 1000, actor, kind }
    }

    /// A backlog served, then a probe queued at 2110 ms while C1 sits in its BLOCK 5000 on low;
    /// C1 dies of a TimeoutError at 7163 ms (`served`: it took the probe at 7100 ms instead).
    fn probe_run(served: bool) -> Vec<Event> {
        let queued = |t, job: &str, phase| {
            let kind = PriorityEvent::JobQueued {
                job: job.into(),
                priority: Priority::Critical,
                phase,
                traced: true,
                score: None,
            };
            ev(t, Actor::Producer, kind.event())
        };
        let taken = |t, job: &str, phase| {
            let kind = PriorityEvent::PriorityJobTaken {
                job: job.into(),
                priority: Priority::Critical,
                phase,
                traced: true,
                waited_ms: None,
            };
            ev(t, Actor::Consumer(1), kind.event())
        };
        let probe = PhasePlan::Probe { blocked_in: Some("XREADGROUP low COUNT 10 BLOCK 5000".into()), after_ms: None };
        let mut events = vec![
            queued(0, "c-0001", Phase::Backlog),
            taken(300, "c-0001", Phase::Backlog),
            ev(2110, Actor::Runner, PriorityEvent::PhaseStarted { plan: probe }.event()),
            queued(2110, "c-0002", Phase::AlignedProbe),
        ];
        if served {
            events.push(taken(7100, "c-0002", Phase::AlignedProbe));
        } else {
            let died = EventKind::died(
                "exit status: 1: redis.exceptions.TimeoutError: Timeout reading from socket",
                vec!["redis.exceptions.TimeoutError: Timeout reading from socket".into()],
            );
            events.push(ev(7163, Actor::Consumer(1), died));
        }
        events
    }

    fn spec() -> PrioritySpec {
        toml::from_str(
            "loop = { kind = \"seed-strict\" }\ncost_ms = { critical = 2 }\naligned_probe = true\nclaims = { critical_wait_ms = 250 }",
        )
        .unwrap()
    }

    fn table(chart: &Chart) -> String {
        crate::report::chart::table(chart, Lang::En)
    }

    #[test]
    fn a_probe_never_served_is_said_so_everywhere_and_never_given_a_number() {
        let (spec, observed) = (spec(), PriorityObserved { scale: 1.0, queued: 2, done: 1, pending_after_run: 0, explored: false });
        let never = probe_run(false);
        let view = RunView { run: 1, events: &never, timed_out: false, observed: &observed };
        // The verdict: wrong (it waited 5053 ms unserved, over the claim's 250), and why.
        let v = spec.judge(&view);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert!(
            v.reasons.iter().any(|r| r
                == "a critical job queued into an idle system was never served (C1 died at t=7163 ms, 5053 ms after it was queued)"),
            "{:?}",
            v.reasons
        );
        assert!(!v.reasons.iter().any(|r| r.contains("waited 0 ms")), "{:?}", v.reasons);
        // The facts: no wait, how long it had waited unserved.
        let f = spec.facts(&view);
        assert_eq!((f.aligned_probe_wait_ms, f.aligned_probe_never_served_ms), (None, Some(5053)));
        // The text's lines.
        let notes = spec.notes(&view, Lang::En);
        let text: Vec<String> = notes.after.iter().map(|l| Redactor::NONE.line(l)).collect();
        let probe = text.iter().find(|l| l.starts_with("probe at the worst moment")).unwrap();
        assert_eq!(
            probe,
            "probe at the worst moment: never served: C1 died at t=7163 ms (exit status: 1: redis.exceptions.TimeoutError: Timeout reading from socket), 5053 ms after it was queued"
        );
        let seed: Vec<String> =
            spec.per_run_lines(std::slice::from_ref(&view), Lang::En).iter().map(|l| Redactor::NONE.line(l)).collect();
        assert!(
            seed.iter().any(|l| l.contains("measured: never served in 1 of 1 runs (C1 died at t=7163 ms")),
            "{seed:?}"
        );
        // The chart: no bar for critical, a mark of its own; its table says so.
        let title = Words::same("t");
        let chart = waits_chart(&[VariantRuns { id: "seed", title: &title, spec: &spec, runs: vec![view] }]);
        assert_eq!(chart.validate(), Ok(()));
        assert!(chart.series[0].points.is_empty(), "{:?}", chart.series[0].points);
        assert_eq!(chart.series[0].unmeasured[0].label.en, "never served (C1 died): 1 of 1 runs");
        assert!(table(&chart).contains("seed | ✕ never served (C1 died): 1 of 1 runs |"), "{}", table(&chart));
        assert!(crate::report::chart::svg(&chart, Lang::En).contains("never served (C1 died): 1 of 1 runs"));
    }

    #[test]
    fn the_verdict_rests_on_the_probe_never_served_and_the_death() {
        use crate::checker::evidence::Why;
        let events = probe_run(false);
        let observed = PriorityObserved { scale: 1.0, queued: 2, done: 1, pending_after_run: 0, explored: false };
        let record = crate::labs::RunRecord {
            run: 1,
            events: events.clone(),
            timed_out: false,
            observed: crate::labs::Observed::Priority(observed),
            verdict: crate::checker::RunVerdict::right(),
        };
        let evidence = crate::labs::Procedure::Priority(spec()).evidence(&record);
        let whys: Vec<(usize, Why)> = evidence.iter().map(|e| (e.index, e.why)).collect();
        // The probe queued at 2110 ms (never served), C1's death at 7163 ms.
        assert_eq!(whys, [(3, Why::NeverServed), (4, Why::Died)]);
        assert_eq!(evidence[1].t_us, 7_163_000);
    }

    #[test]
    fn a_probe_served_late_keeps_its_measured_wait() {
        let (spec, observed) = (spec(), PriorityObserved { scale: 1.0, queued: 2, done: 2, pending_after_run: 0, explored: false });
        let late = probe_run(true);
        let view = RunView { run: 1, events: &late, timed_out: false, observed: &observed };
        assert_eq!(spec.facts(&view).aligned_probe_wait_ms, Some(4990));
        let v = spec.judge(&view);
        assert_eq!(v.reasons, ["a critical job queued into an idle system waited 4990 ms"]);
        let title = Words::same("t");
        let chart = waits_chart(&[VariantRuns { id: "seed", title: &title, spec: &spec, runs: vec![view] }]);
        assert_eq!((chart.series[0].points.clone(), chart.series[0].unmeasured.len()), (vec![(0.0, 4990.0)], 0));
    }
}
