//! The lab book in a real browser (headless Chromium through WebDriver, [`browser`]), as a
//! teacher uses it in class:
//!
//! - the book `ordlab book` builds from `results/records/` (every lab, no servers) at a laptop's
//!   1366×768 and a phone's 400×800: nothing scrolls sideways, the first load is under 3 MB and
//!   20 000 elements, every figure has a title and a caption, a figure with its controls and
//!   caption fits the laptop's screen, a link opens a lab and a step in Vietnamese and switching
//!   the language keeps it, one tab stop per figure, presenter mode, printing;
//! - a book of two labs run for real (`ordlab run lock baseline`): the table filters and
//!   sorts, the step control walks a run's events with the text report's words, in both
//!   languages;
//! - `ordlab serve`: a click runs a variant, its lines arrive before its verdict and the live
//!   run is drawn beside the saved one, a reload in the middle finds the run going on, "run N
//!   times" tallies with its interval, a second click gets its 409 in the page's language, a
//!   run is cancelled with its processes, an explored class is replayed.
//!
//! `ORDLAB_BOOK_PAGE=<index.html>` checks that page instead of building one (to see an older
//! page fail); `ORDLAB_SCREENSHOTS=<dir>` keeps the screenshots there. Without a browser the
//! tests say `NOT TESTED: …` and pass, except where one must be there (`CI` or
//! `ORDLAB_REQUIRE_BROWSER` set).

mod browser;

use super::support;
use browser::{browser_or_not_tested, js, reaches, screenshot_path, severe, until, viewport, Cdp, Driver, Log};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use ordlab::lang::Lang;
use ordlab::report::text::{self, TextOptions};
use ordlab::report::LabReport;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The first load's budget: bytes (the page and what it loads at once) and elements.
const FIRST_LOAD_BYTES: u64 = 3_000_000;
const FIRST_LOAD_ELEMENTS: u64 = 20_000;

/// The text report's timeline lines of a variant's run 1, without their `t=   N ms` stamps.
fn timeline_lines(report: &LabReport, variant: &str, lang: Lang) -> Vec<(i64, String)> {
    let text = text::render(report, &TextOptions { lang, ..Default::default() });
    let section = text.split(&format!("### {variant}:")).nth(1).expect("the variant's section");
    let section = section.split("\n### ").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("t="))
        .map(|l| {
            let (ms, line) = l.split_once(" ms  ").unwrap();
            (ms.trim().parse().unwrap(), line.to_string())
        })
        .collect()
}

/// The lab book of every lab in `results/records/` (and its explorations), as `ordlab book`
/// writes it, in `dir`; or the page `$ORDLAB_BOOK_PAGE` names.
fn book_of_results(dir: &Path) -> PathBuf {
    if let Some(page) = std::env::var_os("ORDLAB_BOOK_PAGE") {
        return PathBuf::from(page);
    }
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let reports: Vec<LabReport> = ordlab::report::record::load_all(&results)
        .expect("results/records/")
        .into_iter()
        .map(|r| r.expect("every record reads"))
        .collect();
    std::fs::create_dir_all(dir.join("explore")).unwrap();
    for e in std::fs::read_dir(results.join("explore")).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join("explore").join(e.file_name())).unwrap();
    }
    ordlab::report::files::write_book(dir, &reports).expect("the lab book is written")
}

/// The lock lab's saved record (its text report gives the steps' words).
fn saved_lock() -> LabReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/records/lock.json.gz");
    ordlab::report::record::load(&path).expect("results/records/lock.json.gz")
}

#[tokio::test(flavor = "current_thread")]
async fn the_lab_book_fits_a_class_on_a_laptop_and_a_phone() {
    let Some((chromium, chromedriver)) = browser_or_not_tested("lab book in a browser") else { return };
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let page = book_of_results(dir.path());
    let built = started.elapsed();
    let driver = Driver::start(&chromedriver);
    let c = driver.session(&chromium).await;
    let mut problems = Vec::new();
    for (w, h) in [(1366, 768), (400, 800)] {
        viewport(&c, w, h).await;
        for p in page_problems(&c, &page, w, h).await {
            problems.push(format!("{w}×{h}: {p}"));
        }
    }
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    problems.extend(severe(&log).into_iter().map(|m| format!("console: {m}")));
    c.close().await.unwrap();
    eprintln!(
        "the lab book of results/ checked in {:.1} s (built in {:.1} s)",
        started.elapsed().as_secs_f64(),
        built.as_secs_f64()
    );
    assert!(problems.is_empty(), "{} problems with {}:\n{}", problems.len(), page.display(), problems.join("\n"));
}

/// Everything a class needs of the page at `url`'s viewport, one line per problem.
async fn page_problems(c: &Client, page: &Path, w: u32, h: u32) -> Vec<String> {
    let url = format!("file://{}", page.display());
    let mut out = Vec::new();
    c.goto(&url).await.unwrap();
    until(c, "document.readyState === 'complete'", "the page loads", 60).await;
    out.extend(first_load(c, page).await);
    out.extend(no_sideways_scroll(c, "the summary").await);
    if w == 1366 {
        screenshot(c, "summary-1366x768.png").await;
    }
    out.extend(links_keep_the_language(c, &url, w, h).await);
    out.extend(every_figure_named(c).await);
    out.extend(one_tab_stop_per_figure(c).await);
    if w == 1366 {
        out.extend(presents_a_figure(c, &url).await);
        out.extend(prints(c).await);
    }
    out
}

async fn screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(screenshot_path(name), png).unwrap();
}

