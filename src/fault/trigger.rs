//! When a fault fires: a trigger names the occurrences it watches (a process's command or
//! statement at the wire, a named point or timeline event of a process, a moment of the run)
//! and a count says which of them fire (the n-th, then every k-th, at most so many times).
//!
//! Pure: an [`Occurrence`] is what a consulting party saw, [`Trigger::matches`] says whether the
//! trigger watches it, and [`Count::fires`] whether the k-th match fires.

use crate::timeline::{Actor, ServerKind};
use serde::{Deserialize, Serialize};

/// When a command-boundary trigger looks at a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moment {
    /// The process has sent the command; it has not been forwarded to the server yet.
    Send,
    /// The server's reply has arrived; it has not reached the process yet.
    Reply,
}

/// What a fault watches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "kebab-case")]
pub enum Trigger {
    /// A command or statement at the wire: a Redis command by its name (`XACK`, any case) or a
    /// statement by its first keyword (`UPDATE`), or any whose words match `pattern` (a
    /// regular expression over the arguments joined by spaces), at `moment`. `of`: the process
    /// whose commands are watched, when it is not the one the action hits.
    Command {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
        moment: Moment,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        of: Option<Actor>,
    },
    /// A named point of a process's run: a timeline event it records (`received`,
    /// `lock_acquired`, `work_started`) or a place ordlab's own roles name (`after-claim`,
    /// `after-effect`, `before-ack`, `after-take`), optionally only for one job (`job-1`, an
    /// order event's type such as `created`) or one delivery (`1`: the first only).
    Event {
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery: Option<u64>,
    },
    /// A moment after the run's start (ms, before `--time-scale`).
    Time { after_ms: f64 },
    /// When the process starts (a skewed clock from its first instruction).
    Start,
}

/// Which matching occurrences fire: the `nth` (1-based), then every `every`-th after it, at
/// most `times` times (default: once without `every`, without end with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub nth: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

impl Default for Count {
    fn default() -> Count {
        Count::ONCE
    }
}

impl Count {
    /// The first match, once.
    pub const ONCE: Count = Count { nth: 1, every: None, times: None };

    /// The first `n` matches.
    pub fn first(n: u32) -> Count {
        Count { nth: 1, every: Some(1), times: Some(n) }
    }

    /// Does the `k`-th match (1-based) fire, when `fired` earlier matches have fired?
    pub fn fires(&self, k: u32, fired: u32) -> bool {
        let times = self.times.unwrap_or(if self.every.is_some() { u32::MAX } else { 1 });
        if fired >= times || k < self.nth {
            return false;
        }
        match self.every {
            None => k == self.nth,
            Some(e) => (k - self.nth) % e.max(1) == 0,
        }
    }

    /// The most times it can fire (None: without end).
    pub fn most(&self) -> Option<u32> {
        match (self.every, self.times) {
            (_, Some(t)) => Some(t),
            (None, None) => Some(1),
            (Some(_), None) => None,
        }
    }
}

/// What a consulting party saw, for the injector to match against every trigger.
#[derive(Clone, Debug, PartialEq)]
pub enum Occurrence<'a> {
    /// A command of `by` at the wire (the interposer), or a step the explorer released.
    Command { by: Actor, server: ServerKind, args: &'a [String], moment: Moment },
    /// A named point of `by`'s run, with the job it handles and its delivery count if known.
    Event { by: Actor, event: &'a str, job: Option<&'a str>, delivery: Option<u64> },
    /// `after_ms` (unscaled) have passed since the run's start.
    Time { after_ms: f64 },
    /// Process `by` starts.
    Start { by: Actor },
}

impl Occurrence<'_> {
    /// The process whose occurrence it is (None: the run's clock).
    pub fn by(&self) -> Option<Actor> {
        match self {
            Occurrence::Command { by, .. } | Occurrence::Event { by, .. } | Occurrence::Start { by } => Some(*by),
            Occurrence::Time { .. } => None,
        }
    }
}

/// `pattern` compiled once per thread (a trigger is asked at every command of a run).
fn compiled(pattern: &str) -> Option<regex::Regex> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<String, Option<regex::Regex>>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|c| c.borrow_mut().entry(pattern.to_string()).or_insert_with(|| regex::Regex::new(pattern).ok()).clone())
}

/// A statement's first keyword, a Redis command's name.
pub fn command_word(server: ServerKind, args: &[String]) -> Option<&str> {
    let first = args.first()?;
    match server {
        ServerKind::Redis => Some(first.as_str()),
        ServerKind::Postgres => first.split_whitespace().next(),
    }
}

