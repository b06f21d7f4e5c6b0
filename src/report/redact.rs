//! The snapshot redactor: one value that a renderer asks how to print each value that may
//! vary between runs. Off, it prints everything; on (snapshots and `ordlab diff`), it replaces
//! what truly varies, visibly, by `[id]`, `[ms]`, `[n]`, and keeps everything else, including
//! the real order of events. nextest's `redact.rs` is the model.

use crate::labs::{Line, Piece};
use crate::timeline::vocabulary::Causality;
use crate::timeline::{Actor, CrashCause, Event, EventKind};

/// Events of different processes closer than this are a burst whose order the OS scheduler
/// picks from run to run: a snapshot lists a burst by process, and keeps the true order of
/// everything else. Snapshots run at time scale 1, where the labs put at least 40 ms between
/// the steps they are about, so a stall of 20 ms (a loaded machine) changes no snapshot.
pub const BURST_US: i64 = 20_000;

pub use crate::timeline::vocabulary::Redactor;

impl Redactor {
    /// A lab's line, its varying pieces redacted.
    pub fn line(&self, line: &Line) -> String {
        line.0
            .iter()
            .map(|p| match p {
                Piece::Text(s) => s.clone(),
                Piece::EntryId(id) => self.entry_id(id),
                Piece::Ms(_) if self.active() => "[ms]".into(),
                Piece::Ms(ms) => format!("{ms} ms"),
                Piece::MsFromUs(_) if self.active() => "[ms]".into(),
                Piece::MsFromUs(us) => format!("{:.1}", *us as f64 / 1000.0),
                Piece::Count(n) => self.count(n),
                Piece::Measured(_) if self.active() => "[measured]".into(),
                Piece::Measured(words) => words.clone(),
                Piece::Seeded(s) => s.clone(),
                Piece::Raced(_) if self.active() => "[x]".into(),
                Piece::Raced(s) => s.clone(),
            })
            .collect()
    }

    /// Events in the order to print them: their true order; redacted, a burst of events of
    /// different processes less than [`BURST_US`] apart is listed by process, as far as
    /// causality allows (an entry is received after it was published, and each process's
    /// own events keep their order): the order within a burst is the scheduler's, not the
    /// lab's, and listing it this way makes a snapshot independent of where a stall falls.
    pub fn order<'a>(&self, events: Vec<&'a Event>) -> Vec<&'a Event> {
        if !self.active() {
            return events;
        }
        let mut out: Vec<&Event> = Vec::with_capacity(events.len());
        let mut burst: Vec<&Event> = Vec::new();
        for e in events {
            if burst.last().is_some_and(|last| e.t_us - last.t_us >= BURST_US) {
                out.extend(by_process(std::mem::take(&mut burst), true));
            }
            burst.push(e);
        }
        out.extend(by_process(burst, true));
        out
    }
}

impl Redactor {
    /// Events listed process by process (each process's own order kept, a receive after its
    /// publish), when redacting: for a variant whose whole interleaving is the race it
    /// measures, where only each process's own sequence is the same from run to run.
    pub fn order_by_process<'a>(&self, events: Vec<&'a Event>) -> Vec<&'a Event> {
        if self.active() {
            // Who took a lock first is the race such a variant measures: not an order kept.
            by_process(events, false)
        } else {
            events
        }
    }
}

/// Whose sequence an event belongs to in a burst: its process's, except that what the
/// side-effect sink did with a request is listed with the process that sent it (the sink
/// answers requests in the order they come, which is the scheduler's), and so is the partner's
/// fault that hit the request (the sink's event right after the effect, at the same moment).
fn lanes(burst: &[&Event]) -> Vec<Actor> {
    let mut out: Vec<Actor> = Vec::with_capacity(burst.len());
    for (i, e) in burst.iter().enumerate() {
        let lane = match &e.kind {
            EventKind::Effect { requested_by, .. } => *requested_by,
            // The partner's fault that hit the request (a family event of the sink's, at the
            // effect's moment).
            EventKind::Family(_) if e.actor == Actor::Sink && i > 0 && burst[i - 1].t_us == e.t_us => {
                match &burst[i - 1].kind {
                    EventKind::Effect { requested_by, .. } => *requested_by,
                    _ => e.actor,
                }
            }
            _ => e.actor,
        };
        out.push(lane);
    }
    out
}

