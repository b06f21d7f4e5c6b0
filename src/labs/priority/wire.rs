//! A priority worker from a command line, read at the wire: its recorded `XREADGROUP`s and
//! `XACK`s become the family's own events (a read with what it got, a job taken, a job done),
//! so the same measures judge it as ordlab's own worker.
//!
//! A read is placed at its reply and waited from its send to its reply; the first entry it
//! delivered is taken at that reply, each next one when the worker acknowledged the one
//! before (a worker handles a batch one entry after the other, as the seed's loops do); a job
//! is done at the reply to its `XACK`.

use crate::labs::priority::worker::describe;
use crate::priority_queue::{Phase, Priority, PriorityEvent};
use crate::roles::priority_loop::{Block, Read};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, RawEvent, WireEntry};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A job delivered to a worker and not yet acknowledged.
#[derive(Clone, Debug)]
struct Delivered {
    entry_id: String,
    job: String,
    priority: Priority,
    phase: Phase,
    traced: bool,
    queued_ns: Option<u64>,
}

/// The translation's state: per worker, the jobs it was handed and has not started yet, and
/// the jobs started and not yet acknowledged.
#[derive(Debug, Default)]
pub struct WireJobs {
    waiting: BTreeMap<Actor, VecDeque<Delivered>>,
    /// (stream's priority, entry ID) → (who started it, the job).
    started: HashMap<(Priority, String), (Actor, String)>,
    /// The time scale the worker was told, where a read is shown at the scenario's figures
    /// (under the explorer: its BLOCKs were stretched so that only timer steps end them).
    told_scale: Option<f64>,
}

impl WireJobs {
    /// Reads shown as the scenario writes them, the worker having been told `scale`.
    pub fn shown_at_scale_1(told_scale: f64) -> WireJobs {
        WireJobs { told_scale: Some(told_scale), ..WireJobs::default() }
    }

    /// The family's events that `ev` (one recorded command of a worker) stands for, placed
    /// at its reply; none for anything else.
    pub fn translate(&mut self, ev: &RawEvent) -> Vec<RawEvent> {
        let EventKind::ServerCommand { args, error: false, entries, round_trip_us, .. } = &ev.kind else {
            return Vec::new();
        };
        let mut out = Vec::new();
        match args.first().map(|c| c.to_ascii_uppercase()).as_deref() {
            Some("XREADGROUP") => {
                let Some(read) = read_of(args) else { return out };
                let delivered: Vec<Delivered> = entries.iter().filter_map(delivered).collect();
                let got = read.streams.iter().map(|i| delivered.iter().filter(|d| d.priority.index() == *i).count());
                let kind = PriorityEvent::QueueRead {
                    read: describe(&read, crate::fault::TimeScale(1.0 / self.told_scale.unwrap_or(1.0))),
                    queues: read.streams.iter().map(|i| Priority::ALL[*i]).collect(),
                    count: read.count,
                    got: got.map(|n| n as u32).collect(),
                    waited_ms: round_trip_us.unwrap_or(0) as f64 / 1000.0,
                };
                out.push(RawEvent { mono_ns: ev.mono_ns, actor: ev.actor, kind: kind.event() });
                self.waiting.entry(ev.actor).or_default().extend(delivered);
            }
            Some("XACK") => {
                let Some(p) = args.get(1).and_then(|s| priority_of(s)) else { return out };
                for id in args.iter().skip(3) {
                    if let Some((_, job)) = self.started.remove(&(p, id.clone())) {
                        let kind = PriorityEvent::JobDone { job }.event();
                        out.push(RawEvent { mono_ns: ev.mono_ns, actor: ev.actor, kind });
                    }
                }
            }
            _ => return out,
        }
        out.extend(self.take_next(ev));
        out
    }

    /// The worker starts its next delivered job, if it has one and none in hand.
    fn take_next(&mut self, ev: &RawEvent) -> Option<RawEvent> {
        if self.started.values().any(|(a, _)| *a == ev.actor) {
            return None;
        }
        let d = self.waiting.get_mut(&ev.actor)?.pop_front()?;
        self.started.insert((d.priority, d.entry_id), (ev.actor, d.job.clone()));
        let waited_ms = d.queued_ns.map(|q| ev.mono_ns.saturating_sub(q) as f64 / 1e6);
        let kind = PriorityEvent::PriorityJobTaken {
            job: d.job,
            priority: d.priority,
            phase: d.phase,
            traced: d.traced,
            waited_ms,
        };
        Some(RawEvent { mono_ns: ev.mono_ns, actor: ev.actor, kind: kind.event() })
    }
}

/// `critical` (the run's key prefix is left out of a wire record): its priority.
fn priority_of(stream: &str) -> Option<Priority> {
    Priority::ALL.iter().copied().find(|p| p.name() == stream)
}