impl Trigger {
    /// Does this trigger watch `occurrence`, for a fault whose action hits `target` (the
    /// process a command or event must come from, unless the trigger names another with `of`)?
    /// A `pattern` that is no valid expression matches nothing ([`Trigger::check`] refuses it
    /// before a run).
    pub fn matches(&self, occurrence: &Occurrence<'_>, target: Option<Actor>) -> bool {
        let from = |by: Actor, of: Option<Actor>| of.or(target).is_none_or(|want| want == by);
        match (self, occurrence) {
            (
                Trigger::Command { command, pattern, moment, of },
                Occurrence::Command { by, server, args, moment: m },
            ) => {
                moment == m
                    && from(*by, *of)
                    && command
                        .as_ref()
                        .is_none_or(|c| command_word(*server, args).is_some_and(|w| w.eq_ignore_ascii_case(c)))
                    && pattern.as_ref().is_none_or(|p| compiled(p).is_some_and(|re| re.is_match(&args.join(" "))))
            }
            (Trigger::Event { event, job, delivery }, Occurrence::Event { by, event: e, job: j, delivery: d }) => {
                event == e
                    && from(*by, None)
                    && job.as_ref().is_none_or(|want| j.is_some_and(|j| j == want))
                    && delivery.is_none_or(|want| d.unwrap_or(1) == want)
            }
            (Trigger::Time { after_ms }, Occurrence::Time { after_ms: now }) => now >= after_ms,
            (Trigger::Start, Occurrence::Start { by }) => from(*by, None),
            _ => false,
        }
    }

