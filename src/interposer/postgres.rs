//! PostgreSQL v3 on the wire: a proxy that forwards a worker's connection to the real server
//! byte for byte, while pure, incremental parsers read both directions and a session state
//! machine turns them into one [`Exchange`] per statement. The same message boundaries are where
//! fault rules act ([`WorkerTap::decide`] at a statement's send and at its reply).
//!
//! - The client's stream: the untyped startup phase ([`FrontendParser`]: StartupMessage,
//!   SSLRequest, GSSENCRequest, CancelRequest), then typed messages. An SSLRequest or
//!   GSSENCRequest is answered `N` by the proxy itself, so the server never sees TLS.
//! - The server's stream: typed messages, decoded with `postgres-protocol` ([`BackendParser`]).
//! - [`Session`] pairs them. A simple `Query` is one exchange, even when it holds several
//!   statements (its reply is the tags joined by `; `, its reply moment and time those of its
//!   first result); in the extended protocol each `Execute` is one exchange, its args the
//!   statement's text then its bound parameters. After an error in an extended batch the server
//!   skips everything up to `Sync`: those skipped `Execute`s are recorded as nothing.
//!
//! A statement whose reply a rule kills, closes or drops is still recorded: the server did it.
//! A malformed frame stops the parsing of that connection (nothing more is recorded, no rule
//! applies); its bytes are still forwarded unchanged.

use super::limits::{Breach, HELD_MAX, PG_MESSAGE_MAX, PG_STARTUP_MAX};
use super::{Action, CommandView, Exchange, Moment, WorkerTap};
use crate::timeline::ServerKind;
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const SSL_REQUEST: i32 = 80877103;
const GSSENC_REQUEST: i32 = 80877104;
const CANCEL_REQUEST: i32 = 80877102;

/// Why a connection's bytes could not be parsed (they are still forwarded unchanged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {0} is out of range")]
    BadLength(i32),
    #[error("message '{0}' ends before its fields do")]
    Truncated(char),
    #[error("server message '{tag}' is malformed: {detail}")]
    Backend { tag: char, detail: String },
    /// Over the server's own limit ([`super::limits`]): refused as the server would.
    #[error(transparent)]
    Limit(#[from] Breach),
}

/// A message the client sent, with the fields the interposer uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontendMessage {
    /// StartupMessage with its protocol version (`196608` is 3.0).
    Startup {
        protocol: i32,
    },
    SslRequest,
    GssEncRequest,
    CancelRequest,
    Query {
        sql: String,
    },
    Parse {
        statement: String,
        sql: String,
        param_types: Vec<u32>,
    },
    /// `values[i]` is `None` for a NULL; `formats` as sent (none: all text, one: for all).
    Bind {
        portal: String,
        statement: String,
        formats: Vec<i16>,
        values: Vec<Option<Vec<u8>>>,
    },
    Execute {
        portal: String,
        max_rows: i32,
    },
    Sync,
    Describe {
        kind: u8,
        name: String,
    },
    Close {
        kind: u8,
        name: String,
    },
    Flush,
    Terminate,
    /// `p`: a password, SASL initial or SASL response message (passed through unread).
    Password,
    CopyData,
    CopyDone,
    CopyFail,
    /// Any other type byte: passed through.
    Other(u8),
    /// More bytes of a message too large to hold ([`HELD_MAX`]): its head came as the message
    /// (read from the head's bytes, its last text cut with `…`), the rest follows in pieces.
    Continued,
}

/// Splits the client's byte stream into messages: the untyped startup phase, then typed ones.
/// A message larger than [`HELD_MAX`] comes as its head then [`FrontendMessage::Continued`]
/// pieces, so no more than that is ever held of one message; a length over the server's limit
/// is a [`FrameError::Limit`] as soon as its length word is in.
#[derive(Debug, Default)]
pub struct FrontendParser {
    typed: bool,
    /// Bytes still to come of a message streamed through.
    rest: u64,
}

impl FrontendParser {
    pub fn new() -> FrontendParser {
        FrontendParser::default()
    }

