//! The two languages of every report: English, and Vietnamese in the wording of the seed's own
//! lab output. This is the one place that chooses between them: [`pick`] for fixed words,
//! [`tr!`](crate::tr) for words with values in them.

mod line;
pub use line::{Line, Piece};

/// Output language of reports (text, SVG, lab book).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Vi,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Vi];

    /// The language's code: `en`, `vi`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Vi => "vi",
        }
    }
}

/// Text in both languages. A scenario file may give a plain string (the same words in both,
/// until someone translates them) or `{ en = "…", vi = "…" }`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Words {
    pub en: String,
    pub vi: String,
}

impl Words {
    pub fn new(en: impl Into<String>, vi: impl Into<String>) -> Words {
        Words { en: en.into(), vi: vi.into() }
    }

    /// The same words in both languages.
    pub fn same(text: &str) -> Words {
        Words { en: text.to_string(), vi: text.to_string() }
    }

    pub fn get(&self, lang: Lang) -> &str {
        pick(lang, &self.en, &self.vi)
    }
}

impl From<&str> for Words {
    fn from(text: &str) -> Words {
        Words::same(text)
    }
}

impl<'de> serde::Deserialize<'de> for Words {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Both {
            en: String,
            vi: String,
        }
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(String),
            Both(Both),
        }
        match Raw::deserialize(d) {
            Ok(Raw::One(s)) => Ok(Words::same(&s)),
            Ok(Raw::Both(b)) => Ok(Words { en: b.en, vi: b.vi }),
            Err(_) => Err(serde::de::Error::custom("use a string, or { en = \"…\", vi = \"…\" }")),
        }
    }
}

/// Fixed words in the report's language.
pub fn pick<'a>(lang: Lang, en: &'a str, vi: &'a str) -> &'a str {
    match lang {
        Lang::En => en,
        Lang::Vi => vi,
    }
}

/// Words with values, in the report's language: `tr!(lang, "took {key}", "lấy {key}")`.
/// Both strings are format strings over the same arguments.
#[macro_export]
macro_rules! tr {
    ($lang:expr, $en:literal, $vi:literal $(, $arg:expr)* $(,)?) => {
        match $lang {
            $crate::lang::Lang::En => format!($en $(, $arg)*),
            $crate::lang::Lang::Vi => format!($vi $(, $arg)*),
        }
    };
}

/// Words with values, in both languages at once: `words!("{n} runs", "{n} lần")` is a
/// [`Words`]. Both strings are format strings over the same arguments.
#[macro_export]
macro_rules! words {
    ($en:literal, $vi:literal $(, $arg:expr)* $(,)?) => {
        $crate::lang::Words { en: format!($en $(, $arg)*), vi: format!($vi $(, $arg)*) }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_come_as_one_string_or_both_languages() {
        let one: Words = serde_json::from_str("\"Lock\"").unwrap();
        assert_eq!(one.get(Lang::Vi), "Lock");
        let both: Words = serde_json::from_str(r#"{"en": "Lock", "vi": "Khoá"}"#).unwrap();
        assert_eq!((both.get(Lang::En), both.get(Lang::Vi)), ("Lock", "Khoá"));
        assert!(serde_json::from_str::<Words>(r#"{"en": "x"}"#).is_err());
    }

    #[test]
    fn one_chooser_for_fixed_and_formatted_words() {
        assert_eq!(pick(Lang::Vi, "run", "lần"), "lần");
        let n = 3;
        assert_eq!(crate::tr!(Lang::En, "{n} runs", "{n} lần"), "3 runs");
        assert_eq!(crate::tr!(Lang::Vi, "{} runs", "{} lần", n + 1), "4 lần");
    }
}
