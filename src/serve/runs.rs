//! A run for the page: a variant run `runs` times (as `ordlab run <lab> --variant <v> --runs
//! N` would) or a saved class's schedule replayed, its lines and pictures sent as they are
//! recorded, each run's verdict with the tally and its 95 % interval, a console line per run,
//! then the outcome.

use super::stream::Streamed;
use super::ServeOptions;
use crate::checker::Verdict;
use crate::exploration::{self, ExploreOptions, Search};
use crate::explore::Schedule;
use crate::labs::{Procedure, RunRecord};
use crate::lang::Lang;
use crate::report::words::{shown_line, Wording};
use crate::report::Redactor;
use crate::runner::RunOptions;
use crate::scenario::Scenario;
use crate::service::Services;
use crate::stats::wilson_95;
use crate::timeline::{Event, RawEvent};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the run is drawn again while it goes on (when it recorded something new).
const DRAW_EVERY: Duration = Duration::from_millis(400);

/// What the run has recorded so far, shared by the tap (on the recording tasks) and the
/// drawing loop.
struct Seen {
    /// The run going on (1-based).
    run: u32,
    seq: u64,
    first_ns: Option<u64>,
    events: Vec<Event>,
    /// Something new since the last picture.
    fresh: bool,
    wrong: u32,
    judged: u32,
}

/// The run's lines (to `tx`) and events (for its pictures) as they are recorded.
struct Tap {
    seen: Arc<Mutex<Seen>>,
    tx: mpsc::UnboundedSender<Streamed>,
    procedure: Procedure,
    lab: String,
    variant: String,
    scale: f64,
}

impl Tap {
    fn new(lab: &str, variant: &str, procedure: &Procedure, scale: f64, tx: mpsc::UnboundedSender<Streamed>) -> Tap {
        let seen = Seen { run: 1, seq: 0, first_ns: None, events: Vec::new(), fresh: false, wrong: 0, judged: 0 };
        Tap {
            seen: Arc::new(Mutex::new(seen)),
            tx,
            procedure: procedure.clone(),
            lab: lab.into(),
            variant: variant.into(),
            scale,
        }
    }

    /// The live tap: each event's line, numbered, `t_ms` from the run's first line (its own
    /// t=0, the producer's start, is known only once it is over).
    fn on_event(&self) -> crate::timeline::live::OnEvent {
        let (seen, tx) = (self.seen.clone(), self.tx.clone());
        let (show_publish, many_orders) = (self.procedure.shows_publishing(), self.procedure.many_orders());
        Arc::new(move |raw: &RawEvent| {
            let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
            let t0 = *s.first_ns.get_or_insert(raw.mono_ns);
            let event = raw.clone().at(t0);
            let line = |lang| shown_line(&event, show_publish, &Wording { lang, many_orders, redact: Redactor::NONE });
            if let (Some(en), Some(vi)) = (line(Lang::En), line(Lang::Vi)) {
                s.seq += 1;
                let t_ms = (raw.mono_ns as i64 - t0 as i64) / 1_000_000;
                let _ = tx.send(Streamed::Line { seq: s.seq, run: s.run, t_ms, en, vi });
            }
            s.events.push(event);
            s.fresh = true;
        })
    }

    /// Each run's record as it ends: its picture, its verdict with the tally, a console line;
    /// the next run starts afresh.
    fn on_record(&self) -> crate::runner::OnRecord {
        let (seen, tx, procedure) = (self.seen.clone(), self.tx.clone(), self.procedure.clone());
        let (lab, variant, scale) = (self.lab.clone(), self.variant.clone(), self.scale);
        Arc::new(move |_: &str, record: &RunRecord, runs: u32| {
            let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
            let run = s.run;
            let verdict = record.verdict.verdict;
            if verdict != Verdict::Unknown {
                s.judged += 1;
            }
            s.wrong += u32::from(verdict == Verdict::Wrong);
            let draw = |lang| crate::report::svg::render_live(&lab, &variant, &procedure, &record.events, scale, lang);
            let _ = tx.send(Streamed::Picture { run, done: true, en: draw(Lang::En), vi: draw(Lang::Vi) });
            let (en, vi) = tally(run, runs, verdict, s.wrong, s.judged);
            eprintln!("ordlab serve: {lab}/{variant} {en}");
            let word = match verdict {
                Verdict::Wrong => "wrong",
                Verdict::Right => "right",
                Verdict::Unknown => "unknown",
            };
            let (wrong, judged) = (s.wrong, s.judged);
            let _ = tx.send(Streamed::RunDone { run, runs, verdict: word.into(), wrong, judged, en, vi });
            *s = Seen { run: run + 1, seq: 0, first_ns: None, events: Vec::new(), fresh: false, wrong, judged };
        })
    }

