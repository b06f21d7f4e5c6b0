//! The report model: one lab's results, the content of `results/<id>.json`.

use crate::chart::Chart;
use crate::checker::{outcome::outcome, Expectation, Outcome, Verdict};
use crate::labs::{Procedure, RunRecord};
use crate::lang::{Lang, Words};
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
    /// What the runs a compact record leaves out showed (see [`super::record`]): set only in a
    /// report read from `records/<id>.json.gz`, whose variants keep run 1 alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_all_runs: Option<AllRunsDigest>,
}

/// The parts of the summary and the lab book that read every run, computed from the full
/// report when its record is written: a record keeps only run 1 of each variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllRunsDigest {
    /// Every chart of the lab ([`crate::report::chart::lab_charts`] of the full report).
    pub charts: Vec<Chart>,
    /// The side-by-side table of the variants' run 1 ([`crate::report::text::side_by_side`]).
    pub side_by_side: Words,
    pub variants: Vec<VariantDigest>,
}

/// One variant's lines over all its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantDigest {
    pub id: String,
    /// The SUMMARY row's notes ([`Procedure::summary_note`]).
    pub summary_note: Option<String>,
    /// The text report's lines after the timeline ([`crate::report::text::variant_outcome`]).
    pub outcome_lines: Words,
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
    /// The lab's own run count, for which its expectation is written (`--runs` may ask for
    /// fewer; 0 in older records).
    #[serde(default)]
    pub planned_runs: u32,
    /// The interleaving depends on the OS scheduler (see [`Variant::scheduler_race`]).
    #[serde(default)]
    pub scheduler_race: bool,
    /// A race of timers decides each run's details (see [`Variant::timer_race`]).
    #[serde(default)]
    pub timer_race: bool,
    /// What the seed published for this experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<SeedFigure>,
    /// Why the variant did not run on this server (`needs Redis ≥ 8.6 …`), if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub run_records: Vec<RunRecord>,
    /// In a compact record, which keeps only the events run 1's timeline draws: how many that
    /// timeline had before its cap (the slide's title names them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn_events_before_cap: Option<usize>,
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
            planned_runs: variant.runs,
            scheduler_race: variant.scheduler_race,
            timer_race: variant.timer_race,
            seed: variant.seed.clone(),
            skipped: None,
            run_records,
            drawn_events_before_cap: None,
        };
        v.recount();
        v
    }

    /// A variant the server cannot run, and why.
    pub fn skipped(variant: &Variant, why: String) -> VariantReport {
        let mut v = VariantReport::tally(variant, Vec::new());
        v.skipped = Some(why);
        v.outcome = Outcome::Skipped;
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
        self.outcome = if self.skipped.is_some() {
            Outcome::Skipped
        } else {
            outcome(&self.expected, &verdicts, &self.expected_dropped, self.dropped, self.planned_runs)
        };
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
    /// Every variant that ran matched its expectation (a variant the server cannot run is
    /// skipped, and says so).
    pub fn matched(&self) -> bool {
        self.variants.iter().all(|v| matches!(v.outcome, Outcome::Matched | Outcome::Skipped | Outcome::TooFewRuns))
    }

    /// The SUMMARY row's notes of `v`, one of this report's variants: from the record's
    /// digest, or from its runs.
    pub fn summary_note(&self, v: &VariantReport) -> Option<String> {
        match self.digest_of(v) {
            Some(d) => d.summary_note.clone(),
            None => v.procedure.summary_note(&v.run_records),
        }
    }

    /// The text report's lines after `v`'s timeline, in `lang`: from the record's digest, or
    /// rendered from its runs.
    pub fn outcome_lines(&self, v: &VariantReport, lang: Lang) -> String {
        match self.digest_of(v) {
            Some(d) => d.outcome_lines.get(lang).to_string(),
            None => {
                let mut lines = String::new();
                let opts = crate::report::text::TextOptions { lang, ..Default::default() };
                crate::report::text::variant_outcome(&mut lines, v, &opts);
                lines
            }
        }
    }

    /// The side-by-side table of the variants' run 1, in `lang` (empty for a lab without one).
    pub fn side_by_side(&self, lang: Lang) -> String {
        match &self.from_all_runs {
            Some(d) => d.side_by_side.get(lang).to_string(),
            None => crate::report::text::side_by_side(
                self,
                &crate::report::text::TextOptions { lang, ..Default::default() },
            ),
        }
    }

    fn digest_of(&self, v: &VariantReport) -> Option<&VariantDigest> {
        self.from_all_runs.as_ref()?.variants.iter().find(|d| d.id == v.id)
    }

    /// The same report with every run judged again; nothing stored is trusted.
    pub fn rejudged(&self) -> LabReport {
        let mut out = self.clone();
        out.variants.iter_mut().for_each(VariantReport::rejudge);
        out
    }
}
