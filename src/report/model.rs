//! The report model: one lab's results, the content of `results/<id>.json`.

use crate::checker::{outcome::outcome, Expectation, Outcome, Verdict};
use crate::labs::{Procedure, RunRecord};
use crate::lang::Words;
use crate::scenario::{SeedFigure, Variant};
use serde::{Deserialize, Serialize};

/// Where and how the lab ran; printed as the header of every report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub ordlab_version: String,
    pub git_commit: String,
    pub backend: String,
    pub redis_version: String,
    /// Which Redis ran: the binary and where it came from, or the image, or `external`.
    #[serde(default)]
    pub redis_server: String,
    pub postgres_version: String,
    /// How a lock is released on this server: `DELEX IFEQ` (Redis ≥ 8.4) or a Lua compare-and-delete.
    pub lock_release: String,
    pub command_line: String,
    /// UTC, RFC 3339, seconds.
    pub date: String,
    pub seed: u64,
    pub time_scale: f64,
}

/// One lab's results.
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
    pub title: Words,
    pub source: String,
    pub description: Option<String>,
    /// The question the lab answers, in one sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Words>,
    /// The lab's family (the lab book's filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantReport {
    pub id: String,
    pub title: Words,
    pub procedure: Procedure,
    /// Number of runs.
    pub runs: u32,
    /// Runs judged wrong.
    pub wrong: u32,
    /// Runs the checker could not judge.
    pub unknown: u32,
    pub expected: Expectation,
    /// Runs in which some intended event never took effect (see `checker::fates`).
    #[serde(default)]
    pub dropped: u32,
    /// How many runs should drop an event.
    #[serde(default = "Expectation::none")]
    pub expected_dropped: Expectation,
    pub outcome: Outcome,
    /// The interleaving depends on the OS scheduler (see [`Variant::scheduler_race`]).
    #[serde(default)]
    pub scheduler_race: bool,
    /// What the seed published for this experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<SeedFigure>,
    pub run_records: Vec<RunRecord>,
}

impl VariantReport {
    /// The variant's runs, counted and compared with its expectation.
    pub fn tally(variant: &Variant, run_records: Vec<RunRecord>) -> VariantReport {
        let mut v = VariantReport {
            id: variant.id.clone(),
            title: variant.title.clone(),
            procedure: variant.procedure.clone(),
            runs: 0,
            wrong: 0,
            unknown: 0,
            expected: variant.expect.clone(),
            dropped: 0,
            expected_dropped: variant.expect_dropped.clone(),
            outcome: Outcome::Matched,
            scheduler_race: variant.scheduler_race,
            seed: variant.seed.clone(),
            run_records,
        };
        v.recount();
        v
    }

    /// Count the runs' verdicts again and compare with the expectation.
    pub fn recount(&mut self) {
        let verdicts: Vec<Verdict> = self.run_records.iter().map(|r| r.verdict.verdict).collect();
        let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count() as u32;
        self.runs = verdicts.len() as u32;
        self.wrong = count(Verdict::Wrong);
        self.unknown = count(Verdict::Unknown);
        self.dropped = self
            .run_records
            .iter()
            .filter(|r| self.procedure.fates(r).is_some_and(|f| f.counts().not_applied() > 0))
            .count() as u32;
        self.outcome = outcome(&self.expected, &verdicts, &self.expected_dropped, self.dropped);
    }

    /// Judge every run again from its record alone (what `ordlab check` does).
    pub fn rejudge(&mut self) {
        for r in &mut self.run_records {
            r.verdict = self.procedure.judge(r);
        }
        self.recount();
    }

    pub fn record(&self, run: u32) -> Option<&RunRecord> {
        self.run_records.iter().find(|r| r.run == run)
    }
}

impl LabReport {
    /// Every variant matched its expectation.
    pub fn matched(&self) -> bool {
        self.variants.iter().all(|v| v.outcome == Outcome::Matched)
    }

    /// The same report with every run judged again; nothing stored is trusted.
    pub fn rejudged(&self) -> LabReport {
        let mut out = self.clone();
        out.variants.iter_mut().for_each(VariantReport::rejudge);
        out
    }
}
