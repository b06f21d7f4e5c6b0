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
    normalized_marked(report, lang).text
}

/// [`normalized`], with the lines that carry a verdict marked (what [`diff`] needs).
pub fn normalized_marked(report: &LabReport, lang: Lang) -> text::Marked {
    text::render_marked(report, &TextOptions { lang, timeline_run: 1, redact: Redactor::SNAPSHOT })
}

/// Body of an insta `.snap` file (everything after its `---` header).
pub fn snap_body(file_text: &str) -> &str {
    match file_text.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")) {
        Some((_, body)) => body,
        None => file_text,
    }
}

/// A unified diff between the stored and the new normalized report, with a plain verdict.
/// A verdict changed when a line the renderer marked as a verdict line in the new report is
/// not in the stored one, or when stored lines are gone right after one (a count of unjudged
/// runs no longer printed); the stored text itself is not read for wording.
pub fn diff(stored: &str, fresh: &text::Marked) -> (bool, String) {
    if stored.trim_end() == fresh.text.trim_end() {
        return (true, "no difference beyond redacted values ([id], [ms], [n])\n".into());
    }
    let d = similar::TextDiff::from_lines(stored.trim_end(), fresh.text.trim_end());
    let verdict_changed = d.ops().iter().any(|op| match op.as_tag_tuple() {
        (similar::DiffTag::Equal, ..) => false,
        (similar::DiffTag::Delete, _, new) => new.start > 0 && fresh.is_verdict_line(new.start - 1),
        (_, _, new) => new.into_iter().any(|line| fresh.is_verdict_line(line)),
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

    use crate::report::text::Marked;

    fn marked(text: &str, verdict_lines: &[usize]) -> Marked {
        Marked { text: text.into(), verdict_lines: verdict_lines.to_vec() }
    }

    #[test]
    fn diff_names_a_verdict_change() {
        let (same, _) = super::diff("a\n  → wrong final state: 3/3\n", &marked("a\n  → wrong final state: 3/3", &[1]));
        assert!(same);
        let fresh = marked("a\n  → wrong final state: 0/3\n", &[1]);
        let (same, text) = super::diff("a\n  → wrong final state: 3/3\n", &fresh);
        assert!(!same && text.contains("A VERDICT CHANGED"), "{text}");
        // In either language: the renderer's mark decides, not the wording.
        let fresh = marked("a\n  kỳ vọng số lần sai: all → KHÔNG KHỚP\n", &[1]);
        let (_, text) = super::diff("a\n  kỳ vọng số lần sai: all → khớp\n", &fresh);
        assert!(text.contains("A VERDICT CHANGED"), "{text}");
    }

    #[test]
    fn diff_tells_a_timeline_change_from_a_verdict_change() {
        let stored = "t=[ms] C1 received\n  final status per run: paid\n";
        let fresh = marked("t=[ms] C2 received\n  final status per run: paid\n", &[1]);
        let (same, text) = super::diff(stored, &fresh);
        assert!(!same && text.contains("the verdicts are the same"), "{text}");
        // A line gone right after a verdict line (no more unjudged runs) is a verdict change.
        let stored = "  → wrong: 0/3 runs\n  → could not judge: 1/3 runs\n  expected wrong: 0 → matches\n";
        let fresh = marked("  → wrong: 0/3 runs\n  expected wrong: 0 → matches\n", &[0, 1]);
        assert!(super::diff(stored, &fresh).1.contains("A VERDICT CHANGED"));
    }
}
