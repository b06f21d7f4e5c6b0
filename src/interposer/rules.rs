//! Faults at command boundaries: a rule names a command (`XREADGROUP`, or a statement's first
//! word such as `UPDATE`), which occurrence of it (the n-th, counted per worker over all its
//! connections), the moment (when the worker sends it, or when the server's reply arrives) and
//! what happens then.

use super::CommandView;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU32, Ordering};

/// When a rule looks at a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moment {
    /// The worker has sent the command; it has not been forwarded yet.
    Send,
    /// The server's reply has arrived; it has not reached the worker yet.
    Reply,
}

/// What the interposer does at a rule's moment.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Pass it on (no rule matched).
    Forward,
    /// SIGKILL the worker process; the command (at `send`) or the reply (at `reply`) never
    /// passes: at `reply`, the server has done the command (an `XREADGROUP`'s entry is pending
    /// with delivery count 1) and the worker never learns of it.
    Kill,
    /// Do not pass it on; the connection stays open (the worker waits for a reply that never
    /// comes, until its own timeout).
    Drop,
    /// Close both sides of the connection instead.
    Close,
    /// Pass it on this many ms later.
    DelayMs(f64),
}

/// One fault: at the `nth` (1-based) `command` of the worker, at `moment`, do `action`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct Rule {
    /// A Redis command name (`XREADGROUP`, case-insensitive) or a statement's first keyword
    /// (`UPDATE`, `COMMIT`); words after it must appear in the rest of the command (`EVALSHA
    /// 3f2a…`: that script; `WITH get_job`: a statement that mentions get_job).
    pub command: String,
    pub nth: u32,
    pub moment: Moment,
    pub action: Action,
}

impl Rule {
    /// Does this rule name the command in `view`?
    pub fn names(&self, view: &CommandView<'_>) -> bool {
        let (word, rest) = self.command.split_once(' ').unwrap_or((&self.command, ""));
        let rest = rest.trim().to_ascii_lowercase();
        command_word(view).is_some_and(|w| w.eq_ignore_ascii_case(word))
            && (rest.is_empty() || rest_of(view).to_ascii_lowercase().contains(&rest))
    }
}

/// The word a rule is matched against: a Redis command's name, a statement's first keyword.
pub fn command_word<'a>(view: &'a CommandView<'a>) -> Option<&'a str> {
    let first = view.args.first()?;
    match view.server {
        crate::timeline::ServerKind::Redis => Some(first.as_str()),
        crate::timeline::ServerKind::Postgres => first.split_whitespace().next(),
    }
}

/// What follows the command word: a Redis command's arguments, a statement's text.
fn rest_of(view: &CommandView<'_>) -> String {
    match view.server {
        crate::timeline::ServerKind::Redis => view.args.get(1..).unwrap_or_default().join(" "),
        crate::timeline::ServerKind::Postgres => view.args.first().cloned().unwrap_or_default(),
    }
}

/// The rules of one worker, with the per-rule counts of matching commands seen so far.
#[derive(Debug, Default)]
pub struct RuleSet {
    rules: Vec<(Rule, AtomicU32)>,
}

impl RuleSet {
    pub fn new(rules: Vec<Rule>) -> RuleSet {
        RuleSet { rules: rules.into_iter().map(|r| (r, AtomicU32::new(0))).collect() }
    }

    /// What to do with `view` at `moment`: the first rule whose count reaches its `nth` with
    /// this command decides; every rule that names the command counts it (at its moment).
    pub fn decide(&self, view: &CommandView<'_>, moment: Moment) -> Action {
        let mut action = Action::Forward;
        for (rule, seen) in &self.rules {
            if rule.moment != moment || !rule.names(view) {
                continue;
            }
            let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
            if n == rule.nth && action == Action::Forward {
                action = rule.action;
            }
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::ServerKind;

    fn view(args: &[String]) -> CommandView<'_> {
        CommandView { server: ServerKind::Redis, connection: 1, args }
    }

    #[test]
    fn the_nth_matching_command_at_its_moment_gets_the_action() {
        let set = RuleSet::new(vec![Rule {
            command: "xreadgroup".into(),
            nth: 2,
            moment: Moment::Reply,
            action: Action::Kill,
        }]);
        let read = vec!["XREADGROUP".to_string(), "GROUP".into()];
        let ack = vec!["XACK".to_string()];
        assert_eq!(set.decide(&view(&read), Moment::Send), Action::Forward, "send is not counted");
        assert_eq!(set.decide(&view(&read), Moment::Reply), Action::Forward, "first reply");
        assert_eq!(set.decide(&view(&ack), Moment::Reply), Action::Forward, "other command");
        assert_eq!(set.decide(&view(&read), Moment::Reply), Action::Kill, "second reply");
        assert_eq!(set.decide(&view(&read), Moment::Reply), Action::Forward, "only once");
    }

    #[test]
    fn a_statement_is_named_by_its_first_keyword() {
        let set =
            RuleSet::new(vec![Rule { command: "UPDATE".into(), nth: 1, moment: Moment::Send, action: Action::Drop }]);
        let sql = vec!["update orders set status = $1".to_string(), "paid".into()];
        let v = CommandView { server: ServerKind::Postgres, connection: 1, args: &sql };
        assert_eq!(set.decide(&v, Moment::Send), Action::Drop);
    }

    #[test]
    fn words_after_the_command_must_appear_in_the_rest_of_it() {
        let rule = |command: &str| Rule { command: command.into(), nth: 1, moment: Moment::Send, action: Action::Drop };
        let script = vec!["EVALSHA".to_string(), "3f2a9c".into(), "2".into(), "bull:q:lock".into()];
        assert!(rule("EVALSHA 3f2a").names(&view(&script)));
        assert!(!rule("EVALSHA 77aa").names(&view(&script)));
        let sql = vec!["with j as (select * from graphile_worker.get_job($1))".to_string(), "W1".into()];
        let v = CommandView { server: ServerKind::Postgres, connection: 1, args: &sql };
        assert!(rule("with GET_JOB").names(&v));
        assert!(!rule("with complete_jobs").names(&v));
        assert!(!rule("select get_job").names(&v), "the first keyword still decides");
    }
}
