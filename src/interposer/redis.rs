//! One worker's Redis connection through the interposer: bytes pass unchanged both ways, while
//! each command the worker sends is matched with the reply that answers it and recorded.
//!
//! Redis answers a connection's commands in the order they were sent, so one queue of sent
//! commands pairs every reply with its command: pipelines, blocking reads (`XREADGROUP … BLOCK`,
//! `BLMOVE`, `BZPOPMAX`), `MULTI`/`EXEC` (each queued command answered `QUEUED`, `EXEC` with
//! their results) and scripts need nothing more. RESP3 push frames answer no command but a
//! (un)subscribe, whose confirmation is one; a connection that subscribes (`SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE`) or runs `MONITOR` is
//! passed through unparsed from there on, its command recorded once as such.

pub mod command;
pub mod frame;

use super::connections::ClosedBy;
use super::forward::{forward, Direction, Outbox, Step};
use super::limits::{Breach, HELD_MAX};
use super::{CommandView, Exchange, Moment, Passage, WorkerTap};
use crate::timeline::ServerKind;
use command::{CommandReader, Fed, ReadError};
use frame::{Protocol, Reply};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What every Redis connection of a worker is set up with.
#[derive(Clone, Debug, Default)]
pub struct RedisSetup {
    /// Named on the server (`CLIENT SETNAME`, sent by the interposer before the worker's first
    /// byte), so the runner sees in `CLIENT LIST` when the worker waits in a blocking read.
    pub client_name: Option<String>,
    /// The run's key prefix, left out of recorded arguments and replies (`orders`, not
    /// `ordlab:<nonce>:<lab>:<variant>:<run>:orders`).
    pub key_prefix: String,
    /// `AUTH` arguments sent by the interposer first, when the server wants a password
    /// ([`crate::interposer::redis_auth`]).
    pub auth: Option<Vec<String>>,
}

/// A command sent and not yet answered.
struct Sent {
    /// The arguments as recorded (the key prefix left out).
    args: Vec<String>,
    /// `HELLO <n>`: the protocol its reply (and, if it succeeds, the connection) speaks.
    hello: Option<Protocol>,
    /// When it was passed on to the server (the monotonic clock).
    sent_ns: u64,
    /// What rules match it against, where that is more than its args: an `EXEC` with the
    /// commands its transaction queued (`EXEC ZADD unacked_index … HSET unacked …`).
    matched: Option<Vec<String>>,
}

/// What the two directions of one connection share.
struct Wire {
    sent: VecDeque<Sent>,
    protocol: Protocol,
    /// Subscribed, monitoring or unparseable: bytes pass, nothing is recorded.
    passthrough: bool,
    /// A rule dropped a command or reply: nothing passes any more, the connection stays open.
    hung: bool,
    /// Since `MULTI`: the commands queued, each as one string, for rules to match its `EXEC`.
    transaction: Option<Vec<String>>,
}

/// Commands after which a connection carries messages, not replies.
const SUBSCRIBER_COMMANDS: [&str; 4] = ["SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR"];

/// Commands whose answer, in RESP3, is a push frame named after them (`>3 subscribe ch 1`).
const CONFIRMED_BY_PUSH: [&str; 6] =
    ["SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"];

/// Whether `reply` answers the oldest command still unanswered, `front`: every reply but a
/// push does; a push only where it is the confirmation RESP3 sends for a (un)subscribe (redis-py
/// speaks RESP3 from 8.0: Celery's result backend subscribes that way).
fn answers(reply: &Reply, front: Option<&Sent>) -> bool {
    let Some(front) = front else { return false };
    let Reply::Push(items) = reply else { return true };
    let name = front.args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    let kind = match items.first() {
        Some(Reply::Bulk(k) | Reply::Simple(k)) => k.to_ascii_uppercase(),
        _ => return false,
    };
    CONFIRMED_BY_PUSH.contains(&name.as_str()) && kind == name
}

