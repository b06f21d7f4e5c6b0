//! The client's stream, parsed: the untyped start-up phase (StartupMessage, SSLRequest,
//! GSSENCRequest, CancelRequest), then typed messages with the fields the interposer uses.
//! `postgres-protocol` writes these messages but reads only the server's, so this side is
//! read here, incrementally and within the server's own limits.

use super::{be_i32, typed_frame, FrameError};
use crate::interposer::limits::{Breach, HELD_MAX, PG_MESSAGE_MAX, PG_STARTUP_MAX};

pub(super) const SSL_REQUEST: i32 = 80877103;
pub(super) const GSSENC_REQUEST: i32 = 80877104;
pub(super) const CANCEL_REQUEST: i32 = 80877102;

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
    pub(super) typed: bool,
    /// Bytes still to come of a message streamed through.
    pub(super) rest: u64,
}

impl FrontendParser {
    pub fn new() -> FrontendParser {
        FrontendParser::default()
    }

    /// Is a message larger than [`HELD_MAX`] streaming through (its head was the last message)?
    pub fn streaming(&self) -> bool {
        self.rest > 0
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
