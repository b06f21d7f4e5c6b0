//! One worker's Redis connection through the interposer: bytes pass unchanged both ways, while
//! each command the worker sends is matched with the reply that answers it and recorded.
//!
//! Redis answers a connection's commands in the order they were sent, so one queue of sent
//! commands pairs every reply with its command: pipelines, blocking reads (`XREADGROUP … BLOCK`,
//! `BLMOVE`, `BZPOPMAX`), `MULTI`/`EXEC` (each queued command answered `QUEUED`, `EXEC` with
//! their results) and scripts need nothing more. RESP3 push frames answer no command; a
//! connection that subscribes (`SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE`) or runs `MONITOR` is
//! passed through unparsed from there on, its command recorded once as such.

pub mod command;
pub mod frame;

use super::limits::{Breach, HELD_MAX};
use super::{Action, CommandView, Exchange, Moment, WorkerTap};
use crate::timeline::ServerKind;
use command::{CommandReader, Fed, ReadError};
use frame::{Protocol, Reply};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
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

/// Proxy one connection of the worker to `upstream` until either side closes (or a rule
/// closes it).
pub async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    tap: Arc<WorkerTap>,
    setup: Arc<RedisSetup>,
) -> std::io::Result<()> {
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
    let wire = Arc::new(Mutex::new(Wire {
        sent: VecDeque::new(),
        protocol: Protocol::Resp2,
        passthrough: false,
        hung: false,
        transaction: None,
    }));
    let (mut client_read, mut client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let link = Link { tap, setup, wire, connection };
    let refused = tokio::select! {
        r = link.commands(&mut client_read, server_write) => r?,
        r = link.replies(server_read, &mut client_write) => r.map(|()| None)?,
    };
    if let Some(breach) = refused {
        // As Redis does: its error line, then the connection closes.
        link.tap.refused(&breach, connection);
        client_write.write_all(&breach.reply()).await?;
        client_write.shutdown().await?;
        super::limits::linger(&mut client_read).await;
    }
    Ok(())
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

/// How a rule (or a limit) ends the forwarding of one direction.
enum Stop {
    Close,
    Hang,
    /// A frame over the server's limit: refuse it with the server's error, then close.
    Refuse(Breach),
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

impl Link {
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

    /// Worker → server: parse each command, let the rules decide, forward. A frame over the
    /// server's limit ends it with the breach, for [`serve`] to refuse.
    async fn commands(&self, from: &mut OwnedReadHalf, mut to: OwnedWriteHalf) -> std::io::Result<Option<Breach>> {
        let mut command = InFlight::default();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            if self.wire.lock().unwrap().hung {
                continue;
            }
            match self.forward_commands(&mut command, &chunk[..n], &mut to).await? {
                None => {}
                Some(Stop::Close) => return Ok(None),
                Some(Stop::Hang) => self.wire.lock().unwrap().hung = true,
                Some(Stop::Refuse(breach)) => return Ok(Some(breach)),
            }
        }
    }

    /// Server → worker: pair each reply with its command, record it, let the rules decide.
    async fn replies(&self, mut from: OwnedReadHalf, to: &mut OwnedWriteHalf) -> std::io::Result<()> {
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            if self.wire.lock().unwrap().hung {
                continue;
            }
            buf.extend_from_slice(&chunk[..n]);
            match self.forward_replies(&mut buf, to).await? {
                None | Some(Stop::Refuse(_)) => {}
                Some(Stop::Close) => return Ok(()),
                Some(Stop::Hang) => self.wire.lock().unwrap().hung = true,
            }
        }
    }

    /// Forward every whole command of `input` (holding an incomplete one up to [`HELD_MAX`],
    /// streaming it beyond); a rule or a limit may stop it.
    async fn forward_commands(
        &self,
        command: &mut InFlight,
        mut input: &[u8],
        to: &mut OwnedWriteHalf,
    ) -> std::io::Result<Option<Stop>> {
        let mut out: Vec<u8> = Vec::new();
        let stop = loop {
            if input.is_empty() {
                break None;
            }
            if self.wire.lock().unwrap().passthrough {
                out.append(&mut command.held);
                out.extend_from_slice(input);
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
                out.extend_from_slice(piece);
            } else {
                command.held.extend_from_slice(piece);
            }
            let Some(args) = args else {
                if command.streaming || command.held.len() <= HELD_MAX {
                    continue;
                }
                // Too large to hold: decide on what has been read of it, then stream it.
                let so_far = command.reader.args_so_far();
                match self.send_moment(&so_far, &so_far, &mut out, to).await? {
                    Err(stop) => break Some(stop),
                    Ok(delay) => self.delay(delay, &mut out, to).await?,
                }
                command.streaming = true;
                out.append(&mut command.held);
                continue;
            };
            if args.is_empty() {
                // An empty line or `*0`: Redis answers nothing.
                out.append(&mut command.held);
                command.streaming = false;
                continue;
            }
            let mut delay = None;
            let matched = self.transaction_view(&args);
            if !command.streaming {
                match self.send_moment(&args, matched.as_deref().unwrap_or(&args), &mut out, to).await? {
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
            self.delay(delay, &mut out, to).await?;
            out.append(&mut command.held);
            command.streaming = false;
        };
        to.write_all(&out).await?;
        Ok(stop)
    }

    /// Follow a transaction: after `MULTI`, each command is queued; its `EXEC` is matched by
    /// rules as `EXEC` followed by them (None: the command is matched as it is).
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
    /// explorer (what came before it passes first), then the rules decide: a stop, or the
    /// delay (ms) before it passes.
    async fn send_moment(
        &self,
        args: &[String],
        matched: &[String],
        out: &mut Vec<u8>,
        to: &mut OwnedWriteHalf,
    ) -> std::io::Result<Result<Option<f64>, Stop>> {
        if self.tap.is_gated() {
            to.write_all(out).await?;
            out.clear();
            let shown: Vec<String> = args.iter().map(|a| self.shown(a)).collect();
            if !self.tap.hold(&self.view(&shown)).await {
                return Ok(Err(Stop::Close));
            }
        }
        Ok(match self.tap.decide(&self.view(matched), Moment::Send) {
            Action::Kill | Action::Close => Err(Stop::Close),
            Action::Drop => Err(Stop::Hang),
            Action::Forward => Ok(None),
            Action::DelayMs(ms) => Ok(Some(ms)),
        })
    }

    /// A rule's delay: what came before passes, then the command waits `ms`.
    async fn delay(&self, ms: Option<f64>, out: &mut Vec<u8>, to: &mut OwnedWriteHalf) -> std::io::Result<()> {
        if let Some(ms) = ms {
            to.write_all(out).await?;
            out.clear();
            tokio::time::sleep(std::time::Duration::from_secs_f64(ms / 1000.0)).await;
        }
        Ok(())
    }

    async fn forward_replies(&self, buf: &mut Vec<u8>, to: &mut OwnedWriteHalf) -> std::io::Result<Option<Stop>> {
        let mut pos = 0;
        let mut out: Vec<u8> = Vec::new();
        let stop = loop {
            let protocol = {
                let wire = self.wire.lock().unwrap();
                if wire.passthrough {
                    out.extend_from_slice(&buf[pos..]);
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
                if matches!(reply, Reply::Push(_)) {
                    None
                } else {
                    wire.sent.pop_front()
                }
            };
            let Some(sent) = sent else {
                // Out-of-band data, or a reply to nothing the worker sent: pass it on.
                out.extend_from_slice(bytes);
                continue;
            };
            let name = sent.args.first().cloned().unwrap_or_default();
            if let Some(p) = sent.hello.filter(|_| !reply.is_error()) {
                self.wire.lock().unwrap().protocol = p;
            }
            let subscribes = SUBSCRIBER_COMMANDS.contains(&name.as_str()) && !reply.is_error();
            let action = self.tap.decide(&self.view(sent.matched.as_deref().unwrap_or(&sent.args)), Moment::Reply);
            let mut shown = self.shown(&frame::abbreviate(&name, &reply));
            if subscribes {
                shown.push_str(" (passed through unrecorded from here)");
            }
            match action {
                Action::Kill | Action::Close | Action::Drop => shown.push_str(" (not passed on)"),
                Action::Forward | Action::DelayMs(_) => {}
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
            match action {
                Action::Kill | Action::Close => break Some(Stop::Close),
                Action::Drop => break Some(Stop::Hang),
                Action::DelayMs(ms) => {
                    to.write_all(&out).await?;
                    out.clear();
                    tokio::time::sleep(std::time::Duration::from_secs_f64(ms / 1000.0)).await;
                }
                Action::Forward => {}
            }
            out.extend_from_slice(bytes);
            if subscribes {
                self.wire.lock().unwrap().passthrough = true;
            }
        };
        buf.drain(..pos);
        to.write_all(&out).await?;
        Ok(stop)
    }
}
