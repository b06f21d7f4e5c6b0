//! Seed 000's priority queues, as the priority labs and the seed's production pipeline share
//! them: the three priorities, the phases a priority run goes through, and the events of a
//! priority worker (a phase started, a job queued, a read of the queues, a job taken, done or
//! put back), with their words in both languages and their marks.

use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The priority of a job on a priority queue, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Critical,
    Normal,
    Low,
}

impl Priority {
    /// Highest first: index 0 is critical.
    pub const ALL: [Priority; 3] = [Priority::Critical, Priority::Normal, Priority::Low];

    /// 0 for critical, 1 for normal, 2 for low.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A phase of a priority-queue run, as the orchestrator starts it (the words of its timeline
/// line come from these figures).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhasePlan {
    /// Jobs queued at once before the worker starts, per priority (critical, normal, low).
    Backlog { jobs: [u32; 3] },
    /// One critical job while the worker is blocked in `blocked_in` (the worst moment for
    /// a loop that blocks on one stream at a time), or at a random moment (`after_ms`).
    Probe {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocked_in: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_ms: Option<f64>,
    },
    /// Light traffic: `jobs[0]` critical jobs one every `every_ms`, the normal and low ones
    /// at its start.
    Trickle { every_ms: f64, jobs: [u32; 3] },
    /// `critical` critical jobs at once, nothing else queued: how fast critical alone goes.
    Burst { critical: u32 },
    /// Nothing queued for `ms` while the server counts the worker's commands.
    Idle { ms: f64 },
    /// `critical` critical jobs kept waiting for `ms` (one queued for each one taken), `low`
    /// low jobs queued at its start; with `tau_ms`, a job's score is its priority minus its
    /// queueing time in units of `tau_ms` (aging).
    Flood {
        critical: u32,
        low: u32,
        ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tau_ms: Option<f64>,
    },
    /// Worker `by` starts after a crash and takes over the queue.
    Takeover { by: String },
}

impl PhasePlan {
    /// The phase jobs queued in it carry (`phase` of [`PriorityEvent::JobQueued`]).
    pub fn id(&self) -> Phase {
        match self {
            PhasePlan::Backlog { .. } => Phase::Backlog,
            PhasePlan::Probe { blocked_in: Some(_), .. } => Phase::AlignedProbe,
            PhasePlan::Probe { .. } => Phase::Probe,
            PhasePlan::Trickle { .. } => Phase::Trickle,
            PhasePlan::Burst { .. } => Phase::Burst,
            PhasePlan::Idle { .. } => Phase::Idle,
            PhasePlan::Flood { .. } => Phase::Flood,
            PhasePlan::Takeover { .. } => Phase::Takeover,
        }
    }
}

/// The phase a job was queued in, as jobs carry it (a stream entry's `phase` field, a sorted
/// set member's `"phase"`, the `phase` of priority events): its short name is [`Phase::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Backlog,
    /// The probe sent while the worker is blocked on a chosen read.
    AlignedProbe,
    /// A probe at a random moment.
    Probe,
    Trickle,
    Burst,
    Idle,
    Flood,
    Takeover,
    /// The seed's own members (tied scores), which carry no phase.
    Ties,
    Arrivals,
}

impl Phase {
    pub const ALL: [Phase; 10] = [
        Phase::Backlog,
        Phase::AlignedProbe,
        Phase::Probe,
        Phase::Trickle,
        Phase::Burst,
        Phase::Idle,
        Phase::Flood,
        Phase::Takeover,
        Phase::Ties,
        Phase::Arrivals,
    ];

    /// The short name jobs carry (the same as its JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Backlog => "backlog",
            Phase::AlignedProbe => "aligned-probe",
            Phase::Probe => "probe",
            Phase::Trickle => "trickle",
            Phase::Burst => "burst",
            Phase::Idle => "idle",
            Phase::Flood => "flood",
            Phase::Takeover => "takeover",
            Phase::Ties => "ties",
            Phase::Arrivals => "arrivals",
        }
    }

    /// The phase's name as a job line gives it.
    pub fn label(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (_, Lang::En) => self.as_str(),
            (Phase::Backlog, Lang::Vi) => "tồn đọng",
            (Phase::AlignedProbe, Lang::Vi) => "thăm dò lúc tệ nhất",
            (Phase::Probe, Lang::Vi) => "thăm dò",
            (Phase::Trickle, Lang::Vi) => "nhỏ giọt",
            (Phase::Burst, Lang::Vi) => "dồn",
            (Phase::Idle, Lang::Vi) => "rảnh",
            (Phase::Flood, Lang::Vi) => "dồn dập",
            (Phase::Ties, Lang::Vi) => "cùng điểm",
            (Phase::Arrivals, Lang::Vi) => "đến lúc ngẫu nhiên",
            (Phase::Takeover, Lang::Vi) => self.as_str(),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A short name that is no phase's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPhase(pub String);

impl fmt::Display for UnknownPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown phase {:?}", self.0)
    }
}

