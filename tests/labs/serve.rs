//! `ordlab serve` over plain HTTP (the browser test in `lab_book` clicks the page itself): a
//! run's timeline lines stream while the run goes on, well before its verdict; one run at a
//! time (409); an unknown lab or variant is a 404 of one line; a port in use is one `ordlab:`
//! line and exit 2; Ctrl-C during a run stops the server and everything it started.
//!
//! Only the page's own requests are answered (real curl against a real `ordlab serve`): a
//! foreign `Origin` (a form's or a `text/plain` POST too), a foreign `Host` (DNS rebinding) and
//! a missing or wrong token are 403 with one line on the console and start nothing; the
//! page's own request, with the token read from the page, is taken.

use super::support::{self, Served};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The time scale of the served runs: baseline's slow job then takes 2.4 s, so its first
/// lines come more than a second before its verdict, however loaded the machine.
const SCALE: &str = "3";

/// `POST /run` as the page's script sends it: this server's Host and Origin, the page's token.
fn send_post(port: u16, form: &str) -> TcpStream {
    let token = page_token(port);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "POST /run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\nX-Ordlab-Token: {token}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    stream
}

/// Real curl with `args`: the status code and the body.
fn curl(args: &[&str]) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "60", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').expect("curl wrote the status");
    (code.parse().expect("a status code"), body.to_string())
}

/// The token the served page holds (in its `<meta name="ordlab-token">`), read with curl.
fn page_token(port: u16) -> String {
    let (status, page) = curl(&[&format!("http://127.0.0.1:{port}/")]);
    assert_eq!(status, 200, "{page}");
    let rest = page.split(r#"<meta name="ordlab-token" content=""#).nth(1).expect("the page holds a token");
    rest.split('"').next().unwrap().to_string()
}

/// `POST /run` with `form`: the status code and the body, whole.
fn post(port: u16, form: &str) -> (u16, String) {
    let mut answer = String::new();
    send_post(port, form).read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// `POST /run` read as it arrives, on a thread: each read's text, with when it came, on the
/// channel, until the server closes the answer.
fn post_streamed(port: u16, form: &str) -> mpsc::Receiver<(Instant, String)> {
    let (tx, rx) = mpsc::channel();
    let mut stream = send_post(port, form);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            if tx.send((Instant::now(), String::from_utf8_lossy(&buf[..n]).into_owned())).is_err() {
                return;
            }
        }
    });
    rx
}

/// Wait for the first piece holding `what`; every piece read until then is appended to `seen`.
fn wait_for(rx: &mpsc::Receiver<(Instant, String)>, what: &str, seen: &mut String) -> Instant {
    loop {
        let (at, text) =
            rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|e| panic!("no {what:?} ({e}): {seen}"));
        seen.push_str(&text);
        if text.contains(what) {
            return at;
        }
    }
}