    /// The first complete message in `buf` and its length in bytes, `None` when `buf` holds
    /// only part of one.
    pub fn next(&mut self, buf: &[u8]) -> Result<Option<(usize, FrontendMessage)>, FrameError> {
        if self.rest > 0 {
            let n = self.rest.min(buf.len() as u64) as usize;
            if n == 0 {
                return Ok(None);
            }
            self.rest -= n as u64;
            return Ok(Some((n, FrontendMessage::Continued)));
        }
        if self.typed {
            if buf.len() < 5 {
                return Ok(None);
            }
            let len = be_i32(&buf[1..5]);
            if i64::from(len) > PG_MESSAGE_MAX {
                return Err(Breach::PgMessage { tag: buf[0] as char, len: len.into() }.into());
            }
            if len >= 4 && len as usize + 1 > HELD_MAX {
                if buf.len() < HELD_MAX {
                    return Ok(None);
                }
                self.rest = (len as usize + 1 - HELD_MAX) as u64;
                return Ok(Some((HELD_MAX, parse_head(buf[0], &buf[5..HELD_MAX]))));
            }
            let Some((len, body)) = typed_frame(buf)? else { return Ok(None) };
            return Ok(Some((len, parse_frontend(buf[0], body)?)));
        }
        if buf.len() < 4 {
            return Ok(None);
        }
        // The server's check (`ProcessStartupPacket`): the length less its own 4 bytes.
        let len = be_i32(&buf[0..4]);
        if !(4..=PG_STARTUP_MAX).contains(&(i64::from(len) - 4)) {
            return Err(Breach::PgStartup { len: len.into() }.into());
        }
        if buf.len() < 8 || buf.len() < len as usize {
            return Ok(None);
        }
        let message = match be_i32(&buf[4..8]) {
            SSL_REQUEST => FrontendMessage::SslRequest,
            GSSENC_REQUEST => FrontendMessage::GssEncRequest,
            CANCEL_REQUEST => FrontendMessage::CancelRequest,
            protocol => {
                self.typed = true;
                FrontendMessage::Startup { protocol }
            }
        };
        if message == FrontendMessage::CancelRequest {
            self.typed = true;
        }
        Ok(Some((len as usize, message)))
    }
}

/// The message a large message's head says it is, read from as much of its body as is held:
/// a text running past the head is cut with `…`, values past it are left out.
fn parse_head(tag: u8, body: &[u8]) -> FrontendMessage {
    let mut message = parse_fields(Fields { tag, rest: body, lenient: true }).unwrap_or(FrontendMessage::Other(tag));
    if let FrontendMessage::Query { sql } | FrontendMessage::Parse { sql, .. } = &mut message {
        sql.push('…');
    }
    message
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A typed frame at the start of `buf`: its total length and its body.
fn typed_frame(buf: &[u8]) -> Result<Option<(usize, &[u8])>, FrameError> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let len = be_i32(&buf[1..5]);
    if len < 4 {
        return Err(FrameError::BadLength(len));
    }
    let total = len as usize + 1;
    if buf.len() < total {
        return Ok(None);
    }
    Ok(Some((total, &buf[5..total])))
}

/// Reads the fields of one message body; running out is [`FrameError::Truncated`].
struct Fields<'a> {
    tag: u8,
    rest: &'a [u8],
    /// A head of a larger message: running out ends a field (a text, a value) where the head
    /// ends, and a number past it reads as 0.
    lenient: bool,
}

