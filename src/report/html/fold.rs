//! Long lines folded: a line that lists many things (`why (run 1): order 1 ended created …;
//! order 3 …` over 178 orders) shows its first few and "and 172 more", which opens the rest.
//! Every other line is kept as it is, and every line wraps on a narrow screen.

use super::esc;
use crate::lang::Lang;

/// A line longer than this many characters is folded if it is a list.
const LONG: usize = 240;
/// Items shown before the fold.
const SHOWN: usize = 4;

/// `text` (lines) as HTML for a `<pre>`: long lists folded.
pub fn lines(text: &str, lang: Lang) -> String {
    text.lines().map(|l| line(l, lang)).collect::<Vec<_>>().join("\n")
}

/// One line: as it is, or its first items and a `<details>` holding the others.
fn line(l: &str, lang: Lang) -> String {
    if l.chars().count() <= LONG {
        return esc(l);
    }
    for sep in ["; ", ", "] {
        let items: Vec<&str> = l.split(sep).collect();
        if items.len() > SHOWN + 2 {
            let more = items.len() - SHOWN;
            let label = crate::tr!(lang, "and {more} more", "và {more} mục nữa");
            return format!(
                r#"{}{sep}<details class="more"><summary>{}</summary>{}</details>"#,
                esc(&items[..SHOWN].join(sep)),
                esc(&label),
                esc(&items[SHOWN..].join(sep))
            );
        }
    }
    esc(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_shows_its_first_items_and_folds_the_rest() {
        let why: Vec<String> = (1..=178).map(|o| format!("order {o} ended created (v=1), expected paid")).collect();
        let text = format!("→ wrong: 1/1 runs\n  why (run 1): {}", why.join("; "));
        let html = lines(&text, Lang::En);
        assert!(html.starts_with("→ wrong: 1/1 runs\n"));
        assert!(html.contains("order 4 ended created (v=1), expected paid; <details class=\"more\"><summary>and 174 more</summary>order 5 ended"));
        assert!(html.ends_with("order 178 ended created (v=1), expected paid</details>"));
        assert!(lines(&text, Lang::Vi).contains("<summary>và 174 mục nữa</summary>"));
        let short = "  why (run 1): order 42 ended created (v=1), expected paid";
        assert_eq!(lines(short, Lang::En), short);
    }
}