    /// Rules the types cannot express, as one line naming the key.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Trigger::Command { command: None, pattern: None, .. } => {
                Err("give command = \"XACK\" (a command's name) or pattern = \"…\" (a regular expression)".into())
            }
            Trigger::Command { pattern: Some(p), .. } => {
                regex::Regex::new(p).map(|_| ()).map_err(|e| format!("pattern {p:?} is no regular expression: {e}"))
            }
            Trigger::Time { after_ms } if !after_ms.is_finite() || *after_ms < 0.0 => {
                Err(format!("after_ms = {after_ms}: give a time ≥ 0"))
            }
            Trigger::Event { event, .. } if event.trim().is_empty() => Err("event is empty: name the event".into()),
            _ => Ok(()),
        }
    }

    /// The trigger's occurrence in words, with `nth` (`#2`, empty for a plain first) after
    /// what it counts: `the reply to its XREADGROUP #2` (after "at"), `lúc reply của
    /// XREADGROUP #2 tới` (with its own preposition).
    pub fn words(&self, nth: &str) -> crate::lang::Words {
        use crate::lang::Words;
        let n = if nth.is_empty() { String::new() } else { format!(" {nth}") };
        match self {
            Trigger::Command { command, pattern, moment, of } => {
                let what = command.clone().or_else(|| pattern.as_ref().map(|p| format!("/{p}/"))).unwrap_or_default();
                let whose_en = of.map(|o| format!("{o}'s")).unwrap_or_else(|| "its".into());
                let whose_vi = of.map(|o| format!(" của {o}")).unwrap_or_default();
                match moment {
                    Moment::Send => {
                        Words::new(format!("the send of {whose_en} {what}{n}"), format!("lúc gửi {what}{n}{whose_vi}"))
                    }
                    Moment::Reply => Words::new(
                        format!("the reply to {whose_en} {what}{n}"),
                        format!("lúc reply của {what}{n}{whose_vi} tới"),
                    ),
                }
            }
            Trigger::Event { event, job, delivery } => {
                let job = job.as_ref().map(|j| format!(" {j}")).unwrap_or_default();
                let first = match delivery {
                    Some(1) => Words::new(" (first delivery)", " (lần giao đầu)"),
                    Some(d) => Words::new(format!(" (delivery {d})"), format!(" (lần giao {d})")),
                    None => Words::same(""),
                };
                Words::new(format!("its {event}{job}{n}{}", first.en), format!("lúc {event}{job}{n}{}", first.vi))
            }
            Trigger::Time { after_ms } => {
                Words::new(format!("{after_ms} ms after the start"), format!("{after_ms} ms sau khi bắt đầu"))
            }
            Trigger::Start => Words::new("its start", "lúc khởi động"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_count_fires_at_the_nth_then_every_kth_at_most_times() {
        let once = Count { nth: 2, every: None, times: None };
        assert_eq!((1..=4).map(|k| once.fires(k, u32::from(k > 2))).collect::<Vec<_>>(), [false, true, false, false]);
        let every = Count { nth: 2, every: Some(3), times: Some(2) };
        let mut fired = 0;
        let mut at = Vec::new();
        for k in 1..=12 {
            if every.fires(k, fired) {
                fired += 1;
                at.push(k);
            }
        }
        assert_eq!(at, [2, 5], "2, 5, then its two times are spent");
        assert_eq!(Count::first(3).most(), Some(3));
        assert!(Count::first(3).fires(3, 2) && !Count::first(3).fires(4, 3));
        assert_eq!(Count { nth: 1, every: Some(1), times: None }.most(), None);
    }

    #[test]
    fn a_command_trigger_matches_its_name_or_pattern_its_moment_and_its_process() {
        let t = Trigger::Command { command: Some("xack".into()), pattern: None, moment: Moment::Reply, of: None };
        let ack = words(&["XACK", "orders", "g", "1-0"]);
        let at = |by, moment| Occurrence::Command { by, server: ServerKind::Redis, args: &ack, moment };
        let w1 = Some(Actor::Worker(1));
        assert!(t.matches(&at(Actor::Worker(1), Moment::Reply), w1));
        assert!(!t.matches(&at(Actor::Worker(1), Moment::Send), w1), "another moment");
        assert!(!t.matches(&at(Actor::Worker(2), Moment::Reply), w1), "another process");
        assert!(t.matches(&at(Actor::Worker(2), Moment::Reply), None), "no target: any process");
        // `of`: W2's command triggers a fault that hits W1.
        let of = Trigger::Command {
            command: None,
            pattern: Some("^EVALSHA ".into()),
            moment: Moment::Reply,
            of: Some(Actor::Worker(2)),
        };
        let script = words(&["EVALSHA", "abc", "2"]);
        let by_w2 = Occurrence::Command {
            by: Actor::Worker(2),
            server: ServerKind::Redis,
            args: &script,
            moment: Moment::Reply,
        };
        assert!(of.matches(&by_w2, w1));
        let by_w1 = Occurrence::Command {
            by: Actor::Worker(1),
            server: ServerKind::Redis,
            args: &script,
            moment: Moment::Reply,
        };
        assert!(!of.matches(&by_w1, w1));
        // A statement by its first keyword.
        let sql = words(&["update orders set status = $1", "paid"]);
        let t = Trigger::Command { command: Some("UPDATE".into()), pattern: None, moment: Moment::Send, of: None };
        assert!(t.matches(
            &Occurrence::Command {
                by: Actor::Consumer(1),
                server: ServerKind::Postgres,
                args: &sql,
                moment: Moment::Send
            },
            None
        ));
    }

    #[test]
    fn an_event_trigger_matches_its_event_job_and_delivery() {
        let t = Trigger::Event { event: "after-claim".into(), job: Some("job-1".into()), delivery: Some(1) };
        let at = |job, delivery| Occurrence::Event {
            by: Actor::Consumer(1),
            event: "after-claim",
            job: Some(job),
            delivery,
        };
        assert!(t.matches(&at("job-1", Some(1)), None));
        assert!(t.matches(&at("job-1", None), None), "an unknown delivery count is the first");
        assert!(!t.matches(&at("job-1", Some(2)), None), "the redelivered copy runs on");
        assert!(!t.matches(&at("job-2", Some(1)), None));
        let received =
            Occurrence::Event { by: Actor::Consumer(1), event: "received", job: Some("job-1"), delivery: None };
        assert!(!t.matches(&received, None));
    }

    #[test]
    fn a_time_trigger_matches_from_its_moment_on_and_bad_triggers_are_refused() {
        let t = Trigger::Time { after_ms: 500.0 };
        assert!(!t.matches(&Occurrence::Time { after_ms: 499.0 }, None));
        assert!(t.matches(&Occurrence::Time { after_ms: 500.0 }, None));
        assert!(Trigger::Command { command: None, pattern: None, moment: Moment::Send, of: None }.check().is_err());
        let bad = Trigger::Command { command: None, pattern: Some("(".into()), moment: Moment::Send, of: None };
        assert!(bad.check().unwrap_err().contains("no regular expression"));
        assert!(Trigger::Time { after_ms: -1.0 }.check().is_err());
    }
}
