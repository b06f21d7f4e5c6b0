//! What a run tells the page, one Server-Sent Event per message: that it started (and when),
//! each timeline line as the run records it, the run drawn so far, each run's verdict with the
//! tally so far, and how it ended. The page draws and words them in its language: every
//! message carries both.

use bytes::Bytes;

/// One message of a run's event stream.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Streamed {
    /// A run began: of `variant` of `lab` (or a replay of `schedule`), `runs` times, at
    /// `started_ms` (ms since the Unix epoch, this machine's clock).
    Started { lab: String, variant: String, schedule: Option<String>, runs: u32, started_ms: u64 },
    /// A timeline line of run `run`, the moment the run recorded its event.
    Line { seq: u64, run: u32, t_ms: i64, en: String, vi: String },
    /// Run `run` drawn from its events so far, in both languages (SVG); `done` once it is over.
    Picture { run: u32, done: bool, en: String, vi: String },
    /// Run `run` of `runs` is over: its verdict (`wrong`, `right`, `unknown`) and the tally
    /// so far, in words.
    RunDone { run: u32, runs: u32, verdict: String, wrong: u32, judged: u32, en: String, vi: String },
    /// Every run is over: the text report's outcome lines.
    Verdict { en: String, vi: String, matched: bool },
    /// The run could not be made (a server would not start, …).
    Failed { line: String },
    /// The teacher stopped it: its servers and processes are stopped.
    Cancelled { en: String, vi: String },
}

impl Streamed {
    /// The message as one Server-Sent Event.
    pub fn sse(&self) -> Bytes {
        let json = serde_json::to_value(self).expect("messages always serialize");
        let event = json["event"].as_str().unwrap_or("line").to_string();
        Bytes::from(format!("event: {event}\ndata: {json}\n\n"))
    }

    /// Does it end the run's stream?
    pub fn is_last(&self) -> bool {
        matches!(self, Streamed::Verdict { .. } | Streamed::Failed { .. } | Streamed::Cancelled { .. })
    }
}

/// Now, in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_is_one_server_sent_event() {
        let sse = Streamed::Line { seq: 3, run: 1, t_ms: 54, en: "C1 wrote".into(), vi: "C1 ghi".into() }.sse();
        let text = std::str::from_utf8(&sse).unwrap();
        assert!(text.starts_with("event: line\ndata: {") && text.ends_with("}\n\n"), "{text}");
        assert!(text.contains(r#""seq":3"#) && text.contains(r#""t_ms":54"#));
        let done = Streamed::Cancelled { en: "stopped".into(), vi: "đã dừng".into() };
        assert!(std::str::from_utf8(&done.sse()).unwrap().starts_with("event: cancelled\n") && done.is_last());
    }
}
