//! The lab book in a real browser: `ordlab run … --out DIR` writes DIR/index.html, and headless
//! Chromium (Debian's `chromium` + `chromium-driver`, driven through WebDriver by fantoccini)
//! opens it from disk and checks what a teacher relies on: no console error and no network
//! request, every lab there, the table filters and sorts, the step control walks a run's
//! events in order with the text report's words, the language switch changes every label,
//! printing gives a lab per page, and a screenshot shows the timeline.
//!
//! `ordlab serve` is tested there too: a click on a variant's run button, the run's lines
//! arriving before its verdict, the verdict, both languages.
//!
//! Without a browser the test says `NOT TESTED: lab book in a browser (…)` and passes, except
//! where one must be there (`CI` or `ORDLAB_REQUIRE_BROWSER` set): then it fails.

use super::support;
use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use ordlab::lang::Lang;
use ordlab::report::text::{self, TextOptions};
use ordlab::report::LabReport;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser and its driver, or why they are not here.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let find = |name: &str| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()))
    };
    let chromium = Path::new(CHROMIUM).is_file().then(|| PathBuf::from(CHROMIUM)).or_else(|| find("chromium"));
    match (chromium, find("chromedriver")) {
        (Some(c), Some(d)) => Ok((c, d)),
        (None, _) => Err("no chromium: `just setup --browser` or apt-get install chromium chromium-driver".into()),
        (_, None) => Err("no chromedriver: apt-get install chromium-driver".into()),
    }
}

/// chromedriver in its own process group on a free port; the group (driver and browser) is
/// killed and reaped when this drops, whatever happened.
struct Driver {
    child: std::process::Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Driver {
    fn start(driver: &Path) -> Driver {
        use std::os::unix::process::CommandExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        Driver { child, port, profile: tempfile::tempdir().unwrap() }
    }

    async fn session(&self, chromium: &Path) -> Client {
        let mut caps = Capabilities::new();
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
            "--window-size=1400,1000",
            // An accidental request to anywhere fails at once, and shows in the logs; only
            // loopback (`ordlab serve`) answers.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", self.profile.path().display()));
        caps.insert("goog:chromeOptions".into(), json!({ "binary": chromium, "args": args }));
        caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL", "performance": "ALL" }));
        let start = Instant::now();
        loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{}", self.port))
                .await
            {
                Ok(c) => return c,
                // chromedriver is still binding its port: it answers within a second or two.
                Err(_) if start.elapsed() < Duration::from_secs(30) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("no WebDriver session with {}: {e}", chromium.display()),
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// `POST /session/{id}/se/log`: drain one of chromedriver's log buffers.
#[derive(Debug)]
struct Log(&'static str);

impl WebDriverCompatibleCommand for Log {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "type": self.0 }).to_string()))
    }
}

/// A Chrome DevTools command through chromedriver.
#[derive(Debug)]
struct Cdp(&'static str, Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "cmd": self.0, "params": self.1 }).to_string()))
    }
}

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("{e}: {script}"))
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
    for name in ["index.html", "lock-s4c.svg", "lock-s4c.png", "baseline.png", "SUMMARY.md"] {
        assert!(dir.join(name).is_file(), "{name} missing; stderr: {stderr}");
    }
}

fn saved(dir: &Path, lab: &str) -> LabReport {
    let path =
        ["json", "json.gz"].iter().map(|x| dir.join(format!("{lab}.{x}"))).find(|p| p.is_file()).expect("saved run");
    ordlab::report::json::load(&path).expect("a saved report")
}

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

