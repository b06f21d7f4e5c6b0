//! The life of a process's connections as the interposer sees them: opened (with the
//! PostgreSQL backend that serves it), closed and by whom (the client, the server, ordlab), a
//! command the client sent and never got an answer to because the connection closed first,
//! and a reply that reached the interposer after its client had gone. With these, every byte a
//! process exchanged is in the record, and a report can count what a client library did by
//! itself: reconnects, reads it gave up on (redis-py's socket timeout), replies for nobody.
//!
//! The proxies emit these events ([`crate::interposer::WorkerTap`]); everything else here is
//! pure: words, marks, and the count per process ([`ConnectionStats`]).

use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::{Actor, Event, ServerKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who ended a connection first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedBy {
    /// The process under test closed it (a client timeout, a reconnect, its exit, a kill).
    Client,
    /// The server closed it.
    Server,
    /// ordlab did (a fault, a frame over a limit, the end of the run).
    Ordlab,
}

/// What happened to one of a process's connections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConnectionEvent {
    /// The process opened connection `connection` to `server`; on PostgreSQL, the backend's
    /// process id (its BackendKeyData), by which `pg_locks` names it.
    ConnectionOpened {
        server: ServerKind,
        connection: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend_pid: Option<u32>,
    },
    /// The connection ended: `by` closed it first.
    ConnectionClosed { server: ServerKind, connection: u32, by: ClosedBy },
    /// A command never answered to its client: the connection closed (`by`) `waited_ms` after
    /// it was sent. Placed at the close (it was sent `waited_ms` before).
    NoReply { server: ServerKind, connection: u32, args: Vec<String>, waited_ms: f64, by: ClosedBy },
    /// The client closed the connection `waited_ms` after it sent `args` (it gave up on it),
    /// and the reply reached the interposer `after_close_ms` after that: for nobody.
    ReplyForNobody {
        server: ServerKind,
        connection: u32,
        args: Vec<String>,
        reply: String,
        #[serde(default)]
        waited_ms: f64,
        after_close_ms: f64,
    },
}

fn server_name(s: ServerKind) -> &'static str {
    match s {
        ServerKind::Redis => "Redis",
        ServerKind::Postgres => "PostgreSQL",
    }
}

/// `the client`, `the server`, `ordlab`, in `lang`.
pub fn closed_by_words(by: ClosedBy, lang: Lang) -> &'static str {
    match by {
        ClosedBy::Client => pick(lang, "the client", "client"),
        ClosedBy::Server => pick(lang, "the server", "server"),
        ClosedBy::Ordlab => "ordlab",
    }
}

/// A command as a line shows it: its words, the longest cut.
fn command(args: &[String]) -> String {
    let words: Vec<String> =
        args.iter()
            .map(|a| {
                if a.chars().count() > 60 {
                    format!("{}…", a.chars().take(60).collect::<String>())
                } else {
                    a.clone()
                }
            })
            .collect();
    words.join(" ")
}

impl Vocabulary for ConnectionEvent {
    const KINDS: &'static [&'static str] = &["connection_opened", "connection_closed", "no_reply", "reply_for_nobody"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        let lang = w.lang;
        Some(match self {
            // Opening a connection is a client library's own business (in the JSON, counted in
            // the run's notes), as its handshake is.
            ConnectionEvent::ConnectionOpened { .. } => return None,
            // A client closing (counted in the run's notes, said by a command it left without a
            // reply) or ordlab ending the process is no news; the server closing is.
            ConnectionEvent::ConnectionClosed { by: ClosedBy::Client | ClosedBy::Ordlab, .. } => return None,
            // What ordlab cut off at the end of a run, or with a fault (which says so itself).
            ConnectionEvent::NoReply { by: ClosedBy::Ordlab, .. } => return None,
            ConnectionEvent::ConnectionClosed { server, connection, by } => {
                let (s, by) = (server_name(*server), closed_by_words(*by, lang));
                crate::tr!(
                    lang,
                    "{a}'s {s} connection {connection} closed by {by}",
                    "kết nối {s} {connection} của {a} bị {by} đóng"
                )
            }
            ConnectionEvent::NoReply { server, connection, args, waited_ms, by, .. } => {
                let (s, c, by) = (server_name(*server), command(args), closed_by_words(*by, lang));
                let ms = w.redact.ms(waited_ms.round() as i64);
                crate::tr!(
                    lang,
                    "{a} [{s} {connection}] {c} → no reply: {by} closed the connection after {ms}",
                    "{a} [{s} {connection}] {c} → không có reply: {by} đóng kết nối sau {ms}"
                )
            }
            ConnectionEvent::ReplyForNobody { server, connection, args, reply, waited_ms, after_close_ms } => {
                let (s, c) = (server_name(*server), command(args));
                let waited = w.redact.ms(waited_ms.round() as i64);
                let late = w.redact.ms(after_close_ms.round() as i64);
                crate::tr!(
                    lang,
                    "{a} [{s} {connection}] {c} → no reply: the client closed the connection after {waited}; the reply ({reply}) came {late} later, for nobody",
                    "{a} [{s} {connection}] {c} → không có reply: client đóng kết nối sau {waited}; reply ({reply}) tới {late} sau đó, không ai nhận"
                )
            }
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        match self {
            ConnectionEvent::NoReply { by: ClosedBy::Ordlab, .. } => Drawing::Nothing,
            ConnectionEvent::NoReply { waited_ms, .. } => Drawing::Waited { waited_ms: *waited_ms },
            ConnectionEvent::ReplyForNobody { .. } => {
                Drawing::Mark(Glyph::Failed, pick(w.lang, "reply for nobody", "reply không ai nhận").to_string())
            }
            ConnectionEvent::ConnectionClosed { by: ClosedBy::Server, .. } => {
                Drawing::Mark(Glyph::Failed, pick(w.lang, "server closed", "server đóng").to_string())
            }
            _ => Drawing::Nothing,
        }
    }
}

/// What one process's connections did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Connections opened, per server (Redis, PostgreSQL).
    pub opened: [u32; 2],
    /// Connections opened after one of the same process to the same server had closed.
    pub reconnects: [u32; 2],
    /// Commands the client gave up on: never answered, the client closed the connection.
    pub client_gave_up: u32,
    /// Commands never answered because the server closed the connection (what ordlab cuts
    /// off, a fault or the end of the run, is not counted: it says so itself).
    pub cut_off: u32,
    /// Replies that came after their client had gone.
    pub replies_for_nobody: u32,
}

