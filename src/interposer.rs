//! The interposer sits on the wire between a worker process and the run's servers: each worker
//! gets its own loopback endpoints that forward to the real Redis and PostgreSQL, and every
//! command and statement that passes becomes a timeline event of that worker.
//!
//! Because it speaks the real protocols (RESP2/RESP3 in [`redis`], PostgreSQL v3 in
//! [`postgres`]), the worker can be anyone's program in any language: ordlab records what it
//! did at the only place every client library must pass. The same place is where the fault
//! layer acts at command boundaries (the worker's [`crate::fault::Injector`]: kill the worker
//! right after the reply to its n-th `XREADGROUP`, pause it when it sends `XACK`, lose a reply,
//! hang or reset the connection, delay a command, refuse its new connections), and where a
//! command can be held until the runner lets it go (what `explore` steps through).
//!
//! A connection is parsed in both directions by pure, incremental parsers (frames split across
//! reads, pipelines, push frames); the forwarding itself ([`forward`], the one loop every proxy
//! of ordlab runs on) copies bytes unchanged, so the worker's client library sees exactly what
//! the server sent.

pub mod connections;
pub mod forward;
pub mod limits;
pub mod link;
pub mod postgres;
pub mod redis;

pub use crate::fault::Moment;

use crate::fault::process::ProcessHandle;
use crate::fault::{Action, Injector, Occurrence};
use crate::timeline::ServerKind;
use std::time::{Duration, Instant};

/// What the interposer knows of one command (Redis) or statement (PostgreSQL) when it decides
/// what to do with it: who sent it, on which of its connections, and the command's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandView<'a> {
    pub server: ServerKind,
    /// 1-based, per worker and server, in the order the worker opened its connections.
    pub connection: u32,
    /// Redis: the command's arguments (the name upper-cased); PostgreSQL: the statement's text
    /// then its parameter values.
    pub args: &'a [String],
}

use crate::timeline::{Actor, EventKind, RawEvent, Sink as _};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// One worker's side of the interposer: who it is, its faults, where its events go and how
/// to act on its process. Every connection of the worker, to either server, shares it.
pub struct WorkerTap {
    pub actor: Actor,
    injector: Injector,
    sink: mpsc::UnboundedSender<RawEvent>,
    process: ProcessHandle,
    /// New connections to each server are refused until then (a fault cut the worker off).
    refusing: std::sync::Mutex<[Option<Instant>; 2]>,
    redis_connections: AtomicU32,
    postgres_connections: AtomicU32,
    /// Under exploration: every command is announced here and waits until released.
    gate: Option<mpsc::UnboundedSender<Held>>,
    steps: std::sync::Mutex<Steps>,
    /// Woken when an exchange is recorded (the explorer waits on it for a step's reply).
    recorded: tokio::sync::Notify,
    /// ordlab ends the process (a fault killed it, or the run stops it): its connections
    /// closing from now on are ordlab's doing, not the client's.
    ending: std::sync::atomic::AtomicBool,
}

/// What a gated tap counts: steps released, exchanges (of released steps) recorded, the
/// last recorded reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub released: u64,
    pub recorded: u64,
    pub last_reply: Option<String>,
}

/// A command held at the wire, before it reaches the server, until the explorer lets it go:
/// the controlled step that `explore` schedules (PostgreSQL's isolation tester steps sessions
/// the same way, at statement boundaries).
#[derive(Debug)]
pub struct Held {
    pub actor: Actor,
    pub server: ServerKind,
    pub connection: u32,
    /// As in [`CommandView::args`].
    pub args: Vec<String>,
    /// Send to let the command go on to the server; dropped unsent, the command never reaches
    /// it and the connection closes.
    pub release: tokio::sync::oneshot::Sender<()>,
}