impl<'a> Fields<'a> {
    fn truncated(&self) -> FrameError {
        FrameError::Truncated(self.tag as char)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.rest.len() < n && self.lenient {
            return Ok(std::mem::take(&mut self.rest));
        }
        if self.rest.len() < n {
            return Err(self.truncated());
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn cstr(&mut self) -> Result<String, FrameError> {
        if self.lenient && !self.rest.contains(&0) {
            return Ok(String::from_utf8_lossy(std::mem::take(&mut self.rest)).into_owned());
        }
        let end = self.rest.iter().position(|&b| b == 0).ok_or_else(|| self.truncated())?;
        let s = String::from_utf8_lossy(&self.rest[..end]).into_owned();
        self.rest = &self.rest[end + 1..];
        Ok(s)
    }

    fn i16(&mut self) -> Result<i16, FrameError> {
        if self.lenient && self.rest.len() < 2 {
            self.rest = &[];
            return Ok(0);
        }
        let b = self.bytes(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, FrameError> {
        if self.lenient && self.rest.len() < 4 {
            self.rest = &[];
            return Ok(0);
        }
        Ok(be_i32(self.bytes(4)?))
    }

    fn count(&mut self) -> Result<usize, FrameError> {
        usize::try_from(self.i16()?).map_err(|_| self.truncated())
    }

    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.bytes(1)?[0])
    }
}

fn parse_frontend(tag: u8, body: &[u8]) -> Result<FrontendMessage, FrameError> {
    parse_fields(Fields { tag, rest: body, lenient: false })
}

fn parse_fields(mut f: Fields<'_>) -> Result<FrontendMessage, FrameError> {
    Ok(match f.tag {
        b'Q' => FrontendMessage::Query { sql: f.cstr()? },
        b'P' => {
            let statement = f.cstr()?;
            let sql = f.cstr()?;
            let n = f.count()?;
            let param_types = (0..n).map(|_| f.i32().map(|oid| oid as u32)).collect::<Result<_, _>>()?;
            FrontendMessage::Parse { statement, sql, param_types }
        }
        b'B' => {
            let portal = f.cstr()?;
            let statement = f.cstr()?;
            let n = f.count()?;
            let formats = (0..n).map(|_| f.i16()).collect::<Result<_, _>>()?;
            let n = f.count()?;
            let mut values = Vec::with_capacity(n);
            for _ in 0..n {
                if f.lenient && f.rest.is_empty() {
                    break;
                }
                let len = f.i32()?;
                values.push(if len < 0 { None } else { Some(f.bytes(len as usize)?.to_vec()) });
            }
            FrontendMessage::Bind { portal, statement, formats, values }
        }
        b'E' => FrontendMessage::Execute { portal: f.cstr()?, max_rows: f.i32()? },
        b'S' => FrontendMessage::Sync,
        b'D' => FrontendMessage::Describe { kind: f.u8()?, name: f.cstr()? },
        b'C' => FrontendMessage::Close { kind: f.u8()?, name: f.cstr()? },
        b'H' => FrontendMessage::Flush,
        b'X' => FrontendMessage::Terminate,
        b'p' => FrontendMessage::Password,
        b'd' => FrontendMessage::CopyData,
        b'c' => FrontendMessage::CopyDone,
        b'f' => FrontendMessage::CopyFail,
        other => FrontendMessage::Other(other),
    })
}

/// The transaction status a ReadyForQuery reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InTransaction,
    /// `E`: in a failed transaction block (until `ROLLBACK`).
    Failed,
}

/// A message the server sent, with the fields the interposer uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendMessage {
    CommandComplete {
        tag: String,
    },
    Error {
        sqlstate: String,
        message: String,
    },
    EmptyQuery,
    ReadyForQuery {
        status: TransactionStatus,
    },
    DataRow,
    ParseComplete,
    BindComplete,
    CloseComplete,
    NoData,
    RowDescription,
    /// The parameter types the server inferred for a described statement (what a client that
    /// declared none, such as tokio-postgres, then binds in binary).
    ParameterDescription {
        types: Vec<u32>,
    },
    PortalSuspended,
    /// The backend's process id (and cancel key) at start-up: how `pg_locks` names it.
    BackendKeyData {
        pid: u32,
    },
    /// Any other type byte (authentication, parameter status, notices…): passed through.
    Other(u8),
}

/// Splits the server's byte stream into messages (the server's stream is typed from its first
/// byte: the proxy answers SSLRequest itself).
#[derive(Debug, Default)]
pub struct BackendParser;

impl BackendParser {
    pub fn new() -> BackendParser {
        BackendParser
    }

    /// The first complete message in `buf` and its length in bytes, `None` when `buf` holds
    /// only part of one.
    pub fn next(&mut self, buf: &[u8]) -> Result<Option<(usize, BackendMessage)>, FrameError> {
        let Some((len, _)) = typed_frame(buf)? else { return Ok(None) };
        let tag = buf[0];
        // Only the messages with fields we read are decoded (a DataRow is only counted).
        let bodiless = match tag {
            b'C' | b'E' | b'Z' | b't' | b'K' => None,
            b'I' => Some(BackendMessage::EmptyQuery),
            b'D' => Some(BackendMessage::DataRow),
            b'1' => Some(BackendMessage::ParseComplete),
            b'2' => Some(BackendMessage::BindComplete),
            b'3' => Some(BackendMessage::CloseComplete),
            b'n' => Some(BackendMessage::NoData),
            b'T' => Some(BackendMessage::RowDescription),
            b's' => Some(BackendMessage::PortalSuspended),
            other => Some(BackendMessage::Other(other)),
        };
        if let Some(message) = bodiless {
            return Ok(Some((len, message)));
        }
        let malformed = |detail: String| FrameError::Backend { tag: tag as char, detail };
        let mut frame = BytesMut::from(&buf[..len]);
        let message = match Message::parse(&mut frame) {
            Ok(Some(message)) => message,
            Ok(None) => return Err(malformed("incomplete frame".into())),
            Err(e) => return Err(malformed(e.to_string())),
        };
        let message = match message {
            Message::CommandComplete(body) => {
                BackendMessage::CommandComplete { tag: body.tag().map_err(|e| malformed(e.to_string()))?.to_string() }
            }
            Message::ErrorResponse(body) => {
                let (mut sqlstate, mut text) = (String::new(), String::new());
                let mut fields = body.fields();
                while let Some(field) = fields.next().map_err(|e| malformed(e.to_string()))? {
                    let value = String::from_utf8_lossy(field.value_bytes()).into_owned();
                    match field.type_() {
                        b'C' => sqlstate = value,
                        b'M' => text = value,
                        _ => {}
                    }
                }
                BackendMessage::Error { sqlstate, message: text }
            }
            Message::BackendKeyData(body) => BackendMessage::BackendKeyData { pid: body.process_id() as u32 },
            Message::ParameterDescription(body) => {
                let types = body.parameters().collect::<Vec<u32>>().map_err(|e| malformed(e.to_string()))?;
                BackendMessage::ParameterDescription { types }
            }
            Message::ReadyForQuery(body) => BackendMessage::ReadyForQuery {
                status: match body.status() {
                    b'I' => TransactionStatus::Idle,
                    b'T' => TransactionStatus::InTransaction,
                    b'E' => TransactionStatus::Failed,
                    other => return Err(malformed(format!("transaction status {:?}", other as char))),
                },
            },
            _ => BackendMessage::Other(tag),
        };
        Ok(Some((len, message)))
    }
}

