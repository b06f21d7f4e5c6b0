//! The mark a run leaves on what it makes on servers it did not start: a Redis key
//! `ordlab:<nonce>:owner` and a `COMMENT ON SCHEMA`, both holding the same line that names the
//! run. Only what carries a mark is ordlab's to remove: a key under `ordlab:` or a schema named
//! `ordlab` without one is the user's, whatever its name looks like.
//!
//! The mark is written before anything it covers exists (the owner key before the run's first
//! key, the comment in the transaction that creates the schema), so a run killed at any moment
//! leaves nothing unmarked, and it is removed last, once nothing of the run can write any more.
//! It proves authorship, not liveness: whether the run that wrote it is still alive is the
//! claim's question (an open owner connection, the advisory lock; see the parent module).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a mark says: which run made the thing, and where and when that run started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub nonce: String,
    pub pid: u32,
    pub host: String,
    /// Milliseconds since the Unix epoch.
    pub started_ms: u64,
}

/// How every mark begins; nothing else is taken for one.
const PREFIX: &str = "ordlab run ";

impl Mark {
    /// The mark of the run `nonce` of this process, started now.
    pub fn now(nonce: &str) -> Mark {
        let started_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        Mark { nonce: nonce.to_string(), pid: std::process::id(), host: clean(&host), started_ms }
    }

    /// The Redis key that holds run `nonce`'s mark.
    pub fn key(nonce: &str) -> String {
        format!("ordlab:{nonce}:owner")
    }

    /// The one line stored in the owner key and the schemas' comments.
    pub fn text(&self) -> String {
        format!("{PREFIX}{}; pid {}; host {}; started {}", self.nonce, self.pid, self.host, self.started_ms)
    }

    /// The mark in `text`, or None when `text` is not one (any other value or comment).
    pub fn parse(text: &str) -> Option<Mark> {
        let rest = text.strip_prefix(PREFIX)?;
        let mut fields = rest.split("; ");
        let nonce = fields.next().filter(|n| is_nonce(n))?.to_string();
        let pid = fields.next()?.strip_prefix("pid ")?.parse().ok()?;
        let host = fields.next()?.strip_prefix("host ")?.to_string();
        let started_ms = fields.next()?.strip_prefix("started ")?.parse().ok()?;
        if fields.next().is_some() {
            return None;
        }
        Some(Mark { nonce, pid, host, started_ms })
    }

    /// The mark in an owner key's value, if the value is one and names the key's own nonce.
    pub fn of_owner_key(nonce: &[u8], value: &[u8]) -> Option<Mark> {
        let mark = Mark::parse(std::str::from_utf8(value).ok()?)?;
        (mark.nonce.as_bytes() == nonce).then_some(mark)
    }

    /// "run 1a2b3c4d (pid 812 on lab-1, started 2026-12-03T12:00:01Z)", for the one line that
    /// says what was removed.
    pub fn describe(&self) -> String {
        let started = UNIX_EPOCH + Duration::from_millis(self.started_ms);
        let host = if self.host.is_empty() { String::new() } else { format!(" on {}", self.host) };
        format!("run {} (pid {}{host}, started {})", self.nonce, self.pid, humantime::format_rfc3339_seconds(started))
    }
}

/// Whether `s` can be a nonce: what [`crate::service::Services`] draws (8 hex digits) or a
/// word of letters, digits and `-` (the bench's), never empty, never with `:` or `;`.
fn is_nonce(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A host name fit for the line: no `;` (the field separator), no quote or backslash (the line
/// goes into SQL as a literal), no control characters.
fn clean(host: &str) -> String {
    host.trim().chars().filter(|c| !c.is_control() && !matches!(c, ';' | '\'' | '\\')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark() -> Mark {
        Mark { nonce: "1a2b3c4d".into(), pid: 812, host: "lab-1".into(), started_ms: 1_796_000_000_000 }
    }

    #[test]
    fn a_mark_reads_back_what_it_wrote() {
        let m = mark();
        assert_eq!(m.text(), "ordlab run 1a2b3c4d; pid 812; host lab-1; started 1796000000000");
        assert_eq!(Mark::parse(&m.text()), Some(m.clone()));
        let here = Mark::now("cafe0001");
        assert_eq!(Mark::parse(&here.text()), Some(here));
    }

    #[test]
    fn anything_else_is_no_mark() {
        for text in [
            "",
            "ordlab",
            "hello",
            "a user's key named like the tool",
            "ordlab run ; pid 1; host h; started 1",
            "ordlab run a:b; pid 1; host h; started 1",
            "ordlab run 1a2b3c4d; pid x; host h; started 1",
            "ordlab run 1a2b3c4d; pid 1; host h",
            "ordlab run 1a2b3c4d; pid 1; host h; started 1; more",
            " ordlab run 1a2b3c4d; pid 1; host h; started 1",
        ] {
            assert_eq!(Mark::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn an_owner_key_is_a_mark_only_for_its_own_nonce() {
        let value = mark().text();
        assert!(Mark::of_owner_key(b"1a2b3c4d", value.as_bytes()).is_some());
        assert_eq!(Mark::of_owner_key(b"deadbeef", value.as_bytes()), None, "copied from another run's key");
        assert_eq!(Mark::of_owner_key(b"1a2b3c4d", b"\xff\xfe"), None);
        assert_eq!(Mark::key("1a2b3c4d"), "ordlab:1a2b3c4d:owner");
    }

    #[test]
    fn a_mark_describes_its_run_in_words() {
        assert_eq!(mark().describe(), "run 1a2b3c4d (pid 812 on lab-1, started 2026-11-30T00:53:20Z)");
        assert_eq!(Mark::parse("ordlab run bench-1; pid 1; host a; b; started 1"), None, "a ; in the host");
        assert_eq!(clean("a;b\n"), "ab");
    }
}