/// A burst in canonical order: repeatedly the first remaining event of the lowest-ranked
/// process whose causes are already out (its own earlier events; for a receive, the publish
/// of the same entry; for a list job taken, its push or put-back; with `locks`, for a lock
/// taken, another process's release of it; for a worker the runner
/// kills and a job it pushes once the one before was taken, everything before it: the runner
/// reacted to it).
fn by_process(burst: Vec<&Event>, locks: bool) -> Vec<&Event> {
    let lock = |c: &Causality| matches!(c, Causality::PutsBack(k) | Causality::Takes(k) if k.starts_with("lock "));
    let causes: Vec<Causality> =
        burst.iter().map(|e| causality(e)).map(|c| if !locks && lock(&c) { Causality::Free } else { c }).collect();
    let published = |id: &str, done: &[bool]| {
        causes.iter().enumerate().all(|(i, c)| done[i] || !matches!(c, Causality::Publishes(p) if p == id))
    };
    // A list job is taken after it was pushed or put back (by the reaper or the scheduler)
    // earlier in the burst.
    let put_back = |i: usize, job: &str, done: &[bool]| {
        causes[..i]
            .iter()
            .enumerate()
            .all(|(j, c)| done[j] || !matches!(c, Causality::PutsBack(p) | Causality::PutsBackAfterAll(p) if p == job))
    };
    let lane = lanes(&burst);
    let mut done = vec![false; burst.len()];
    let mut out = Vec::with_capacity(burst.len());
    while out.len() < burst.len() {
        // The next event of each process is its first not yet out.
        let mut next: Option<usize> = None;
        for (i, e) in burst.iter().enumerate() {
            let first_of_actor = !(0..i).any(|j| lane[j] == lane[i] && !done[j]);
            if done[i] || !first_of_actor {
                continue;
            }
            let ready = match &causes[i] {
                Causality::Receives(entry_id) => published(entry_id, &done),
                Causality::Takes(job) => put_back(i, job, &done),
                // The runner reacted to what came before: a worker it kills, a job it pushes once
                // the one before was taken.
                Causality::PutsBackAfterAll(_) => done[..i].iter().all(|d| *d),
                _ if e.kind.crash_cause() == Some(CrashCause::KilledByRunner) => done[..i].iter().all(|d| *d),
                _ => true,
            };
            if ready && next.is_none_or(|n| lane[i] < lane[n]) {
                next = Some(i);
            }
        }
        // A receive whose publish is in the burst but waits behind its own process's events
        // cannot block everything: fall back to the earliest event left.
        let i = next.unwrap_or_else(|| done.iter().position(|d| !d).expect("an event is left"));
        done[i] = true;
        out.push(burst[i]);
    }
    out
}

