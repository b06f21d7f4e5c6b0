//! `ordlab serve`: the lab book on 127.0.0.1 as a class tool — a "run again" button per
//! variant (once or N times), a "replay" button per explored class; the run going on drawn as
//! it happens beside the saved picture, found again by a page reloaded in the middle of it,
//! with its elapsed time, a cancel button and, for N runs, its tally and 95 % interval.
//!
//! Only the page's own requests are answered ([`guard`]): the `Host` must be this server's,
//! and a `POST` must come from its origin with the token the page was served; anything else
//! is 403 and one `ordlab serve: refused …` line on stderr.
//!
//! The page is the lab book `ordlab book` writes (`index.html` and its parts under `book/`),
//! built once at start from the records in the results directory, with
//! [`page.js`](serve/page.js) added. `POST /run` with the form body `lab=<id>&variant=<id>`
//! (and `runs=N`, or `schedule=P.C1x2.C2` to replay a saved class's schedule exactly, as
//! `ordlab run <lab> --variant <v> --schedule …` does) answers `text/event-stream`, the
//! messages of [`stream::Streamed`]: `started`, a `line` per timeline line as the run records
//! it, a `picture` of the run so far (SVG, both languages) every 0.4 s, a `run_done` per run
//! with the tally, then `verdict`, `failed` or `cancelled`. `GET /run/current` is the same
//! stream of the run going on, from its start (204 when none); `POST /cancel` stops it. An
//! unknown lab or variant is 404, a second run while one goes on 409, each with one line (JSON
//! `{"en", "vi"}` when the request accepts JSON, as the page's does).
//!
//! One run at a time: it lives in [`serve`]'s own future, so dropping it (cancel, Ctrl-C,
//! SIGTERM) stops the run's servers and processes as it does for `ordlab run`. The run's results
//! are not written: the records stay as they are.

use crate::catalog;
use crate::checker::Verdict;
use crate::lang::Lang;
use crate::report::{html, record, LabReport};
use crate::scenario::Scenario;
use crate::service::ServiceOptions;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

pub mod guard;
mod live;
mod runs;
mod stream;

use guard::Guard;
use live::LiveRun;
use stream::Streamed;

const PAGE_SCRIPT: &str = include_str!("serve/page.js");
const PAGE_CSS: &str = include_str!("serve/page.css");
/// The largest `POST /run` body read: two ids, a schedule, a count.
const MAX_FORM_BYTES: usize = 4096;
/// The most runs one click asks for.
const MAX_RUNS: u32 = 100;

/// What `ordlab serve` serves and how it runs a variant.
pub struct ServeOptions {
    /// The results directory whose `records/` the lab book is built from.
    pub dir: PathBuf,
    /// None: a free port.
    pub port: Option<u16>,
    /// The language the page opens in (both are in it).
    pub lang: Lang,
    /// `--time-scale` of every run.
    pub scale: f64,
    pub services: ServiceOptions,
    /// The `ordlab` binary role processes run.
    pub exe: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on 127.0.0.1:{port} ({source}): choose another --port, or leave --port out for a free one")]
    Listen { port: u16, source: std::io::Error },
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error(transparent)]
    Catalog(#[from] crate::scenario::ScenarioError),
}

/// Why a run was not started, in both languages.
enum Refused {
    /// No such lab or variant (404).
    Unknown(String),
    /// Another run goes on (409).
    Busy { en: String, vi: String },
}

/// What a connection asks of the loop that owns the run.
enum Ask {
    /// Start a run (a click): its messages from the start.
    Run(RunRequest),
    /// The run going on, from its start (a page loaded in the middle of it); None when none.
    Watch(oneshot::Sender<Option<mpsc::UnboundedReceiver<Streamed>>>),
    /// Stop the run going on; whether there was one.
    Cancel(oneshot::Sender<bool>),
}