/// The read an `XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS s… id…` is.
fn read_of(args: &[String]) -> Option<Read> {
    let upper: Vec<String> = args.iter().map(|a| a.to_ascii_uppercase()).collect();
    let after = |name: &str| upper.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let streams_at = upper.iter().position(|a| a == "STREAMS")? + 1;
    let names = &args[streams_at..];
    let streams: Vec<usize> =
        names[..names.len() / 2].iter().map(|s| priority_of(s).map(|p| p.index())).collect::<Option<_>>()?;
    let count = match after("COUNT") {
        Some(n) => n.parse().ok()?,
        None => 0,
    };
    let block = match after("BLOCK").map(|ms| ms.parse::<f64>()) {
        None => Block::No,
        Some(Ok(ms)) if ms <= 0.0 => Block::Forever,
        Some(Ok(ms)) => Block::Ms(ms),
        Some(Err(_)) => return None,
    };
    Some(Read { streams, count, block })
}

/// A job as the priority producer queues it (`job`, `priority`, `phase`, `traced`, `queued_ns`).
fn delivered(e: &WireEntry) -> Option<Delivered> {
    let field = |name: &str| e.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    Some(Delivered {
        entry_id: e.id.clone(),
        job: field("job")?.to_string(),
        priority: priority_of(field("priority")?)?,
        phase: field("phase")?.parse().ok()?,
        traced: field("traced") == Some("1"),
        queued_ns: field("queued_ns").and_then(|n| n.parse().ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::ServerKind;

    fn wire(mono_ns: u64, args: &str, entries: Vec<WireEntry>, round_trip_us: i64) -> RawEvent {
        let kind = EventKind::ServerCommand {
            server: ServerKind::Redis,
            connection: 1,
            args: args.split(' ').map(String::from).collect(),
            reply: String::new(),
            error: false,
            entries,
            round_trip_us: Some(round_trip_us),
        };
        RawEvent { mono_ns, actor: Actor::Consumer(1), kind }
    }

    fn job(id: &str, job: &str, priority: &str) -> WireEntry {
        let fields =
            [("job", job), ("priority", priority), ("phase", "backlog"), ("traced", "1"), ("queued_ns", "1000")];
        WireEntry { id: id.into(), fields: fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    fn kinds(events: &[RawEvent]) -> Vec<PriorityEvent> {
        events.iter().map(|e| e.kind.family::<PriorityEvent>().expect("a priority event")).collect()
    }

    #[test]
    fn a_read_its_jobs_one_after_the_other_and_their_acks() {
        let mut w = WireJobs::default();
        let read = "XREADGROUP GROUP g C1 COUNT 10 BLOCK 100 STREAMS critical >";
        let got = w.translate(&wire(
            5_000_000,
            read,
            vec![job("1-0", "c-0001", "critical"), job("1-1", "c-0002", "critical")],
            250,
        ));
        let k = kinds(&got);
        assert_eq!(
            k[0],
            PriorityEvent::QueueRead {
                read: "XREADGROUP critical COUNT 10 BLOCK 100".into(),
                queues: vec![Priority::Critical],
                count: 10,
                got: vec![2],
                waited_ms: 0.25,
            }
        );
        // The first job is taken at the read's reply, 4 ms after it was queued.
        assert!(
            matches!(&k[1], PriorityEvent::PriorityJobTaken { job, waited_ms: Some(ms), .. } if job == "c-0001" && *ms == 4.999),
            "{k:?}"
        );
        assert_eq!(k.len(), 2);
        // Its XACK: done, and the next one taken.
        let k = kinds(&w.translate(&wire(7_000_000, "XACK critical g 1-0", Vec::new(), 100)));
        assert_eq!(k[0], PriorityEvent::JobDone { job: "c-0001".into() });
        assert!(matches!(&k[1], PriorityEvent::PriorityJobTaken { job, .. } if job == "c-0002"), "{k:?}");
        let k = kinds(&w.translate(&wire(8_000_000, "XACK critical g 1-1", Vec::new(), 100)));
        assert_eq!(k, [PriorityEvent::JobDone { job: "c-0002".into() }]);
        // An empty read over all three, blocking until something comes.
        let all = "XREADGROUP GROUP g C1 COUNT 1 BLOCK 0 STREAMS critical normal low > > >";
        let k = kinds(&w.translate(&wire(9_000_000, all, Vec::new(), 1_000)));
        assert!(
            matches!(&k[..], [PriorityEvent::QueueRead { read, got, .. }] if read == "XREADGROUP critical normal low COUNT 1 BLOCK 0" && *got == [0, 0, 0]),
            "{k:?}"
        );
        // Anything else stands for nothing.
        assert!(w.translate(&wire(1, "PING", Vec::new(), 1)).is_empty());
    }
}
