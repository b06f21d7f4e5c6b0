//! The families' tables over many labs (the library matrix) as sections of the lab book, after
//! the summary: each entry links to its variant in the book, an empty cell says "not run".

use super::{both, esc};
use crate::labs::cross_table::CrossTable;
use std::fmt::Write;

pub fn render(out: &mut String, tables: &[CrossTable]) {
    for t in tables {
        let _ = write!(
            out,
            r#"<section class="cross" id="{}"><h2>{}</h2><p>{}</p>"#,
            esc(t.id),
            both(&t.title),
            both(&t.intro)
        );
        let _ = write!(
            out,
            r#"<div class="table-wrap"><table class="cross"><thead><tr><th scope="col">{}</th>"#,
            both(&t.corner)
        );
        for c in &t.columns {
            let _ = write!(out, r#"<th scope="col">{}</th>"#, both(c));
        }
        out.push_str("</tr></thead><tbody>");
        for row in &t.rows {
            let _ = write!(out, r#"<tr><th scope="row" translate="no">{}</th>"#, esc(&row.head));
            for entries in &row.cells {
                out.push_str("<td>");
                if entries.is_empty() {
                    let _ = write!(out, r#"<span class="none">{}</span>"#, both(&CrossTable::empty()));
                }
                for (i, e) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str("<br>");
                    }
                    let _ = write!(
                        out,
                        r##"<a href="#v-{}-{}" translate="no">{}</a>: {}"##,
                        esc(&e.lab),
                        esc(&e.variant),
                        esc(&e.variant),
                        both(&e.text)
                    );
                }
                out.push_str("</td>");
            }
            out.push_str("</tr>");
        }
        let _ = writeln!(out, "</tbody></table></div><p>{}</p></section>", both(&t.footer));
    }
}
