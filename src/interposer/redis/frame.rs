//! RESP replies as the interposer reads them: a server's replies in RESP2 or RESP3, decoded by
//! `redis-protocol` into a small [`Reply`] tree that a timeline line can abbreviate (a client's
//! commands are read by [`super::command`]).
//!
//! Every function here is pure and incremental: it is handed the bytes read so far and says
//! how many make the next whole frame, or that more are needed.

use redis_protocol::resp2::types::OwnedFrame as Resp2;
use redis_protocol::resp3::types::OwnedFrame as Resp3;

/// The protocol a connection speaks: RESP2 until a `HELLO 3` succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

/// A malformed frame: the connection is no longer parsed (its bytes still pass unchanged).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed RESP frame: {0}")]
pub struct FrameError(String);

/// A reply, reduced to what a timeline line needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Bulk(String),
    Null,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    /// RESP3 out-of-band data (a pub/sub message, a client-side caching invalidation): it
    /// answers no command.
    Push(Vec<Reply>),
}

impl Reply {
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}

/// The next whole reply in `buf` and its length; None while it is incomplete.
pub fn next_reply(buf: &[u8], protocol: Protocol) -> Result<Option<(Reply, usize)>, FrameError> {
    if buf.is_empty() {
        return Ok(None);
    }
    match protocol {
        Protocol::Resp2 => Ok(redis_protocol::resp2::decode::decode(buf)
            .map_err(|e| FrameError(e.to_string()))?
            .map(|(f, n)| (from_2(f), n))),
        Protocol::Resp3 => Ok(redis_protocol::resp3::decode::complete::decode(buf)
            .map_err(|e| FrameError(e.to_string()))?
            .map(|(f, n)| (from_3(f), n))),
    }
}

fn from_2(f: Resp2) -> Reply {
    match f {
        Resp2::SimpleString(b) => Reply::Simple(String::from_utf8_lossy(&b).into_owned()),
        Resp2::Error(e) => Reply::Error(e),
        Resp2::Integer(n) => Reply::Int(n),
        Resp2::BulkString(b) => Reply::Bulk(String::from_utf8_lossy(&b).into_owned()),
        Resp2::Array(items) => Reply::Array(items.into_iter().map(from_2).collect()),
        Resp2::Null => Reply::Null,
    }
}

fn from_3(f: Resp3) -> Reply {
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    match f {
        Resp3::BlobString { data, .. } | Resp3::VerbatimString { data, .. } => Reply::Bulk(text(data)),
        Resp3::SimpleString { data, .. } => Reply::Simple(text(data)),
        Resp3::BlobError { data, .. } => Reply::Error(text(data)),
        Resp3::SimpleError { data, .. } => Reply::Error(data),
        Resp3::Boolean { data, .. } => Reply::Bool(data),
        Resp3::Null => Reply::Null,
        Resp3::Number { data, .. } => Reply::Int(data),
        Resp3::Double { data, .. } => Reply::Double(data),
        Resp3::BigNumber { data, .. } => Reply::Bulk(text(data)),
        Resp3::Array { data, .. } => Reply::Array(data.into_iter().map(from_3).collect()),
        Resp3::Set { data, .. } => Reply::Array(data.into_iter().map(from_3).collect()),
        Resp3::Map { data, .. } => Reply::Map(data.into_iter().map(|(k, v)| (from_3(k), from_3(v))).collect()),
        Resp3::Push { data, .. } => Reply::Push(data.into_iter().map(from_3).collect()),
        Resp3::Hello { .. } | Resp3::ChunkedString(_) => Reply::Simple("…".into()),
    }
}

/// Longest bulk string shown whole in a line.
const SHOWN_CHARS: usize = 40;
/// Most items of an array shown in a line.
const SHOWN_ITEMS: usize = 4;

/// A reply as a timeline line shows it, knowing the command it answers: a stream read names
/// its entries (`1 entry 1-0 order=42 type=created version=1`), anything else is shown
/// compactly (`OK`, `1`, `(nil)`, `[a, b, … 9 items]`).
pub fn abbreviate(command: &str, reply: &Reply) -> String {
    if matches!(command, "XREADGROUP" | "XREAD" | "XRANGE" | "XREVRANGE" | "XCLAIM" | "XAUTOCLAIM") {
        if let Some(entries) = stream_entries(command, reply) {
            return entries_line(&entries);
        }
    }
    compact(reply)
}

