//! Where things go on the page: text widths (estimated, erring wide), word wrap, round axis
//! ticks, and label rows that never overlap within a lane, each label tied to its mark by a
//! leader line that runs through no other label (bent aside under row 0 where it must). A long
//! label is wrapped between words onto rows of its own, never cut; `page_check` holds every
//! built-in lab's timeline to that, and counts the few leaders dense lanes still let through.

use super::model::Mark;
use super::{LABEL_PX, MARGIN, WIDTH};

/// Rough advance width of text in a sans-serif font, erring wide so labels do not collide.
pub fn text_width(s: &str, px: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            ' ' => 0.32,
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | '(' | ')' | '[' | ']' => 0.3,
            'f' | 't' | 'r' | 'I' => 0.42,
            'm' | 'w' | 'M' | 'W' => 0.92,
            '0'..='9' => 0.64,
            c if c.is_uppercase() => 0.72,
            '→' | '—' | '✕' | '✓' | '×' | '…' => 0.84,
            _ => 0.6,
        })
        .sum();
    em * px
}

/// Greedy word wrap to a pixel width.
pub fn wrap(text: &str, max_px: f64, px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if !line.is_empty() && text_width(&candidate, px) > max_px {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A tick step of 1, 2, 2.5 or 5 × 10^k giving at most ten intervals over `span`.
pub fn tick_step(span: f64) -> f64 {
    let mut magnitude = 10f64.powf((span / 10.0).max(1e-9).log10().floor());
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * magnitude;
            if span / step <= 10.0 {
                return step;
            }
        }
        magnitude *= 10.0;
    }
}

/// How much wider bold text runs than [`text_width`] says.
pub const BOLD_WIDEN: f64 = 1.1;

/// A label wider than this is wrapped onto more lines (between words, never cut).
pub const LABEL_MAX_PX: f64 = 380.0;

/// The estimated width of a mark's label line, bold or not.
pub fn label_width(line: &str, bold: bool) -> f64 {
    text_width(line, LABEL_PX) * if bold { BOLD_WIDEN } else { 1.0 }
}

/// Where a label goes: above or below the lane line, the row of its line nearest the lane
/// (0 = nearest), its lines, and its anchor. Line `i` of a label below sits in row `row + i`;
/// above, the lines stack upwards, so its last line is in `row`.
pub struct Placed {
    pub mark: usize,
    pub above: bool,
    pub row: usize,
    pub lines: Vec<String>,
    /// Text starts at the column (true) or ends there (false, near the right edge).
    pub start_anchor: bool,
    /// The x the label hangs from: its leader's upright. The mark's own x, unless the label
    /// had to move sideways; then the leader bends under row 0 (see [`Placed::bent`]).
    pub column: f64,
}

impl Placed {
    /// Rows it takes, nearest the lane first.
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.row..self.row + self.lines.len()
    }

    /// The row of line `i`.
    pub fn row_of_line(&self, i: usize) -> usize {
        if self.above {
            self.row + self.lines.len() - 1 - i
        } else {
            self.row + i
        }
    }

    /// Does its leader leave the mark's x (`mx`)? Then it runs from the mark sideways under
    /// row 0 to its column, and up (or down) there.
    pub fn bent(&self, mx: f64) -> bool {
        needs_leader(true, 0, self.column, mx)
    }

    /// Is a leader drawn? Every label has one but a straight one in row 0 above, which sits
    /// right over its mark.
    pub fn has_leader(&self, mx: f64) -> bool {
        needs_leader(self.above, self.row, self.column, mx)
    }
}

/// See [`Placed::has_leader`].
fn needs_leader(above: bool, row: usize, column: f64, mx: f64) -> bool {
    !above || row > 0 || (column - mx).abs() > 0.05
}

