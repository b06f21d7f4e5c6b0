//! The side-effect sink on a real PostgreSQL server: every request is in its ledger with what
//! it did; an idempotency key makes a second request a replay; injected failures refuse or
//! apply-then-fail; a request whose caller dies still completes; concurrent requests with one
//! key make one effect.

use super::support;
use ordlab::fault::{Action, Fault, FaultEvent, TimeScale};
use ordlab::service::readiness::{poll_until, Attempt};
use ordlab::service::Services;
use ordlab::side_effect::{EffectOutcome, EffectRequest, SideEffectSink, SinkConfig, SinkError};
use ordlab::timeline::Actor;
use std::time::Duration;

/// The partner's `action` on `job`'s first request, as a scenario declares it.
fn partner(job: &str, action: Action) -> Fault {
    let word = match action {
        Action::Refuse => "refuse",
        _ => "lose-reply",
    };
    let table = format!(r#"{{ on = "partner", event = "request", job = "{job}", action = "{word}" }}"#);
    toml::from_str::<toml::Value>(&format!("f = {table}")).unwrap()["f"].clone().try_into().unwrap()
}

fn req<'a>(job: &'a str, effect: &'a str, key: Option<&'a str>) -> EffectRequest<'a> {
    EffectRequest { job, effect, idem_key: key, actor: Actor::Consumer(1), delivery: Some(1) }
}

fn outcomes(records: &[ordlab::side_effect::EffectRecord]) -> Vec<(String, EffectOutcome)> {
    records.iter().map(|r| (r.job.clone(), r.outcome)).collect()
}

#[tokio::test]
async fn the_ledger_records_every_request_and_a_key_makes_one_effect() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let root = SinkConfig::prepare(&services.pg_config).await.expect("sink prepared");
    assert_eq!(SinkConfig::prepare(&services.pg_config).await.expect("prepared twice"), root);
    let sink = SideEffectSink::connect(&root.for_run("t:1")).await.unwrap();
    sink.reset().await.unwrap();
    // No key: the partner cannot tell a retry from a new request.
    sink.perform(&req("job-1", "email", None)).await.unwrap();
    sink.perform(&req("job-1", "email", None)).await.unwrap();
    // A key: the second request gets the first one's receipt, and nothing happens.
    let first = sink.perform(&req("job-2", "charge", Some("job-2"))).await.unwrap();
    let again = sink.perform(&req("job-2", "charge", Some("job-2"))).await.unwrap();
    assert!(!first.replayed && again.replayed);
    assert_eq!(again.first_request, first.request_id);
    // Refused once: nothing happens and the key is not used up.
    sink.add_fault(&partner("job-3", Action::Refuse), TimeScale::REAL).await.unwrap();
    let refused = sink.perform(&req("job-3", "charge", Some("job-3"))).await;
    assert!(matches!(refused, Err(SinkError::Refused { .. })), "{refused:?}");
    assert!(!sink.perform(&req("job-3", "charge", Some("job-3"))).await.unwrap().replayed);
    // Applied, then the reply is lost: the caller sees an error, the ledger an effect.
    sink.add_fault(&partner("job-4", Action::LoseReply), TimeScale::REAL).await.unwrap();
    let lost = sink.perform(&req("job-4", "charge", None)).await;
    assert!(matches!(lost, Err(SinkError::ReplyLost { .. })), "{lost:?}");
    // Another run's scope sees none of it.
    let other = SideEffectSink::connect(&root.for_run("t:2")).await.unwrap();
    other.reset().await.unwrap();
    other.perform(&req("job-1", "email", None)).await.unwrap();
    let records = sink.records().await.unwrap();
    use EffectOutcome::*;
    let want = [
        ("job-1", Applied),
        ("job-1", Applied),
        ("job-2", Applied),
        ("job-2", Replayed),
        ("job-3", Refused),
        ("job-3", Applied),
        ("job-4", Applied),
    ];
    assert_eq!(outcomes(&records), want.map(|(j, o)| (j.to_string(), o)));
    assert_eq!(records[3].replay_of, Some(first.request_id));
    assert_eq!(records[0].actor, Actor::Consumer(1));
    assert!(records.windows(2).all(|w| w[0].mono_ns <= w[1].mono_ns), "stamped at send time, in order");
    // Each request a fault hit names it, and is a fault event on the timeline.
    assert_eq!(records[4].fault, Some(partner("job-3", Action::Refuse)));
    assert_eq!(records[5].fault, None, "refused once only");
    let fired: Vec<Fault> = ordlab::side_effect::timeline_events(&records)
        .iter()
        .filter_map(|e| match e.kind.family::<FaultEvent>() {
            Some(FaultEvent::FaultFired { fault, .. }) => Some(fault),
            _ => None,
        })
        .collect();
    assert_eq!(fired, [partner("job-3", Action::Refuse), partner("job-4", Action::LoseReply)]);
    sink.reset().await.unwrap();
    assert!(sink.records().await.unwrap().is_empty());
    assert_eq!(other.records().await.unwrap().len(), 1);
    services.stop().await;
}

