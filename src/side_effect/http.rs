//! The side-effect sink served over HTTP on loopback, for workers that are not ordlab's own: a
//! `POST /<effect>` is one [`SideEffectSink::perform`] call, so it lands in the same ledger and
//! the same effect-count checker counts it.
//!
//! The request is `POST /email` with a JSON body `{"job": "job-000001", "from": "W1"}`
//! (optionally `"delivery": 2`) and an optional `Idempotency-Key` header. The answer is 200
//! `{"outcome": "applied" | "replayed", "request": <id>}`; a refused request (an injected
//! [`SinkFault`](super::SinkFault) of kind `refuse`) is 503 `{"outcome": "refused"}`; an
//! `apply-then-fail` fault applies the effect and closes the connection without a reply (the
//! caller sees a network error and cannot tell the e-mail went). The sink's latency
//! ([`SideEffectSink::set_latency`]) delays the reply, as for ordlab's own workers. Each HTTP
//! connection gets its own ledger connection, so one slow request never holds up another's.
//!
//! An [`Observer`] (optional) is told of each effect performed before its caller gets the
//! answer: a lab acts at that moment (enqueues more jobs, stops the worker) while the handler
//! that asked waits, so what it does comes after the effect and before the handler goes on.

use super::{EffectRequest, SideEffectSink, SinkConfig, SinkError};
use crate::timeline::Actor;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// An injected `apply-then-fail`: the effect happened, the reply must not reach the caller
/// (hyper closes the connection when the service fails).
#[derive(Debug, thiserror::Error)]
#[error("the reply is dropped on purpose (apply-then-fail)")]
pub struct ReplyDropped;

/// An effect the sink performed, as an [`Observer`] is told of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Performed {
    pub job: String,
    pub effect: String,
    pub actor: Actor,
}

/// Called with each effect performed; the caller's answer waits until its future is done.
pub type Observer = Arc<dyn Fn(Performed) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The HTTP sink of one run; dropping it stops the server and every connection.
pub struct HttpSink {
    pub addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

/// What a worker sends: the job and who asks.
#[derive(Debug, serde::Deserialize)]
struct EffectBody {
    job: String,
    from: String,
    #[serde(default)]
    delivery: Option<u32>,
}

impl HttpSink {
    /// Listen on a free loopback port; each request is recorded in `cfg`'s ledger (its run).
    pub async fn start(cfg: SinkConfig) -> Result<HttpSink, SinkError> {
        HttpSink::start_observed(cfg, None).await
    }

    /// [`HttpSink::start`], each performed effect told to `observer` before its answer.
    pub async fn start_observed(cfg: SinkConfig, observer: Option<Observer>) -> Result<HttpSink, SinkError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(SinkError::Listen)?;
        let addr = listener.local_addr().map_err(SinkError::Listen)?;
        let cfg = Arc::new(cfg);
        let accept = tokio::spawn(async move {
            // Owned here: aborting this task drops the set, which aborts every connection.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => { connections.spawn(serve_connection(stream, cfg.clone(), observer.clone())); }
                        Err(_) => return,
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(HttpSink { addr, accept })
    }

    /// `http://127.0.0.1:<port>`: a worker POSTs to `<url>/email`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One HTTP/1.1 connection (keep-alive), with its own ledger connection opened at its first
/// request.
async fn serve_connection(stream: tokio::net::TcpStream, cfg: Arc<SinkConfig>, observer: Option<Observer>) {
    let _ = stream.set_nodelay(true);
    let ledger: Arc<tokio::sync::OnceCell<SideEffectSink>> = Arc::new(tokio::sync::OnceCell::new());
    let service = hyper::service::service_fn(move |req| {
        let (cfg, ledger, observer) = (cfg.clone(), ledger.clone(), observer.clone());
        async move { answer(req, &cfg, &ledger, observer.as_ref()).await }
    });
    // An error here is a dropped reply (on purpose) or a caller that went away: nothing to do.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

fn json(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid response")
}

fn bad_request(why: String) -> Response<Full<Bytes>> {
    json(StatusCode::BAD_REQUEST, serde_json::json!({ "error": why }))
}

/// One request: parse it, perform the effect, map the sink's answer to HTTP.
async fn answer(
    req: Request<Incoming>,
    cfg: &SinkConfig,
    ledger: &tokio::sync::OnceCell<SideEffectSink>,
    observer: Option<&Observer>,
) -> Result<Response<Full<Bytes>>, ReplyDropped> {
    let effect = req.uri().path().trim_matches('/').to_string();
    if req.method() != hyper::Method::POST || effect.is_empty() || effect.contains('/') {
        let why = format!("{} {}: use POST /<effect> (e.g. /email)", req.method(), req.uri().path());
        return Ok(json(StatusCode::NOT_FOUND, serde_json::json!({ "error": why })));
    }
    let idem_key = req.headers().get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(bad_request(format!("body: {e}"))),
    };
    let body: EffectBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return Ok(bad_request(format!("body: {e}; send {{\"job\": \"…\", \"from\": \"W1\"}}"))),
    };
    let Ok(actor) = Actor::try_from(body.from.clone()) else {
        return Ok(bad_request(format!("from = {:?}: use the worker's name, as ORDLAB_WORKER says", body.from)));
    };
    let sink = match ledger.get_or_try_init(|| SideEffectSink::connect(cfg)).await {
        Ok(s) => s,
        Err(e) => return Ok(json(StatusCode::INTERNAL_SERVER_ERROR, serde_json::json!({ "error": e.to_string() }))),
    };
    let request = EffectRequest {
        job: &body.job,
        effect: &effect,
        idem_key: idem_key.as_deref(),
        actor,
        delivery: body.delivery,
    };
    match sink.perform(&request).await {
        Ok(receipt) => {
            if let Some(observe) = observer {
                observe(Performed { job: body.job.clone(), effect: effect.clone(), actor }).await;
            }
            let outcome = if receipt.replayed { "replayed" } else { "applied" };
            Ok(json(StatusCode::OK, serde_json::json!({ "outcome": outcome, "request": receipt.first_request })))
        }
        Err(SinkError::Refused { .. }) => {
            Ok(json(StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({ "outcome": "refused" })))
        }
        Err(SinkError::ReplyLost { .. }) => Err(ReplyDropped),
        Err(e) => Ok(json(StatusCode::INTERNAL_SERVER_ERROR, serde_json::json!({ "error": e.to_string() }))),
    }
}
