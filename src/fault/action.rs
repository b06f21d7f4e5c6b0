//! What a fault does when it fires: to a process (SIGKILL, pause, a skewed clock), to a
//! connection at a command boundary (delay, lose the reply, hang, reset), to a server (refuse
//! new connections a while, restart it on its data), or at the side-effect partner (refuse the
//! request, lose its reply, delay it).
//!
//! In a scenario: `action = "kill"`, `"lose-reply"`, `"drop"`, `"reset"`, `"refuse"`,
//! `"restart"`, or `{ pause_ms = 1500 }`, `{ delay_ms = 200 }`, `{ refuse_connections_ms = 800 }`,
//! `{ skew_ms = -5000 }`.

use crate::lang::Words;
use serde::{Deserialize, Serialize};

/// One fault's action.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
pub enum Action {
    /// SIGKILL the process; at the wire, the command (at its send) or the reply (at its reply)
    /// never passes: at the reply, the server has done the command and the process never learns
    /// of it.
    #[serde(rename = "kill")]
    Kill,
    /// SIGSTOP the process, SIGCONT it this many ms (before `--time-scale`) later: everything
    /// it holds (a lock's lease, a stream entry) ages meanwhile.
    #[serde(rename = "pause_ms")]
    PauseMs(f64),
    /// Pass the command (at its send) or the reply (at its reply) on this many ms later; at
    /// the partner, answer the request this much later.
    #[serde(rename = "delay_ms", alias = "delay-ms")]
    DelayMs(f64),
    /// At the reply: the server did the command, the process never hears of it, its
    /// connection is closed. At the partner: the effect happens, the caller gets a failure.
    #[serde(rename = "lose-reply", alias = "apply-then-fail")]
    LoseReply,
    /// Pass nothing more on that connection, in either direction, and keep it open: the
    /// process waits for a reply that never comes, until its own timeout.
    #[serde(rename = "drop")]
    Drop,
    /// Reset the connection (TCP RST) at that moment: at the send, the command never reaches
    /// the server.
    #[serde(rename = "reset", alias = "close")]
    Reset,
    /// At the partner: refuse the request (a 503), nothing happens.
    #[serde(rename = "refuse")]
    Refuse,
    /// Refuse the process's new connections to the server for this many ms (a process cut
    /// off from one server): each is reset as soon as it is accepted.
    #[serde(rename = "refuse_connections_ms")]
    RefuseConnectionsMs(f64),
    /// SIGKILL the server (redis-server, postgres) and start it again on the same data
    /// directory with the lab's persistence setting: what it had not written is gone.
    #[serde(rename = "restart")]
    Restart,
    /// Shift the process's clock by this many ms (libfaketime): a positive skew runs ahead.
    #[serde(rename = "skew_ms")]
    SkewMs(f64),
}

/// What an action hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// A process (its pid's group).
    Process,
    /// A connection at a command boundary (the interposer).
    Wire,
    /// A server.
    Server,
    /// The side-effect partner's answer to a request.
    Partner,
}

impl Action {
    /// Where the action can be carried out. Several answer to more than one: a delay at the
    /// wire or at the partner, a lost reply at the wire or at the partner.
    pub fn reaches(&self) -> &'static [Reach] {
        match self {
            Action::Kill => &[Reach::Process, Reach::Wire],
            Action::PauseMs(_) | Action::SkewMs(_) => &[Reach::Process],
            Action::DelayMs(_) | Action::LoseReply => &[Reach::Wire, Reach::Partner],
            Action::Drop | Action::Reset => &[Reach::Wire],
            Action::RefuseConnectionsMs(_) => &[Reach::Wire],
            Action::Refuse => &[Reach::Partner],
            Action::Restart => &[Reach::Server],
        }
    }

    /// Rules the types cannot express.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Action::PauseMs(ms) | Action::DelayMs(ms) | Action::RefuseConnectionsMs(ms)
                if !ms.is_finite() || *ms < 0.0 =>
            {
                Err(format!("{ms} ms: give a duration ≥ 0"))
            }
            Action::SkewMs(ms) if !ms.is_finite() => Err(format!("skew_ms = {ms}: give a number of ms")),
            _ => Ok(()),
        }
    }

    /// The action in a few words: `SIGKILL`, `pause 1500 ms`, `lose the reply`.
    pub fn words(&self) -> Words {
        match *self {
            Action::Kill => Words::same("SIGKILL"),
            Action::PauseMs(ms) => crate::words!("pause (SIGSTOP) for {ms} ms", "tạm dừng (SIGSTOP) {ms} ms"),
            Action::DelayMs(ms) => crate::words!("delay {ms} ms", "trễ {ms} ms"),
            Action::LoseReply => Words::new("lose the reply", "mất reply"),
            Action::Drop => Words::new("hold everything back", "giữ lại mọi thứ"),
            Action::Reset => Words::new("reset the connection", "reset kết nối"),
            Action::Refuse => Words::new("refuse the request", "từ chối request"),
            Action::RefuseConnectionsMs(ms) => {
                crate::words!("refuse new connections for {ms} ms", "từ chối kết nối mới trong {ms} ms")
            }
            Action::Restart => Words::new("SIGKILL and restart", "SIGKILL rồi khởi động lại"),
            Action::SkewMs(ms) => crate::words!("skew the clock by {ms:+} ms", "lệch đồng hồ {ms:+} ms"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct One {
        action: Action,
    }

    fn parse(toml_text: &str) -> Result<Action, String> {
        toml::from_str::<One>(toml_text).map(|o| o.action).map_err(|e| e.to_string())
    }

    #[test]
    fn actions_read_as_a_word_or_a_table_of_one_duration() {
        assert_eq!(parse(r#"action = "kill""#), Ok(Action::Kill));
        assert_eq!(parse(r#"action = "lose-reply""#), Ok(Action::LoseReply));
        assert_eq!(parse(r#"action = "close""#), Ok(Action::Reset), "the interposer's old word");
        assert_eq!(parse("action = { pause_ms = 1500 }"), Ok(Action::PauseMs(1500.0)));
        assert_eq!(parse("action = { delay-ms = 20 }"), Ok(Action::DelayMs(20.0)), "the interposer's old key");
        assert_eq!(parse("action = { skew_ms = -5000 }"), Ok(Action::SkewMs(-5000.0)));
        assert!(parse(r#"action = "explode""#).is_err());
        assert!(Action::PauseMs(-1.0).check().is_err() && Action::PauseMs(0.0).check().is_ok());
    }
}
