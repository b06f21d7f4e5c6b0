//! `ordlab serve`: the lab book on 127.0.0.1 with a "run again" button per variant, for the
//! classroom. A click runs that one variant on this machine's servers, through the same
//! scheduler as `ordlab run <lab> --variant <v> --runs 1`, and streams the run's events into
//! the page as they are recorded, then its verdict.
//!
//! Only the page's own requests are answered ([`guard`]): the `Host` must be this server's,
//! and `POST /run` must come from its origin with the token the page was served; anything else
//! is 403 and one `ordlab serve: refused …` line on stderr.
//!
//! The page is the lab book `ordlab book` writes, built once at start from the records in the
//! results directory, with [`page.js`](serve/page.js) added. `POST /run` with the form body
//! `lab=<id>&variant=<id>` answers `text/event-stream`: an `event: line` per timeline line as
//! the run records it (`{"seq", "t_ms", "en", "vi"}`, in the text report's words, `t_ms` from
//! the first line), then one `event: verdict` (`{"en", "vi", "matched"}`: the text report's
//! outcome lines) or `event: failed` (`{"line"}`). An unknown lab or variant is 404, a second
//! run while one goes on 409, each with one line.
//!
//! The page also has the lab book's exploration view (the classes saved by `ordlab explore
//! --out DIR/explore`), and each class a "replay" button: `POST /run` with
//! `lab=…&variant=…&schedule=P.C1x2.C2` replays that class's schedule exactly, as `ordlab run
//! <lab> --variant <v> --schedule …` does (every process stepped at the interposer), streams
//! its lines the same way and ends with its verdict, `matched` when it is the verdict the
//! saved exploration found. Only a saved class's schedule is replayed (any other is 404). One run at a time: it lives in
//! [`serve`]'s own future, so dropping that future (Ctrl-C, SIGTERM) stops the run's servers
//! and processes as it does for `ordlab run`. The run's results are not written: the records
//! stay as they are.

use crate::catalog;
use crate::checker::Verdict;
use crate::exploration::{self, ExploreOptions, Search};
use crate::explore::Schedule;
use crate::lang::Lang;
use crate::report::words::{shown_line, Wording};
use crate::report::{html, record, LabReport, Redactor};
use crate::runner::RunOptions;
use crate::scenario::Scenario;
use crate::service::ServiceOptions;
use crate::service::Services;
use crate::timeline::RawEvent;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

pub mod guard;

use guard::Guard;

const PAGE_SCRIPT: &str = include_str!("serve/page.js");
const PAGE_CSS: &str = include_str!("serve/page.css");
/// The largest `POST /run` body read: two ids.
const MAX_FORM_BYTES: usize = 4096;

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

/// One message of a run's event stream.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Streamed {
    /// A timeline line, the moment the run recorded its event.
    Line { seq: u64, t_ms: i64, en: String, vi: String },
    /// The run is over: the text report's outcome lines.
    Verdict { en: String, vi: String, matched: bool },
    /// The run could not be made (a server would not start, …).
    Failed { line: String },
}

impl Streamed {
    /// The message as one Server-Sent Event.
    fn sse(&self) -> Bytes {
        let json = serde_json::to_value(self).expect("messages always serialize");
        let event = json["event"].as_str().unwrap_or("line").to_string();
        Bytes::from(format!("event: {event}\ndata: {json}\n\n"))
    }
}

/// Why a run was not started.
enum Refused {
    /// No such lab or variant (404).
    Unknown(String),
    /// Another run goes on (409).
    Busy(String),
}

/// A click, from a connection to the loop that owns the run.
struct RunRequest {
    lab: String,
    variant: String,
    /// A saved class's schedule to replay, instead of a sampled run.
    schedule: Option<String>,
    reply: oneshot::Sender<Result<mpsc::UnboundedReceiver<Streamed>, Refused>>,
}

