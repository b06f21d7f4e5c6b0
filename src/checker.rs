//! Checkers are pure functions from a recorded run (timeline, stream, final rows) to a
//! verdict, so a saved run can be re-judged without servers. Verdicts are three-valued and
//! compose as in Jepsen: wrong beats unknown beats right.

use crate::report::StreamEntry;
use crate::scenario::{OrderRow, Setup};
use crate::timeline::{Event, EventKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The judgement of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Right,
    /// The checker cannot decide (the run timed out, a process died unplanned, a row is missing).
    Unknown,
    Wrong,
}

impl Verdict {
    /// Compose two verdicts: wrong beats unknown beats right.
    pub fn and(self, other: Verdict) -> Verdict {
        self.max(other)
    }
}

/// A verdict with the reasons behind anything but right.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunVerdict {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

/// What the checker reads of a run.
pub struct RunView<'a> {
    pub events: &'a [Event],
    pub final_rows: &'a [OrderRow],
    /// The run hit its deadline before every entry was acknowledged.
    pub timed_out: bool,
    /// Rows left in the outbox table, where the lab has one.
    pub outbox_rows: Option<i64>,
}

/// Final-state checker: each order must end in the status of its highest-versioned event.
pub fn final_state(setup: &Setup, run: &RunView<'_>) -> RunVerdict {
    let mut verdict = Verdict::Right;
    let mut reasons = Vec::new();
    for order in setup.orders() {
        let Some(expected) = setup.expected_status(order) else { continue };
        match run.final_rows.iter().find(|r| r.order == order) {
            Some(row) if row.status == expected => {}
            Some(row) => {
                verdict = verdict.and(Verdict::Wrong);
                reasons.push(format!("order {order} ended {} (v={}), expected {expected}", row.status, row.version));
            }
            None => {
                verdict = verdict.and(Verdict::Unknown);
                reasons.push(format!("order {order} has no row"));
            }
        }
    }
    if setup.kind == crate::scenario::LabKind::OutboxRollback {
        match run.outbox_rows {
            Some(0) => {}
            Some(n) => {
                verdict = verdict.and(Verdict::Wrong);
                reasons.push(format!("{n} outbox rows survived the rollback"));
            }
            None => {
                verdict = verdict.and(Verdict::Unknown);
                reasons.push("the outbox was not read".into());
            }
        }
    }
    if run.timed_out {
        verdict = verdict.and(Verdict::Unknown);
        reasons.push("the run timed out before every entry was acknowledged".into());
    }
    for e in run.events {
        if let EventKind::Crashed { planned: false, detail } = &e.kind {
            verdict = verdict.and(Verdict::Unknown);
            reasons.push(format!("{} died unplanned: {detail}", e.actor));
        }
    }
    RunVerdict { verdict, reasons }
}

/// Judge a run: [`final_state`], plus, where the outbox lab has several dispatchers or a
/// crash ([`crate::scenario::OutboxSpec::checks_delivery`]), [`delivery`] over the stream.
pub fn judge(setup: &Setup, run: &RunView<'_>, stream: &[StreamEntry]) -> RunVerdict {
    let mut v = final_state(setup, run);
    if setup.outbox.as_ref().is_some_and(|o| o.checks_delivery()) {
        let d = delivery(stream, run.events);
        if !d.reasons.is_empty() {
            v.verdict = v.verdict.and(d.verdict);
            v.reasons.extend(d.reasons);
        }
    }
    v
}

/// What the stream and the consumers' writes say about delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    /// Entries whose event (order, version) is already earlier in the stream.
    pub duplicates: u32,
    /// Pairs of entries of one order where the earlier one has the higher version.
    pub out_of_order_pairs: u32,
}

/// Count duplicates and out-of-order pairs in the stream (the log's own order).
pub fn stream_stats(stream: &[StreamEntry]) -> DeliveryStats {
    let mut stats = DeliveryStats::default();
    for (j, later) in stream.iter().enumerate() {
        let earlier = stream[..j].iter().filter(|e| e.job.order == later.job.order);
        for e in earlier {
            if e.job.version > later.job.version {
                stats.out_of_order_pairs += 1;
            }
        }
        if stream[..j].iter().any(|e| e.job.order == later.job.order && e.job.version == later.job.version) {
            stats.duplicates += 1;
        }
    }
    stats
}

