//! The limits a frame must keep at the wire, as the servers themselves have them: a worker's
//! frame over one is refused by the interposer with the server's own error text, the connection
//! is closed, and the refusal becomes a timeline event that makes the run unknown.
//!
//! The interposer holds at most [`HELD_MAX`] bytes of one frame; a larger legal frame (a bulk
//! up to Redis's `proto-max-bulk-len`, a PostgreSQL message up to 1 GB) is streamed through in
//! pieces while its parser counts what remains. The limits and their texts are the servers':
//!
//! - Redis, `src/networking.c` (`processInlineBuffer`, `processMultibulkBuffer`) and
//!   `src/server.h`: an inline request, or a `*<count>` or `$<len>` line, without its line end
//!   after `PROTO_INLINE_MAX_SIZE` (`1024*64`) bytes is "Protocol error: too big inline
//!   request", "… too big mbulk count string", "… too big bulk count string"; a count that is
//!   not a number or over `INT_MAX` is "Protocol error: invalid multibulk length" (Redis 7 and
//!   8; Redis ≤ 6.2 bounded it at `1024*1024`); a bulk length below 0 or over
//!   `proto-max-bulk-len` (`src/config.c`: 512 MB by default) is "Protocol error: invalid bulk
//!   length". Redis sends them as `-ERR <text>` and closes the connection.
//! - PostgreSQL, `src/backend/libpq/pqcomm.c` (`pq_getmessage`) with
//!   `src/include/libpq/libpq.h`: a message whose length word is over `PQ_LARGE_MESSAGE_LIMIT`
//!   (`MaxAllocSize - 1`, 1 GB − 2) is "invalid message length"; `ProcessStartupPacket`
//!   (`src/backend/tcop/backend_startup.c`): a start-up packet whose length, less its length
//!   word, is under 4 or over `MAX_STARTUP_PACKET_LENGTH` (10 000) is "invalid length of startup
//!   packet"; both `ERRCODE_PROTOCOL_VIOLATION` (SQLSTATE `08P01`). The server only logs them
//!   (`COMMERROR`) and closes; the interposer also tells the client, in a FATAL ErrorResponse.

use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, ServerKind};
use serde::{Deserialize, Serialize};

/// Redis's `PROTO_INLINE_MAX_SIZE`: the longest line without its end (an inline request, a
/// `*<count>` or `$<len>` line).
pub const REDIS_INLINE_MAX: usize = 64 * 1024;
/// Redis's bound on a multibulk count (`INT_MAX`).
pub const REDIS_MULTIBULK_MAX: i64 = i32::MAX as i64;
/// Redis's `proto-max-bulk-len` default: the longest bulk argument.
pub const REDIS_BULK_MAX: i64 = 512 * 1024 * 1024;
/// PostgreSQL's `PQ_LARGE_MESSAGE_LIMIT` (`MaxAllocSize - 1`): the largest length word of a
/// message.
pub const PG_MESSAGE_MAX: i64 = 0x3fff_fffe;
/// PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`: the longest start-up packet, its length word left
/// out.
pub const PG_STARTUP_MAX: i64 = 10_000;
/// The most bytes of one frame the interposer holds before it streams the rest through.
pub const HELD_MAX: usize = 1024 * 1024;

/// A frame over one of the servers' limits: what the interposer refuses, as the server would.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Breach {
    /// An inline request of more than [`REDIS_INLINE_MAX`] bytes without its line end.
    #[error("an inline request of more than {REDIS_INLINE_MAX} bytes without CRLF")]
    RedisInline,
    /// A `*<count>` line of more than [`REDIS_INLINE_MAX`] bytes without its line end.
    #[error("a multibulk count line of more than {REDIS_INLINE_MAX} bytes without CRLF")]
    RedisCountLine,
    /// A `$<len>` line of more than [`REDIS_INLINE_MAX`] bytes without its line end.
    #[error("a bulk length line of more than {REDIS_INLINE_MAX} bytes without CRLF")]
    RedisBulkLine,
    /// A multibulk count that is no number or over [`REDIS_MULTIBULK_MAX`].
    #[error("a multibulk count of {count} (at most {REDIS_MULTIBULK_MAX})")]
    RedisMultibulk { count: String },
    /// A bulk length that is no number, negative, or over [`REDIS_BULK_MAX`].
    #[error("a bulk of {len} bytes (at most {REDIS_BULK_MAX})")]
    RedisBulk { len: String },
    /// A start-up packet whose length is out of the server's range.
    #[error("a start-up packet of {len} bytes (at most {PG_STARTUP_MAX} after its length word)")]
    PgStartup { len: i64 },
    /// A message whose length word is over [`PG_MESSAGE_MAX`].
    #[error("a message '{tag}' of {len} bytes (at most {PG_MESSAGE_MAX})")]
    PgMessage { tag: char, len: i64 },
}

impl Breach {
    pub fn server(&self) -> ServerKind {
        match self {
            Breach::PgStartup { .. } | Breach::PgMessage { .. } => ServerKind::Postgres,
            _ => ServerKind::Redis,
        }
    }

