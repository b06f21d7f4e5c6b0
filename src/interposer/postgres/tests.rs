//! The parsers, the session and the proxy on hand-written frames.

use super::frontend::SSL_REQUEST;
use super::proxy::serve;
use super::*;
use crate::interposer::limits::{HELD_MAX, PG_MESSAGE_MAX};
use crate::interposer::Exchange;
use crate::timeline::ServerKind;
use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---- frame builders (what a client library and the server put on the wire) ----

fn typed(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

fn startup(user: &str) -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec();
    body.extend(cstr("user"));
    body.extend(cstr(user));
    body.push(0);
    let mut v = (body.len() as i32 + 4).to_be_bytes().to_vec();
    v.extend(body);
    v
}

fn ssl_request() -> Vec<u8> {
    let mut v = 8i32.to_be_bytes().to_vec();
    v.extend(SSL_REQUEST.to_be_bytes());
    v
}

fn query(sql: &str) -> Vec<u8> {
    typed(b'Q', &cstr(sql))
}

fn parse(statement: &str, sql: &str, oids: &[u32]) -> Vec<u8> {
    let mut b = cstr(statement);
    b.extend(cstr(sql));
    b.extend((oids.len() as i16).to_be_bytes());
    for oid in oids {
        b.extend(oid.to_be_bytes());
    }
    typed(b'P', &b)
}

fn bind(portal: &str, statement: &str, formats: &[i16], values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(cstr(statement));
    b.extend((formats.len() as i16).to_be_bytes());
    for f in formats {
        b.extend(f.to_be_bytes());
    }
    b.extend((values.len() as i16).to_be_bytes());
    for v in values {
        match v {
            None => b.extend((-1i32).to_be_bytes()),
            Some(v) => {
                b.extend((v.len() as i32).to_be_bytes());
                b.extend_from_slice(v);
            }
        }
    }
    b.extend(0i16.to_be_bytes()); // result formats
    typed(b'B', &b)
}

fn execute(portal: &str) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(0i32.to_be_bytes());
    typed(b'E', &b)
}

fn sync() -> Vec<u8> {
    typed(b'S', &[])
}

fn command_complete(tag: &str) -> Vec<u8> {
    typed(b'C', &cstr(tag))
}

fn error(sqlstate: &str, message: &str) -> Vec<u8> {
    let mut b = b"SERROR\0".to_vec();
    b.extend(b"C");
    b.extend(cstr(sqlstate));
    b.extend(b"M");
    b.extend(cstr(message));
    b.push(0);
    typed(b'E', &b)
}

fn ready(status: u8) -> Vec<u8> {
    typed(b'Z', &[status])
}

fn data_row(value: &str) -> Vec<u8> {
    let mut b = 1i16.to_be_bytes().to_vec();
    b.extend((value.len() as i32).to_be_bytes());
    b.extend(value.as_bytes());
    typed(b'D', &b)
}

fn auth_ok() -> Vec<u8> {
    typed(b'R', &0i32.to_be_bytes())
}

// ---- driving the pure parts ----

fn frontend_all(parser: &mut FrontendParser, bytes: &[u8]) -> Vec<FrontendMessage> {
    let mut at = 0;
    let mut out = Vec::new();
    while let Some((len, m)) = parser.next(&bytes[at..]).expect("well-formed") {
        out.push(m);
        at += len;
    }
    assert_eq!(at, bytes.len(), "every byte belongs to a message");
    out
}

/// Feed `bytes` to a parser's `next` in two chunks cut at `cut`, as reads from a socket
/// would come.
fn chunked<M>(bytes: &[u8], cut: usize, mut next: impl FnMut(&[u8]) -> Option<(usize, M)>) -> Vec<M> {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in [&bytes[..cut], &bytes[cut..]] {
        buf.extend_from_slice(chunk);
        while let Some((len, m)) = next(&buf) {
            let _ = buf.split_to(len);
            out.push(m);
        }
    }
    assert!(buf.is_empty());
    out
}