/// One command or statement and its reply, as a proxy saw them pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub server: ServerKind,
    pub connection: u32,
    /// As in [`CommandView::args`].
    pub args: Vec<String>,
    /// The reply, abbreviated for a timeline line (`1 entry 1-0 type=created`, `UPDATE 1`).
    pub reply: String,
    /// The reply is an error (Redis `-ERR`, a PostgreSQL ErrorResponse: `reply` has its SQLSTATE).
    pub error: bool,
    /// The entries a stream read's reply handed over.
    pub entries: Vec<crate::timeline::WireEntry>,
    /// When the reply arrived (the monotonic clock): the event is placed there, when the
    /// server's answer exists (a blocking read is placed at its delivery, not its send).
    pub replied_ns: u64,
    /// When the command was passed on to the server, where the proxy stamps it (Redis): a
    /// lock's release must count from its send, before the server deleted the key.
    pub sent_ns: Option<u64>,
}

/// How long a connection whose reply a fault withheld stays open before it is closed: by then
/// the client surely waits for that reply, as one whose reply the network lost would. Closed at
/// once, the close can reach a client before it starts reading, and phpredis 5.3 then finds the
/// socket at EOF, reconnects without a word (`redis_check_eof`) and waits on the new connection
/// for a reply that never comes, instead of raising: run by run, which happens would be the
/// machine's scheduling (a PHP process descheduled for a moment between its write and its read).
pub const REPLY_WITHHELD_CLOSE_AFTER: Duration = Duration::from_millis(250);

/// What the interposer does with a command or a reply at one of its moments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Passage {
    /// Pass it on.
    Forward,
    /// Pass it on this much later (what comes after it waits).
    Delay(Duration),
    /// Pass nothing more on the connection, which stays open.
    Hang,
    /// End the connection without passing it on; `reset`: with a TCP RST.
    Cut { reset: bool },
}

impl Passage {
    /// The stronger of two: a cut over a hang over a delay (the longer) over passing.
    fn and(self, other: Passage) -> Passage {
        use Passage::*;
        match (self, other) {
            (Cut { reset: a }, Cut { reset: b }) => Cut { reset: a || b },
            (Cut { reset }, _) | (_, Cut { reset }) => Cut { reset },
            (Hang, _) | (_, Hang) => Hang,
            (Delay(a), Delay(b)) => Delay(a.max(b)),
            (Delay(d), Forward) | (Forward, Delay(d)) => Delay(d),
            (Forward, Forward) => Forward,
        }
    }

    /// Is what it applies to not passed on?
    pub fn withholds(&self) -> bool {
        matches!(self, Passage::Hang | Passage::Cut { .. })
    }
}

fn server_slot(server: ServerKind) -> usize {
    match server {
        ServerKind::Redis => 0,
        ServerKind::Postgres => 1,
    }
}

impl WorkerTap {
    pub fn new(
        actor: Actor,
        injector: Injector,
        sink: mpsc::UnboundedSender<RawEvent>,
        process: ProcessHandle,
    ) -> Arc<WorkerTap> {
        WorkerTap::gated(actor, injector, sink, process, None)
    }

