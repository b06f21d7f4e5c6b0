//! A lab is a declarative TOML file: what to set up, what should come out, and what the seed
//! published. This module parses it (errors carry line and column) and resolves its variants,
//! each a complete set-up obtained by laying the variant's keys over the file's shared ones.
//!
//! ```toml
//! id = "baseline"
//! title = "The bug: two consumers in parallel"
//! source = "seed 001, 08a-baseline"
//! runs = 10
//! seed = { figure = "wrong 10/10", agrees = "all-wrong" }  # the seed's published figure
//!
//! [setup]                                  # `kind = "…"` picks the lab kind (default stream);
//! consumers = 2                            # the other keys are that kind's (src/labs/<kind>.rs)
//! strategy = "plain"
//! cost_ms = { created = 800, paid = 50 }
//! events = [
//!   { order = 42, type = "created", version = 1 },
//!   { order = 42, type = "paid", version = 2 },
//! ]
//!
//! [expect]
//! wrong = "all"                            # all | none | some | any | a number
//!
//! [[variant]]                              # optional: each overrides runs, setup, expect, seed
//! id = "three-consumers"
//! setup = { consumers = 3 }
//! ```
//!
//! Parsing is cheap and needs no server: every check that can be made on the file is made
//! here, so a mistake is reported before anything starts.

mod durations;
mod locate;
mod seed_figure;

pub use seed_figure::{SeedCheck, SeedFigure};

use crate::checker::Expectation;
use crate::labs::Procedure;
use crate::lang::Words;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Why a scenario file could not be used. Every message is one line naming the fix.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}:{line}:{column}: {message}")]
    Syntax { path: String, line: usize, column: usize, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("cannot read scenario file {path}: {source}")]
    Read { path: String, source: std::io::Error },
}

// ---------------------------------------------------------------------------------------------
// The file as written. Set-up tables stay raw until each variant's kind is known.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    id: String,
    title: Words,
    source: String,
    #[serde(default)]
    question: Option<Words>,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    seed: Option<SeedFigure>,
    /// For a file without [[variant]] tables: see [`Variant::explored`].
    #[serde(default)]
    explored: Option<Words>,
    #[serde(default)]
    setup: toml::Table,
    #[serde(default)]
    expect: Option<ExpectPatch>,
    #[serde(default)]
    variant: Vec<VariantFile>,
    #[serde(default)]
    explore: Option<ExploreFile>,
}

/// `[explore]`: the set-up `ordlab explore` runs instead (laid over each variant's), where the
/// sampled one is too big for every order of its steps to be run; `why` says what it keeps. A
/// variant's own `explore = { setup = …, why = … }` is laid over its set-up instead.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExploreFile {
    setup: toml::Table,
    why: Words,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    id: String,
    #[serde(default)]
    title: Option<Words>,
    #[serde(default)]
    scheduler_race: bool,
    #[serde(default)]
    timer_race: bool,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    seed: Option<SeedFigure>,
    #[serde(default)]
    explored: Option<Words>,
    /// This variant's own `[explore]` set-up (before the file's).
    #[serde(default)]
    explore: Option<ExploreFile>,
    #[serde(default)]
    setup: toml::Table,
    #[serde(default)]
    expect: Option<ExpectPatch>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectPatch {
    wrong: Expectation,
    /// Runs in which some event never takes effect (skipped as stale, refused, lost); none
    /// unless the scenario says so.
    #[serde(default)]
    dropped: Option<Expectation>,
}

// ---------------------------------------------------------------------------------------------
// The resolved model.

/// A lab: one file, one or more variants.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub id: String,
    pub title: Words,
    /// Where the lab comes from: seed file and section, or "new".
    pub source: String,
    /// The question the lab answers, in one sentence.
    pub question: Option<Words>,
    /// Which family of labs it belongs to (`ordering`, `delivery`, `outbox`, …): the lab
    /// book's filter.
    pub family: Option<String>,
    pub description: Option<String>,
    /// The file it was read from (None for a built-in read from memory).
    #[serde(skip)]
    pub path: Option<PathBuf>,
    pub variants: Vec<Variant>,
}