fn backend_chunked(bytes: &[u8], cut: usize) -> Vec<BackendMessage> {
    let mut parser = BackendParser::new();
    chunked(bytes, cut, |b| parser.next(b).expect("well-formed"))
}

fn frontend_chunked(bytes: &[u8], cut: usize) -> Vec<FrontendMessage> {
    let mut parser = FrontendParser::new();
    chunked(bytes, cut, |b| parser.next(b).expect("well-formed"))
}

/// Run a conversation through a session: the client's messages, then the server's;
/// returns the recorded exchanges (replied_ns = the index of the server message).
fn converse(client: &[u8], server: &[u8]) -> Vec<Exchange> {
    let mut session = Session::new(1);
    let mut parser = FrontendParser { typed: true, ..Default::default() };
    for m in frontend_all(&mut parser, client) {
        session.client_sent(&m);
    }
    session.server_sent(&BackendMessage::ReadyForQuery { status: TransactionStatus::Idle }, 0);
    let mut exchanges = Vec::new();
    for (i, m) in backend_chunked(server, 0).iter().enumerate() {
        if let Some(x) = session.server_sent(m, i as u64).finished {
            exchanges.push(x);
        }
    }
    exchanges
}

fn exchange(args: &[&str], reply: &str, error: bool, replied_ns: u64) -> Exchange {
    Exchange {
        entries: Vec::new(),
        server: ServerKind::Postgres,
        connection: 1,
        args: args.iter().map(|s| s.to_string()).collect(),
        reply: reply.into(),
        error,
        replied_ns,
        sent_ns: None,
    }
}

#[test]
fn the_startup_phase_has_ssl_request_then_startup_then_typed_messages() {
    let mut bytes = ssl_request();
    bytes.extend(startup("ordlab"));
    bytes.extend(query("SELECT 1"));
    let messages = frontend_all(&mut FrontendParser::new(), &bytes);
    assert_eq!(
        messages,
        vec![
            FrontendMessage::SslRequest,
            FrontendMessage::Startup { protocol: 196608 },
            FrontendMessage::Query { sql: "SELECT 1".into() },
        ]
    );
}

#[test]
fn a_simple_query_is_one_exchange_with_its_tag() {
    let client = query("UPDATE orders SET status = 'paid' WHERE id = 7");
    let server = [command_complete("UPDATE 1"), ready(b'I')].concat();
    assert_eq!(
        converse(&client, &server),
        vec![exchange(&["UPDATE orders SET status = 'paid' WHERE id = 7"], "UPDATE 1", false, 0)]
    );
}

#[test]
fn a_query_of_several_statements_joins_its_tags() {
    let client = query("BEGIN; SELECT 1; COMMIT");
    let server = [
        command_complete("BEGIN"),
        data_row("1"),
        command_complete("SELECT 1"),
        command_complete("COMMIT"),
        ready(b'I'),
    ]
    .concat();
    assert_eq!(
        converse(&client, &server),
        vec![exchange(&["BEGIN; SELECT 1; COMMIT"], "BEGIN; SELECT 1; COMMIT", false, 0)]
    );
}

#[test]
fn an_extended_batch_records_the_statement_with_its_text_and_binary_parameters() {
    let sql = "UPDATE orders SET status = $1, attempts = $2, version = $3, note = $4, blob = $5 WHERE id = $6";
    let client = [
        parse("", sql, &[25, 23, 20, 25, 17, 0]),
        bind(
            "",
            "",
            &[0, 1, 1, 0, 1, 0],
            &[
                Some(b"paid"),
                Some(&3i32.to_be_bytes()),
                Some(&(-9i64).to_be_bytes()),
                None,
                Some(&[0xde, 0xad]),
                Some(b"7"),
            ],
        ),
        execute(""),
        sync(),
    ]
    .concat();
    let server = [typed(b'1', &[]), typed(b'2', &[]), command_complete("UPDATE 1"), ready(b'I')].concat();
    assert_eq!(
        converse(&client, &server),
        vec![exchange(&[sql, "paid", "3", "-9", "NULL", "\\xdead", "7"], "UPDATE 1", false, 2)]
    );
}