impl std::error::Error for UnknownPhase {}

impl std::str::FromStr for Phase {
    type Err = UnknownPhase;

    /// The phase whose short name is `s` (a stream entry's `phase` field).
    fn from_str(s: &str) -> Result<Phase, UnknownPhase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == s).ok_or_else(|| UnknownPhase(s.to_string()))
    }
}

/// A figure per priority: `{ critical = 200, low = 20 }` (missing ones are 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PerPriority<T: Default> {
    #[serde(default)]
    pub critical: T,
    #[serde(default)]
    pub normal: T,
    #[serde(default)]
    pub low: T,
}

impl<T: Copy + Default> PerPriority<T> {
    pub fn array(&self) -> [T; 3] {
        [self.critical, self.normal, self.low]
    }
}

/// What a priority run's processes did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PriorityEvent {
    /// The orchestrator starts a phase of a priority-queue run.
    PhaseStarted { plan: PhasePlan },
    /// A job was put on its priority queue (a stream per priority, or a sorted set with
    /// `score`). `traced` jobs get a line of their own in the text timeline; the others are
    /// counted in the notes.
    JobQueued {
        job: String,
        priority: Priority,
        phase: Phase,
        #[serde(default)]
        traced: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        score: Option<f64>,
    },
    /// A worker's read of `queues` (up to `count` jobs from each) returned `got[i]` jobs from
    /// `queues[i]` after waiting `waited_ms` (a blocked read returns when something arrives or
    /// its BLOCK ends). `read` is the command as sent.
    QueueRead { read: String, queues: Vec<Priority>, count: u32, got: Vec<u32>, waited_ms: f64 },
    /// A worker starts handling a priority job it took, `waited_ms` after the job was queued
    /// (when the job says when that was).
    PriorityJobTaken {
        job: String,
        priority: Priority,
        phase: Phase,
        #[serde(default)]
        traced: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited_ms: Option<f64>,
    },
    /// The worker finished the job (and acknowledged it, on a stream).
    JobDone { job: String },
    /// A job's lease ended before it was done: it is back in the queue, to be taken again.
    JobRequeued { job: String },
}

impl Vocabulary for PriorityEvent {
    const KINDS: &'static [&'static str] =
        &["phase_started", "job_queued", "queue_read", "priority_job_taken", "job_done", "job_requeued"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        self.priority_line(a, w)
    }

    /// A verdict on priorities measures phases and the jobs traced through them (the probe,
    /// the first and last of each group): their starts, queueing and taking are key.
    fn is_key(&self) -> bool {
        match self {
            PriorityEvent::PhaseStarted { .. } => true,
            PriorityEvent::JobQueued { traced, .. } | PriorityEvent::PriorityJobTaken { traced, .. } => *traced,
            PriorityEvent::JobRequeued { .. } => true,
            _ => false,
        }
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let t = |en, vi| pick(w.lang, en, vi);
        match self {
            // A read that found nothing: the worker sat blocked on its queues (the seed's
            // `BLOCK 5000` on low shows as a long bar).
            PriorityEvent::QueueRead { got, waited_ms, .. } if *waited_ms >= 1.0 && got.iter().all(|n| *n == 0) => {
                Drawing::Waited { waited_ms: *waited_ms }
            }
            PriorityEvent::PriorityJobTaken { job, priority, traced: true, .. } => {
                Drawing::Mark(Glyph::Received, format!("{} {job} ({priority})", t("took", "lấy")))
            }
            PriorityEvent::PhaseStarted { plan } => {
                Drawing::Mark(Glyph::Published, plan.id().label(w.lang).to_string())
            }
            _ => Drawing::Nothing,
        }
    }
}

impl PriorityEvent {
    /// Lines of priority-queue runs: a phase the orchestrator starts, a traced job a worker
    /// takes, a lease that ended (None for reads and untraced jobs, counted in the notes).
    fn priority_line(&self, a: Actor, w: &Wording) -> Option<String> {
        Some(match self {
            PriorityEvent::PhaseStarted { plan } => Self::phase_line(a, plan, w),
            PriorityEvent::PriorityJobTaken { traced: false, .. } => return None,
            PriorityEvent::PriorityJobTaken { job, priority, phase, waited_ms, .. } => {
                let phase = phase.label(w.lang);
                let waited = match waited_ms {
                    Some(ms) => {
                        let ms = w.redact.ms(ms.round() as i64);
                        crate::tr!(w.lang, " after {ms} in the queue", " sau {ms} trong hàng đợi")
                    }
                    None => String::new(),
                };
                crate::tr!(
                    w.lang,
                    "{a} took {job} ({priority}, {phase}){waited}",
                    "{a} lấy {job} ({priority}, {phase}){waited}"
                )
            }
            PriorityEvent::JobRequeued { job } => crate::tr!(
                w.lang,
                "{a}: the lease of {job} ended before it was done: back in the queue",
                "{a}: lease của {job} hết hạn khi chưa xong: trả lại hàng đợi"
            ),
            _ => return None,
        })
    }