    /// Draw the run going on whenever it recorded something new; never returns.
    async fn draw_loop(&self) {
        loop {
            tokio::time::sleep(DRAW_EVERY).await;
            let (run, events) = {
                let mut s = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                if !s.fresh || s.events.is_empty() {
                    continue;
                }
                s.fresh = false;
                (s.run, s.events.clone())
            };
            let (lab, variant, procedure, scale) =
                (self.lab.clone(), self.variant.clone(), self.procedure.clone(), self.scale);
            let drawn = tokio::task::spawn_blocking(move || {
                let draw = |lang| crate::report::svg::render_live(&lab, &variant, &procedure, &events, scale, lang);
                (draw(Lang::En), draw(Lang::Vi))
            })
            .await;
            if let Ok((en, vi)) = drawn {
                let _ = self.tx.send(Streamed::Picture { run, done: false, en, vi });
            }
        }
    }
}

/// `run 3 of 20: wrong · so far 2 of 3 wrong (95 % interval 21–94 %)`, in both languages.
pub fn tally(run: u32, runs: u32, verdict: Verdict, wrong: u32, judged: u32) -> (String, String) {
    let (en, vi) = match verdict {
        Verdict::Wrong => ("✕ wrong", "✕ SAI"),
        Verdict::Right => ("✓ right", "✓ ĐÚNG"),
        Verdict::Unknown => ("? not judged", "? chưa rõ"),
    };
    if runs <= 1 {
        return (format!("run {run} of {runs}: {en}"), format!("lần {run} trên {runs}: {vi}"));
    }
    let (lo, hi) = wilson_95(wrong, judged);
    let (lo, hi) = (lo * 100.0, hi * 100.0);
    (
        format!("run {run} of {runs}: {en} · so far {wrong} of {judged} wrong (95 % interval {lo:.0}–{hi:.0} %)"),
        format!("lần {run} trên {runs}: {vi} · đến giờ {wrong} trên {judged} lần SAI (khoảng tin cậy 95 % {lo:.0}–{hi:.0} %)"),
    )
}

/// Run `variant` of `lab` `runs` times as `ordlab run <lab> --variant <v> --runs N` does, on
/// servers started for it: its lines and pictures to `tx` as the runs record them, each run's
/// verdict with the tally, then the outcome over every run.
pub async fn run_streamed(
    lab: Scenario,
    variant: String,
    runs: u32,
    opts: &ServeOptions,
    tx: mpsc::UnboundedSender<Streamed>,
) {
    let Some(v) = lab.variant(&variant) else { return };
    let tap = Tap::new(&lab.id, &variant, &v.procedure, opts.scale, tx.clone());
    let mut run = RunOptions::new(opts.scale, rand::random());
    run.runs = Some(runs);
    run.command_line = format!("ordlab serve: ordlab run {} --variant {variant} --runs {runs}", lab.id);
    run.on_event = Some(tap.on_event());
    run.on_record = Some(tap.on_record());
    run.variant = Some(variant);
    let ran = async {
        crate::schedule::run_labs(std::slice::from_ref(&lab), &run, &opts.services, 1, opts.exe.clone(), &mut |_| {})
            .await
    };
    let reports = tokio::select! {
        r = ran => r,
        () = tap.draw_loop() => unreachable!("the drawing loop never ends"),
    };
    let last = match reports {
        Ok(reports) => match reports.first().and_then(|r| r.variants.first().map(|v| (r, v))) {
            Some((r, v)) => Streamed::Verdict {
                en: r.outcome_lines(v, Lang::En),
                vi: crate::report::reasons::outcome_lines_vi(&r.outcome_lines(v, Lang::Vi)),
                matched: r.matched(),
            },
            None => Streamed::Failed { line: "the run reported no variant".into() },
        },
        Err(e) => Streamed::Failed { line: e.to_string() },
    };
    let _ = tx.send(last);
}

