//! The document around the lab book's content: its head (inlined CSS), the skip links, the
//! header with the language switch and the print tools, the environment every lab ran in
//! (stated once), the wrapping list of labs, and the inlined script. `index.html` holds every
//! lab; a standalone page holds one, its parts inline.

use super::{both, cross, esc, explored, lab, summary};
use crate::lang::{Lang, Words};
use crate::report::LabReport;
use std::fmt::Write;

const CSS: &str = include_str!("book.css");

/// The page's script: one file per concern, in the order they build on each other.
const SCRIPTS: [&str; 7] = [
    include_str!("js/core.js"),
    include_str!("js/links.js"),
    include_str!("js/summary.js"),
    include_str!("js/stepper.js"),
    include_str!("js/presenter.js"),
    include_str!("js/export.js"),
    include_str!("js/start.js"),
];

/// `index.html`: every lab, each figure's pictures in its part.
pub fn index(reports: &[LabReport], explored: &[explored::ExploredFile]) -> String {
    let mut out = String::with_capacity(1 << 20);
    head(&mut out, "ordlab lab book", "book");
    header(&mut out, reports);
    out.push_str("<nav class=\"toc\" aria-label=\"labs\"><ul>");
    for r in reports {
        let _ = write!(out, r##"<li><a href="#lab-{0}" translate="no">{0}</a></li>"##, esc(&r.lab.id));
    }
    if !explored.is_empty() {
        let _ = write!(out, r##"<li><a href="#explored">{}</a></li>"##, both(&Words::new("explored", "đã duyệt")));
    }
    let tables = crate::report::cross::tables(reports);
    for t in &tables {
        let _ = write!(out, r##"<li><a href="#{}">{}</a></li>"##, esc(t.id), both(&t.title));
    }
    out.push_str("</ul></nav>\n<main id=\"main\">\n");
    summary::render(&mut out, reports);
    cross::render(&mut out, &tables);
    for r in reports {
        lab::render(&mut out, r, None);
    }
    explored::render(&mut out, explored);
    out.push_str("</main>\n");
    tail(&mut out);
    out
}

/// One lab as a page of its own: its figures drawn inline (`slots`: its part's), nothing
/// loaded later, to hand out or open offline.
pub fn standalone(r: &LabReport, slots: &super::figure::Filled) -> String {
    let mut out = String::with_capacity(1 << 20);
    head(&mut out, &format!("ordlab: {}", r.lab.id), "standalone");
    header(&mut out, std::slice::from_ref(r));
    out.push_str("<main id=\"main\">\n");
    lab::render(&mut out, r, Some(slots));
    out.push_str("</main>\n");
    tail(&mut out);
    out
}

fn head(out: &mut String, title: &str, kind: &str) {
    let _ = write!(
        out,
        r#"<!doctype html>
<html lang="en" data-lang="en" data-page="{kind}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{}</title>
<style>
{CSS}</style>
</head>
<body>
"#,
        esc(title)
    );
}

/// The skip links, the title with the language switch and print tools, and the environment.
fn header(out: &mut String, reports: &[LabReport]) {
    let skip = |en: &str, vi: &str| both(&Words::new(en, vi));
    let _ = write!(
        out,
        r##"<div class="skips"><a class="skip" href="#main">{}</a><a class="skip" href="#summary">{}</a></div>
<header class="book"><h1>{}</h1><div class="langs" role="group" aria-label="language / ngôn ngữ"><button type="button" data-set-lang="en" translate="no" aria-pressed="false">EN</button><button type="button" data-set-lang="vi" translate="no" aria-pressed="false">VI</button></div><div class="tools"><button type="button" class="print-all" data-print="all">{}</button><label class="per-page"><input type="checkbox" id="print-per-page" checked="checked"/> {}</label></div>
"##,
        skip("Skip to the labs", "Tới các lab"),
        skip("Skip to the summary", "Tới bảng tóm tắt"),
        both(&Words::new("ordlab lab book", "Sổ thí nghiệm ordlab")),
        both(&Words::new("Print all labs", "In mọi lab")),
        both(&Words::new("one lab per page", "mỗi lab một trang")),
    );
    environment(out, reports);
    out.push_str("</header>\n");
}

/// Where the results come from: the environment of the most labs, once, in both languages,
/// and the labs that ran elsewhere.
fn environment(out: &mut String, reports: &[LabReport]) {
    let Some(common) = summary::common_environment(reports) else {
        let _ =
            writeln!(out, "<p class=\"env\">{}</p>", both(&Words::new("No lab results yet.", "Chưa có kết quả nào.")));
        return;
    };
    let _ = write!(out, "<div class=\"env\">");
    for lang in Lang::ALL {
        let mut text = String::new();
        crate::report::text::environment(
            &mut text,
            common.environment,
            &crate::report::text::TextOptions { lang, ..Default::default() },
        );
        let _ = write!(out, r#"<pre lang="{}">{}</pre>"#, lang.code(), esc(text.trim_end()));
    }
    let others = summary::elsewhere(reports, common.environment);
    if !others.is_empty() {
        let list = others.join(", ");
        let note = Words::new(
            format!(
                "These labs ran in another environment (each lab's own header is at the end of its section): {list}."
            ),
            format!("Các lab này chạy trong môi trường khác (tiêu đề riêng của từng lab ở cuối phần của nó): {list}."),
        );
        let _ = write!(out, "<p class=\"elsewhere\">{}</p>", both(&note));
    }
    out.push_str("</div>\n");
}

fn tail(out: &mut String) {
    out.push_str("<script>\n");
    for s in SCRIPTS {
        out.push_str(s);
    }
    out.push_str("</script>\n</body>\n</html>\n");
}
