//! `ordlab grade`: a class exercise. A student's worker, given as a command line, is put through
//! a set of labs that attack it, and each check says right or wrong, with the timeline of its
//! first wrong run; the exit code is 0 only when every check ends right.
//!
//! A set is a scenario in `src/grade/` whose worker command is the placeholder `WORKER`; the
//! student's command line takes its place, and the lab runs as any other (same servers,
//! interposer, checkers). Grading is sampling: a race the worker loses only sometimes shows in
//! some runs, so a set's checks are chosen where the wrong order is what usually happens.

use crate::lang::{pick, Lang};
use crate::report::{words, LabReport};
use crate::scenario::{Scenario, ScenarioError};
use crate::timeline::vocabulary::{Redactor, Wording};
use std::fmt::Write;

/// The sets `--set` names, each with its scenario text.
pub const SETS: [(&str, &str); 1] = [("ordering", include_str!("grade/ordering.toml"))];

/// Errors of choosing a set or building its scenario.
#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    #[error("unknown exercise set {0:?}: the sets are {known}", known = SETS.map(|s| s.0).join(", "))]
    UnknownSet(String),
    #[error("no worker given: `ordlab grade my_consumer.py`, or `ordlab grade -- php my_consumer.php`")]
    NoWorker,
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// The command line for a worker given as a file: its interpreter by extension
/// (`x.py` → `python3 x.py`, `.php` → php, `.js`/`.mjs` → node); anything else as it is.
pub fn worker_command(args: &[String]) -> Result<Vec<String>, GradeError> {
    let first = args.first().ok_or(GradeError::NoWorker)?;
    let interpreter = match std::path::Path::new(first).extension().and_then(|e| e.to_str()) {
        Some("py") => Some("python3"),
        Some("php") => Some("php"),
        Some("js" | "mjs" | "cjs") => Some("node"),
        _ => None,
    };
    Ok(interpreter.map(str::to_string).into_iter().chain(args.iter().cloned()).collect())
}

/// The set's scenario with `command` as its worker.
pub fn scenario(set: &str, command: &[String]) -> Result<Scenario, GradeError> {
    let (_, text) =
        SETS.iter().find(|(name, _)| *name == set).ok_or_else(|| GradeError::UnknownSet(set.to_string()))?;
    let quoted: Vec<String> = command.iter().map(|a| toml_string(a)).collect();
    let text = text.replace("command = WORKER", &format!("command = [{}]", quoted.join(", ")));
    Ok(Scenario::parse(&text, &format!("exercise set {set}"))?)
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Per check: right or wrong (how many runs), and the timeline of the first wrong run with
/// the checker's reason.
pub fn render(report: &LabReport, lang: Lang) -> String {
    let mut out = String::new();
    let w = Wording { lang, many_orders: false, redact: Redactor::NONE };
    for v in &report.variants {
        let n = v.run_records.len();
        let title = v.title.get(lang);
        if v.wrong == 0 && v.unknown == 0 {
            let _ = writeln!(out, "✓ {}: {title}: {} {n}/{n}", v.id, pick(lang, "right in", "đúng"));
            continue;
        }
        let (mark, label) = if v.wrong > 0 {
            ("✕", crate::tr!(lang, "WRONG in {}/{n} runs", "SAI {}/{n} lần", v.wrong))
        } else {
            ("?", crate::tr!(lang, "could not be judged in {}/{n} runs", "không phán được {}/{n} lần", v.unknown))
        };
        let _ = writeln!(out, "{mark} {}: {title}: {label}", v.id);
        let first = v.run_records.iter().position(|r| r.verdict.verdict != crate::checker::Verdict::Right);
        if let Some(i) = first {
            let r = &v.run_records[i];
            let _ = writeln!(out, "  {} {}:", pick(lang, "run", "lần"), i + 1);
            for (e, line) in words::timeline_lines(r, &v.procedure, &w, false) {
                let _ = writeln!(out, "    {}  {line}", w.redact.stamp(e.t_us / 1000));
            }
            for reason in &r.verdict.reasons {
                let _ = writeln!(out, "    → {reason}");
            }
        }
    }
    let right = report.variants.iter().filter(|v| v.wrong == 0 && v.unknown == 0).count();
    let total = report.variants.len();
    let _ = writeln!(out, "{}", crate::tr!(lang, "{right} of {total} checks right", "{right}/{total} bài kiểm đúng"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gets_its_interpreter_and_a_command_stays_as_it_is() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(worker_command(&args(&["c.py", "--cas"])).unwrap(), args(&["python3", "c.py", "--cas"]));
        assert_eq!(worker_command(&args(&["w.js"])).unwrap(), args(&["node", "w.js"]));
        assert_eq!(worker_command(&args(&["php", "c.php"])).unwrap(), args(&["php", "c.php"]));
        assert!(matches!(worker_command(&[]), Err(GradeError::NoWorker)));
    }

    #[test]
    fn every_set_parses_with_a_command_that_needs_quoting() {
        for (set, _) in SETS {
            let s = scenario(set, &["python3".into(), "my \"odd\" path\\x.py".into()]).unwrap();
            assert!(!s.variants.is_empty(), "{set}");
        }
        assert!(matches!(scenario("nope", &["x".into()]), Err(GradeError::UnknownSet(_))));
    }
}