/// Entry IDs per event (order, version), in stream order: two IDs = published twice.
pub fn copies(stream: &[StreamEntry]) -> BTreeMap<(i64, i64), Vec<String>> {
    let mut out: BTreeMap<(i64, i64), Vec<String>> = BTreeMap::new();
    for e in stream {
        out.entry((e.job.order, e.job.version)).or_default().push(e.entry_id.clone());
    }
    out
}

/// Side effects per event (order, version): the entry IDs of every `wrote` that changed a row
/// (rows ≥ 1), in timeline order. An idempotent consumer's skipped duplicate writes 0 rows
/// and does not count; a plain consumer applies every copy.
pub fn side_effects(stream: &[StreamEntry], events: &[Event]) -> BTreeMap<(i64, i64), Vec<String>> {
    let job_of: BTreeMap<&str, (i64, i64)> =
        stream.iter().map(|e| (e.entry_id.as_str(), (e.job.order, e.job.version))).collect();
    let mut out: BTreeMap<(i64, i64), Vec<String>> = BTreeMap::new();
    for e in events {
        if let EventKind::Wrote { entry_id, rows, .. } = &e.kind {
            if *rows >= 1 {
                if let Some(key) = job_of.get(entry_id.as_str()) {
                    out.entry(*key).or_default().push(entry_id.clone());
                }
            }
        }
    }
    out
}

/// Delivery checker: an event whose side effect happened more than once makes the run wrong.
/// Duplicates and reordering in the stream alone do not (an idempotent or CAS consumer can
/// absorb them); they are counted by [`stream_stats`].
pub fn delivery(stream: &[StreamEntry], events: &[Event]) -> RunVerdict {
    let mut verdict = Verdict::Right;
    let mut reasons = Vec::new();
    let types: BTreeMap<(i64, i64), &str> =
        stream.iter().map(|e| ((e.job.order, e.job.version), e.job.event_type.as_str())).collect();
    for ((order, version), entries) in side_effects(stream, events) {
        if entries.len() > 1 {
            verdict = Verdict::Wrong;
            let t = types.get(&(order, version)).copied().unwrap_or("?");
            reasons.push(format!(
                "order {order} {t} (v={version}) applied {} times (entries {})",
                entries.len(),
                entries.join(", ")
            ));
        }
    }
    RunVerdict { verdict, reasons }
}

/// How a variant's runs compare with its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matched,
    Mismatched,
    /// Some run could not be judged, so the count cannot be trusted.
    Inconclusive,
}

pub fn outcome(expect: &crate::scenario::Expectation, verdicts: &[Verdict]) -> Outcome {
    let wrong = verdicts.iter().filter(|v| **v == Verdict::Wrong).count() as u32;
    if verdicts.contains(&Verdict::Unknown) {
        Outcome::Inconclusive
    } else if expect.holds(wrong, verdicts.len() as u32) {
        Outcome::Matched
    } else {
        Outcome::Mismatched
    }
}

