//! The lab book's exploration view: for each exploration saved beside the results
//! (`explore/explore-<lab>-<variant>.json`, written by `ordlab explore --out`), its classes of
//! schedules as a grid of squares coloured by verdict; each square opens its schedule string,
//! its steps one per line (the schedule's timeline) and the checker's reason.
//!
//! The view reads the exploration's versioned JSON as data (the fields below), so the report
//! does not depend on the explorer's code.

use super::{both, esc};
use crate::checker::Verdict;
use crate::lang::Words;
use serde::Deserialize;
use std::fmt::Write;
use std::path::Path;

/// What the view shows of one saved exploration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ExploredFile {
    pub explore_version: u32,
    pub lab: String,
    pub variant: String,
    pub search: String,
    pub runs: usize,
    pub classes: Vec<ClassView>,
    #[serde(default)]
    pub hit_max_schedules: bool,
    /// Explored on the lab's smaller `[explore]` set-up: what it keeps.
    #[serde(default)]
    pub smaller_setup: Option<Words>,
}

/// One class of schedules.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ClassView {
    pub schedule: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub steps: Vec<String>,
    /// What became of the lab's events in this class (absent in older files).
    #[serde(default)]
    pub fates: Option<FatesView>,
}

/// The counts of events that did not take effect once, in one class.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct FatesView {
    #[serde(default)]
    pub lost: u32,
    #[serde(default)]
    pub dropped: u32,
    #[serde(default)]
    pub applied_twice: u32,
}

impl FatesView {
    /// `1 dropped, 1 applied twice` in both languages; None when every event took effect once.
    fn words(&self) -> Option<Words> {
        let parts = [
            (self.lost, "lost", "mất"),
            (self.dropped, "dropped", "bị bỏ"),
            (self.applied_twice, "applied twice", "áp dụng hai lần"),
        ];
        let said = |vi: bool| {
            let p: Vec<String> = parts
                .iter()
                .filter(|(n, ..)| *n > 0)
                .map(|(n, en, v)| format!("{n} {}", if vi { v } else { en }))
                .collect();
            p.join(", ")
        };
        let en = said(false);
        (!en.is_empty()).then(|| Words::new(format!("events: {en}"), format!("sự kiện: {}", said(true))))
    }
}

/// Every exploration in `dir/explore/`, by lab and variant; a file that does not parse is
/// left out (the lab book is still built), and said on stderr.
pub fn load(dir: &Path) -> Vec<ExploredFile> {
    let Ok(entries) = std::fs::read_dir(dir.join("explore")) else { return Vec::new() };
    let mut files: Vec<ExploredFile> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        if !name.starts_with("explore-") || !(name.ends_with(".json") || name.ends_with(".json.gz")) {
            continue;
        }
        match read(&path) {
            Ok(x) => files.push(x),
            Err(err) => eprintln!("ordlab: {} left out of the lab book: {err}", path.display()),
        }
    }
    files.sort_by(|a, b| (&a.lab, &a.variant).cmp(&(&b.lab, &b.variant)));
    files
}