fn index(s: ServerKind) -> usize {
    match s {
        ServerKind::Redis => 0,
        ServerKind::Postgres => 1,
    }
}

impl ConnectionStats {
    /// Per process, from the run's connection events.
    pub fn of(events: &[Event]) -> BTreeMap<Actor, ConnectionStats> {
        let mut out: BTreeMap<Actor, ConnectionStats> = BTreeMap::new();
        let mut closed_before: BTreeMap<(Actor, usize), u32> = BTreeMap::new();
        for e in events {
            let Some(c) = e.kind.family::<ConnectionEvent>() else { continue };
            let stats = out.entry(e.actor).or_default();
            match c {
                ConnectionEvent::ConnectionOpened { server, .. } => {
                    let i = index(server);
                    stats.opened[i] += 1;
                    if closed_before.get(&(e.actor, i)).copied().unwrap_or(0) > 0 {
                        stats.reconnects[i] += 1;
                    }
                }
                ConnectionEvent::ConnectionClosed { server, .. } => {
                    *closed_before.entry((e.actor, index(server))).or_default() += 1;
                }
                ConnectionEvent::NoReply { by: ClosedBy::Client, .. } => stats.client_gave_up += 1,
                ConnectionEvent::NoReply { by: ClosedBy::Server, .. } => stats.cut_off += 1,
                ConnectionEvent::NoReply { by: ClosedBy::Ordlab, .. } => {}
                ConnectionEvent::ReplyForNobody { .. } => {
                    stats.client_gave_up += 1;
                    stats.replies_for_nobody += 1;
                }
            }
        }
        out
    }

    /// A command lost to a closed connection, or a reply to nobody: what a report says (with
    /// the reconnects around it). Reconnects alone (a pool recycling its connections) are not.
    pub fn eventful(&self) -> bool {
        self.client_gave_up + self.cut_off + self.replies_for_nobody > 0
    }