    fn phase_line(a: Actor, plan: &PhasePlan, w: &Wording) -> String {
        let counts = |jobs: &[u32; 3]| {
            let parts: Vec<String> = Priority::ALL
                .iter()
                .filter(|p| jobs[p.index()] > 0)
                .map(|p| format!("{} {p}", jobs[p.index()]))
                .collect();
            parts.join(", ")
        };
        match plan {
            PhasePlan::Backlog { jobs } => {
                let c = counts(jobs);
                crate::tr!(
                    w.lang,
                    "{a}: backlog queued before the worker starts: {c}",
                    "{a}: tồn đọng xếp hàng trước khi worker chạy: {c}"
                )
            }
            PhasePlan::Probe { blocked_in: Some(read), .. } => crate::tr!(
                w.lang,
                "{a}: probe: 1 critical job while C1 is blocked in {read}",
                "{a}: thăm dò: 1 job critical trong lúc C1 đang bị block trong {read}"
            ),
            PhasePlan::Probe { after_ms, .. } => {
                let after = after_ms.unwrap_or(0.0);
                crate::tr!(
                    w.lang,
                    "{a}: probe: 1 critical job, {after} ms after the last one was done",
                    "{a}: thăm dò: 1 job critical, {after} ms sau khi job trước xong"
                )
            }
            PhasePlan::Trickle { every_ms, jobs } => {
                let (k, lower) = (jobs[0], counts(&[0, jobs[1], jobs[2]]));
                let lower = if lower.is_empty() {
                    String::new()
                } else {
                    crate::tr!(w.lang, "; {lower} at its start", "; {lower} lúc bắt đầu")
                };
                crate::tr!(
                    w.lang,
                    "{a}: trickle: a critical job every {every_ms} ms × {k}{lower}",
                    "{a}: nhỏ giọt: một job critical mỗi {every_ms} ms × {k}{lower}"
                )
            }
            PhasePlan::Burst { critical } => crate::tr!(
                w.lang,
                "{a}: burst: {critical} critical at once, nothing else queued",
                "{a}: dồn: {critical} critical cùng lúc, không còn gì khác trong hàng đợi"
            ),
            PhasePlan::Idle { ms } => crate::tr!(
                w.lang,
                "{a}: idle: nothing queued for {ms} ms; the server counts C1's commands",
                "{a}: rảnh: không có job nào trong {ms} ms; server đếm lệnh của C1"
            ),
            PhasePlan::Flood { critical, low, ms, tau_ms } => {
                let aging = match tau_ms {
                    Some(tau) => crate::tr!(
                        w.lang,
                        "; score = priority − t_queued / {tau} ms (aging)",
                        "; score = mức ưu tiên − t_xếp_hàng / {tau} ms (aging)"
                    ),
                    None => String::new(),
                };
                crate::tr!(
                    w.lang,
                    "{a}: flood: {critical} critical kept waiting for {ms} ms (one queued for each taken), {low} low at its start{aging}",
                    "{a}: dồn dập: luôn giữ {critical} critical chờ trong {ms} ms (lấy một thêm một), {low} low lúc bắt đầu{aging}"
                )
            }
            PhasePlan::Takeover { by } => crate::tr!(
                w.lang,
                "{a}: {by} starts and takes over the queue (as a process manager restarts a dead worker)",
                "{a}: {by} khởi động và tiếp quản hàng đợi (như trình quản lý tiến trình khởi động lại worker đã chết)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::Lang;
    use crate::priority_queue::Phase;

    #[test]
    fn a_phase_reads_back_from_its_short_name_and_its_json() {
        for p in Phase::ALL {
            assert_eq!(p.as_str().parse::<Phase>(), Ok(p));
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.as_str()));
            assert_eq!(p.label(Lang::En), p.as_str());
        }
        assert!("backlogs".parse::<Phase>().is_err());
        assert_eq!(Phase::AlignedProbe.label(Lang::Vi), "thăm dò lúc tệ nhất");
        assert_eq!(Phase::Takeover.label(Lang::Vi), "takeover");
    }
}