/// A click.
struct RunRequest {
    lab: String,
    variant: String,
    /// A saved class's schedule to replay, instead of sampled runs.
    schedule: Option<String>,
    runs: u32,
    reply: oneshot::Sender<Result<mpsc::UnboundedReceiver<Streamed>, Refused>>,
}

/// What every connection shares.
struct Site {
    /// The page's files by their path (`/`, `/book/lock.js`), with their content type.
    files: HashMap<String, (&'static str, Bytes)>,
    guard: Guard,
    asks: mpsc::UnboundedSender<Ask>,
}

/// Serve until the future is dropped. The port is bound first (one that cannot be is
/// [`ServeError::Listen`]); `listening` gets the address once the page is built.
pub async fn serve(opts: ServeOptions, listening: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let port = opts.port.unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| ServeError::Listen { port, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Listen { port, source })?;
    let labs = catalog::all()?;
    let explored = crate::report::html::explored::load(&opts.dir);
    let guard = Guard::new(addr.port(), Guard::new_token());
    let (files, left_out) = served_files(&opts, &explored, &guard)?;
    left_out.iter().for_each(|line| eprintln!("ordlab: the page leaves out {line}"));
    let (asks_tx, mut asks) = mpsc::unbounded_channel();
    let site = Arc::new(Site { files, guard, asks: asks_tx });
    listening(addr);
    let mut run: Option<Pin<Box<dyn Future<Output = ()> + '_>>> = None;
    let mut said: Option<mpsc::UnboundedReceiver<Streamed>> = None;
    let mut live: Option<LiveRun> = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(serve_connection(stream, site.clone()));
                }
            }
            Some(ask) = asks.recv() => match ask {
                Ask::Watch(reply) => { let _ = reply.send(live.as_mut().map(LiveRun::watch)); }
                Ask::Cancel(reply) => {
                    let going = run.take().is_some();
                    if let Some(mut l) = live.take() {
                        eprintln!("ordlab serve: {} cancelled; its servers and processes are stopped", l.label);
                        l.say(Streamed::Cancelled {
                            en: "cancelled: its servers and processes are stopped".into(),
                            vi: "đã hủy: các server và tiến trình của nó đã dừng".into(),
                        });
                    }
                    said = None;
                    let _ = reply.send(going);
                }
                Ask::Run(req) => {
                    if let Some(l) = &live {
                        let _ = req.reply.send(Err(Refused::Busy {
                            en: format!("a run is going on ({}): one run at a time, wait for its verdict", l.label),
                            vi: format!("đang có một lần chạy ({}): mỗi lúc một lần chạy, hãy chờ kết luận của nó", l.label),
                        }));
                        continue;
                    }
                    if let Some((future, rx, l)) = start(req, &labs, &explored, &opts) {
                        run = Some(future);
                        said = Some(rx);
                        live = Some(l);
                    }
                }
            },
            Some(m) = async { said.as_mut()?.recv().await }, if said.is_some() => {
                if let Some(l) = live.as_mut() { l.say(m); }
            }
            () = async { run.as_mut().expect("guarded").await }, if run.is_some() => {
                run = None;
                // What the run said last, then every watcher's stream ends.
                if let (Some(rx), Some(l)) = (said.as_mut(), live.as_mut()) {
                    while let Ok(m) = rx.try_recv() { l.say(m); }
                }
                said = None;
                live = None;
            }
        }
    }
}

