use super::*;
use crate::checker::Verdict;
use crate::report::fixture::{assert_well_formed, lock_race};
use crate::report::text::{self, TextOptions};

fn page() -> String {
    render(&[lock_race(Verdict::Wrong)])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// The items of the figure's step list in one language.
fn steps(page: &str, lang: &str) -> Vec<String> {
    let list = page
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
    let p = page();
    assert!(p.starts_with("<!doctype html>") && p.contains("<style>") && p.contains("<script>"));
    for needle in [" src=", "href=\"http", "href=\"//", "url(http", "@import", "<link", "fetch(", "XMLHttpRequest"] {
        assert!(!p.contains(needle), "the page must not load anything: found {needle:?}");
    }
    // SVG namespaces are names, not requests; every other URL would be.
    let urls = p.matches("http").count();
    let namespaces = p.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, namespaces, "only SVG namespace URIs");
}

#[test]
fn every_text_comes_in_both_languages() {
    let p = page();
    let body = p.split("<body>").nth(1).unwrap().split("<script>").next().unwrap();
    assert_eq!(body.matches(r#" lang="en""#).count(), body.matches(r#" lang="vi""#).count());
    assert!(p.contains(r#"<span lang="en">ordlab lab book</span><span lang="vi">Sổ thí nghiệm ordlab</span>"#));
    // The fixture's title is escaped, in both.
    assert!(p.contains("S4c: &lt;short&gt; TTL &amp; &quot;quotes&quot;"));
}

#[test]
fn a_step_is_the_text_report_line() {
    let r = lock_race(Verdict::Wrong);
    let p = render(std::slice::from_ref(&r));
    for lang in [Lang::En, Lang::Vi] {
        let report = text::render(&r, &TextOptions { lang, ..Default::default() });
        let timeline: Vec<String> = report
            .lines()
            .filter(|l| l.trim_start().starts_with("t="))
            .map(|l| l.trim_start().split_once(" ms  ").unwrap().1.to_string())
            .collect();
        assert!(timeline.len() >= 6, "{report}");
        assert_eq!(steps(&p, lang.code()), timeline, "{lang:?}");
    }
    let n = steps(&p, "en").len();
    assert!(p.contains(&format!(r#"data-steps="{n}""#)));
    assert!(p.contains(&format!(r#"data-step="{n}""#)), "the picture has the last step");
    assert!(!p.contains(&format!(r#"data-step="{}""#, n + 1)), "and no step beyond it");
}

#[test]
fn summary_rows_and_sections_per_lab_and_variant() {
    let mut a = lock_race(Verdict::Wrong);
    a.lab.family = Some("ordering".into());
    let mut b = lock_race(Verdict::Right);
    b.lab.id = "other".into();
    let p = render(&[a, b]);
    assert_eq!(p.matches("<tr data-family=").count() + p.matches(r#"<tr class="mismatch" data-family="#).count(), 2);
    assert_eq!(p.matches(r#"<section class="lab""#).count(), 2);
    assert!(p.contains(r#"<option value="ordering" translate="no">ordering</option>"#));
    assert!(p.contains(r##"href="#lab-other""##));
}

#[test]
fn each_picture_has_its_own_pattern_and_the_markup_is_balanced() {
    let p = page();
    assert!(p.contains(r#"id="hatch-fig-lock-s4c-en""#) && p.contains(r#"id="hatch-fig-lock-s4c-vi""#));
    assert!(!p.contains(r#"id="hatch""#));
    let body = p.split("<body>").nth(1).unwrap().split("<script>").next().unwrap();
    assert_well_formed(body);
}
