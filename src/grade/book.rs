//! A class's gradebook: per student, per check, right / wrong / unknown, as a CSV for a
//! spreadsheet and an HTML page whose cells link to each student's page (every check's hint,
//! the timeline of its first wrong run, its reasons). A submission that did not start is one
//! row with its one-line reason.

use super::{render, CheckList, Graded, Mark};
use crate::lang::{pick, Lang};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where a gradebook was written.
#[derive(Clone, Debug)]
pub struct Written {
    pub csv: PathBuf,
    pub page: PathBuf,
}

/// The CSV: a header (`student`, `command`, each check's id, `right`, `checks`, `note`), then
/// one row per submission; a cell is `right 3/3`, `wrong 1/3`, `unknown 1/3`, `wrong in 12 of
/// 68 orders`, or `not started`.
pub fn csv(book: &[Graded], list: &CheckList) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["student".into(), "command".into()];
    header.extend(list.checks.iter().map(|c| c.id.clone()));
    header.extend(["right".into(), "checks".into(), "note".into()]);
    w.write_record(&header).expect("writing to memory");
    for g in book {
        let mut row = vec![g.submission.name.clone(), g.submission.command.join(" ")];
        let (right, total) = g.score();
        match &g.result {
            Ok(checks) => {
                row.extend(checks.iter().map(|c| c.cell()));
                row.extend([right.to_string(), total.to_string(), String::new()]);
            }
            Err(why) => {
                row.extend(list.checks.iter().map(|_| "not started".to_string()));
                row.extend(["0".into(), list.checks.len().to_string(), format!("did not start: {why}")]);
            }
        }
        w.write_record(&row).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("the cells are text")
}

/// Write `gradebook.csv`, `index.html` and a page per student under `dir`.
pub fn write(dir: &Path, book: &[Graded], list: &CheckList, lang: Lang, header: &str) -> std::io::Result<Written> {
    std::fs::create_dir_all(dir.join("students"))?;
    let csv_path = dir.join("gradebook.csv");
    std::fs::write(&csv_path, csv(book, list))?;
    for g in book {
        std::fs::write(dir.join(student_page(&g.submission.name)), student(g, list, lang))?;
    }
    let page = dir.join("index.html");
    std::fs::write(&page, index(book, list, lang, header))?;
    Ok(Written { csv: csv_path, page })
}