/// Room kept between two labels in a row.
const GAP: f64 = 6.0;
/// Room kept between a leader and a label it passes.
const LEADER_GAP: f64 = 2.0;
/// Room kept between the feet of two leaders (the pieces under row 0, sideways if bent).
const FOOT_GAP: f64 = 4.0;
/// Moving a label this many px sideways costs as much as one slot further out (half a row).
const SHIFT_PER_SLOT: f64 = 7.0;
/// A label never hangs further than this from its mark.
const MAX_SHIFT: f64 = 60.0;
/// Marks closer than this are at one place (their glyphs cover each other).
const SAME_PLACE: f64 = 6.0;
/// A nudge past the edge of a blocked range, so the candidate column lies outside it.
const NUDGE: f64 = 0.01;

/// A leader already drawn on one side: from its mark at `mark`, its upright at `column`
/// crosses rows `0..rows`, its foot (under row 0) runs over `foot`.
struct Leader {
    mark: f64,
    column: f64,
    rows: usize,
    foot: (f64, f64),
}

/// Rows of one side of a lane (above or below): the spans of the labels already there, and
/// the leaders that pass through them.
#[derive(Default)]
struct Side {
    rows: Vec<Vec<(f64, f64)>>,
    /// Where the text runs in each row (a span, less the room around it).
    texts: Vec<Vec<(f64, f64)>>,
    leaders: Vec<Leader>,
}

/// A label to place: its mark's x, its width, its number of lines, and whether its text
/// ends at its column even where it could start there.
#[derive(Clone, Copy)]
struct Want {
    mx: f64,
    w: f64,
    n: usize,
    end: bool,
}

impl Want {
    /// Anchor and span of the label hung from `column`: text starts 4 px right of it, or ends
    /// 4 px left of it when it would run past the right margin.
    fn span(&self, column: f64) -> (bool, (f64, f64)) {
        let start = !self.end && column + 5.0 + self.w <= WIDTH - MARGIN;
        (start, if start { (column - 2.0, column + 5.0 + self.w) } else { (column - 5.0 - self.w, column + 2.0) })
    }

    /// Where its text runs, hung from `column`: a leader may pass just beside it.
    fn text(&self, column: f64) -> (f64, f64) {
        if self.span(column).0 {
            (column + 4.0, column + 4.0 + self.w)
        } else {
            (column - 4.0 - self.w, column - 4.0)
        }
    }
}

fn inside(x: f64, (a, b): (f64, f64), room: f64) -> bool {
    a - room < x && x < b + room
}

/// The feet of leaders from marks at one place ([`SAME_PLACE`]) may share it (the marks do);
/// others keep [`FOOT_GAP`] apart, so no foot runs under another mark's leader.
fn feet_apart(l: &Leader, mark: f64, foot: (f64, f64)) -> bool {
    (l.mark - mark).abs() < SAME_PLACE || foot.1 + FOOT_GAP <= l.foot.0 || l.foot.1 + FOOT_GAP <= foot.0
}

impl Side {
    /// Are rows `rows` free over `span`?
    fn fits(&self, span: (f64, f64), rows: std::ops::Range<usize>) -> bool {
        rows.into_iter().all(|k| {
            let row = self.rows.get(k).map(Vec::as_slice).unwrap_or_default();
            row.iter().all(|(a, b)| span.1 + GAP <= *a || *b + GAP <= span.0)
        })
    }

    /// Can `want` hang from `column` in `row`: its rows free, its leader (if it has one)
    /// through no label and its foot clear of other feet, and its text over no leader?
    fn allows(&self, want: &Want, column: f64, row: usize, leader: bool) -> bool {
        let (_, span) = want.span(column);
        let foot = (want.mx.min(column), want.mx.max(column));
        span.0 >= MARGIN
            && self.fits(span, row..row + want.n)
            && (!leader
                || (self.texts.iter().take(row).flatten().all(|t| !inside(column, *t, LEADER_GAP))
                    && self.leaders.iter().all(|l| feet_apart(l, want.mx, foot))))
            && self.leaders.iter().all(|l| l.rows <= row || !inside(l.column, want.text(column), LEADER_GAP))
    }

