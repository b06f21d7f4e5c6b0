//! A lab's patience: how long it waits for what it started (a job to be served, an entry to be
//! acknowledged) before it stops waiting. When it gives up it says so on the timeline, with the
//! limit that ran out and what it was waiting for, so every output can say why a run could not
//! be judged and a job never served is "not served within the lab's patience", never a number.

use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, Event};
use serde::{Deserialize, Serialize};

/// The events of a lab's patience.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PatienceEvent {
    /// The runner stopped waiting: `patience_ms` had passed and `waiting_for` (jobs, entries)
    /// were still not done.
    GaveUp { patience_ms: f64, waiting_for: Vec<String> },
}

impl PatienceEvent {
    /// The lab's patience in words: `15 s`, `800 ms`.
    pub fn limit_words(patience_ms: f64) -> String {
        if patience_ms >= 10_000.0 {
            format!("{:.0} s", patience_ms / 1000.0)
        } else if patience_ms >= 1000.0 {
            format!("{:.1} s", patience_ms / 1000.0)
        } else {
            format!("{patience_ms:.0} ms")
        }
    }

    /// Why a run that gave up is unknown (English, as verdict reasons are).
    pub fn reason(&self) -> String {
        let PatienceEvent::GaveUp { patience_ms, waiting_for } = self;
        let limit = Self::limit_words(*patience_ms);
        format!("the lab's patience ({limit}) ran out waiting for {}", listed(waiting_for))
    }
}

/// The first event in `events` that says the lab gave up, with its time.
pub fn gave_up(events: &[Event]) -> Option<(i64, PatienceEvent)> {
    events.iter().find_map(|e| e.kind.family::<PatienceEvent>().map(|p| (e.t_us, p)))
}

/// `c-0201`, `c-0201 and 2 more`.
fn listed(things: &[String]) -> String {
    match things {
        [] => "the run to end".to_string(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} and {} more", rest.len()),
    }
}

impl Vocabulary for PatienceEvent {
    const KINDS: &'static [&'static str] = &["gave_up"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let PatienceEvent::GaveUp { patience_ms, waiting_for } = self;
        let limit = Self::limit_words(*patience_ms);
        // Stream entry IDs vary run to run: a snapshot shows `[id]`.
        let is_id = |s: &str| {
            s.split_once('-')
                .is_some_and(|(a, b)| a.len() >= 6 && a.chars().chain(b.chars()).all(|c| c.is_ascii_digit()))
        };
        let shown: Vec<String> =
            waiting_for.iter().map(|x| if is_id(x) { w.redact.entry_id(x) } else { x.clone() }).collect();
        let what = listed(&shown);
        Some(crate::tr!(
            w.lang,
            "{a} gave up: the lab's patience ({limit}) ran out, {what} not done",
            "{a} bỏ cuộc: hết thời gian chờ của lab ({limit}), {what} chưa xong"
        ))
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        Drawing::Mark(Glyph::Failed, pick(w.lang, "patience ran out", "hết thời gian chờ").to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::Lang;
    use crate::timeline::vocabulary::Redactor;

    #[test]
    fn giving_up_names_the_limit_and_what_was_not_done() {
        let e = PatienceEvent::GaveUp { patience_ms: 15_000.0, waiting_for: vec!["c-0201".into()] };
        crate::timeline::vocabulary::check_kinds(std::slice::from_ref(&e));
        assert_eq!(e.reason(), "the lab's patience (15 s) ran out waiting for c-0201");
        let w = Wording { lang: Lang::En, many_orders: false, redact: Redactor::NONE };
        assert_eq!(
            e.line(Actor::Runner, &w).unwrap(),
            "runner gave up: the lab's patience (15 s) ran out, c-0201 not done"
        );
        let two = PatienceEvent::GaveUp { patience_ms: 800.0, waiting_for: vec!["a".into(), "b".into(), "c".into()] };
        assert_eq!(two.reason(), "the lab's patience (800 ms) ran out waiting for a and 2 more");
        assert_eq!(PatienceEvent::limit_words(4500.0), "4.5 s");
    }
}