/// The run a click asks for, started (its future, what it says, its live state), or the reply
/// that says why not (then None).
#[allow(clippy::type_complexity)]
fn start<'a>(
    req: RunRequest,
    labs: &[Scenario],
    explored: &[crate::report::html::explored::ExploredFile],
    opts: &'a ServeOptions,
) -> Option<(Pin<Box<dyn Future<Output = ()> + 'a>>, mpsc::UnboundedReceiver<Streamed>, LiveRun)> {
    let RunRequest { lab, variant, schedule, runs, reply } = req;
    let saved = match &schedule {
        Some(s) => saved_class(explored, &lab, &variant, s).map(Some),
        None => Ok(None),
    };
    let (scenario, saved) = match find_variant(labs, &lab, &variant).and_then(|sc| saved.map(|sv| (sc, sv))) {
        Ok(found) => found,
        Err(line) => {
            let _ = reply.send(Err(Refused::Unknown(line)));
            return None;
        }
    };
    let runs = if schedule.is_some() { 1 } else { runs.clamp(1, MAX_RUNS) };
    let started = Streamed::Started {
        lab: lab.clone(),
        variant: variant.clone(),
        schedule: schedule.clone(),
        runs,
        started_ms: stream::now_ms(),
    };
    let mut l = LiveRun::new(format!("{lab}/{variant}"), started);
    if reply.send(Ok(l.watch())).is_err() {
        return None;
    }
    eprintln!(
        "ordlab serve: {lab}/{variant} started ({})",
        match &schedule {
            Some(s) => format!("replaying schedule {s}"),
            None => format!("{runs} run{}", if runs == 1 { "" } else { "s" }),
        }
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let future: Pin<Box<dyn Future<Output = ()> + 'a>> = match (schedule, saved) {
        (Some(s), Some(saved)) => Box::pin(runs::run_replayed(scenario, variant, s, saved, opts, tx)),
        _ => Box::pin(runs::run_streamed(scenario, variant, runs, opts, tx)),
    };
    Some((future, rx, l))
}

