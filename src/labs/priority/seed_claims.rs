//! The words both priority kinds use to put a seed's claim beside what the runs measured:
//! `seed says …; measured …`, and a spread over the runs as measured pieces.

use crate::labs::{Line, Piece};
use crate::lang::Lang;

/// A figure in whole units, as the lines print it.
pub(crate) fn ms(x: f64) -> i64 {
    x.round() as i64
}

/// `seed says: <claim>; measured: ` — the start of every line.
pub(crate) fn says(lang: Lang, claim: &str) -> Line {
    Line::text(crate::tr!(lang, "seed says: {claim}; measured: ", "bài viết nói: {claim}; đo được: "))
}

/// `a–b` over the runs, least to most (one value for one run), as measured pieces: always
/// both ends, so a snapshot's shape does not depend on two runs rounding alike.
pub(crate) fn spread(xs: &[f64], piece: fn(i64) -> Piece) -> Line {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match xs.len() {
        0 => Line::text("-"),
        1 => Line(vec![piece(ms(lo))]),
        _ => Line(vec![piece(ms(lo)), Piece::Text("–".into()), piece(ms(hi))]),
    }
}
