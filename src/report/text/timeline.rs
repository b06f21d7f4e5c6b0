//! One run's timeline: a heading with what the log held, one line per event in the seed's
//! shape, and the lab's notes after it. A run of thousands of events shows its start and end.

use super::TextOptions;
use crate::labs::{Procedure, RunRecord};
use crate::lang::pick;
use crate::report::words::{event_line, Wording};
use crate::timeline::{Event, EventKind};
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
    let show_publish = procedure.shows_publishing();
    // Ordered with every event (a publish orders its receive), then filtered to what is shown.
    let all: Vec<&Event> = r.events.iter().collect();
    let ordered = if race { opts.redact.order_by_process(all) } else { opts.redact.order(all) };
    let events: Vec<&Event> = ordered
        .into_iter()
        .filter(|e| show_publish || !matches!(e.kind, EventKind::Published { .. } | EventKind::PublishFailed { .. }))
        .filter(|e| event_line(e, &wording).is_some())
        .collect();
    let omitted = events.len().saturating_sub(HEAD + TAIL + 1);
    for (i, e) in events.iter().enumerate() {
        if omitted > 0 && i == HEAD {
            let more =
                pick(opts.lang, "more lines (every event is in the JSON)", "dòng nữa (mọi sự kiện có trong JSON)");
            let _ = writeln!(out, "  … {omitted} {more}");
        }
        if omitted > 0 && (HEAD..HEAD + omitted).contains(&i) {
            continue;
        }
        let line = event_line(e, &wording).expect("filtered above");
        let _ = writeln!(out, "  {}  {line}", opts.redact.stamp(e.t_ms()));
    }
    for line in &notes.after {
        let _ = writeln!(out, "  {}", opts.redact.line(line));
    }
}