#[test]
fn a_pipeline_of_two_executes_before_one_sync_records_both_in_order() {
    let client = [
        parse("get", "SELECT id FROM orders WHERE status = $1", &[]),
        bind("", "get", &[], &[Some(b"new")]),
        execute(""),
        parse("", "UPDATE orders SET status = 'taken' WHERE id = $1", &[]),
        bind("", "", &[], &[Some(b"7")]),
        execute(""),
        sync(),
    ]
    .concat();
    let server = [
        typed(b'1', &[]),
        typed(b'2', &[]),
        data_row("7"),
        data_row("8"),
        command_complete("SELECT 2"),
        typed(b'1', &[]),
        typed(b'2', &[]),
        command_complete("UPDATE 1"),
        ready(b'I'),
    ]
    .concat();
    assert_eq!(
        converse(&client, &server),
        vec![
            exchange(&["SELECT id FROM orders WHERE status = $1", "new"], "SELECT 2", false, 4),
            exchange(&["UPDATE orders SET status = 'taken' WHERE id = $1", "7"], "UPDATE 1", false, 7),
        ]
    );
}

#[test]
fn an_error_in_a_transaction_skips_the_batch_and_rollback_still_works() {
    let insert = "INSERT INTO orders (id) VALUES ($1)";
    let client = [
        query("BEGIN"),
        parse("", insert, &[]),
        bind("", "", &[], &[Some(b"7")]),
        execute(""),
        parse("", "UPDATE orders SET status = 'x'", &[]),
        bind("", "", &[], &[]),
        execute(""),
        sync(),
        query("ROLLBACK"),
    ]
    .concat();
    let server = [
        command_complete("BEGIN"),
        ready(b'T'),
        typed(b'1', &[]),
        typed(b'2', &[]),
        error("23505", "duplicate key value violates unique constraint \"orders_pkey\""),
        ready(b'E'),
        command_complete("ROLLBACK"),
        ready(b'I'),
    ]
    .concat();
    let mut session = Session::new(1);
    let mut parser = FrontendParser { typed: true, ..Default::default() };
    for m in frontend_all(&mut parser, &client) {
        session.client_sent(&m);
    }
    session.server_sent(&BackendMessage::ReadyForQuery { status: TransactionStatus::Idle }, 0);
    let mut exchanges = Vec::new();
    let mut statuses = Vec::new();
    for (i, m) in backend_chunked(&server, 0).iter().enumerate() {
        exchanges.extend(session.server_sent(m, i as u64).finished);
        if let BackendMessage::ReadyForQuery { .. } = m {
            statuses.push(session.transaction_status());
        }
    }
    assert_eq!(
        exchanges,
        vec![
            exchange(&["BEGIN"], "BEGIN", false, 0),
            exchange(&[insert, "7"], "23505 duplicate key value violates unique constraint \"orders_pkey\"", true, 4),
            exchange(&["ROLLBACK"], "ROLLBACK", false, 6),
        ],
        "the skipped UPDATE is recorded as nothing"
    );
    use TransactionStatus::*;
    assert_eq!(statuses, vec![Some(InTransaction), Some(Failed), Some(Idle)]);
}

#[test]
fn a_serialization_failure_in_a_simple_query_is_an_error_reply() {
    let client = query("UPDATE orders SET status = 'paid' WHERE id = 7");
    let server = [error("40001", "could not serialize access due to concurrent update"), ready(b'E')].concat();
    let x = &converse(&client, &server)[0];
    assert_eq!(x.reply, "40001 could not serialize access due to concurrent update");
    assert!(x.error);
}

