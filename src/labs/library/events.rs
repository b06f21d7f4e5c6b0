//! What a library lab does to the library's processes besides its wire faults: a worker's
//! command held at the interposer while another process enqueues, that command let go, jobs
//! enqueued the moment another job's handler started, and a worker stopped as its supervisor
//! stops it (SIGTERM). Each is a timeline event, worded in both languages.

use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};

/// A step the library lab placed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LibraryEvent {
    /// The interposer holds the worker's `command` (not yet at the server) while `jobs` are
    /// enqueued by another process.
    CommandHeld { command: String, jobs: Vec<String> },
    /// The held command goes on to the server.
    CommandReleased { command: String },
    /// `jobs` were enqueued when `job`'s handler started (its start answer waited for them).
    EnqueuedAtStart { job: String, jobs: Vec<String> },
    /// The worker was sent `signal` (`SIGTERM`) while `job` ran, as a supervisor or a deploy
    /// stops it.
    Stopped { signal: String, job: String },
    /// The runner ran the library's own recovery once, as the library runs it `after_s`
    /// seconds after the run came to rest.
    RecoveryRun { after_s: f64 },
}

impl Vocabulary for LibraryEvent {
    const KINDS: &'static [&'static str] =
        &["command_held", "command_released", "enqueued_at_start", "stopped", "recovery_run"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let l = w.lang;
        Some(match self {
            LibraryEvent::CommandHeld { command, jobs } => {
                let jobs = jobs.join(", ");
                crate::tr!(
                    l,
                    "{a}'s {command} held at the interposer, not yet at the server; meanwhile another process enqueues {jobs}",
                    "{command} của {a} bị interposer giữ lại, chưa tới server; trong lúc đó một process khác enqueue {jobs}"
                )
            }
            LibraryEvent::CommandReleased { command } => crate::tr!(
                l,
                "{a}'s held {command} goes on to the server",
                "{command} bị giữ của {a} được cho đi tới server"
            ),
            LibraryEvent::EnqueuedAtStart { job, jobs } => {
                let jobs = jobs.join(", ");
                crate::tr!(
                    l,
                    "{a} enqueued {jobs} when {job} started (its handler waited for them)",
                    "{a} enqueue {jobs} lúc {job} bắt đầu (handler của nó chờ xong việc này)"
                )
            }
            LibraryEvent::Stopped { signal, job } => crate::tr!(
                l,
                "{a} gets {signal} while {job} runs, as its supervisor stops it",
                "{a} nhận {signal} trong lúc {job} đang chạy, như supervisor dừng nó"
            ),
            LibraryEvent::RecoveryRun { after_s } => crate::tr!(
                l,
                "{a} runs the library's own recovery now, as it runs {after_s} s later (its clock argument set ahead)",
                "{a} chạy cơ chế phục hồi của chính thư viện ngay bây giờ, như nó chạy sau {after_s} s (tham số thời gian đặt trước)"
            ),
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let t = |en, vi| pick(w.lang, en, vi);
        match self {
            LibraryEvent::CommandHeld { command, .. } => {
                Drawing::Mark(Glyph::LockTaken, format!("{command} {}", t("held", "bị giữ")))
            }
            LibraryEvent::CommandReleased { command } => Drawing::Mark(Glyph::Released, command.clone()),
            LibraryEvent::EnqueuedAtStart { jobs, .. } => Drawing::Mark(Glyph::Published, jobs.join(", ")),
            LibraryEvent::Stopped { signal, .. } => Drawing::Mark(Glyph::Crash, signal.clone()),
            LibraryEvent::RecoveryRun { after_s } => {
                Drawing::Mark(Glyph::Published, format!("{} +{after_s} s", t("recovery", "phục hồi")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::Lang;
    use crate::timeline::vocabulary::Redactor;

    #[test]
    fn kinds_match_the_enum_and_every_event_has_a_line_in_both_languages() {
        let events = [
            LibraryEvent::CommandHeld { command: "EXEC".into(), jobs: vec!["job-2".into()] },
            LibraryEvent::CommandReleased { command: "EXEC".into() },
            LibraryEvent::EnqueuedAtStart { job: "A".into(), jobs: vec!["C".into(), "D".into()] },
            LibraryEvent::Stopped { signal: "SIGTERM".into(), job: "job-1".into() },
            LibraryEvent::RecoveryRun { after_s: 61.0 },
        ];
        for (e, kind) in events.iter().zip(LibraryEvent::KINDS) {
            assert_eq!(serde_json::to_value(e).unwrap()["kind"], *kind);
            for lang in [Lang::En, Lang::Vi] {
                let w = Wording { lang, many_orders: false, redact: Redactor::NONE };
                assert!(e.line(Actor::Worker(1), &w).is_some_and(|l| l.contains("W1")));
            }
        }
    }
}
