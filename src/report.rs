//! What a lab run produced, as data: the environment, every variant's runs with their
//! timelines, stream contents, final rows and verdicts. Renderers turn it into text (the
//! seed's timeline shape), JSON (schema-versioned, re-checkable) and normalized snapshots.

pub mod json;
pub mod snapshot;
pub mod summary;
pub mod svg;
pub mod text;

use crate::checker::{Outcome, RunVerdict, Verdict};
use crate::scenario::{Expectation, OrderRow, Setup};
use crate::timeline::{Event, Job};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where and how the lab ran; printed as the header of every report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub ordlab_version: String,
    pub git_commit: String,
    pub backend: String,
    pub redis_version: String,
    pub postgres_version: String,
    /// How a lock is released on this server: `DELEX IFEQ` (Redis ≥ 8.4) or a Lua compare-and-delete.
    pub lock_release: String,
    pub command_line: String,
    /// UTC, RFC 3339, seconds.
    pub date: String,
    pub seed: u64,
    pub time_scale: f64,
}

/// One lab's results: the content of `results/<id>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabReport {
    pub schema_version: u32,
    pub environment: Environment,
    pub lab: LabInfo,
    pub variants: Vec<VariantReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabInfo {
    pub id: String,
    pub title: String,
    pub source: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantReport {
    pub id: String,
    pub title: String,
    pub setup: Setup,
    /// Number of runs.
    pub runs: u32,
    /// Runs that ended in a wrong final state.
    pub wrong: u32,
    /// Runs the checker could not judge.
    pub unknown: u32,
    pub expected: Expectation,
    pub outcome: Outcome,
    /// The interleaving depends on the OS scheduler (see `Variant::scheduler_race`).
    #[serde(default)]
    pub scheduler_race: bool,
    pub run_records: Vec<RunRecord>,
}

/// One run, everything needed to re-judge and re-render it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// 1-based.
    pub run: u32,
    /// The stream as XRANGE returned it after the run: the log's own order.
    pub stream: Vec<StreamEntry>,
    pub events: Vec<Event>,
    pub final_rows: Vec<OrderRow>,
    /// Rows left in the outbox table, for labs that use one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox_rows: Option<i64>,
    /// Figures measured on the servers for one lab (`entry_bytes` in `state-event`,
    /// `lost_entries` in `failover`), printed per run as `measured (run N):`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, i64>,
    pub timed_out: bool,
    pub verdict: RunVerdict,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamEntry {
    /// The shard (stream) it is in; 0 with one stream.
    #[serde(default)]
    pub shard: u32,
    pub entry_id: String,
    pub job: Job,
}

impl VariantReport {
    /// Count verdicts and compare with the expectation.
    pub fn tally(
        id: String,
        title: String,
        setup: Setup,
        expected: Expectation,
        scheduler_race: bool,
        run_records: Vec<RunRecord>,
    ) -> VariantReport {
        let verdicts: Vec<Verdict> = run_records.iter().map(|r| r.verdict.verdict).collect();
        let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count() as u32;
        VariantReport {
            id,
            title,
            runs: run_records.len() as u32,
            wrong: count(Verdict::Wrong),
            unknown: count(Verdict::Unknown),
            outcome: crate::checker::outcome(&expected, &verdicts),
            expected,
            scheduler_race,
            setup,
            run_records,
        }
    }
}

impl LabReport {
    /// Every variant matched its expectation.
    pub fn matched(&self) -> bool {
        self.variants.iter().all(|v| v.outcome == Outcome::Matched)
    }
}

/// Wilson score interval (95 %) for k successes in n trials, as fractions.
pub fn wilson_95(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn wilson_interval_matches_known_values() {
        let (lo, hi) = super::wilson_95(4, 20);
        assert!((lo - 0.0807).abs() < 1e-3 && (hi - 0.4160).abs() < 1e-3, "{lo} {hi}");
        let (lo, hi) = super::wilson_95(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
    }
}