#[tokio::test]
async fn the_partner_delays_the_nth_request_of_an_effect_and_answers_it_then() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let cfg = SinkConfig::prepare(&services.pg_config).await.unwrap().for_run("t:delay");
    let sink = SideEffectSink::connect(&cfg).await.unwrap();
    sink.reset().await.unwrap();
    let table = r#"f = { on = "partner", event = "email", nth = 2, action = { delay_ms = 600 } }"#;
    let delay: Fault = toml::from_str::<toml::Value>(table).unwrap()["f"].clone().try_into().unwrap();
    sink.add_fault(&delay, TimeScale::REAL).await.unwrap();
    let mut took = Vec::new();
    for (job, effect) in [("job-1", "email"), ("job-1", "charge"), ("job-2", "email"), ("job-3", "email")] {
        let t = std::time::Instant::now();
        sink.perform(&req(job, effect, None)).await.unwrap();
        took.push(t.elapsed().as_millis());
    }
    // The second e-mail (job-2's) waits 600 ms; the charge in between is no e-mail.
    assert!(took[2] >= 590 && took[0] < 300 && took[1] < 300 && took[3] < 300, "{took:?}");
    let records = sink.records().await.unwrap();
    assert_eq!(records.iter().map(|r| r.fault.is_some()).collect::<Vec<_>>(), [false, false, true, false]);
    assert!(records.iter().all(|r| r.outcome == EffectOutcome::Applied), "a delay applies the effect");
    services.stop().await;
}

#[tokio::test]
async fn concurrent_requests_with_one_key_make_one_effect() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let cfg = SinkConfig::prepare(&services.pg_config).await.unwrap().for_run("t:race");
    let (a, b) = (SideEffectSink::connect(&cfg).await.unwrap(), SideEffectSink::connect(&cfg).await.unwrap());
    a.reset().await.unwrap();
    // Slow enough that the two requests overlap however the scheduler runs them.
    a.set_latency("charge", Duration::from_millis(300)).await.unwrap();
    let r = req("job-1", "charge", Some("k"));
    let (ra, rb) = tokio::join!(a.perform(&r), b.perform(&r));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_ne!(ra.replayed, rb.replayed, "exactly one of the two is the effect: {ra:?} {rb:?}");
    let applied = a.records().await.unwrap().iter().filter(|r| r.outcome == EffectOutcome::Applied).count();
    assert_eq!(applied, 1);
    services.stop().await;
}