/// A statement the client prepared (Parse): its text and declared parameter types.
#[derive(Clone, Debug, Default)]
struct Prepared {
    sql: String,
    param_types: Vec<u32>,
}

/// What the client sent that the server has still to answer, in order.
#[derive(Debug)]
enum Awaiting {
    Parse,
    Bind,
    /// Describe of a prepared statement (its name) or of a portal (None).
    Describe(Option<String>),
    Close,
    Execute {
        args: Vec<String>,
        rows: u64,
        /// When it was passed on to the server: its duration runs from here to its result.
        sent_ns: u64,
    },
    Query {
        args: Vec<String>,
        replies: Vec<String>,
        error: bool,
        replied_ns: Option<u64>,
        sent_ns: u64,
    },
    Sync,
}

/// What one server message means for the statements in flight.
#[derive(Debug, Default, PartialEq)]
pub struct ServerStep {
    /// This message is the reply of the statement with these args: the reply moment of rules.
    pub reply_to: Option<Vec<String>>,
    /// The statement this message completes.
    pub finished: Option<Exchange>,
}

/// One connection's statements in flight: pairs what the client sent with what the server
/// answered.
#[derive(Debug)]
pub struct Session {
    connection: u32,
    statements: HashMap<String, Prepared>,
    /// Bound portals: the statement's args (text, then parameter values).
    portals: HashMap<String, Vec<String>>,
    awaiting: VecDeque<Awaiting>,
    /// `None` until the first ReadyForQuery, which ends the startup (authentication) phase.
    status: Option<TransactionStatus>,
}

impl Session {
    pub fn new(connection: u32) -> Session {
        Session {
            connection,
            statements: HashMap::new(),
            portals: HashMap::new(),
            awaiting: VecDeque::new(),
            status: None,
        }
    }

    /// The transaction status of the last ReadyForQuery.
    pub fn transaction_status(&self) -> Option<TransactionStatus> {
        self.status
    }

    /// The args of the statement `message` asks the server to run now (`Query`, `Execute`).
    pub fn statement_of(&self, message: &FrontendMessage) -> Option<Vec<String>> {
        match message {
            FrontendMessage::Query { sql } => Some(vec![sql.clone()]),
            FrontendMessage::Execute { portal, .. } => {
                Some(self.portals.get(portal).cloned().unwrap_or_else(|| vec![format!("<unknown portal {portal:?}>")]))
            }
            _ => None,
        }
    }

    /// The client's `message` has been forwarded to the server.
    pub fn client_sent(&mut self, message: &FrontendMessage) {
        let awaiting = match message {
            FrontendMessage::Query { sql } => Awaiting::Query {
                args: vec![sql.clone()],
                replies: Vec::new(),
                error: false,
                replied_ns: None,
                sent_ns: crate::clock::now_ns(),
            },
            FrontendMessage::Parse { statement, sql, param_types } => {
                let prepared = Prepared { sql: sql.clone(), param_types: param_types.clone() };
                self.statements.insert(statement.clone(), prepared);
                Awaiting::Parse
            }
            FrontendMessage::Bind { portal, statement, formats, values } => {
                let prepared = self.statements.get(statement).cloned().unwrap_or_default();
                let mut args = vec![prepared.sql];
                for (i, value) in values.iter().enumerate() {
                    let format = match formats.len() {
                        0 => 0,
                        1 => formats[0],
                        _ => formats.get(i).copied().unwrap_or(0),
                    };
                    let oid = prepared.param_types.get(i).copied().unwrap_or(0);
                    args.push(render_param(value.as_deref(), format == 1, oid));
                }
                self.portals.insert(portal.clone(), args);
                Awaiting::Bind
            }
            FrontendMessage::Execute { .. } => {
                let args = self.statement_of(message).unwrap_or_default();
                Awaiting::Execute { args, rows: 0, sent_ns: crate::clock::now_ns() }
            }
            FrontendMessage::Describe { kind, name } => Awaiting::Describe((*kind == b'S').then(|| name.clone())),
            FrontendMessage::Close { kind, name } => {
                if *kind == b'S' {
                    self.statements.remove(name);
                } else {
                    self.portals.remove(name);
                }
                Awaiting::Close
            }
            FrontendMessage::Sync => Awaiting::Sync,
            _ => return,
        };
        self.awaiting.push_back(awaiting);
    }