    /// A tap whose every command (but a client library's handshake) is held until released
    /// through `gate`.
    pub fn gated(
        actor: Actor,
        injector: Injector,
        sink: mpsc::UnboundedSender<RawEvent>,
        process: ProcessHandle,
        gate: Option<mpsc::UnboundedSender<Held>>,
    ) -> Arc<WorkerTap> {
        Arc::new(WorkerTap {
            actor,
            injector,
            sink,
            process,
            refusing: Default::default(),
            redis_connections: AtomicU32::new(0),
            postgres_connections: AtomicU32::new(0),
            gate,
            steps: Default::default(),
            recorded: tokio::sync::Notify::new(),
            ending: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Under a gate, announce the command and wait until it is released: true to forward it;
    /// false when the explorer ended the run without releasing it (the proxy then closes the
    /// connection, so a command of a finished schedule never reaches the servers). Without a
    /// gate, or for a client library's handshake, true at once.
    pub async fn hold(&self, view: &CommandView<'_>) -> bool {
        let Some(gate) = &self.gate else { return true };
        if view.server == ServerKind::Redis && is_handshake(view.args) {
            return true;
        }
        let (release, released) = tokio::sync::oneshot::channel();
        let held = Held {
            actor: self.actor,
            server: view.server,
            connection: view.connection,
            args: view.args.to_vec(),
            release,
        };
        if gate.send(held).is_err() || released.await.is_err() {
            return false;
        }
        self.steps.lock().expect("not poisoned").released += 1;
        true
    }

    /// Under a gate: the steps released so far, the exchanges recorded since, and the last
    /// reply (what the explorer reads to know a step's answer is in).
    pub fn steps(&self) -> Steps {
        self.steps.lock().expect("not poisoned").clone()
    }

    /// Wait until the next exchange is recorded, or one recorded since the last wait (a
    /// permit is kept): the caller looks at [`WorkerTap::steps`] again either way.
    pub async fn recorded(&self) {
        self.recorded.notified().await
    }

    pub fn is_gated(&self) -> bool {
        self.gate.is_some()
    }

    /// The number of the worker's next connection to `server` (1-based).
    pub fn next_connection(&self, server: ServerKind) -> u32 {
        let counter = match server {
            ServerKind::Redis => &self.redis_connections,
            ServerKind::Postgres => &self.postgres_connections,
        };
        counter.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// What to do with a command at `moment`: every fault of the worker that fires there is
    /// recorded and carried out (a kill, a pause, a skew act on the process here), and what
    /// becomes of the command or reply is returned for the proxy to carry out.
    pub fn decide(&self, view: &CommandView<'_>, moment: Moment) -> Passage {
        let occurrence = Occurrence::Command { by: self.actor, server: view.server, args: view.args, moment };
        let mut passage = Passage::Forward;
        for fired in self.injector.fire(&occurrence) {
            fired.announce(&self.sink, self.actor);
            passage = passage.and(self.carry_out(&fired, Some(view.server)));
        }
        passage
    }

    /// Carry out a fault that fired on this worker (at a command of `server`, if any).
    fn carry_out(&self, fired: &crate::fault::Fired, server: Option<ServerKind>) -> Passage {
        let over = {
            let (sink, actor, end) = (self.sink.clone(), self.actor, fired.over(self.actor));
            move || sink.record(RawEvent::now(actor, end))
        };
        match fired.fault.action {
            Action::Kill => {
                self.stopping();
                self.process.kill();
                Passage::Cut { reset: false }
            }
            Action::PauseMs(ms) => {
                self.process.pause(ms, over);
                Passage::Forward
            }
            Action::SkewMs(ms) => {
                if let Err(e) = self.process.skew(ms) {
                    self.sink.record(RawEvent::now(self.actor, EventKind::crashed(false, e.to_string())));
                }
                Passage::Forward
            }
            Action::DelayMs(ms) => Passage::Delay(self.process.duration(ms)),
            Action::LoseReply => Passage::Cut { reset: false },
            Action::Drop => Passage::Hang,
            Action::Reset => Passage::Cut { reset: true },
            Action::RefuseConnectionsMs(ms) => {
                let until = Instant::now() + self.process.duration(ms);
                let mut refusing = self.refusing.lock().expect("not poisoned");
                for s in [ServerKind::Redis, ServerKind::Postgres] {
                    if server.is_none_or(|only| only == s) {
                        refusing[server_slot(s)] = Some(until);
                    }
                }
                let wait = until.saturating_duration_since(Instant::now());
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    over();
                });
                Passage::Forward
            }
            // Checked before the run: a process has no partner's or server's action.
            Action::Refuse | Action::Restart => Passage::Forward,
        }
    }

    /// Is a new connection of this worker to `server` to be refused now?
    pub fn refuses(&self, server: ServerKind) -> bool {
        self.refusing.lock().expect("not poisoned")[server_slot(server)].is_some_and(|until| Instant::now() < until)
    }

    /// A fault at a named point or a moment of the worker's run (not at the wire): carried
    /// out on the process.
    pub fn at(&self, occurrence: &Occurrence<'_>) {
        for fired in self.injector.fire(occurrence) {
            fired.announce(&self.sink, self.actor);
            self.carry_out(&fired, None);
        }
    }

    /// The worker's process has started: its faults at its start fire now, those at a moment
    /// of the run are scheduled from now (the task ends after the last, or when the tap goes).
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        self.at(&Occurrence::Start { by: self.actor });
        let moments = self.injector.moments();
        let tap = Arc::downgrade(self);
        let started = Instant::now();
        tokio::spawn(async move {
            for after_ms in moments {
                let Some(due) = tap.upgrade().map(|t| started + t.process.duration(after_ms)) else { return };
                tokio::time::sleep_until(due.into()).await;
                match tap.upgrade() {
                    Some(t) => t.at(&Occurrence::Time { after_ms }),
                    None => return,
                }
            }
        })
    }

    /// The process the tap acts on.
    pub fn process(&self) -> &ProcessHandle {
        &self.process
    }

    /// Record that a frame of this worker's over the server's limit was refused on its
    /// `connection` (the connection is then closed).
    pub fn refused(&self, breach: &limits::Breach, connection: u32) {
        use crate::timeline::vocabulary::Vocabulary as _;
        let kind = breach.event(connection).event();
        self.sink.record(RawEvent { mono_ns: crate::clock::now_ns(), actor: self.actor, kind });
    }

    /// ordlab is ending the worker's process (the run stops it, or a fault kills it): a
    /// connection that closes from now on was closed by ordlab.
    pub fn stopping(&self) {
        self.ending.store(true, Ordering::SeqCst);
    }

    /// Who closed a connection whose client side ended: the client, unless ordlab was
    /// ending its process.
    pub fn client_side_closer(&self) -> connections::ClosedBy {
        match self.ending.load(Ordering::SeqCst) {
            true => connections::ClosedBy::Ordlab,
            false => connections::ClosedBy::Client,
        }
    }

    /// Record the end of the worker's `connection` to `server`, closed first by `by` at
    /// `closed_ns`: each command still unanswered then (its words, when it was sent) never
    /// got a reply, and the connection is closed.
    pub fn connection_closed(
        &self,
        server: ServerKind,
        connection: u32,
        by: connections::ClosedBy,
        unanswered: Vec<(Vec<String>, u64)>,
        closed_ns: u64,
    ) {
        use crate::timeline::vocabulary::Vocabulary as _;
        use connections::ConnectionEvent as C;
        for (args, sent_ns) in unanswered {
            let waited_ms = closed_ns.saturating_sub(sent_ns) as f64 / 1e6;
            let kind = C::NoReply { server, connection, args, waited_ms, by }.event();
            self.sink.record(RawEvent { mono_ns: closed_ns, actor: self.actor, kind });
        }
        let kind = C::ConnectionClosed { server, connection, by }.event();
        self.sink.record(RawEvent { mono_ns: closed_ns, actor: self.actor, kind });
    }

    /// Record a reply to `args` (sent at `sent_ns`) that reached the interposer after the
    /// client had closed at `closed_ns`.
    pub fn reply_for_nobody(
        &self,
        server: ServerKind,
        connection: u32,
        (args, sent_ns): (Vec<String>, u64),
        reply: String,
        closed_ns: u64,
    ) {
        use crate::timeline::vocabulary::Vocabulary as _;
        let now = crate::clock::now_ns();
        let after_close_ms = now.saturating_sub(closed_ns) as f64 / 1e6;
        let waited_ms = closed_ns.saturating_sub(sent_ns) as f64 / 1e6;
        let kind =
            connections::ConnectionEvent::ReplyForNobody { server, connection, args, reply, waited_ms, after_close_ms }
                .event();
        self.sink.record(RawEvent { mono_ns: now, actor: self.actor, kind });
    }

    /// Record that the worker's `connection` to `server` is open (on PostgreSQL, served by
    /// backend `backend_pid`, as its BackendKeyData said).
    pub fn connection_opened(&self, server: ServerKind, connection: u32, backend_pid: Option<u32>) {
        use crate::timeline::vocabulary::Vocabulary as _;
        let kind = connections::ConnectionEvent::ConnectionOpened { server, connection, backend_pid }.event();
        self.sink.record(RawEvent { mono_ns: crate::clock::now_ns(), actor: self.actor, kind });
    }

    /// Record a finished exchange as a timeline event of this worker.
    pub fn record(&self, x: Exchange) {
        if self.gate.is_some() && !(x.server == ServerKind::Redis && is_handshake(&x.args)) {
            let mut steps = self.steps.lock().expect("not poisoned");
            steps.recorded += 1;
            steps.last_reply = Some(if x.error { format!("error {}", x.reply) } else { x.reply.clone() });
            self.recorded.notify_one();
        }
        let kind = EventKind::ServerCommand {
            server: x.server,
            connection: x.connection,
            args: x.args,
            reply: x.reply,
            error: x.error,
            entries: x.entries,
            round_trip_us: x.sent_ns.map(|s| (x.replied_ns.saturating_sub(s) / 1000) as i64),
        };
        self.sink.record(RawEvent { mono_ns: x.replied_ns, actor: self.actor, kind });
    }
}

/// A loopback port of one worker: each connection accepted there is served by its own task
/// (forwarding to the real server); dropping the endpoint stops the port and every connection
/// at once, [`Endpoint::close`] lets the connections whose process has gone finish their
/// record first.
pub struct Endpoint {
    pub addr: std::net::SocketAddr,
    accept: tokio::task::JoinHandle<()>,
    closing: Option<tokio::sync::oneshot::Sender<()>>,
}

/// How long [`Endpoint::close`] waits for its connections to end. A connection whose client
/// has closed ends within the late replies' wait (50 ms); one whose client is still there is
/// cut when this runs out.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

impl Endpoint {
    /// Listen on a free loopback port and serve each connection with `serve`.
    pub async fn start<F, Fut>(serve: F) -> std::io::Result<Endpoint>
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (closing, mut closed) = tokio::sync::oneshot::channel::<()>();
        let accept = tokio::spawn(async move {
            // Owned here: aborting this task drops the set, which aborts every connection.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => { connections.spawn(serve(stream)); }
                        Err(_) => return,
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                    _ = &mut closed => break,
                }
            }
            drop(listener);
            while connections.join_next().await.is_some() {}
        });
        Ok(Endpoint { addr, accept, closing: Some(closing) })
    }

    /// Stop accepting and let every connection end by itself, at most [`CLOSE_WAIT`]: after its
    /// process has exited, each records its close, the commands it left unanswered and the
    /// replies that came for nobody (a drop would cut that short and lose them).
    pub async fn close(mut self) {
        if let Some(closing) = self.closing.take() {
            let _ = closing.send(());
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, &mut self.accept).await;
    }

    /// A Redis endpoint forwarding to `upstream`.
    pub async fn redis(
        upstream: std::net::SocketAddr,
        tap: Arc<WorkerTap>,
        setup: redis::RedisSetup,
    ) -> std::io::Result<Endpoint> {
        let setup = Arc::new(setup);
        Endpoint::start(move |stream| redis::serve(stream, upstream, tap.clone(), setup.clone())).await
    }
}