    /// `C1: 4 Redis connections (3 reconnects); 3 commands the client gave up on (no reply: it
    /// closed the connection); 2 replies for nobody`.
    pub fn words(&self, actor: Actor, lang: Lang) -> String {
        let mut parts = Vec::new();
        for (i, s) in ["Redis", "PostgreSQL"].iter().enumerate() {
            let (n, r) = (self.opened[i], self.reconnects[i]);
            if n > 0 {
                parts.push(crate::tr!(
                    lang,
                    "{n} {s} connection(s) ({r} reconnect(s))",
                    "{n} kết nối {s} ({r} lần kết nối lại)"
                ));
            }
        }
        let (g, c, n) = (self.client_gave_up, self.cut_off, self.replies_for_nobody);
        if g > 0 {
            parts.push(crate::tr!(
                lang,
                "{g} command(s) the client gave up on (no reply: it closed the connection first; a client-side timeout)",
                "{g} lệnh client bỏ cuộc (không có reply: client đóng kết nối trước; timeout phía client)"
            ));
        }
        if c > 0 {
            parts.push(crate::tr!(
                lang,
                "{c} command(s) cut off by a closed connection",
                "{c} lệnh bị cắt do kết nối đóng"
            ));
        }
        if n > 0 {
            parts.push(crate::tr!(
                lang,
                "{n} of them answered after the client had closed: for nobody",
                "{n} trong số đó được trả lời sau khi client đã đóng: không ai nhận"
            ));
        }
        format!("{actor}: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::vocabulary::Redactor;

    fn ev(t_ms: i64, c: ConnectionEvent) -> Event {
        Event { t_us: t_ms * 1000, actor: Actor::Consumer(1), kind: c.event() }
    }

    fn opened(t: i64, connection: u32) -> Event {
        ev(t, ConnectionEvent::ConnectionOpened { server: ServerKind::Redis, connection, backend_pid: None })
    }

    fn closed(t: i64, connection: u32, by: ClosedBy) -> Event {
        ev(t, ConnectionEvent::ConnectionClosed { server: ServerKind::Redis, connection, by })
    }

    fn xread() -> Vec<String> {
        "XREADGROUP GROUP g C1 COUNT 10 BLOCK 5000 STREAMS low >".split(' ').map(String::from).collect()
    }

    #[test]
    fn reconnects_and_reads_given_up_are_counted_per_process() {
        let no_reply = |t, c| {
            ev(
                t,
                ConnectionEvent::NoReply {
                    server: ServerKind::Redis,
                    connection: c,
                    args: xread(),
                    waited_ms: 5000.2,
                    by: ClosedBy::Client,
                },
            )
        };
        let late = ev(
            5004,
            ConnectionEvent::ReplyForNobody {
                server: ServerKind::Redis,
                connection: 1,
                args: xread(),
                reply: "(nil)".into(),
                waited_ms: 5000.1,
                after_close_ms: 3.7,
            },
        );
        let events = vec![
            opened(0, 1),
            no_reply(5000, 1),
            closed(5000, 1, ClosedBy::Client),
            late,
            opened(5400, 2),
            no_reply(10400, 2),
            closed(10400, 2, ClosedBy::Client),
            opened(11000, 3),
        ];
        let stats = &ConnectionStats::of(&events)[&Actor::Consumer(1)];
        assert_eq!(
            *stats,
            ConnectionStats {
                opened: [3, 0],
                reconnects: [2, 0],
                client_gave_up: 3,
                cut_off: 0,
                replies_for_nobody: 1
            }
        );
        assert!(stats.eventful());
        assert_eq!(
            stats.words(Actor::Consumer(1), Lang::En),
            "C1: 3 Redis connection(s) (2 reconnect(s)); 3 command(s) the client gave up on (no reply: it closed the connection first; a client-side timeout); 1 of them answered after the client had closed: for nobody"
        );
        // Two connections open side by side (a pool) are no reconnect.
        let pool = vec![opened(0, 1), opened(1, 2), closed(9, 1, ClosedBy::Ordlab), closed(9, 2, ClosedBy::Ordlab)];
        assert_eq!(ConnectionStats::of(&pool)[&Actor::Consumer(1)].reconnects, [0, 0]);
        // A pool that reconnects losing nothing, or commands ordlab cut off, is no news.
        let recycled = vec![opened(0, 1), closed(5, 1, ClosedBy::Client), opened(6, 2)];
        assert!(!ConnectionStats::of(&recycled)[&Actor::Consumer(1)].eventful());
    }

    #[test]
    fn a_read_given_up_is_no_reply_never_an_empty_read() {
        let w = Wording { lang: Lang::En, many_orders: false, redact: Redactor::NONE };
        let e = ConnectionEvent::NoReply {
            server: ServerKind::Redis,
            connection: 1,
            args: xread(),
            waited_ms: 5000.2,
            by: ClosedBy::Client,
        };
        assert_eq!(
            e.line(Actor::Consumer(1), &w).unwrap(),
            "C1 [Redis 1] XREADGROUP GROUP g C1 COUNT 10 BLOCK 5000 STREAMS low > → no reply: the client closed the connection after 5000 ms"
        );
        let late = ConnectionEvent::ReplyForNobody {
            server: ServerKind::Redis,
            connection: 1,
            args: xread(),
            reply: "(nil)".into(),
            waited_ms: 5000.1,
            after_close_ms: 3.7,
        };
        assert_eq!(
            late.line(Actor::Consumer(1), &w).unwrap(),
            "C1 [Redis 1] XREADGROUP GROUP g C1 COUNT 10 BLOCK 5000 STREAMS low > → no reply: the client closed the connection after 5000 ms; the reply ((nil)) came 4 ms later, for nobody"
        );
        crate::timeline::vocabulary::check_kinds(&[
            ConnectionEvent::ConnectionOpened { server: ServerKind::Postgres, connection: 1, backend_pid: Some(7) },
            ConnectionEvent::ConnectionClosed { server: ServerKind::Redis, connection: 1, by: ClosedBy::Server },
            e,
            late,
        ]);
    }
}