    /// The server sent `message` (parsed at `now_ns`).
    pub fn server_sent(&mut self, message: &BackendMessage, now_ns: u64) -> ServerStep {
        if self.status.is_none() {
            // Authentication and its errors are no statement's; a client may already have
            // sent its first statements.
            if let BackendMessage::ReadyForQuery { status } = message {
                self.status = Some(*status);
            }
            return ServerStep::default();
        }
        match message {
            BackendMessage::ParseComplete => self.pop_if(|a| matches!(a, Awaiting::Parse)),
            BackendMessage::BindComplete => self.pop_if(|a| matches!(a, Awaiting::Bind)),
            BackendMessage::CloseComplete => self.pop_if(|a| matches!(a, Awaiting::Close)),
            BackendMessage::NoData | BackendMessage::RowDescription => {
                self.pop_if(|a| matches!(a, Awaiting::Describe(_)))
            }
            BackendMessage::ParameterDescription { types } => {
                // Types the client left to the server (OID 0) are the server's from now on.
                if let Some(Awaiting::Describe(Some(name))) = self.awaiting.front() {
                    if let Some(prepared) = self.statements.get_mut(name) {
                        for (i, oid) in types.iter().enumerate() {
                            match prepared.param_types.get_mut(i) {
                                Some(declared) if *declared == 0 => *declared = *oid,
                                Some(_) => {}
                                None => prepared.param_types.push(*oid),
                            }
                        }
                    }
                }
            }
            BackendMessage::DataRow => {
                if let Some(Awaiting::Execute { rows, .. }) = self.awaiting.front_mut() {
                    *rows += 1;
                }
            }
            BackendMessage::CommandComplete { tag } => return self.result(tag.clone(), false, now_ns),
            BackendMessage::EmptyQuery => return self.result("EMPTY".into(), false, now_ns),
            BackendMessage::PortalSuspended => {
                let rows = match self.awaiting.front() {
                    Some(Awaiting::Execute { rows, .. }) => *rows,
                    _ => 0,
                };
                return self.result(format!("SUSPENDED {rows}"), false, now_ns);
            }
            BackendMessage::Error { sqlstate, message } => {
                let step = self.result(format!("{sqlstate} {message}"), true, now_ns);
                // An extended batch is skipped up to its Sync; those Executes get no reply.
                while self.awaiting.front().is_some_and(|a| !matches!(a, Awaiting::Sync | Awaiting::Query { .. })) {
                    self.awaiting.pop_front();
                }
                return step;
            }
            BackendMessage::ReadyForQuery { status } => {
                self.status = Some(*status);
                while let Some(awaiting) = self.awaiting.pop_front() {
                    match awaiting {
                        Awaiting::Sync => break,
                        Awaiting::Query { args, replies, error, replied_ns, sent_ns } => {
                            let finished = Exchange {
                                entries: Vec::new(),
                                server: ServerKind::Postgres,
                                connection: self.connection,
                                args,
                                reply: replies.join("; "),
                                error,
                                replied_ns: replied_ns.unwrap_or(now_ns),
                                sent_ns: Some(sent_ns),
                            };
                            return ServerStep { reply_to: None, finished: Some(finished) };
                        }
                        _ => {}
                    }
                }
            }
            BackendMessage::Other(_) | BackendMessage::BackendKeyData { .. } => {}
        }
        ServerStep::default()
    }

    fn pop_if(&mut self, expected: impl Fn(&Awaiting) -> bool) {
        if self.awaiting.front().is_some_and(expected) {
            self.awaiting.pop_front();
        }
    }

