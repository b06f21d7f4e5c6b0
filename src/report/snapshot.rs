//! The normalized report that insta snapshots: the text report printed through the snapshot
//! [`Redactor`], so what truly varies between runs shows as `[id]`, `[ms]`, `[n]` and
//! everything else, including the real order of events, stays. A snapshot diff is a real
//! change.

use super::text::{self, TextOptions};
use super::{LabReport, Lang, Redactor};

/// Runs per variant in snapshot tests and `ordlab diff` at most (few, to keep CI fast; a
/// variant that asks for fewer gets what it asks for).
pub const RUNS: u32 = 3;
/// Time scale of snapshot tests and `ordlab diff`: the scale of results/, so a snapshot reads
/// like the report a teacher cites. The steps a lab is about are then at least 40 ms apart,
/// twice the redactor's burst window ([`super::redact::BURST_US`]), so the true order of
/// events a snapshot keeps does not depend on a loaded machine's scheduling.
pub const TIME_SCALE: f64 = 1.0;
/// Seed of snapshot runs, so seeded random choices repeat.
pub const SEED: u64 = 1;

/// File name of a lab's snapshot in `snapshots/`, one per language.
pub fn file_name(lab: &str, lang: Lang) -> String {
    format!("{lab}.{}.snap", lang.code())
}

pub fn normalized(report: &LabReport, lang: Lang) -> String {
    text::render(report, &TextOptions { lang, timeline_run: 1, redact: Redactor::SNAPSHOT })
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
        return (true, "no difference beyond redacted values ([id], [ms], [n])\n".into());
    }
    let d = similar::TextDiff::from_lines(stored.trim_end(), fresh.trim_end());
    let verdict_changed = d.iter_all_changes().any(|c| {
        let v = c.value();
        c.tag() != similar::ChangeTag::Equal
            && (v.contains("  → ")
                || v.contains("final status")
                || v.contains("status cuối")
                || v.contains("expected wrong"))
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