    /// Rows past this one are as free as it is: nothing is there, no leader reaches them.
    fn last_row(&self) -> usize {
        self.leaders.iter().map(|l| l.rows).max().unwrap_or(0).max(self.rows.len())
    }

    /// Columns worth trying for `want` besides its mark's x: the edges of every range a
    /// column cannot be in (just outside), nearest the mark first.
    fn columns(&self, want: &Want) -> Vec<f64> {
        let (w, mut out) = (want.w, Vec::new());
        let mut edges = |lo: f64, hi: f64| out.extend([lo - NUDGE, hi + NUDGE]);
        for &(a, b) in self.rows.iter().flatten() {
            edges(a - GAP - 5.0 - w, b + GAP + 2.0);
            edges(a - GAP - 2.0, b + GAP + 5.0 + w);
        }
        for &(a, b) in self.texts.iter().flatten() {
            edges(a - LEADER_GAP, b + LEADER_GAP);
        }
        for l in &self.leaders {
            edges(l.column - 4.0 - w - LEADER_GAP, l.column - 4.0 + LEADER_GAP);
            edges(l.column + 4.0 - LEADER_GAP, l.column + 4.0 + w + LEADER_GAP);
            edges(l.foot.0 - FOOT_GAP, l.foot.1 + FOOT_GAP);
        }
        let switch = WIDTH - MARGIN - 5.0 - w;
        out.extend([switch, switch + NUDGE, want.mx - MAX_SHIFT, want.mx + MAX_SHIFT]);
        out.retain(|c| (c - want.mx).abs() <= MAX_SHIFT && (MARGIN..=WIDTH - MARGIN).contains(c));
        out.sort_by(|a, b| (a - want.mx).abs().total_cmp(&(b - want.mx).abs()));
        out
    }

    fn take(&mut self, want: &Want, column: f64, row: usize, leader: bool) {
        let (_, span) = want.span(column);
        if self.rows.len() < row + want.n {
            self.rows.resize_with(row + want.n, Vec::new);
            self.texts.resize_with(row + want.n, Vec::new);
        }
        for k in row..row + want.n {
            self.rows[k].push(span);
            self.texts[k].push(want.text(column));
        }
        if leader {
            self.leaders.push(Leader {
                mark: want.mx,
                column,
                rows: row,
                foot: (want.mx.min(column), want.mx.max(column)),
            });
        }
    }
}

/// Slot `s` of the search: row 0 above, row 0 below, row 1 above, … (below first unless
/// `first_above`).
fn slot(s: usize, first_above: bool) -> (bool, usize) {
    ((s % 2 == 0) == first_above, s / 2)
}

/// The best place for `want`: the nearest slot where it can hang straight from its mark, or
/// a nearer slot where it can hang from a column at most [`MAX_SHIFT`] away, a shift of
/// [`SHIFT_PER_SLOT`] px costing one slot. The search is bounded: past [`Side::last_row`]
/// every row is alike. `None` if no place keeps every leader clear of every label.
fn best_slot(above: &Side, below: &Side, want: &Want, first_above: bool) -> Option<(bool, usize, f64)> {
    let slot = |s: usize| slot(s, first_above);
    let sides = |up: bool| if up { above } else { below };
    let slots = 2 * (above.last_row().max(below.last_row()) + 1);
    let leader = |up: bool, row: usize, column: f64| needs_leader(up, row, column, want.mx);
    let straight = (0..slots).find(|s| {
        let (up, row) = slot(*s);
        sides(up).allows(want, want.mx, row, leader(up, row, want.mx))
    });
    let mut best = straight.map(|s| (s as f64, s, want.mx));
    let (mut columns_above, mut columns_below) = (None, None);
    for s in 0..straight.unwrap_or(slots) {
        let (up, row) = slot(s);
        let side = sides(up);
        let budget = best.map_or(f64::INFINITY, |b| b.0) - s as f64;
        let columns = if up { &mut columns_above } else { &mut columns_below };
        let found = columns
            .get_or_insert_with(|| side.columns(want))
            .iter()
            .copied()
            .take_while(|c| (c - want.mx).abs() / SHIFT_PER_SLOT < budget)
            .find(|c| side.allows(want, *c, row, leader(up, row, *c)));
        if let Some(c) = found {
            best = Some((s as f64 + (c - want.mx).abs() / SHIFT_PER_SLOT, s, c));
        }
    }
    best.map(|(_, s, c)| (slot(s).0, slot(s).1, c))
}

