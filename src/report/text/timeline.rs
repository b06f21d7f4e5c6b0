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
    let omitted = lines.len().saturating_sub(HEAD + TAIL + 1);
    for (i, (e, line)) in lines.iter().enumerate() {
        if omitted > 0 && i == HEAD {
            let more =
                pick(opts.lang, "more lines (every event is in the JSON)", "dòng nữa (mọi sự kiện có trong JSON)");
            let _ = writeln!(out, "  … {omitted} {more}");
        }
        if omitted > 0 && (HEAD..HEAD + omitted).contains(&i) {
            continue;
        }
        let _ = writeln!(out, "  {}  {line}", opts.redact.stamp(e.t_ms()));
    }
    for line in &notes.after {
        let _ = writeln!(out, "  {}", opts.redact.line(line));
    }
}
