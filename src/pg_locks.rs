//! Who waits for whom in PostgreSQL, as PostgreSQL says it: while a run's processes work, the
//! harness looks (every 100 ms, on a connection of its own) for backends that have waited on a
//! lock longer than a threshold, and asks `pg_blocking_pids` which backends hold them up, with
//! what those are doing (`idle in transaction` since when, their last statement). The record
//! names backends by pid; the interposer recorded which process's connection each pid serves
//! ([`ConnectionEvent::ConnectionOpened`]), so a report reads "reaper's UPDATE waited 13.4 s for
//! C1's open transaction (idle in transaction since t=1.2 s)" from the record alone, not a
//! guess ([`LockWait::of`]).

use crate::interposer::connections::ConnectionEvent;
use crate::lang::{pick, Lang};
use crate::timeline::vocabulary::{Drawing, Vocabulary, Wording};
use crate::timeline::{Actor, Event, EventKind, RawEvent, ServerKind, Sink as _};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// A lock wait longer than this is looked into (and reported).
pub const THRESHOLD: Duration = Duration::from_millis(500);
/// How often the harness looks.
const EVERY: Duration = Duration::from_millis(100);

/// What the harness read of PostgreSQL's locks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LockEvent {
    /// Backend `waiter_pid` had been waiting on a lock for `waited_ms` (since its statement
    /// started) when the harness looked, at this event's time; `blockers` are the backends
    /// `pg_blocking_pids` named.
    LockWaitSeen { waiter_pid: u32, statement: String, waited_ms: f64, blockers: Vec<Blocker> },
}

/// A backend that holds up another, as `pg_stat_activity` showed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Blocker {
    pub pid: u32,
    /// `idle in transaction`, `active`, …
    pub state: String,
    /// How long it had been in that state when the harness looked (ms).
    pub state_for_ms: Option<f64>,
    /// How long its transaction had been open (ms).
    pub xact_for_ms: Option<f64>,
    /// Its last statement.
    pub statement: String,
}

impl Vocabulary for LockEvent {
    const KINDS: &'static [&'static str] = &["lock_wait_seen"];

    fn line(&self, _a: Actor, w: &Wording) -> Option<String> {
        let LockEvent::LockWaitSeen { waiter_pid, blockers, .. } = self;
        let pids: Vec<String> = blockers.iter().map(|b| format!("{} ({})", w.redact.count(b.pid), b.state)).collect();
        let (waiter, held) = (w.redact.count(waiter_pid), pids.join(", "));
        Some(crate::tr!(
            w.lang,
            "PostgreSQL: backend {waiter} waits on a lock held by backend {held}",
            "PostgreSQL: backend {waiter} chờ khoá do backend {held} giữ"
        ))
    }

    fn drawing(&self, _w: &Wording) -> Drawing {
        Drawing::Nothing
    }
}

/// The harness's watch over one run's lock waits; dropping it stops it.
pub struct LockWatch {
    task: tokio::task::JoinHandle<()>,
}

impl LockWatch {
    /// Start looking, on a connection of its own to `pg_config`; what it sees goes to `sink` as
    /// the runner's events. A watch that cannot connect or query says so once on stderr and
    /// stops: the run goes on without it (its waits are then not explained).
    pub fn start(pg_config: &str, sink: tokio::sync::mpsc::UnboundedSender<RawEvent>) -> LockWatch {
        let config = pg_config.to_string();
        let task = tokio::spawn(async move {
            let client = match crate::connect::postgres(&config).await {
                Ok(c) => c,
                Err(e) => return eprintln!("ordlab: lock waits not watched: {}", crate::connect::postgres_said(&e)),
            };
            let mut seen: HashSet<(u32, i64)> = HashSet::new();
            loop {
                match look(&client).await {
                    Ok(waits) => {
                        for (key, event) in waits {
                            if seen.insert(key) {
                                sink.emit(Actor::Runner, event.event());
                            }
                        }
                    }
                    Err(e) => {
                        return eprintln!("ordlab: lock waits not watched: {}", crate::connect::postgres_said(&e))
                    }
                }
                tokio::time::sleep(EVERY).await;
            }
        });
        LockWatch { task }
    }
}

