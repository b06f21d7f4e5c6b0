//! A table over many labs' variants that a lab family draws from their records (the job-queue
//! libraries' matrix: a row per library, a column per fault). The family fills rows and cells
//! with words and links to variants; the report writes it as Markdown beside `SUMMARY.md` and as
//! a section of the lab book, knowing nothing of the family.

use super::{Procedure, RunRecord};
use crate::lang::Words;

/// One variant as a family sees it when it draws a table over many labs.
pub struct VariantRef<'a> {
    pub lab: &'a str,
    pub variant: &'a str,
    pub procedure: &'a Procedure,
    pub runs: &'a [RunRecord],
}

/// A table over many labs: rows of cells, each cell a list of entries that name a variant.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossTable {
    /// The book section's id and the Markdown file's stem (`matrix` → `MATRIX.md`).
    pub id: &'static str,
    pub title: Words,
    /// What a row, a column and a cell are, above the table.
    pub intro: Words,
    /// The first column's heading.
    pub corner: Words,
    pub columns: Vec<Words>,
    pub rows: Vec<CrossRow>,
    /// Under the table: what it lacks yet.
    pub footer: Words,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CrossRow {
    pub head: String,
    /// One per column; an empty one is drawn as `empty`.
    pub cells: Vec<Vec<CellEntry>>,
}

/// A variant in a cell: a link to it and what it measured there.
#[derive(Clone, Debug, PartialEq)]
pub struct CellEntry {
    pub lab: String,
    pub variant: String,
    pub text: Words,
}

impl CrossTable {
    /// The words of an empty cell.
    pub fn empty() -> Words {
        Words::new("not run", "chưa chạy")
    }
}
