//! The server's stream, parsed with `postgres-protocol`: typed messages, decoded only where
//! the interposer reads their fields (a result's tag, an error's SQLSTATE, a transaction status).

use super::{typed_frame, FrameError};
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;

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
            b'C' | b'E' | b'Z' | b't' => None,
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
