use super::layout::{place_labels, tick_step};
use super::model::{Glyph, Mark};
use super::*;
use crate::checker::Verdict;
use crate::labs::outbox::table::OutboxEvent;
use crate::report::fixture::{assert_well_formed, ev, lock_race as report};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind};

fn attr(tag: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    tag[start..].split('"').next().unwrap().parse().unwrap()
}

#[test]
fn one_lane_per_actor_in_lane_order() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    let lanes: Vec<&str> =
        svg.split("<g class=\"lane\" data-actor=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    assert_eq!(lanes, ["producer", "C1", "C2"]);
}

#[test]
fn work_bars_are_proportional_to_their_duration() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    let bars: Vec<&str> = svg.lines().filter(|l| l.starts_with("<rect class=\"work\"")).collect();
    assert_eq!(bars.len(), 2, "one bar per work_started");
    let (long, short) = (attr(bars[0], "width"), attr(bars[1], "width"));
    assert!((long / short - 16.0).abs() < 0.01, "800 ms vs 50 ms: {long} / {short}");
    assert!(attr(bars[1], "x") > attr(bars[0], "x"));
}

#[test]
fn an_expired_lock_and_an_overwrite_are_marked() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert!(svg.contains("lock expired (TTL 500 ms)"), "TTL scaled by the time scale");
    assert!(svg.contains("released → 0: expired, not ours"));
    assert!(svg.contains("class=\"lock-expired\""));
    assert!(svg.contains("wrote created: overwrote a newer state"));
    assert!(svg.contains(">wrote paid<"));
    assert!(svg.contains("took lock after 25 tries"));
}