impl Endpoint {
    /// A PostgreSQL endpoint forwarding to `upstream`.
    pub async fn postgres(upstream: std::net::SocketAddr, tap: Arc<WorkerTap>) -> std::io::Result<Endpoint> {
        Endpoint::start(move |stream| postgres::serve(stream, upstream, tap.clone())).await
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// The worker's PostgreSQL URL, through its own interposed endpoint.
pub async fn postgres_endpoint(
    pg_config: &str,
    tap: &Arc<WorkerTap>,
) -> Result<(String, Option<Endpoint>), crate::error::Error> {
    let config: tokio_postgres::Config = pg_config.parse().map_err(|e: tokio_postgres::Error| {
        crate::error::Error::WorkerCommand { command: "ordlab".into(), detail: format!("PostgreSQL config: {e}") }
    })?;
    let (host, port) = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(tokio_postgres::config::Host::Tcp(h)), Some(p)) => (h.clone(), *p),
        (Some(tokio_postgres::config::Host::Tcp(h)), None) => (h.clone(), 5432),
        _ => ("127.0.0.1".to_string(), 5432),
    };
    let upstream = upstream_of(&format!("postgres://{host}:{port}"))
        .await
        .map_err(|e| crate::error::Error::Io { context: "PostgreSQL address".into(), source: e })?;
    let endpoint = Endpoint::postgres(upstream, tap.clone())
        .await
        .map_err(|e| crate::error::Error::Io { context: "start the interposer".into(), source: e })?;
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
    let user = config.get_user().unwrap_or("postgres");
    let password = config.get_password().map(|p| format!(":{}", enc(&String::from_utf8_lossy(p)))).unwrap_or_default();
    let db = config.get_dbname().unwrap_or("postgres");
    Ok((format!("postgresql://{}{password}@{}/{}", enc(user), endpoint.addr, enc(db)), Some(endpoint)))
}

