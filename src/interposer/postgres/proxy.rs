//! The proxy of one worker connection, on the forwarding loop: the start-up phase (TLS
//! refused), then a direction each way that parses messages, lets the fault layer decide at
//! each statement's send and reply, and records each finished statement.

use super::backend::{BackendMessage, BackendParser};
use super::frontend::{FrontendMessage, FrontendParser};
use super::session::{ServerStep, Session};
use super::FrameError;
use crate::interposer::connections::ClosedBy;
use crate::interposer::forward::{forward, Direction, Outbox, Step};
use crate::interposer::limits::Breach;
use crate::interposer::{CommandView, Moment, Passage, WorkerTap};
use crate::timeline::ServerKind;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Proxy one worker connection to the PostgreSQL server at `upstream` until either side
/// closes (or a rule closes it), recording each statement through `tap`.
pub async fn serve(mut client: TcpStream, upstream: SocketAddr, tap: Arc<WorkerTap>) -> std::io::Result<()> {
    if tap.refuses(ServerKind::Postgres) {
        // Cut off from the server: the connection is reset as soon as it is accepted.
        let _ = client.set_zero_linger();
        return Ok(());
    }
    let mut server = TcpStream::connect(upstream).await?;
    let connection = tap.next_connection(ServerKind::Postgres);
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);

    // The startup phase: refuse TLS and GSS encryption here, forward the StartupMessage.
    let mut frontend = FrontendParser::new();
    let mut pending = BytesMut::with_capacity(8 * 1024);
    let mut broken = false;
    loop {
        match frontend.next(&pending) {
            Ok(Some((len, message))) => {
                let frame = pending.split_to(len);
                match message {
                    FrontendMessage::SslRequest | FrontendMessage::GssEncRequest => client.write_all(b"N").await?,
                    _ => {
                        server.write_all(&frame).await?;
                        break;
                    }
                }
            }
            Ok(None) => {
                if client.read_buf(&mut pending).await? == 0 {
                    return Ok(());
                }
            }
            Err(FrameError::Limit(breach)) => return refuse(&mut client, &tap, &breach, connection).await,
            Err(_) => {
                broken = true;
                break;
            }
        }
    }

    let session = Mutex::new(Session::new(connection));
    let end = {
        let (mut client_read, mut client_write) = client.split();
        let (mut server_read, mut server_write) = server.split();
        let mut upward = ClientSide {
            tap: &tap,
            connection,
            session: &session,
            frontend,
            pending: BytesMut::new(),
            broken,
            dropping_batch: false,
            deferred: Vec::new(),
            continued: Route::Out,
        };
        let mut downward = ServerSide {
            tap: &tap,
            connection,
            session: &session,
            backend: BackendParser::new(),
            pending: BytesMut::new(),
            broken: false,
            dropping_batch: false,
        };
        // Either side ending (EOF, a fault's cut, a refused frame) ends both; dropping the
        // sockets closes them.
        tokio::select! {
            biased;
            r = forward(&mut client_read, Outbox::now(&mut server_write), &mut upward, &pending, None) => r?,
            r = forward(&mut server_read, Outbox::now(&mut client_write), &mut downward, &[], None) => r?,
        }
    };
    if let End::Cut { at_reply: true, .. } = end {
        tokio::time::sleep(crate::interposer::REPLY_WITHHELD_CLOSE_AFTER).await;
    }
    let by = match &end {
        End::ClientClosed => tap.client_side_closer(),
        // After the client's Terminate, which of the two sides' ends is read first is a race.
        End::ServerClosed if lock(&session).terminated => tap.client_side_closer(),
        End::ServerClosed => ClosedBy::Server,
        End::Cut { .. } | End::Refused(_) => ClosedBy::Ordlab,
    };
    let unanswered = lock(&session).unanswered();
    tap.connection_closed(ServerKind::Postgres, connection, by, unanswered, crate::clock::now_ns());
    match end {
        End::ClientClosed | End::ServerClosed | End::Cut { reset: false, .. } => Ok(()),
        End::Cut { reset: true, .. } => {
            let _ = client.set_zero_linger();
            Ok(())
        }
        End::Refused(breach) => refuse(&mut client, &tap, &breach, connection).await,
    }
}

