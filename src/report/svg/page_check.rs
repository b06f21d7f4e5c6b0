//! Every built-in lab's timeline, drawn from its record in `results/records/`, checked as a
//! slide: no two texts' boxes overlap, none runs off the page, none is cut mid-word.
//!
//! Boxes are measured with the same width estimate the layout uses ([`text_width`]), so the
//! check is of the layout rule, not of a font.

use super::layout::{text_width, BOLD_WIDEN};
use super::{render, LABEL_PX, WIDTH};
use crate::lang::Lang;

/// One `<text>` element: its box on the page and its characters.
#[derive(Debug, Clone)]
pub struct TextBox {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    pub text: String,
}

impl TextBox {
    fn overlaps(&self, o: &TextBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    tag[start..].split('"').next()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The boxes of every `<text>` in an SVG written by this module: from its baseline 0.8 em up
/// and 0.2 em down, as wide as [`text_width`] says (bold [`BOLD_WIDEN`] wider).
pub fn text_boxes(svg: &str) -> Vec<TextBox> {
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let Some(end_tag) = piece.find('>') else { continue };
        let tag = &piece[..end_tag];
        let body = &piece[end_tag + 1..];
        let text = unescape(body.split("</text>").next().unwrap_or_default());
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok());
        let (Some(x), Some(y)) = (num("x"), num("y")) else { continue };
        let px = num("font-size").unwrap_or(LABEL_PX);
        let bold = attr(tag, "font-weight") == Some("bold");
        let w = text_width(&text, px) * if bold { BOLD_WIDEN } else { 1.0 };
        let x0 = match attr(tag, "text-anchor") {
            Some("end") => x - w,
            Some("middle") => x - w / 2.0,
            _ => x,
        };
        out.push(TextBox { x0, x1: x0 + w, y0: y - 0.8 * px, y1: y + 0.2 * px, text });
    }
    out
}

/// What is wrong with a page's texts, one line each: pairs that overlap, texts off the page,
/// texts ending in a word and `…` (a label is wrapped, never cut). Leader lines may pass behind a label:
/// its white halo keeps it legible.
pub fn problems(svg: &str) -> Vec<String> {
    let boxes = text_boxes(svg);
    let mut out = Vec::new();
    for (i, a) in boxes.iter().enumerate() {
        if a.x0 < 0.0 || a.x1 > WIDTH {
            out.push(format!("off the page ({:.0}..{:.0}): {:?}", a.x0, a.x1, a.text));
        }
        // `word…` is a cut; ` …` standing alone is text (`UPDATE … WHERE`).
        if a.text.trim_end().strip_suffix('…').is_some_and(|kept| !kept.is_empty() && !kept.ends_with(' ')) {
            out.push(format!("cut: {:?}", a.text));
        }
        for b in &boxes[i + 1..] {
            if a.overlaps(b) {
                out.push(format!("overlap: {:?} and {:?}", a.text, b.text));
            }
        }
    }
    out
}

#[test]
fn boxes_are_measured_like_the_layout() {
    let svg = r#"<text x="100" y="50" text-anchor="end">ab &amp; c</text><text x="10" y="20" font-size="20">x</text>"#;
    let b = text_boxes(svg);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].text, "ab & c");
    assert!((b[0].x1 - 100.0).abs() < 1e-9 && (b[0].x0 - (100.0 - text_width("ab & c", 14.0))).abs() < 1e-9);
    assert!((b[1].y0 - 4.0).abs() < 1e-9 && (b[1].y1 - 24.0).abs() < 1e-9);
    let apart = r#"<text x="0" y="20">aaaa</text><text x="0" y="40">aaaa</text>"#;
    assert!(problems(apart).is_empty());
    let close = r#"<text x="0" y="20">aaaa</text><text x="20" y="30">aaaa</text>"#;
    assert_eq!(problems(close).len(), 1, "{:?}", problems(close));
    assert_eq!(problems(r#"<text x="1270" y="20">aaaa</text>"#).len(), 1);
    assert_eq!(problems(r#"<text x="0" y="20">the lock…</text>"#).len(), 1);
    assert!(problems(r#"<text x="0" y="20">UPDATE …</text>"#).is_empty());
}

/// Every variant of every lab in `results/records/`, run 1, in both languages: the pictures
/// `ordlab book` draws for results/ and the lab book.
#[test]
fn every_built_in_lab_timeline_has_whole_labels_that_do_not_overlap() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let records = crate::report::record::load_all(&dir).expect("results/records/ holds the built-in labs");
    let mut failures = Vec::new();
    let mut pages = 0;
    for report in records {
        let report = report.expect("every record reads");
        for v in &report.variants {
            if !v.run_records.iter().any(|r| r.run == 1 && !r.events.is_empty()) {
                continue;
            }
            for lang in [Lang::En, Lang::Vi] {
                pages += 1;
                for p in problems(&render(&report, v, 1, lang)) {
                    failures.push(format!("{}/{} ({lang:?}): {p}", report.lab.id, v.id));
                }
            }
        }
    }
    assert!(pages > 100, "only {pages} timelines drawn");
    assert!(failures.is_empty(), "{} problems on {pages} timelines:\n{}", failures.len(), failures.join("\n"));
}
