//! A schedule is the order in which the explorer let the processes of a run take their steps,
//! written as a short string a teacher can paste: `P.C2.P.C1x3.C2x2` (the producer's step, C2's,
//! the producer's, three of C1's, two of C2's). Replaying the string replays the run.
//!
//! Processes are named as on the timeline (`C1`, `W2`, `D1`), the producer `P`, the reaper `R`,
//! a SQL session `S` and its letter; `x<n>` repeats a process's turn.

use crate::timeline::Actor;
use std::fmt;

/// A sequence of turns, one process per step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Schedule(pub Vec<Actor>);

/// A schedule string that does not parse: where and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("schedule {text:?}: turn {turn} ({token:?}) {why}; write turns like P.C1x2.C2 (P producer, C1 consumer 1, x2 twice)")]
pub struct ScheduleError {
    pub text: String,
    pub turn: usize,
    pub token: String,
    pub why: &'static str,
}

/// The short name of a process in a schedule string.
pub fn code(actor: Actor) -> String {
    match actor {
        Actor::Producer => "P".into(),
        Actor::Reaper => "R".into(),
        Actor::Scheduler => "T".into(),
        Actor::Runner => "N".into(),
        Actor::Sink => "K".into(),
        Actor::Session(c) => format!("S{c}"),
        other => other.to_string(),
    }
}

fn actor_of(name: &str) -> Option<Actor> {
    let number = |rest: &str| rest.parse::<u32>().ok().filter(|n| *n > 0);
    match name {
        "P" => Some(Actor::Producer),
        "R" => Some(Actor::Reaper),
        "T" => Some(Actor::Scheduler),
        // The harness's own steps: a server timer running out.
        "N" => Some(Actor::Runner),
        _ => {
            let (head, rest) = name.split_at(1.min(name.len()));
            match head {
                "C" => number(rest).map(Actor::Consumer),
                "W" => number(rest).map(Actor::Worker),
                "D" => number(rest).map(Actor::Dispatcher),
                "S" if rest.chars().count() == 1 && rest.chars().all(|c| c.is_ascii_uppercase()) => {
                    rest.chars().next().map(Actor::Session)
                }
                _ => None,
            }
        }
    }
}

impl Schedule {
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let mut turns = Vec::new();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(Schedule::default());
        }
        for (i, token) in trimmed.split('.').enumerate() {
            let err = |why| ScheduleError { text: text.to_string(), turn: i + 1, token: token.to_string(), why };
            let (name, times) = match token.split_once('x') {
                Some((name, n)) => {
                    (name, n.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| err("has a bad count after x"))?)
                }
                None => (token, 1),
            };
            let actor = actor_of(name).ok_or_else(|| err("names no process"))?;
            turns.extend(std::iter::repeat_n(actor, times));
        }
        Ok(Schedule(turns))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let a = self.0[i];
            let run = self.0[i..].iter().take_while(|b| **b == a).count();
            if !first {
                f.write_str(".")?;
            }
            first = false;
            f.write_str(&code(a))?;
            if run > 1 {
                write!(f, "x{run}")?;
            }
            i += run;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_string_round_trips() {
        let s = Schedule(vec![
            Actor::Producer,
            Actor::Consumer(2),
            Actor::Producer,
            Actor::Consumer(1),
            Actor::Consumer(1),
            Actor::Consumer(1),
            Actor::Consumer(12),
            Actor::Session('A'),
            Actor::Worker(3),
            Actor::Runner,
            Actor::Reaper,
        ]);
        assert_eq!(s.to_string(), "P.C2.P.C1x3.C12.SA.W3.N.R");
        assert_eq!(Schedule::parse(&s.to_string()), Ok(s));
        assert_eq!(Schedule::parse(""), Ok(Schedule::default()));
    }

    #[test]
    fn a_bad_schedule_string_names_the_turn() {
        let e = Schedule::parse("P.C0.C1").unwrap_err();
        assert_eq!((e.turn, e.token.as_str(), e.why), (2, "C0", "names no process"));
        let e = Schedule::parse("P.C1x").unwrap_err();
        assert_eq!((e.turn, e.why), (2, "has a bad count after x"));
        assert!(e.to_string().contains("P.C1x2.C2"), "{e}");
    }
}
