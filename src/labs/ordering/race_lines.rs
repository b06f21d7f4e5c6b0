//! Who received what and who won the lock, run by run: the facts a race lab is about, printed
//! so a reader sees that the harness did not decide them. Which consumer receives an event
//! follows the order in which the consumers waited (drawn from the seed, kept in snapshots);
//! which holder takes a lock first is the race itself (redacted in snapshots).

use crate::checker::exclusion;
use crate::checker::fates;
use crate::labs::{Line, Piece};
use crate::lang::{pick, Lang};
use crate::timeline::{Actor, Event};
use std::collections::BTreeMap;

/// One run's timeline.
pub type RaceRun<'a> = &'a [Event];

/// `consumers waiting in XREADGROUP, longest first: C2, C1`.
pub fn waiting_line(waiting_order: &[u32], lang: Lang) -> Line {
    let names: Vec<String> = waiting_order.iter().map(|i| Actor::Consumer(*i).to_string()).collect();
    let label = pick(
        lang,
        "consumers waiting in XREADGROUP, longest first (Redis hands a new entry to the longest waiter)",
        "consumer đang chờ ở XREADGROUP, chờ lâu nhất trước (Redis giao entry mới cho người chờ lâu nhất)",
    );
    Line::text(format!("{label}: ")).and(Piece::Seeded(names.join(", ")))
}

/// Who took an event in each run.
pub struct TakenBy {
    label: String,
    takers: Vec<Option<Actor>>,
}

impl TakenBy {
    pub fn new(runs: &[RaceRun<'_>], order: i64, version: i64, label: &str) -> TakenBy {
        let takers = runs.iter().map(|r| fates::first_receiver(r, order, version)).collect();
        TakenBy { label: label.to_string(), takers }
    }

    /// `C1 took created in 2 of 3 runs, C2 in 1`.
    pub fn sentence(&self, lang: Lang) -> String {
        let mut counts: BTreeMap<Actor, u32> = BTreeMap::new();
        for a in self.takers.iter().flatten() {
            *counts.entry(*a).or_default() += 1;
        }
        let (label, n) = (&self.label, self.takers.len());
        let parts: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(i, (a, k))| match (i, lang) {
                (0, Lang::En) => format!("{a} took {label} in {k} of {n} runs"),
                (0, Lang::Vi) => format!("{a} nhận {label} {k}/{n} lần"),
                (_, Lang::En) => format!("{a} in {k}"),
                (_, Lang::Vi) => format!("{a} {k} lần"),
            })
            .collect();
        parts.join(", ")
    }

    /// `created taken by, per run: C2 C1 C1 → C1 took created in 2 of 3 runs, C2 in 1`.
    pub fn line(&self, lang: Lang) -> Line {
        let names: Vec<String> = self.takers.iter().map(|a| a.map_or("-".to_string(), |a| a.to_string())).collect();
        let label = &self.label;
        let head = crate::tr!(lang, "{label} taken by, per run: ", "{label} do ai nhận, từng lần: ");
        Line::text(head).and(Piece::Seeded(format!("{} → {}", names.join(" "), self.sentence(lang))))
    }
}

/// Which event the first holder of each run's lock had received: `created`, `paid`.
fn first_lock_holders_event(run: RaceRun<'_>) -> Option<String> {
    let ex = exclusion::check(run);
    let first = ex.intervals.first()?;
    // Its own consumer's `received`, or the entries of a worker's stream read at the wire.
    run.iter()
        .rev()
        .filter(|e| e.actor == first.holder && e.t_us <= first.acquired_us)
        .find_map(|e| e.kind.delivered().pop().map(|(_, job)| job.event_type))
}

/// Whose holder took the lock first in each run.
pub struct LockFirst {
    last_event: String,
    firsts: Vec<String>,
}

impl LockFirst {
    /// `last_event`: the newest event (`paid`); its holder locking first is the wrong order.
    pub fn new(runs: &[RaceRun<'_>], last_event: &str) -> LockFirst {
        let firsts = runs.iter().map(|r| first_lock_holders_event(r).unwrap_or_else(|| "-".into())).collect();
        LockFirst { last_event: last_event.to_string(), firsts }
    }

    /// `paid's holder locked first in 1 of 3 runs`.
    pub fn sentence(&self, lang: Lang) -> String {
        let k = self.firsts.iter().filter(|t| **t == self.last_event).count();
        let (n, last) = (self.firsts.len(), &self.last_event);
        crate::tr!(
            lang,
            "{last}'s holder locked first in {k} of {n} runs",
            "người giữ {last} lấy lock trước {k}/{n} lần"
        )
    }

    /// `lock taken first by the holder of, per run: created paid … → paid's holder …`.
    pub fn line(&self, lang: Lang) -> Line {
        let head = pick(
            lang,
            "lock taken first by the holder of, per run: ",
            "ai lấy lock trước (đang giữ event nào), từng lần: ",
        );
        Line::text(head).and(Piece::Raced(format!("{} → {}", self.firsts.join(" "), self.sentence(lang))))
    }
}

/// `lock holds per run (taken / overlapped after expiry / overlapped without expiry): 2/0/0 …`.
/// Holds taken and broken overlaps are the same in every run of a lab (2 and 0 with a working
/// lock); overlaps after expiry depend on who locked first when the TTL is shorter than a job
/// (`expiry_possible`), and are then redacted in snapshots.
pub fn exclusion_line(runs: &[RaceRun<'_>], expiry_possible: bool, lang: Lang) -> Line {
    let head = pick(
        lang,
        "lock holds per run (taken / overlapped after the TTL ran out / overlapped, lock broken): ",
        "số lần giữ lock từng lần (lấy được / chồng nhau sau khi TTL hết / chồng nhau, lock hỏng): ",
    );
    let mut line = Line::text(head);
    for (i, r) in runs.iter().enumerate() {
        let ex = exclusion::check(r);
        let after = ex.after_expiry().to_string();
        line = line
            .and_text(if i == 0 { "" } else { " " })
            .and(Piece::Seeded(format!("{}/", ex.intervals.len())))
            .and(if expiry_possible { Piece::Raced(after) } else { Piece::Seeded(after) })
            .and(Piece::Seeded(format!("/{}", ex.violations())));
    }
    line
}