    /// A statement's result (or error) arrived: it belongs to the first Execute or Query in
    /// flight (what precedes it has been answered, or failed with this very error).
    fn result(&mut self, reply: String, error: bool, now_ns: u64) -> ServerStep {
        while self
            .awaiting
            .front()
            .is_some_and(|a| matches!(a, Awaiting::Parse | Awaiting::Bind | Awaiting::Describe(_) | Awaiting::Close))
        {
            self.awaiting.pop_front();
        }
        if let Some(Awaiting::Execute { .. }) = self.awaiting.front() {
            let Some(Awaiting::Execute { args, sent_ns, .. }) = self.awaiting.pop_front() else {
                return ServerStep::default();
            };
            let finished = Exchange {
                entries: Vec::new(),
                server: ServerKind::Postgres,
                connection: self.connection,
                args: args.clone(),
                reply,
                error,
                replied_ns: now_ns,
                sent_ns: Some(sent_ns),
            };
            return ServerStep { reply_to: Some(args), finished: Some(finished) };
        }
        match self.awaiting.front_mut() {
            Some(Awaiting::Query { args, replies, error: failed, replied_ns, .. }) => {
                replies.push(reply);
                *failed |= error;
                // The first result is the query's reply moment.
                let first = replied_ns.is_none();
                replied_ns.get_or_insert(now_ns);
                ServerStep { reply_to: first.then(|| args.clone()), finished: None }
            }
            _ => ServerStep::default(),
        }
    }
}

/// A parameter value as a timeline shows it: text as is, known binary types decoded, other
/// binary values as `\x` hex.
fn render_param(value: Option<&[u8]>, binary: bool, oid: u32) -> String {
    let Some(value) = value else { return "NULL".into() };
    if !binary {
        return String::from_utf8_lossy(value).into_owned();
    }
    match (oid, value.len()) {
        (16, 1) => (value[0] != 0).to_string(),
        (21, 2) => i16::from_be_bytes([value[0], value[1]]).to_string(),
        (23, 4) => i32::from_be_bytes([value[0], value[1], value[2], value[3]]).to_string(),
        (20, 8) => {
            let mut b = [0u8; 8];
            b.copy_from_slice(value);
            i64::from_be_bytes(b).to_string()
        }
        (25 | 1043, _) => String::from_utf8_lossy(value).into_owned(),
        _ => {
            let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
            format!("\\x{hex}")
        }
    }
}

/// Proxy one worker connection to the PostgreSQL server at `upstream` until either side
/// closes (or a rule closes it), recording each statement through `tap`.
pub async fn serve(mut client: TcpStream, upstream: SocketAddr, tap: Arc<WorkerTap>) -> std::io::Result<()> {
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
    let refused = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let mut upward = ClientSide {
            tap: &tap,
            connection,
            session: &session,
            frontend,
            broken,
            dropping_batch: false,
            deferred: Vec::new(),
            continued: Route::Out,
        };
        let mut downward =
            ServerSide { tap: &tap, connection, session: &session, broken: false, dropping_batch: false };
        let up = upward.run(client_read, server_write, pending);
        let down = downward.run(server_read, client_write);
        // Either side ending (EOF, a rule's Kill/Close, a refused frame) ends both; dropping
        // the sockets closes them.
        tokio::select! {
            result = up => result?,
            result = down => result.map(|()| None)?,
        }
    };
    match refused {
        Some(breach) => refuse(&mut client, &tap, &breach, connection).await,
        None => Ok(()),
    }
}

/// A frame over the server's limit: record it, tell the client in the server's words, close.
async fn refuse(client: &mut TcpStream, tap: &WorkerTap, breach: &Breach, connection: u32) -> std::io::Result<()> {
    tap.refused(breach, connection);
    client.write_all(&breach.reply()).await?;
    client.shutdown().await?;
    super::limits::linger(client).await;
    Ok(())
}

async fn delay(ms: f64) {
    tokio::time::sleep(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()).await;
}

