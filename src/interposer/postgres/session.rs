//! One connection's statements in flight, as a pure state machine: it pairs what the client
//! sent with what the server answered and turns them into one exchange per statement.

use super::backend::{BackendMessage, TransactionStatus};
use super::frontend::FrontendMessage;
use crate::interposer::Exchange;
use crate::timeline::ServerKind;
use std::collections::{HashMap, VecDeque};

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
    /// The client sent Terminate: the server's close that follows is the client's doing.
    pub terminated: bool,
}

impl Session {
    pub fn new(connection: u32) -> Session {
        Session {
            connection,
            statements: HashMap::new(),
            portals: HashMap::new(),
            awaiting: VecDeque::new(),
            status: None,
            terminated: false,
        }
    }

    /// The statements sent and never answered (their args, when they were sent): what a
    /// connection that closes now leaves without a reply.
    pub fn unanswered(&mut self) -> Vec<(Vec<String>, u64)> {
        self.awaiting
            .drain(..)
            .filter_map(|a| match a {
                Awaiting::Execute { args, sent_ns, .. } => Some((args, sent_ns)),
                Awaiting::Query { args, sent_ns, replied_ns: None, .. } => Some((args, sent_ns)),
                _ => None,
            })
            .collect()
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
