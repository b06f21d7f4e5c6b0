//! Priority queues judged from the timeline alone: when each job was queued and taken, phase
//! by phase, and whether the loop kept what a priority queue promises (critical first, the
//! weighted ratio, low never starved, critical answered promptly). Pure: events in, measures
//! and a verdict out.
//!
//! Every duration is in real milliseconds of the run; the limits a lab claims are in the
//! scenario's milliseconds and are scaled by the run's time scale before comparing.

use crate::checker::{RunVerdict, Verdict};
use crate::labs::priority::unserved::{Ending, NeverServed, Wait};
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{Phase, Priority};
use crate::stats::quantile;
use crate::timeline::Event;
use serde::{Deserialize, Serialize};

/// What a priority loop promises, as a lab checks it. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Backlog: no normal or low job is served before the last critical one.
    #[serde(default)]
    pub strict: bool,
    /// Backlog: jobs served per priority while every backlogged priority still had jobs,
    /// in this ratio (e.g. `[10, 5, 1]`), within `ratio_tolerance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<[f64; 3]>,
    #[serde(default = "Claims::default_tolerance")]
    pub ratio_tolerance: f64,
    /// Backlog: low jobs wait at most this long between two low jobs served (starvation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_gap_ms: Option<f64>,
    /// Trickle (light critical traffic): no normal or low job waits longer than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_wait_ms: Option<f64>,
    /// Probes (each) and trickle (90th percentile): a critical job waits at most this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_wait_ms: Option<f64>,
}

impl Claims {
    fn default_tolerance() -> f64 {
        0.1
    }
}

/// One job's life on the timeline, in µs of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct JobTrack {
    pub job: String,
    pub priority: Priority,
    pub phase: Phase,
    pub queued_us: i64,
    pub taken_us: Option<i64>,
    pub done_us: Option<i64>,
}

impl JobTrack {
    /// Time in the queue, in ms, once taken.
    pub fn wait_ms(&self) -> Option<f64> {
        self.taken_us.map(|t| (t - self.queued_us) as f64 / 1000.0)
    }
}

/// Every queued job with when it was taken and done, in the order queued.
pub fn tracks(events: &[Event]) -> Vec<JobTrack> {
    let mut out: Vec<JobTrack> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for e in events {
        match e.kind.family::<PriorityEvent>().as_ref() {
            Some(PriorityEvent::JobQueued { job, priority, phase, .. }) => {
                index.insert(job.clone(), out.len());
                out.push(JobTrack {
                    job: job.clone(),
                    priority: *priority,
                    phase: *phase,
                    queued_us: e.t_us,
                    taken_us: None,
                    done_us: None,
                });
            }
            Some(PriorityEvent::PriorityJobTaken { job, .. }) => {
                if let Some(t) = index.get(job).map(|i| &mut out[*i]) {
                    t.taken_us.get_or_insert(e.t_us);
                }
            }
            Some(PriorityEvent::JobDone { job }) => {
                if let Some(t) = index.get(job).map(|i| &mut out[*i]) {
                    t.done_us.get_or_insert(e.t_us);
                }
            }
            _ => {}
        }
    }
    out
}

/// The priorities of `phase`'s jobs in the order they were taken, as runs:
/// `[(critical, 10), (low, 10), …]`.
pub fn served_runs(tracks: &[JobTrack], phase: Phase) -> Vec<(Priority, u32)> {
    let mut taken: Vec<&JobTrack> = tracks.iter().filter(|t| t.phase == phase && t.taken_us.is_some()).collect();
    taken.sort_by_key(|t| t.taken_us);
    let mut runs: Vec<(Priority, u32)> = Vec::new();
    for t in taken {
        match runs.last_mut() {
            Some((p, n)) if *p == t.priority => *n += 1,
            _ => runs.push((t.priority, 1)),
        }
    }
    runs
}

/// What a backlog phase showed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BacklogMeasures {
    /// Normal and low jobs taken before the last critical one.
    pub lower_before_critical_drained: u32,
    /// Jobs taken per priority until the first backlogged priority ran out (that priority's
    /// last job included), when at least two priorities were backlogged.
    pub served_while_all_backlogged: Option<[u32; 3]>,
    /// The longest time low jobs waited with none taken (from the first queued to the first
    /// taken, then between two taken), in ms.
    pub low_gap_ms: Option<f64>,
    /// Handler time per priority in ms (taken → done) while all were backlogged.
    pub work_ms_while_all_backlogged: Option<[f64; 3]>,
}