/// Replay `schedule` of `variant` as `ordlab run <lab> --variant <v> --schedule <s>` does, on
/// servers started for it: its lines and picture to `tx` as the run records them, then its
/// verdict beside the one the saved exploration found (`saved`). One exact schedule: no
/// interval and no expectation, which are about sampled runs.
pub async fn run_replayed(
    lab: Scenario,
    variant: String,
    schedule: String,
    saved: Verdict,
    opts: &ServeOptions,
    tx: mpsc::UnboundedSender<Streamed>,
) {
    let Some(v) = lab.variant(&variant) else { return };
    let tap = Tap::new(&lab.id, &variant, &v.procedure, 0.0, tx.clone());
    let tapped = crate::timeline::live::tap(tap.on_event());
    let replayed = async {
        let search = Search::Replay(Schedule::parse(&schedule).map_err(|e| e.to_string())?);
        let services = Services::start(&opts.services).await.map_err(|e| e.to_string())?;
        let explore = ExploreOptions { search, ..ExploreOptions::default() };
        let result = exploration::explore(&services, opts.exe.clone(), &lab, v, &explore).await;
        services.stop().await;
        result.map_err(|e| e.to_string())
    };
    let replayed = tokio::select! {
        r = replayed => r,
        () = tap.draw_loop() => unreachable!("the drawing loop never ends"),
    };
    drop(tapped);
    let last = match replayed {
        Ok((x, Some(report))) => match (x.classes.first(), report.variants.first()) {
            (Some(class), Some(shown)) => {
                if let Some(r) = shown.record(1) {
                    tap.on_record()(&variant, r, 1);
                }
                let said = |lang| {
                    let (word, as_saved) = (verdict_word(class.verdict, lang), class.verdict == saved);
                    let head = match (lang, as_saved) {
                        (Lang::En, true) => format!("schedule {schedule}: {word}, as explored"),
                        (Lang::En, false) => {
                            format!("schedule {schedule}: {word}; explored: {}", verdict_word(saved, lang))
                        }
                        (Lang::Vi, true) => format!("lịch {schedule}: {word}, như khi duyệt"),
                        (Lang::Vi, false) => {
                            format!("lịch {schedule}: {word}; khi duyệt: {}", verdict_word(saved, lang))
                        }
                    };
                    let lines = report.outcome_lines(shown, lang);
                    let lines = if lang == Lang::Vi { crate::report::reasons::outcome_lines_vi(&lines) } else { lines };
                    format!("{head}\n{}", exact(&lines))
                };
                Streamed::Verdict { en: said(Lang::En), vi: said(Lang::Vi), matched: class.verdict == saved }
            }
            _ => Streamed::Failed { line: "the replay reported no run".into() },
        },
        Ok((_, None)) => Streamed::Failed {
            line: format!(
                "schedule {schedule} did not run to its end: the lab's steps have changed since it was explored"
            ),
        },
        Err(line) => Streamed::Failed { line },
    };
    let _ = tx.send(last);
}

/// A replay's outcome lines without what is said of sampled runs: the 95 % interval of a count
/// and the expectation's line (one exact schedule is neither a sample nor expected anything).
pub fn exact(lines: &str) -> String {
    lines
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("expected wrong:") || t.starts_with("kỳ vọng số lần sai:"))
        })
        .map(|l| match (l.find(" (95 % interval"), l.find(" (khoảng tin cậy 95 %")) {
            (Some(i), _) | (_, Some(i)) => {
                let rest = &l[i..];
                let end = rest.find(')').map_or(rest.len(), |e| e + 1);
                format!("{}{}", &l[..i], &rest[end..])
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verdict_word(v: Verdict, lang: Lang) -> &'static str {
    match (v, lang) {
        (Verdict::Wrong, Lang::En) => "wrong",
        (Verdict::Right, Lang::En) => "right",
        (Verdict::Unknown, Lang::En) => "unknown",
        (Verdict::Wrong, Lang::Vi) => "SAI",
        (Verdict::Right, Lang::Vi) => "ĐÚNG",
        (Verdict::Unknown, Lang::Vi) => "không rõ",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_says_nothing_of_samples() {
        let lines = "  → wrong final state (not paid): 1/1 runs (95 % interval 21–100 %)\n  why (run 1): order 42 ended created (v=1), expected paid\n  expected wrong: any (measured only) → matches";
        let shown = exact(lines);
        assert_eq!(
            shown,
            "  → wrong final state (not paid): 1/1 runs\n  why (run 1): order 42 ended created (v=1), expected paid"
        );
    }

    #[test]
    fn the_tally_gives_its_interval_once_there_are_several_runs() {
        let (en, vi) = tally(3, 20, Verdict::Wrong, 2, 3);
        assert!(en.starts_with("run 3 of 20: ✕ wrong · so far 2 of 3 wrong (95 % interval"), "{en}");
        assert!(vi.starts_with("lần 3 trên 20: ✕ SAI · đến giờ 2 trên 3 lần SAI"), "{vi}");
        assert_eq!(tally(1, 1, Verdict::Right, 0, 1).0, "run 1 of 1: ✓ right");
    }
}