/// Proxy one connection of the worker to `upstream` until either side closes (or a fault
/// ends it).
pub async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    tap: Arc<WorkerTap>,
    setup: Arc<RedisSetup>,
) -> std::io::Result<()> {
    if tap.refuses(ServerKind::Redis) {
        // Cut off from the server: the connection is reset as soon as it is accepted.
        let _ = client.set_zero_linger();
        return Ok(());
    }
    let mut server = TcpStream::connect(upstream).await?;
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    if let Some(auth) = &setup.auth {
        let mut args = vec!["AUTH".to_string()];
        args.extend(auth.iter().cloned());
        set_up(&mut server, &args).await?;
    }
    if let Some(name) = &setup.client_name {
        set_up(&mut server, &["CLIENT".into(), "SETNAME".into(), name.clone()]).await?;
    }
    let connection = tap.next_connection(ServerKind::Redis);
    tap.connection_opened(ServerKind::Redis, connection, None);
    let wire = Arc::new(Mutex::new(Wire {
        sent: VecDeque::new(),
        protocol: Protocol::Resp2,
        passthrough: false,
        hung: false,
        transaction: None,
    }));
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let link = Link { tap, setup, wire, connection };
    let mut commands = Commands { link: &link, command: InFlight::default() };
    let mut replies = Replies { link: &link, buf: Vec::new() };
    let end = tokio::select! {
        // The client's close first: a reply read in the same moment never reached it (it is
        // recorded as a reply for nobody below, never as the command's answer).
        biased;
        r = forward(&mut client_read, Outbox::now(&mut server_write), &mut commands, &[], None) => r?,
        r = forward(&mut server_read, Outbox::now(&mut client_write), &mut replies, &[], None) => r?,
    };
    if let End::Cut { at_reply: true, .. } = end {
        tokio::time::sleep(super::REPLY_WITHHELD_CLOSE_AFTER).await;
    }
    let closed_ns = crate::clock::now_ns();
    let by = match &end {
        End::ClientClosed => link.tap.client_side_closer(),
        End::ServerClosed => ClosedBy::Server,
        End::Cut { .. } | End::Refused(_) => ClosedBy::Ordlab,
    };
    if by == ClosedBy::Client {
        link.late_replies(&mut server_read, &mut replies.buf, closed_ns).await;
    }
    let unanswered: Vec<(Vec<String>, u64)> =
        link.wire.lock().unwrap().sent.drain(..).map(|s| (s.args, s.sent_ns)).collect();
    link.tap.connection_closed(ServerKind::Redis, connection, by, unanswered, closed_ns);
    match end {
        End::ClientClosed | End::ServerClosed => {}
        End::Cut { reset: true, .. } => {
            // No FIN first (dropping a write half shuts it down): the RST is all the client gets.
            let _ = client_write.as_ref().set_zero_linger();
            client_write.forget();
        }
        End::Cut { reset: false, .. } => {}
        End::Refused(breach) => {
            // As Redis does: its error line, then the connection closes.
            link.tap.refused(&breach, connection);
            client_write.write_all(&breach.reply()).await?;
            client_write.shutdown().await?;
            super::limits::linger(&mut client_read).await;
        }
    }
    Ok(())
}

/// How a connection's forwarding ends.
enum End {
    /// The worker closed its side.
    ClientClosed,
    /// The server closed its side.
    ServerClosed,
    /// A fault ended it; `at_reply`: withholding a reply (the close waits
    /// [`super::REPLY_WITHHELD_CLOSE_AFTER`]).
    Cut { reset: bool, at_reply: bool },
    /// A frame over the server's limit: refuse it with the server's error, then close.
    Refused(Breach),
}

/// A command of the interposer's own on a fresh connection (`AUTH …`, `CLIENT SETNAME <name>`),
/// its one-line reply read and not passed on; an error reply fails the connection.
async fn set_up(server: &mut TcpStream, args: &[String]) -> std::io::Result<()> {
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    server.write_all(cmd.as_bytes()).await?;
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        if server.read(&mut byte).await? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "Redis closed the connection"));
        }
        reply.push(byte[0]);
    }
    if reply.first() == Some(&b'-') {
        let why = String::from_utf8_lossy(&reply).trim().to_string();
        return Err(std::io::Error::other(format!("{}: {why}", args[0])));
    }
    Ok(())
}

struct Link {
    tap: Arc<WorkerTap>,
    setup: Arc<RedisSetup>,
    wire: Arc<Mutex<Wire>>,
    connection: u32,
}

