//! The worker's command stream read incrementally, byte by byte once: a [`CommandReader`] is
//! fed each read as it arrives and says where a command ends, keeping only what it needs (the
//! line it is in, the arguments' text up to a budget) and counting what remains of a bulk.
//!
//! Parsing is linear in the bytes read (a partial line is never rescanned) and bounded in
//! memory whatever the worker sends; a frame over Redis's own limits is a [`Breach`]
//! ([`super::super::limits`]), read exactly as Redis's `processInlineBuffer` and
//! `processMultibulkBuffer` read it.

use crate::interposer::limits::{Breach, REDIS_BULK_MAX, REDIS_INLINE_MAX, REDIS_MULTIBULK_MAX};

/// How many bytes of a command's arguments are kept as text (a command under this is recorded
/// whole; a larger one's arguments are cut, visibly).
pub const KEPT_MAX: usize = 64 * 1024;

/// Why the command stream cannot be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Over a limit of the server's: refuse it as the server would.
    #[error(transparent)]
    Limit(#[from] Breach),
    /// Not RESP as Redis reads it (`expected '$', got 'x'`): the server answers it.
    #[error("malformed RESP command: {0}")]
    Malformed(String),
}

/// What one call of [`CommandReader::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Fed {
    /// All the input belongs to a command that is not complete yet.
    Partial,
    /// A command ends after `used` bytes of the input: its arguments, the name upper-cased
    /// (none for an empty inline line or `*0`, which Redis does not answer).
    Command { used: usize, args: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between commands.
    Start,
    /// In an inline command's line.
    Inline,
    /// In the `*<count>` line.
    CountLine,
    /// In a `$<len>` line; `left` bulks to go, this one included.
    BulkLine { left: i64 },
    /// In a bulk's bytes: `remaining` of its data and CRLF.
    Bulk { left: i64, remaining: u64 },
}

/// An incremental reader of RESP commands (multibulk and inline), as Redis reads them.
#[derive(Debug)]
pub struct CommandReader {
    state: State,
    /// The line being read, without its end.
    line: Vec<u8>,
    args: Vec<Vec<u8>>,
    /// Bytes of arguments kept so far (text and per-argument overhead).
    kept: usize,
    /// Arguments (or bytes of them) left out over the budget.
    cut: bool,
    /// The current bulk's announced length.
    bulk_len: u64,
    /// The announced lengths of the command's bulks so far.
    total: u64,
    /// The current bulk's bytes are kept.
    keeping: bool,
}

impl Default for CommandReader {
    fn default() -> Self {
        CommandReader::new()
    }
}

impl CommandReader {
    pub fn new() -> CommandReader {
        CommandReader {
            state: State::Start,
            line: Vec::new(),
            args: Vec::new(),
            kept: 0,
            cut: false,
            bulk_len: 0,
            total: 0,
            keeping: false,
        }
    }

    /// Is a command partly read?
    pub fn in_command(&self) -> bool {
        self.state != State::Start
    }

    /// The arguments read so far of the command in progress (what a rule sees of a command
    /// streamed through before its end).
    pub fn args_so_far(&self) -> Vec<String> {
        self.texts(true)
    }