/// The page and what it loads at once: under the budget of bytes and elements.
async fn first_load(c: &Client, page: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let loaded = js(
        c,
        "return { elements: document.getElementsByTagName('*').length,
                  resources: performance.getEntriesByType('resource').map(e => e.name) }",
    )
    .await;
    let elements = loaded["elements"].as_u64().unwrap();
    let mut bytes = std::fs::metadata(page).unwrap().len();
    for r in loaded["resources"].as_array().unwrap() {
        let name = r.as_str().unwrap();
        match name.strip_prefix("file://") {
            Some(path) => bytes += std::fs::metadata(path).map_or(0, |m| m.len()),
            None => out.push(format!("the page requested {name}")),
        }
    }
    eprintln!("first load: {bytes} bytes, {elements} elements");
    if bytes > FIRST_LOAD_BYTES {
        out.push(format!("the first load is {bytes} bytes (at most {FIRST_LOAD_BYTES})"));
    }
    if elements > FIRST_LOAD_ELEMENTS {
        out.push(format!("the first load has {elements} elements (at most {FIRST_LOAD_ELEMENTS})"));
    }
    out
}

/// Nothing runs off the screen sideways: the page is no wider than the viewport.
async fn no_sideways_scroll(c: &Client, at: &str) -> Vec<String> {
    let sizes = js(
        c,
        "var d = document.documentElement, wide = [];
         if (d.scrollWidth > d.clientWidth) {
           var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT);
           while (walk.nextNode() && wide.length < 3) {
             var e = walk.currentNode;
             if (e.getBoundingClientRect().right > d.clientWidth + 1 && !e.closest('svg')) wide.push(e.tagName + '.' + e.className);
           }
         }
         return [d.scrollWidth, d.clientWidth, wide]",
    )
    .await;
    let (scroll, client) = (sizes[0].as_u64().unwrap(), sizes[1].as_u64().unwrap());
    if scroll > client {
        vec![format!("{at}: the page is {scroll} px wide in a {client} px viewport ({})", sizes[2])]
    } else {
        Vec::new()
    }
}

/// `#lab-lock?lang=vi` opens the lab in Vietnamese; switching the language keeps `#lab-lock`
/// and is remembered; `#lock-s4c/step-3?lang=vi` opens that figure at step 3 with the
/// Vietnamese text report's line, the figure, its controls and caption on one screen.
async fn links_keep_the_language(c: &Client, url: &str, w: u32, h: u32) -> Vec<String> {
    let mut out = Vec::new();
    c.goto(&format!("{url}#lab-lock?lang=vi")).await.unwrap();
    until(c, "document.readyState === 'complete'", "the page loads", 60).await;
    let at = js(c, "var s = document.getElementById('lab-lock'); return [document.documentElement.lang, s ? Math.round(s.getBoundingClientRect().top) : null]").await;
    if at[0] != "vi" {
        out.push(format!("#lab-lock?lang=vi opens in {:?}", at[0]));
    }
    if at[1].as_i64().is_none_or(|top| top.abs() > 2) {
        out.push(format!("#lab-lock?lang=vi does not show the lab at the top (its top at {})", at[1]));
    }
    let switch = |lang: &str| {
        format!("var b = document.querySelector('[data-set-lang={lang}]'); if (b) b.click(); return location.hash")
    };
    let hash = js(c, &switch("en")).await;
    if hash != "#lab-lock?lang=en" {
        out.push(format!("switching to EN made the link {hash}, not #lab-lock?lang=en"));
    }
    js(c, &switch("vi")).await;
    c.goto(url).await.unwrap();
    until(c, "document.readyState === 'complete'", "the page loads", 60).await;
    let remembered = js(c, "return document.documentElement.lang").await;
    if remembered != "vi" {
        out.push(format!("the language chosen is not remembered: opened again in {remembered}"));
    }
    js(c, &switch("en")).await;
    // A step of a figure, in Vietnamese.
    c.goto(&format!("{url}#lock-s4c/step-3?lang=vi")).await.unwrap();
    let fig = "document.getElementById('fig-lock-s4c')";
    let arrived = js(c, "return new Promise(r => { var t = Date.now(); (function w() { var f = document.getElementById('fig-lock-s4c'); if ((f && f.getAttribute('data-step-now') === '3') || Date.now() - t > 20000) r(!!f && f.getAttribute('data-step-now') === '3'); else setTimeout(w, 40); })(); })").await;
    if arrived != true {
        out.push("#lock-s4c/step-3?lang=vi does not open the figure at step 3".into());
        return out;
    }
    let expected = timeline_lines(&saved_lock(), "s4c", Lang::Vi);
    let caption = js(c, &format!("return {fig}.querySelector('.caption .ev').textContent")).await;
    if caption.as_str() != Some(expected[2].1.as_str()) {
        out.push(format!("step 3's caption is {caption}, not the Vietnamese text report's line {:?}", expected[2].1));
    }
    if w >= 1024 {
        let rect =
            js(c, &format!("var r = {fig}.getBoundingClientRect(); return [r.top, r.bottom, innerHeight]")).await;
        let (top, bottom, screen) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap(), rect[2].as_f64().unwrap());
        if top < -1.0 || bottom > screen + 1.0 {
            out.push(format!(
                "the figure with its controls and caption runs {top:.0}..{bottom:.0} px on a {screen:.0} px screen"
            ));
        }
        screenshot(c, "step-through-1366x768.png").await;
    } else {
        let _ = h;
        screenshot(c, "step-through-400x800.png").await;
    }
    out.extend(no_sideways_scroll(c, "a lab with its figures").await);
    js(c, &switch("en")).await;
    out
}