    /// The server's own error text for this frame.
    pub fn server_text(&self) -> &'static str {
        match self {
            Breach::RedisInline => "Protocol error: too big inline request",
            Breach::RedisCountLine => "Protocol error: too big mbulk count string",
            Breach::RedisBulkLine => "Protocol error: too big bulk count string",
            Breach::RedisMultibulk { .. } => "Protocol error: invalid multibulk length",
            Breach::RedisBulk { .. } => "Protocol error: invalid bulk length",
            Breach::PgStartup { .. } => "invalid length of startup packet",
            Breach::PgMessage { .. } => "invalid message length",
        }
    }

    /// The limit in a few words (`bulk ≤ 536870912 bytes (proto-max-bulk-len)`).
    pub fn limit(&self) -> String {
        match self {
            Breach::RedisInline | Breach::RedisCountLine | Breach::RedisBulkLine => {
                format!("a line ≤ {REDIS_INLINE_MAX} bytes (PROTO_INLINE_MAX_SIZE)")
            }
            Breach::RedisMultibulk { .. } => format!("multibulk count ≤ {REDIS_MULTIBULK_MAX}"),
            Breach::RedisBulk { .. } => format!("bulk ≤ {REDIS_BULK_MAX} bytes (proto-max-bulk-len)"),
            Breach::PgStartup { .. } => format!("start-up packet ≤ {PG_STARTUP_MAX} bytes (MAX_STARTUP_PACKET_LENGTH)"),
            Breach::PgMessage { .. } => format!("message ≤ {PG_MESSAGE_MAX} bytes (PQ_LARGE_MESSAGE_LIMIT)"),
        }
    }

    /// What the client is sent before the connection closes: `-ERR <text>\r\n` (Redis), a FATAL
    /// ErrorResponse with SQLSTATE `08P01` (PostgreSQL).
    pub fn reply(&self) -> Vec<u8> {
        match self.server() {
            ServerKind::Redis => format!("-ERR {}\r\n", self.server_text()).into_bytes(),
            ServerKind::Postgres => {
                let mut body = Vec::new();
                for (field, value) in [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', "08P01"), (b'M', self.server_text())] {
                    body.push(field);
                    body.extend_from_slice(value.as_bytes());
                    body.push(0);
                }
                body.push(0);
                let mut out = vec![b'E'];
                out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
                out.extend(body);
                out
            }
        }
    }

    /// The timeline event of this refusal on a worker's `connection`.
    pub fn event(&self, connection: u32) -> WireEvent {
        WireEvent::FrameRefused {
            server: self.server(),
            connection,
            limit: self.limit(),
            frame: self.to_string(),
            error: self.server_text().to_string(),
        }
    }
}

/// How long a refused connection still reads (and drops) what the client sends, so that the
/// client reads the error before the socket closes (closed with unread bytes, it would be
/// reset and the error lost).
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// After a refusal: read and drop what the client still sends, until it closes its side or
/// [`LINGER`] has passed.
pub async fn linger(from: &mut (impl tokio::io::AsyncRead + Unpin)) {
    use tokio::io::AsyncReadExt as _;
    let mut sink = vec![0u8; 64 * 1024];
    let _ = tokio::time::timeout(LINGER, async { while matches!(from.read(&mut sink).await, Ok(n) if n > 0) {} }).await;
}

/// What the interposer itself did to a worker's connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireEvent {
    /// The worker sent a frame over the server's `limit`: the interposer answered with the
    /// server's `error` and closed the connection. The run cannot be judged.
    FrameRefused { server: ServerKind, connection: u32, limit: String, frame: String, error: String },
}

impl WireEvent {
    /// Why a run with this event is unknown.
    pub fn reason(&self, actor: Actor) -> String {
        let WireEvent::FrameRefused { server, limit, frame, .. } = self;
        format!("{actor} sent {frame} to {}, over its limit ({limit}): its connection was closed", server_name(*server))
    }
}

fn server_name(server: ServerKind) -> &'static str {
    match server {
        ServerKind::Redis => "Redis",
        ServerKind::Postgres => "PostgreSQL",
    }
}

impl Vocabulary for WireEvent {
    const KINDS: &'static [&'static str] = &["frame_refused"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let WireEvent::FrameRefused { server, connection, limit, frame, error } = self;
        let s = server_name(*server);
        Some(crate::tr!(
            w.lang,
            "{a} sent {frame} to {s} on connection {connection}, over its limit ({limit}): the interposer answered `{error}` and closed the connection",
            "{a} gửi {frame} tới {s} trên kết nối {connection}, vượt giới hạn ({limit}): interposer trả lời `{error}` và đóng kết nối"
        ))
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        Drawing::Mark(Glyph::Failed, pick(w.lang, "frame over limit", "khung vượt giới hạn").to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_refusal_is_the_server_s_error_line_and_a_postgres_one_an_error_response() {
        assert_eq!(
            Breach::RedisBulk { len: "1099511627776".into() }.reply(),
            b"-ERR Protocol error: invalid bulk length\r\n"
        );
        let pg = Breach::PgMessage { tag: 'Q', len: 0x7fff_fff0 }.reply();
        assert_eq!(pg[0], b'E');
        assert_eq!(i32::from_be_bytes([pg[1], pg[2], pg[3], pg[4]]) as usize, pg.len() - 1);
        assert_eq!(&pg[5..], b"SFATAL\0VFATAL\0C08P01\0Minvalid message length\0\0");
    }

    #[test]
    fn the_refusal_event_names_the_limit_and_decodes_back() {
        crate::timeline::vocabulary::check_kinds(&[Breach::RedisInline.event(2)]);
        let reason = Breach::PgStartup { len: 2_147_483_632 }.event(1).reason(Actor::Consumer(1));
        assert_eq!(
            reason,
            "C1 sent a start-up packet of 2147483632 bytes (at most 10000 after its length word) to PostgreSQL, \
             over its limit (start-up packet ≤ 10000 bytes (MAX_STARTUP_PACKET_LENGTH)): its connection was closed"
        );
    }
}