#[test]
fn the_verdict_badge_follows_the_run() {
    let r = report(Verdict::Wrong);
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert!(svg.contains(r#"class="badge wrong""#) && svg.contains("✕ WRONG"));
    assert!(svg.contains("final: #42 = created (should be paid)"));
    let vi = render(&r, &r.variants[0], 1, Lang::Vi);
    assert!(vi.contains("✕ SAI") && vi.contains("cuối: #42") && vi.contains("nhận created v1"));
    let r = report(Verdict::Right);
    assert!(render(&r, &r.variants[0], 1, Lang::En).contains("✓ RIGHT"));
    let r = report(Verdict::Unknown);
    assert!(render(&r, &r.variants[0], 1, Lang::Vi).contains(r#"class="badge unknown""#));
}

#[test]
fn output_is_well_formed_and_escaped() {
    let r = report(Verdict::Wrong);
    for lang in [Lang::En, Lang::Vi] {
        let svg = render(&r, &r.variants[0], 1, lang);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(!svg.contains("<script") && !svg.contains("href"));
        assert!(svg.contains("&lt;short&gt; TTL &amp; &quot;quotes&quot;"));
        assert_well_formed(&svg);
    }
    let missing = render(&r, &r.variants[0], 9, Lang::En);
    assert_well_formed(&missing);
    assert!(missing.contains("run 9: not in this report"));
}

#[test]
fn labels_at_the_same_time_do_not_overlap() {
    let marks: Vec<Mark> = (0..4)
        .map(|i| Mark {
            t: 100.0,
            glyph: Glyph::Received,
            label: Some(format!("label number {i}")),
            step: 0,
            key: false,
        })
        .collect();
    let placed = place_labels(&marks, &|t| t);
    let mut slots: Vec<(bool, usize)> = placed.iter().map(|p| (p.above, p.row)).collect();
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), 4, "each label in its own row");
}

#[test]
fn ticks_are_round_numbers() {
    assert_eq!(tick_step(880.0), 100.0);
    assert_eq!(tick_step(1850.0), 200.0);
    assert_eq!(tick_step(2300.0), 250.0);
    assert_eq!(tick_step(45.0), 5.0);
}

#[test]
fn sql_and_outbox_events_get_labelled_marks() {
    let mut r = report(Verdict::Right);
    let run = &mut r.variants[0].run_records[0];
    run.events = vec![
        ev(0, Actor::Session('A'), EventKind::SqlSent { case: 1, order: 42, statement: "BEGIN".into() }),
        ev(
            120,
            Actor::Session('B'),
            EventKind::SqlDone {
                case: 1,
                order: 42,
                outcome: "UPDATE 1".into(),
                waited_ms: 110.0,
                status: crate::timeline::SqlStatus::Done,
            },
        ),
        ev(
            200,
            Actor::Dispatcher(1),
            OutboxEvent::OutboxRound { round: 1, published: vec![42], failed: vec![43], held_back: vec![] }.event(),
        ),
    ];
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert_well_formed(&svg);
    for needle in ["BEGIN", "→ UPDATE 1 after waiting 110 ms", "round 1: published #42; failed #43", "class=\"wait\""]
    {
        assert!(svg.contains(needle), "{needle}");
    }
    let lanes = svg.matches("<g class=\"lane\"").count();
    assert_eq!(lanes, 3);
}

#[test]
fn the_lab_book_flavour_tags_each_event_with_its_timeline_line() {
    let r = report(Verdict::Wrong);
    let v = &r.variants[0];
    let wording =
        crate::report::words::Wording { lang: Lang::En, many_orders: false, redact: crate::report::Redactor::NONE };
    let lines = crate::report::words::timeline_lines(&v.run_records[0], &v.procedure, &wording, false);
    let step_of = |needle: &str| lines.iter().position(|(_, l)| l.contains(needle)).expect(needle) + 1;
    let svg = render_steps(&r, v, 1, Lang::En, "lock-s4c-en");
    assert_well_formed(&svg);
    let tagged = |class: &str| -> Vec<u32> {
        svg.lines()
            .filter(|l| l.contains(&format!(r#"class="mark {class}""#)) || l.contains(&format!(r#"class="{class}""#)))
            // The legend repeats glyphs, untagged.
            .filter_map(|l| l.split(r#"data-step=""#).nth(1))
            .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
            .collect()
    };
    assert_eq!(tagged("overwrote"), vec![step_of("C1 wrote status=created") as u32]);
    assert_eq!(tagged("received"), vec![step_of("C1 received") as u32, step_of("C2 received") as u32]);
    // C2's 50 ms of work starts with its lock (no line of its own): shown with that line.
    let c2_lock = step_of("C2 took") as u32;
    assert!(tagged("work").contains(&c2_lock), "{:?} vs {c2_lock}", tagged("work"));
    // The expiry at 500 ms is no line of its own: it shows with the first line after it (C2's
    // lock at 502 ms), never with the line before it (C1's lock at 1 ms), which would show it
    // ahead of its time.
    assert_eq!(tagged("expired"), vec![c2_lock]);
    assert!(svg.contains(&format!(r#"<g data-step="{}">"#, lines.len())), "final state at the last step");
    assert!(svg.contains(r#"id="hatch-lock-s4c-en""#) && svg.contains("url(#hatch-lock-s4c-en)"));
    assert!(!svg.contains("url(#hatch)"));
    let file = render(&r, v, 1, Lang::En);
    assert!(!file.contains("data-step") && !file.contains("tabindex") && file.contains("url(#hatch)"));
}

/// The longest labels of a hand-made timeline (a crash at the longest crash point, a long SQL
/// statement, a long server error) keep their whole text: on the page they are wrapped
/// between words onto lines that read back as the text, and nothing ends in `…`.
#[test]
fn long_labels_are_wrapped_whole() {
    let crash = "after the effect, before marking it done and XACK";
    let statement = "UPDATE orders SET status = 'paid', version = 2 WHERE id = 42 AND version < 2";
    let reply = "ERR wrong number of arguments for 'xautoclaim' command";
    let mut r = report(Verdict::Right);
    let run = &mut r.variants[0].run_records[0];
    run.events = vec![
        ev(0, Actor::Session('A'), EventKind::SqlSent { case: 1, order: 42, statement: statement.into() }),
        ev(
            10,
            Actor::Consumer(1),
            EventKind::ServerCommand {
                server: crate::timeline::ServerKind::Redis,
                connection: 1,
                args: vec!["XAUTOCLAIM".into()],
                reply: reply.into(),
                error: true,
                entries: Vec::new(),
                round_trip_us: None,
            },
        ),
        ev(20, Actor::Consumer(2), EventKind::crashed(true, crash)),
    ];
    let svg = render(&r, &r.variants[0], 1, Lang::En);
    assert!(!svg.contains('…'), "nothing shortened");
    let texts: Vec<String> = super::page_check::text_boxes(&svg).into_iter().map(|b| b.text).collect();
    for whole in [format!("CRASHED (injected: {crash})"), statement.to_string(), format!("XAUTOCLAIM → {reply}")] {
        // Consecutive texts of the label, joined by spaces, give it back.
        let found =
            (0..texts.len()).any(|i| (1..=4).any(|n| texts.get(i..i + n).is_some_and(|t| t.join(" ") == whole)));
        assert!(found, "{whole:?} not drawn whole in {texts:?}");
        assert!(!texts.contains(&whole), "{whole:?} is wider than a label line: wrapped");
    }
}

#[test]
fn a_wrapped_label_takes_a_row_per_line_on_one_side() {
    let mark = |t: f64, label: &str| Mark { t, glyph: Glyph::Received, label: Some(label.into()), step: 0, key: false };
    let long = "a label much wider than one line of label text may be, so it wraps onto two";
    let marks = vec![mark(100.0, long), mark(100.0, "two"), mark(100.0, "three"), mark(100.0, "four")];
    let placed = place_labels(&marks, &|t| t);
    assert_eq!(placed[0].lines.len(), 2, "{:?}", placed[0].lines);
    assert_eq!(placed[0].lines.join(" "), long);
    let p = &placed[0];
    // Its first line is the one further from the lane above, nearer below.
    let (first, second) = if p.above { (p.row + 1, p.row) } else { (p.row, p.row + 1) };
    assert_eq!((p.row_of_line(0), p.row_of_line(1)), (first, second));
    // Four labels at one instant: each row of each side holds one of them.
    let mut taken: Vec<(bool, usize)> = placed.iter().flat_map(|p| p.rows().map(|r| (p.above, r))).collect();
    taken.sort();
    let n = taken.len();
    taken.dedup();
    assert_eq!((n, taken.len()), (5, 5), "{taken:?}");
    assert_eq!(leaders_through_labels(&marks, &placed), Vec::<(usize, usize)>::new());
}

/// Where the text of a placed label runs, left to right.
fn text_x(marks: &[Mark], q: &super::layout::Placed) -> (f64, f64) {
    let bold = marks[q.mark].glyph.strong();
    let w = q.lines.iter().map(|l| super::layout::label_width(l, bold)).fold(0.0, f64::max);
    if q.start_anchor {
        (q.column + 4.0, q.column + 4.0 + w)
    } else {
        (q.column - 4.0 - w, q.column - 4.0)
    }
}

/// Pairs (a, b): the leader of mark a's label runs through the text of mark b's label, as
/// `place_labels` put them (x = t).
fn leaders_through_labels(marks: &[Mark], placed: &[super::layout::Placed]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for p in placed.iter().filter(|p| p.has_leader(marks[p.mark].t)) {
        for q in placed.iter().filter(|q| q.above == p.above && q.row < p.row) {
            let (a, b) = text_x(marks, q);
            if a < p.column && p.column < b {
                out.push((p.mark, q.mark));
            }
        }
    }
    out
}

/// Three marks 10 px apart, each label wider than the gaps. Taken in time order, the third
/// would go to row 1 above and its leader through the first label's text; stacked latest
/// first, the first label goes highest and each leader rises left of the texts below it.
#[test]
fn a_leader_rises_beside_the_labels_below_it() {
    let mark = |t: f64, label: &str| Mark { t, glyph: Glyph::Received, label: Some(label.into()), step: 0, key: false };
    let marks =
        vec![mark(100.0, "first of three labels"), mark(110.0, "second of three"), mark(120.0, "third of three")];
    let placed = place_labels(&marks, &|t| t);
    assert_eq!(leaders_through_labels(&marks, &placed), Vec::<(usize, usize)>::new());
    let at = |p: &super::layout::Placed| (p.above, p.row, p.bent(marks[p.mark].t));
    assert_eq!(
        [at(&placed[0]), at(&placed[1]), at(&placed[2])],
        [(true, 1, false), (false, 0, false), (true, 0, false)]
    );
}

/// Two labels a little too close for one row: rather than go a slot further out (below the
/// lane), the earlier one moves a few px left and its leader bends under row 0 to reach it.
#[test]
fn a_label_moves_aside_rather_than_a_slot_out() {
    let mark = |t: f64| Mark { t, glyph: Glyph::Received, label: Some("took lock".into()), step: 0, key: false };
    let marks = vec![mark(100.0), mark(175.0)];
    let placed = place_labels(&marks, &|t| t);
    assert_eq!(leaders_through_labels(&marks, &placed), Vec::<(usize, usize)>::new());
    assert!(placed.iter().all(|p| p.above && p.row == 0), "both in row 0 above");
    let (a, b) = (&placed[0], &placed[1]);
    assert!(a.bent(100.0) && a.has_leader(100.0) && !b.has_leader(175.0));
    assert!((-8.0..0.0).contains(&(a.column - 100.0)), "a short move left: {}", a.column);
    let ((_, a1), (b0, _)) = (text_x(&marks, a), text_x(&marks, b));
    assert!(a1 < b0, "{a1} < {b0}");
}

/// A long burst of marks 5 px apart, every label wider than 30 of them: the leaders cannot all
/// be kept clear, and the search still ends, overlaps no text and keeps to a bounded height.
#[test]
fn a_dense_burst_is_placed_in_bounded_rows() {
    let marks: Vec<Mark> = (0..60)
        .map(|i| Mark {
            t: 150.0 + 5.0 * i as f64,
            glyph: Glyph::Received,
            label: Some(format!("a label of burst mark {i}")),
            step: 0,
            key: false,
        })
        .collect();
    let placed = place_labels(&marks, &|t| t);
    assert_eq!(placed.len(), 60);
    let rows = |above: bool| placed.iter().filter(|p| p.above == above).map(|p| p.rows().end).max().unwrap_or(0);
    assert!(rows(true) + rows(false) <= 80, "{} + {}", rows(true), rows(false));
    for (i, p) in placed.iter().enumerate() {
        for q in &placed[i + 1..] {
            let shared = p.above == q.above && p.rows().any(|r| q.rows().contains(&r));
            let ((a0, a1), (b0, b1)) = (text_x(&marks, p), text_x(&marks, q));
            assert!(!shared || a1 <= b0 || b1 <= a0, "{} and {} overlap", p.mark, q.mark);
        }
    }
}

#[test]
fn a_reply_cut_on_the_wire_keeps_its_whole_tokens() {
    use super::model::whole_tokens;
    assert_eq!(whole_tokens(r#"{"id":"job-000003","name":"send_welcome_…"#), r#"{"id":"job-000003", …"#);
    assert_eq!(whole_tokens("1 entry 1796143497107-0, … 3 more"), "1 entry 1796143497107-0, … 3 more");
    assert_eq!(whole_tokens("[a, b, … 9 items]"), "[a, b, … 9 items]");
    assert_eq!(whole_tokens("xxxxxxxx…"), "…");
    assert_eq!(whole_tokens("OK"), "OK");
}

#[test]
fn a_named_crash_point_is_drawn_in_the_page_s_language() {
    let mut r = report(Verdict::Right);
    let words = crate::lang::Words::new("SIGKILL after taking job-1", "SIGKILL sau khi lấy job-1");
    r.variants[0].run_records[0].events = vec![ev(20, Actor::Consumer(2), EventKind::crashed_at(words))];
    let texts = |lang| -> String {
        let svg = render(&r, &r.variants[0], 1, lang);
        super::page_check::text_boxes(&svg).into_iter().map(|b| b.text).collect::<Vec<_>>().join(" ")
    };
    assert!(texts(Lang::Vi).contains("CRASH (chủ động: SIGKILL sau khi lấy job-1)"), "{}", texts(Lang::Vi));
    assert!(texts(Lang::En).contains("CRASHED (injected: SIGKILL after taking job-1)"), "{}", texts(Lang::En));
}