#[test]
fn frames_split_at_every_byte_offset_parse_the_same() {
    let server = [
        auth_ok(),
        typed(b'S', &[cstr("server_version"), cstr("17.0")].concat()),
        ready(b'I'),
        typed(b'1', &[]),
        data_row("7"),
        command_complete("SELECT 1"),
        error("40001", "could not serialize access"),
        ready(b'E'),
    ]
    .concat();
    let whole = backend_chunked(&server, 0);
    assert_eq!(whole.len(), 8);
    for cut in 0..=server.len() {
        assert_eq!(backend_chunked(&server, cut), whole, "server bytes cut at {cut}");
    }

    let client = [
        ssl_request(),
        startup("ordlab"),
        parse("s1", "SELECT $1", &[23]),
        bind("", "s1", &[1], &[Some(&42i32.to_be_bytes())]),
        execute(""),
        sync(),
        query("COMMIT"),
    ]
    .concat();
    let whole = frontend_chunked(&client, 0);
    assert_eq!(whole.len(), 7);
    for cut in 0..=client.len() {
        assert_eq!(frontend_chunked(&client, cut), whole, "client bytes cut at {cut}");
    }
}

#[test]
fn a_malformed_frame_is_an_error_not_a_panic() {
    assert_eq!(
        FrontendParser { typed: true, ..Default::default() }.next(&[b'Q', 0, 0, 0, 2]),
        Err(FrameError::BadLength(2))
    );
    // A Bind whose value runs past the end of its frame.
    let bad_bind = typed(b'B', &[0, 0, 0, 0, 0, 1, 0, 0, 0, 9, b'x']);
    assert_eq!(FrontendParser { typed: true, ..Default::default() }.next(&bad_bind), Err(FrameError::Truncated('B')));
    assert!(BackendParser::new().next(&typed(b'Z', b"?")).is_err());
    assert!(FrontendParser::new().next(&[0, 0, 0, 4, 0, 0, 0, 0]).is_err());
}

#[test]
fn lengths_over_the_server_s_limits_are_refused_at_their_length_word() {
    let typed = || FrontendParser { typed: true, ..Default::default() };
    let over = [b'Q', 0x7f, 0xff, 0xff, 0xf0];
    assert_eq!(typed().next(&over), Err(Breach::PgMessage { tag: 'Q', len: 0x7fff_fff0 }.into()));
    let max = PG_MESSAGE_MAX as i32;
    assert_eq!(
        typed().next(&[[b'Q'].as_slice(), &(max + 1).to_be_bytes()].concat()),
        Err(Breach::PgMessage { tag: 'Q', len: (max + 1).into() }.into())
    );
    assert_eq!(typed().next(&[[b'Q'].as_slice(), &max.to_be_bytes()].concat()), Ok(None), "exactly the limit waits");
    // The start-up packet: its length less its own 4 bytes within 4..=10 000.
    let startup_of = |len: i32| FrontendParser::new().next(&len.to_be_bytes());
    assert_eq!(startup_of(10_005), Err(Breach::PgStartup { len: 10_005 }.into()));
    assert_eq!(startup_of(0x7fff_fff0), Err(Breach::PgStartup { len: 0x7fff_fff0 }.into()));
    assert_eq!(startup_of(7), Err(Breach::PgStartup { len: 7 }.into()));
    assert_eq!(startup_of(10_004), Ok(None), "exactly the limit waits");
}

