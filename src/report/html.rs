//! The lab book: `results/index.html`, one self-contained page over every saved lab that a
//! teacher opens in class — a summary table to filter and sort, and per lab its question,
//! set-up, step-through timelines, verdicts, measurements and charts, in English and
//! Vietnamese, printable one lab per page.
//!
//! No network and nothing outside the file: the CSS and the script are inlined
//! ([`book.css`](html/book.css), [`book.js`](html/book.js)), the pictures are the same SVGs as
//! in `results/` in their step-tagged flavour, and every text is written in both languages
//! (`lang="en"` / `lang="vi"`; the page shows one). A step's caption is the text report's line.

pub mod explored;
mod lab;
mod summary;

use super::LabReport;
use crate::lang::{Lang, Words};
use std::fmt::Write;

const CSS: &str = include_str!("html/book.css");
const SCRIPT: &str = include_str!("html/book.js");

/// The whole page over `reports` (in the order given).
pub fn render(reports: &[LabReport]) -> String {
    render_with(reports, &[])
}

/// The whole page over `reports`, then the explorations saved beside them.
pub fn render_with(reports: &[LabReport], explored: &[explored::ExploredFile]) -> String {
    let mut out = String::with_capacity(1 << 20);
    let _ = write!(
        out,
        r#"<!doctype html>
<html lang="en" data-lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ordlab lab book</title>
<style>
{CSS}</style>
</head>
<body>
<header class="book"><h1>{}</h1><div class="langs" role="group"><button type="button" data-set-lang="en" translate="no">EN</button><button type="button" data-set-lang="vi" translate="no">VI</button></div>
"#,
        both(&Words::new("ordlab lab book", "Sổ thí nghiệm ordlab"))
    );
    environment(&mut out, reports);
    out.push_str("</header>\n<nav class=\"toc\">");
    for r in reports {
        let _ = write!(out, r##"<a href="#lab-{0}" translate="no">{0}</a>"##, esc(&r.lab.id));
    }
    if !explored.is_empty() {
        let _ = write!(out, r##"<a href="#explored">{}</a>"##, both(&Words::new("explored", "đã duyệt")));
    }
    out.push_str("</nav>\n");
    summary::render(&mut out, reports);
    for r in reports {
        lab::render(&mut out, r);
    }
    explored::render(&mut out, explored);
    let _ = write!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// Where the results come from: the environment lines of the first report, in both languages,
/// and a note when the labs were not all run in the same one.
fn environment(out: &mut String, reports: &[LabReport]) {
    let Some(first) = reports.first() else {
        let _ =
            writeln!(out, "<p class=\"env\">{}</p>", both(&Words::new("No lab results yet.", "Chưa có kết quả nào.")));
        return;
    };
    let _ = write!(out, "<div class=\"env\">");
    for lang in Lang::ALL {
        let mut text = String::new();
        super::text::environment(
            &mut text,
            &first.environment,
            &super::text::TextOptions { lang, ..Default::default() },
        );
        let _ = write!(out, r#"<pre lang="{}">{}</pre>"#, lang.code(), esc(text.trim_end()));
    }
    let differs = reports.iter().any(|r| {
        let (a, b) = (&r.environment, &first.environment);
        (&a.git_commit, &a.redis_version, &a.postgres_version, &a.backend, a.time_scale)
            != (&b.git_commit, &b.redis_version, &b.postgres_version, &b.backend, b.time_scale)
    });
    if differs {
        let note = Words::new(
            "Not every lab ran in this environment: each lab's own header is at the end of its section.",
            "Không phải lab nào cũng chạy trong môi trường này: tiêu đề riêng của từng lab nằm ở cuối phần của nó.",
        );
        let _ = write!(out, "<p>{}</p>", both(&note));
    }
    out.push_str("</div>\n");
}

/// Text escaped for HTML (element content and attribute values).
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Words in both languages, the page showing one.
fn both(w: &Words) -> String {
    format!(r#"<span lang="en">{}</span><span lang="vi">{}</span>"#, esc(&w.en), esc(&w.vi))
}

#[cfg(test)]
mod tests;