pub fn backlog(events: &[Event], tracks: &[JobTrack]) -> Option<BacklogMeasures> {
    let jobs: Vec<&JobTrack> = tracks.iter().filter(|t| t.phase == Phase::Backlog).collect();
    if jobs.is_empty() {
        return None;
    }
    let mut m = BacklogMeasures::default();
    let drained = jobs.iter().filter(|t| t.priority == Priority::Critical).filter_map(|t| t.taken_us).max();
    if let Some(drained) = drained {
        m.lower_before_critical_drained =
            jobs.iter().filter(|t| t.priority != Priority::Critical && t.taken_us.is_some_and(|x| x < drained)).count()
                as u32;
    }
    let backlogged: Vec<Priority> =
        Priority::ALL.into_iter().filter(|p| jobs.iter().any(|t| t.priority == *p)).collect();
    if backlogged.len() >= 2 {
        let (served, cut_us) = served_by_reads(events, &backlogged);
        let mut work = [0f64; 3];
        for t in jobs.iter().filter(|t| t.taken_us.is_some_and(|x| x <= cut_us)) {
            if let (Some(a), Some(b)) = (t.taken_us, t.done_us) {
                work[t.priority.index()] += (b - a) as f64 / 1000.0;
            }
        }
        m.served_while_all_backlogged = Some(served);
        m.work_ms_while_all_backlogged = Some(work);
    }
    m.low_gap_ms = low_gap_ms(&jobs, first_read_us(events));
    Some(m)
}

/// Jobs the worker's reads returned per priority while every backlogged priority still had
/// entries: the reads before the first one that got fewer than it asked of a backlogged
/// stream (whole reads, so a ratio per round comes out exact), and when that read returned.
fn served_by_reads(events: &[Event], backlogged: &[Priority]) -> ([u32; 3], i64) {
    let mut served = [0u32; 3];
    for e in events {
        let Some(PriorityEvent::QueueRead { queues, count, got, .. }) = e.kind.family::<PriorityEvent>() else {
            continue;
        };
        if queues.iter().zip(&got).any(|(q, g)| backlogged.contains(q) && *g < count) {
            return (served, e.t_us);
        }
        for (q, g) in queues.iter().zip(got) {
            served[q.index()] += g;
        }
    }
    (served, i64::MAX)
}

/// When the worker's first read began: before it, a backlog waits for the worker process to
/// start, which is the harness's time, not the loop's.
fn first_read_us(events: &[Event]) -> Option<i64> {
    events.iter().find_map(|e| match e.kind.family::<PriorityEvent>().as_ref() {
        Some(PriorityEvent::QueueRead { waited_ms, .. }) => Some(e.t_us - (waited_ms * 1000.0) as i64),
        _ => None,
    })
}

/// The longest time low jobs waited with none taken, counted from the worker's first read.
fn low_gap_ms(jobs: &[&JobTrack], first_read_us: Option<i64>) -> Option<f64> {
    let lows: Vec<&&JobTrack> = jobs.iter().filter(|t| t.priority == Priority::Low).collect();
    let first_queued = lows.iter().map(|t| t.queued_us).min()?.max(first_read_us.unwrap_or(i64::MIN));
    let mut taken: Vec<i64> = lows.iter().filter_map(|t| t.taken_us).collect();
    taken.sort();
    let mut gap = 0i64;
    let mut since = first_queued;
    for t in &taken {
        gap = gap.max(t - since);
        since = *t;
    }
    if taken.len() < lows.len() {
        // Some low job was never taken: it waited until the run ended.
        gap = gap.max(jobs.iter().filter_map(|t| t.done_us).max().unwrap_or(since) - since);
    }
    Some(gap as f64 / 1000.0)
}

/// Waits of one priority in a phase, in ms: over the jobs served; the jobs never served are
/// counted apart, never given a wait.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Waits {
    pub count: u32,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub max_ms: f64,
    /// Jobs never taken.
    pub never: u32,
    /// Of those, the one that waited longest unserved, and why it was never served.
    pub never_served: Option<NeverServed>,
}

impl Waits {
    /// Some job of the phase was served (the percentiles mean something).
    pub fn any_served(&self) -> bool {
        self.count > self.never
    }
}