/// The address of a server URL's host and port (`redis://127.0.0.1:6379/0`,
/// `postgres://u@127.0.0.1:5432/db`).
pub async fn upstream_of(url: &str) -> std::io::Result<std::net::SocketAddr> {
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() {
        return Err(invalid("no host"));
    }
    tokio::net::lookup_host(host_port).await?.next().ok_or_else(|| invalid("the host has no address"))
}

/// The `AUTH` arguments a Redis URL carries (`redis://:pass@…` → `[pass]`, `redis://user:pass@…`
/// → `[user, pass]`), so the interposer can authenticate its upstream connections itself: a
/// process behind it needs no credentials, on a password-protected server (the Docker backend)
/// as on a local one.
pub fn redis_auth(url: &str) -> Option<Vec<String>> {
    let parsed = url::Url::parse(url).ok()?;
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().to_string();
    let password = decode(parsed.password()?);
    match parsed.username() {
        "" => Some(vec![password]),
        user => Some(vec![decode(user), password]),
    }
}

/// A client library's connection set-up (`HELLO 3`, `CLIENT SETINFO LIB-NAME redis-py`,
/// `AUTH`, `SELECT`): kept in the JSON, left out of the timeline, named in a run's notes.
pub fn is_handshake(args: &[String]) -> bool {
    let sub = args.get(1).map(|a| a.to_ascii_uppercase());
    match args.first().map(String::as_str) {
        Some("HELLO" | "AUTH" | "SELECT" | "READONLY") => true,
        Some("CLIENT") => matches!(sub.as_deref(), Some("SETINFO" | "SETNAME" | "MAINT_NOTIFICATIONS")),
        _ => false,
    }
}