/// `students/<name>.html`, the name made safe for a file.
fn student_page(name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    format!("students/{safe}.html")
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #bbb;padding:.3em .6em;text-align:left}\
.right{background:#dff0d8}.wrong{background:#f2dede}.unknown{background:#eee}.failed{background:#fcf8e3}\
pre{background:#f7f7f7;padding:1em;overflow-x:auto}a{color:inherit}";

/// The class's page: a row per student, a column per check; each cell links to the check on
/// the student's page.
fn index(book: &[Graded], list: &CheckList, lang: Lang, header: &str) -> String {
    let mut out = String::new();
    let title = list.title.get(lang);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>",
        lang.code(),
        esc(title)
    );
    let _ = write!(out, "<h1>{}</h1><p>{}</p>", esc(title), esc(header));
    let _ = write!(out, "<table><tr><th>{}</th>", pick(lang, "student", "học viên"));
    for c in &list.checks {
        let _ = write!(out, "<th title=\"{}\">{}</th>", esc(c.title.get(lang)), esc(&c.id));
    }
    let _ = write!(out, "<th>{}</th></tr>", pick(lang, "right", "đúng"));
    for g in book {
        let page = student_page(&g.submission.name);
        let _ = write!(out, "<tr><td><a href=\"{}\">{}</a></td>", esc(&page), esc(&g.submission.name));
        match &g.result {
            Ok(checks) => {
                for c in checks {
                    let _ = write!(
                        out,
                        "<td class=\"{}\"><a href=\"{}#{}\">{}</a></td>",
                        c.mark.word(),
                        esc(&page),
                        esc(&c.id),
                        esc(&c.cell())
                    );
                }
                let (right, total) = g.score();
                let _ = write!(out, "<td>{right}/{total}</td></tr>");
            }
            Err(why) => {
                let _ = write!(
                    out,
                    "<td class=\"failed\" colspan=\"{}\">{} {}</td><td>0/{}</td></tr>",
                    list.checks.len(),
                    pick(lang, "did not start:", "không khởi động được:"),
                    esc(why),
                    list.checks.len()
                );
            }
        }
    }
    out.push_str("</table><h2>");
    out.push_str(pick(lang, "What each check tests", "Mỗi bài kiểm kiểm tra điều gì"));
    out.push_str("</h2><dl>");
    for c in &list.checks {
        let _ =
            write!(out, "<dt><b>{}</b>: {}</dt><dd>{}</dd>", esc(&c.id), esc(c.title.get(lang)), esc(c.hint.get(lang)));
    }
    out.push_str("</dl></body></html>\n");
    out
}

/// A student's page: each check's grade, and for one not right its hint, timeline and reasons.
fn student(g: &Graded, list: &CheckList, lang: Lang) -> String {
    let mut out = String::new();
    let name = &g.submission.name;
    let _ = write!(
        out,
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>",
        lang.code(),
        esc(name)
    );
    let _ = write!(
        out,
        "<p><a href=\"../index.html\">{}</a></p><h1>{}</h1><p><code>{}</code></p>",
        pick(lang, "← the class", "← cả lớp"),
        esc(name),
        esc(&g.submission.command.join(" "))
    );
    match &g.result {
        Err(why) => {
            let _ = write!(
                out,
                "<p class=\"failed\">{} {}</p>",
                pick(lang, "did not start:", "không khởi động được:"),
                esc(why)
            );
        }
        Ok(checks) => {
            for c in checks {
                let mut text = String::new();
                render::check(&mut text, c, list, &g.submission, lang);
                let class = if c.mark == Mark::Right { "right" } else { c.mark.word() };
                let _ = write!(
                    out,
                    "<h2 id=\"{}\" class=\"{class}\">{}</h2><pre>{}</pre>",
                    esc(&c.id),
                    esc(&c.id),
                    esc(&text)
                );
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

use crate::report::html::esc;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::{CheckGrade, Submission};

    fn book() -> (Vec<Graded>, CheckList) {
        let list = crate::grade::builtin("ordering").unwrap();
        let checks = list
            .checks
            .iter()
            .map(|c| CheckGrade {
                id: c.id.clone(),
                mark: if c.id == "race" { Mark::Wrong } else { Mark::Right },
                runs: None,
                planned: 3,
                stopped: None,
                explored: None,
            })
            .collect();
        let sub = |name: &str| Submission { name: name.into(), command: vec!["python3".into(), format!("{name}.py")] };
        let book = vec![
            Graded { submission: sub("a, \"quoted\""), result: Ok(checks) },
            Graded { submission: sub("<broken>"), result: Err("C1 exited: exit status: 1: SyntaxError".into()) },
        ];
        (book, list)
    }

    #[test]
    fn the_csv_has_a_row_per_submission_and_a_column_per_check() {
        let (book, list) = book();
        let text = csv(&book, &list);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header.len(), 2 + list.checks.len() + 3);
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][0], "a, \"quoted\"");
        assert_eq!(&rows[0][2], "wrong 0/0");
        assert_eq!(&rows[1][2], "not started");
        assert!(rows[1][rows[1].len() - 1].starts_with("did not start: C1 exited"));
    }

    #[test]
    fn the_page_links_each_cell_to_the_student_s_check_and_escapes_names() {
        let (book, list) = book();
        let page = index(&book, &list, Lang::En, "header");
        assert!(page.contains("href=\"students/a___quoted_.html#race\""), "{page}");
        assert!(page.contains("&lt;broken&gt;") && !page.contains("<broken>"), "{page}");
        assert!(page.contains("colspan=\"5\">did not start: C1 exited"), "{page}");
        assert!(page.contains("<tr><th>student</th><th title="), "{page}");
    }
}