#[test]
fn a_large_legal_message_comes_as_its_head_then_pieces_never_held_whole() {
    let sql = format!("SELECT '{}'", "x".repeat(3 * HELD_MAX));
    let q = query(&sql);
    let mut parser = FrontendParser { typed: true, ..Default::default() };
    assert_eq!(parser.next(&q[..HELD_MAX - 1]), Ok(None), "a head is held whole");
    let (len, head) = parser.next(&q).unwrap().unwrap();
    assert_eq!(len, HELD_MAX);
    let FrontendMessage::Query { sql: shown } = head else { panic!("{head:?}") };
    assert!(shown.starts_with("SELECT 'xxx") && shown.ends_with('…') && shown.len() < HELD_MAX);
    let mut at = len;
    for piece in [7usize, 64 * 1024, usize::MAX] {
        let end = at.saturating_add(piece).min(q.len());
        let (n, m) = parser.next(&q[at..end]).unwrap().unwrap();
        assert_eq!((n, m), (end - at, FrontendMessage::Continued));
        at += n;
    }
    assert_eq!(at, q.len(), "the pieces end where the message does");
    let after = query("COMMIT");
    assert_eq!(parser.next(&after), Ok(Some((after.len(), FrontendMessage::Query { sql: "COMMIT".into() }))));
    // A Bind's head keeps the values it holds whole and cuts the one that runs past it.
    let big = vec![b'v'; 2 * HELD_MAX];
    let b = bind("", "s1", &[], &[Some(b"7"), Some(&big), Some(b"9")]);
    let mut parser = FrontendParser { typed: true, ..Default::default() };
    let (_, head) = parser.next(&b).unwrap().unwrap();
    let FrontendMessage::Bind { statement, values, .. } = head else { panic!("{head:?}") };
    assert_eq!((statement.as_str(), values.len(), values[0].as_deref()), ("s1", 2, Some(&b"7"[..])));
}

#[test]
fn the_reply_moment_is_an_executes_result_and_a_querys_first_result() {
    let mut session = Session::new(1);
    session.server_sent(&BackendMessage::ReadyForQuery { status: TransactionStatus::Idle }, 0);
    let client = [query("BEGIN; COMMIT"), parse("", "SELECT 1", &[]), bind("", "", &[], &[]), execute(""), sync()];
    for m in frontend_all(&mut FrontendParser { typed: true, ..Default::default() }, &client.concat()) {
        session.client_sent(&m);
    }
    let steps: Vec<_> = backend_chunked(
        &[
            command_complete("BEGIN"),
            command_complete("COMMIT"),
            ready(b'I'),
            typed(b'1', &[]),
            typed(b'2', &[]),
            command_complete("SELECT 1"),
            ready(b'I'),
        ]
        .concat(),
        0,
    )
    .iter()
    .map(|m| session.server_sent(m, 9).reply_to)
    .collect();
    let query = Some(vec!["BEGIN; COMMIT".to_string()]);
    let select = Some(vec!["SELECT 1".to_string()]);
    assert_eq!(steps, vec![query, None, None, None, None, select, None]);
}

// ---- the proxy, between a client socket and a scripted "server" ----

use crate::fault::{Action, Fault, Injector, Moment, Target};
use crate::interposer::WorkerTap;
use crate::timeline::{Actor, RawEvent};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A scripted server: reads `expect` bytes, then answers `reply`; returns what it read.
async fn scripted_server(listener: TcpListener, expect: usize, reply: Vec<u8>) -> Vec<u8> {
    let (mut socket, _) = listener.accept().await.expect("accept");
    let mut got = vec![0u8; expect];
    if socket.read_exact(&mut got).await.is_err() {
        return Vec::new();
    }
    socket.write_all(&reply).await.expect("reply");
    let mut rest = Vec::new();
    let _ = socket.read_to_end(&mut rest).await;
    got.extend(rest);
    got
}

/// A client connected through `serve` to a scripted server that answers the startup and
/// `UPDATE orders SET status = 'paid'`.
async fn proxied(
    faults: Vec<Fault>,
) -> (TcpStream, tokio::task::JoinHandle<Vec<u8>>, mpsc::UnboundedReceiver<RawEvent>) {
    let expect = startup("ordlab").len() + query("UPDATE orders SET status = 'paid'").len();
    let reply = [auth_ok(), ready(b'I'), command_complete("UPDATE 1"), ready(b'I')].concat();
    proxied_to(faults, expect, reply).await
}

