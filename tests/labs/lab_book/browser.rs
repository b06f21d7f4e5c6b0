//! The browser and its driver: Debian's `chromium` and `chromium-driver`, driven through
//! WebDriver (fantoccini) in a process group of their own, killed with it; a viewport of an
//! exact size (Chrome DevTools' device metrics); waits on a condition the page reaches, never
//! on time.

use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser and its driver, or why they are not here.
pub fn browser() -> Result<(PathBuf, PathBuf), String> {
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
pub struct Driver {
    child: std::process::Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Driver {
    pub fn start(driver: &Path) -> Driver {
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

    pub async fn session(&self, chromium: &Path) -> Client {
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
            "--hide-scrollbars",
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
pub struct Log(pub &'static str);

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
pub struct Cdp(pub &'static str, pub Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "cmd": self.0, "params": self.1 }).to_string()))
    }
}

pub async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("{e}: {script}"))
}

/// The browser and its driver; without them `NOT TESTED: <what> (why)` and None, except where
/// one must be there (`CI` or `ORDLAB_REQUIRE_BROWSER` set): then a failure.
pub fn browser_or_not_tested(what: &str) -> Option<(PathBuf, PathBuf)> {
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

pub fn severe(log: &Value) -> Vec<String> {
    let entries = log.as_array().cloned().unwrap_or_default();
    entries.iter().filter(|e| e["level"] != "INFO" && e["level"] != "DEBUG").map(|e| e["message"].to_string()).collect()
}

/// The viewport `w`×`h` CSS px (a phone's below 600 px wide), whatever the window.
pub async fn viewport(c: &Client, w: u32, h: u32) {
    let metrics = json!({ "width": w, "height": h, "deviceScaleFactor": 1, "mobile": w < 600 });
    c.issue_cmd(Cdp("Emulation.setDeviceMetricsOverride", metrics)).await.unwrap();
}

/// Wait until `condition` (a JS expression) is true on the page, polling; fail after `secs`
/// naming `what`. Returns the time it took.
pub async fn until(c: &Client, condition: &str, what: &str, secs: u64) -> Duration {
    let started = Instant::now();
    loop {
        if js(c, &format!("try {{ return !!({condition}); }} catch (e) {{ return false; }}")).await == true {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(secs), "{what}: not within {secs} s ({condition})");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// [`until`], but false instead of a failure when the page never gets there.
pub async fn reaches(c: &Client, condition: &str, secs: u64) -> bool {
    let started = Instant::now();
    loop {
        if js(c, &format!("try {{ return !!({condition}); }} catch (e) {{ return false; }}")).await == true {
            return true;
        }
        if started.elapsed() > Duration::from_secs(secs) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// Where the pictures for a human go: `$ORDLAB_SCREENSHOTS` when set, else the target dir.
pub fn screenshot_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("ORDLAB_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}