/// The browser and its driver; without them `NOT TESTED: <what> (why)` and None, except where
/// one must be there (`CI` or `ORDLAB_REQUIRE_BROWSER` set): then a failure.
fn browser_or_not_tested(what: &str) -> Option<(PathBuf, PathBuf)> {
    match browser() {
        Ok(b) => Some(b),
        Err(why) if std::env::var_os("CI").is_some() || std::env::var_os("ORDLAB_REQUIRE_BROWSER").is_some() => {
            panic!("a browser must be here (CI or ORDLAB_REQUIRE_BROWSER is set): {why}")
        }
        Err(why) => {
            println!("NOT TESTED: {what} ({why})");
            None
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_lab_book_works_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_or_not_tested("lab book in a browser") else { return };
    let results = tempfile::tempdir().unwrap();
    write_results(results.path());
    let driver = Driver::start(&chromedriver);
    let c = driver.session(&chromium).await;
    let url = format!("file://{}", results.path().join("index.html").display());
    c.goto(&url).await.unwrap();

    loads_cleanly(&c, &url).await;
    shows_every_lab(&c).await;
    filters_and_sorts(&c).await;
    let lock = saved(results.path(), "lock");
    steps_through_a_run(&c, &lock).await;
    switches_language(&c, &lock).await;
    screenshot_shows_the_timeline(&c).await;
    prints_a_lab_per_page(&c).await;
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "no console error while using the page");
    c.close().await.unwrap();
}

/// `ordlab serve` in the browser: a click on baseline's run button runs it on this machine's
/// servers (time scale 3: its slow job takes 2.4 s); each timeline line is stamped by the page
/// when it arrives, and the first comes more than a second before the verdict, so a server
/// that answered only at the end fails; then the verdict shows, in both languages, with no
/// console error. `--lang vi` opens the page in Vietnamese.
#[tokio::test(flavor = "current_thread")]
async fn serve_runs_a_variant_live_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_or_not_tested("ordlab serve in a browser") else { return };
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
    c.goto(&format!("http://127.0.0.1:{}/", served.port)).await.unwrap();
    let button = c.find(Locator::Css("#v-baseline-baseline .live button.run")).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ run again on this machine");
    button.click().await.unwrap();
    let started = Instant::now();
    while js(&c, "return !!document.querySelector('#v-baseline-baseline .live-verdict[data-arrived]')").await != true {
        assert!(started.elapsed() < Duration::from_secs(120), "no verdict within 120 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let live = js(
        &c,
        "var box = document.querySelector('#v-baseline-baseline .live');
         return { lines: [...box.querySelectorAll('ol.live-events > li')].map(li =>
                    [+li.dataset.seq, +li.dataset.arrived, li.querySelector('[lang=en]').textContent]),
                  verdict: +box.querySelector('.live-verdict').dataset.arrived,
                  shown: box.querySelector('.live-verdict pre[lang=en]').innerText };",
    )
    .await;
    let lines = live["lines"].as_array().unwrap();
    let texts: Vec<&str> = lines.iter().map(|l| l[2].as_str().unwrap()).collect();
    let seqs: Vec<u64> = lines.iter().map(|l| l[0].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>(), "every line, in order: {texts:?}");
    for words in ["C2 received", "C1 received", "wrote status=paid → UPDATE 1", "wrote status=created → UPDATE 1"] {
        assert!(texts.iter().any(|t| t.contains(words)), "{words:?} among {texts:?}");
    }
    let (first, verdict) = (lines[0][1].as_f64().unwrap(), live["verdict"].as_f64().unwrap());
    assert!(
        first + 1000.0 <= verdict,
        "the first line arrived {:.0} ms before the verdict: {texts:?}",
        verdict - first
    );
    let shown = live["shown"].as_str().unwrap();
    assert!(shown.contains("wrong final state (not paid): 1/1 runs") && shown.contains("→ matches"), "{shown}");
    assert_eq!(button.text().await.unwrap(), "▶ run again on this machine", "the button is back");
    // For a human: the variant's live lines and verdict, kept in target/.
    js(&c, "document.querySelector('#v-baseline-baseline .live').scrollIntoView()").await;
    let live_box = c.find(Locator::Css("#v-baseline-baseline .live")).await.unwrap();
    let png = live_box.screenshot().await.unwrap();
    std::fs::write(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-baseline-live.png"), png).unwrap();
    c.find(Locator::Css("[data-set-lang=vi]")).await.unwrap().click().await.unwrap();
    let vi = js(
        &c,
        "var box = document.querySelector('#v-baseline-baseline .live');
         return [box.querySelector('ol.live-events > li').innerText, box.querySelector('.live-verdict').innerText]",
    )
    .await;
    assert!(vi[0].as_str().unwrap().contains(" nhận "), "the lines in Vietnamese: {vi}");
    assert!(
        vi[1].as_str().unwrap().contains("SAI trạng thái cuối") && !vi[1].as_str().unwrap().contains("wrong"),
        "{vi}"
    );
    replays_an_explored_class(&c).await;
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "no console error while a run streams in");
    let in_vietnamese = support::Served::start(results.path(), tmp.path(), &["--lang", "vi"]);
    c.goto(&format!("http://127.0.0.1:{}/", in_vietnamese.port)).await.unwrap();
    assert_eq!(js(&c, "return document.documentElement.dataset.lang").await, "vi", "--lang vi");
    let button = c.find(Locator::Css("#v-baseline-baseline .live button.run")).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ chạy lại trên máy này");
    c.close().await.unwrap();
    for s in [served, in_vietnamese] {
        let (code, stderr) = s.interrupt();
        assert_eq!(code, Some(130), "{stderr}");
    }
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
}

/// A wrong class of baseline's saved exploration, replayed from its square: the page shows its
/// steps' lines as the replay records them and the verdict, the one the exploration found.
async fn replays_an_explored_class(c: &Client) {
    c.find(Locator::Css("[data-set-lang=en]")).await.unwrap().click().await.unwrap();
    let pick = "var d = document.querySelector('article.exploration[data-lab=baseline] details.class.wrong');
                d.open = true; d.scrollIntoView(); return d.querySelector('summary').title;";
    let schedule = js(c, pick).await.as_str().expect("a wrong class of baseline").to_string();
    let box_css = "article.exploration[data-lab=baseline] details.class.wrong[open] .live";
    let button = c.find(Locator::Css(&format!("{box_css} button.run"))).await.unwrap();
    assert_eq!(button.text().await.unwrap(), "▶ replay this schedule on this machine");
    button.click().await.unwrap();
    let started = Instant::now();
    while js(c, &format!("return !!document.querySelector('{box_css} .live-verdict[data-arrived]')")).await != true {
        assert!(started.elapsed() < Duration::from_secs(60), "no verdict of the replay within 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    let lines: Vec<&str> = got["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(lines.iter().any(|l| l.contains("wrote status=created")), "the replay's lines: {lines:?}");
}

fn severe(log: &Value) -> Vec<String> {
    let entries = log.as_array().cloned().unwrap_or_default();
    entries.iter().filter(|e| e["level"] != "INFO" && e["level"] != "DEBUG").map(|e| e["message"].to_string()).collect()
}

async fn loads_cleanly(c: &Client, url: &str) {
    let log = c.issue_cmd(Log("browser")).await.unwrap();
    assert_eq!(severe(&log), Vec::<String>::new(), "console errors or warnings on load");
    let perf = c.issue_cmd(Log("performance")).await.unwrap();
    let requests: Vec<String> = perf
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
        .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
        .map(|m| m["message"]["params"].clone())
        .filter(|p| p["documentURL"] == url && p["request"]["url"] != url)
        .map(|p| p["request"]["url"].to_string())
        .collect();
    assert_eq!(requests, Vec::<String>::new(), "the page requested something");
    assert_eq!(js(c, "return performance.getEntriesByType('resource').length").await, 0);
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
    let strategy = js(c, "return document.querySelector('tr[data-lab=lock]:last-child, tr[data-lab=lock]').parentNode.querySelector('a[href=\"#v-lock-s4c\"]').closest('tr').dataset.strategy").await;
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
    let fig = c.find(Locator::Css("#fig-lock-s4c")).await.unwrap();
    let n: usize = fig.attr("data-steps").await.unwrap().unwrap().parse().unwrap();
    assert_eq!(n, expected.len());
    fig.find(Locator::Css("[data-act=first]")).await.unwrap().click().await.unwrap();
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
    // Focus on a mark shows its details (the caption of its step, with the entry ID).
    let focused = js(c, "var m = document.querySelector('#fig-lock-s4c .fig[lang=en] .mark.received[tabindex]'); m.focus(); return m.dataset.step").await;
    let step: usize = focused.as_str().unwrap().parse().unwrap();
    let detail = fig.find(Locator::Css(".detail .ev")).await.unwrap().text().await.unwrap();
    assert_eq!(detail, expected[step - 1].1);
    assert!(detail.contains("received") && detail.contains('-'), "entry ID in {detail}");
}

/// After the switch, every visible text is Vietnamese (or language-neutral), and the steps
/// are the Vietnamese text report's lines; `#vi` opens the page in Vietnamese.
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
    assert_eq!(js(c, "return document.documentElement.dataset.lang").await, "vi", "#vi opens in Vietnamese");
    c.find(Locator::Css("[data-set-lang=en]")).await.unwrap().click().await.unwrap();
}

/// The s4c figure half-way through, as a PNG: a real picture, kept in target/ for a human.
async fn screenshot_shows_the_timeline(c: &Client) {
    let fig = c.find(Locator::Css("#fig-lock-s4c")).await.unwrap();
    fig.find(Locator::Css("[data-act=first]")).await.unwrap().click().await.unwrap();
    for _ in 0..4 {
        fig.find(Locator::Css("[data-act=next]")).await.unwrap().click().await.unwrap();
    }
    let png = fig.screenshot().await.unwrap();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lab-book-s4c.png");
    std::fs::write(&target, &png).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(info.width >= 1000, "a figure as wide as the page: {}", info.width);
    let channels = info.color_type.samples();
    // The picture above the step controls (whose slider is blue too).
    let rows = info.height as usize * 85 / 100;
    let pixels = buf[..info.line_size * rows].chunks(channels);
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

async fn prints_a_lab_per_page(c: &Client) {
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "print" }))).await.unwrap();
    let hidden = js(
        c,
        "return ['.stepper', '.filters', '.langs'].map(s => getComputedStyle(document.querySelector(s)).display)",
    )
    .await;
    assert_eq!(hidden, json!(["none", "none", "none"]));
    let breaks =
        js(c, "return Array.from(document.querySelectorAll('section.lab')).map(s => getComputedStyle(s).breakBefore)")
            .await;
    assert_eq!(breaks, json!(["page", "page"]));
    let faded = js(c, "return document.querySelectorAll('#fig-lock-s4c [data-step].future').length").await;
    let opacity = js(c, "var e = document.querySelector('#fig-lock-s4c [data-step].future'); return e ? getComputedStyle(e).opacity : '1'").await;
    assert!(faded == 0 || opacity == "1", "a printed figure shows every step");
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({ "media": "" }))).await.unwrap();
}
