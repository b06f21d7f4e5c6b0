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

mod backend;
mod frontend;
mod proxy;
mod session;
#[cfg(test)]
mod tests;

pub use backend::{BackendMessage, BackendParser, TransactionStatus};
pub use frontend::{FrontendMessage, FrontendParser};
pub use proxy::serve;
pub use session::{ServerStep, Session};

use super::limits::Breach;

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