/// A client connected through `serve` to a server that reads `expect` bytes, then answers
/// `reply` and reads the rest until the proxy closes.
async fn proxied_to(
    faults: Vec<Fault>,
    expect: usize,
    reply: Vec<u8>,
) -> (TcpStream, tokio::task::JoinHandle<Vec<u8>>, mpsc::UnboundedReceiver<RawEvent>) {
    let server_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = server_listener.local_addr().expect("addr");
    let proxy_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy_addr = proxy_listener.local_addr().expect("addr");
    let (sink, events) = mpsc::unbounded_channel();
    let tap = WorkerTap::new(Actor::Worker(1), Injector::new(faults, 1), sink, Default::default());
    tokio::spawn(async move {
        let (socket, _) = proxy_listener.accept().await.expect("accept");
        let _ = serve(socket, upstream, tap).await;
    });
    let server = tokio::spawn(scripted_server(server_listener, expect, reply));
    let client = TcpStream::connect(proxy_addr).await.expect("connect");
    (client, server, events)
}

#[tokio::test]
async fn serve_refuses_tls_forwards_bytes_unchanged_and_records_the_statement() {
    let (mut client, server, mut events) = proxied(Vec::new()).await;
    client.write_all(&ssl_request()).await.unwrap();
    let mut answer = [0u8; 1];
    client.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"N");
    let sent = [startup("ordlab"), query("UPDATE orders SET status = 'paid'")].concat();
    client.write_all(&sent).await.unwrap();
    let expected_reply = [auth_ok(), ready(b'I'), command_complete("UPDATE 1"), ready(b'I')].concat();
    let mut got = vec![0u8; expected_reply.len()];
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(got, expected_reply, "the client sees the server's bytes unchanged");
    client.write_all(&typed(b'X', &[])).await.unwrap();
    drop(client);
    let seen = server.await.unwrap();
    assert_eq!(seen, [sent, typed(b'X', &[])].concat(), "the server sees the client's bytes, without SSLRequest");
    let event = events.recv().await.expect("one event");
    match event.kind {
        crate::timeline::EventKind::ServerCommand { args, reply, error, connection, .. } => {
            assert_eq!(args, vec!["UPDATE orders SET status = 'paid'".to_string()]);
            assert_eq!(reply, "UPDATE 1");
            assert!(!error);
            assert_eq!(connection, 1);
        }
        other => panic!("unexpected event {other:?}"),
    }
}

/// Under the explorer's gate a SELECT's Bind (where its portal takes its snapshot) waits
/// with its Execute: the statement sees the rows as they are when it is let go.
#[tokio::test]
async fn under_a_gate_a_bind_waits_with_its_execute() {
    let server_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = server_listener.local_addr().expect("addr");
    let proxy_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy_addr = proxy_listener.local_addr().expect("addr");
    let (sink, _events) = mpsc::unbounded_channel();
    let (gate, mut held) = mpsc::unbounded_channel();
    let tap = WorkerTap::gated(Actor::Worker(1), Default::default(), sink, Default::default(), Some(gate));
    tokio::spawn(async move {
        let (socket, _) = proxy_listener.accept().await.expect("accept");
        let _ = serve(socket, upstream, tap).await;
    });
    let (p, b) = (parse("", "SELECT 1", &[]), bind("", "", &[], &[]));
    let (after_parse, rest) = (p.len(), [b.clone(), execute(""), sync()].concat());
    let rest_len = rest.len();
    let server = tokio::spawn(async move {
        let (mut socket, _) = server_listener.accept().await.expect("accept");
        let mut buf = vec![0u8; startup("ordlab").len()];
        socket.read_exact(&mut buf).await.unwrap();
        socket.write_all(&[auth_ok(), ready(b'I')].concat()).await.unwrap();
        let mut parsed = vec![0u8; after_parse];
        socket.read_exact(&mut parsed).await.unwrap();
        let mut early = vec![0u8; 64];
        let more = tokio::time::timeout(Duration::from_millis(300), socket.read(&mut early)).await;
        let early = more.map(|n| n.unwrap_or(0)).unwrap_or(0);
        let mut after = vec![0u8; rest_len - early];
        if early == 0 {
            socket.read_exact(&mut after).await.unwrap();
        }
        (parsed, early, after)
    });
    let mut client = TcpStream::connect(proxy_addr).await.expect("connect");
    client.write_all(&startup("ordlab")).await.unwrap();
    let mut answer = vec![0u8; [auth_ok(), ready(b'I')].concat().len()];
    client.read_exact(&mut answer).await.unwrap();
    client.write_all(&[p.clone(), rest.clone()].concat()).await.unwrap();
    let h = tokio::time::timeout(Duration::from_secs(10), held.recv()).await.expect("held").expect("held");
    assert_eq!(h.args, vec!["SELECT 1".to_string()]);
    // Give the server side its look at what passed before the release.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let _ = h.release.send(());
    let (parsed, early, after) = server.await.unwrap();
    assert_eq!(parsed, p, "the Parse passes at once (it executes nothing)");
    assert_eq!(early, 0, "nothing of the Bind reached the server before the release");
    assert_eq!(after, rest, "Bind, Execute and Sync pass together once released");
}

