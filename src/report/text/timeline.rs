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
/// lines around each crash, side effect and family event (and the first and last). A fault's
/// own line is no line of the lab's: it is shown with the line before it, and counts in neither
/// window.
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
        use crate::timeline::EventKind::{Crashed, Effect, Family};
        if matches!(e.kind, Crashed { .. } | Effect { .. } | Family(_)) {
            shown[i.saturating_sub(AROUND)..(i + AROUND + 1).min(n)].iter_mut().for_each(|s| *s = true);
        }
    }
    shown
}

/// A focused timeline under the snapshot redactor: its story only (side effects, crashes, fault
/// events and a lab's own steps, with the command each fault at a command hit; no connection
/// opened or closed), since what a
/// real library sends around them (polls, heartbeats), and on which of its connections,
/// varies from run to run.
fn story_lines(lines: &[(&crate::timeline::Event, String)]) -> Vec<bool> {
    use crate::timeline::EventKind::ServerCommand;
    // A library's connections open and close around its story in an order of their own (a
    // pool closes together): they are counted after the timeline and are all in the JSON.
    let connection =
        |e: &crate::timeline::Event| e.kind.family::<crate::interposer::connections::ConnectionEvent>().is_some();
    let mut shown: Vec<bool> =
        lines.iter().map(|(e, _)| !matches!(e.kind, ServerCommand { .. }) && !connection(e)).collect();
    for (i, (e, _)) in lines.iter().enumerate() {
        let at_command = match e.kind.family::<crate::fault::FaultEvent>() {
            // At a reply the command it hit is the process's last recorded one; at a send the
            // command never got a reply, so the last recorded one is another (on another of its
            // connections, whichever answered last): not shown.
            Some(crate::fault::FaultEvent::FaultFired { fault, .. }) => {
                matches!(fault.trigger, crate::fault::Trigger::Command { moment: crate::fault::Moment::Reply, .. })
            }
            _ => false,
        };
        if !at_command {
            continue;
        }
        let last = lines[..i].iter().rposition(|(c, _)| c.actor == e.actor && matches!(c.kind, ServerCommand { .. }));
        if let Some(j) = last {
            shown[j] = true;
        }
    }
    shown
}

/// A story line without its connection number (`W1 [redis 2] BRPOP …` → `W1 [redis] BRPOP …`)
/// and without the random ids a library makes per process (graphile-worker's
/// `pool-cc6de988feb0436a8a` → `pool-[id]`).
fn without_connection(line: &str) -> String {
    static CONNECTION: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\[(redis|postgres) \d+\]").expect("a valid expression"));
    static RANDOM_ID: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b[0-9a-f]{16,}\b").expect("a valid expression"));
    RANDOM_ID.replace_all(&CONNECTION.replace(line, "[$1]"), "[id]").into_owned()
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
    let focus = procedure.timeline().focus_on_faults;
    let story = focus && opts.redact.active();
    let shown = if story { story_lines(&lines) } else { shown_lines(&lines, focus) };
    let more = pick(opts.lang, "more lines (every event is in the JSON)", "dòng nữa (mọi sự kiện có trong JSON)");
    if story {
        let only = pick(
            opts.lang,
            "only the story: side effects, faults, steps and the commands faults hit (every event is in the JSON)",
            "chỉ phần chính: side effect, lỗi cài sẵn, các bước và lệnh bị lỗi chạm tới (mọi sự kiện có trong JSON)",
        );
        let _ = writeln!(out, "  … {only}");
    }
    let mut omitted = 0;
    for (i, (e, line)) in lines.iter().enumerate() {
        if !shown[i] {
            omitted += 1;
            continue;
        }
        if omitted > 0 && !story {
            let _ = writeln!(out, "  … {omitted} {more}");
        }
        omitted = 0;
        let line = if story { without_connection(line) } else { line.clone() };
        let _ = writeln!(out, "  {}  {line}", opts.redact.stamp(e.t_ms()));
    }
    if omitted > 0 && !story {
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

#[cfg(test)]
mod tests {
    use super::without_connection;

    #[test]
    fn a_story_line_loses_its_connection_number_and_a_library_s_random_ids() {
        assert_eq!(without_connection("W1 [redis 2] BRPOP default 1 → nil"), "W1 [redis] BRPOP default 1 → nil");
        assert_eq!(
            without_connection("W1 [postgres 3] with j as (…) [pool-cc6de988feb0436a8a, {\"1\"}] → UPDATE 1"),
            "W1 [postgres] with j as (…) [pool-[id], {\"1\"}] → UPDATE 1"
        );
        // Short hex words (a script's sha8 name, a job key) stay.
        assert_eq!(
            without_connection("W1 [redis 1] EVALSHA <moveToActive 3f2a9c1d>"),
            "W1 [redis] EVALSHA <moveToActive 3f2a9c1d>"
        );
    }
}