pub fn waits(tracks: &[JobTrack], phase: Phase, priorities: &[Priority], ending: &Ending) -> Option<Waits> {
    let jobs: Vec<&JobTrack> = tracks.iter().filter(|t| t.phase == phase && priorities.contains(&t.priority)).collect();
    if jobs.is_empty() {
        return None;
    }
    let w: Vec<f64> = jobs.iter().filter_map(|t| t.wait_ms()).collect();
    let never_served = jobs
        .iter()
        .filter(|t| t.taken_us.is_none())
        .map(|t| ending.never_served(t.queued_us))
        .max_by(|a, b| a.unserved_ms.total_cmp(&b.unserved_ms));
    Some(Waits {
        count: jobs.len() as u32,
        p50_ms: quantile(&w, 0.5).unwrap_or(0.0),
        p90_ms: quantile(&w, 0.9).unwrap_or(0.0),
        max_ms: w.iter().copied().fold(0.0, f64::max),
        never: (jobs.len() - w.len()) as u32,
        never_served,
    })
}

/// The one job of `phase` (a probe): served after its wait, or never.
fn single_wait(tracks: &[JobTrack], phase: Phase, ending: &Ending) -> Option<Wait> {
    tracks.iter().find(|t| t.phase == phase).map(|t| ending.wait(t.queued_us, t.taken_us))
}

/// Jobs per second of a phase: its jobs over the time from the first queued to the last done.
pub fn jobs_per_s(tracks: &[JobTrack], phase: Phase) -> Option<f64> {
    let jobs: Vec<&JobTrack> = tracks.iter().filter(|t| t.phase == phase).collect();
    let start = jobs.iter().map(|t| t.queued_us).min()?;
    let end = jobs.iter().filter_map(|t| t.done_us).max()?;
    (end > start).then(|| jobs.len() as f64 * 1e6 / (end - start) as f64)
}

/// Everything a priority run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriorityMeasures {
    pub backlog: Option<BacklogMeasures>,
    /// Trickle: critical waits, and normal/low waits.
    pub trickle_critical: Option<Waits>,
    pub trickle_lower: Option<Waits>,
    /// Burst of critical jobs alone: jobs per second.
    pub burst_jobs_per_s: Option<f64>,
    /// The aligned probe's wait (if the run had one): served after so long, or never.
    pub aligned_probe: Option<Wait>,
    pub random_probes: Option<Waits>,
    /// Reads that returned nothing: how many, and the longest wait of one.
    pub empty_reads: u32,
    pub longest_empty_read_ms: f64,
}

pub fn measure(events: &[Event]) -> PriorityMeasures {
    let t = tracks(events);
    let lower = [Priority::Normal, Priority::Low];
    let (mut empty_reads, mut longest) = (0, 0f64);
    for e in events {
        if let Some(PriorityEvent::QueueRead { got, waited_ms, .. }) = e.kind.family::<PriorityEvent>().as_ref() {
            if got.iter().sum::<u32>() > 0 {
                continue;
            }
            empty_reads += 1;
            longest = longest.max(*waited_ms);
        }
    }
    let ending = Ending::of(events);
    PriorityMeasures {
        backlog: backlog(events, &t),
        trickle_critical: waits(&t, Phase::Trickle, &[Priority::Critical], &ending),
        trickle_lower: waits(&t, Phase::Trickle, &lower, &ending),
        burst_jobs_per_s: jobs_per_s(&t, Phase::Burst),
        aligned_probe: single_wait(&t, Phase::AlignedProbe, &ending),
        random_probes: waits(&t, Phase::Probe, &Priority::ALL, &ending),
        empty_reads,
        longest_empty_read_ms: longest,
    }
}

/// `served` scaled so the last weighted priority equals its weight: served `[100, 50, 10]`
/// with weights `[10, 5, 1]` → `[10.0, 5.0, 1.0]`; infinite where that priority got nothing.
pub fn ratio(served: [u32; 3], weights: [f64; 3]) -> [f64; 3] {
    let base = (0..3).rev().find(|i| weights[*i] > 0.0).unwrap_or(2);
    let per_unit = served[base] as f64 / weights[base];
    served.map(|n| if per_unit > 0.0 { n as f64 / per_unit } else { f64::INFINITY })
}