/// Re-judge a saved report from its recorded runs alone (what `ordlab check` does): every
/// run's verdict and every variant's tally are recomputed; nothing stored is trusted.
pub fn rejudge(report: &crate::report::LabReport) -> crate::report::LabReport {
    let mut out = report.clone();
    for v in &mut out.variants {
        for r in &mut v.run_records {
            r.verdict = judge(
                &v.setup,
                &RunView {
                    events: &r.events,
                    final_rows: &r.final_rows,
                    timed_out: r.timed_out,
                    outbox_rows: r.outbox_rows,
                },
                &r.stream,
            );
        }
        *v = crate::report::VariantReport::tally(
            v.id.clone(),
            v.title.clone(),
            v.setup.clone(),
            v.expected.clone(),
            v.scheduler_race,
            std::mem::take(&mut v.run_records),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Expectation;
    use crate::timeline::Actor;

    fn setup() -> Setup {
        Setup::from_toml(
            r#"events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]"#,
        )
        .unwrap()
    }

    fn row(status: &str, version: i64) -> Vec<OrderRow> {
        vec![OrderRow { order: 42, status: status.into(), version }]
    }

    #[test]
    fn the_last_business_event_must_win() {
        let s = setup();
        let ok =
            final_state(&s, &RunView { events: &[], final_rows: &row("paid", 2), timed_out: false, outbox_rows: None });
        assert_eq!(ok, RunVerdict { verdict: Verdict::Right, reasons: vec![] });
        let bad = final_state(
            &s,
            &RunView { events: &[], final_rows: &row("created", 1), timed_out: false, outbox_rows: None },
        );
        assert_eq!(bad.verdict, Verdict::Wrong);
        assert_eq!(bad.reasons, vec!["order 42 ended created (v=1), expected paid"]);
    }

    #[test]
    fn undecidable_runs_are_unknown_but_wrong_still_wins() {
        let s = setup();
        let missing = final_state(&s, &RunView { events: &[], final_rows: &[], timed_out: false, outbox_rows: None });
        assert_eq!(missing.verdict, Verdict::Unknown);
        let late =
            final_state(&s, &RunView { events: &[], final_rows: &row("paid", 2), timed_out: true, outbox_rows: None });
        assert_eq!(late.verdict, Verdict::Unknown);
        let crash = [Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Crashed { planned: false, detail: "x".into() },
        }];
        let both = final_state(
            &s,
            &RunView { events: &crash, final_rows: &row("created", 1), timed_out: false, outbox_rows: None },
        );
        assert_eq!(both.verdict, Verdict::Wrong);
        assert_eq!(both.reasons.len(), 2);
    }

    #[test]
    fn planned_crashes_do_not_make_a_run_unknown() {
        let crash = [Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Crashed { planned: true, detail: "x".into() },
        }];
        let v = final_state(
            &setup(),
            &RunView { events: &crash, final_rows: &row("paid", 2), timed_out: false, outbox_rows: None },
        );
        assert_eq!(v.verdict, Verdict::Right);
    }

    fn entry(id: &str, order: i64, t: &str, version: i64) -> StreamEntry {
        StreamEntry {
            shard: 0,
            entry_id: id.into(),
            job: crate::timeline::Job { order, event_type: t.into(), version },
        }
    }

    fn wrote(id: &str, rows: u64) -> Event {
        Event {
            t_us: 0,
            actor: Actor::Consumer(1),
            kind: EventKind::Wrote { entry_id: id.into(), order: 0, status: String::new(), version: None, rows },
        }
    }

    #[test]
    fn stream_stats_count_duplicates_and_out_of_order_pairs() {
        // Two dispatchers without exclusion: 42 created, 42 paid, 43 created, 42 created again.
        let s = [
            entry("1-0", 42, "created", 1),
            entry("2-0", 42, "paid", 2),
            entry("3-0", 43, "created", 1),
            entry("4-0", 42, "created", 1),
        ];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 1, out_of_order_pairs: 1 });
        // A crash: 42 paid published twice, in order otherwise.
        let s = [entry("1-0", 42, "created", 1), entry("2-0", 42, "paid", 2), entry("3-0", 42, "paid", 2)];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 1, out_of_order_pairs: 0 });
        assert_eq!(copies(&s)[&(42, 2)], ["2-0", "3-0"]);
        // Fully reversed, three versions: three pairs.
        let s = [entry("1-0", 7, "shipped", 3), entry("2-0", 7, "paid", 2), entry("3-0", 7, "created", 1)];
        assert_eq!(stream_stats(&s), DeliveryStats { duplicates: 0, out_of_order_pairs: 3 });
    }

    #[test]
    fn a_duplicate_applied_twice_is_wrong_and_an_absorbed_one_is_not() {
        let s = [entry("1-0", 42, "created", 1), entry("2-0", 42, "paid", 2), entry("3-0", 42, "paid", 2)];
        let plain = [wrote("1-0", 1), wrote("2-0", 1), wrote("3-0", 1)];
        assert_eq!(side_effects(&s, &plain)[&(42, 2)], ["2-0", "3-0"]);
        let v = delivery(&s, &plain);
        assert_eq!(v.verdict, Verdict::Wrong);
        assert_eq!(v.reasons, ["order 42 paid (v=2) applied 2 times (entries 2-0, 3-0)"]);
        let idempotent = [wrote("1-0", 1), wrote("2-0", 1), wrote("3-0", 0)];
        assert_eq!(side_effects(&s, &idempotent)[&(42, 2)], ["2-0"]);
        assert_eq!(delivery(&s, &idempotent), RunVerdict { verdict: Verdict::Right, reasons: vec![] });
    }

    #[test]
    fn outcome_compares_counts_with_the_expectation() {
        use Verdict::*;
        assert_eq!(outcome(&Expectation::All, &[Wrong, Wrong]), Outcome::Matched);
        assert_eq!(outcome(&Expectation::All, &[Wrong, Right]), Outcome::Mismatched);
        assert_eq!(outcome(&Expectation::None, &[Right, Unknown]), Outcome::Inconclusive);
    }
}