/// How a connection's forwarding ends.
enum End {
    /// The worker closed its side.
    ClientClosed,
    /// The server closed its side.
    ServerClosed,
    /// A fault ended it; `at_reply`: withholding a reply (the close waits
    /// [`crate::interposer::REPLY_WITHHELD_CLOSE_AFTER`]).
    Cut { reset: bool, at_reply: bool },
    /// A frame over the server's limit.
    Refused(Breach),
}

/// A frame over the server's limit: record it, tell the client in the server's words, close.
async fn refuse(client: &mut TcpStream, tap: &WorkerTap, breach: &Breach, connection: u32) -> std::io::Result<()> {
    tap.refused(breach, connection);
    client.write_all(&breach.reply()).await?;
    client.shutdown().await?;
    crate::interposer::limits::linger(client).await;
    Ok(())
}

fn lock(session: &Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a direction keeps forwarding after a message.
enum Flow {
    Continue,
    /// A fault ended the connection.
    Stop {
        reset: bool,
    },
}

/// The client → server direction.
struct ClientSide<'a> {
    tap: &'a WorkerTap,
    connection: u32,
    session: &'a Mutex<Session>,
    frontend: FrontendParser,
    /// Read and not yet a whole message.
    pending: BytesMut,
    /// A malformed frame was seen: forward bytes unread.
    broken: bool,
    /// A Send rule dropped an Execute: drop the rest of its batch, up to its Sync.
    dropping_batch: bool,
    /// Under a gate: a Bind (and what follows it) not forwarded yet. A SELECT's portal takes
    /// its snapshot at Bind, so a Bind that passed while its Execute is held would read the
    /// rows as they were then, not as they are when the explorer lets the statement go.
    deferred: Vec<u8>,
    /// Where the rest of a message streamed through goes: where its head went.
    continued: Route,
}

/// Where a message's bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Out,
    Deferred,
    Dropped,
}

impl Direction for ClientSide<'_> {
    type End = End;

    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> std::io::Result<Step<End>> {
        self.pending.extend_from_slice(input);
        while !self.pending.is_empty() {
            if self.broken {
                out.push(&self.pending.split());
                break;
            }
            let (frame, message) = match self.frontend.next(&self.pending) {
                Ok(Some((len, message))) => (self.pending.split_to(len), message),
                Ok(None) => break,
                // What came before it passes; nothing of it does.
                Err(FrameError::Limit(breach)) => return Ok(Step::End(End::Refused(breach))),
                Err(_) => {
                    self.broken = true;
                    continue;
                }
            };
            if message == FrontendMessage::Continued {
                match self.continued {
                    Route::Out => out.push(&frame),
                    Route::Deferred => self.deferred.extend_from_slice(&frame),
                    Route::Dropped => {}
                }
                continue;
            }
            if message == FrontendMessage::Terminate {
                lock(self.session).terminated = true;
            }
            let head = self.frontend.streaming();
            let copy = head.then(|| frame.clone());
            if let Flow::Stop { reset } = self.message(frame, message, out).await? {
                // What came before the stopped message passes.
                return Ok(Step::End(End::Cut { reset, at_reply: false }));
            }
            if let Some(head) = copy {
                self.continued = if out.ends_with(&head) {
                    Route::Out
                } else if self.deferred.ends_with(&head) {
                    Route::Deferred
                } else {
                    Route::Dropped
                };
            }
        }
        Ok(Step::Continue)
    }

    fn closed(&mut self) -> End {
        End::ClientClosed
    }
}