/// The lab book's files over the records and explorations in `opts.dir`, the page opening in
/// `opts.lang` with the run buttons' script and the guard's token; and the records left out,
/// why.
#[allow(clippy::type_complexity)]
fn served_files(
    opts: &ServeOptions,
    explored: &[crate::report::html::explored::ExploredFile],
    guard: &Guard,
) -> Result<(HashMap<String, (&'static str, Bytes)>, Vec<String>), ServeError> {
    let mut reports: Vec<LabReport> = Vec::new();
    let mut left_out = Vec::new();
    for r in record::load_all(&opts.dir)? {
        match r {
            Ok(r) => reports.push(r),
            Err(e) => left_out.push(e.to_string()),
        }
    }
    let book = html::book(&reports, explored);
    let code = opts.lang.code();
    let page = book
        .index()
        .replacen(r#"<html lang="en" data-lang="en""#, &format!(r#"<html lang="{code}" data-lang="{code}""#), 1)
        // No favicon request (its 404 would be a console error).
        .replacen("<head>\n", &format!("<head>\n<link rel=\"icon\" href=\"data:,\">\n{}\n", guard.meta_tag()), 1)
        .replacen("</style>\n</head>", &format!("{PAGE_CSS}</style>\n</head>"), 1)
        .replacen("</body>", &format!("<script>\n{PAGE_SCRIPT}</script>\n</body>"), 1);
    let mut files = HashMap::new();
    files.insert("/".to_string(), ("text/html; charset=utf-8", Bytes::from(page)));
    for (name, body) in &book.files {
        let kind = if name.ends_with(".js") { "text/javascript; charset=utf-8" } else { "text/html; charset=utf-8" };
        if name != "index.html" {
            files.insert(format!("/{name}"), (kind, Bytes::from(body.clone())));
        }
    }
    Ok((files, left_out))
}

/// The built-in lab `lab` with only `variant` left, or the one line that says why not.
fn find_variant(labs: &[Scenario], lab: &str, variant: &str) -> Result<Scenario, String> {
    let Some(found) = labs.iter().find(|l| l.id == lab) else {
        return Err(format!("no built-in lab {lab:?}: `ordlab list` names them"));
    };
    if found.variant(variant).is_none() {
        return Err(format!(
            "lab {lab} has no variant {variant:?}: its variants are {}",
            found.variant_ids().join(", ")
        ));
    }
    let mut one = found.clone();
    one.variants.retain(|v| v.id == variant);
    Ok(one)
}

/// The verdict a saved exploration found for `schedule` of `lab`/`variant`, or the one line
/// that says why it is not replayed here.
fn saved_class(
    explored: &[crate::report::html::explored::ExploredFile],
    lab: &str,
    variant: &str,
    schedule: &str,
) -> Result<Verdict, String> {
    let Some(x) = explored.iter().find(|x| x.lab == lab && x.variant == variant) else {
        return Err(format!(
            "no saved exploration of {lab}/{variant}: run `ordlab explore {lab} --variant {variant} --out <results>/explore` first"
        ));
    };
    match x.classes.iter().find(|c| c.schedule == schedule) {
        Some(c) => Ok(c.verdict),
        None => Err(format!(
            "{schedule:?} is not a class of the saved exploration of {lab}/{variant}: `ordlab run {lab} --variant {variant} --schedule …` replays any schedule"
        )),
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn serve_connection(stream: tokio::net::TcpStream, site: Arc<Site>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let site = site.clone();
        async move { Ok::<_, Infallible>(answer(req, &site).await) }
    });
    // An error here is a browser that went away: nothing to do.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("cache-control", "no-store")
        .body(Full::new(body.into()).boxed())
        .expect("a valid response")
}

/// One line of text, for a request that is refused.
fn one_line_reply(status: StatusCode, line: &str) -> Response<Body> {
    reply(status, "text/plain; charset=utf-8", format!("{line}\n"))
}

/// A refusal in both languages: JSON `{"en", "vi"}` for the page (which asks for JSON and
/// shows its language's), one English line for anyone else.
fn refusal(status: StatusCode, json: bool, en: &str, vi: &str) -> Response<Body> {
    if json {
        let body = serde_json::json!({ "en": en, "vi": vi }).to_string();
        reply(status, "application/json", body)
    } else {
        one_line_reply(status, en)
    }
}

async fn answer(req: Request<Incoming>, site: &Site) -> Response<Body> {
    if let Err(guard::Refusal(why)) = site.guard.check(req.method(), req.uri().path(), req.headers()) {
        eprintln!("ordlab serve: refused {why}");
        return one_line_reply(StatusCode::FORBIDDEN, &format!("refused {why}"));
    }
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&Method::GET, "/run/current") => watch(site).await,
        (&Method::POST, "/run") => start_run(req, site).await,
        (&Method::POST, "/cancel") => cancel(site).await,
        (&Method::GET, p) => {
            let p = if p == "/index.html" { "/" } else { p };
            match site.files.get(p) {
                Some((kind, body)) => reply(StatusCode::OK, kind, body.clone()),
                None => one_line_reply(StatusCode::NOT_FOUND, &format!("GET {p}: not a file of the lab book")),
            }
        }
        (m, p) => one_line_reply(
            StatusCode::NOT_FOUND,
            &format!("{m} {p}: the page is GET /, a run is POST /run, the run going on GET /run/current"),
        ),
    }
}