/// How a fault (or a limit) ends the forwarding of one direction.
enum Stop {
    Cut {
        reset: bool,
    },
    Hang,
    /// A frame over the server's limit: refuse it with the server's error, then close.
    Refuse(Breach),
}

impl Stop {
    fn of(passage: Passage) -> Result<Option<std::time::Duration>, Stop> {
        match passage {
            Passage::Forward => Ok(None),
            Passage::Delay(d) => Ok(Some(d)),
            Passage::Hang => Err(Stop::Hang),
            Passage::Cut { reset } => Err(Stop::Cut { reset }),
        }
    }
}

/// Worker → server: parse each command, let the faults decide, forward.
struct Commands<'a> {
    link: &'a Link,
    command: InFlight,
}

impl Direction for Commands<'_> {
    type End = End;

    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> std::io::Result<Step<End>> {
        if self.link.wire.lock().unwrap().hung {
            return Ok(Step::Continue);
        }
        Ok(match self.link.forward_commands(&mut self.command, input, out).await? {
            None => Step::Continue,
            Some(Stop::Cut { reset }) => Step::End(End::Cut { reset, at_reply: false }),
            Some(Stop::Hang) => {
                self.link.wire.lock().unwrap().hung = true;
                Step::Continue
            }
            Some(Stop::Refuse(breach)) => Step::End(End::Refused(breach)),
        })
    }

    fn closed(&mut self) -> End {
        End::ClientClosed
    }
}

/// Server → worker: pair each reply with its command, record it, let the faults decide.
struct Replies<'a> {
    link: &'a Link,
    buf: Vec<u8>,
}

impl Direction for Replies<'_> {
    type End = End;

    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> std::io::Result<Step<End>> {
        if self.link.wire.lock().unwrap().hung {
            return Ok(Step::Continue);
        }
        self.buf.extend_from_slice(input);
        Ok(match self.link.forward_replies(&mut self.buf, out).await? {
            None | Some(Stop::Refuse(_)) => Step::Continue,
            Some(Stop::Cut { reset }) => Step::End(End::Cut { reset, at_reply: true }),
            Some(Stop::Hang) => {
                self.link.wire.lock().unwrap().hung = true;
                Step::Continue
            }
        })
    }

    fn closed(&mut self) -> End {
        End::ServerClosed
    }
}

/// The worker's command in progress, as the commands direction forwards it.
#[derive(Default)]
struct InFlight {
    reader: CommandReader,
    /// Its bytes read and not forwarded yet (at most [`HELD_MAX`]).
    held: Vec<u8>,
    /// Larger than that: its rules were decided on what was read of it, and the rest of its
    /// bytes pass as they come.
    streaming: bool,
}

/// How long a connection whose client closed is still read for replies on their way (a
/// blocked read's empty reply that lost its race with the client's own timeout comes a few ms
/// after it).
const LATE_REPLIES: std::time::Duration = std::time::Duration::from_millis(50);