/// One complete experiment: set-up, number of runs, expected outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub id: String,
    pub title: Words,
    pub runs: u32,
    pub procedure: Procedure,
    pub expect: Expectation,
    /// How many runs drop an event (never apply it).
    pub expect_dropped: Expectation,
    /// Who goes first is decided by the OS scheduler (e.g. two consumers racing for a lock):
    /// the timeline differs from run to run, so snapshots leave it out.
    pub scheduler_race: bool,
    /// A run's details are decided by a race between two timers (a client's socket timeout
    /// against the server's `BLOCK`): a job served late in one run is never served in the
    /// next. The verdict holds either way; a snapshot keeps only the verdict, and the variant
    /// runs alone as a scheduler race does.
    pub timer_race: bool,
    /// What the seed published for this experiment, if it ran it.
    pub seed: Option<SeedFigure>,
    /// Why exploring every order shows what it shows beside what sampling shows (`ordlab
    /// explore` prints it under both counts).
    pub explored: Option<Words>,
    /// A smaller set-up `ordlab explore` runs instead of `procedure` (the file's `[explore]`).
    pub explore_setup: Option<ExploreSetup>,
}

/// The set-up a variant is explored on when its own is too big to run in every order.
#[derive(Clone, Debug, Serialize)]
pub struct ExploreSetup {
    pub procedure: Procedure,
    /// What the smaller set-up keeps of the lab, for the report.
    pub why: Words,
}

impl Variant {
    /// The variant as `ordlab explore` runs it: on the file's `[explore]` set-up, if it has one.
    pub fn as_explored(&self) -> Variant {
        let mut v = self.clone();
        if let Some(e) = &self.explore_setup {
            v.procedure = e.procedure.clone();
        }
        v
    }
}

impl Scenario {
    /// Read and resolve a scenario file.
    pub fn from_path(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Read { path: path.display().to_string(), source })?;
        let mut s = Scenario::parse(&text, &path.display().to_string())?;
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Parse scenario text; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| locate::line_col(text, s.start)).unwrap_or((1, 1));
            ScenarioError::Syntax { path: origin.to_string(), line, column, message: one_line(e.message()) }
        })?;
        resolve(file, text, origin)
    }

    pub fn variant(&self, id: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.id == id)
    }

    /// The ids of its variants, for messages.
    pub fn variant_ids(&self) -> Vec<&str> {
        self.variants.iter().map(|v| v.id.as_str()).collect()
    }
}

/// A procedure from the body of a `[setup]` table alone, with the file format's defaults:
/// for tests and tools that need one without a whole lab.
pub fn setup_from_toml(setup_table: &str) -> Result<Procedure, ScenarioError> {
    let text = format!(
        "id = \"setup\"\ntitle = \"setup\"\nsource = \"inline\"\n[expect]\nwrong = \"any\"\n[setup]\n{setup_table}"
    );
    Ok(Scenario::parse(&text, "[setup]")?.variants.remove(0).procedure)
}

/// The procedure of the `index`-th table of the array `list` in `text` (a grade check list's
/// `[[check]]`): its `setup` laid over the file's `base` `[setup]`, parsed as the kind it names.
/// A mistake is located (line and column) as a scenario's is.
pub fn procedure_in(
    text: &str,
    origin: &str,
    list: &str,
    index: usize,
    base: &toml::Table,
    over: &toml::Table,
) -> Result<Procedure, ScenarioError> {
    let at = locate::SetupAt { text, origin, variant: Some(index), list, variant_setup: over };
    resolve_setup(base, over, &at).map_err(|e| match e {
        SetupFailure::At(err) => err,
        SetupFailure::Message(message) => ScenarioError::Invalid { path: origin.to_string(), message },
    })
}

/// 1-based line and column of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    locate::line_col(text, offset)
}

fn one_line(message: &str) -> String {
    message.trim().replace('\n', " ")
}