#[test]
fn a_run_streams_its_lines_before_its_verdict_one_at_a_time_and_ctrl_c_stops_everything() {
    let results = tempfile::tempdir().unwrap();
    support::write_baseline_record(results.path());
    let tmp = tempfile::tempdir().unwrap();
    let served = Served::start(results.path(), tmp.path(), &["--time-scale", SCALE]);
    let port = served.port;

    let (status, body) = post(port, "lab=nope&variant=nope");
    assert_eq!((status, body.trim_end().lines().count()), (404, 1), "{body}");
    assert!(body.contains("no built-in lab \"nope\""), "{body}");
    let (status, body) = post(port, "lab=baseline&variant=s9");
    assert_eq!((status, body.trim_end().lines().count()), (404, 1), "{body}");
    assert!(body.contains("no variant \"s9\": its variants are baseline"), "{body}");

    let first = post_streamed(port, "lab=baseline&variant=baseline");
    let mut seen = String::new();
    let first_line = wait_for(&first, "event: line", &mut seen);
    // The run goes on (its slow job has more than a second to go): a second one is refused.
    let (status, body) = post(port, "lab=baseline&variant=baseline");
    assert_eq!((status, body.trim_end().lines().count()), (409, 1), "{body}");
    assert!(body.contains("a run is going on (baseline/baseline)"), "{body}");
    let verdict = wait_for(&first, "event: verdict", &mut seen);
    let ahead = verdict - first_line;
    assert!(ahead >= Duration::from_millis(1000), "the first line came only {ahead:?} before the verdict: {seen}");
    for words in ["C2 received", "C1 received", "wrote status=paid → UPDATE 1", "wrote status=created → UPDATE 1"] {
        assert!(seen.contains(words), "{words:?} streamed: {seen}");
    }
    assert!(seen.contains("wrong final state (not paid): 1/1 runs") && seen.contains(r#""matched":true"#), "{seen}");
    assert!(seen.contains("SAI trạng thái cuối"), "the verdict in Vietnamese too: {seen}");

    // Over: a new run is taken; Ctrl-C while it runs stops the servers and role processes.
    let second = post_streamed(port, "lab=baseline&variant=baseline");
    wait_for(&second, "event: line", &mut String::new());
    let started = support::descendants(served.child.id());
    assert!(support::is_role_running(served.child.id()), "consumers run: {started:?}");
    let (code, stderr) = served.interrupt();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("interrupted; servers and processes stopped"), "{stderr}");
    assert!(support::eventually(10, || started.iter().all(|p| !support::alive(*p))), "left running: {started:?}");
    assert!(support::entries(tmp.path()).is_empty(), "temp dirs left: {:?}", support::entries(tmp.path()));
}

#[test]
fn a_port_in_use_is_one_line_and_exit_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (results, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = support::ordlab(tmp.path())
        .args(["serve", "--backend", "local", "--port", &port, "--out"])
        .arg(results.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A serve that did not refuse (on another port, say) would run until stopped.
    let refused = support::eventually(30, || child.try_wait().unwrap().is_some());
    if !refused {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(refused, "serve went on with --port {port} taken: {stderr}");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("ordlab: cannot listen on 127.0.0.1:{port} (")), "{stderr}");
    assert!(stderr.contains("choose another --port"), "{stderr}");
    assert!(support::entries(tmp.path()).is_empty(), "nothing started");
}

#[test]
fn only_the_page_s_own_requests_are_answered() {
    let results = tempfile::tempdir().unwrap();
    support::write_baseline_record(results.path());
    let tmp = tempfile::tempdir().unwrap();
    let served = Served::start(results.path(), tmp.path(), &[]);
    let port = served.port;
    let (url, run) = (format!("http://127.0.0.1:{port}/"), format!("http://127.0.0.1:{port}/run"));
    let own_origin = format!("Origin: http://127.0.0.1:{port}");
    let token = page_token(port);
    let own_token = format!("X-Ordlab-Token: {token}");
    let form = "lab=baseline&variant=baseline";
    let refused: [(&str, Vec<String>, &str); 7] = [
        (
            "a foreign Host (DNS rebinding)",
            vec!["-H".into(), format!("Host: evil.example:{port}"), url.clone()],
            "Host \"evil.example:",
        ),
        (
            "a foreign Host on a POST",
            vec![
                "-H".into(),
                "Host: evil.example".into(),
                "-H".into(),
                own_origin.clone(),
                "-H".into(),
                own_token.clone(),
                "-d".into(),
                form.into(),
                run.clone(),
            ],
            "Host \"evil.example\"",
        ),
        (
            "a foreign Origin, with the token",
            vec![
                "-H".into(),
                "Origin: http://evil.example".into(),
                "-H".into(),
                own_token.clone(),
                "-d".into(),
                form.into(),
                run.clone(),
            ],
            "Origin \"http://evil.example\" is another site's",
        ),
        (
            "a text/plain POST from another site (no preflight)",
            vec![
                "-H".into(),
                "Origin: http://evil.example".into(),
                "-H".into(),
                "Content-Type: text/plain".into(),
                "-d".into(),
                form.into(),
                run.clone(),
            ],
            "Origin \"http://evil.example\"",
        ),
        ("no Origin", vec!["-H".into(), own_token.clone(), "-d".into(), form.into(), run.clone()], "no Origin header"),
        (
            "no token",
            vec!["-H".into(), own_origin.clone(), "-d".into(), form.into(), run.clone()],
            "no x-ordlab-token header",
        ),
        (
            "a wrong token",
            vec![
                "-H".into(),
                own_origin.clone(),
                "-H".into(),
                format!("X-Ordlab-Token: {}0", &token[1..]),
                "-d".into(),
                form.into(),
                run.clone(),
            ],
            "wrong x-ordlab-token",
        ),
    ];
    for (case, args, why) in &refused {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, body) = curl(&args);
        assert_eq!((status, body.trim_end().lines().count()), (403, 1), "{case}: {body}");
        assert!(body.starts_with("refused ") && body.contains(why), "{case}: {body}");
    }
    assert!(!support::is_role_running(served.child.id()), "a refused request started a run");

    // The page's own request (the lab's name misspelt, so that nothing runs) passes the guard,
    // by either name.
    let (status, body) = curl(&["-H", &own_origin, "-H", &own_token, "-d", "lab=nope&variant=nope", &run]);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no built-in lab \"nope\""), "{body}");
    let local = format!("http://localhost:{port}");
    let (status, body) = curl(&[
        "-H",
        &format!("Origin: {local}"),
        "-H",
        &own_token,
        "-d",
        "lab=nope&variant=nope",
        &format!("{local}/run"),
    ]);
    assert_eq!(status, 404, "by localhost: {body}");
    let (status, _) = curl(&[&format!("{local}/")]);
    assert_eq!(status, 200, "the page by localhost");

    let (code, stderr) = served.interrupt();
    assert_eq!(code, Some(130), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ordlab serve: refused ")).collect();
    assert_eq!(lines.len(), refused.len(), "one console line per refusal: {stderr}");
    for ((case, _, why), line) in refused.iter().zip(&lines) {
        assert!(line.contains(why), "{case} on the console: {line}");
    }
}
