//! A check list: the checks an exercise puts a submission through, in a TOML file a teacher
//! can edit. Each check is a stream lab's set-up (the file's `[setup]` with the check's own
//! keys laid over it) whose worker is the submission, a title and a one-line hint in English
//! and Vietnamese that says what the check tests, how many runs, and whether it is graded by
//! exploring every order instead of sampling.
//!
//! ```toml
//! id = "ordering"
//! title = { en = "…", vi = "…" }
//! runs = 3                      # runs per check (`--runs` overrides); a check may set its own
//! patience_ms = 10000           # how long a worker may take to start, move, be back waiting
//!
//! [setup]                       # the stream kind's keys, shared by every check
//! consumers = 2
//! events = [{ order = 42, type = "created", version = 1 }, { order = 42, type = "paid", version = 2 }]
//!
//! [[check]]
//! id = "race"
//! title = { en = "…", vi = "…" }
//! hint = { en = "…", vi = "…" }
//! explore = false               # true: graded by every order of its steps (`ordlab explore`)
//! setup = { cost_ms = { created = 800, paid = 50 } }
//! ```
//!
//! Every mistake is reported before anything starts, with its line and column.

use crate::checker::Expectation;
use crate::lang::Words;
use crate::scenario::{Scenario, ScenarioError, Variant};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckListFile {
    id: String,
    title: Words,
    #[serde(default)]
    question: Option<Words>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    patience_ms: Option<f64>,
    #[serde(default)]
    setup: toml::Table,
    #[serde(default)]
    check: Vec<CheckFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckFile {
    id: String,
    title: Words,
    hint: Words,
    #[serde(default)]
    runs: Option<u32>,
    #[serde(default)]
    explore: bool,
    #[serde(default)]
    patience_ms: Option<f64>,
    #[serde(default)]
    setup: toml::Table,
}

/// A parsed check list.
#[derive(Clone, Debug)]
pub struct CheckList {
    pub id: String,
    pub title: Words,
    pub question: Option<Words>,
    pub description: Option<String>,
    pub source: String,
    pub checks: Vec<Check>,
    /// Where it was read from (a file, or `exercise set ordering`), for messages.
    pub origin: String,
    text: String,
    base: toml::Table,
}

/// One check of a list.
#[derive(Clone, Debug)]
pub struct Check {
    pub id: String,
    pub title: Words,
    /// What it tests, in one line: shown beside a wrong verdict.
    pub hint: Words,
    pub runs: u32,
    /// Graded by exploring every order of its steps instead of sampling runs.
    pub explore: bool,
    /// How long (ms) its workers may take to start, to make progress, and to be back waiting.
    pub patience_ms: f64,
    setup: toml::Table,
    index: usize,
}

/// The placeholder command a check list is checked with before any submission is known.
const PLACEHOLDER: &str = "your-worker";

impl CheckList {
    /// Read and check a check list file.
    pub fn from_path(path: &std::path::Path) -> Result<CheckList, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Read { path: path.display().to_string(), source })?;
        CheckList::parse(&text, &path.display().to_string())
    }

    /// Parse check list text; `origin` names it in messages. Every check's set-up is resolved
    /// (with a placeholder worker), so a mistake anywhere is found now, with its line and column.
    pub fn parse(text: &str, origin: &str) -> Result<CheckList, ScenarioError> {
        let file: CheckListFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| crate::scenario::line_col(text, s.start)).unwrap_or((1, 1));
            let message = e.message().trim().replace('\n', " ");
            ScenarioError::Syntax { path: origin.to_string(), line, column, message }
        })?;
        let at = |path: &[Key], message: String| located(text, origin, path, message);
        if file.check.is_empty() {
            return Err(at(&[], "no checks: add a [[check]] table with id, title, hint and setup".into()));
        }
        if file.patience_ms.is_some_and(|p| !p.is_finite() || p <= 0.0) {
            return Err(at(&[Key::Name("patience_ms")], "patience_ms: give a time in ms > 0".into()));
        }
        if file.runs == Some(0) {
            return Err(at(&[Key::Name("runs")], "runs = 0: use at least 1".into()));
        }
        if file.setup.get("worker").and_then(|w| w.get("command")).is_some() {
            return Err(at(
                &[Key::Name("setup"), Key::Name("worker")],
                "setup.worker.command: the worker is the submission; leave it out".into(),
            ));
        }
        let mut checks: Vec<Check> = Vec::new();
        for (index, c) in file.check.into_iter().enumerate() {
            let here = |key: &'static str| [Key::Name("check"), Key::Index(index), Key::Name(key)];
            if !c.id.chars().all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-') || c.id.is_empty() {
                return Err(at(&here("id"), format!("check id {:?}: use lowercase letters, digits and '-'", c.id)));
            }
            if checks.iter().any(|x| x.id == c.id) {
                return Err(at(&here("id"), format!("check id {:?} appears twice: give each check its own id", c.id)));
            }
            if c.hint.en.trim().is_empty() || c.hint.vi.trim().is_empty() || c.hint.en.contains('\n') {
                return Err(at(&here("hint"), format!("check {}: the hint is one line in en and in vi", c.id)));
            }
            if c.runs == Some(0) {
                return Err(at(&here("runs"), format!("check {}: runs = 0: use at least 1", c.id)));
            }
            if c.patience_ms.is_some_and(|p| !p.is_finite() || p <= 0.0) {
                return Err(at(&here("patience_ms"), format!("check {}: patience_ms: give a time in ms > 0", c.id)));
            }
            if c.setup.get("worker").and_then(|w| w.get("command")).is_some() {
                let path = [Key::Name("check"), Key::Index(index), Key::Name("setup"), Key::Name("worker")];
                return Err(at(&path, format!("check {}: setup.worker.command: the worker is the submission", c.id)));
            }
            checks.push(Check {
                id: c.id,
                title: c.title,
                hint: c.hint,
                runs: c.runs.or(file.runs).unwrap_or(3),
                explore: c.explore,
                patience_ms: c.patience_ms.or(file.patience_ms).unwrap_or(crate::roles::patience::DEFAULT_MS),
                setup: c.setup,
                index,
            });
        }
        let list = CheckList {
            id: file.id,
            title: file.title,
            question: file.question,
            description: file.description,
            source: file.source.unwrap_or_else(|| "an exercise check list".into()),
            checks,
            origin: origin.to_string(),
            text: text.to_string(),
            base: file.setup,
        };
        for c in &list.checks {
            let procedure = list.procedure(c, &[PLACEHOLDER.to_string()])?;
            if procedure.kind() != "stream" {
                let path = [Key::Name("check"), Key::Index(c.index), Key::Name("setup")];
                let message = format!(
                    "check {}: kind = {:?}: a check is a stream lab (kind = \"stream\")",
                    c.id,
                    procedure.kind()
                );
                return Err(located(text, origin, &path, message));
            }
        }
        Ok(list)
    }

    /// The check `id`.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// A check's procedure with `command` as its worker (and the check's patience).
    fn procedure(&self, check: &Check, command: &[String]) -> Result<crate::labs::Procedure, ScenarioError> {
        let mut base = self.base.clone();
        let worker = base.entry("worker").or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(w) = worker {
            w.insert("command".into(), toml::Value::Array(command.iter().cloned().map(toml::Value::String).collect()));
        }
        base.insert("patience_ms".into(), toml::Value::Float(check.patience_ms));
        crate::scenario::procedure_in(&self.text, &self.origin, "check", check.index, &base, &check.setup).map_err(
            |e| match e {
                ScenarioError::Invalid { path, message } => {
                    ScenarioError::Invalid { path, message: format!("check {}: {message}", check.id) }
                }
                other => other,
            },
        )
    }

    /// The lab the checks make with `command` as every check's worker: one variant per check.
    pub fn scenario(&self, command: &[String]) -> Result<Scenario, ScenarioError> {
        let mut variants = Vec::new();
        for c in &self.checks {
            variants.push(Variant {
                id: c.id.clone(),
                title: c.title.clone(),
                runs: c.runs,
                procedure: self.procedure(c, command)?,
                expect: Expectation::None,
                expect_dropped: Expectation::Any,
                scheduler_race: false,
                timer_race: false,
                seed: None,
                explored: None,
                explore_setup: None,
            });
        }
        Ok(Scenario {
            id: format!("grade-{}", self.id),
            title: self.title.clone(),
            source: self.source.clone(),
            question: self.question.clone(),
            family: Some("ordering".into()),
            description: self.description.clone(),
            path: None,
            variants,
        })
    }
}

