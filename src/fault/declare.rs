//! A fault as a scenario declares it: one flat table of a target, a trigger, a count and an
//! action, the same for every kind and every process. The table is read into the typed
//! [`Fault`] (one line naming the key on a mistake) and written back the same way, so a role
//! process gets its faults in its JSON config unchanged.
//!
//! ```toml
//! faults = [
//!   { on = "W1", command = "BLPOP", at = "reply", action = "kill" },      # the wire
//!   { on = "C1", event = "lock_acquired", action = { pause_ms = 1500 } }, # a timeline event
//!   { on = "redis", after_ms = 400, action = "restart" },                 # the run's clock
//!   { on = "partner", event = "request", job = "job-4", action = "refuse" },
//! ]
//! ```

use super::action::Action;
use super::trigger::{Count, Moment, Trigger};
use crate::lang::Words;
use crate::timeline::{Actor, ServerKind};
use serde::{Deserialize, Serialize};

/// What a fault's action hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// Whichever process the trigger sees first (each process counts for itself).
    Any,
    /// One process by its timeline name (`W1`, `C2`, `producer`).
    Process(Actor),
    /// The n-th (1-based) of the processes the fault is declared among: a worker command's
    /// processes (`worker = 1`), whatever the kind calls them.
    Index(u32),
    /// A server of the run.
    Server(ServerKind),
    /// The side-effect partner.
    Partner,
}

/// One fault: when it fires and what it does then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Table", into = "Table")]
pub struct Fault {
    pub target: Target,
    pub trigger: Trigger,
    pub count: Count,
    /// Each matching occurrence that the count lets fire does so with this probability, drawn
    /// from the run's seed (sampled runs); a fault with one is allowed not to fire.
    pub probability: Option<f64>,
    pub action: Action,
}

impl Fault {
    /// SIGKILL at the `nth` `command` of the process, at `moment`.
    pub fn kill_at(target: Target, command: &str, nth: u32, moment: Moment) -> Fault {
        Fault {
            target,
            trigger: Trigger::Command { command: Some(command.to_string()), pattern: None, moment, of: None },
            count: Count { nth, every: None, times: None },
            probability: None,
            action: Action::Kill,
        }
    }

    /// `action` at named point `event` of the process (for `job` if given).
    pub fn at_event(target: Target, event: &str, job: Option<&str>, action: Action) -> Fault {
        Fault {
            target,
            trigger: Trigger::Event { event: event.to_string(), job: job.map(str::to_string), delivery: None },
            count: Count::ONCE,
            probability: None,
            action,
        }
    }

    /// The process the action hits, where the fault names one (None: whoever the trigger
    /// sees, or not a process).
    pub fn process(&self) -> Option<Actor> {
        match self.target {
            Target::Process(a) => Some(a),
            _ => None,
        }
    }

    /// Is this fault for a member of a group whose `index`-th process is `actor`?
    pub fn aims_at(&self, actor: Actor, index: u32) -> bool {
        match self.target {
            Target::Any => true,
            Target::Process(a) => a == actor,
            Target::Index(i) => i == index,
            Target::Server(_) | Target::Partner => false,
        }
    }

    /// The same fault aimed at `actor` (a group's `worker = n` resolved).
    pub fn resolved(&self, actor: Actor) -> Fault {
        let target = match self.target {
            Target::Index(_) => Target::Process(actor),
            t => t,
        };
        Fault { target, ..self.clone() }
    }

    /// Must it fire in every run? A sampled fault, or one under a time trigger when the
    /// run may end first, may not.
    pub fn must_fire(&self) -> bool {
        self.probability.is_none()
    }

