//! What a lab run produced, as data, and how it is shown: the model (environment, variants,
//! runs), the text report in the seed's timeline shape, JSON (schema-versioned, re-checkable),
//! an SVG timeline per variant, the SUMMARY table, the compact record per lab that keeps the
//! SUMMARY and the lab book whole in git, and snapshots for insta.
//!
//! Every renderer reads only the model, so a saved run can be re-rendered without servers.
//! Words come from one place per language ([`crate::lang`], [`words`]); values that vary
//! between runs are printed through one [`Redactor`].

pub mod chart;
pub mod cross;
pub mod files;
#[cfg(test)]
pub(crate) mod fixture;
pub mod html;
pub mod json;
mod model;
pub mod png;
pub mod reasons;
pub mod record;
pub mod redact;
pub mod snapshot;
pub mod summary;
pub mod svg;
pub mod text;
pub mod words;

pub use crate::labs::RunRecord;
pub use crate::lang::{pick, Lang};
pub use model::{AllRunsDigest, Drawn, DrawnWindow, Environment, LabInfo, LabReport, VariantDigest, VariantReport};
pub use redact::Redactor;