impl Link {
    /// The client closed at `closed_ns` with commands unanswered: the replies that still come
    /// within [`LATE_REPLIES`] are recorded as replies for nobody (never as answers: the
    /// client did not get them); what stays unanswered is the caller's.
    async fn late_replies(&self, from: &mut tokio::net::tcp::OwnedReadHalf, buf: &mut Vec<u8>, closed_ns: u64) {
        let until = tokio::time::Instant::now() + LATE_REPLIES;
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            loop {
                let mut wire = self.wire.lock().unwrap();
                if wire.passthrough || wire.sent.is_empty() {
                    return;
                }
                let protocol = wire.sent.front().and_then(|s| s.hello).unwrap_or(wire.protocol);
                let Ok(Some((reply, len))) = frame::next_reply(buf, protocol) else { break };
                buf.drain(..len);
                if !answers(&reply, wire.sent.front()) {
                    continue;
                }
                let Some(sent) = wire.sent.pop_front() else { return };
                if let Some(p) = sent.hello.filter(|_| !reply.is_error()) {
                    wire.protocol = p;
                }
                let name = sent.args.first().cloned().unwrap_or_default();
                if SUBSCRIBER_COMMANDS.contains(&name.to_ascii_uppercase().as_str()) && !reply.is_error() {
                    // What was sent after it went on in the subscribed conversation.
                    wire.passthrough = true;
                    wire.sent.clear();
                }
                drop(wire);
                let shown = self.shown(&frame::abbreviate(&name, &reply));
                let sent = (sent.args, sent.sent_ns);
                self.tap.reply_for_nobody(ServerKind::Redis, self.connection, sent, shown, closed_ns);
            }
            match tokio::time::timeout_at(until, from.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
    }

    fn shown(&self, s: &str) -> String {
        if self.setup.key_prefix.is_empty() {
            s.to_string()
        } else {
            s.replace(&self.setup.key_prefix, "")
        }
    }

    fn view<'a>(&self, args: &'a [String]) -> CommandView<'a> {
        CommandView { server: ServerKind::Redis, connection: self.connection, args }
    }

    /// Forward every whole command of `input` (holding an incomplete one up to [`HELD_MAX`],
    /// streaming it beyond); a rule or a limit may stop it.
    async fn forward_commands(
        &self,
        command: &mut InFlight,
        mut input: &[u8],
        out: &mut Outbox<'_>,
    ) -> std::io::Result<Option<Stop>> {
        let stop = loop {
            if input.is_empty() {
                break None;
            }
            if self.wire.lock().unwrap().passthrough {
                out.push(&command.held);
                command.held.clear();
                out.push(input);
                break None;
            }
            let (used, args) = match command.reader.feed(input) {
                Ok(Fed::Command { used, args }) => (used, Some(args)),
                Ok(Fed::Partial) => (input.len(), None),
                Err(ReadError::Limit(breach)) => {
                    // What came before it passes; nothing of it does.
                    command.held.clear();
                    break Some(Stop::Refuse(breach));
                }
                Err(ReadError::Malformed(_)) => {
                    // Not RESP: stop parsing this connection, keep its bytes flowing.
                    self.wire.lock().unwrap().passthrough = true;
                    continue;
                }
            };
            let (piece, rest) = input.split_at(used);
            input = rest;
            if command.streaming {
                out.push(piece);
            } else {
                command.held.extend_from_slice(piece);
            }
            let Some(args) = args else {
                if command.streaming || command.held.len() <= HELD_MAX {
                    continue;
                }
                // Too large to hold: decide on what has been read of it, then stream it.
                let so_far = command.reader.args_so_far();
                match self.send_moment(&so_far, &so_far, out).await? {
                    Err(stop) => break Some(stop),
                    Ok(delay) => self.delay(delay, out).await?,
                }
                command.streaming = true;
                out.push(&command.held);
                command.held.clear();
                continue;
            };
            if args.is_empty() {
                // An empty line or `*0`: Redis answers nothing.
                out.push(&command.held);
                command.held.clear();
                command.streaming = false;
                continue;
            }
            let mut delay = None;
            let matched = self.transaction_view(&args);
            if !command.streaming {
                match self.send_moment(&args, matched.as_deref().unwrap_or(&args), out).await? {
                    Err(stop) => break Some(stop),
                    Ok(d) => delay = d,
                }
            }
            let hello = (args[0] == "HELLO")
                .then(|| args.get(1).and_then(|v| v.parse::<u8>().ok()))
                .flatten()
                .map(|v| if v >= 3 { Protocol::Resp3 } else { Protocol::Resp2 });
            let shown: Vec<String> = args.iter().map(|a| self.shown(a)).collect();
            let sent = Sent { args: shown, hello, sent_ns: crate::clock::now_ns(), matched };
            self.wire.lock().unwrap().sent.push_back(sent);
            self.delay(delay, out).await?;
            out.push(&command.held);
            command.held.clear();
            command.streaming = false;
        };
        Ok(stop)
    }

    /// Follow a transaction: after `MULTI`, each command is queued; its `EXEC` is matched by
    /// the faults as `EXEC` followed by them, so a pattern can name what the transaction does
    /// (`EXEC` with `pattern = "unacked_index"`); None: the command is matched as it is.
    fn transaction_view(&self, args: &[String]) -> Option<Vec<String>> {
        let mut wire = self.wire.lock().unwrap();
        match args[0].to_ascii_uppercase().as_str() {
            "MULTI" => {
                wire.transaction = Some(Vec::new());
                None
            }
            "EXEC" => wire.transaction.take().map(|queued| {
                let mut view = vec![args[0].clone()];
                view.extend(queued);
                view
            }),
            "DISCARD" => {
                wire.transaction = None;
                None
            }
            _ => {
                if let Some(queued) = wire.transaction.as_mut() {
                    queued.push(args.join(" "));
                }
                None
            }
        }
    }

    /// A command's send moment, before its bytes are forwarded: under a gate it waits for the
    /// explorer (what came before it passes first), then the faults decide: a stop, or the
    /// delay before it passes.
    async fn send_moment(
        &self,
        args: &[String],
        matched: &[String],
        out: &mut Outbox<'_>,
    ) -> std::io::Result<Result<Option<std::time::Duration>, Stop>> {
        if self.tap.is_gated() {
            out.flush().await?;
            let shown: Vec<String> = args.iter().map(|a| self.shown(a)).collect();
            if !self.tap.hold(&self.view(&shown)).await {
                return Ok(Err(Stop::Cut { reset: false }));
            }
        }
        Ok(Stop::of(self.tap.decide(&self.view(matched), Moment::Send)))
    }

    /// A fault's delay: what came before passes, then the command waits.
    async fn delay(&self, d: Option<std::time::Duration>, out: &mut Outbox<'_>) -> std::io::Result<()> {
        match d {
            Some(d) => out.hold(d).await,
            None => Ok(()),
        }
    }

    async fn forward_replies(&self, buf: &mut Vec<u8>, out: &mut Outbox<'_>) -> std::io::Result<Option<Stop>> {
        let mut pos = 0;
        let stop = loop {
            let protocol = {
                let wire = self.wire.lock().unwrap();
                if wire.passthrough {
                    out.push(&buf[pos..]);
                    pos = buf.len();
                    break None;
                }
                wire.sent.front().and_then(|s| s.hello).unwrap_or(wire.protocol)
            };
            let (reply, len) = match frame::next_reply(&buf[pos..], protocol) {
                Ok(Some(r)) => r,
                Ok(None) => break None,
                Err(_) => {
                    self.wire.lock().unwrap().passthrough = true;
                    continue;
                }
            };
            let bytes = &buf[pos..pos + len];
            pos += len;
            let replied_ns = crate::clock::now_ns();
            let sent = {
                let mut wire = self.wire.lock().unwrap();
                if answers(&reply, wire.sent.front()) {
                    wire.sent.pop_front()
                } else {
                    None
                }
            };
            let Some(sent) = sent else {
                // Out-of-band data, or a reply to nothing the worker sent: pass it on.
                out.push(bytes);
                continue;
            };
            let name = sent.args.first().cloned().unwrap_or_default();
            if let Some(p) = sent.hello.filter(|_| !reply.is_error()) {
                self.wire.lock().unwrap().protocol = p;
            }
            let subscribes = SUBSCRIBER_COMMANDS.contains(&name.to_ascii_uppercase().as_str()) && !reply.is_error();
            let passage = self.tap.decide(&self.view(sent.matched.as_deref().unwrap_or(&sent.args)), Moment::Reply);
            let mut shown = self.shown(&frame::abbreviate(&name, &reply));
            if subscribes {
                shown.push_str(" (passed through unrecorded from here)");
            }
            if passage.withholds() {
                shown.push_str(" (not passed on)");
            }
            let entries = frame::delivered(&name, &reply);
            self.tap.record(Exchange {
                server: ServerKind::Redis,
                entries,
                connection: self.connection,
                args: sent.args,
                reply: shown,
                error: reply.is_error(),
                replied_ns,
                sent_ns: Some(sent.sent_ns),
            });
            match Stop::of(passage) {
                Err(stop) => break Some(stop),
                Ok(delay) => self.delay(delay, out).await?,
            }
            out.push(bytes);
            if subscribes {
                // Commands pipelined after it are part of the subscribed conversation, which
                // passes unrecorded: none of them waits for a reply any more.
                let mut wire = self.wire.lock().unwrap();
                wire.passthrough = true;
                wire.sent.clear();
            }
        };
        buf.drain(..pos);
        Ok(stop)
    }
}