#[tokio::test]
async fn a_close_rule_at_send_closes_the_connection_before_the_statement_passes() {
    let rule = Fault { action: Action::Reset, ..Fault::kill_at(Target::Any, "UPDATE", 1, Moment::Send) };
    let (mut client, server, mut events) = proxied(vec![rule]).await;
    client.write_all(&[startup("ordlab"), query("UPDATE orders SET status = 'paid'")].concat()).await.unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "the proxy closed the client without a reply");
    server.abort();
    assert_only_the_fault_fired(&mut events, Action::Reset);
}

/// The fault's own event is all that was recorded: the statement never reached the server.
fn assert_only_the_fault_fired(events: &mut mpsc::UnboundedReceiver<RawEvent>, action: Action) {
    let fired = events.try_recv().expect("the fault's event");
    let fault = fired.kind.family::<crate::fault::FaultEvent>();
    assert!(
        matches!(fault, Some(crate::fault::FaultEvent::FaultFired { ref fault, .. }) if fault.action == action),
        "{fault:?}"
    );
    assert!(events.try_recv().is_err(), "nothing else recorded");
}

#[tokio::test]
async fn a_drop_rule_at_reply_records_the_statement_but_holds_back_its_reply() {
    let rule = Fault { action: Action::Drop, ..Fault::kill_at(Target::Any, "UPDATE", 1, Moment::Reply) };
    let (mut client, server, mut events) = proxied(vec![rule]).await;
    client.write_all(&[startup("ordlab"), query("UPDATE orders SET status = 'paid'")].concat()).await.unwrap();
    let before = [auth_ok(), ready(b'I')].concat();
    let mut got = vec![0u8; before.len()];
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(got, before);
    let fired = events.recv().await.expect("the fault's event");
    assert!(fired.kind.family::<crate::fault::FaultEvent>().is_some(), "{fired:?}");
    let event = events.recv().await.expect("the statement is recorded");
    assert!(matches!(event.kind, crate::timeline::EventKind::ServerCommand { ref reply, .. } if reply == "UPDATE 1"));
    client.shutdown().await.unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "neither CommandComplete nor ReadyForQuery reached the client: {rest:?}");
    server.abort();
}

#[tokio::test]
async fn a_drop_rule_at_send_holds_back_the_rest_of_the_batch() {
    let rule = Fault { action: Action::Drop, ..Fault::kill_at(Target::Any, "UPDATE", 1, Moment::Send) };
    let prepared =
        [startup("ordlab"), parse("", "UPDATE orders SET status = $1", &[]), bind("", "", &[], &[Some(b"paid")])]
            .concat();
    let (mut client, server, mut events) =
        proxied_to(vec![rule], prepared.len(), [auth_ok(), ready(b'I')].concat()).await;
    client.write_all(&[prepared.clone(), execute(""), sync()].concat()).await.unwrap();
    let mut got = vec![0u8; auth_ok().len() + ready(b'I').len()];
    client.read_exact(&mut got).await.unwrap();
    client.shutdown().await.unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest).await;
    assert_eq!(server.await.unwrap(), prepared, "Parse and Bind passed, Execute and Sync did not");
    assert_only_the_fault_fired(&mut events, Action::Drop);
}