    /// Read `input` up to the end of the current command at most.
    pub fn feed(&mut self, input: &[u8]) -> Result<Fed, ReadError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Start => {
                    self.state = if input[pos] == b'*' {
                        pos += 1;
                        State::CountLine
                    } else {
                        State::Inline
                    };
                }
                State::Inline => {
                    let Some(end) = self.take_line(input, &mut pos, Breach::RedisInline)? else { continue };
                    let text = String::from_utf8_lossy(&end);
                    let mut args: Vec<String> = text.split_whitespace().map(str::to_string).collect();
                    if let Some(name) = args.first_mut() {
                        *name = name.to_ascii_uppercase();
                    }
                    self.reset();
                    return Ok(Fed::Command { used: pos, args });
                }
                State::CountLine => {
                    let Some(line) = self.take_line(input, &mut pos, Breach::RedisCountLine)? else { continue };
                    let count = number(&line)
                        .filter(|n| *n <= REDIS_MULTIBULK_MAX)
                        .ok_or_else(|| Breach::RedisMultibulk { count: String::from_utf8_lossy(&line).into_owned() })?;
                    if count <= 0 {
                        self.reset();
                        return Ok(Fed::Command { used: pos, args: Vec::new() });
                    }
                    self.state = State::BulkLine { left: count };
                }
                State::BulkLine { left } => {
                    if self.line.is_empty() && input[pos] != b'$' {
                        return Err(ReadError::Malformed(format!("expected '$', got '{}'", input[pos] as char)));
                    }
                    let Some(line) = self.take_line(input, &mut pos, Breach::RedisBulkLine)? else { continue };
                    let len = number(&line[1..])
                        .filter(|n| (0..=REDIS_BULK_MAX).contains(n))
                        .ok_or_else(|| Breach::RedisBulk { len: String::from_utf8_lossy(&line[1..]).into_owned() })?;
                    self.bulk_len = len as u64;
                    self.start_arg();
                    self.state = State::Bulk { left, remaining: len as u64 + 2 };
                }
                State::Bulk { left, remaining } => {
                    let n = (remaining.min((input.len() - pos) as u64)) as usize;
                    let data_left = remaining.saturating_sub(2);
                    let data = &input[pos..pos + n.min(data_left as usize)];
                    self.keep(data);
                    pos += n;
                    let remaining = remaining - n as u64;
                    if remaining > 0 {
                        self.state = State::Bulk { left, remaining };
                        continue;
                    }
                    if left > 1 {
                        self.state = State::BulkLine { left: left - 1 };
                        continue;
                    }
                    let args = self.texts(false);
                    self.reset();
                    return Ok(Fed::Command { used: pos, args });
                }
            }
        }
        Ok(Fed::Partial)
    }

    /// Read the current line on from `input[*pos..]`: its bytes (without CRLF) once its end is
    /// there; `None` when the input ends first (its bytes kept). A line longer than Redis's
    /// inline maximum without its end is `too_long`.
    fn take_line(&mut self, input: &[u8], pos: &mut usize, too_long: Breach) -> Result<Option<Vec<u8>>, Breach> {
        let rest = &input[*pos..];
        match rest.iter().position(|b| *b == b'\n') {
            Some(i) => {
                self.line.extend_from_slice(&rest[..i]);
                *pos += i + 1;
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Ok(Some(line))
            }
            None => {
                self.line.extend_from_slice(rest);
                *pos = input.len();
                if self.line.len() > REDIS_INLINE_MAX {
                    return Err(too_long);
                }
                Ok(None)
            }
        }
    }

    fn start_arg(&mut self) {
        const OVERHEAD: usize = std::mem::size_of::<Vec<u8>>();
        self.total += self.bulk_len;
        self.keeping = self.kept + OVERHEAD <= KEPT_MAX;
        if self.keeping {
            self.kept += OVERHEAD;
            self.args.push(Vec::new());
        } else {
            self.cut = true;
        }
    }

    fn keep(&mut self, data: &[u8]) {
        if !self.keeping || data.is_empty() {
            return;
        }
        let room = KEPT_MAX.saturating_sub(self.kept).min(data.len());
        if let Some(arg) = self.args.last_mut() {
            arg.extend_from_slice(&data[..room]);
        }
        self.kept += room;
        if room < data.len() {
            self.cut = true;
            self.keeping = false;
        }
    }

    /// The arguments as text; a command over the budget ends with `…` and its size.
    fn texts(&self, partial: bool) -> Vec<String> {
        let mut args: Vec<String> = self.args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if let Some(name) = args.first_mut() {
            *name = name.to_ascii_uppercase();
        }
        if self.cut || partial {
            if let Some(last) = args.last_mut() {
                last.push_str(&format!("… ({} bytes of arguments)", self.total));
            }
        }
        args
    }

    fn reset(&mut self) {
        self.state = State::Start;
        self.line.clear();
        self.args.clear();
        self.kept = 0;
        self.cut = false;
        self.bulk_len = 0;
        self.total = 0;
        self.keeping = false;
    }
}

