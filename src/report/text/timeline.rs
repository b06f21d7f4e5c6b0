//! One run's timeline: a heading with what the log held, one line per event in the seed's
//! shape, and the lab's notes after it. A run of thousands of events shows its start and end.

use super::TextOptions;
use crate::labs::{Procedure, RunRecord};
use crate::lang::pick;
use crate::report::words::{timeline_lines, Wording};
use std::fmt::Write;

/// Lines shown from the start and from the end of a long timeline.
const HEAD: usize = 40;
const TAIL: usize = 10;

/// Lines shown on either side of a crash, a side effect or a lab's own step (a family event),
/// where the kind focuses on them.
const AROUND: usize = 3;

/// Which lines a long timeline shows: its first `HEAD` and last `TAIL`, or, focused, the
/// lines around each crash, side effect and family event (and the first and last).
fn shown_lines(lines: &[(&crate::timeline::Event, String)], focus: bool) -> Vec<bool> {
    let n = lines.len();
    if n <= HEAD + TAIL + 1 {
        return vec![true; n];
    }
    if !focus {
        return (0..n).map(|i| i < HEAD || i > n - TAIL - 2).collect();
    }
    let mut shown = vec![false; n];
    shown[0] = true;
    shown[n - 1] = true;
    for (i, (e, _)) in lines.iter().enumerate() {
        use crate::timeline::EventKind::{Crashed, Effect, Family};
        if matches!(e.kind, Crashed { .. } | Effect { .. } | Family(_)) {
            shown[i.saturating_sub(AROUND)..(i + AROUND + 1).min(n)].iter_mut().for_each(|s| *s = true);
        }
    }
    shown
}

/// `race`: the variant's interleaving across processes is the race it measures; redacted, the
/// timeline is then listed process by process.
pub fn render(out: &mut String, r: &RunRecord, procedure: &Procedure, opts: &TextOptions, race: bool) {
    let notes = procedure.notes(r, opts.lang);
    let run = pick(opts.lang, "run", "lần");
    match &notes.heading {
        Some(h) => writeln!(out, "{run} {} — {}", r.run, opts.redact.line(h)),
        None => writeln!(out, "{run} {}", r.run),
    }
    .expect("writing to a String");
    let wording = Wording { lang: opts.lang, many_orders: procedure.many_orders(), redact: opts.redact };
    let lines = timeline_lines(r, procedure, &wording, race);
    let shown = shown_lines(&lines, procedure.timeline().focus_on_faults);
    let more = pick(opts.lang, "more lines (every event is in the JSON)", "dòng nữa (mọi sự kiện có trong JSON)");
    let mut omitted = 0;
    for (i, (e, line)) in lines.iter().enumerate() {
        if !shown[i] {
            omitted += 1;
            continue;
        }
        if omitted > 0 {
            let _ = writeln!(out, "  … {omitted} {more}");
            omitted = 0;
        }
        let _ = writeln!(out, "  {}  {line}", opts.redact.stamp(e.t_ms()));
    }
    if omitted > 0 {
        let _ = writeln!(out, "  … {omitted} {more}");
    }
    for line in &notes.after {
        let _ = writeln!(out, "  {}", opts.redact.line(line));
    }
}