/// The entries a stream read's reply handed over (none for any other reply).
pub fn delivered(command: &str, reply: &Reply) -> Vec<crate::timeline::WireEntry> {
    if !matches!(command, "XREADGROUP" | "XREAD" | "XCLAIM" | "XAUTOCLAIM") {
        return Vec::new();
    }
    stream_entries(command, reply)
        .unwrap_or_default()
        .into_iter()
        .map(|(id, fields)| crate::timeline::WireEntry {
            id: id.to_string(),
            fields: fields.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        })
        .collect()
}

/// An entry of a stream reply: its ID and its fields.
type Entry<'a> = (&'a str, Vec<(&'a str, &'a str)>);

/// The entries of a stream read's reply, in the reply's order (over every stream it read).
fn stream_entries<'a>(command: &str, reply: &'a Reply) -> Option<Vec<Entry<'a>>> {
    let entry = |e: &'a Reply| -> Option<Entry<'a>> {
        let Reply::Array(parts) = e else { return None };
        let id = bulk(parts.first()?)?;
        let fields = match parts.get(1) {
            Some(Reply::Array(kv)) => {
                kv.chunks(2).filter_map(|p| Some((bulk(p.first()?)?, bulk(p.get(1)?)?))).collect()
            }
            Some(Reply::Map(kv)) => kv.iter().filter_map(|(k, v)| Some((bulk(k)?, bulk(v)?))).collect(),
            _ => Vec::new(),
        };
        Some((id, fields))
    };
    let list = |r: &'a Reply| -> Option<Vec<Entry<'a>>> {
        match r {
            Reply::Array(es) => es.iter().map(entry).collect(),
            Reply::Null => Some(Vec::new()),
            _ => None,
        }
    };
    match (command, reply) {
        (_, Reply::Null) => Some(Vec::new()),
        ("XRANGE" | "XREVRANGE" | "XCLAIM", r) => list(r),
        // [next cursor, entries, deleted IDs]
        ("XAUTOCLAIM", Reply::Array(parts)) => list(parts.get(1)?),
        // RESP2: [[stream, entries], …]; RESP3: {stream: entries, …}
        (_, Reply::Array(streams)) => {
            let mut all = Vec::new();
            for s in streams {
                let Reply::Array(pair) = s else { return None };
                all.extend(list(pair.get(1)?)?);
            }
            Some(all)
        }
        (_, Reply::Map(streams)) => {
            let mut all = Vec::new();
            for (_, entries) in streams {
                all.extend(list(entries)?);
            }
            Some(all)
        }
        _ => None,
    }
}

fn bulk(r: &Reply) -> Option<&str> {
    match r {
        Reply::Bulk(s) | Reply::Simple(s) => Some(s),
        _ => None,
    }
}

fn entries_line(entries: &[Entry<'_>]) -> String {
    if entries.is_empty() {
        return "(nil)".into();
    }
    let one = |(id, fields): &Entry<'_>| {
        let mut s = id.to_string();
        for (k, v) in fields {
            s.push_str(&format!(" {k}={}", shorten(v, 16)));
        }
        s
    };
    let shown: Vec<String> = entries.iter().take(2).map(one).collect();
    let more = if entries.len() > 2 { format!(", … {} more", entries.len() - 2) } else { String::new() };
    let noun = if entries.len() == 1 { "entry" } else { "entries" };
    format!("{} {noun} {}{more}", entries.len(), shown.join(", "))
}