impl Drop for LockWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The waits longer than [`THRESHOLD`] now, each keyed by (pid, statement start in µs of the
/// server's epoch) so a wait is recorded once.
async fn look(client: &tokio_postgres::Client) -> Result<Vec<((u32, i64), LockEvent)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT w.pid, w.query, extract(epoch FROM w.query_start)::float8,
                    b.pid, b.state, extract(epoch FROM b.state_change)::float8,
                    extract(epoch FROM b.xact_start)::float8, b.query,
                    extract(epoch FROM clock_timestamp())::float8
             FROM pg_stat_activity w
             CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS holder(pid)
             JOIN pg_stat_activity b ON b.pid = holder.pid
             WHERE w.wait_event_type = 'Lock' AND w.datname = current_database()
               AND clock_timestamp() - w.query_start > $1::float8 * interval '1 second'",
            &[&THRESHOLD.as_secs_f64()],
        )
        .await?;
    // Every time as how long before the server's own now, read in the same query: the event
    // is stamped when it is recorded, and the record places both on the run's clock.
    let mut out: Vec<((u32, i64), LockEvent)> = Vec::new();
    for row in rows {
        let server_now: f64 = row.get(8);
        let ago = |epoch: Option<f64>| epoch.map(|t| (server_now - t) * 1000.0);
        let (pid, query, since): (i32, Option<String>, Option<f64>) = (row.get(0), row.get(1), row.get(2));
        let key = (pid as u32, since.map(|s| (s * 1e6) as i64).unwrap_or(0));
        let blocker = Blocker {
            pid: row.get::<_, i32>(3) as u32,
            state: row.get::<_, Option<String>>(4).unwrap_or_default(),
            state_for_ms: ago(row.get(5)),
            xact_for_ms: ago(row.get(6)),
            statement: row.get::<_, Option<String>>(7).unwrap_or_default(),
        };
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, LockEvent::LockWaitSeen { blockers, .. })) => blockers.push(blocker),
            None => out.push((
                key,
                LockEvent::LockWaitSeen {
                    waiter_pid: pid as u32,
                    statement: query.unwrap_or_default(),
                    waited_ms: ago(since).unwrap_or(0.0),
                    blockers: vec![blocker],
                },
            )),
        }
    }
    Ok(out)
}

/// A lock wait as the record tells it: who waited, in which statement, how long, for whom.
#[derive(Clone, Debug, PartialEq)]
pub struct LockWait {
    /// The waiting process and its connection (None: a backend no interposed process opened).
    pub waiter: Option<(Actor, u32)>,
    pub waiter_pid: u32,
    /// The statement's first word (`UPDATE`).
    pub statement: String,
    /// When it was sent.
    pub from_us: i64,
    /// When it was answered: the statement's duration ends there; None: never (the process was
    /// killed, or the run ended, first).
    pub answered_us: Option<i64>,
    pub holders: Vec<Holder>,
    /// When the record ends: a wait never answered lasted at least until then.
    pub record_end_us: i64,
}

/// A backend a statement waited for.
#[derive(Clone, Debug, PartialEq)]
pub struct Holder {
    pub who: Option<(Actor, u32)>,
    pub pid: u32,
    pub state: String,
    /// Since when it was in that state, on the run's clock.
    pub state_since_us: Option<i64>,
}

impl LockWait {
    /// Every lock wait the harness saw in `events`, joined with the connections the
    /// interposer recorded (pids) and the waiting statement (its send and its reply).
    pub fn of(events: &[Event]) -> Vec<LockWait> {
        let pids: Vec<(u32, Actor, u32)> = events
            .iter()
            .filter_map(|e| match e.kind.family::<ConnectionEvent>() {
                Some(ConnectionEvent::ConnectionOpened {
                    server: ServerKind::Postgres,
                    connection,
                    backend_pid: Some(p),
                }) => Some((p, e.actor, connection)),
                _ => None,
            })
            .collect();
        let who = |pid: u32| pids.iter().find(|(p, ..)| *p == pid).map(|(_, a, c)| (*a, *c));
        let record_end_us = events.iter().map(|e| e.t_us).max().unwrap_or(0);
        let mut out = Vec::new();
        for e in events {
            let Some(LockEvent::LockWaitSeen { waiter_pid, statement, waited_ms, blockers }) = e.kind.family() else {
                continue;
            };
            let waiter = who(waiter_pid);
            // The waiting statement's reply at the wire, if it came: the first statement of that
            // connection answered after the harness saw it wait.
            let answered = waiter.and_then(|(actor, conn)| {
                events.iter().find_map(|x| match &x.kind {
                    EventKind::ServerCommand { server: ServerKind::Postgres, connection, round_trip_us, .. }
                        if x.actor == actor && *connection == conn && x.t_us >= e.t_us =>
                    {
                        Some((x.t_us, *round_trip_us))
                    }
                    _ => None,
                })
            });
            let answered_us = answered.map(|(t, _)| t);
            let before = |ms: f64| e.t_us - (ms * 1000.0).round() as i64;
            let holders = blockers
                .iter()
                .map(|b| Holder {
                    who: who(b.pid),
                    pid: b.pid,
                    state: b.state.clone(),
                    state_since_us: b.state_for_ms.map(before),
                })
                .collect();
            let keyword = statement.split_whitespace().next().unwrap_or("statement").to_ascii_uppercase();
            out.push(LockWait {
                waiter,
                waiter_pid,
                statement: keyword,
                // Its send as the interposer stamped it; else when PostgreSQL says it began.
                from_us: match answered {
                    Some((t, Some(rt))) => t - rt,
                    _ => before(waited_ms),
                },
                answered_us,
                holders,
                record_end_us,
            });
        }
        out
    }

    /// How long it waited (ms): to its reply, or at least to the end of the record.
    pub fn waited_ms(&self) -> f64 {
        (self.answered_us.unwrap_or(self.record_end_us) - self.from_us) as f64 / 1000.0
    }