fn lock(session: &Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a direction keeps forwarding after a message.
enum Flow {
    Continue,
    /// Kill or Close: end the connection.
    Stop,
}

/// The client → server direction.
struct ClientSide<'a> {
    tap: &'a WorkerTap,
    connection: u32,
    session: &'a Mutex<Session>,
    frontend: FrontendParser,
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

impl ClientSide<'_> {
    async fn run(
        &mut self,
        mut from: impl AsyncRead + Unpin,
        mut to: impl AsyncWrite + Unpin,
        mut pending: BytesMut,
    ) -> std::io::Result<Option<Breach>> {
        let mut out = Vec::with_capacity(8 * 1024);
        loop {
            while !pending.is_empty() {
                if self.broken {
                    out.extend_from_slice(&pending.split());
                    break;
                }
                let (frame, message) = match self.frontend.next(&pending) {
                    Ok(Some((len, message))) => (pending.split_to(len), message),
                    Ok(None) => break,
                    Err(FrameError::Limit(breach)) => {
                        // What came before it passes; nothing of it does.
                        to.write_all(&out).await?;
                        return Ok(Some(breach));
                    }
                    Err(_) => {
                        self.broken = true;
                        continue;
                    }
                };
                if message == FrontendMessage::Continued {
                    match self.continued {
                        Route::Out => out.extend_from_slice(&frame),
                        Route::Deferred => self.deferred.extend_from_slice(&frame),
                        Route::Dropped => {}
                    }
                    continue;
                }
                let head = self.frontend.rest > 0;
                let copy = head.then(|| frame.clone());
                if let Flow::Stop = self.message(frame, message, &mut out, &mut to).await? {
                    // What came before the stopped message has passed.
                    to.write_all(&out).await?;
                    return Ok(None);
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
            to.write_all(&out).await?;
            out.clear();
            if from.read_buf(&mut pending).await? == 0 {
                return Ok(None);
            }
        }
    }

    /// One whole message: apply the Send rules to a statement, then forward it (into `out`).
    async fn message(
        &mut self,
        frame: BytesMut,
        message: FrontendMessage,
        out: &mut Vec<u8>,
        to: &mut (impl AsyncWrite + Unpin),
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
            out.append(&mut self.deferred);
        }
        if let Some(args) = args {
            let view = CommandView { server: ServerKind::Postgres, connection: self.connection, args: &args };
            if self.tap.is_gated() {
                // Parse before it has passed (it executes nothing); the statement itself, with
                // its Bind, waits for the explorer.
                to.write_all(out).await?;
                out.clear();
                if !self.tap.hold(&view).await {
                    return Ok(Flow::Stop);
                }
                out.append(&mut self.deferred);
            }
            match self.tap.decide(&view, Moment::Send) {
                Action::Forward => {}
                Action::Kill | Action::Close => return Ok(Flow::Stop),
                Action::Drop => {
                    self.dropping_batch = matches!(message, FrontendMessage::Execute { .. });
                    return Ok(Flow::Continue);
                }
                Action::DelayMs(ms) => {
                    to.write_all(out).await?;
                    out.clear();
                    delay(ms).await;
                }
            }
        }
        lock(self.session).client_sent(&message);
        out.extend_from_slice(&frame);
        Ok(Flow::Continue)
    }
}

/// The server → client direction.
struct ServerSide<'a> {
    tap: &'a WorkerTap,
    connection: u32,
    session: &'a Mutex<Session>,
    broken: bool,
    /// A Reply rule dropped a reply: drop what follows, up to the next ReadyForQuery.
    dropping_batch: bool,
}