/// Put each label where it overlaps no label and its leader runs through no label. Labels are
/// placed one by one, each in the nearest slot (row 0 above, row 0 below, row 1 above, …)
/// where it hangs straight from its mark, unless a nearer slot is free a little to the side
/// (see [`best_slot`]); where no slot keeps the leaders clear, it takes the first slot its
/// text fits, as if there were no leaders. A label wider than [`LABEL_MAX_PX`] is wrapped
/// first and takes one row per line, all on one side.
///
/// The order matters: a label placed later sits further out, so its leader rises past the
/// earlier ones. Text running right of its mark stacks latest first (a burst then climbs like
/// stairs, the earliest label highest, each leader beside the labels below it); text ending
/// at its mark (near the right edge) stacks earliest first. A few such orders
/// ([`ORDERS`]) are tried per lane and the one leaving fewest leaders through labels kept,
/// then the one with fewest rows, then the least shifted.
pub fn place_labels(marks: &[Mark], x: &dyn Fn(f64) -> f64) -> Vec<Placed> {
    let mut by_time: Vec<usize> = (0..marks.len()).filter(|i| marks[*i].label.is_some()).collect();
    by_time.sort_by(|a, b| marks[*a].t.total_cmp(&marks[*b].t));
    let wants: Vec<(usize, Vec<String>, Want)> = by_time
        .iter()
        .map(|&i| {
            let label = marks[i].label.as_deref().unwrap_or_default();
            let bold = marks[i].glyph.strong();
            let lines = wrap(label, LABEL_MAX_PX / if bold { BOLD_WIDEN } else { 1.0 }, LABEL_PX);
            let w = lines.iter().map(|l| label_width(l, bold)).fold(0.0, f64::max);
            let want = Want { mx: x(marks[i].t), w, n: lines.len(), end: false };
            (i, lines, want)
        })
        .collect();
    let tries: Vec<Try> =
        ENDS_FROM.iter().flat_map(|from| ORDERS.iter().map(|order| place_in_order(&wants, order, *from))).collect();
    // The first try is the rule for text alone: the others may take up to twice its rows, and
    // a few more.
    let most_rows = tries.first().map_or(0, |t| 2 * t.rows + EXTRA_ROWS);
    let best = tries
        .into_iter()
        .filter(|t| t.rows <= most_rows)
        .min_by(|a, b| (a.crossed, a.rows).cmp(&(b.crossed, b.rows)).then(a.shifted.total_cmp(&b.shifted)));
    let mut placed = best.map(|t| t.placed).unwrap_or_default();
    // In time order, as drawn.
    let rank: std::collections::HashMap<usize, usize> = by_time.iter().enumerate().map(|(r, i)| (*i, r)).collect();
    placed.sort_by_key(|p| rank[&p.mark]);
    placed
}

/// An order of placing a lane's labels.
struct Order {
    /// Keep leaders clear at all; if not, this is the first-fit rule for text alone, in time order.
    clear: bool,
    /// Labels whose text ends at the mark go first (earliest first), then the others (latest
    /// first); or the other way round.
    ends_first: bool,
    /// Labels whose text ends at the mark try below the lane before above.
    ends_below: bool,
    /// Place every label latest first, wherever its text runs.
    all_latest_first: bool,
}