impl ClientSide<'_> {
    /// One whole message: let the faults decide at a statement's send, then forward it.
    async fn message(
        &mut self,
        frame: BytesMut,
        message: FrontendMessage,
        out: &mut Outbox<'_>,
    ) -> std::io::Result<Flow> {
        if self.dropping_batch {
            self.dropping_batch = message != FrontendMessage::Sync;
            return Ok(Flow::Continue);
        }
        let args = lock(self.session).statement_of(&message);
        if args.is_none() && self.tap.is_gated() {
            // A Bind waits with its Execute; a Sync or Flush, on which the client waits for
            // answers, lets what waits go first.
            let waits = matches!(message, FrontendMessage::Bind { .. }) || !self.deferred.is_empty();
            if waits && !matches!(message, FrontendMessage::Sync | FrontendMessage::Flush) {
                lock(self.session).client_sent(&message);
                self.deferred.extend_from_slice(&frame);
                return Ok(Flow::Continue);
            }
            out.push(&std::mem::take(&mut self.deferred));
        }
        if let Some(args) = args {
            let view = CommandView { server: ServerKind::Postgres, connection: self.connection, args: &args };
            if self.tap.is_gated() {
                // Parse before it has passed (it executes nothing); the statement itself, with
                // its Bind, waits for the explorer.
                out.flush().await?;
                if !self.tap.hold(&view).await {
                    return Ok(Flow::Stop { reset: false });
                }
                out.push(&std::mem::take(&mut self.deferred));
            }
            match self.tap.decide(&view, Moment::Send) {
                Passage::Forward => {}
                Passage::Cut { reset } => return Ok(Flow::Stop { reset }),
                Passage::Hang => {
                    self.dropping_batch = matches!(message, FrontendMessage::Execute { .. });
                    return Ok(Flow::Continue);
                }
                Passage::Delay(d) => out.hold(d).await?,
            }
        }
        lock(self.session).client_sent(&message);
        out.push(&frame);
        Ok(Flow::Continue)
    }
}

/// The server → client direction.
struct ServerSide<'a> {
    tap: &'a WorkerTap,
    connection: u32,
    session: &'a Mutex<Session>,
    backend: BackendParser,
    /// Read and not yet a whole message.
    pending: BytesMut,
    broken: bool,
    /// A Reply rule dropped a reply: drop what follows, up to the next ReadyForQuery.
    dropping_batch: bool,
}

impl Direction for ServerSide<'_> {
    type End = End;

    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> std::io::Result<Step<End>> {
        self.pending.extend_from_slice(input);
        while !self.pending.is_empty() {
            if self.broken {
                out.push(&self.pending.split());
                break;
            }
            let (frame, message) = match self.backend.next(&self.pending) {
                Ok(Some((len, message))) => (self.pending.split_to(len), message),
                Ok(None) => break,
                Err(_) => {
                    self.broken = true;
                    continue;
                }
            };
            let step = lock(self.session).server_sent(&message, crate::clock::now_ns());
            if let Flow::Stop { reset } = self.message(&frame, &message, step, out).await? {
                return Ok(Step::End(End::Cut { reset, at_reply: true }));
            }
        }
        Ok(Step::Continue)
    }

    fn closed(&mut self) -> End {
        End::ServerClosed
    }
}

impl ServerSide<'_> {
    /// One whole message: apply the Reply rules to a statement's reply, record what it
    /// completes, then forward it (into `out`).
    async fn message(
        &mut self,
        frame: &[u8],
        message: &BackendMessage,
        step: ServerStep,
        out: &mut Outbox<'_>,
    ) -> std::io::Result<Flow> {
        let mut flow = Flow::Continue;
        let mut forward = !self.dropping_batch;
        if let BackendMessage::BackendKeyData { pid } = message {
            self.tap.connection_opened(ServerKind::Postgres, self.connection, Some(*pid));
        }
        if let Some(args) = &step.reply_to {
            let view = CommandView { server: ServerKind::Postgres, connection: self.connection, args };
            match self.tap.decide(&view, Moment::Reply) {
                Passage::Forward => {}
                Passage::Cut { reset } => flow = Flow::Stop { reset },
                Passage::Hang => {
                    self.dropping_batch = true;
                    forward = false;
                }
                Passage::Delay(d) => out.hold(d).await?,
            }
        }
        // The server did the statement, whatever became of its reply.
        if let Some(finished) = step.finished {
            self.tap.record(finished);
        }
        if let BackendMessage::ReadyForQuery { .. } = message {
            if self.dropping_batch {
                self.dropping_batch = false;
                forward = false;
            }
        }
        if forward && matches!(flow, Flow::Continue) {
            out.push(frame);
        }
        Ok(flow)
    }
}
