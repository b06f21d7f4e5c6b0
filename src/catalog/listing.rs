//! `ordlab list` as a table that fits a terminal: id, title and source in aligned columns.
//! A title or source too long for its column wraps onto the next lines under itself, at
//! spaces only, so no word is ever cut.

use crate::scenario::Scenario;

/// Width `ordlab list` fits its table in.
pub const LIST_WIDTH: usize = 100;
/// Spaces between two columns.
const GAP: usize = 2;
/// The source column takes at most this share (in percent) of what the id column leaves.
const SOURCE_SHARE: usize = 36;

/// The labs as `ordlab list` prints them: one row per lab, lines of at most `width`
/// characters (a single word longer than its column overflows it rather than being cut).
pub fn list_table(labs: &[Scenario], width: usize) -> String {
    let rows: Vec<[&str; 3]> = labs.iter().map(|s| [s.id.as_str(), s.title.en.as_str(), s.source.as_str()]).collect();
    table(&rows, width)
}

/// Rows of (id, title, source) in columns within `width`.
fn table(rows: &[[&str; 3]], width: usize) -> String {
    let len = |s: &str| s.chars().count();
    let id_w = rows.iter().map(|r| len(r[0])).max().unwrap_or(0);
    let rest = width.saturating_sub(id_w + 2 * GAP);
    let source_w = rows.iter().map(|r| len(r[2])).max().unwrap_or(0).min(rest * SOURCE_SHARE / 100);
    let title_w = rest - source_w;
    let mut out = String::new();
    for [id, title, source] in rows {
        let (titles, sources) = (wrap(title, title_w), wrap(source, source_w));
        for i in 0..titles.len().max(sources.len()) {
            let cell = |lines: &[String]| lines.get(i).cloned().unwrap_or_default();
            let first = if i == 0 { *id } else { "" };
            let line = format!("{first:<id_w$}{:GAP$}{:<title_w$}{:GAP$}{}", "", cell(&titles), "", cell(&sources));
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_titles_wrap_under_their_column_within_the_width() {
        let rows = [
            ["s1", "S1: a single consumer", "seed 001, 08b-s1"],
            [
                "list-crash",
                "A worker dies mid-job: lost with BRPOP, stuck with the seed's processing list, recovered (and sometimes done twice) with a lease reaper",
                "seed 003 (BRPOPLPUSH + processing list, LREM by token)",
            ],
        ];
        let out = table(&rows, 60);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 60), "{out}");
        assert_eq!(lines[0], "s1          S1: a single consumer           seed 001, 08b-s1");
        assert_eq!(lines[1], "list-crash  A worker dies mid-job: lost     seed 003", "{out}");
        assert_eq!(lines[2], "            with BRPOP, stuck with the      (BRPOPLPUSH +", "{out}");
        // Every line after a row's first starts blank under the id, the title aligned.
        let title_col = lines[0].find("S1:").unwrap();
        for l in &lines[2..] {
            assert!(l[..title_col].trim().is_empty(), "{l:?}");
        }
        // Every word of the title and source is whole on some line.
        let words: Vec<&str> = out.split_whitespace().collect();
        for w in rows[1][1].split_whitespace().chain(rows[1][2].split_whitespace()) {
            assert!(words.contains(&w), "{w:?} cut in\n{out}");
        }
    }

    #[test]
    fn every_built_in_lab_fits_a_hundred_characters() {
        let out = list_table(&crate::catalog::all().unwrap(), LIST_WIDTH);
        assert!(out.lines().all(|l| l.chars().count() <= LIST_WIDTH), "{out}");
        assert!(out.lines().any(|l| l.starts_with("idem-antipatterns  ")), "{out}");
    }

    #[test]
    fn a_word_longer_than_its_column_is_kept_whole() {
        assert_eq!(wrap("a verylongword b", 5), ["a", "verylongword", "b"]);
        assert_eq!(wrap("", 5), [""]);
    }
}