/// Every figure (every part loaded): a caption in the page's language, and its picture an
/// image with a title.
async fn every_figure_named(c: &Client) -> Vec<String> {
    let loaded = js(
        c,
        "if (!window.ordlabBook || !ordlabBook.needAll) return false; return ordlabBook.needAll().then(() => true)",
    )
    .await;
    let mut out = Vec::new();
    if loaded != true {
        out.push("the page cannot load its parts".into());
    }
    let unnamed = js(
        c,
        "var bad = [], n = 0;
         document.querySelectorAll('figure').forEach(f => {
           n++;
           var cap = f.querySelector('figcaption');
           var said = cap ? [...cap.querySelectorAll('[lang=' + document.documentElement.lang + ']')].map(s => s.textContent).join('') || cap.textContent : '';
           if (!said.trim()) bad.push(f.id + ': no caption');
           f.querySelectorAll('svg').forEach(s => {
             if (s.parentElement.closest('svg')) return;
             var t = s.querySelector(':scope > title');
             if (s.getAttribute('role') !== 'img' || !t || !t.textContent.trim()) bad.push(f.id + ': a picture without role=img and a title');
           });
           if (!f.querySelector('svg')) bad.push(f.id + ': no picture');
         });
         return [n, bad.slice(0, 10), bad.length, document.getElementsByTagName('*').length];",
    )
    .await;
    eprintln!("{} figures; {} elements with every part loaded", unnamed[0], unnamed[3]);
    if unnamed[0].as_u64().unwrap_or(0) < 100 {
        out.push(format!("only {} figures", unnamed[0]));
    }
    if unnamed[2].as_u64().unwrap_or(0) > 0 {
        out.push(format!("{} figures without a title or caption: {}", unnamed[2], unnamed[1]));
    }
    out.extend(no_sideways_scroll(c, "every lab loaded").await);
    out
}

/// Tab goes from figure to figure (a figure is one tab stop, its marks and buttons none), and
/// the first tab stop skips to the labs.
async fn one_tab_stop_per_figure(c: &Client) -> Vec<String> {
    let stops = js(
        c,
        "var f = document.getElementById('fig-lock-s4c');
         var inside = f ? [...f.querySelectorAll('*')].filter(e => e.tabIndex >= 0 && !e.disabled && e.checkVisibility()).length : -1;
         var first = [...document.body.querySelectorAll('a[href], button, input, select, [tabindex]')].find(e => e.tabIndex >= 0);
         return [f ? f.tabIndex : null, inside, first ? first.className + ' ' + first.getAttribute('href') : null,
                 document.querySelectorAll('svg [tabindex]').length];",
    )
    .await;
    let mut out = Vec::new();
    if stops[0] != 0 || stops[1] != 0 {
        out.push(format!(
            "lock s4c's figure: tabindex {} with {} tab stops inside it (one for the figure, none inside)",
            stops[0], stops[1]
        ));
    }
    if stops[3] != 0 {
        out.push(format!("{} marks of the pictures are tab stops", stops[3]));
    }
    if !stops[2].as_str().is_some_and(|s| s.starts_with("skip")) {
        out.push(format!("the first tab stop is {} (a skip link should be)", stops[2]));
    }
    out
}

/// P on a figure shows it alone on the whole screen in large type; → steps it; Escape ends.
async fn presents_a_figure(c: &Client, url: &str) -> Vec<String> {
    let mut out = Vec::new();
    c.goto(&format!("{url}#lock-s4c/step-2?lang=en")).await.unwrap();
    let ready = "document.getElementById('fig-lock-s4c') && document.getElementById('fig-lock-s4c').getAttribute('data-step-now') === '2'";
    if !reaches(c, ready, 30).await {
        return vec!["#lock-s4c/step-2 does not open lock s4c's figure at step 2".into()];
    }
    js(c, "document.getElementById('fig-lock-s4c').focus()").await;
    c.active_element().await.unwrap().send_keys("p").await.unwrap();
    if !reaches(c, "document.querySelector('figure.presented')", 10).await {
        return vec!["P on a figure does not present it".into()];
    }
    let shown = js(
        c,
        "var f = document.querySelector('figure.presented'), r = f.getBoundingClientRect();
         return [Math.round(r.left), Math.round(r.top), Math.round(r.width) === innerWidth, Math.round(r.height) === innerHeight,
                 parseFloat(getComputedStyle(f.querySelector('.caption')).fontSize), f.querySelector('.fig svg').getBoundingClientRect().height / innerHeight]",
    )
    .await;
    if shown[0] != 0 || shown[1] != 0 || shown[2] != true || shown[3] != true {
        out.push(format!("a presented figure does not fill the screen: {shown}"));
    }
    if shown[4].as_f64().unwrap_or(0.0) < 22.0 || shown[5].as_f64().unwrap_or(0.0) < 0.6 {
        out.push(format!(
            "a presented figure's type or picture is small: caption {} px, picture {:.0} % of the screen",
            shown[4],
            shown[5].as_f64().unwrap_or(0.0) * 100.0
        ));
    }
    c.active_element().await.unwrap().send_keys(&Key::Right.to_string()).await.unwrap();
    let stepped = js(c, "return document.getElementById('fig-lock-s4c').getAttribute('data-step-now')").await;
    if stepped != "3" {
        out.push(format!("→ in presenter mode went to step {stepped}, not 3"));
    }
    screenshot(c, "presenter-1366x768.png").await;
    // On a projector's short screen too, the controls and words never cover the picture.
    for (w, h) in [(1366, 768), (800, 540)] {
        viewport(c, w, h).await;
        if let Some(covered) = presented_picture_covered(c).await {
            out.push(format!("presenting at {w}×{h}: {covered}"));
        }
    }
    screenshot(c, "presenter-800x540.png").await;
    viewport(c, 1366, 768).await;
    c.active_element().await.unwrap().send_keys(&Key::Escape.to_string()).await.unwrap();
    if js(c, "return !!document.querySelector('figure.presented')").await != false {
        out.push("Escape does not end presenting".into());
    }
    out
}