/// A decimal number as Redis's `string2ll` reads it: digits with an optional `-`, no spaces,
/// no leading `+` or zeros.
fn number(s: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(s).ok()?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk_array(args: &[&str]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        out
    }

    /// Feed `bytes` in pieces of `step`: the commands and where each ended.
    fn commands(bytes: &[u8], step: usize) -> Vec<(usize, Vec<String>)> {
        let mut reader = CommandReader::new();
        let mut out = Vec::new();
        let mut offset = 0;
        for piece in bytes.chunks(step.max(1)) {
            let mut pos = 0;
            while pos < piece.len() {
                match reader.feed(&piece[pos..]).unwrap() {
                    Fed::Partial => pos = piece.len(),
                    Fed::Command { used, args } => {
                        pos += used;
                        out.push((offset + pos, args));
                    }
                }
            }
            offset += piece.len();
        }
        out
    }

    #[test]
    fn a_pipeline_split_at_every_byte_reads_the_same_commands() {
        let mut bytes = bulk_array(&["xack", "orders", "g", "1-0"]);
        let first = bytes.len();
        bytes.extend(b"ping\r\n");
        bytes.extend(bulk_array(&["SET", "k", ""]));
        let whole = commands(&bytes, bytes.len());
        assert_eq!(
            whole,
            vec![
                (first, vec!["XACK".to_string(), "orders".into(), "g".into(), "1-0".into()]),
                (first + 6, vec!["PING".to_string()]),
                (bytes.len(), vec!["SET".to_string(), "k".into(), "".into()]),
            ]
        );
        for step in 1..bytes.len() {
            assert_eq!(commands(&bytes, step), whole, "pieces of {step}");
        }
    }

    #[test]
    fn an_empty_line_and_a_zero_count_are_commands_without_arguments() {
        assert_eq!(commands(b"\r\n*0\r\n", 100), vec![(2, vec![]), (6, vec![])]);
    }

    #[test]
    fn a_line_of_exactly_the_inline_maximum_waits_and_one_byte_more_is_refused() {
        let mut reader = CommandReader::new();
        assert_eq!(reader.feed(&vec![b'a'; REDIS_INLINE_MAX]), Ok(Fed::Partial));
        assert_eq!(reader.feed(b"a"), Err(ReadError::Limit(Breach::RedisInline)));
        let mut reader = CommandReader::new();
        let mut line = vec![b'a'; REDIS_INLINE_MAX];
        line.extend(b"\r\n");
        assert!(matches!(reader.feed(&line), Ok(Fed::Command { .. })));
        let mut reader = CommandReader::new();
        let count = [b"*".to_vec(), vec![b'1'; REDIS_INLINE_MAX + 1]].concat();
        assert_eq!(reader.feed(&count), Err(ReadError::Limit(Breach::RedisCountLine)));
        let mut reader = CommandReader::new();
        let len = [b"*1\r\n$".to_vec(), vec![b'1'; REDIS_INLINE_MAX]].concat();
        assert_eq!(reader.feed(&len), Err(ReadError::Limit(Breach::RedisBulkLine)));
    }

    #[test]
    fn counts_and_lengths_over_the_server_s_are_refused_at_their_header() {
        let refused = |bytes: &[u8]| CommandReader::new().feed(bytes).unwrap_err();
        assert_eq!(refused(b"*1\r\n$1099511627776\r\n"), Breach::RedisBulk { len: "1099511627776".into() }.into());
        assert_eq!(refused(b"*1\r\n$536870913\r\n"), Breach::RedisBulk { len: "536870913".into() }.into());
        assert_eq!(refused(b"*1\r\n$-1\r\n"), Breach::RedisBulk { len: "-1".into() }.into());
        assert_eq!(refused(b"*2147483648\r\n"), Breach::RedisMultibulk { count: "2147483648".into() }.into());
        assert_eq!(refused(b"*x\r\n"), Breach::RedisMultibulk { count: "x".into() }.into());
        assert!(matches!(refused(b"*1\r\n:1\r\n"), ReadError::Malformed(_)));
        assert_eq!(CommandReader::new().feed(b"*1\r\n$536870912\r\n"), Ok(Fed::Partial), "exactly the maximum");
        assert_eq!(CommandReader::new().feed(b"*2147483647\r\n"), Ok(Fed::Partial));
    }

    #[test]
    fn a_large_legal_bulk_is_counted_through_and_kept_only_up_to_the_budget() {
        let size = 3 * KEPT_MAX;
        let mut reader = CommandReader::new();
        let head = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${size}\r\n");
        assert_eq!(reader.feed(head.as_bytes()), Ok(Fed::Partial));
        assert!(reader.in_command());
        assert_eq!(reader.args_so_far()[..2], ["SET".to_string(), "k".to_string()]);
        let piece = vec![b'v'; 64 * 1024];
        for _ in 0..size / piece.len() {
            assert_eq!(reader.feed(&piece), Ok(Fed::Partial));
        }
        assert!(reader.line.capacity() < REDIS_INLINE_MAX && reader.kept <= KEPT_MAX, "bounded");
        let Ok(Fed::Command { used, args }) = reader.feed(b"\r\nPING\r\n") else { panic!("the SET ends") };
        assert_eq!(used, 2);
        assert_eq!(args.len(), 3);
        assert!(
            args[2].ends_with(&format!("… ({} bytes of arguments)", size + 4)),
            "{}",
            &args[2][args[2].len() - 40..]
        );
        assert!(args[2].len() < KEPT_MAX + 40);
        assert!(!reader.in_command());
    }
}
