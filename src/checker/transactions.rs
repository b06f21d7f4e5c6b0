//! Transactions a process left open at the end of a run, read from the statements the
//! interposer recorded on each PostgreSQL connection: a `BEGIN` (psycopg 3 sends one before the
//! first statement unless the connection is in autocommit) with writes after it and no
//! `COMMIT` or `ROLLBACK`. PostgreSQL rolls such a transaction back when its connection closes,
//! so what it changed never happened; until then it holds its row locks. Pure: the record in,
//! the open transactions out.

use crate::timeline::{Actor, Event, EventKind, ServerKind};
use std::collections::BTreeMap;

/// A transaction still open when the run ended, with the changes it made.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenTransaction {
    pub actor: Actor,
    pub connection: u32,
    /// When its `BEGIN` was answered.
    pub began_us: i64,
    /// Its statements that changed rows: (time, statement as recorded, the server's tag).
    pub writes: Vec<Write>,
    /// When its last statement was answered: idle in transaction since then.
    pub idle_since_us: i64,
    /// How its process ended: at this time, killed as planned (true) or died (false); None:
    /// the run stopped it.
    pub process_ended: Option<(i64, bool)>,
}

/// One statement that changed rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub t_us: i64,
    /// The statement's text, then its parameter values.
    pub args: Vec<String>,
    /// `UPDATE 1`, `INSERT 0 1`.
    pub tag: String,
}

/// What one connection's statements have done so far.
#[derive(Default)]
struct Connection {
    open: Option<OpenTransaction>,
}

/// The transactions with changes still open at the end of `events`.
pub fn open_at_end(events: &[Event]) -> Vec<OpenTransaction> {
    let mut conns: BTreeMap<(Actor, u32), Connection> = BTreeMap::new();
    for e in events {
        let EventKind::ServerCommand { server: ServerKind::Postgres, connection, args, reply, error, .. } = &e.kind
        else {
            continue;
        };
        let conn = conns.entry((e.actor, *connection)).or_default();
        let Some(text) = args.first() else { continue };
        // A simple query may hold several statements; the reply joins their tags with "; ".
        let statements: Vec<&str> = text.split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
        let tags: Vec<&str> = reply.split("; ").collect();
        for (i, statement) in statements.iter().enumerate() {
            let keyword = statement.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
            let tag = tags.get(i).copied().unwrap_or("");
            match keyword.as_str() {
                "BEGIN" | "START" if !error => {
                    conn.open = Some(OpenTransaction {
                        actor: e.actor,
                        connection: *connection,
                        began_us: e.t_us,
                        writes: Vec::new(),
                        idle_since_us: e.t_us,
                        process_ended: None,
                    });
                }
                "COMMIT" | "END" | "ROLLBACK" | "ABORT" => conn.open = None,
                _ => {}
            }
            let Some(open) = conn.open.as_mut() else { continue };
            open.idle_since_us = e.t_us;
            if *error {
                // A failed statement aborts the transaction: nothing it did will be kept.
                open.writes.clear();
            } else if changed_rows(&keyword, tag) {
                let args = if statements.len() == 1 { args.clone() } else { vec![statement.to_string()] };
                open.writes.push(Write { t_us: e.t_us, args, tag: tag.to_string() });
            }
        }
    }
    let mut out: Vec<OpenTransaction> =
        conns.into_values().filter_map(|c| c.open).filter(|t| !t.writes.is_empty()).collect();
    for t in &mut out {
        t.process_ended = events.iter().find_map(|e| match e.kind {
            EventKind::Crashed { planned, .. } if e.actor == t.actor && e.t_us >= t.idle_since_us => {
                Some((e.t_us, planned))
            }
            _ => None,
        });
    }
    out
}

/// A write statement whose tag counts changed rows: `UPDATE 1`, `INSERT 0 1`, `DELETE 2`.
fn changed_rows(keyword: &str, tag: &str) -> bool {
    matches!(keyword, "UPDATE" | "INSERT" | "DELETE" | "MERGE" | "WITH")
        && tag.split_whitespace().last().and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 0)
}

impl OpenTransaction {
    /// `C1's transaction (BEGIN at t=2 ms) changed rows (UPDATE ordlab.orders … [42] → UPDATE
    /// 1) and was never committed: idle in transaction from t=5 ms until C1 was killed at
    /// t=900 ms (PostgreSQL rolled it back)`, in English (a verdict's reason).
    pub fn reason(&self) -> String {
        let ms = |us: i64| (us as f64 / 1000.0).round() as i64;
        let writes: Vec<String> = self.writes.iter().map(|w| format!("{} → {}", w.args.join(" "), w.tag)).collect();
        let who = self.actor;
        let end = match self.process_ended {
            Some((t, true)) => format!("until {who} was killed at t={} ms", ms(t)),
            Some((t, false)) => format!("until {who} died at t={} ms", ms(t)),
            None => format!("until the run stopped {who}"),
        };
        format!(
            "{who}'s transaction (BEGIN at t={} ms) changed rows ({}) and was never committed: idle in transaction from t={} ms {end}, then rolled back by PostgreSQL",
            ms(self.began_us),
            writes.join("; "),
            ms(self.idle_since_us)
        )
    }
}

