//! The two languages of every report: English, and Vietnamese in the wording of the seed's own
//! lab output. This is the one place that chooses between them: [`pick`] for fixed words,
//! [`tr!`](crate::tr) for words with values in them.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chooser_for_fixed_and_formatted_words() {
        assert_eq!(pick(Lang::Vi, "run", "lần"), "lần");
        let n = 3;
        assert_eq!(crate::tr!(Lang::En, "{n} runs", "{n} lần"), "3 runs");
        assert_eq!(crate::tr!(Lang::Vi, "{} runs", "{} lần", n + 1), "4 lần");
    }
}