/// What every connection shares.
struct Site {
    page: String,
    guard: Guard,
    requests: mpsc::UnboundedSender<RunRequest>,
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
    let (page, left_out) = served_page(&opts, &explored, &guard)?;
    left_out.iter().for_each(|line| eprintln!("ordlab: the page leaves out {line}"));
    let (requests_tx, mut requests) = mpsc::unbounded_channel();
    let site = Arc::new(Site { page, guard, requests: requests_tx });
    listening(addr);
    let mut run: Option<Pin<Box<dyn Future<Output = ()> + '_>>> = None;
    let mut running = String::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(serve_connection(stream, site.clone()));
                }
            }
            Some(req) = requests.recv() => {
                let RunRequest { lab, variant, schedule, reply } = req;
                if run.is_some() {
                    let _ = reply.send(Err(Refused::Busy(format!(
                        "a run is going on ({running}): one run at a time, wait for its verdict"
                    ))));
                    continue;
                }
                let saved = match &schedule {
                    Some(s) => saved_class(&explored, &lab, &variant, s).map(Some),
                    None => Ok(None),
                };
                match find_variant(&labs, &lab, &variant).and_then(|scenario| saved.map(|saved| (scenario, saved))) {
                    Err(line) => { let _ = reply.send(Err(Refused::Unknown(line))); }
                    Ok((scenario, saved)) => {
                        let (tx, rx) = mpsc::unbounded_channel();
                        if reply.send(Ok(rx)).is_ok() {
                            running = format!("{lab}/{variant}");
                            run = Some(match (schedule, saved) {
                                (Some(s), Some(saved)) => Box::pin(run_replayed(scenario, variant, s, saved, &opts, tx)),
                                _ => Box::pin(run_streamed(scenario, variant, &opts, tx)),
                            });
                        }
                    }
                }
            }
            () = async { run.as_mut().expect("guarded").await }, if run.is_some() => { run = None; }
        }
    }
}