/// The orders [`place_labels`] tries (each with every [`ENDS_FROM`]).
const ORDERS: [Order; 6] = [
    Order { clear: false, ends_first: false, ends_below: false, all_latest_first: false },
    Order { clear: true, ends_first: false, ends_below: false, all_latest_first: true },
    Order { clear: true, ends_first: true, ends_below: false, all_latest_first: false },
    Order { clear: true, ends_first: false, ends_below: false, all_latest_first: false },
    Order { clear: true, ends_first: true, ends_below: true, all_latest_first: false },
    Order { clear: true, ends_first: false, ends_below: true, all_latest_first: false },
];

/// Keeping leaders clear may take twice the rows of the text alone, and this many more; a
/// dense lane whose leaders cannot all be kept clear does not grow without bound.
const EXTRA_ROWS: usize = 4;

/// Labels placed one way: leaders through a label, rows (both sides), px shifted sideways.
struct Try {
    placed: Vec<Placed>,
    crossed: usize,
    rows: usize,
    shifted: f64,
}

/// Text of labels whose mark is right of one of these x ends at the mark, as if near the right
/// edge: then a burst there stacks earliest first, each label's text left of the leaders above.
const ENDS_FROM: [f64; 6] = [f64::INFINITY, 1100.0, 1000.0, 900.0, 800.0, 700.0];

/// The labels placed in `order`, text ending at the mark from x `ends_from` on.
fn place_in_order(wants: &[(usize, Vec<String>, Want)], order: &Order, ends_from: f64) -> Try {
    let wants: Vec<(usize, &Vec<String>, Want)> =
        wants.iter().map(|(i, l, w)| (*i, l, Want { end: w.mx >= ends_from, ..*w })).collect();
    let ends = |w: &Want| !order.all_latest_first && !w.span(w.mx).0;
    let (ending, starting): (Vec<_>, Vec<_>) = wants.iter().partition(|(_, _, w)| ends(w));
    let starting = starting.into_iter().rev();
    let sequence: Vec<&(usize, &Vec<String>, Want)> = if !order.clear {
        wants.iter().collect()
    } else if order.ends_first {
        ending.into_iter().chain(starting).collect()
    } else {
        starting.chain(ending).collect()
    };
    let (mut above, mut below) = (Side::default(), Side::default());
    let (mut placed, mut shifted) = (Vec::new(), 0.0);
    for (i, lines, want) in sequence {
        let first_above = !(order.ends_below && ends(want));
        let clear = if order.clear { best_slot(&above, &below, want, first_above) } else { None };
        let (up, row, column) = clear.unwrap_or_else(|| {
            // Rows beyond every label placed so far are free: the search ends.
            let (_, span) = want.span(want.mx);
            let fits = |s: &usize| {
                let (up, row) = slot(*s, first_above);
                if up { &above } else { &below }.fits(span, row..row + want.n)
            };
            let (up, row) = slot((0..).find(fits).unwrap_or_default(), first_above);
            (up, row, want.mx)
        });
        let leader = needs_leader(up, row, column, want.mx);
        if up { &mut above } else { &mut below }.take(want, column, row, leader);
        shifted += (column - want.mx).abs();
        let (start_anchor, _) = want.span(column);
        placed.push(Placed { mark: *i, above: up, row, lines: (*lines).clone(), start_anchor, column });
    }
    let rows = above.rows.len() + below.rows.len();
    let crossed = crossings(&placed, &wants);
    Try { placed, crossed, rows, shifted }
}

/// Leaders of `placed` through another label's text (`wants` gives each mark's label).
fn crossings(placed: &[Placed], wants: &[(usize, &Vec<String>, Want)]) -> usize {
    let want: std::collections::HashMap<usize, &Want> = wants.iter().map(|(i, _, w)| (*i, w)).collect();
    let mut n = 0;
    for p in placed.iter().filter(|p| p.has_leader(want[&p.mark].mx)) {
        for q in placed.iter().filter(|q| q.above == p.above && q.row < p.row) {
            n += usize::from(inside(p.column, want[&q.mark].text(q.column), 0.0));
        }
    }
    n
}

/// Text as SVG character data or an attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