impl ServerSide<'_> {
    async fn run(&mut self, mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin) -> std::io::Result<()> {
        let mut backend = BackendParser::new();
        let mut pending = BytesMut::with_capacity(16 * 1024);
        let mut out = Vec::with_capacity(16 * 1024);
        loop {
            if from.read_buf(&mut pending).await? == 0 {
                return Ok(());
            }
            while !pending.is_empty() {
                if self.broken {
                    out.extend_from_slice(&pending.split());
                    break;
                }
                let (frame, message) = match backend.next(&pending) {
                    Ok(Some((len, message))) => (pending.split_to(len), message),
                    Ok(None) => break,
                    Err(_) => {
                        self.broken = true;
                        continue;
                    }
                };
                let step = lock(self.session).server_sent(&message, crate::clock::now_ns());
                let flow = self.message(&frame, &message, step, &mut out, &mut to).await?;
                if let Flow::Stop = flow {
                    return to.write_all(&out).await;
                }
            }
            to.write_all(&out).await?;
            out.clear();
        }
    }

    /// One whole message: apply the Reply rules to a statement's reply, record what it
    /// completes, then forward it (into `out`).
    async fn message(
        &mut self,
        frame: &[u8],
        message: &BackendMessage,
        step: ServerStep,
        out: &mut Vec<u8>,
        to: &mut (impl AsyncWrite + Unpin),
    ) -> std::io::Result<Flow> {
        let mut flow = Flow::Continue;
        let mut forward = !self.dropping_batch;
        if let BackendMessage::BackendKeyData { pid } = message {
            self.tap.connection_opened(ServerKind::Postgres, self.connection, Some(*pid));
        }
        if let Some(args) = &step.reply_to {
            let view = CommandView { server: ServerKind::Postgres, connection: self.connection, args };
            match self.tap.decide(&view, Moment::Reply) {
                Action::Forward => {}
                Action::Kill | Action::Close => flow = Flow::Stop,
                Action::Drop => {
                    self.dropping_batch = true;
                    forward = false;
                }
                Action::DelayMs(ms) => {
                    to.write_all(out).await?;
                    out.clear();
                    delay(ms).await;
                }
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
            out.extend_from_slice(frame);
        }
        Ok(flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            if let Some(mut x) = session.server_sent(m, i as u64).finished {
                // Every statement carries its send time (the clock's; the tests compare the rest).
                assert!(x.sent_ns.take().is_some(), "{x:?}");
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
            exchanges.extend(session.server_sent(m, i as u64).finished.map(|mut x| {
                assert!(x.sent_ns.take().is_some(), "{x:?}");
                x
            }));
            if let BackendMessage::ReadyForQuery { .. } = m {
                statuses.push(session.transaction_status());
            }
        }
        assert_eq!(
            exchanges,
            vec![
                exchange(&["BEGIN"], "BEGIN", false, 0),
                exchange(
                    &[insert, "7"],
                    "23505 duplicate key value violates unique constraint \"orders_pkey\"",
                    true,
                    4
                ),
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
        assert_eq!(
            FrontendParser { typed: true, ..Default::default() }.next(&bad_bind),
            Err(FrameError::Truncated('B'))
        );
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
        assert_eq!(
            typed().next(&[[b'Q'].as_slice(), &max.to_be_bytes()].concat()),
            Ok(None),
            "exactly the limit waits"
        );
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

    use crate::interposer::Rule;
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
        rules: Vec<Rule>,
    ) -> (TcpStream, tokio::task::JoinHandle<Vec<u8>>, mpsc::UnboundedReceiver<RawEvent>) {
        let expect = startup("ordlab").len() + query("UPDATE orders SET status = 'paid'").len();
        let reply = [auth_ok(), ready(b'I'), command_complete("UPDATE 1"), ready(b'I')].concat();
        proxied_to(rules, expect, reply).await
    }

    /// A client connected through `serve` to a server that reads `expect` bytes, then answers
    /// `reply` and reads the rest until the proxy closes.
    async fn proxied_to(
        rules: Vec<Rule>,
        expect: usize,
        reply: Vec<u8>,
    ) -> (TcpStream, tokio::task::JoinHandle<Vec<u8>>, mpsc::UnboundedReceiver<RawEvent>) {
        let server_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let upstream = server_listener.local_addr().expect("addr");
        let proxy_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let proxy_addr = proxy_listener.local_addr().expect("addr");
        let (sink, events) = mpsc::unbounded_channel();
        let tap = WorkerTap::new(Actor::Worker(1), rules, sink, Box::new(|| {}));
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
        let tap = WorkerTap::gated(Actor::Worker(1), Vec::new(), sink, Box::new(|| {}), Some(gate));
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
        let rule = Rule { command: "UPDATE".into(), nth: 1, moment: Moment::Send, action: Action::Close };
        let (mut client, server, mut events) = proxied(vec![rule]).await;
        client.write_all(&[startup("ordlab"), query("UPDATE orders SET status = 'paid'")].concat()).await.unwrap();
        let mut rest = Vec::new();
        let _ = client.read_to_end(&mut rest).await;
        assert!(rest.is_empty(), "the proxy closed the client without a reply");
        server.abort();
        assert!(events.try_recv().is_err(), "nothing recorded");
    }

    #[tokio::test]
    async fn a_drop_rule_at_reply_records_the_statement_but_holds_back_its_reply() {
        let rule = Rule { command: "UPDATE".into(), nth: 1, moment: Moment::Reply, action: Action::Drop };
        let (mut client, server, mut events) = proxied(vec![rule]).await;
        client.write_all(&[startup("ordlab"), query("UPDATE orders SET status = 'paid'")].concat()).await.unwrap();
        let before = [auth_ok(), ready(b'I')].concat();
        let mut got = vec![0u8; before.len()];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, before);
        let event = events.recv().await.expect("the statement is recorded");
        assert!(
            matches!(event.kind, crate::timeline::EventKind::ServerCommand { ref reply, .. } if reply == "UPDATE 1")
        );
        client.shutdown().await.unwrap();
        let mut rest = Vec::new();
        let _ = client.read_to_end(&mut rest).await;
        assert!(rest.is_empty(), "neither CommandComplete nor ReadyForQuery reached the client: {rest:?}");
        server.abort();
    }

    #[tokio::test]
    async fn a_drop_rule_at_send_holds_back_the_rest_of_the_batch() {
        let rule = Rule { command: "UPDATE".into(), nth: 1, moment: Moment::Send, action: Action::Drop };
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
        assert!(events.try_recv().is_err(), "nothing recorded");
    }
}