/// The verdict of a run's measures against the lab's claims, limits scaled by `scale`.
pub fn judge(claims: &Claims, m: &PriorityMeasures, scale: f64) -> RunVerdict {
    let mut v = RunVerdict::right();
    let limit = |ms: f64| ms * scale;
    if let Some(b) = &m.backlog {
        if claims.strict && b.lower_before_critical_drained > 0 {
            let n = b.lower_before_critical_drained;
            v.add(
                Verdict::Wrong,
                format!("not strict: {n} normal/low jobs served before the critical backlog was drained"),
            );
        }
        if let (Some(want), Some(served)) = (claims.ratio, b.served_while_all_backlogged) {
            let got = ratio(served, want);
            let off = (0..3).filter(|i| want[*i] > 0.0).map(|i| (got[i] / want[i] - 1.0).abs()).fold(0.0, f64::max);
            if off > claims.ratio_tolerance {
                v.add(
                    Verdict::Wrong,
                    format!("served {served:?} while all were backlogged: not {want:?} (off by {:.0} %)", off * 100.0),
                );
            }
        }
        if let (Some(max), Some(gap)) = (claims.low_gap_ms, b.low_gap_ms) {
            if gap > limit(max) {
                v.add(
                    Verdict::Wrong,
                    format!("low starved: {gap:.0} ms without a low job served while low jobs waited"),
                );
            }
        }
    }
    if let (Some(max), Some(w)) = (claims.low_wait_ms, &m.trickle_lower) {
        if w.any_served() && w.max_ms > limit(max) {
            v.add(
                Verdict::Wrong,
                format!("low starved under light critical traffic: a low job waited {:.0} ms", w.max_ms),
            );
        }
        if let Some(n) = &w.never_served {
            unserved_against(&mut v, "a low job under light critical traffic", n, limit(max));
        }
    }
    if let Some(max) = claims.critical_wait_ms {
        let served = m.aligned_probe.as_ref().and_then(Wait::served_ms);
        let random = m.random_probes.as_ref().filter(|w| w.any_served()).map(|w| w.max_ms);
        if let Some(worst) = served.into_iter().chain(random).reduce(f64::max) {
            if worst > limit(max) {
                v.add(Verdict::Wrong, format!("a critical job queued into an idle system waited {worst:.0} ms"));
            }
        }
        let never = m.aligned_probe.as_ref().and_then(Wait::never);
        for n in never.into_iter().chain(m.random_probes.as_ref().and_then(|w| w.never_served.as_ref())) {
            unserved_against(&mut v, "a critical job queued into an idle system", n, limit(max));
        }
        if let Some(w) = m.trickle_critical.as_ref().filter(|w| w.any_served() && w.p90_ms > limit(max)) {
            v.add(
                Verdict::Wrong,
                format!("critical jobs under light traffic waited {:.0} ms (90th percentile)", w.p90_ms),
            );
        }
        if let Some(n) = m.trickle_critical.as_ref().and_then(|w| w.never_served.as_ref()) {
            unserved_against(&mut v, "a critical job under light traffic", n, limit(max));
        }
    }
    v
}

/// A job never served against a claim that it waits at most `limit_ms`: wrong once it had
/// waited longer unserved; unknown when the lab stopped waiting before (it may yet have been
/// served in time).
fn unserved_against(v: &mut RunVerdict, what: &str, n: &NeverServed, limit_ms: f64) {
    let why = n.reason();
    if n.unserved_ms > limit_ms {
        v.add(Verdict::Wrong, format!("{what} was {why}"));
    } else {
        let (unserved, limit) = (n.unserved_ms.round(), limit_ms.round());
        v.add(Verdict::Unknown, format!("{what} was {why}: only {unserved:.0} ms, within the claim's {limit:.0} ms"));
    }
}

