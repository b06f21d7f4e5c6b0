//! One run as it is kept: its timeline, whether it finished, what it observed on the servers
//! (typed by its procedure) and its verdict. Everything needed to re-judge and re-render it.

use super::Observed;
use crate::checker::RunVerdict;
use crate::timeline::Event;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// 1-based.
    pub run: u32,
    pub events: Vec<Event>,
    /// The run hit its deadline before it finished.
    pub timed_out: bool,
    pub observed: Observed,
    pub verdict: RunVerdict,
}