fn resolve(file: ScenarioFile, text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let invalid = |message: String| ScenarioError::Invalid { path: origin.to_string(), message };
    if !is_id(&file.id) {
        return Err(invalid(format!("id {:?}: use lowercase letters, digits and '-'", file.id)));
    }
    let single = file.variant.is_empty();
    let variant_files = if single {
        vec![VariantFile {
            id: file.id.clone(),
            title: None,
            scheduler_race: false,
            timer_race: false,
            runs: None,
            seed: None,
            explored: file.explored.clone(),
            explore: None,
            setup: toml::Table::new(),
            expect: None,
        }]
    } else {
        file.variant
    };
    let mut variants: Vec<Variant> = Vec::new();
    for (index, v) in variant_files.into_iter().enumerate() {
        if !is_id(&v.id) {
            return Err(invalid(format!("variant id {:?}: use lowercase letters, digits and '-'", v.id)));
        }
        if variants.iter().any(|x| x.id == v.id) {
            return Err(invalid(format!("variant id {:?} appears twice: give each variant its own id", v.id)));
        }
        let at = locate::SetupAt {
            text,
            origin,
            variant: (!single).then_some(index),
            list: "variant",
            variant_setup: &v.setup,
        };
        let procedure = resolve_setup(&file.setup, &v.setup, &at).map_err(|e| match e {
            SetupFailure::At(err) => err,
            SetupFailure::Message(m) => invalid(format!("variant {}: {m}", v.id)),
        })?;
        let explore_setup = explore_setup(&file.setup, file.explore.as_ref(), &v, &at)?;
        let patch = v.expect.or_else(|| file.expect.clone()).ok_or_else(|| {
            invalid(format!(
                "variant {}: no expected outcome: add [expect] wrong = \"all\" | \"none\" | \"some\" | \"any\"",
                v.id
            ))
        })?;
        let runs = v.runs.or(file.runs).unwrap_or(10);
        if runs == 0 {
            return Err(invalid(format!("variant {}: runs = 0: use at least 1", v.id)));
        }
        let seed = v.seed.or_else(|| if single { file.seed.clone() } else { None });
        let title = v.title.unwrap_or_else(|| file.title.clone());
        let (expect, expect_dropped) = (patch.wrong, patch.dropped.unwrap_or(Expectation::None));
        variants.push(Variant {
            title,
            id: v.id,
            runs,
            procedure,
            expect,
            expect_dropped,
            scheduler_race: v.scheduler_race,
            timer_race: v.timer_race,
            seed,
            explored: v.explored,
            explore_setup,
        });
    }
    if !single && file.seed.is_some() {
        return Err(invalid("a file with [[variant]] tables gives each variant its own seed = { … }".into()));
    }
    Ok(Scenario {
        id: file.id,
        title: file.title,
        source: file.source,
        question: file.question,
        family: file.family,
        description: file.description,
        path: None,
        variants,
    })
}

/// The set-up `ordlab explore` runs for variant `v` (located by `variant_at`): its own
/// `explore`, else the file's `[explore]`, laid over its set-up; None without either.
fn explore_setup(
    file_setup: &toml::Table,
    file_explore: Option<&ExploreFile>,
    v: &VariantFile,
    variant_at: &locate::SetupAt<'_>,
) -> Result<Option<ExploreSetup>, ScenarioError> {
    let Some(e) = v.explore.as_ref().or(file_explore) else { return Ok(None) };
    let (text, origin) = (variant_at.text, variant_at.origin);
    let at = match &v.explore {
        // A key it names is looked for in the variant's own set-up, then the file's.
        Some(_) => locate::SetupAt { variant_setup: &v.setup, ..*variant_at },
        None => locate::SetupAt { text, origin, variant: None, list: "explore", variant_setup: &e.setup },
    };
    let base = merge(file_setup, &v.setup);
    let procedure = resolve_setup(&base, &e.setup, &at).map_err(|err| match err {
        SetupFailure::At(err) => err,
        SetupFailure::Message(m) => {
            ScenarioError::Invalid { path: origin.to_string(), message: format!("[explore] for variant {}: {m}", v.id) }
        }
    })?;
    Ok(Some(ExploreSetup { procedure, why: e.why.clone() }))
}

enum SetupFailure {
    /// Located in the file (line and column).
    At(ScenarioError),
    /// A rule the spec checks itself.
    Message(String),
}

/// The variant's set-up keys laid over the file's, parsed as the kind they name.
fn resolve_setup(base: &toml::Table, over: &toml::Table, at: &locate::SetupAt<'_>) -> Result<Procedure, SetupFailure> {
    let mut merged = merge(base, over);
    let kind = match merged.remove("kind") {
        None => "stream".to_string(),
        Some(toml::Value::String(k)) => k,
        Some(other) => {
            let message = format!("kind = {other}: use a name ({})", Procedure::KINDS.join(" | "));
            return Err(SetupFailure::At(at.error(&["kind".into()], &message)));
        }
    };
    if let Some((path, message)) = durations::first_negative(&merged) {
        return Err(SetupFailure::At(at.error(&path, &format!("setup: {message}"))));
    }
    let mut procedure = Procedure::from_setup(&kind, toml::Value::Table(merged))
        .map_err(|e| SetupFailure::At(at.error(&e.path, &format!("setup: {}", e.message))))?;
    procedure.validate().map_err(SetupFailure::Message)?;
    Ok(procedure)
}

/// `over` laid on `base`: tables merge key by key, anything else is replaced.
fn merge(base: &toml::Table, over: &toml::Table) -> toml::Table {
    let mut out = base.clone();
    for (k, v) in over {
        match (out.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => *b = merge(b, o),
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests;
