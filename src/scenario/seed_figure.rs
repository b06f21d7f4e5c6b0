//! What the seed published for an experiment, kept in the scenario file beside the set-up
//! that reproduces it, and how a measured count is compared with it.

use serde::{Deserialize, Serialize};

/// `seed = { figure = "3/20, 4/20, 8/20 (varies)", agrees = "some-wrong" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedFigure {
    /// The figure as the seed states it.
    pub figure: String,
    /// How a measured count of wrong runs is compared with it.
    pub agrees: SeedCheck,
}

/// How a seed figure is compared with a measured count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeedCheck {
    /// Every run wrong.
    AllWrong,
    /// No run wrong.
    NoneWrong,
    /// The seed saw the race some of the time: at least one measured wrong run agrees.
    SomeWrong,
    /// The seed saw about half the runs wrong: agrees if 50 % lies in the measured 95 % interval.
    AboutHalf,
    /// Not a count of wrong runs: compare by reading the report.
    SeeReport,
}
