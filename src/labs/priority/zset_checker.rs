//! A sorted set as a priority queue, judged from the timeline and what the server held: the
//! order equal scores come out in, jobs lost to a crash, how long an arrival waits for the
//! worker, the commands an idle worker sends, and how long low waits under a flood.
//!
//! Every duration is in real milliseconds of the run; the limits are scaled by the run's time
//! scale before comparing.

use crate::checker::{RunVerdict, Verdict};
use crate::labs::priority::served::{tracks, waits, Waits};
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{Phase, Priority};
use crate::timeline::Event;
use serde::{Deserialize, Serialize};

/// What a sorted-set queue is expected to do, as a lab checks it. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZsetClaims {
    /// Jobs of equal score come out in the order they were queued.
    #[serde(default)]
    pub fifo_ties: bool,
    /// Every queued job is done in the end.
    #[serde(default)]
    pub no_loss: bool,
    /// A job queued into an idle set waits at most this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<f64>,
    /// An idle worker sends at most this many commands per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_commands_per_s: Option<f64>,
    /// Under a flood of critical jobs, a low job waits at most this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_wait_ms: Option<f64>,
}

/// A member as it was queued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedMember {
    pub job: String,
    pub member: String,
    pub score: f64,
}

/// The order a worker took jobs in, against the two rules it could follow.
#[derive(Clone, Debug, PartialEq)]
pub struct TieOrder {
    pub taken: Vec<String>,
    /// Highest score first, equal scores in the order queued.
    pub fifo: Vec<String>,
    /// Highest score first, equal scores by member bytes, greatest first (what ZPOPMAX does).
    pub reverse_bytes: Vec<String>,
}

impl TieOrder {
    pub fn is_fifo(&self) -> bool {
        self.taken == self.fifo
    }
    pub fn is_reverse_bytes(&self) -> bool {
        self.taken == self.reverse_bytes
    }
}

pub fn tie_order(queued: &[QueuedMember], events: &[Event]) -> TieOrder {
    let mut fifo: Vec<&QueuedMember> = queued.iter().collect();
    fifo.sort_by(|a, b| b.score.total_cmp(&a.score)); // stable: queue order within a score
    let mut bytes: Vec<&QueuedMember> = queued.iter().collect();
    bytes.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.member.as_bytes().cmp(a.member.as_bytes())));
    let ids = |v: Vec<&QueuedMember>| v.into_iter().map(|m| m.job.clone()).collect();
    let taken = events
        .iter()
        .filter_map(|e| match e.kind.family::<PriorityEvent>().as_ref() {
            Some(PriorityEvent::PriorityJobTaken { job, .. }) => Some(job.clone()),
            _ => None,
        })
        .collect();
    TieOrder { taken, fifo: ids(fifo), reverse_bytes: ids(bytes) }
}

/// Pop commands an idle worker sent, as the server counted them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleCount {
    pub ms: f64,
    pub commands: i64,
}

impl IdleCount {
    pub fn per_s(&self) -> f64 {
        if self.ms > 0.0 {
            self.commands as f64 * 1000.0 / self.ms
        } else {
            0.0
        }
    }
}

/// What a sorted-set run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZsetMeasures {
    pub ties: Option<TieOrder>,
    /// Queued jobs neither done nor left in the queue or the processing set.
    pub lost: i64,
    /// Jobs taken more than once (a lease ended and the job came back).
    pub taken_twice: u32,
    pub arrivals: Option<Waits>,
    pub idle: Option<IdleCount>,
    pub flood_low: Option<Waits>,
    pub flood_critical: Option<Waits>,
}

pub fn measure(events: &[Event], queued: &[QueuedMember], lost: i64, idle: Option<IdleCount>) -> ZsetMeasures {
    let t = tracks(events);
    let ending = crate::labs::priority::unserved::Ending::of(events);
    let mut taken: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let decoded: Vec<PriorityEvent> = events.iter().filter_map(|e| e.kind.family()).collect();
    for e in &decoded {
        if let PriorityEvent::PriorityJobTaken { job, .. } = e {
            *taken.entry(job).or_default() += 1;
        }
    }
    ZsetMeasures {
        ties: (!queued.is_empty()).then(|| tie_order(queued, events)),
        lost,
        taken_twice: taken.values().filter(|n| **n > 1).count() as u32,
        arrivals: waits(&t, Phase::Probe, &Priority::ALL, &ending),
        idle,
        flood_low: waits(&t, Phase::Flood, &[Priority::Low], &ending),
        flood_critical: waits(&t, Phase::Flood, &[Priority::Critical], &ending),
    }
}

