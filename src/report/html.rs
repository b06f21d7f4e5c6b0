//! The lab book: `results/index.html` and the parts it loads, the page a teacher opens in class
//! and puts on a projector — a summary table to filter and sort, and per lab its question,
//! set-up, step-through timelines, verdicts, measurements and charts, in English and
//! Vietnamese, printable, each figure presentable full screen.
//!
//! The page stays light: `index.html` holds the words (the summary, every lab's question,
//! set-up and outcome, long lists folded) and an empty frame per figure; each lab's pictures
//! and step lists are a part, `book/<lab>.js`, and each exploration's classes one more,
//! `book/explored-<lab>-<variant>.js`, loaded by the page's script when they come near the
//! screen or are opened (a `<script>` element: it works from `file://` as from `ordlab serve`).
//! `book/<lab>.html` is one lab as a page of its own, everything inline, to hand out. No
//! network and nothing outside these files: the CSS and the script are inlined
//! ([`book.css`](html/book.css), the scripts in [`html/js/`](html/js)), and every text is
//! written in both languages (`lang="en"` / `lang="vi"`; the page shows one).

mod cross;
pub mod explored;
mod figure;
mod fold;
mod lab;
mod page;
mod part;
mod summary;
mod terms;

use super::LabReport;
use crate::lang::Words;
use std::path::Path;

/// The files of a lab book, by their path under the results directory: `index.html` first.
#[derive(Clone, Debug, PartialEq)]
pub struct Book {
    pub files: Vec<(String, String)>,
}

impl Book {
    /// `index.html`.
    pub fn index(&self) -> &str {
        self.get("index.html").unwrap_or_default()
    }

    /// A file by its path (`book/lock.js`).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.files.iter().find(|(n, _)| n == name).map(|(_, body)| body.as_str())
    }

    /// Write every file under `dir` (`book/` made where missing).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join(part::DIR))?;
        for (name, body) in &self.files {
            std::fs::write(dir.join(name), body)?;
        }
        Ok(())
    }
}

/// The lab book over `reports` (in the order given), then the explorations saved beside them.
pub fn book(reports: &[LabReport], explored: &[explored::ExploredFile]) -> Book {
    let mut files = vec![("index.html".to_string(), page::index(reports, explored))];
    // Each lab's pictures are drawn once, for its part and its page of its own; labs on every
    // core.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, reports.len().max(1));
    let per_lab: Vec<[(String, String); 2]> = std::thread::scope(|scope| {
        let chunks: Vec<&[LabReport]> = reports.chunks(reports.len().div_ceil(threads).max(1)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|r| {
                            let slots = lab::part(r);
                            let filled: figure::Filled = slots.iter().cloned().collect();
                            [
                                (part::lab_script(&r.lab.id), part::script(&r.lab.id, &slots)),
                                (part::standalone_path(&r.lab.id), page::standalone(r, &filled)),
                            ]
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a lab book thread panicked")).collect()
    });
    files.extend(per_lab.into_iter().flatten());
    for x in explored {
        let name = explored::part_name(x);
        files.push((part::lab_script(&name), part::script(&name, &explored::part(x))));
    }
    Book { files }
}

/// The page alone (`index.html`) over `reports`.
pub fn render(reports: &[LabReport]) -> String {
    render_with(reports, &[])
}

/// The page alone (`index.html`) over `reports` and the explorations beside them.
pub fn render_with(reports: &[LabReport], explored: &[explored::ExploredFile]) -> String {
    page::index(reports, explored)
}

/// Text escaped for HTML (element content and attribute values).
pub fn esc(s: &str) -> String {
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

/// Words read by a screen reader only (a button's full name beside its short visible one).
fn unseen(w: &Words) -> String {
    format!(r#"<span class="sr">{}</span>"#, both(w))
}

#[cfg(test)]
mod tests;