/// Where the presented figure's picture runs under its stepper or off the screen, what does.
async fn presented_picture_covered(c: &Client) -> Option<String> {
    let r = js(
        c,
        "var f = document.querySelector('figure.presented');
         var svg = Array.from(f.querySelectorAll('.fig svg')).find(function (s) { return s.getBoundingClientRect().height > 0; });
         var p = svg.getBoundingClientRect(), s = f.querySelector('.stepper').getBoundingClientRect();
         return [Math.round(p.bottom), Math.round(s.top), innerHeight, Math.round(p.height)];",
    )
    .await;
    let n = |i: usize| r[i].as_f64().unwrap_or(f64::NAN);
    if n(0) > n(1) + 1.0 || n(0) > n(2) {
        Some(format!("the picture ends at y={} but the stepper starts at y={} (screen {} px high)", r[0], r[1], r[2]))
    } else if n(3) < 0.35 * n(2) {
        Some(format!("the picture is {} px high of {} px", r[3], r[2]))
    } else {
        None
    }
}

/// Printing: no controls, every step of a figure shown, no figure split across pages; a lab
/// per page when asked; one lab alone as slides.
async fn prints(c: &Client) -> Vec<String> {
    let mut out = Vec::new();
    if js(c, "return !!(window.ordlabBook && ordlabBook.preparePrint)").await != true {
        return vec!["no print of all labs, one lab, or slides".into()];
    }
    js(c, "return ordlabBook.preparePrint('all').then(() => true)").await;
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "print" }))).await.unwrap();
    let printed = js(
        c,
        "var shown = s => getComputedStyle(document.querySelector(s)).display;
         var labs = [...document.querySelectorAll('section.lab')];
         var figs = [...document.querySelectorAll('figure')];
         return [['.stepper', '.filters', '.langs'].map(shown),
                 labs.filter(s => getComputedStyle(s).breakBefore === 'page').length, labs.length,
                 figs.filter(f => getComputedStyle(f).breakInside !== 'avoid').length,
                 document.querySelectorAll('svg [data-step].future').length ? getComputedStyle(document.querySelector('svg [data-step].future')).opacity : '1']",
    )
    .await;
    if printed[0] != json!(["none", "none", "none"]) {
        out.push(format!("printed controls show: {}", printed[0]));
    }
    if printed[1] != printed[2] {
        out.push(format!("one lab per page asked, {} of {} labs start a page", printed[1], printed[2]));
    }
    if printed[3] != 0 {
        out.push(format!("{} figures may be split across pages", printed[3]));
    }
    if printed[4] != "1" {
        out.push("a printed figure hides some of its steps".into());
    }
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "" }))).await.unwrap();
    js(c, "return ordlabBook.preparePrint('slides', document.getElementById('lab-lock')).then(() => true)").await;
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "print" }))).await.unwrap();
    let slides = js(
        c,
        "var shown = e => e.checkVisibility();
         return [[...document.querySelectorAll('section.lab')].filter(shown).map(s => s.id),
                 [...document.querySelectorAll('#lab-lock figure')].filter(f => getComputedStyle(f).breakBefore !== 'page').length]",
    )
    .await;
    if slides[0] != json!(["lab-lock"]) || slides[1] != 0 {
        out.push(format!("lock as slides prints {} with {} figures not on a page of their own", slides[0], slides[1]));
    }
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "" }))).await.unwrap();
    js(c, "ordlabBook.endPrint()").await;
    out
}

/// Two labs for real, small: lock (its three variants race: they run alone) and baseline.
fn write_results(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::ordlab(tmp.path())
        .args([
            "run",
            "lock",
            "baseline",
            "--runs",
            "2",
            "--time-scale",
            "0.25",
            "--seed",
            "7",
            "--quiet",
            "--jobs",
            "2",
        ])
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "ordlab run failed: {stderr}");
    for name in
        ["index.html", "book/lock.js", "book/lock.html", "lock-s4c.svg", "lock-s4c.png", "baseline.png", "SUMMARY.md"]
    {
        assert!(dir.join(name).is_file(), "{name} missing; stderr: {stderr}");
    }
}

fn saved(dir: &Path, lab: &str) -> LabReport {
    let path =
        ["json", "json.gz"].iter().map(|x| dir.join(format!("{lab}.{x}"))).find(|p| p.is_file()).expect("saved run");
    ordlab::report::json::load(&path).expect("a saved report")
}

#[tokio::test(flavor = "current_thread")]
async fn the_lab_book_works_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_or_not_tested("lab book in a browser") else { return };
    let results = tempfile::tempdir().unwrap();
    write_results(results.path());
    let driver = Driver::start(&chromedriver);
    let c = driver.session(&chromium).await;
    viewport(&c, 1366, 768).await;
    let url = format!("file://{}", results.path().join("index.html").display());
    c.goto(&url).await.unwrap();
    until(&c, "document.readyState === 'complete'", "the page loads", 30).await;
    loads_cleanly(&c, &url).await;
    shows_every_lab(&c).await;
    filters_and_sorts(&c).await;
    let lock = saved(results.path(), "lock");
    steps_through_a_run(&c, &lock).await;
    switches_language(&c, &lock).await;
    screenshot_shows_the_timeline(&c).await;
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "no console error while using the page");
    c.close().await.unwrap();
}

/// No console error; nothing requested but the page's own parts, beside it.
async fn loads_cleanly(c: &Client, url: &str) {
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "console errors or warnings on load");
    let dir = url.rsplit_once('/').unwrap().0;
    let perf = c.issue_cmd(Log("performance")).await.unwrap();
    let requests: Vec<String> = perf
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
        .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
        .map(|m| m["message"]["params"].clone())
        .filter(|p| p["documentURL"] == url)
        .map(|p| p["request"]["url"].as_str().unwrap_or_default().to_string())
        .filter(|u| u != url && !u.starts_with(&format!("{dir}/book/")))
        .collect();
    assert_eq!(requests, Vec::<String>::new(), "the page requested something not its own");
}

async fn shows_every_lab(c: &Client) {
    let labs = js(c, "return Array.from(document.querySelectorAll('section.lab')).map(s => s.id)").await;
    assert_eq!(labs, json!(["lab-baseline", "lab-lock"]));
    let rows = js(c, "return document.querySelectorAll('table.summary tbody tr').length").await;
    assert_eq!(rows, 4, "baseline + s4a s4b s4c");
    let figures = js(c, "return document.querySelectorAll('figure.timeline').length").await;
    assert_eq!(figures, 4);
}