/// The verdict of a run's measures against the claims, limits scaled by `scale`.
pub fn judge(claims: &ZsetClaims, m: &ZsetMeasures, scale: f64) -> RunVerdict {
    let mut v = RunVerdict::right();
    if let (true, Some(t)) = (claims.fifo_ties, &m.ties) {
        if !t.is_fifo() {
            let rule =
                if t.is_reverse_bytes() { "reverse byte order of the members" } else { "neither FIFO nor byte order" };
            let shown: Vec<&str> = t.taken.iter().take(12).map(String::as_str).collect();
            let more = if t.taken.len() > 12 { format!(", … ({} more)", t.taken.len() - 12) } else { String::new() };
            v.add(
                Verdict::Wrong,
                format!("equal scores came out {}{more}: not in the order queued ({rule})", shown.join(", ")),
            );
        }
    }
    if claims.no_loss && m.lost > 0 {
        v.add(Verdict::Wrong, format!("{} job(s) lost: popped, never done, no longer in the set", m.lost));
    }
    if let (Some(max), Some(w)) = (claims.max_wait_ms, &m.arrivals) {
        if w.any_served() && w.max_ms > max * scale {
            v.add(Verdict::Wrong, format!("a job queued into the idle set waited {:.0} ms", w.max_ms));
        }
        if let Some(n) = &w.never_served {
            v.add(Verdict::Wrong, format!("a job queued into the idle set was {}", n.reason()));
        }
    }
    if let (Some(max), Some(idle)) = (claims.idle_commands_per_s, &m.idle) {
        // Polling is paced by the time scale: its rate scales inversely.
        if idle.per_s() > max / scale {
            v.add(Verdict::Wrong, format!("the idle worker sent {:.0} commands per second", idle.per_s()));
        }
    }
    if let (Some(max), Some(w)) = (claims.low_wait_ms, &m.flood_low) {
        if w.any_served() && w.max_ms > max * scale {
            v.add(Verdict::Wrong, format!("low starved under the flood: a low job waited {:.0} ms", w.max_ms));
        }
        if let Some(n) = &w.never_served {
            v.add(Verdict::Wrong, format!("low starved under the flood: a low job was {}", n.reason()));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::zset_checker::*;
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::Actor;

    fn member(job: &str, score: f64) -> QueuedMember {
        QueuedMember { job: job.into(), member: format!(r#"{{"type":"payment","order_id":"{job}"}}"#), score }
    }

    fn taken(jobs: &[&str]) -> Vec<Event> {
        jobs.iter()
            .enumerate()
            .map(|(i, j)| Event {
                t_us: i as i64,
                actor: Actor::Consumer(1),
                kind: PriorityEvent::PriorityJobTaken {
                    job: j.to_string(),
                    priority: Priority::Critical,
                    phase: Phase::Ties,
                    traced: true,
                    waited_ms: None,
                }
                .event(),
            })
            .collect()
    }

    #[test]
    fn equal_scores_follow_the_member_bytes_not_the_queue() {
        // Queued A1, A2, A10 (score 100) and X (50): ZPOPMAX takes A2, A10, A1, then X —
        // `"A2"` > `"A10"` > `"A1"` byte by byte (`2` > `1`, then `0` > `"`).
        let q = [member("A1", 100.0), member("A2", 100.0), member("A10", 100.0), member("X", 50.0)];
        let t = tie_order(&q, &taken(&["A2", "A10", "A1", "X"]));
        assert_eq!(t.fifo, ["A1", "A2", "A10", "X"]);
        assert_eq!(t.reverse_bytes, ["A2", "A10", "A1", "X"]);
        assert!(t.is_reverse_bytes() && !t.is_fifo());
        let m = ZsetMeasures { ties: Some(t), ..ZsetMeasures::default() };
        let v = judge(&ZsetClaims { fifo_ties: true, ..ZsetClaims::default() }, &m, 1.0);
        assert_eq!(
            v.reasons,
            ["equal scores came out A2, A10, A1, X: not in the order queued (reverse byte order of the members)"]
        );
        let fifo = tie_order(&q, &taken(&["A1", "A2", "A10", "X"]));
        assert!(fifo.is_fifo());
    }

    #[test]
    fn loss_idle_commands_and_waits_are_judged_at_scale() {
        let claims = ZsetClaims {
            no_loss: true,
            max_wait_ms: Some(100.0),
            idle_commands_per_s: Some(10.0),
            low_wait_ms: Some(2000.0),
            ..ZsetClaims::default()
        };
        assert_eq!(judge(&claims, &ZsetMeasures::default(), 1.0), RunVerdict::right());
        let lost = ZsetMeasures { lost: 1, ..ZsetMeasures::default() };
        assert!(judge(&claims, &lost, 1.0).reasons[0].starts_with("1 job(s) lost"));
        let polling = ZsetMeasures { idle: Some(IdleCount { ms: 2000.0, commands: 180 }), ..ZsetMeasures::default() };
        assert_eq!(polling.idle.unwrap().per_s(), 90.0);
        assert_eq!(judge(&claims, &polling, 1.0).verdict, Verdict::Wrong);
        // At time scale 0.1 a 10 ms poll is a 1 ms poll: the limit is 100 per second.
        assert_eq!(judge(&claims, &polling, 0.1).verdict, Verdict::Right);
        let slow = ZsetMeasures {
            arrivals: Some(Waits { count: 10, max_ms: 480.0, ..Waits::default() }),
            ..ZsetMeasures::default()
        };
        assert!(judge(&claims, &slow, 1.0).reasons[0].contains("waited 480 ms"));
        let starved = ZsetMeasures {
            flood_low: Some(Waits { count: 10, max_ms: 3500.0, ..Waits::default() }),
            ..ZsetMeasures::default()
        };
        assert!(judge(&claims, &starved, 1.0).reasons[0].starts_with("low starved under the flood"));
    }
}
