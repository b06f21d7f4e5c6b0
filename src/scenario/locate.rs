//! Where in the file a set-up problem is. A variant's keys are laid over the file's before
//! they are parsed, so an error names a key path in the merged table; this finds that key in
//! the variant's own `setup` if it set it, else in the file's `[setup]`, and gives its line
//! and column in the text.

use super::ScenarioError;
use toml_edit::{ImDocument, Item};

/// One variant's set-up, for locating errors in it.
pub struct SetupAt<'a> {
    pub text: &'a str,
    pub origin: &'a str,
    /// Index of the `[[variant]]` table (None: the file has no variants, or `list` names a
    /// table of its own such as `[explore]`).
    pub variant: Option<usize>,
    /// The name of the array of tables `variant` indexes: `variant` (a grade check list's is
    /// `check`).
    pub list: &'a str,
    /// The variant's own set-up keys.
    pub variant_setup: &'a toml::Table,
}

impl SetupAt<'_> {
    /// The error at `path` (plus the key an "unknown field" message names), with its line and
    /// column when the key is found.
    pub fn error(&self, path: &[String], message: &str) -> ScenarioError {
        let mut full: Vec<String> = path.to_vec();
        let unknown = named_key(message);
        let at_value = unknown.is_none();
        full.extend(unknown);
        match self.span(&full, at_value) {
            Some(offset) => {
                let (line, column) = line_col(self.text, offset);
                ScenarioError::Syntax { path: self.origin.to_string(), line, column, message: message.to_string() }
            }
            None => ScenarioError::Invalid { path: self.origin.to_string(), message: message.to_string() },
        }
    }

    /// Byte offset of the deepest part of `path` found (its value when `at_value`, else its
    /// key): in the variant's setup when it set the first key, else in the file's `[setup]`.
    fn span(&self, path: &[String], at_value: bool) -> Option<usize> {
        let doc: ImDocument<&str> = ImDocument::parse(self.text).ok()?;
        let in_variant = path.first().is_none_or(|k| self.variant_setup.contains_key(k));
        let own = || match self.variant {
            Some(i) => doc.get(self.list)?.get(i)?.get("setup"),
            // A table of its own (`[explore]`), not one of an array.
            None => doc.get(self.list)?.get("setup"),
        };
        let table = if in_variant { own() } else { None };
        let table = table.or_else(|| doc.get("setup"))?;
        deepest(table, path, at_value)
    }
}

/// The key an "unknown field `x`" or "missing field `x`" message names.
fn named_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("setup: ")?;
    if !rest.starts_with("unknown field `") {
        return None;
    }
    let start = rest.find('`')? + 1;
    let end = start + rest[start..].find('`')?;
    Some(rest[start..end].to_string())
}

/// Offset of the deepest key (or element) along `path` that exists below `item`; for the
/// last part, its value's offset when `at_value`.
fn deepest(item: &Item, path: &[String], at_value: bool) -> Option<usize> {
    let mut here = item;
    let mut best = here.span().map(|s| s.start);
    for (i, part) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        let next = match part.parse::<usize>() {
            Ok(i) => here.get(i),
            Err(_) => {
                if let Some((key, _)) = here.as_table_like().and_then(|t| t.get_key_value(part)) {
                    best = key.span().map(|s| s.start).or(best);
                }
                here.get(part.as_str())
            }
        };
        let Some(next) = next else { break };
        here = next;
        if part.parse::<usize>().is_ok() || (last && at_value) {
            best = here.span().map(|s| s.start).or(best);
        }
    }
    best
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_col_counts_characters() {
        assert_eq!(super::line_col("ab\ncđe", 6), (2, 3));
        assert_eq!(super::line_col("x", 0), (1, 1));
    }

    #[test]
    fn the_unknown_key_is_read_from_the_message() {
        assert_eq!(super::named_key("setup: unknown field `consumer`, expected one of `a`"), Some("consumer".into()));
        assert_eq!(super::named_key("setup: invalid type"), None);
    }
}