/// The messages of a run as a `text/event-stream`, until its last.
fn event_stream(events: mpsc::UnboundedReceiver<Streamed>) -> Response<Body> {
    let frames = futures::stream::unfold((events, false), |(mut events, ended)| async move {
        if ended {
            return None;
        }
        let message = events.recv().await?;
        let last = message.is_last();
        Some((Ok::<_, Infallible>(Frame::data(message.sse())), (events, last)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(StreamBody::new(frames).boxed())
        .expect("a valid response")
}

/// `GET /run/current`: the run going on from its start, then live; 204 when none.
async fn watch(site: &Site) -> Response<Body> {
    let (tx, rx) = oneshot::channel();
    if site.asks.send(Ask::Watch(tx)).is_err() {
        return one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    match rx.await {
        Ok(Some(events)) => event_stream(events),
        _ => reply(StatusCode::NO_CONTENT, "text/plain; charset=utf-8", ""),
    }
}

/// `POST /cancel`: stop the run going on (its servers and processes are stopped).
async fn cancel(site: &Site) -> Response<Body> {
    let (tx, rx) = oneshot::channel();
    if site.asks.send(Ask::Cancel(tx)).is_err() {
        return one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    match rx.await {
        Ok(true) => one_line_reply(StatusCode::OK, "cancelled"),
        _ => one_line_reply(StatusCode::CONFLICT, "no run is going on"),
    }
}

/// `POST /run`: the form's lab, variant (and schedule or runs) to the run loop; its messages
/// as they come.
async fn start_run(req: Request<Incoming>, site: &Site) -> Response<Body> {
    let json =
        req.headers().get("accept").is_some_and(|a| String::from_utf8_lossy(a.as_bytes()).contains("application/json"));
    let body = match http_body_util::Limited::new(req.into_body(), MAX_FORM_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return one_line_reply(StatusCode::BAD_REQUEST, &format!("POST /run body: {e}")),
    };
    let form = form_fields(&body);
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let schedule = field("schedule").filter(|s| !s.is_empty());
    let runs = field("runs").and_then(|r| r.parse().ok()).unwrap_or(1);
    let (Some(lab), Some(variant)) = (field("lab"), field("variant")) else {
        return one_line_reply(
            StatusCode::BAD_REQUEST,
            "POST /run needs the form fields lab and variant (lab=baseline&variant=baseline)",
        );
    };
    let (reply_tx, reply_rx) = oneshot::channel();
    if site.asks.send(Ask::Run(RunRequest { lab, variant, schedule, runs, reply: reply_tx })).is_err() {
        return one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    match reply_rx.await {
        Ok(Ok(events)) => event_stream(events),
        Ok(Err(Refused::Unknown(why))) => refusal(StatusCode::NOT_FOUND, json, &why, &why),
        Ok(Err(Refused::Busy { en, vi })) => refusal(StatusCode::CONFLICT, json, &en, &vi),
        Err(_) => one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
    }
}

/// `a=1&b=x+y` → [(a, 1), (b, x y)], percent-decoded.
fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_are_percent_decoded() {
        let fields = form_fields(b"lab=reorder-buffer&variant=gap%2Dtimeout&x=a+b");
        assert_eq!(
            fields,
            [("lab", "reorder-buffer"), ("variant", "gap-timeout"), ("x", "a b")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn unknown_labs_and_variants_are_one_line_each() {
        let labs = catalog::all().unwrap();
        assert!(find_variant(&labs, "nope", "x").unwrap_err().contains("no built-in lab \"nope\""));
        let why = find_variant(&labs, "lock", "s9").unwrap_err();
        assert!(why.contains("s4a, s4b, s4c") && !why.contains('\n'), "{why}");
        let one = find_variant(&labs, "lock", "s4c").unwrap();
        assert_eq!(one.variant_ids(), ["s4c"]);
    }

    #[test]
    fn only_a_saved_class_is_replayed() {
        use crate::report::html::explored::{ClassView, ExploredFile};
        let class = |schedule: &str, verdict| ClassView {
            schedule: schedule.into(),
            verdict,
            reasons: vec![],
            steps: vec![],
            fates: None,
        };
        let saved = [ExploredFile {
            explore_version: 1,
            lab: "s1".into(),
            variant: "s1".into(),
            search: "exhaustive".into(),
            runs: 2,
            classes: vec![class("P.C1x2", Verdict::Right), class("C1.P", Verdict::Wrong)],
            hit_max_schedules: false,
            smaller_setup: None,
        }];
        assert_eq!(saved_class(&saved, "s1", "s1", "C1.P"), Ok(Verdict::Wrong));
        let other = saved_class(&saved, "s1", "s1", "P.P").unwrap_err();
        assert!(other.contains("not a class of the saved exploration of s1/s1") && !other.contains('\n'), "{other}");
        let none = saved_class(&saved, "lock", "s4a", "P").unwrap_err();
        assert!(none.contains("ordlab explore lock --variant s4a --out"), "{none}");
    }
}