    /// Rules the types cannot express, in one line naming the key and the fix.
    pub fn check(&self) -> Result<(), String> {
        self.trigger.check()?;
        self.action.check()?;
        if self.count.nth == 0 || self.count.every == Some(0) || self.count.times == Some(0) {
            return Err("nth, every and times count from 1: the first command is nth = 1".into());
        }
        if let Some(p) = self.probability {
            if !(p > 0.0 && p <= 1.0) {
                return Err(format!("probability = {p}: give a number in (0, 1]"));
            }
        }
        use super::action::Reach;
        let reach = self.action.reaches();
        let at_wire = matches!(self.trigger, Trigger::Command { .. });
        match self.target {
            Target::Server(_) if !reach.contains(&Reach::Server) => {
                Err(format!("on = a server: a server can only be restarted, not {}", self.action.words().en))
            }
            Target::Partner if !reach.contains(&Reach::Partner) => {
                Err("on = \"partner\": the partner can refuse, lose-reply or { delay_ms = … }".into())
            }
            Target::Any | Target::Process(_) | Target::Index(_) if !at_wire && !reach.contains(&Reach::Process) => {
                Err(format!(
                    "action {:?} acts at a command boundary: give command = \"…\" and at = \"send\" or \"reply\"",
                    self.action.words().en
                ))
            }
            _ if self.action == Action::LoseReply
                && matches!(self.trigger, Trigger::Command { moment: Moment::Send, .. }) =>
            {
                Err("action = \"lose-reply\" acts when the reply arrives: at = \"reply\"".into())
            }
            _ => Ok(()),
        }
    }

    /// Whom the action hits, in words: `W1`, `any worker`, `redis`.
    pub fn target_words(&self) -> Words {
        match self.target {
            Target::Any => Words::new("any process", "bất kỳ tiến trình nào"),
            Target::Process(a) => Words::same(&a.to_string()),
            Target::Index(i) => crate::words!("process {i}", "tiến trình {i}"),
            Target::Server(ServerKind::Redis) => Words::same("redis"),
            Target::Server(ServerKind::Postgres) => Words::same("postgres"),
            Target::Partner => Words::new("the partner", "đối tác"),
        }
    }

    /// The fault in words, also its name on the timeline and in a verdict: `W1: SIGKILL at
    /// the reply to its BLPOP #1`.
    pub fn label(&self) -> Words {
        if let (Target::Partner, Trigger::Event { event, job, .. }) = (self.target, &self.trigger) {
            return self.partner_label(event, job.as_deref());
        }
        let (who, what) = (self.target_words(), self.action.words());
        let (nth, every) = match (self.count.nth, self.count.every, self.count.times) {
            (1, None, _) if !matches!(self.trigger, Trigger::Command { .. }) => (String::new(), Words::same("")),
            (n, None, _) => (format!("#{n}"), Words::same("")),
            (n, Some(e), Some(t)) => {
                (format!("#{n}"), Words::new(format!(", every {e} ×{t}"), format!(", mỗi {e} ×{t}")))
            }
            (n, Some(e), None) => (format!("#{n}"), Words::new(format!(", every {e}"), format!(", mỗi {e}"))),
        };
        let when = self.trigger.words(&nth);
        let p = self.probability.map(|p| format!(" (p={p})")).unwrap_or_default();
        Words::new(
            format!("{}: {} at {}{}{p}", who.en, what.en, when.en, every.en),
            format!("{}: {} {}{}{p}", who.vi, what.vi, when.vi, every.vi),
        )
    }
}

impl Fault {
    /// A partner's fault in words: `the partner refuses the email request for job-1 (×2)`.
    fn partner_label(&self, event: &str, job: Option<&str>) -> Words {
        let for_job = |w: &str| job.map(|j| format!(" {w} {j}")).unwrap_or_default();
        let (kind_en, kind_vi) = if event == "request" {
            (String::new(), String::new())
        } else {
            (format!("{event} "), format!(" {event}"))
        };
        let mut n = if self.count.nth > 1 { format!(" #{}", self.count.nth) } else { String::new() };
        if let Some(t) = self.count.most().filter(|t| *t > 1) {
            n.push_str(&format!(" (×{t})"));
        }
        let obj_en = format!("the {kind_en}request{}{n}", for_job("for"));
        let obj_vi = format!("request{kind_vi}{}{n}", for_job("cho"));
        let p = self.probability.map(|p| format!(" (p={p})")).unwrap_or_default();
        match self.action {
            Action::Refuse => {
                Words::new(format!("the partner refuses {obj_en}{p}"), format!("đối tác từ chối {obj_vi}{p}"))
            }
            Action::DelayMs(ms) => Words::new(
                format!("the partner answers {obj_en} {ms} ms late{p}"),
                format!("đối tác trả lời {obj_vi} trễ {ms} ms{p}"),
            ),
            _ => Words::new(
                format!("the partner does {obj_en} and loses the reply{p}"),
                format!("đối tác làm {obj_vi} rồi mất reply{p}"),
            ),
        }
    }
}

