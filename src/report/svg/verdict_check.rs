//! Every built-in lab's timeline, drawn from its record in `results/records/`, checked as a
//! picture that makes its point: a slide's proportions (16:9), the events its verdict rests on
//! drawn (a long run cut around them, never drawn as its first events only), and a wrong or
//! unjudged run's reason on the picture.

use super::window::MUST_DRAW;
use super::{readable_window, render};
use crate::checker::Verdict;
use crate::lang::Lang;
use crate::report::{LabReport, VariantReport};

/// What is wrong with the picture of run 1 of `v`, one line each.
fn problems(report: &LabReport, v: &VariantReport) -> Vec<String> {
    let mut out = Vec::new();
    let Some(record) = v.record(1).filter(|r| !r.events.is_empty()) else { return out };
    let (windowed, _) = readable_window(v, 1);
    let svg = render(report, v, 1, Lang::En);
    let number = |name: &str| {
        svg.split(&format!(" {name}=\"")).nth(1).and_then(|h| h.split('"').next()?.parse::<f64>().ok()).unwrap_or(0.0)
    };
    let (w, h) = (number("width"), number("height"));
    if (w / h - 16.0 / 9.0).abs() > 0.01 {
        out.push(format!("{w}×{h} is not 16:9"));
    }
    let kept = windowed.record(1).map_or(0, |r| r.events.len());
    match &windowed.drawn {
        Some(d) if d.keys == 0 && d.windows.len() == 1 && d.windows[0].left_out_before == 0 && kept < d.events => {
            if v.drawn.is_none() {
                out.push(format!(
                    "drawn as its first {kept} of {} events (a record of version 1): rerun the lab to draw it around its verdict's events",
                    d.events
                ));
            } else if record.verdict.verdict != Verdict::Right {
                out.push(format!(
                    "judged {:?} but no event of the run is key: nothing to draw it around",
                    record.verdict.verdict
                ));
            }
        }
        Some(d) => {
            if d.keys_drawn < d.keys.min(MUST_DRAW) {
                out.push(format!("{} of its {} key events drawn", d.keys_drawn, d.keys));
            }
            if record.verdict.verdict == Verdict::Wrong && d.keys_drawn == 0 {
                out.push("judged wrong, and none of the events it rests on is drawn".into());
            }
        }
        None => {}
    }
    let keys_in_picture = svg.matches(r#" data-key="1""#).count();
    let keys_in_run = windowed.record(1).map_or(0, |r| v.procedure.key_events(r).len());
    if keys_in_run > 0 && keys_in_picture == 0 {
        out.push(format!("{keys_in_run} key events in the drawn run, none marked on the picture"));
    }
    if record.verdict.verdict != Verdict::Right && !record.verdict.reasons.is_empty() && !svg.contains(r#"class="why""#)
    {
        out.push("judged not right, and the reason is not on the picture".into());
    }
    out
}

/// `ordlab book` draws every lab's pictures from these records: none may miss the events its
/// verdict rests on. `ORDLAB_RESULTS=<dir>` checks another results directory's records (a
/// regeneration before it is committed).
#[test]
fn every_saved_timeline_shows_its_verdict_s_events() {
    let dir = std::env::var_os("ORDLAB_RESULTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results"));
    let records = crate::report::record::load_all(&dir).expect("results/records/ holds the built-in labs");
    let (mut failures, mut pictures, mut cut) = (Vec::new(), 0, 0);
    for report in records {
        let report = report.expect("every record reads");
        for v in &report.variants {
            pictures += 1;
            cut += usize::from(v.drawn.is_some());
            for p in problems(&report, v) {
                failures.push(format!("{}/{}: {p}", report.lab.id, v.id));
            }
        }
    }
    eprintln!("{pictures} timelines, {cut} of them cut around their key events");
    assert!(pictures > 100, "only {pictures} timelines");
    let mut rerun: Vec<&str> =
        failures.iter().filter(|f| f.contains("rerun the lab")).filter_map(|f| f.split('/').next()).collect();
    rerun.dedup();
    let how = if rerun.is_empty() {
        String::new()
    } else {
        format!("\nregenerate them: ordlab run {} --out results", rerun.join(" "))
    };
    assert!(failures.is_empty(), "{} pictures miss their point:\n{}{how}", failures.len(), failures.join("\n"));
}

/// The check fails a picture drawn as its first events, and passes it drawn around its keys.
#[test]
fn a_picture_of_the_first_events_only_fails_the_check() {
    use crate::report::fixture::{ev, lock_race};
    use crate::timeline::{Actor, EventKind};
    let mut report = lock_race(Verdict::Wrong);
    let v = &mut report.variants[0];
    let r = &mut v.run_records[0];
    // 600 acks, then the crash the verdict rests on.
    for t in 0..600 {
        r.events.push(ev(2000 + t, Actor::Consumer(1), EventKind::Acked { entry_id: format!("9-{t}") }));
    }
    r.events.push(ev(2700, Actor::Consumer(2), EventKind::crashed(true, "after the write")));
    let full = report.clone();
    assert!(problems(&full, &full.variants[0]).is_empty(), "{:?}", problems(&full, &full.variants[0]));
    let record = crate::report::record::compact(&full);
    assert!(record.variants[0].drawn.is_some(), "a record keeps where it was cut");
    assert!(problems(&record, &record.variants[0]).is_empty(), "{:?}", problems(&record, &record.variants[0]));
    // A record of version 1: the first 200 events, and how many there were.
    let mut old = record.clone();
    let v = &mut old.variants[0];
    v.drawn = None;
    v.run_records[0] = full.variants[0].run_records[0].clone();
    v.run_records[0].events.sort_by_key(|e| e.t_us);
    v.run_records[0].events.truncate(200);
    let found = problems(&old, &old.variants[0]);
    assert!(found.iter().any(|p| p.contains("rerun the lab")), "{found:?}");
}