async fn filters_and_sorts(c: &Client) {
    let visible = "return Array.from(document.querySelectorAll('table.summary tbody tr')).filter(r => !r.hidden).map(r => r.dataset.lab + '/' + r.cells[1].textContent)";
    let choose = |id: &str, value: &str| {
        format!("var s = document.getElementById('{id}'); s.value = {value}; s.dispatchEvent(new Event('change'))")
    };
    // s4c's strategy (a 500 ms lock TTL) is its own: filtered to it, one row is left.
    let strategy =
        js(c, "return document.querySelector('a[href=\"#v-lock-s4c\"]').closest('tr').dataset.strategy").await;
    js(c, &choose("f-strategy", &strategy.to_string())).await;
    assert_eq!(js(c, visible).await, json!(["lock/s4c"]), "filtered to s4c's strategy {strategy}");
    js(c, &choose("f-strategy", "''")).await;
    // A family keeps exactly the rows of its labs.
    let family = js(c, "return document.querySelector('#lab-lock').dataset.family").await;
    js(c, &choose("f-family", &family.to_string())).await;
    let expected = js(c, &format!("return Array.from(document.querySelectorAll('table.summary tbody tr')).filter(r => r.dataset.family === {family}).map(r => r.dataset.lab + '/' + r.cells[1].textContent)")).await;
    assert_eq!(js(c, visible).await, expected);
    js(c, &choose("f-family", "''")).await;
    assert_eq!(js(c, visible).await.as_array().unwrap().len(), 4);
    // Sort by wrong (5th column), ascending: the fractions come out in order.
    c.find(Locator::Css("table.summary th:nth-child(5)")).await.unwrap().click().await.unwrap();
    let fractions = js(c, "return Array.from(document.querySelectorAll('table.summary tbody tr')).map(r => parseFloat(r.cells[4].dataset.v))").await;
    let f: Vec<f64> = fractions.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(f.windows(2).all(|w| w[0] <= w[1]), "sorted ascending: {f:?}");
    assert_eq!(
        js(c, "return document.querySelector('table.summary th:nth-child(5)').getAttribute('aria-sort')").await,
        "ascending"
    );
}

/// Walk s4c's run 1 from the first step to the last: each caption is the text report's line.
async fn steps_through_a_run(c: &Client, lock: &LabReport) {
    let expected = timeline_lines(lock, "s4c", Lang::En);
    assert!(expected.len() >= 6, "s4c's timeline: {expected:?}");
    js(c, "document.getElementById('fig-lock-s4c').scrollIntoView()").await;
    let fig = c.find(Locator::Css("#fig-lock-s4c")).await.unwrap();
    let n: usize = fig.attr("data-steps").await.unwrap().unwrap().parse().unwrap();
    assert_eq!(n, expected.len());
    // The first click loads the figure's part if need be, then steps.
    fig.find(Locator::Css("[data-act=first]")).await.unwrap().click().await.unwrap();
    until(c, "document.getElementById('fig-lock-s4c').getAttribute('data-step-now') === '1'", "step 1", 20).await;
    let mut hidden_before = usize::MAX;
    for (i, (ms, line)) in expected.iter().enumerate() {
        let caption = fig.find(Locator::Css(".caption .ev")).await.unwrap().text().await.unwrap();
        let t = fig.find(Locator::Css(".caption .t")).await.unwrap().text().await.unwrap();
        assert_eq!(&caption, line, "step {}", i + 1);
        assert_eq!(t, format!("t = {ms} ms"), "step {}", i + 1);
        let state = js(
            c,
            &format!(
                "var f = document.querySelectorAll('#fig-lock-s4c .fig[lang=en] [data-step]');
             return [Array.from(f).filter(e => e.classList.contains('future')).length,
                     Array.from(f).filter(e => !e.classList.contains('future') && +e.dataset.step > {}).length]",
                i + 1
            ),
        )
        .await;
        let (hidden, shown_too_early) = (state[0].as_u64().unwrap() as usize, state[1].as_u64().unwrap());
        assert_eq!(shown_too_early, 0, "step {}: nothing of a later step is shown", i + 1);
        assert!(hidden <= hidden_before, "step {}: stepping forward hides nothing again", i + 1);
        assert!(i > 0 || hidden > 0, "the first step leaves later events faded");
        hidden_before = hidden;
        if i + 1 < n {
            fig.find(Locator::Css("[data-act=next]")).await.unwrap().click().await.unwrap();
        }
    }
    assert_eq!(hidden_before, 0, "the last step shows everything");
    // The arrow keys step a focused figure.
    js(c, "document.getElementById('fig-lock-s4c').focus()").await;
    c.active_element().await.unwrap().send_keys(&Key::Home.to_string()).await.unwrap();
    c.active_element().await.unwrap().send_keys(&Key::Right.to_string()).await.unwrap();
    assert_eq!(js(c, "return document.getElementById('fig-lock-s4c').getAttribute('data-step-now')").await, "2");
    // Hovering a mark shows its line (the caption of its step, with the entry ID).
    let hovered = js(c, "var m = document.querySelector('#fig-lock-s4c .fig[lang=en] .mark.received'); m.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); return m.dataset.step").await;
    let step: usize = hovered.as_str().unwrap().parse().unwrap();
    let detail = fig.find(Locator::Css(".detail .ev")).await.unwrap().text().await.unwrap();
    assert_eq!(detail, expected[step - 1].1);
    assert!(detail.contains("received") && detail.contains('-'), "entry ID in {detail}");
}