/// A fault's table in a scenario (and in a role's JSON config).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    /// `W1`, `C2`, `producer`, `redis`, `postgres`, `partner`; none: any process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    on: Option<String>,
    /// The n-th of the processes the fault is declared among (a worker command's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    worker: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<Moment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivery: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    start: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    every: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    times: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probability: Option<f64>,
    /// Default: `kill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
}

fn actor(key: &str, name: &str) -> Result<Actor, String> {
    Actor::try_from(name.to_string()).map_err(|_| format!("{key} = {name:?}: name a process (W1, C2, producer)"))
}

impl TryFrom<Table> for Fault {
    type Error = String;

    fn try_from(t: Table) -> Result<Fault, String> {
        let target = match (t.on.as_deref(), t.worker) {
            (Some(_), Some(_)) => return Err("give on = \"W1\" or worker = 1, not both".into()),
            (None, Some(i)) => Target::Index(i),
            (None, None) => Target::Any,
            (Some("redis"), None) => Target::Server(ServerKind::Redis),
            (Some("postgres"), None) => Target::Server(ServerKind::Postgres),
            (Some("partner" | "sink"), None) => Target::Partner,
            (Some(name), None) => Target::Process(actor("on", name)?),
        };
        let kinds = [t.command.is_some() || t.pattern.is_some(), t.event.is_some(), t.after_ms.is_some(), t.start];
        let wrong_place = match kinds {
            [true, false, false, false] => t.job.is_some() || t.delivery.is_some(),
            [false, true, false, false] => t.at.is_some() || t.of.is_some(),
            [false, false, true, false] | [false, false, false, true] => {
                t.at.is_some() || t.job.is_some() || t.of.is_some()
            }
            _ => false,
        };
        if wrong_place {
            return Err("at and of go with command; job and delivery with event".into());
        }
        let trigger = match kinds {
            [true, false, false, false] => Trigger::Command {
                command: t.command,
                pattern: t.pattern,
                moment: t.at.ok_or("a command's fault needs at = \"send\" or at = \"reply\"")?,
                of: t.of.as_deref().map(|o| actor("of", o)).transpose()?,
            },
            [false, true, false, false] => {
                Trigger::Event { event: t.event.unwrap_or_default(), job: t.job, delivery: t.delivery }
            }
            [false, false, true, false] => Trigger::Time { after_ms: t.after_ms.unwrap_or_default() },
            [false, false, false, true] => Trigger::Start,
            [false, false, false, false] if t.action.is_some_and(|a| matches!(a, Action::SkewMs(_))) => Trigger::Start,
            _ => {
                return Err(
                    "give one trigger: command = \"…\" (with at), event = \"…\", after_ms = …, or start = true".into()
                )
            }
        };
        let fault = Fault {
            target,
            trigger,
            count: Count { nth: t.nth.unwrap_or(1), every: t.every, times: t.times },
            probability: t.probability,
            action: t.action.unwrap_or(Action::Kill),
        };
        fault.check()?;
        Ok(fault)
    }
}

