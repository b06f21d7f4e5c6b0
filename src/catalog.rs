//! The built-in labs: every `scenarios/*.toml`, embedded at build time by `build.rs`. A lab is
//! found by id, or read from any path a teacher gives, so a copied and edited file runs as is.

use crate::scenario::{Scenario, ScenarioError};
use std::path::Path;

mod listing;
pub use listing::{list_table, LIST_WIDTH};

include!(concat!(env!("OUT_DIR"), "/built_in_scenarios.rs"));

/// Why a lab could not be found.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("unknown scenario {id:?}: known ids are {known}; or give a path to a .toml file")]
    Unknown { id: String, known: String },
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Every built-in lab, parsed, in file-name order.
pub fn all() -> Result<Vec<Scenario>, ScenarioError> {
    BUILT_IN.iter().map(|(name, text)| Scenario::parse(text, &format!("scenarios/{name}"))).collect()
}

/// A lab by id (`baseline`), or a scenario file by path (`my/lab.toml`).
pub fn find(id_or_path: &str) -> Result<Scenario, CatalogError> {
    let path = Path::new(id_or_path);
    if id_or_path.ends_with(".toml") || path.is_file() {
        return Ok(Scenario::from_path(path)?);
    }
    let labs = all()?;
    let known = labs.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ");
    labs.iter()
        .find(|s| s.id == id_or_path)
        .cloned()
        .ok_or_else(|| CatalogError::Unknown { id: id_or_path.to_string(), known })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_built_in_parses_and_ids_match_file_names() {
        for (name, text) in super::BUILT_IN {
            let s = crate::scenario::Scenario::parse(text, name).unwrap();
            assert_eq!(format!("{}.toml", s.id), *name);
        }
    }

    #[test]
    fn every_built_in_asks_its_question_in_both_languages_and_has_a_family() {
        for s in super::all().unwrap() {
            let q =
                s.question.as_ref().unwrap_or_else(|| panic!("{}: add question = {{ en = \"…\", vi = \"…\" }}", s.id));
            assert!(!q.en.is_empty() && q.vi != q.en, "{}: the question needs its Vietnamese words", s.id);
            let family = s.family.as_deref().unwrap_or_else(|| panic!("{}: add family = \"…\"", s.id));
            let families = crate::labs::FAMILY_NAMES;
            assert!(
                families.contains(&family.replace('-', "_").as_str()),
                "{}: family {family:?} is not one of {families:?} (the modules under src/labs/)",
                s.id
            );
        }
    }

    #[test]
    fn unknown_id_lists_the_known_ones() {
        let err = super::find("nope").unwrap_err().to_string();
        assert!(err.starts_with("unknown scenario \"nope\": known ids are baseline"), "{err}");
    }
}