/// Jobs taken per priority in windows of `window_ms` from t=0 to the last take: for each
/// window its start in ms and the counts taken in it. (A chart of the service over time.)
pub fn taken_per_window(tracks: &[JobTrack], window_ms: f64) -> Vec<(f64, [u32; 3])> {
    let takes: Vec<(f64, Priority)> =
        tracks.iter().filter_map(|t| t.taken_us.map(|us| (us as f64 / 1000.0, t.priority))).collect();
    let Some(end) = takes.iter().map(|(t, _)| *t).reduce(f64::max) else { return Vec::new() };
    let windows = (end.max(0.0) / window_ms).floor() as usize + 1;
    let mut out: Vec<(f64, [u32; 3])> = (0..windows).map(|k| (k as f64 * window_ms, [0; 3])).collect();
    for (t, p) in takes {
        let k = ((t.max(0.0) / window_ms).floor() as usize).min(windows - 1);
        out[k].1[p.index()] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::served::*;
    use crate::timeline::vocabulary::Vocabulary;
    use crate::timeline::Actor;
    use crate::timeline::EventKind;

    const C: Priority = Priority::Critical;
    const N: Priority = Priority::Normal;
    const L: Priority = Priority::Low;

    fn ev(t_ms: f64, kind: EventKind) -> Event {
        Event { t_us: (t_ms * 1000.0) as i64, actor: Actor::Consumer(1), kind }
    }

    fn queued(t: f64, job: &str, p: Priority, phase: Phase) -> Event {
        ev(t, PriorityEvent::JobQueued { job: job.into(), priority: p, phase, traced: false, score: None }.event())
    }

    fn taken(t: f64, job: &str, p: Priority, phase: Phase) -> Event {
        ev(
            t,
            PriorityEvent::PriorityJobTaken { job: job.into(), priority: p, phase, traced: false, waited_ms: None }
                .event(),
        )
    }

    fn done(t: f64, job: &str) -> Event {
        ev(t, PriorityEvent::JobDone { job: job.into() }.event())
    }

    fn read(t: f64, queues: &[Priority], count: u32, got: &[u32], waited_ms: f64) -> Event {
        let kind =
            PriorityEvent::QueueRead { read: "r".into(), queues: queues.to_vec(), count, got: got.to_vec(), waited_ms }
                .event();
        ev(t, kind)
    }

    /// A backlog of 2 critical and 2 low served as a one-call loop does: c, l, c, l, with
    /// reads of COUNT 1 over both streams.
    fn one_call_backlog() -> Vec<Event> {
        let mut e = vec![queued(0.0, "c1", C, Phase::Backlog), queued(0.0, "c2", C, Phase::Backlog)];
        e.extend([queued(0.0, "l1", L, Phase::Backlog), queued(0.0, "l2", L, Phase::Backlog)]);
        e.push(read(10.0, &[C, N, L], 1, &[1, 0, 1], 0.0));
        e.extend([
            taken(10.0, "c1", C, Phase::Backlog),
            done(12.0, "c1"),
            taken(12.0, "l1", L, Phase::Backlog),
            done(14.0, "l1"),
        ]);
        e.push(read(14.0, &[C, N, L], 1, &[1, 0, 1], 0.0));
        e.extend([
            taken(14.0, "c2", C, Phase::Backlog),
            done(16.0, "c2"),
            taken(16.0, "l2", L, Phase::Backlog),
            done(20.0, "l2"),
        ]);
        e.push(read(20.0, &[C, N, L], 1, &[0, 0, 0], 5000.0));
        e
    }

    #[test]
    fn served_order_and_backlog_measures_come_from_the_timeline() {
        let events = one_call_backlog();
        let t = tracks(&events);
        assert_eq!(served_runs(&t, Phase::Backlog), [(C, 1), (L, 1), (C, 1), (L, 1)]);
        let b = backlog(&events, &t).unwrap();
        // l1 was served before c2, the last critical.
        assert_eq!(b.lower_before_critical_drained, 1);
        assert_eq!(b.served_while_all_backlogged, Some([2, 0, 2]));
        assert_eq!(b.work_ms_while_all_backlogged, Some([4.0, 0.0, 6.0]));
        // Low queued at 0, the worker's first read at 10 (before it, the worker was starting),
        // low served at 12, then at 16.
        assert_eq!(b.low_gap_ms, Some(4.0));
        let m = measure(&events);
        assert_eq!((m.empty_reads, m.longest_empty_read_ms), (1, 5000.0));
    }

    #[test]
    fn the_ratio_counts_whole_reads_until_a_backlogged_stream_runs_short() {
        // Weighted 2:1, three rounds; the fourth critical read finds nothing.
        let mut events = Vec::new();
        for round in 0..3 {
            let t = round as f64 * 10.0;
            events.push(read(t, &[C], 2, &[2], 0.0));
            events.push(read(t + 1.0, &[L], 1, &[1], 0.0));
        }
        events.push(read(30.0, &[C], 2, &[0], 100.0));
        events.push(read(31.0, &[L], 1, &[0], 100.0));
        assert_eq!(served_by_reads(&events, &[C, L]), ([6, 0, 3], 30_000));
        assert_eq!(ratio([6, 0, 3], [2.0, 0.0, 1.0]), [2.0, 0.0, 1.0]);
        assert_eq!(ratio([6, 0, 0], [2.0, 0.0, 1.0])[0], f64::INFINITY);
    }

    #[test]
    fn waits_and_rates_per_phase() {
        let mut events = Vec::new();
        for k in 0..10 {
            let (t, job) = (k as f64 * 50.0, format!("c{k}"));
            events.extend([
                queued(t, &job, C, Phase::Trickle),
                taken(t + k as f64 * 10.0, &job, C, Phase::Trickle),
                done(t + k as f64 * 10.0 + 2.0, &job),
            ]);
        }
        events.push(queued(0.0, "l1", L, Phase::Trickle));
        let t = tracks(&events);
        let end = Ending::of(&events);
        let w = waits(&t, Phase::Trickle, &[C], &end).unwrap();
        assert_eq!((w.count, w.p50_ms, w.p90_ms, w.max_ms, w.never), (10, 40.0, 80.0, 90.0, 0));
        assert_eq!(waits(&t, Phase::Trickle, &[N, L], &end).unwrap().never, 1);
        // 11 jobs from 0 to the last done at 450 + 90 + 2 ms.
        assert!((jobs_per_s(&t, Phase::Trickle).unwrap() - 11.0 / 0.542).abs() < 1e-9);
    }

    #[test]
    fn takes_are_counted_per_window() {
        let t = tracks(&one_call_backlog());
        // Takes at 10, 12, 14, 16 ms: windows of 5 ms from 0 to 15.
        let w = taken_per_window(&t, 5.0);
        assert_eq!(w, [(0.0, [0, 0, 0]), (5.0, [0, 0, 0]), (10.0, [2, 0, 1]), (15.0, [0, 0, 1])]);
        assert!(taken_per_window(&[], 5.0).is_empty());
    }

    #[test]
    fn each_claim_names_what_broke_and_limits_scale() {
        let m = measure(&one_call_backlog());
        let strict = Claims { strict: true, ..Claims::default() };
        assert_eq!(judge(&strict, &m, 1.0).verdict, Verdict::Wrong);
        assert!(judge(&strict, &m, 1.0).reasons[0].starts_with("not strict: 1 normal/low"));
        let ratio = Claims { ratio: Some([10.0, 5.0, 1.0]), ..Claims::default() };
        assert!(judge(&ratio, &m, 1.0).reasons[0].contains("not [10.0, 5.0, 1.0]"));
        let one_to_one = Claims { ratio: Some([1.0, 0.0, 1.0]), ..Claims::default() };
        assert_eq!(judge(&one_to_one, &m, 1.0), RunVerdict::right());
        let gap = Claims { low_gap_ms: Some(3.0), ..Claims::default() };
        assert_eq!(judge(&gap, &m, 1.0).verdict, Verdict::Wrong);
        // At time scale 2 the same 4 ms gap is within a 3 ms limit (6 ms).
        assert_eq!(judge(&gap, &m, 2.0).verdict, Verdict::Right);
        let mut slow = PriorityMeasures { aligned_probe: Some(Wait::Served(4980.0)), ..PriorityMeasures::default() };
        let critical = Claims { critical_wait_ms: Some(250.0), ..Claims::default() };
        assert!(judge(&critical, &slow, 1.0).reasons[0].contains("waited 4980 ms"));
        slow.aligned_probe = Some(Wait::Served(1.0));
        slow.trickle_critical =
            Some(Waits { count: 40, p50_ms: 150.0, p90_ms: 251.0, max_ms: 298.0, ..Waits::default() });
        assert!(judge(&critical, &slow, 1.0).reasons[0].contains("251 ms (90th percentile)"));
        let starved =
            PriorityMeasures { trickle_lower: Some(Waits { count: 3, max_ms: 1882.0, ..Waits::default() }), ..slow };
        let low = Claims { low_wait_ms: Some(1000.0), ..Claims::default() };
        assert!(judge(&low, &starved, 1.0).reasons[0].starts_with("low starved under light critical traffic"));
    }
}