/// At most `max` characters on one line: line breaks in a bulk reply (`INFO`) shown as `⏎`.
fn shorten(s: &str, max: usize) -> String {
    let s = &s.trim_end().replace("\r\n", "⏎").replace('\n', "⏎");
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// Any reply in a few words.
pub fn compact(reply: &Reply) -> String {
    match reply {
        Reply::Simple(s) | Reply::Error(s) => s.clone(),
        Reply::Int(n) => n.to_string(),
        Reply::Double(d) => d.to_string(),
        Reply::Bool(b) => b.to_string(),
        Reply::Bulk(s) => shorten(s, SHOWN_CHARS),
        Reply::Null => "(nil)".into(),
        Reply::Array(items) | Reply::Push(items) => {
            let mut shown: Vec<String> = items.iter().take(SHOWN_ITEMS).map(compact).collect();
            if items.len() > SHOWN_ITEMS {
                shown.push(format!("… {} items", items.len()));
            }
            format!("[{}]", shown.join(", "))
        }
        Reply::Map(pairs) => {
            let mut shown: Vec<String> =
                pairs.iter().take(SHOWN_ITEMS).map(|(k, v)| format!("{}: {}", compact(k), compact(v))).collect();
            if pairs.len() > SHOWN_ITEMS {
                shown.push(format!("… {} pairs", pairs.len()));
            }
            format!("{{{}}}", shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_nulls_and_resp3_maps_and_pushes_are_read_by_their_protocol() {
        assert_eq!(next_reply(b"$-1\r\n", Protocol::Resp2).unwrap(), Some((Reply::Null, 5)));
        assert_eq!(next_reply(b"*-1\r\n", Protocol::Resp2).unwrap(), Some((Reply::Null, 5)));
        assert_eq!(next_reply(b"_\r\n", Protocol::Resp3).unwrap(), Some((Reply::Null, 3)));
        let map = b"%1\r\n+proto\r\n:3\r\n";
        assert_eq!(
            next_reply(map, Protocol::Resp3).unwrap(),
            Some((Reply::Map(vec![(Reply::Simple("proto".into()), Reply::Int(3))]), map.len()))
        );
        let push = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n";
        let (reply, _) = next_reply(push, Protocol::Resp3).unwrap().unwrap();
        assert!(matches!(reply, Reply::Push(_)));
        assert!(next_reply(b"%1\r\n", Protocol::Resp2).is_err(), "a map is not RESP2");
        assert_eq!(next_reply(b"%1\r\n+proto\r\n", Protocol::Resp3).unwrap(), None, "split map");
    }

    fn xreadgroup_resp2() -> Vec<u8> {
        b"*1\r\n*2\r\n$6\r\norders\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*4\r\n$4\r\ntype\r\n$7\r\ncreated\r\n$7\r\nversion\r\n$1\r\n1\r\n"
            .to_vec()
    }

    #[test]
    fn a_stream_read_names_its_entries_in_either_protocol() {
        let (r2, _) = next_reply(&xreadgroup_resp2(), Protocol::Resp2).unwrap().unwrap();
        assert_eq!(abbreviate("XREADGROUP", &r2), "1 entry 1-0 type=created version=1");
        let got = delivered("XREADGROUP", &r2);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].id.as_str(), got[0].fields[0].1.as_str()), ("1-0", "created"));
        assert!(delivered("XADD", &r2).is_empty(), "only a read delivers");
        let resp3 = b"%1\r\n$6\r\norders\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$4\r\ntype\r\n$4\r\npaid\r\n";
        let (r3, _) = next_reply(resp3, Protocol::Resp3).unwrap().unwrap();
        assert_eq!(abbreviate("XREADGROUP", &r3), "1 entry 1-0 type=paid");
        // A blocking read that timed out.
        assert_eq!(abbreviate("XREADGROUP", &Reply::Null), "(nil)");
        let autoclaim = Reply::Array(vec![
            Reply::Bulk("0-0".into()),
            Reply::Array(vec![Reply::Array(vec![Reply::Bulk("5-0".into()), Reply::Array(vec![])])]),
            Reply::Array(vec![]),
        ]);
        assert_eq!(abbreviate("XAUTOCLAIM", &autoclaim), "1 entry 5-0");
    }

    #[test]
    fn an_error_inside_a_transaction_shows_in_exec_s_reply() {
        let exec = b"*2\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        let (r, n) = next_reply(exec, Protocol::Resp2).unwrap().unwrap();
        assert_eq!(n, exec.len());
        assert_eq!(compact(&r), "[OK, WRONGTYPE Operation against a key holding the wrong kind of value]");
        assert!(!r.is_error(), "EXEC itself succeeded");
        let (e, _) = next_reply(b"-EXECABORT Transaction discarded\r\n", Protocol::Resp2).unwrap().unwrap();
        assert!(e.is_error());
    }

    #[test]
    fn long_replies_are_cut_visibly() {
        let items = Reply::Array((1..=6).map(Reply::Int).collect());
        assert_eq!(compact(&items), "[1, 2, 3, 4, … 6 items]");
        assert_eq!(compact(&Reply::Bulk("x".repeat(50))), format!("{}…", "x".repeat(40)));
        assert_eq!(
            compact(&Reply::Bulk("# Server\r\nredis_version:8\r\n".into())),
            "# Server⏎redis_version:8",
            "one line"
        );
    }
}