/// After the switch, every visible text is Vietnamese (or language-neutral), and the steps
/// are the Vietnamese text report's lines.
async fn switches_language(c: &Client, lock: &LabReport) {
    const WRONG_LANGUAGE: &str = r#"
        var cur = document.documentElement.getAttribute('data-lang'), bad = [];
        var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        while (walk.nextNode()) {
            var n = walk.currentNode, el = n.parentElement;
            if (!/\p{L}/u.test(n.textContent) || el.closest('script, style, title')) continue;
            if (!el.checkVisibility()) continue;
            if (el.closest('[translate=no]')) continue;
            var tagged = el.closest('body [lang]');
            if (!tagged || tagged.getAttribute('lang') !== cur) bad.push(n.textContent.trim().slice(0, 80));
        }
        return bad.slice(0, 20);"#;
    // A filter's "all" is an <option>, whose text the tree walk above does not see as shown.
    const ALL_OPTIONS: &str = "return [...document.querySelectorAll('select option[value=\"\"]')].map(o => o.text)";
    assert_eq!(js(c, WRONG_LANGUAGE).await, json!([]), "English page: every visible text in English");
    assert_eq!(js(c, ALL_OPTIONS).await, json!(["all", "all"]), "English filters");
    c.find(Locator::Css("[data-set-lang=vi]")).await.unwrap().click().await.unwrap();
    assert_eq!(js(c, "return document.documentElement.lang").await, "vi");
    assert_eq!(js(c, WRONG_LANGUAGE).await, json!([]), "Vietnamese page: every visible text in Vietnamese");
    assert_eq!(js(c, ALL_OPTIONS).await, json!(["tất cả", "tất cả"]), "Vietnamese filters");
    assert_eq!(
        js(c, "return document.querySelector('#fig-lock-s4c input[type=range]').getAttribute('aria-label')").await,
        "bước của lock s4c",
        "the slider's name in Vietnamese"
    );
    let expected = timeline_lines(lock, "s4c", Lang::Vi);
    let fig = c.find(Locator::Css("#fig-lock-s4c")).await.unwrap();
    fig.find(Locator::Css("[data-act=first]")).await.unwrap().click().await.unwrap();
    for (i, (_, line)) in expected.iter().enumerate() {
        let caption = fig.find(Locator::Css(".caption .ev")).await.unwrap().text().await.unwrap();
        assert_eq!(&caption, line, "vi step {}", i + 1);
        fig.find(Locator::Css("[data-act=next]")).await.unwrap().click().await.unwrap();
    }
    let url = c.current_url().await.unwrap();
    c.goto(url.as_str()).await.unwrap();
    until(c, "document.readyState === 'complete'", "the page loads again", 30).await;
    assert_eq!(js(c, "return document.documentElement.dataset.lang").await, "vi", "opened again in Vietnamese");
    c.find(Locator::Css("[data-set-lang=en]")).await.unwrap().click().await.unwrap();
}

/// The s4c figure half-way through, as a PNG: a real picture, kept for a human.
async fn screenshot_shows_the_timeline(c: &Client) {
    js(c, "document.getElementById('fig-lock-s4c').scrollIntoView()").await;
    let fig = c.find(Locator::Css("#fig-lock-s4c")).await.unwrap();
    fig.find(Locator::Css("[data-act=first]")).await.unwrap().click().await.unwrap();
    for _ in 0..4 {
        fig.find(Locator::Css("[data-act=next]")).await.unwrap().click().await.unwrap();
    }
    let png = fig.find(Locator::Css(".figs")).await.unwrap().screenshot().await.unwrap();
    let target = screenshot_path("lab-book-s4c.png");
    std::fs::write(&target, &png).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(info.width >= 700, "a figure as wide as the page: {}", info.width);
    let channels = info.color_type.samples();
    let pixels = buf[..info.line_size * info.height as usize].chunks(channels);
    // Drawn: dark enough to be ink (text, axes, marks); handler bars: the blue of handler work,
    // which a blank or text-only figure lacks. Half-way through, the later steps are faded, so
    // how much is drawn depends on the run's timing: the bounds are a tenth of what is seen.
    let ink = |p: &[u8]| p[..3].iter().any(|v| *v < 200);
    let bar = |p: &[u8]| i32::from(p[2]) - i32::from(p[0]) > 40 && p[2] < 230;
    let (coloured, blue, total) =
        pixels.fold((0, 0, 0), |(c, b, t), p| (c + usize::from(ink(p)), b + usize::from(bar(p)), t + 1));
    assert!(coloured * 100 > total, "more than 1 % of the picture is drawn: {coloured}/{total} ({})", target.display());
    assert!(blue > 300, "a handler's bar is drawn: {blue} blue pixels ({})", target.display());
}

/// Read the page's run box of `lab`/`variant`.
/// A click on baseline's "run again" button.
async fn click_run_baseline(c: &Client) {
    let button = ".live[data-lab=baseline][data-variant=baseline] button.run";
    c.find(Locator::Css(button)).await.unwrap().click().await.unwrap();
}

fn run_box(lab: &str, variant: &str) -> String {
    format!("document.querySelector('.live[data-lab=\"{lab}\"][data-variant=\"{variant}\"]:not([data-schedule])')")
}

