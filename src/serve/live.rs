//! The run going on, as every page watching it sees it: what it has said so far (its lines,
//! its latest picture, its verdicts) and the pages watching. A page that connects late — a
//! reload in the middle of a run — gets everything said so far, then the rest live.

use super::stream::Streamed;
use tokio::sync::mpsc;

/// The run going on and its watchers.
pub struct LiveRun {
    /// `lab/variant`, for the 409 of a second request.
    pub label: String,
    history: Vec<Streamed>,
    watchers: Vec<mpsc::UnboundedSender<Streamed>>,
}

impl LiveRun {
    pub fn new(label: String, started: Streamed) -> LiveRun {
        LiveRun { label, history: vec![started], watchers: Vec::new() }
    }

    /// A new watcher: everything said so far, then what comes.
    pub fn watch(&mut self) -> mpsc::UnboundedReceiver<Streamed> {
        let (tx, rx) = mpsc::unbounded_channel();
        for m in &self.history {
            let _ = tx.send(m.clone());
        }
        self.watchers.push(tx);
        rx
    }

    /// A message of the run: kept (a run's picture replaces its picture before) and sent to
    /// every watcher still there.
    pub fn say(&mut self, m: Streamed) {
        if let Streamed::Picture { run, .. } = &m {
            let run = *run;
            self.history.retain(|h| !matches!(h, Streamed::Picture { run: r, .. } if *r == run));
        }
        self.watchers.retain(|w| w.send(m.clone()).is_ok());
        self.history.push(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64) -> Streamed {
        Streamed::Line { seq, run: 1, t_ms: 0, en: format!("line {seq}"), vi: String::new() }
    }

    #[test]
    fn a_late_watcher_gets_everything_so_far_then_the_rest() {
        let started = Streamed::Started {
            lab: "baseline".into(),
            variant: "baseline".into(),
            schedule: None,
            runs: 1,
            started_ms: 1,
        };
        let mut live = LiveRun::new("baseline/baseline".into(), started);
        let mut early = live.watch();
        live.say(line(1));
        live.say(Streamed::Picture { run: 1, done: false, en: "a".into(), vi: "a".into() });
        live.say(Streamed::Picture { run: 1, done: false, en: "b".into(), vi: "b".into() });
        let mut late = live.watch();
        live.say(line(2));
        let said = |rx: &mut mpsc::UnboundedReceiver<Streamed>| {
            let mut out = Vec::new();
            while let Ok(m) = rx.try_recv() {
                out.push(serde_json::to_value(&m).unwrap()["event"].as_str().unwrap().to_string());
            }
            out
        };
        assert_eq!(said(&mut early), ["started", "line", "picture", "picture", "line"]);
        assert_eq!(said(&mut late), ["started", "line", "picture", "line"], "the latest picture only");
    }
}