fn read(path: &Path) -> Result<ExploredFile, String> {
    let text = crate::report::json::read_text(path)?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The part that holds exploration `x`'s classes (`explored-<lab>-<variant>`).
pub fn part_name(x: &ExploredFile) -> String {
    format!("explored-{}-{}", x.lab, x.variant)
}

/// `1 class`, `12 classes`; `1 run`, `3 runs`, in both languages.
fn counted(n: usize, one: &str, many: &str, vi: &str) -> Words {
    Words::new(format!("{n} {}", if n == 1 { one } else { many }), format!("{n} {vi}"))
}

/// The view's section (nothing when there is no exploration): per exploration its counts, and
/// its classes in a part loaded when they are opened.
pub fn render(out: &mut String, explored: &[ExploredFile]) {
    if explored.is_empty() {
        return;
    }
    let _ = write!(
        out,
        r#"<section class="explored" id="explored"><h2>{}</h2><p>{}</p>"#,
        both(&Words::new("Explored: every order of the steps", "Đã duyệt: mọi thứ tự của các bước")),
        both(&Words::new(
            "Each square is one class of schedules (runs that differ only in the order of commuting steps): ✕ red ends wrong, ✓ green right, ? grey not judged; an amber frame and ! : an event was lost, dropped or applied twice in it. Open one for its steps and its replay command.",
            "Mỗi ô là một lớp lịch chạy (các lần chạy chỉ khác thứ tự của các bước giao hoán): ✕ đỏ là kết thúc SAI, ✓ xanh là ĐÚNG, ? xám là chưa rõ; viền vàng và ! : có một sự kiện bị mất, bị bỏ hoặc áp dụng hai lần. Mở một ô để xem các bước và lệnh chạy lại.",
        ))
    );
    for x in explored {
        let wrong = x.classes.iter().filter(|c| c.verdict == Verdict::Wrong).count();
        let (n, runs) = (x.classes.len(), x.runs);
        let classes = counted(n, "class", "classes", "lớp");
        let ran = counted(runs, "run", "runs", "lần chạy");
        let title = Words::new(
            format!("{wrong} of {} wrong ({}, {})", classes.en, x.search, ran.en),
            format!("{wrong} trên {} SAI ({}, {})", classes.vi, x.search, ran.vi),
        );
        let name = part_name(x);
        let setup = match &x.smaller_setup {
            Some(why) => format!(
                "<p>{}</p>",
                both(&Words::new(
                    format!("On the lab's smaller set-up for explore, not the sampled one: {}", why.en),
                    format!("Trên set-up nhỏ hơn của lab dành cho explore, không phải set-up lấy mẫu: {}", why.vi),
                ))
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            r#"<article class="exploration" data-lab="{0}" data-variant="{1}" data-part="{2}"><h3><span translate="no">{0} · {1}</span> — {3}</h3>{6}<details class="open-classes"><summary>{4}</summary><div class="classes" data-slot="{5}"></div></details></article>"#,
            esc(&x.lab),
            esc(&x.variant),
            esc(&super::part::lab_script(&name)),
            both(&title),
            both(&Words::new(format!("show the {}", classes.en), format!("hiện {}", classes.vi))),
            esc(&name),
            setup,
        );
        out.push('\n');
    }
    out.push_str("</section>\n");
}

/// What exploration `x`'s part holds: its classes.
pub fn part(x: &ExploredFile) -> Vec<(String, String)> {
    let mut html = String::new();
    for (i, c) in x.classes.iter().enumerate() {
        class(&mut html, x, i, c);
    }
    vec![(part_name(x), html)]
}

fn class(out: &mut String, x: &ExploredFile, i: usize, c: &ClassView) {
    let (kind, mark, said) = match c.verdict {
        Verdict::Wrong => ("wrong", "✕", Words::new("wrong", "sai")),
        Verdict::Right => ("right", "✓", Words::new("right", "đúng")),
        Verdict::Unknown => ("unknown", "?", Words::new("not judged", "chưa rõ")),
    };
    let fates = c.fates.as_ref().and_then(FatesView::words);
    let (marked, flag) = if fates.is_some() { (" fates", "!") } else { ("", "") };
    let label = Words::new(format!("class {}: {}", i + 1, said.en), format!("lớp {}: {}", i + 1, said.vi));
    let _ = write!(
        out,
        r#"<details class="class {kind}{marked}"><summary title="{}"><span class="glyph" aria-hidden="true">{mark}{flag}</span><span class="sr">{}</span></summary><div class="steps"><p translate="no"><code>ordlab run {} --variant {} --schedule {}</code></p><ol>"#,
        esc(&c.schedule),
        both(&label),
        esc(&x.lab),
        esc(&x.variant),
        esc(&c.schedule)
    );
    for s in &c.steps {
        let _ = write!(out, r#"<li translate="no">{}</li>"#, esc(s));
    }
    out.push_str("</ol>");
    if let Some(r) = c.reasons.first() {
        let _ = write!(
            out,
            "<p class=\"verdict\">{}</p>",
            both(&Words::new(r.clone(), crate::report::reasons::in_lang(r, crate::lang::Lang::Vi)))
        );
    }
    if let Some(w) = &fates {
        let _ = write!(out, "<p class=\"fates\">{}</p>", both(w));
    }
    out.push_str("</div></details>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> ExploredFile {
        let class = |schedule: &str, verdict| ClassView {
            schedule: schedule.into(),
            verdict,
            reasons: if verdict == Verdict::Wrong {
                vec!["order 42 ended created (v=1), expected paid".into()]
            } else {
                vec![]
            },
            steps: vec!["P XADD orders * → e1".into(), "C1 XREADGROUP … → 1 entry e1".into()],
            fates: None,
        };
        ExploredFile {
            explore_version: 1,
            lab: "baseline".into(),
            variant: "baseline".into(),
            search: "exhaustive".into(),
            runs: 3,
            classes: vec![class("P.C1", Verdict::Right), class("C1.P", Verdict::Wrong)],
            hit_max_schedules: false,
            smaller_setup: None,
        }
    }

    #[test]
    fn each_class_is_a_square_coloured_by_verdict_that_opens_its_steps() {
        let mut head = String::new();
        render(&mut head, &[file()]);
        assert!(head.contains("1 of 2 classes wrong (exhaustive, 3 runs)"), "{head}");
        assert!(head.contains("1 trên 2 lớp SAI"), "{head}");
        assert!(head.contains(r#"data-part="book/explored-baseline-baseline.js""#), "{head}");
        assert!(!head.contains("class right"), "the classes are in the part: {head}");
        assert!(!head.contains("smaller set-up"), "{head}");
        let smaller = ExploredFile { smaller_setup: Some(Words::new("2 rows", "2 dòng")), ..file() };
        let mut head = String::new();
        render(&mut head, &[smaller]);
        assert!(head.contains("On the lab&#39;s smaller set-up for explore, not the sampled one: 2 rows"), "{head}");
        let out = part(&file()).remove(0).1;
        assert_eq!(out.matches(r#"<details class="class right">"#).count(), 1);
        assert_eq!(out.matches(r#"<details class="class wrong">"#).count(), 1);
        assert!(out.contains(r#"<span class="glyph" aria-hidden="true">✕</span>"#), "wrong by shape too: {out}");
        assert!(out.contains("ordlab run baseline --variant baseline --schedule C1.P"));
        assert!(out.contains("<li translate=\"no\">C1 XREADGROUP … → 1 entry e1</li>"));
        assert!(out.contains("expected paid"));
        assert!(!out.contains("fates"), "every event took effect once: no mark");
    }

    #[test]
    fn a_class_that_drops_an_event_is_marked_and_says_so() {
        let mut x = file();
        x.classes[0].fates = Some(FatesView { dropped: 1, ..FatesView::default() });
        x.classes[1].fates = Some(FatesView::default());
        let out = part(&x).remove(0).1;
        assert_eq!(out.matches(r#"<details class="class right fates">"#).count(), 1, "{out}");
        assert_eq!(out.matches(r#"<details class="class wrong">"#).count(), 1, "{out}");
        assert!(out.contains("events: 1 dropped") && out.contains("sự kiện: 1 bị bỏ"), "{out}");
    }

    #[test]
    fn one_class_and_one_run_are_counted_in_the_singular() {
        let mut x = file();
        x.classes.truncate(1);
        x.runs = 1;
        let mut head = String::new();
        render(&mut head, &[x]);
        assert!(head.contains("0 of 1 class wrong (exhaustive, 1 run)"), "{head}");
    }

    #[test]
    fn no_exploration_no_section_and_a_saved_one_loads() {
        let mut out = String::new();
        render(&mut out, &[]);
        assert!(out.is_empty());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("explore")).unwrap();
        let json = r#"{"explore_version":1,"lab":"s1","variant":"s1","search":"exhaustive","runs":7,"classes":[{"schedule":"P","key":"P","verdict":"right","reasons":[],"steps":["P XADD"],"record":{}}],"extra":1}"#;
        std::fs::write(dir.path().join("explore/explore-s1-s1.json"), json).unwrap();
        std::fs::write(dir.path().join("explore/explore-broken.json"), "{").unwrap();
        std::fs::write(dir.path().join("explore/other.json"), "{}").unwrap();
        let files = load(dir.path());
        assert_eq!(files.len(), 1);
        assert_eq!((files[0].lab.as_str(), files[0].classes.len()), ("s1", 1));
    }
}