/// `ordlab serve` in the browser: a click on baseline's run button runs it on this machine's
/// servers (time scale 3: its slow job takes 2.4 s); each timeline line is stamped by the page
/// when it arrives, and the first comes more than a second before the verdict, so a server
/// that answered only at the end fails; the live run is drawn as it goes, beside the saved
/// one; a reload in the middle finds the run going on, its lines so far and the rest; a
/// second click gets its 409 in the page's language; "× 2" tallies two runs with their
/// interval; cancel stops a run and its processes; `--lang vi` opens the page in Vietnamese.
#[tokio::test(flavor = "current_thread")]
async fn serve_runs_a_variant_live_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_or_not_tested("ordlab serve in a browser") else { return };
    let started = Instant::now();
    let results = tempfile::tempdir().unwrap();
    support::write_baseline_record(results.path());
    // The exploration results/ keeps (`scripts/explore-all.sh`): its classes get replay buttons.
    let saved = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/explore/explore-baseline-baseline.json.gz");
    std::fs::create_dir(results.path().join("explore")).unwrap();
    std::fs::copy(&saved, results.path().join("explore/explore-baseline-baseline.json.gz")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let served = support::Served::start(results.path(), tmp.path(), &["--time-scale", "3"]);
    let driver = Driver::start(&chromedriver);
    let c = driver.session(&chromium).await;
    viewport(&c, 1366, 768).await;
    let page = format!("http://127.0.0.1:{}/", served.port);
    c.goto(&page).await.unwrap();
    let base = run_box("baseline", "baseline");
    until(&c, &base, "baseline's run box", 20).await;
    let button = c.find(Locator::Css(".live[data-lab=baseline][data-variant=baseline] button.run")).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ run again on this machine");
    button.click().await.unwrap();
    // The live run is drawn while it goes on, before its verdict, beside the saved picture.
    until(&c, &format!("{base}.querySelector('.live-fig[data-done=false] svg')"), "the live run drawn", 60).await;
    let drawn = js(&c, &format!("var b = {base}; return [!b.querySelector('.live-verdict[data-arrived]'), b.querySelector('.live-fig .fig[lang=en] svg title').textContent, !!b.closest('article').querySelector('figure.timeline')]")).await;
    assert_eq!(drawn[0], true, "drawn before the verdict");
    assert!(drawn[1].as_str().unwrap().contains("baseline / baseline — live"), "{drawn}");
    assert_eq!(drawn[2], true, "the saved figure is in the same article");
    // For a human: the saved run and the live one side by side, once the live one has its
    // first jobs received (or it is over).
    let received = format!("{base}.querySelector('.live-fig .fig[lang=en] svg').textContent.includes('received')");
    until(&c, &received, "the live run's first jobs drawn", 60).await;
    js(&c, "document.querySelector('#v-baseline-baseline figure.timeline').scrollIntoView()").await;
    let beside = js(&c, &format!("var a = document.querySelector('#v-baseline-baseline figure.timeline .figs').getBoundingClientRect(), b = {base}.querySelector('.live-fig').getBoundingClientRect(); return [a.right <= b.left, a.bottom < innerHeight, b.bottom < innerHeight]")).await;
    assert_eq!(beside, json!([true, true, true]), "the saved and the live picture side by side, on one screen");
    screenshot(&c, "serve-live-run-1366x768.png").await;
    // A reload in the middle of the run finds it: its lines so far, then the rest.
    c.refresh().await.unwrap();
    until(
        &c,
        &format!("{base} && {base}.getAttribute('data-running') === '1'"),
        "the running run found after a reload",
        20,
    )
    .await;
    let found = js(&c, &format!("var b = {base}; return [b.querySelectorAll('ol.live-events > li').length, b.querySelector('button.run').disabled, b.querySelector('.elapsed').textContent]")).await;
    assert!(found[0].as_u64().unwrap() >= 1, "the lines so far after a reload: {found}");
    assert_eq!(found[1], true, "the buttons wait while it runs");
    assert!(found[2].as_str().unwrap().contains(':'), "elapsed time shown: {found}");
    // A second click, in Vietnamese: the 409 in Vietnamese.
    c.find(Locator::Css("[data-set-lang=vi]")).await.unwrap().click().await.unwrap();
    let busy = js(&c, "return fetch('run', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'x-ordlab-token': document.querySelector('meta[name=ordlab-token]').content }, body: 'lab=baseline&variant=baseline' }).then(r => r.json().then(j => [r.status, j.vi]))").await;
    assert_eq!(busy[0], 409, "{busy}");
    assert!(busy[1].as_str().unwrap().starts_with("đang có một lần chạy (baseline/baseline)"), "{busy}");
    // The browser logs that refusal, as it logs every 409: that one, and nothing else so far.
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert!(severe(&log).iter().all(|m| m.contains("409 (Conflict)")), "{:?}", severe(&log));
    c.find(Locator::Css("[data-set-lang=en]")).await.unwrap().click().await.unwrap();
    until(&c, &format!("{base}.querySelector('.live-verdict[data-arrived]')"), "the verdict", 120).await;
    let live = js(
        &c,
        &format!(
            "var box = {base};
             return {{ lines: [...box.querySelectorAll('ol.live-events > li')].map(li =>
                        [+li.dataset.seq, li.querySelector('[lang=en]').textContent]),
                      shown: box.querySelector('.live-verdict pre[lang=en]').innerText,
                      done: box.querySelector('.live-fig').getAttribute('data-done') }};"
        ),
    )
    .await;
    let lines = live["lines"].as_array().unwrap();
    let texts: Vec<&str> = lines.iter().map(|l| l[1].as_str().unwrap()).collect();
    let seqs: Vec<u64> = lines.iter().map(|l| l[0].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>(), "every line, in order: {texts:?}");
    for words in ["C2 received", "C1 received", "wrote status=paid → UPDATE 1", "wrote status=created → UPDATE 1"] {
        assert!(texts.iter().any(|t| t.contains(words)), "{words:?} among {texts:?}");
    }
    let shown = live["shown"].as_str().unwrap();
    assert!(shown.contains("wrong final state (not paid): 1/1 runs") && shown.contains("→ matches"), "{shown}");
    assert_eq!(live["done"], "true", "the finished run drawn whole");
    first_line_before_verdict(&c).await;
    runs_twice_with_a_tally(&c).await;
    cancels_a_run(&c, &served).await;
    replays_an_explored_class(&c).await;
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "no console error while a run streams in");
    let in_vietnamese = support::Served::start(results.path(), tmp.path(), &["--lang", "vi"]);
    c.goto(&format!("http://127.0.0.1:{}/", in_vietnamese.port)).await.unwrap();
    assert_eq!(js(&c, "return document.documentElement.dataset.lang").await, "vi", "--lang vi");
    let button = c.find(Locator::Css(".live[data-lab=baseline][data-variant=baseline] button.run")).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ chạy lại trên máy này");
    c.close().await.unwrap();
    for s in [served, in_vietnamese] {
        let (code, stderr) = s.interrupt();
        assert_eq!(code, Some(130), "{stderr}");
        assert!(!stderr.contains("refused"), "{stderr}");
    }
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
    eprintln!("serve in the browser: {:.1} s", started.elapsed().as_secs_f64());
}