/// What an event must follow in a burst: a core event's own, or its vocabulary's.
fn causality(e: &Event) -> Causality {
    match &e.kind {
        EventKind::Published { entry_id, .. } => Causality::Publishes(entry_id.clone()),
        EventKind::Received { entry_id, .. } => Causality::Receives(entry_id.clone()),
        EventKind::Family(f) => crate::labs::VOCABULARIES.describe(f).map_or(Causality::Free, |d| d.causality()),
        _ => Causality::Free,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list_queue::events::ListEvent;
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::{Actor, Job};

    fn ev(t_us: i64, actor: Actor) -> Event {
        Event { t_us, actor, kind: EventKind::Ready }
    }

    #[test]
    fn bursts_are_listed_by_process_and_the_rest_keeps_its_order() {
        let (c1, c2) = (Actor::Consumer(1), Actor::Consumer(2));
        // C2 reports at 2.0 ms, C1 at 2.3 ms (scheduler's choice); C2 writes at 53 ms and C1 at
        // 803 ms (the lab's point: the slow, older job writes last).
        let events = [ev(2_300, c2), ev(2_400, c1), ev(53_000, c2), ev(803_000, c1)];
        let refs: Vec<&Event> = events.iter().collect();
        let shown: Vec<(i64, Actor)> =
            Redactor::SNAPSHOT.order(refs.clone()).iter().map(|e| (e.t_us, e.actor)).collect();
        assert_eq!(shown, vec![(2_400, c1), (2_300, c2), (53_000, c2), (803_000, c1)]);
        assert_eq!(Redactor::NONE.order(refs)[0].actor, c2);
    }

    #[test]
    fn within_a_burst_an_entry_is_received_after_it_is_published() {
        let (d1, c1) = (Actor::Dispatcher(1), Actor::Consumer(1));
        let job = Job::new(42, "paid", 2);
        let publish = |t| Event {
            t_us: t,
            actor: d1,
            kind: EventKind::Published { entry_id: "2-0".into(), job: job.clone(), attempt: 1 },
        };
        let receive = |t| Event {
            t_us: t,
            actor: c1,
            kind: EventKind::Received { entry_id: "2-0".into(), job: job.clone(), deliveries: None },
        };
        let crash = |t| Event { t_us: t, actor: d1, kind: EventKind::crashed(true, "x") };
        // D1 publishes and crashes, C1 receives: C1 comes first by rank, but not before the
        // publish; and a stall that puts 30 ms between crash and receive changes nothing.
        for gap in [200, 30_000] {
            let events = [publish(0), crash(100), receive(100 + gap)];
            let refs: Vec<&Event> = events.iter().collect();
            let shown: Vec<Actor> = Redactor::SNAPSHOT.order(refs).iter().map(|e| e.actor).collect();
            let expected = if gap < BURST_US { vec![d1, c1, d1] } else { vec![d1, d1, c1] };
            assert_eq!(shown, expected, "gap {gap}");
        }
    }

    #[test]
    fn a_partner_s_fault_is_listed_right_after_the_request_it_hit() {
        use crate::timeline::vocabulary::Vocabulary as _;
        let w1 = Actor::Worker(1);
        let effect = Event {
            t_us: 200,
            actor: Actor::Sink,
            kind: EventKind::Effect {
                job: "job-2".into(),
                effect: "email".into(),
                requested_by: w1,
                idem_key: None,
                outcome: crate::timeline::EffectOutcome::Refused,
            },
        };
        let refuse =
            crate::fault::Fault::kill_at(crate::fault::Target::Process(w1), "RPUSH", 1, crate::fault::Moment::Reply);
        let fault = Event {
            t_us: 200,
            actor: Actor::Sink,
            kind: crate::fault::FaultEvent::FaultFired { fault: refuse, occurrence: 1 }.event(),
        };
        // The worker's next step comes 5 ms later (one burst) or 30 ms later (a stall: two):
        // the listing is the same.
        for gap in [5_000, 30_000] {
            let next = Event { t_us: 200 + gap, actor: w1, kind: EventKind::crashed(true, "x") };
            let events = [effect.clone(), fault.clone(), next];
            let shown: Vec<Actor> = Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| e.actor).collect();
            assert_eq!(shown, [Actor::Sink, Actor::Sink, w1], "gap {gap}");
        }
    }

    #[test]
    fn the_sinks_answers_are_listed_with_the_process_that_asked() {
        let (c1, c2) = (Actor::Consumer(1), Actor::Consumer(2));
        let effect = |t, by| Event {
            t_us: t,
            actor: Actor::Sink,
            kind: EventKind::Effect {
                job: "job-7".into(),
                effect: "push".into(),
                requested_by: by,
                idem_key: None,
                outcome: crate::timeline::EffectOutcome::Applied,
            },
        };
        // C2's request reaches the sink first this time; the listing does not depend on it.
        for (first, second) in [(c2, c1), (c1, c2)] {
            let events = [ev(0, c1), ev(100, c2), effect(200, first), effect(300, second)];
            let ordered = Redactor::SNAPSHOT.order(events.iter().collect());
            let shown: Vec<(Actor, Actor)> =
                ordered.iter().zip(super::lanes(&ordered)).map(|(e, lane)| (e.actor, lane)).collect();
            assert_eq!(shown, [(c1, c1), (Actor::Sink, c1), (c2, c2), (Actor::Sink, c2)]);
        }
    }

    #[test]
    fn a_side_effect_keeps_its_place_among_the_steps_of_the_worker_that_asked_for_it() {
        use crate::timeline::EffectOutcome;
        let (w1, w2) = (Actor::Worker(1), Actor::Worker(2));
        let effect = |t| Event {
            t_us: t,
            actor: Actor::Sink,
            kind: EventKind::Effect {
                job: "job-2".into(),
                effect: "email".into(),
                requested_by: w2,
                idem_key: None,
                outcome: EffectOutcome::Applied,
            },
        };
        // W2 asks for the e-mail, then reports done and takes the next job (W1 long before).
        // Whether the sink's reply took 1 ms or 30 ms, the e-mail stays before done.
        for gap in [1_000, 30_000] {
            let events = [ev(-100_000, w1), effect(0), ev(gap, w2), ev(gap + 200, w2)];
            let refs: Vec<&Event> = events.iter().collect();
            let shown: Vec<(i64, Actor)> = Redactor::SNAPSHOT.order(refs).iter().map(|e| (e.t_us, e.actor)).collect();
            assert_eq!(shown[1], (0, Actor::Sink), "gap {gap}: {shown:?}");
        }
    }

    #[test]
    fn a_list_job_is_taken_after_the_scheduler_put_it_back() {
        let moved = Event {
            t_us: 0,
            actor: Actor::Scheduler,
            kind: ListEvent::MovedDue { job: "j1".into(), late_ms: Some(3) }.event(),
        };
        let taken = Event {
            t_us: 2_000,
            actor: Actor::Worker(1),
            kind: ListEvent::Taken { job: "j1".into(), via: "lease script".into(), lease_ms: None }.event(),
        };
        let events = [moved, taken];
        let shown: Vec<Actor> = Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| e.actor).collect();
        assert_eq!(shown, vec![Actor::Scheduler, Actor::Worker(1)]);
    }

    /// lock-pause third-holder-token: C3 writes and releases the lock, and C2, retrying every
    /// 20 ms, takes it 0–20 ms later. In one burst C2 ranks first, yet its take waited for the
    /// release: listed after it, so the snapshot does not depend on whether the take falls
    /// inside the burst. A release that deleted nothing (0) frees nothing.
    #[test]
    fn a_lock_is_taken_after_another_process_released_it() {
        use crate::handler::order::events::HandlerEvent;
        let (c2, c3) = (Actor::Consumer(2), Actor::Consumer(3));
        let key = "lock:order:42".to_string();
        let released = |t_us, by, released| Event {
            t_us,
            actor: by,
            kind: HandlerEvent::LockReleased { key: key.clone(), method: "DELEX IFEQ".into(), released }.event(),
        };
        let acquired = |t_us, by| Event {
            t_us,
            actor: by,
            kind: HandlerEvent::LockAcquired {
                key: key.clone(),
                tries: 30,
                ttl_ms: 1000,
                px_ms: 1000,
                round_trip_us: 200,
            }
            .event(),
        };
        let order = |events: &[Event]| -> Vec<(i64, Actor)> {
            Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| (e.t_us, e.actor)).collect()
        };
        let events = [released(1_000, c3, 1), acquired(5_000, c2)];
        assert_eq!(order(&events), vec![(1_000, c3), (5_000, c2)]);
        // Where the whole timeline is listed by process, who took the lock first is the race
        // the variant measures: not kept.
        let by_process: Vec<Actor> =
            Redactor::SNAPSHOT.order_by_process(events.iter().collect()).iter().map(|e| e.actor).collect();
        assert_eq!(by_process, vec![c2, c3]);
        // One whose release found the key gone (expired) does not order a take.
        let events = [released(1_000, c3, 0), acquired(5_000, c2)];
        assert_eq!(order(&events), vec![(5_000, c2), (1_000, c3)]);
    }

    #[test]
    fn a_job_pushed_once_the_one_before_was_taken_comes_after_that_take() {
        // list-crash's lrem-identical: the producer pushes a job, W1 takes it, and only then
        // does the runner push the second (the same payload). Within one burst the producer
        // ranks before W1, yet the gated push must stay after the take it waited for.
        let push = |t_us, gated| Event {
            t_us,
            actor: Actor::Producer,
            kind: ListEvent::Pushed { job: "j".into(), list: "queue:default".into(), len: 1, gated }.event(),
        };
        let taken = Event {
            t_us: 300,
            actor: Actor::Worker(1),
            kind: ListEvent::Taken { job: "j".into(), via: "lease script".into(), lease_ms: Some(500.0) }.event(),
        };
        let events = [push(0, false), taken.clone(), push(600, true)];
        let shown: Vec<Actor> = Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| e.actor).collect();
        assert_eq!(shown, vec![Actor::Producer, Actor::Worker(1), Actor::Producer]);
        // An ungated push ranks before the worker, as any producer event in a burst.
        let events = [push(0, false), taken, push(600, false)];
        let shown: Vec<Actor> = Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| e.actor).collect();
        assert_eq!(shown, vec![Actor::Producer, Actor::Producer, Actor::Worker(1)]);
    }

    #[test]
    fn a_kill_by_the_runner_comes_after_what_the_runner_saw() {
        let kill = Event {
            t_us: 3_000,
            actor: Actor::Worker(1),
            kind: EventKind::killed_by_runner(crate::timeline::killed_by_runner_mid_job()),
        };
        let events = [ev(0, Actor::Worker(2)), ev(1_000, Actor::Worker(2)), kill];
        let shown: Vec<Actor> = Redactor::SNAPSHOT.order(events.iter().collect()).iter().map(|e| e.actor).collect();
        assert_eq!(shown, vec![Actor::Worker(2), Actor::Worker(2), Actor::Worker(1)]);
    }

    #[test]
    fn only_what_varies_is_replaced() {
        let line = Line::text("stream: ").and(Piece::EntryId("1-0".into())).and_text(" +").and(Piece::Ms(420));
        assert_eq!(Redactor::SNAPSHOT.line(&line), "stream: [id] +[ms]");
        assert_eq!(Redactor::NONE.line(&line), "stream: 1-0 +420 ms");
        assert_eq!(
            (Redactor::SNAPSHOT.version(2), Redactor::SNAPSHOT.version(179259155524900000)),
            ("2".into(), "[v]".into())
        );
    }
}
