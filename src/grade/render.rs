//! One submission's grade in words: each check right, wrong or unknown, and for a check that is
//! not right its hint, the timeline of its first wrong (or unknown) run and the checker's
//! reasons; for an explored check, its classes and the shortest wrong schedule.

use super::{CheckGrade, CheckList, Graded, Mark, Submission};
use crate::lang::{pick, Lang};
use crate::report::words;
use crate::timeline::vocabulary::{Redactor, Wording};
use std::fmt::Write;

/// The report of one graded submission.
pub fn render(g: &Graded, list: &CheckList, lang: Lang) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} (`{}`)", g.submission.name, g.submission.command.join(" "));
    let checks = match &g.result {
        Ok(checks) => checks,
        Err(why) => {
            let _ = writeln!(out, "{} {why}", pick(lang, "did not start:", "không khởi động được:"));
            return out;
        }
    };
    for c in checks {
        check(&mut out, c, list, &g.submission, lang);
    }
    let (right, total) = g.score();
    let _ = writeln!(out, "{}", crate::tr!(lang, "{right} of {total} checks right", "{right}/{total} bài kiểm đúng"));
    out
}

/// One check: its line, and what explains a grade that is not right.
pub fn check(out: &mut String, c: &CheckGrade, list: &CheckList, sub: &Submission, lang: Lang) {
    let spec = list.check(&c.id);
    let title = spec.map(|s| s.title.get(lang).to_string()).unwrap_or_default();
    let mark = match c.mark {
        Mark::Right => "✓",
        Mark::Wrong => "✕",
        Mark::Unknown => "?",
    };
    let _ = writeln!(out, "{mark} {}: {title}: {}", c.id, cell(c, lang));
    if c.mark == Mark::Right {
        return;
    }
    if let Some(s) = spec {
        let _ = writeln!(out, "  {}: {}", pick(lang, "hint", "gợi ý"), s.hint.get(lang));
    }
    if let Some(x) = &c.explored {
        if let Some((schedule, steps)) = &x.shortest_wrong {
            let _ = writeln!(
                out,
                "  {} {schedule} ({} {}):",
                pick(lang, "shortest wrong schedule:", "lịch SAI ngắn nhất:"),
                steps.len(),
                pick(lang, "steps", "bước")
            );
            for (i, s) in steps.iter().enumerate() {
                let _ = writeln!(out, "    {:>3}. {s}", i + 1);
            }
            let _ = writeln!(
                out,
                "  {} ordlab grade --check {} --schedule {schedule} -- {}",
                pick(lang, "replay it:", "chạy lại:"),
                c.id,
                sub.command.join(" ")
            );
        }
    } else if let (Some(v), Some(r)) = (&c.runs, c.first_run_not_right()) {
        let w = Wording { lang, many_orders: false, redact: Redactor::NONE };
        let _ = writeln!(out, "  {} {}:", pick(lang, "run", "lần"), r.run);
        for (e, line) in words::timeline_lines(r, &v.procedure, &w, false) {
            let _ = writeln!(out, "    {}  {line}", w.redact.stamp(e.t_us / 1000));
        }
    }
    for reason in c.reasons() {
        let _ = writeln!(out, "    → {reason}");
    }
}

/// The grade's cell in `lang`.
fn cell(c: &CheckGrade, lang: Lang) -> String {
    let en = c.cell();
    match lang {
        Lang::En => en,
        Lang::Vi => en
            .replace("right in", "đúng trong")
            .replace("wrong in", "SAI trong")
            .replace("unknown in", "không rõ trong")
            .replace(" of ", " trên ")
            .replace("orders", "thứ tự")
            .replace("right", "đúng")
            .replace("wrong", "SAI")
            .replace("unknown", "không rõ"),
    }
}