#[tokio::test]
async fn a_request_whose_caller_dies_still_happens() {
    let services = Services::start(&support::local()).await.expect("local servers start");
    let cfg = SinkConfig::prepare(&services.pg_config).await.unwrap().for_run("t:inflight");
    let ledger = SideEffectSink::connect(&cfg).await.unwrap();
    ledger.reset().await.unwrap();
    ledger.set_latency("charge", Duration::from_millis(500)).await.unwrap();
    let caller = SideEffectSink::connect(&cfg).await.unwrap();
    let request = tokio::spawn(async move { caller.perform(&req("job-1", "charge", None)).await });
    // Wait until the sink is working on it, then drop the caller and its connection.
    let watcher = ordlab::connect::postgres(&cfg.pg_config).await.unwrap();
    let running = poll_until(Duration::from_secs(10), Duration::from_millis(5), || async {
        let n: i64 = watcher
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%FROM ordlab_sink.perform_effect%' AND state = 'active' AND pid <> pg_backend_pid()", &[])
            .await
            .map(|r| r.get(0))
            .unwrap_or(0);
        if n > 0 { Attempt::Ready(()) } else { Attempt::Retry("not running yet".into()) }
    })
    .await;
    assert!(running.is_ok(), "{running:?}");
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());
    let applied = poll_until(Duration::from_secs(10), Duration::from_millis(20), || async {
        match ledger.records().await {
            Ok(r) if r.iter().any(|r| r.outcome == EffectOutcome::Applied) => Attempt::Ready(r.len()),
            _ => Attempt::Retry("not in the ledger yet".into()),
        }
    })
    .await;
    assert_eq!(applied, Ok(1), "the partner finished the request its caller abandoned");
    services.stop().await;
}

/// `POST /email` over a fresh connection (`Connection: close`): the status and body, or None
/// when the connection closed with no reply.
async fn post(addr: std::net::SocketAddr, body: &str, key: Option<&str>) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let key = key.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
    let req = format!(
        "POST /email HTTP/1.1\r\nHost: sink\r\nContent-Type: application/json\r\n{key}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut reply = String::new();
    let _ = conn.read_to_string(&mut reply).await;
    let status = reply.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

#[tokio::test]
async fn the_sink_over_http_records_in_the_same_ledger_replays_a_key_and_refuses_with_503() {
    use ordlab::side_effect::http::HttpSink;
    let services = Services::start(&support::local()).await.expect("local servers start");
    let cfg = SinkConfig::prepare(&services.pg_config).await.expect("sink prepared").for_run("http:1");
    let ledger = SideEffectSink::connect(&cfg).await.unwrap();
    ledger.reset().await.unwrap();
    ledger.add_fault(&partner("job-2", Action::Refuse), TimeScale::REAL).await.unwrap();
    ledger.add_fault(&partner("job-3", Action::LoseReply), TimeScale::REAL).await.unwrap();
    let http = HttpSink::start(cfg.clone()).await.unwrap();
    let job = |j: &str| format!(r#"{{"job": "{j}", "from": "W1"}}"#);
    let outcome = |r: Option<(u16, String)>| {
        let (status, body) = r.expect("a reply");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{body}: {e}"));
        (status, v["outcome"].as_str().unwrap_or("").to_string())
    };
    // One key, twice: applied, then the first request's receipt.
    assert_eq!(outcome(post(http.addr, &job("job-1"), Some("k1")).await), (200, "applied".into()));
    assert_eq!(outcome(post(http.addr, &job("job-1"), Some("k1")).await), (200, "replayed".into()));
    // Refused: a 503, nothing happens.
    assert_eq!(outcome(post(http.addr, &job("job-2"), None).await), (503, "refused".into()));
    // Applied, then the reply is dropped: the connection closes with no answer.
    assert_eq!(post(http.addr, &job("job-3"), None).await, None);
    // Bad input is a 400, and not in the ledger.
    assert_eq!(post(http.addr, r#"{"job": "job-4"}"#, None).await.map(|r| r.0), Some(400));
    use EffectOutcome::*;
    let want = [("job-1", Applied), ("job-1", Replayed), ("job-2", Refused), ("job-3", Applied)];
    let records = ledger.records().await.unwrap();
    assert_eq!(outcomes(&records), want.map(|(j, o)| (j.to_string(), o)));
    assert!(records.iter().all(|r| r.actor == Actor::Worker(1) && r.effect == "email"), "{records:?}");
    drop(http);
    services.stop().await;
}