impl OpenTransaction {
    /// The same as a report line in `lang`, its times as measured pieces.
    pub fn words(&self, lang: crate::lang::Lang) -> crate::labs::Line {
        use crate::labs::{Line, Piece};
        let ms = |us: i64| Piece::Ms((us as f64 / 1000.0).round() as i64);
        let writes: Vec<String> = self.writes.iter().map(|w| format!("{} → {}", w.args.join(" "), w.tag)).collect();
        let (who, writes) = (self.actor, writes.join("; "));
        let head = crate::tr!(
            lang,
            "uncommitted at the end: {who}'s transaction (BEGIN at t=",
            "chưa commit khi kết thúc: transaction của {who} (BEGIN lúc t="
        );
        let mid = crate::tr!(
            lang,
            ") changed rows ({writes}) and was never committed: idle in transaction from t=",
            ") đã đổi dòng ({writes}) và không bao giờ commit: idle in transaction từ t="
        );
        let line = Line::text(head).and(ms(self.began_us)).and_text(mid).and(ms(self.idle_since_us));
        let line = match self.process_ended {
            Some((t, planned)) => {
                let how = match (planned, lang) {
                    (true, crate::lang::Lang::En) => format!(" until {who} was killed at t="),
                    (false, crate::lang::Lang::En) => format!(" until {who} died at t="),
                    (true, crate::lang::Lang::Vi) => format!(" tới khi {who} bị kill lúc t="),
                    (false, crate::lang::Lang::Vi) => format!(" tới khi {who} chết lúc t="),
                };
                line.and_text(how).and(ms(t))
            }
            None => line.and_text(crate::tr!(lang, " until the run stopped {who}", " tới khi lần chạy dừng {who}")),
        };
        line.and_text(crate::lang::pick(lang, ", then rolled back by PostgreSQL", ", rồi PostgreSQL rollback"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(t_ms: i64, actor: Actor, connection: u32, sql: &str, reply: &str, error: bool) -> Event {
        let mut args: Vec<String> = vec![sql.to_string()];
        if sql.starts_with("UPDATE") {
            args.push("42".into());
        }
        let kind = EventKind::ServerCommand {
            server: ServerKind::Postgres,
            connection,
            args,
            reply: reply.into(),
            error,
            entries: Vec::new(),
            round_trip_us: None,
        };
        Event { t_us: t_ms * 1000, actor, kind }
    }

    const UPDATE: &str = "UPDATE ordlab.orders SET status='completed' WHERE id = $1 RETURNING id";

    #[test]
    fn a_begin_with_a_write_and_no_commit_is_open_at_the_end() {
        let (c1, reaper) = (Actor::Consumer(1), Actor::Reaper);
        let events = vec![
            pg(1, c1, 1, "BEGIN", "BEGIN", false),
            pg(2, c1, 1, UPDATE, "UPDATE 1", false),
            Event { t_us: 900_000, actor: c1, kind: EventKind::crashed(true, "killed by the interposer") },
            // The retry commits: nothing left open on its connection.
            pg(1000, reaper, 1, "BEGIN", "BEGIN", false),
            pg(1001, reaper, 1, UPDATE, "UPDATE 1", false),
            pg(1002, reaper, 1, "COMMIT", "COMMIT", false),
            // A transaction that only read, and one whose write failed.
            pg(1003, reaper, 2, "BEGIN; SELECT 1", "BEGIN; SELECT 1", false),
            pg(1004, reaper, 3, "BEGIN", "BEGIN", false),
            pg(1005, reaper, 3, UPDATE, "40001 could not serialize access", true),
        ];
        let open = open_at_end(&events);
        assert_eq!(open.len(), 1, "{open:?}");
        let t = &open[0];
        assert_eq!(
            (t.actor, t.connection, t.began_us, t.idle_since_us, t.process_ended),
            (c1, 1, 1000, 2000, Some((900_000, true)))
        );
        assert_eq!(
            t.reason(),
            "C1's transaction (BEGIN at t=1 ms) changed rows (UPDATE ordlab.orders SET status='completed' WHERE id = $1 RETURNING id 42 → UPDATE 1) and was never committed: idle in transaction from t=2 ms until C1 was killed at t=900 ms, then rolled back by PostgreSQL"
        );
        // An UPDATE that changed nothing is no change; autocommit (no BEGIN) leaves nothing open.
        let none = vec![pg(1, c1, 1, "BEGIN", "BEGIN", false), pg(2, c1, 1, UPDATE, "UPDATE 0", false)];
        assert!(open_at_end(&none).is_empty());
        assert!(open_at_end(&[pg(2, c1, 1, UPDATE, "UPDATE 1", false)]).is_empty());
        // Several statements in one simple query.
        let batch = vec![pg(1, c1, 1, "BEGIN; UPDATE t SET x = 1", "BEGIN; UPDATE 3", false)];
        assert_eq!(open_at_end(&batch)[0].writes[0].tag, "UPDATE 3");
    }
}