impl From<Fault> for Table {
    fn from(f: Fault) -> Table {
        let mut t = Table {
            nth: (f.count.nth != 1).then_some(f.count.nth),
            every: f.count.every,
            times: f.count.times,
            probability: f.probability,
            action: Some(f.action),
            ..Table::default()
        };
        match f.target {
            Target::Any => {}
            Target::Index(i) => t.worker = Some(i),
            Target::Process(a) => t.on = Some(a.to_string()),
            Target::Server(ServerKind::Redis) => t.on = Some("redis".into()),
            Target::Server(ServerKind::Postgres) => t.on = Some("postgres".into()),
            Target::Partner => t.on = Some("partner".into()),
        }
        match f.trigger {
            Trigger::Command { command, pattern, moment, of } => {
                (t.command, t.pattern, t.at, t.of) = (command, pattern, Some(moment), of.map(|o| o.to_string()))
            }
            Trigger::Event { event, job, delivery } => (t.event, t.job, t.delivery) = (Some(event), job, delivery),
            Trigger::Time { after_ms } => t.after_ms = Some(after_ms),
            Trigger::Start => t.start = true,
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Faults {
        faults: Vec<Fault>,
    }

    fn parse(text: &str) -> Result<Vec<Fault>, String> {
        toml::from_str::<Faults>(text).map(|f| f.faults).map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_worker_command_s_fault_reads_as_it_always_did() {
        let f = parse(r#"faults = [{ worker = 1, command = "SET", nth = 2, at = "send", action = "kill" }]"#).unwrap();
        assert_eq!(f, [Fault::kill_at(Target::Index(1), "SET", 2, Moment::Send)]);
        let lib = parse(r#"faults = [{ command = "BLPOP", nth = 1, at = "reply" }]"#).unwrap();
        assert_eq!(lib, [Fault::kill_at(Target::Any, "BLPOP", 1, Moment::Reply)], "kill by default");
    }

    #[test]
    fn every_trigger_and_target_reads_and_writes_back_the_same() {
        let text = r#"faults = [
            { on = "C1", event = "lock_acquired", action = { pause_ms = 1500 } },
            { on = "redis", after_ms = 400, action = "restart" },
            { on = "partner", event = "request", job = "job-4", action = "refuse", nth = 1, every = 1, times = 2 },
            { on = "W1", command = "XACK", at = "reply", action = "lose-reply" },
            { on = "W1", pattern = "^EVALSHA", of = "W2", at = "reply" },
            { on = "W2", action = { skew_ms = -3000 } },
            { event = "received", job = "created", probability = 0.5 },
        ]"#;
        let faults = parse(text).unwrap();
        assert_eq!(faults[0].action, Action::PauseMs(1500.0));
        assert_eq!(faults[1].target, Target::Server(ServerKind::Redis));
        assert_eq!(faults[2].count, Count::first(2));
        assert_eq!(faults[5].trigger, Trigger::Start, "a skew with no trigger is from the start");
        assert!(!faults[6].must_fire() && faults[0].must_fire());
        for f in &faults {
            let json = serde_json::to_string(f).unwrap();
            assert_eq!(&serde_json::from_str::<Fault>(&json).unwrap(), f, "{json}");
        }
    }

    #[test]
    fn a_fault_that_cannot_be_carried_out_is_one_line_naming_the_key() {
        let err = |text: &str| parse(&format!("faults = [{text}]")).unwrap_err();
        assert!(err(r#"{ command = "SET" }"#).contains("at = \"send\""));
        assert!(err(r#"{ on = "redis", after_ms = 1, action = "kill" }"#).contains("only be restarted"));
        assert!(err(r#"{ on = "W1", event = "received", action = "lose-reply" }"#).contains("command boundary"));
        assert!(err(r#"{ command = "SET", at = "send", action = "lose-reply" }"#).contains("at = \"reply\""));
        assert!(err(r#"{ command = "SET", at = "send", nth = 0 }"#).contains("nth = 1"));
        assert!(err(r#"{ on = "X9", command = "SET", at = "send" }"#).contains("name a process"));
        assert!(err(r#"{ command = "SET", event = "received", at = "send" }"#).contains("one trigger"));
        assert!(err(r#"{ command = "SET", at = "send", color = 1 }"#).contains("unknown field"));
    }

    #[test]
    fn a_label_says_whom_what_and_when() {
        let f = Fault::kill_at(Target::Process(Actor::Worker(1)), "BLPOP", 1, Moment::Reply);
        assert_eq!(f.label().en, "W1: SIGKILL at the reply to its BLPOP #1");
        let p = Fault::at_event(Target::Process(Actor::Consumer(1)), "lock_acquired", None, Action::PauseMs(1500.0));
        assert_eq!(p.label().en, "C1: pause (SIGSTOP) for 1500 ms at its lock_acquired");
        assert_eq!(p.label().vi, "C1: tạm dừng (SIGSTOP) 1500 ms lúc lock_acquired");
        let k = Fault::kill_at(Target::Process(Actor::Worker(1)), "BLPOP", 2, Moment::Reply);
        assert_eq!(k.label().vi, "W1: SIGKILL lúc reply của BLPOP #2 tới");
        let refuse = parse(r#"faults = [{ on = "partner", event = "email", job = "job-1", nth = 1, every = 1, times = 2, action = "refuse" }]"#).unwrap();
        assert_eq!(refuse[0].label().en, "the partner refuses the email request for job-1 (×2)");
        assert_eq!(refuse[0].label().vi, "đối tác từ chối request email cho job-1 (×2)");
    }
}