    /// `reaper's UPDATE waited 13.4 s for C1's open transaction (idle in transaction since
    /// t=1234 ms)`, in English (a verdict's reason).
    pub fn reason(&self) -> String {
        crate::timeline::vocabulary::Redactor::NONE.line(&self.words(Lang::En))
    }

    /// The same as a report line in `lang`.
    pub fn words(&self, lang: Lang) -> crate::labs::Line {
        use crate::labs::{Line, Piece};
        let name = |who: Option<(Actor, u32)>, pid: u32| match who {
            Some((a, _)) => a.to_string(),
            None => crate::tr!(lang, "backend {pid}", "backend {pid}"),
        };
        let waiter = name(self.waiter, self.waiter_pid);
        let s = &self.statement;
        let secs = format!("{:.1} s", self.waited_ms() / 1000.0);
        let head = match self.answered_us {
            Some(_) => crate::tr!(lang, "{waiter}'s {s} waited ", "{s} của {waiter} chờ "),
            None => crate::tr!(lang, "{waiter}'s {s} was still waiting after ", "{s} của {waiter} vẫn đang chờ sau "),
        };
        let mut line = Line::text(head).and(Piece::Measured(secs));
        for (i, h) in self.holders.iter().enumerate() {
            let (holder, state) = (name(h.who, h.pid), &h.state);
            let sep = if i == 0 { pick(lang, " for ", " vì ") } else { ", " };
            let what = if state.contains("transaction") {
                crate::tr!(lang, "{holder}'s open transaction ({state}", "transaction đang mở của {holder} ({state}")
            } else {
                crate::tr!(lang, "{holder} ({state}", "{holder} ({state}")
            };
            line = line.and_text(format!("{sep}{what}"));
            if let Some(t) = h.state_since_us {
                line =
                    line.and_text(pick(lang, " since t=", " từ t=")).and(Piece::Ms((t as f64 / 1000.0).round() as i64));
            }
            line = line.and_text(")");
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_ms: i64, actor: Actor, kind: EventKind) -> Event {
        Event { t_us: t_ms * 1000, actor, kind }
    }

    fn opened(actor: Actor, pid: u32) -> Event {
        let c =
            ConnectionEvent::ConnectionOpened { server: ServerKind::Postgres, connection: 1, backend_pid: Some(pid) };
        ev(0, actor, c.event())
    }

    fn update(t_ms: i64, actor: Actor) -> Event {
        let kind = EventKind::ServerCommand {
            server: ServerKind::Postgres,
            connection: 1,
            args: vec!["UPDATE ordlab.orders SET status='completed' WHERE id = $1".into(), "42".into()],
            reply: "UPDATE 1".into(),
            error: false,
            entries: Vec::new(),
            round_trip_us: None,
        };
        ev(t_ms, actor, kind)
    }

    fn seen(t_ms: i64, since_ms: i64) -> Event {
        let e = LockEvent::LockWaitSeen {
            waiter_pid: 202,
            statement: "UPDATE ordlab.orders SET status='completed' WHERE id = $1".into(),
            waited_ms: (t_ms - since_ms) as f64,
            blockers: vec![Blocker {
                pid: 101,
                state: "idle in transaction".into(),
                state_for_ms: Some((t_ms - 1234) as f64),
                xact_for_ms: Some((t_ms - 1200) as f64),
                statement: "UPDATE ordlab.orders …".into(),
            }],
        };
        ev(t_ms, Actor::Runner, e.event())
    }

    #[test]
    fn a_lock_wait_names_the_waiter_its_statement_its_duration_and_the_holder() {
        crate::timeline::vocabulary::check_kinds(&[seen(0, 0).kind.family::<LockEvent>().unwrap()]);
        let (c1, reaper) = (Actor::Consumer(1), Actor::Reaper);
        let events =
            vec![opened(c1, 101), opened(reaper, 202), update(1234, c1), seen(2600, 2000), update(15_400, reaper)];
        let waits = LockWait::of(&events);
        assert_eq!(waits.len(), 1);
        let w = &waits[0];
        assert_eq!((w.waiter, w.answered_us, w.waited_ms()), (Some((reaper, 1)), Some(15_400_000), 13_400.0));
        assert_eq!(
            w.reason(),
            "reaper's UPDATE waited 13.4 s for C1's open transaction (idle in transaction since t=1234 ms)"
        );
        // Never answered (the run stopped it first): at least until the record ends.
        let cut = LockWait::of(&events[..4]);
        assert_eq!(cut[0].reason(), "reaper's UPDATE was still waiting after 0.6 s for C1's open transaction (idle in transaction since t=1234 ms)");
        // A backend no interposed process opened is named by its pid.
        let unknown = LockWait::of(&[seen(2600, 2000)]);
        assert!(
            unknown[0].reason().starts_with("backend 202's UPDATE was still waiting after"),
            "{}",
            unknown[0].reason()
        );
    }
}