/// The lab book over the records and explorations in `opts.dir`, opening in `opts.lang`, with
/// the run buttons' script and the guard's token; and the records left out, why.
fn served_page(
    opts: &ServeOptions,
    explored: &[crate::report::html::explored::ExploredFile],
    guard: &Guard,
) -> Result<(String, Vec<String>), ServeError> {
    let mut reports: Vec<LabReport> = Vec::new();
    let mut left_out = Vec::new();
    for r in record::load_all(&opts.dir)? {
        match r {
            Ok(r) => reports.push(r),
            Err(e) => left_out.push(e.to_string()),
        }
    }
    let book = html::render_with(&reports, explored);
    let code = opts.lang.code();
    let page = book
        .replacen(r#"<html lang="en" data-lang="en">"#, &format!(r#"<html lang="{code}" data-lang="{code}">"#), 1)
        // No favicon request (its 404 would be a console error).
        .replacen("<head>\n", &format!("<head>\n<link rel=\"icon\" href=\"data:,\">\n{}\n", guard.meta_tag()), 1)
        .replacen("</style>\n</head>", &format!("{PAGE_CSS}</style>\n</head>"), 1)
        .replacen("</body>", &format!("<script>\n{PAGE_SCRIPT}</script>\n</body>"), 1);
    Ok((page, left_out))
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

/// Replay `schedule` of `variant` as `ordlab run <lab> --variant <v> --schedule <s>` does, on
/// servers started for it: its lines to `tx` as the run records them, then its verdict beside
/// the one the saved exploration found (`saved`).
async fn run_replayed(
    lab: Scenario,
    variant: String,
    schedule: String,
    saved: Verdict,
    opts: &ServeOptions,
    tx: mpsc::UnboundedSender<Streamed>,
) {
    let Some(v) = lab.variant(&variant) else { return };
    let tapped =
        crate::timeline::live::tap(live_lines(v.procedure.shows_publishing(), v.procedure.many_orders(), tx.clone()));
    let replayed = async {
        let search = Search::Replay(Schedule::parse(&schedule).map_err(|e| e.to_string())?);
        let services = Services::start(&opts.services).await.map_err(|e| e.to_string())?;
        let explore = ExploreOptions { search, ..ExploreOptions::default() };
        let result = exploration::explore(&services, opts.exe.clone(), &lab, v, &explore).await;
        services.stop().await;
        result.map_err(|e| e.to_string())
    }
    .await;
    drop(tapped);
    let last = match replayed {
        Ok((x, Some(report))) => match (x.classes.first(), report.variants.first()) {
            (Some(class), Some(shown)) => {
                let said = |lang| {
                    let (word, as_saved) = (verdict_word(class.verdict, lang), class.verdict == saved);
                    let head = match (lang, as_saved) {
                        (Lang::En, true) => format!("schedule {schedule}: {word}, as explored"),
                        (Lang::En, false) => {
                            format!("schedule {schedule}: {word}; explored: {}", verdict_word(saved, lang))
                        }
                        (Lang::Vi, true) => format!("lịch {schedule}: {word}, như khi duyệt"),
                        (Lang::Vi, false) => {
                            format!("lịch {schedule}: {word}; khi duyệt: {}", verdict_word(saved, lang))
                        }
                    };
                    format!("{head}\n{}", report.outcome_lines(shown, lang))
                };
                Streamed::Verdict { en: said(Lang::En), vi: said(Lang::Vi), matched: class.verdict == saved }
            }
            _ => Streamed::Failed { line: "the replay reported no run".into() },
        },
        Ok((_, None)) => Streamed::Failed {
            line: format!(
                "schedule {schedule} did not run to its end: the lab's steps have changed since it was explored"
            ),
        },
        Err(line) => Streamed::Failed { line },
    };
    let _ = tx.send(last);
}

fn verdict_word(v: Verdict, lang: Lang) -> &'static str {
    match (v, lang) {
        (Verdict::Wrong, Lang::En) => "wrong",
        (Verdict::Right, Lang::En) => "right",
        (Verdict::Unknown, Lang::En) => "unknown",
        (Verdict::Wrong, Lang::Vi) => "SAI",
        (Verdict::Right, Lang::Vi) => "ĐÚNG",
        (Verdict::Unknown, Lang::Vi) => "không rõ",
    }
}

/// Run `variant` of `lab` once as `ordlab run <lab> --variant <v> --runs 1` does, its timeline
/// lines to `tx` as they are recorded, then its verdict.
async fn run_streamed(lab: Scenario, variant: String, opts: &ServeOptions, tx: mpsc::UnboundedSender<Streamed>) {
    let mut run = RunOptions::new(opts.scale, rand::random());
    run.runs = Some(1);
    run.command_line = format!("ordlab serve: ordlab run {} --variant {variant} --runs 1", lab.id);
    if let Some(v) = lab.variant(&variant) {
        run.on_event = Some(live_lines(v.procedure.shows_publishing(), v.procedure.many_orders(), tx.clone()));
    }
    run.variant = Some(variant);
    let reports =
        crate::schedule::run_labs(std::slice::from_ref(&lab), &run, &opts.services, 1, opts.exe.clone(), &mut |_| {})
            .await;
    let last = match reports {
        Ok(reports) => match reports.first().and_then(|r| r.variants.first().map(|v| (r, v))) {
            Some((r, v)) => Streamed::Verdict {
                en: r.outcome_lines(v, Lang::En),
                vi: r.outcome_lines(v, Lang::Vi),
                matched: r.matched(),
            },
            None => Streamed::Failed { line: "the run reported no variant".into() },
        },
        Err(e) => Streamed::Failed { line: e.to_string() },
    };
    let _ = tx.send(last);
}

/// A run's events as the text report's lines in both languages, numbered, `t_ms` from the
/// first line shown (the run's own t=0, the producer's start, is known only once it is over).
fn live_lines(
    show_publish: bool,
    many_orders: bool,
    tx: mpsc::UnboundedSender<Streamed>,
) -> crate::timeline::live::OnEvent {
    let seq = AtomicU64::new(0);
    let first_ns: Mutex<Option<u64>> = Mutex::new(None);
    Arc::new(move |raw: &RawEvent| {
        let event = raw.clone().at(raw.mono_ns);
        let line = |lang| shown_line(&event, show_publish, &Wording { lang, many_orders, redact: Redactor::NONE });
        let (Some(en), Some(vi)) = (line(Lang::En), line(Lang::Vi)) else { return };
        let t0 = *first_ns.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(raw.mono_ns);
        let t_ms = (raw.mono_ns as i64 - t0 as i64) / 1_000_000;
        let _ = tx.send(Streamed::Line { seq: seq.fetch_add(1, Ordering::SeqCst) + 1, t_ms, en, vi });
    })
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

async fn answer(req: Request<Incoming>, site: &Site) -> Response<Body> {
    if let Err(guard::Refusal(why)) = site.guard.check(req.method(), req.uri().path(), req.headers()) {
        eprintln!("ordlab serve: refused {why}");
        return one_line_reply(StatusCode::FORBIDDEN, &format!("refused {why}"));
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/" | "/index.html") => reply(StatusCode::OK, "text/html; charset=utf-8", site.page.clone()),
        (&Method::POST, "/run") => start_run(req, site).await,
        (m, p) => one_line_reply(StatusCode::NOT_FOUND, &format!("{m} {p}: the page is GET /, a run is POST /run")),
    }
}

/// `POST /run`: the form's lab and variant to the run loop; its events as they come.
async fn start_run(req: Request<Incoming>, site: &Site) -> Response<Body> {
    let body = match http_body_util::Limited::new(req.into_body(), MAX_FORM_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return one_line_reply(StatusCode::BAD_REQUEST, &format!("POST /run body: {e}")),
    };
    let form = form_fields(&body);
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let schedule = field("schedule").filter(|s| !s.is_empty());
    let (Some(lab), Some(variant)) = (field("lab"), field("variant")) else {
        return one_line_reply(
            StatusCode::BAD_REQUEST,
            "POST /run needs the form fields lab and variant (lab=baseline&variant=baseline)",
        );
    };
    let (reply_tx, reply_rx) = oneshot::channel();
    if site.requests.send(RunRequest { lab, variant, schedule, reply: reply_tx }).is_err() {
        return one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    let events = match reply_rx.await {
        Ok(Ok(events)) => events,
        Ok(Err(Refused::Unknown(why))) => return one_line_reply(StatusCode::NOT_FOUND, &why),
        Ok(Err(Refused::Busy(why))) => return one_line_reply(StatusCode::CONFLICT, &why),
        Err(_) => return one_line_reply(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
    };
    let frames = futures::stream::unfold(events, |mut events| async move {
        let message = events.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(message.sse())), events))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(StreamBody::new(frames).boxed())
        .expect("a valid response")
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
        }];
        assert_eq!(saved_class(&saved, "s1", "s1", "C1.P"), Ok(Verdict::Wrong));
        let other = saved_class(&saved, "s1", "s1", "P.P").unwrap_err();
        assert!(other.contains("not a class of the saved exploration of s1/s1") && !other.contains('\n'), "{other}");
        let none = saved_class(&saved, "lock", "s4a", "P").unwrap_err();
        assert!(none.contains("ordlab explore lock --variant s4a --out"), "{none}");
    }

    #[test]
    fn each_message_is_one_server_sent_event() {
        let sse = Streamed::Line { seq: 3, t_ms: 54, en: "C1 wrote".into(), vi: "C1 ghi".into() }.sse();
        let text = std::str::from_utf8(&sse).unwrap();
        assert!(text.starts_with("event: line\ndata: {") && text.ends_with("}\n\n"), "{text}");
        assert!(text.contains(r#""seq":3"#) && text.contains(r#""t_ms":54"#));
    }
}
