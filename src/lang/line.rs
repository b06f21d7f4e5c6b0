//! A line of report text whose values that vary from run to run are marked as such (an entry
//! ID, a time, a count, a race's winner), so a report can redact them in a snapshot and print
//! them elsewhere. Words, not a lab's: any module that writes a reason or a note builds one.

/// Report text a lab writes, with the values that vary from run to run marked as such, so a
/// report can redact them (a snapshot shows `[id]`, `[ms]`, `[n]`) and print the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line(pub Vec<Piece>);

/// One piece of a [`Line`].
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    /// Words and anything the same in every run.
    Text(String),
    /// A stream entry ID.
    EntryId(String),
    /// Milliseconds on the run's clock.
    Ms(i64),
    /// Microseconds, shown as milliseconds with one decimal.
    MsFromUs(i64),
    /// A measured count that differs between runs.
    Count(i64),
    /// Words a measurement chooses (a classification such as "limit: handlers"), which can
    /// differ between runs; a snapshot shows `[measured]`.
    Measured(String),
    /// Words drawn from the seed (who waited first, so who received what): the same in every
    /// run of the variant with the same `--seed`, even where the scheduler decides the
    /// interleaving, so a snapshot keeps them.
    Seeded(String),
    /// Words the scheduler decides (who won a race): `[x]` in a snapshot.
    Raced(String),
}

impl Line {
    pub fn text(s: impl Into<String>) -> Line {
        Line(vec![Piece::Text(s.into())])
    }

    /// Append a piece (builder style).
    pub fn and(mut self, piece: Piece) -> Line {
        self.0.push(piece);
        self
    }

    /// Append words.
    pub fn and_text(self, s: impl Into<String>) -> Line {
        self.and(Piece::Text(s.into()))
    }

    /// Append another line's pieces.
    pub fn and_line(mut self, other: Line) -> Line {
        self.0.extend(other.0);
        self
    }

    /// The same line with every number in its text marked as varying (a snapshot then shows
    /// `[n]`): for per-run details where the scheduler decides the interleaving.
    pub fn redacting_numbers(self) -> Line {
        let mut out = Vec::new();
        for piece in self.0 {
            let Piece::Text(text) = piece else {
                out.push(piece);
                continue;
            };
            let mut rest = text.as_str();
            while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
                let end = rest[start..].find(|c: char| !c.is_ascii_digit()).map_or(rest.len(), |e| start + e);
                out.push(Piece::Text(rest[..start].to_string()));
                out.push(Piece::Count(rest[start..end].parse().unwrap_or(0)));
                rest = &rest[end..];
            }
            out.push(Piece::Text(rest.to_string()));
        }
        Line(out)
    }

    /// Join lines with `sep` between them.
    pub fn join(lines: Vec<Line>, sep: &str) -> Line {
        let mut out = Line::default();
        for (i, l) in lines.into_iter().enumerate() {
            if i > 0 {
                out.0.push(Piece::Text(sep.to_string()));
            }
            out.0.extend(l.0);
        }
        out
    }
}
