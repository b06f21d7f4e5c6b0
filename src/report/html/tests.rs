use super::*;
use crate::checker::Verdict;
use crate::lang::Lang;
use crate::report::fixture::{assert_well_formed, lock_race};
use crate::report::text::{self, TextOptions};

fn the_book() -> Book {
    book(&[lock_race(Verdict::Wrong)], &[])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// The HTML a part puts in `slot`.
fn slot(b: &Book, part: &str, slot: &str) -> String {
    let js = b.get(part).unwrap_or_else(|| panic!("no {part}"));
    let json =
        js.split_once("ordlabBook.part(").unwrap().1.split_once(", ").unwrap().1.trim_end().trim_end_matches(");");
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json).expect("a part's slots are JSON");
    map[slot].as_str().unwrap().to_string()
}

/// The items of the figure's step list in one language.
fn steps(html: &str, lang: &str) -> Vec<String> {
    let list = html
        .split(&format!(r#"<ol class="steps" lang="{lang}">"#))
        .nth(1)
        .expect("a step list")
        .split("</ol>")
        .next()
        .unwrap();
    list.split("<li").skip(1).map(|li| unescape(li.split_once('>').unwrap().1.trim_end_matches("</li>"))).collect()
}

#[test]
fn the_page_loads_nothing_from_elsewhere() {
    let b = the_book();
    for (name, body) in &b.files {
        for needle in ["href=\"http", "href=\"//", "url(http", "@import", "<link", "XMLHttpRequest", "fetch("] {
            assert!(!body.contains(needle), "{name} must not load anything from elsewhere: found {needle:?}");
        }
        // SVG namespaces are names, not requests; every other URL would be.
        let urls = body.matches("http").count();
        let namespaces = body.matches("http://www.w3.org/2000/svg").count();
        assert_eq!(urls, namespaces, "{name}: only SVG namespace URIs");
    }
    let p = b.index();
    assert!(p.starts_with("<!doctype html>") && p.contains("<style>") && p.contains("<script>"));
    // It loads only its own parts, beside it, and only by a script element.
    assert!(!p.contains(" src="), "nothing loaded on the first load");
    assert!(p.contains(r#"data-part="book/lock.js""#));
    assert_eq!(
        b.files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["index.html", "book/lock.js", "book/lock.html"]
    );
}

#[test]
fn the_pictures_are_in_the_part_not_in_the_page() {
    let b = the_book();
    assert!(!b.index().contains("<svg"), "the first load draws no picture");
    let figure = slot(&b, "book/lock.js", "fig-lock-s4c");
    assert!(
        figure.contains(r#"<div class="fig" lang="en"><svg"#) && figure.contains(r#"<div class="fig" lang="vi"><svg"#)
    );
    assert!(b.index().contains(r#"<div class="figs" data-slot="fig-lock-s4c">"#));
    // The page of its own has it inline, and no part to load.
    let own = b.get("book/lock.html").unwrap();
    assert!(own.contains(r#"data-slot="fig-lock-s4c" data-filled="1"><div class="fig" lang="en"><svg"#), "{own}");
}

#[test]
fn every_text_comes_in_both_languages() {
    let b = the_book();
    for page in [b.index(), b.get("book/lock.html").unwrap()] {
        let body = page.split("<body>").nth(1).unwrap().split("<script>").next().unwrap();
        assert_eq!(body.matches(r#" lang="en""#).count(), body.matches(r#" lang="vi""#).count());
    }
    let p = b.index();
    assert!(p.contains(r#"<span lang="en">ordlab lab book</span><span lang="vi">Sổ thí nghiệm ordlab</span>"#));
    // The fixture's title is escaped, in both.
    assert!(p.contains("S4c: &lt;short&gt; TTL &amp; &quot;quotes&quot;"));
}

#[test]
fn a_step_is_the_text_report_line() {
    let r = lock_race(Verdict::Wrong);
    let b = book(std::slice::from_ref(&r), &[]);
    let list = slot(&b, "book/lock.js", "steps-fig-lock-s4c");
    for lang in [Lang::En, Lang::Vi] {
        let report = text::render(&r, &TextOptions { lang, ..Default::default() });
        let timeline: Vec<String> = report
            .lines()
            .filter(|l| l.trim_start().starts_with("t="))
            .map(|l| l.trim_start().split_once(" ms  ").unwrap().1.to_string())
            .collect();
        assert!(timeline.len() >= 6, "{report}");
        assert_eq!(steps(&list, lang.code()), timeline, "{lang:?}");
    }
    let n = steps(&list, "en").len();
    let figure = slot(&b, "book/lock.js", "fig-lock-s4c");
    assert!(b.index().contains(&format!(r#"data-steps="{n}""#)));
    assert!(figure.contains(&format!(r#"data-step="{n}""#)), "the picture has the last step");
    assert!(!figure.contains(&format!(r#"data-step="{}""#, n + 1)), "and no step beyond it");
    assert!(!figure.contains("tabindex"), "a mark is no tab stop: the figure is the one");
    assert_eq!(b.index().matches(r#"<figure class="timeline""#).count(), 1);
    assert!(b.index().contains(r#"tabindex="0" aria-labelledby="cap-fig-lock-s4c""#));
}

#[test]
fn summary_rows_and_sections_per_lab_and_variant() {
    let mut a = lock_race(Verdict::Wrong);
    a.lab.family = Some("ordering".into());
    let mut b = lock_race(Verdict::Right);
    b.lab.id = "other".into();
    b.environment.git_commit = "0123456789".into();
    let p = render(&[a, b]);
    assert_eq!(p.matches(r#"<tr class="wrong"#).count(), 1, "{p}");
    assert_eq!(p.matches(r#"<tr class="right"#).count(), 1, "{p}");
    assert!(p.contains(r#"<span class="mark" aria-hidden="true">✕</span>"#), "wrong by a symbol too");
    assert_eq!(p.matches(r#"<section class="lab""#).count(), 2);
    assert!(p.contains(r#"<option value="ordering" data-en="ordering""#));
    assert!(p.contains(r##"href="#lab-other""##));
    // The environment is said once; the lab that ran elsewhere is marked.
    assert_eq!(p.matches("<td class=\"env\"").count(), 0);
    assert_eq!(p.matches(r#"<abbr class="elsewhere""#).count(), 1, "{p}");
    assert!(p.contains("These labs ran in another environment") && p.contains("commit 0123456789"));
}

#[test]
fn each_picture_has_its_own_pattern_and_the_markup_is_balanced() {
    let b = the_book();
    let figure = slot(&b, "book/lock.js", "fig-lock-s4c");
    assert!(figure.contains(r#"id="hatch-fig-lock-s4c-en""#) && figure.contains(r#"id="hatch-fig-lock-s4c-vi""#));
    assert!(!figure.contains(r#"id="hatch""#));
    for page in [b.index(), b.get("book/lock.html").unwrap()] {
        let body = page.split("<body>").nth(1).unwrap().split("<script>").next().unwrap();
        assert_well_formed(body);
    }
    assert_well_formed(&figure);
}

#[test]
fn buttons_say_what_they_do() {
    let p = the_book().index().to_string();
    assert!(p.contains(r#"PNG</span><span class="sr"><span lang="en"> of lock s4c</span>"#), "{p}");
    assert!(p.contains(r#"aria-label="step of lock s4c""#));
    assert!(p.contains(r#"data-label-vi="bước của lock s4c""#));
    assert!(p.contains(r##"<a class="skip" href="#main">"##));
}