/// A step of a key path in the file.
#[derive(Clone, Copy)]
enum Key {
    Name(&'static str),
    Index(usize),
}

/// `message` at the deepest part of `path` found in `text` (line and column), else the file's.
fn located(text: &str, origin: &str, path: &[Key], message: String) -> ScenarioError {
    let offset = (|| {
        let doc: toml_edit::ImDocument<&str> = toml_edit::ImDocument::parse(text).ok()?;
        let mut item = doc.as_item();
        let mut best = None;
        for k in path {
            let next = match k {
                Key::Name(n) => {
                    if let Some((key, _)) = item.as_table_like().and_then(|t| t.get_key_value(n)) {
                        best = key.span().map(|s| s.start).or(best);
                    }
                    item.get(*n)
                }
                Key::Index(i) => item.get(*i),
            };
            let Some(next) = next else { break };
            item = next;
            if let Key::Index(_) = k {
                best = item.span().map(|s| s.start).or(best);
            }
        }
        best
    })();
    match offset {
        Some(offset) => {
            let (line, column) = crate::scenario::line_col(text, offset);
            ScenarioError::Syntax { path: origin.to_string(), line, column, message }
        }
        None => ScenarioError::Invalid { path: origin.to_string(), message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"id = "t"
title = "t"
[setup]
consumers = 1
events = [{ order = 42, type = "created", version = 1 }]
[[check]]
id = "one"
title = "one"
hint = { en = "tests one thing", vi = "kiểm một điều" }
setup = { cost_ms = { created = 10 } }
"#;

    fn error(text: &str) -> String {
        CheckList::parse(text, "list.toml").unwrap_err().to_string()
    }

    #[test]
    fn a_minimal_list_gives_one_variant_per_check_with_the_submission_as_worker() {
        let list = CheckList::parse(MINIMAL, "list.toml").unwrap();
        assert_eq!((list.checks.len(), list.checks[0].runs), (1, 3));
        let lab = list.scenario(&["python3".into(), "a b.py".into()]).unwrap();
        let json = serde_json::to_string(&lab.variants[0].procedure).unwrap();
        assert!(
            json.contains(r#""command":["python3","a b.py"]"#) && json.contains(r#""patience_ms":15000"#),
            "{json}"
        );
    }

    #[test]
    fn mistakes_are_located_by_line_and_column() {
        let e = error(&MINIMAL.replace("hint = ", "hnt = "));
        assert!(e.starts_with("list.toml:9:1: unknown field `hnt`"), "{e}");
        let e = error(&MINIMAL.replace("cost_ms = {", "cost = {"));
        assert!(e.starts_with("list.toml:10:11: setup: unknown field `cost`"), "{e}");
        let e = error(&format!("{MINIMAL}[[check]]\nid = \"one\"\ntitle = \"x\"\nhint = \"y\"\n"));
        assert!(e.starts_with("list.toml:12:1: check id \"one\" appears twice"), "{e}");
        let e = error(&MINIMAL.replace("setup = {", "runs = 0\nsetup = {"));
        assert!(e.starts_with("list.toml:10:1: check one: runs = 0"), "{e}");
        let e = error(&MINIMAL.replace("consumers = 1", "consumers = 1\nworker = { command = [\"x\"] }"));
        assert!(e.starts_with("list.toml:5:1: setup.worker.command: the worker is the submission"), "{e}");
        // Another kind's keys are refused where they are.
        let e = error(&MINIMAL.replace("[setup]", "[setup]\nkind = \"sql-race\""));
        assert!(e.starts_with("list.toml:5:1: setup: unknown field `consumers`"), "{e}");
    }
}
