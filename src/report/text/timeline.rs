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

/// Lines shown on either side of a crash or a side effect, where the kind focuses on them.
const AROUND: usize = 3;

/// Which lines a long timeline shows: its first `HEAD` and last `TAIL`, or, focused, the
/// lines around each crash and side effect (and the first and last). A fault's own line is no
/// line of the lab's: it is shown with the line before it, and counts in neither window.
fn shown_lines(lines: &[(&crate::timeline::Event, String)], focus: bool) -> Vec<bool> {
    let is_fault = |e: &crate::timeline::Event| e.kind.family::<crate::fault::FaultEvent>().is_some();
    let own: Vec<&crate::timeline::Event> = lines.iter().map(|(e, _)| *e).filter(|e| !is_fault(e)).collect();
    let shown_own = shown_own_lines(&own, focus);
    let (mut k, mut last) = (0, shown_own.first().copied().unwrap_or(true));
    lines
        .iter()
        .map(|(e, _)| {
            if is_fault(e) {
                return last;
            }
            last = shown_own[k];
            k += 1;
            last
        })
        .collect()
}

/// [`shown_lines`] of the lab's own lines.
fn shown_own_lines(lines: &[&crate::timeline::Event], focus: bool) -> Vec<bool> {
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
    for (i, e) in lines.iter().enumerate() {
        if matches!(e.kind, crate::timeline::EventKind::Crashed { .. } | crate::timeline::EventKind::Effect { .. }) {
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
    // What a process's client library did by itself at the wire: reconnects, reads it gave
    // up on (its own timeout), replies that came for nobody.
    let label = pick(opts.lang, "connections", "kết nối");
    for (actor, stats) in crate::interposer::connections::ConnectionStats::of(&r.events) {
        if stats.eventful() {
            let _ = writeln!(out, "  {label}: {}", stats.words(actor, opts.lang));
        }
    }
}
