//! How long a run waits for a worker from a command line, and what it records when the worker
//! runs out of it. A run's final state is read only once every worker is back waiting for
//! work (blocked in its read) or has exited; a worker that is not, within its patience, was cut
//! mid-entry, and the run is *unknown* for that reason: never wrong by a write ordlab cut off.
//!
//! The events here are the harness's own words about a worker (its actor), recorded in the
//! run's timeline; the health checker makes a run with one unknown.

use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, EventKind};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A worker's patience when the lab gives none.
pub const DEFAULT_MS: f64 = 15_000.0;

/// `patience_ms` as a duration (the default where None).
pub fn of(patience_ms: Option<f64>) -> Duration {
    Duration::from_secs_f64(patience_ms.unwrap_or(DEFAULT_MS).max(1.0) / 1000.0)
}

/// What the run did when a worker ran out of patience.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PatienceEvent {
    /// Every entry was acknowledged, but `waited_ms` later the worker was still not back
    /// waiting for work: the run ended there, cutting what it was doing (`last`: its last
    /// command at the wire). Its final state is not judged.
    NotBackWaiting { waited_ms: u64, last: String },
    /// Nothing moved for `waited_ms` before every entry was acknowledged, and the worker was
    /// not waiting for work: cut.
    NoProgress { waited_ms: u64, last: String },
}

impl PatienceEvent {
    /// Why a run with this event is unknown.
    pub fn reason(&self, actor: Actor) -> String {
        match self {
            PatienceEvent::NotBackWaiting { waited_ms, last } => format!(
                "{actor} was not back waiting for work {} s after every entry was acknowledged (its last command: {last}): it was stopped mid-entry, so the final state is not judged",
                seconds(*waited_ms)
            ),
            PatienceEvent::NoProgress { waited_ms, last } => format!(
                "{actor} made no progress for {} s and was not waiting for work (its last command: {last}): it was stopped",
                seconds(*waited_ms)
            ),
        }
    }

    /// Does a run with this event leave its final state unjudged? (Every patience event does.)
    pub fn in_events(events: &[crate::timeline::Event]) -> bool {
        events.iter().any(|e| e.kind.family::<PatienceEvent>().is_some())
    }
}

/// `1.5`, `15`.
fn seconds(ms: u64) -> String {
    let s = format!("{:.1}", ms as f64 / 1000.0);
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A worker's last command as the timeline has it: `XACK orders g 1-0 → 1`, or `nothing`.
pub fn last_command(events: &[crate::timeline::RawEvent], actor: Actor) -> String {
    let last = events.iter().rev().filter(|e| e.actor == actor).find_map(|e| match &e.kind {
        EventKind::ServerCommand { args, reply, .. } => {
            let mut words: Vec<&str> = args.iter().map(String::as_str).take(8).collect();
            if args.len() > 8 {
                words.push("…");
            }
            let reply: String = reply.chars().take(60).collect();
            Some(format!("{} → {reply}", words.join(" ")))
        }
        _ => None,
    });
    last.unwrap_or_else(|| "nothing".into())
}

impl Vocabulary for PatienceEvent {
    const KINDS: &'static [&'static str] = &["not_back_waiting", "no_progress"];

    fn line(&self, _a: Actor, w: &Wording) -> Option<String> {
        Some(match self {
            PatienceEvent::NotBackWaiting { waited_ms, .. } => crate::tr!(
                w.lang,
                "not back waiting for work {} s after the last ack: stopped mid-entry, the final state is not judged",
                "chưa quay lại chờ việc {} s sau ack cuối: bị dừng giữa chừng, trạng thái cuối không được chấm",
                seconds(*waited_ms)
            ),
            PatienceEvent::NoProgress { waited_ms, .. } => crate::tr!(
                w.lang,
                "no progress for {} s: stopped",
                "không tiến triển trong {} s: bị dừng",
                seconds(*waited_ms)
            ),
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        Drawing::Mark(Glyph::Crash, pick(w.lang, "cut", "bị cắt").to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_events_decode_back_and_say_why_the_run_is_unknown() {
        let e = PatienceEvent::NotBackWaiting { waited_ms: 5000, last: "XACK s g 1-0 → 1".into() };
        crate::timeline::vocabulary::check_kinds(&[
            e.clone(),
            PatienceEvent::NoProgress { waited_ms: 1500, last: "nothing".into() },
        ]);
        let r = e.reason(Actor::Consumer(2));
        assert!(r.starts_with("C2 was not back waiting for work 5 s after") && r.contains("XACK s g 1-0 → 1"), "{r}");
        assert!(PatienceEvent::NoProgress { waited_ms: 1500, last: "x".into() }
            .reason(Actor::Reaper)
            .contains("1.5 s"));
    }
}