/// A run's first line arrives more than a second before its verdict (time scale 3): the lines
/// stream, they are not sent at the end.
async fn first_line_before_verdict(c: &Client) {
    let base = run_box("baseline", "baseline");
    click_run_baseline(c).await;
    until(c, &format!("{base}.getAttribute('data-running') === '1'"), "a second run starts", 20).await;
    until(c, &format!("{base}.querySelector('.live-verdict[data-arrived]')"), "its verdict", 120).await;
    let t = js(c, &format!("var b = {base}; return [+b.querySelector('ol.live-events > li').dataset.arrived, +b.querySelector('.live-verdict').dataset.arrived]")).await;
    let (first, verdict) = (t[0].as_f64().unwrap(), t[1].as_f64().unwrap());
    assert!(first + 1000.0 <= verdict, "the first line arrived {:.0} ms before the verdict", verdict - first);
}

/// "× 2": each run's verdict with the tally so far and its 95 % interval.
async fn runs_twice_with_a_tally(c: &Client) {
    let base = run_box("baseline", "baseline");
    js(c, &format!("var s = {base}.querySelector('select'); s.value = '2'; return s.value")).await;
    click_run_baseline(c).await;
    until(
        c,
        &format!("{base}.querySelector('.live-verdict[data-arrived]') && {base}.getAttribute('data-runs') === '2'"),
        "two runs' verdict",
        240,
    )
    .await;
    let tally = js(c, &format!("var b = {base}; return [b.querySelectorAll('ol.live-runs > li').length, b.querySelector('.tally [lang=en]').textContent, b.querySelector('.live-verdict pre[lang=en]').innerText]")).await;
    assert_eq!(tally[0], 2, "a mark per run: {tally}");
    assert!(
        tally[1].as_str().unwrap().starts_with("run 2 of 2: ✕ wrong · so far 2 of 2 wrong (95 % interval"),
        "{tally}"
    );
    assert!(tally[2].as_str().unwrap().contains("2/2 runs"), "{tally}");
    js(c, &format!("var s = {base}.querySelector('select'); s.value = '1'")).await;
}

/// Cancel: the run stops with its processes; the buttons are free again.
async fn cancels_a_run(c: &Client, served: &support::Served) {
    let base = run_box("baseline", "baseline");
    click_run_baseline(c).await;
    // This run's lines (the box is cleared when it starts), and its processes.
    let under_way = format!(
        "{base}.getAttribute('data-running') === '1' && {base}.querySelectorAll('ol.live-events > li').length >= 1"
    );
    until(c, &under_way, "a run under way", 60).await;
    assert!(support::eventually(10, || support::is_role_running(served.child.id())), "its consumers run");
    c.find(Locator::Css(".live[data-lab=baseline][data-variant=baseline] button.cancel"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(c, &format!("{base}.getAttribute('data-ended') === 'cancelled'"), "the run cancelled", 30).await;
    assert!(support::eventually(10, || !support::is_role_running(served.child.id())), "its processes stopped");
    until(c, &format!("!{base}.querySelector('button.run').disabled"), "the button free again", 10).await;
}

/// A wrong class of baseline's saved exploration, replayed from its square: the page shows its
/// steps' lines as the replay records them and the verdict, the one the exploration found, and
/// nothing said of sampled runs (no interval, no expectation).
async fn replays_an_explored_class(c: &Client) {
    let open = "var d = document.querySelector('article.exploration[data-lab=baseline] details.open-classes'); d.open = true; d.dispatchEvent(new Event('toggle')); return true";
    js(c, open).await;
    until(
        c,
        "document.querySelector('article.exploration[data-lab=baseline] details.class.wrong')",
        "the classes loaded",
        20,
    )
    .await;
    let pick = "var d = document.querySelector('article.exploration[data-lab=baseline] details.class.wrong');
                d.open = true; d.scrollIntoView(); return d.querySelector('summary').title;";
    let schedule = js(c, pick).await.as_str().expect("a wrong class of baseline").to_string();
    let box_css = "article.exploration[data-lab=baseline] details.class.wrong[open] .live";
    until(c, &format!("document.querySelector('{box_css} button.run')"), "the replay button", 10).await;
    let button = c.find(Locator::Css(&format!("{box_css} button.run"))).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ replay this schedule on this machine");
    button.click().await.unwrap();
    until(c, &format!("document.querySelector('{box_css} .live-verdict[data-arrived]')"), "the replay's verdict", 60)
        .await;
    let got = js(
        c,
        &format!(
            "var box = document.querySelector('{box_css}');
             return {{ lines: [...box.querySelectorAll('ol.live-events > li [lang=en]')].map(s => s.textContent),
                      kind: box.querySelector('.live-verdict').className,
                      shown: box.querySelector('.live-verdict pre[lang=en]').innerText }};"
        ),
    )
    .await;
    let shown = got["shown"].as_str().unwrap();
    assert!(got["kind"].as_str().unwrap().contains("matched"), "{got}");
    assert!(shown.starts_with(&format!("schedule {schedule}: wrong, as explored")), "{shown}");
    assert!(shown.contains("wrong final state (not paid)"), "{shown}");
    assert!(!shown.contains("95 % interval") && !shown.contains("expected wrong"), "a replay is no sample: {shown}");
    let lines: Vec<&str> = got["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(lines.iter().any(|l| l.contains("wrote status=created")), "the replay's lines: {lines:?}");
}