/// A library's name, version and protocol, as far as it said them.
type SaidOfItself = (Option<String>, Option<String>, Option<String>);

/// What each process's client library said of itself at the wire (`CLIENT SETINFO LIB-NAME`
/// and `LIB-VER`, as redis-py and others send on connecting) and the protocol it asked for
/// (`HELLO 3`): `C1 redis-py 8.1.0 (RESP3)`; a process that said nothing is left out.
pub fn client_libraries(events: &[crate::timeline::Event]) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut seen: BTreeMap<Actor, SaidOfItself> = BTreeMap::new();
    for e in events {
        let EventKind::ServerCommand { args, error: false, .. } = &e.kind else { continue };
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let entry = seen.entry(e.actor).or_default();
        match words.as_slice() {
            ["CLIENT", sub, rest @ ..] if sub.eq_ignore_ascii_case("SETINFO") => {
                for pair in rest.chunks(2) {
                    match pair {
                        [k, v] if k.eq_ignore_ascii_case("LIB-NAME") => entry.0 = Some(v.to_string()),
                        [k, v] if k.eq_ignore_ascii_case("LIB-VER") => entry.1 = Some(v.to_string()),
                        _ => {}
                    }
                }
            }
            ["HELLO", v, ..] => entry.2 = Some(format!("RESP{v}")),
            _ => {}
        }
    }
    seen.into_iter()
        .filter_map(|(actor, (name, ver, resp))| {
            let name = name?;
            let ver = ver.map(|v| format!(" {v}")).unwrap_or_default();
            let resp = resp.map(|r| format!(" ({r})")).unwrap_or_default();
            Some(format!("{actor} {name}{ver}{resp}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_redis_url_s_credentials_become_the_interposer_s_auth() {
        assert_eq!(super::redis_auth("redis://127.0.0.1:6379/0"), None);
        assert_eq!(super::redis_auth("redis://:s3cr%2Ft@127.0.0.1:6379/0"), Some(vec!["s3cr/t".to_string()]));
        assert_eq!(super::redis_auth("redis://me:pw@127.0.0.1:1/0"), Some(vec!["me".to_string(), "pw".to_string()]));
    }
}
