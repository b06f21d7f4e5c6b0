//! The normalized report that insta snapshots: the text report with what truly varies
//! between runs replaced, visibly, by `[id]`, `[ms]`, `[version]`, and the timeline grouped
//! by process. Structure, events and verdicts stay, so a snapshot diff means a real change.

use super::text::{self, Lang, TextOptions};
use super::LabReport;

/// Runs per variant in snapshot tests and `ordlab diff` at most (few, to keep CI fast; a
/// variant that asks for fewer gets what it asks for).
pub const RUNS: u32 = 3;
/// Time scale of snapshot tests and `ordlab diff`. Verdicts hold at any scale; at 0.5 the
/// tightest race of the built-in labs (S4c: lock expiry vs the overwrite) keeps a 125 ms
/// margin, which a loaded 2-core machine does not eat.
pub const TIME_SCALE: f64 = 0.5;
/// Seed of snapshot runs, so seeded random choices repeat.
pub const SEED: u64 = 1;

/// File name of a lab's snapshot in `snapshots/`, one per language.
pub fn file_name(lab: &str, lang: Lang) -> String {
    let suffix = match lang {
        Lang::En => "en",
        Lang::Vi => "vi",
    };
    format!("{lab}.{suffix}.snap")
}

pub fn normalized(report: &LabReport, lang: Lang) -> String {
    text::render(report, &TextOptions { lang, timeline_run: 1, redact: true })
}

/// Body of an insta `.snap` file (everything after its `---` header).
pub fn snap_body(file_text: &str) -> &str {
    match file_text.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")) {
        Some((_, body)) => body,
        None => file_text,
    }
}

/// A unified diff between the stored and the new normalized report, with a plain verdict.
pub fn diff(stored: &str, fresh: &str) -> (bool, String) {
    if stored.trim_end() == fresh.trim_end() {
        return (true, "no difference beyond redacted values ([id], [ms], versions)\n".into());
    }
    let d = similar::TextDiff::from_lines(stored.trim_end(), fresh.trim_end());
    let verdict_changed = d.iter_all_changes().any(|c| {
        c.tag() != similar::ChangeTag::Equal
            && (c.value().contains("→ wrong") || c.value().contains("final status") || c.value().contains("expected"))
    });
    let mut out = d.unified_diff().header("snapshot", "this run").to_string();
    out.push_str(if verdict_changed {
        "A VERDICT CHANGED: the final states or the wrong-run count differ from the snapshot.\n"
    } else {
        "The timeline's structure changed; the verdicts are the same.\n"
    });
    (false, out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn snap_body_strips_the_insta_header() {
        assert_eq!(super::snap_body("---\nsource: x\n---\nbody\n"), "body\n");
        assert_eq!(super::snap_body("plain"), "plain");
    }

    #[test]
    fn diff_names_a_verdict_change() {
        let (same, _) = super::diff("a\n  → wrong final state: 3/3\n", "a\n  → wrong final state: 3/3");
        assert!(same);
        let (same, text) = super::diff("a\n  → wrong final state: 3/3\n", "a\n  → wrong final state: 0/3\n");
        assert!(!same && text.contains("A VERDICT CHANGED"), "{text}");
    }
}
