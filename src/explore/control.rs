//! The run side of exploration: every process of a run talks to the servers through a gated
//! interposer, so each of its commands waits at the wire until the explorer lets it go, and
//! the explorer steps the run one command at a time in the order a [`Strategy`] picks.
//!
//! Between steps the run is *quiescent*, decided exactly, not by a timeout: every process has
//! a command held at the wire (with every earlier reply in), or waits inside a server on a
//! command already released (`CLIENT LIST` flag `b`; a PostgreSQL lock wait in
//! `pg_stat_activity`), or is done. Only then is the next step chosen. A command held when the
//! schedule ends is never forwarded: its connection is closed.
//!
//! The lab tells the control what its processes' steps mean where the wire alone cannot: a
//! process that waits for another's step before it starts ([`Wake`]), a poll that can take
//! something only when the server has it ([`Probe`]), a kill planned at another process's
//! step (a [`Fault`] whose trigger is that step: [`kill_after_step`]).

use super::footprint::{self, Footprint};
use super::search::{Candidate, Choice, Seen, Strategy, Taken};
use super::timer::{Timer, TimerQueue, Timers};
use crate::error::Error;
use crate::fault::{Action, Count, Fault, Moment, Occurrence, Target, Trigger};
use crate::interposer::redis::RedisSetup;
use crate::interposer::{upstream_of, Endpoint, Held, WorkerTap};
use crate::timeline::{Actor, RawEvent, ServerKind};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long a process may take between a reply and its next command (or wait in a server)
/// before the run is called stuck: generous, since it bounds only a fault, never a verdict.
const STUCK_AFTER: Duration = Duration::from_secs(15);

/// How long a released step's reply is waited for before the servers are asked whether the
/// command waits inside them (a blocking read, a lock wait): most replies come sooner.
const REPLY_FIRST: Duration = Duration::from_millis(3);

/// The same for a Redis command that can block (`XREADGROUP … BLOCK`, `BLPOP`): it often does
/// (a read of an empty stream), and then no reply comes however long one waits, so the server
/// is asked sooner; asked too soon, it is asked again, which costs a round trip, never a verdict.
const REPLY_FIRST_BLOCKING: Duration = Duration::from_micros(500);

/// How long a process that exited with a released command unanswered may still have its
/// reply recorded by the interposer (it was written to the process, which read it and died).
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Where a process under control connects: its own gated endpoints.
pub struct ActorUrls {
    pub redis_url: String,
    /// A PostgreSQL URL (`application_name` set to the process's client name).
    pub pg_url: String,
}

/// One process under control.
struct Slot {
    tap: Arc<WorkerTap>,
    client_name: String,
    /// Endpoints this control started for the process (a worker from a command line owns its own).
    endpoints: Vec<Endpoint>,
}

/// Whether a process has exited (its output drained).
pub type ExitCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// What makes the lab start a dormant process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// That process is done (exited, or will send nothing more).
    Done(Actor),
    /// A step starting with these words took something (its reply is not `(nil)`), by that
    /// process (None: by any).
    Took(Option<Actor>, Vec<String>),
}

/// What a poll can take, asked of the server (keys as the processes name them, without the
/// run's prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A list that is not empty (a take from it).
    NonEmptyList(String),
    /// A sorted set with a member scored 0 or less: a lease a timer step made due.
    DueMember(String),
    /// Rows of PostgreSQL table `table` (as statements name it) `WHERE condition`: what an
    /// outbox dispatcher's poll selects. Such a process keeps state the wire does not show (how
    /// often it tried a row): its poll may read the same rows again and then act, so it is a
    /// step whenever there are rows, never parked as a retry that changes nothing.
    Rows { table: String, condition: String },
}

/// A kill the lab plans at another process's step (`kill = { worker = 1, after_done_by = 2 }`):
/// `victim` dies once `by`'s step that starts with `words` (the command's name in any case,
/// the rest exactly) is answered. A fault like any other; the explorer is where it fires.
pub fn kill_after_step(victim: Actor, by: Actor, words: &[String]) -> Fault {
    let (name, rest) = words.split_first().map_or(("", &[][..]), |(n, r)| (n.as_str(), r));
    let mut pattern = format!("^(?i:{})", regex::escape(name));
    for w in rest {
        pattern.push(' ');
        pattern.push_str(&regex::escape(w));
    }
    pattern.push_str("( |$)");
    Fault {
        target: Target::Process(victim),
        trigger: Trigger::Command { command: None, pattern: Some(pattern), moment: Moment::Reply, of: Some(by) },
        count: Count::ONCE,
        probability: None,
        action: Action::Kill,
    }
}

impl Probe {
    /// What a poll that found something read: the list, or the sorted set.
    fn guard(&self) -> Footprint {
        match self {
            Probe::NonEmptyList(key) | Probe::DueMember(key) => Footprint::of(vec![format!("r:{key}")], vec![]),
            Probe::Rows { table, .. } => Footprint::of(vec![format!("pg:{table}")], vec![]),
        }
    }

    /// A poll of a process with state of its own (see [`Probe::Rows`]): never parked.
    fn keeps_state(&self) -> bool {
        matches!(self, Probe::Rows { .. })
    }
}

/// The process a planned kill kills.
fn victim(kill: &Fault) -> Actor {
    kill.process().expect("a planned kill names its victim")
}

/// The resource a kill writes and every step of its victim reads: whether it still lives.
fn life(kill: &Fault) -> String {
    format!("proc:{}", victim(kill))
}

/// Is `actor`'s answered step `args` the one that fires `kill`?
fn fires(kill: &Fault, actor: Actor, args: &[String]) -> bool {
    let step = Occurrence::Command { by: actor, server: ServerKind::Redis, args, moment: Moment::Reply };
    kill.trigger.matches(&step, kill.process())
}

/// Does `args` start with `words` (the command's name in any case, the rest exactly)?
fn starts_with(args: &[String], words: &[String]) -> bool {
    words.len() <= args.len()
        && words.iter().zip(args).enumerate().all(|(i, (w, a))| if i == 0 { w.eq_ignore_ascii_case(a) } else { w == a })
}

/// What the lab side and the stepping side share.
#[derive(Default)]
struct Shared {
    actors: BTreeMap<Actor, Slot>,
    held: BTreeMap<Actor, Held>,
    /// Processes that will send nothing more (the producer once it published everything, a
    /// process killed at its planned point).
    finished: BTreeSet<Actor>,
    /// How to tell that a process has exited.
    exits: BTreeMap<Actor, ExitCheck>,
    /// Processes registered but not started yet (or paused between two of their steps), each
    /// with what makes the lab start it (a supervisor's replacement for a killed worker;
    /// readers that start once the producer has published; a worker that starts once the one
    /// before it took a job): until then it is neither busy nor done.
    dormant: BTreeMap<Actor, Wake>,
    /// Polls that can take something only when the server has it, by their first words: held
    /// while there is nothing to take, such a poll is no step (it would change nothing) and
    /// its process waits for work.
    polls: Vec<(Vec<String>, Probe)>,
    /// Planned kills not done yet: the lab kills `victim` once `by`'s step starting with
    /// these words is answered, before any other step.
    kills: Vec<Fault>,
    /// The held commands of processes killed by a planned kill: never released, kept until
    /// the schedule is over so that their connections stay open until the lab kills them.
    doomed: Vec<Held>,
    /// Processes that poll by design (a claimer, a dispatcher): parked at the end of a
    /// schedule, they wait for work, they do not retry forever.
    pollers: BTreeSet<Actor>,
    /// Pollers whose poll (`XAUTOCLAIM`) is a step only when a timer step has made an entry
    /// idle for it: a poll that can take nothing changes nothing, and where it comes among
    /// the timer steps would only multiply the classes.
    idle_pollers: BTreeSet<Actor>,
    /// The lab's server timers that are steps.
    timers: Timers,
    /// The timer steps taken, as events of the run's timeline (actor `N`).
    events: Vec<RawEvent>,
}

/// One run under the explorer's control.
pub struct Control {
    redis_url: String,
    pg_config: String,
    gate: mpsc::UnboundedSender<Held>,
    announced: tokio::sync::Mutex<mpsc::UnboundedReceiver<Held>>,
    shared: Mutex<Shared>,
    /// Set by the lab when its processes are started and it begins the run.
    begun: watch::Sender<bool>,
    /// Set by the stepping side when the schedule is over; the lab then ends the run.
    over: watch::Sender<bool>,
    /// Set when the lab's run returned (whatever its result).
    lab_done: watch::Sender<bool>,
    /// The exploration's fork servers: a Python worker's run starts as a fork of one.
    forks: Option<Arc<crate::service::fork_server::ForkServers>>,
}

/// What one controlled run did: its schedule and its steps as the class key needs them.
#[derive(Debug, Default)]
pub struct Stepped {
    pub turns: Vec<Actor>,
    pub taken: Vec<Taken>,
    /// Each step's command, for the report (`C1 XREADGROUP … → 1 entry`).
    pub lines: Vec<String>,
    /// How the run ended: `Done` (complete), `Asleep` or `Bound` (cut short), or the step limit.
    pub end: Option<Choice>,
    /// At the end, processes parked in a retry that nothing left can let succeed (`C2 SET lock…`).
    pub spinning: Vec<String>,
}

impl Control {
    pub fn new(redis_url: &str, pg_config: &str) -> Control {
        let (gate, announced) = mpsc::unbounded_channel();
        Control {
            redis_url: redis_url.to_string(),
            pg_config: pg_config.to_string(),
            gate,
            announced: tokio::sync::Mutex::new(announced),
            shared: Mutex::new(Shared::default()),
            begun: watch::channel(false).0,
            over: watch::channel(false).0,
            lab_done: watch::channel(false).0,
            forks: None,
        }
    }

    /// This run's workers from a command line may be forked from `forks`' servers.
    pub fn with_forks(mut self, forks: Arc<crate::service::fork_server::ForkServers>) -> Control {
        self.forks = Some(forks);
        self
    }

    /// The fork server for a worker `command` (its fixed `env`), if it can be forked.
    pub async fn fork_server(
        &self,
        command: &[String],
        env: &std::collections::BTreeMap<String, String>,
    ) -> Option<Arc<crate::service::fork_server::ForkServer>> {
        self.forks.as_ref()?.server(command, env).await
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().expect("not poisoned")
    }

    /// A gated tap for `actor` (what a worker from a command line builds its endpoints on).
    pub fn tap(
        &self,
        actor: Actor,
        injector: crate::fault::Injector,
        sink: mpsc::UnboundedSender<RawEvent>,
        process: crate::fault::process::ProcessHandle,
    ) -> Arc<WorkerTap> {
        WorkerTap::gated(actor, injector, sink, process, Some(self.gate.clone()))
    }

    /// Put `actor`, whose connections are named `client_name` and go through `tap`, under control.
    pub fn register(&self, actor: Actor, client_name: &str, tap: Arc<WorkerTap>) {
        let slot = Slot { tap, client_name: client_name.to_string(), endpoints: Vec::new() };
        self.shared().actors.insert(actor, slot);
    }

    /// Gated endpoints for one of ordlab's own processes (its events come its own way: the
    /// interposer records nothing of it).
    pub async fn endpoints(&self, actor: Actor, client_name: &str, key_prefix: &str) -> Result<ActorUrls, Error> {
        let io = |e: std::io::Error| Error::Io { context: "start the interposer".into(), source: e };
        let (sink, _) = mpsc::unbounded_channel();
        let tap = self.tap(actor, Default::default(), sink, Default::default());
        let up = upstream_of(&self.redis_url).await.map_err(io)?;
        let setup = RedisSetup {
            client_name: Some(client_name.to_string()),
            key_prefix: key_prefix.to_string(),
            auth: crate::interposer::redis_auth(&self.redis_url),
        };
        let redis = Endpoint::redis(up, tap.clone(), setup).await.map_err(io)?;
        let (pg_url, pg) = crate::interposer::postgres_endpoint(&self.pg_config, &tap).await?;
        let urls = ActorUrls {
            redis_url: format!("redis://{}/0", redis.addr),
            pg_url: with_application_name(&pg_url, client_name),
        };
        self.register(actor, client_name, tap);
        let mut shared = self.shared();
        let slot = shared.actors.get_mut(&actor).expect("just registered");
        slot.endpoints.push(redis);
        slot.endpoints.extend(pg);
        Ok(urls)
    }

    /// Wait until `actor` holds its first command at the wire (it is connected and ready).
    pub async fn ready(&self, actor: Actor) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + STUCK_AFTER;
        let mut announced = self.announced.lock().await;
        loop {
            if self.shared().held.contains_key(&actor) {
                return Ok(());
            }
            let held = tokio::time::timeout_at(deadline, announced.recv()).await;
            match held {
                Ok(Some(h)) => self.keep(h)?,
                Ok(None) => unreachable!("the control keeps a sender"),
                Err(_) => {
                    return Err(Error::RoleNotReady {
                        actor: actor.to_string(),
                        detail: format!("sent no command within {} s", STUCK_AFTER.as_secs()),
                    })
                }
            }
        }
    }

    fn keep(&self, h: Held) -> Result<(), Error> {
        let actor = h.actor;
        if self.shared().held.insert(actor, h).is_some() {
            return Err(Error::Explore(format!("{actor} held two commands at once (a pipeline): not explorable yet")));
        }
        Ok(())
    }

    /// `actor` may exit mid-run (a planned kill): once `exited` says so, it sends nothing more.
    pub fn watch_exit(&self, actor: Actor, exited: ExitCheck) {
        self.shared().exits.insert(actor, exited);
    }

    /// `actor` (registered, not started) is started by the lab once `after` is done (exited or
    /// finished); until then the explorer waits for neither.
    pub fn dormant(&self, actor: Actor, after: Actor) {
        self.shared().dormant.insert(actor, Wake::Done(after));
    }

    /// `actor` (not started, or between two of its steps: the lab holds it back) is started or
    /// let go by the lab once `wake` happens; until then the explorer waits for it no more than
    /// for a process not started. The lab must call this before what wakes it can happen.
    pub fn dormant_until(&self, actor: Actor, wake: Wake) {
        self.shared().dormant.insert(actor, wake);
    }

    /// Polls starting with `words` are steps only when `probe` finds something to take.
    pub fn poll_when(&self, words: Vec<String>, probe: Probe) {
        self.shared().polls.push((words, probe));
    }

    /// Plan a kill the explorer orders: once `kill.by`'s step starting with `kill.after` is
    /// answered, `kill.victim` takes no further step (its held command is never released)
    /// and the lab kills it. The step that triggers the kill conflicts with every step of the
    /// victim, so the search tries the victim's steps on both sides of it.
    pub fn kill_after(&self, kill: Fault) {
        self.shared().kills.push(kill);
    }

    /// `actor` polls by design: parked when a schedule ends, it is waiting for work.
    pub fn poller(&self, actor: Actor) {
        self.shared().pollers.insert(actor);
    }

    /// `actor` polls by design and its polls are steps only when there is something to take
    /// (see [`Shared::idle_pollers`]).
    pub fn idle_poller(&self, actor: Actor) {
        let mut shared = self.shared();
        shared.pollers.insert(actor);
        shared.idle_pollers.insert(actor);
    }

    /// Make these server timers of the lab steps (before [`Control::begin`]).
    pub fn set_timers(&self, timers: Timers) {
        self.shared().timers = timers;
    }

    /// The timer steps this run took, as events (the lab adds them to its timeline).
    pub fn take_events(&self) -> Vec<RawEvent> {
        std::mem::take(&mut self.shared().events)
    }

    /// The lab's processes are started: stepping may begin.
    pub fn begin(&self) {
        self.begun.send_replace(true);
    }

    /// `actor` will send nothing more.
    pub fn finished(&self, actor: Actor) {
        self.shared().finished.insert(actor);
    }

    /// Resolves when the schedule is over (the lab then stops its processes and reads the state).
    pub async fn over(&self) {
        let mut rx = self.over.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }

    /// The lab's run returned.
    pub fn lab_finished(&self) {
        self.lab_done.send_replace(true);
        self.over.send_replace(true);
    }

    /// How many processes are under control (those never started left out).
    pub fn processes(&self) -> usize {
        let shared = self.shared();
        shared.actors.keys().filter(|a| !shared.dormant.contains_key(a)).count()
    }

    fn lab_is_done(&self) -> bool {
        *self.lab_done.borrow()
    }
}

/// Add `application_name=<name>` to a PostgreSQL URL (how the explorer finds the session in
/// `pg_stat_activity`).
pub fn with_application_name(url: &str, name: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={name}")
}

/// What the explorer sees at a point between steps.
#[derive(Default)]
struct Point {
    /// The processes that can step.
    enabled: Vec<Candidate>,
    /// Polls held with nothing to take.
    waiting: Vec<Candidate>,
    /// The guards that hold (as reads): lists with something to take, the armed timer's.
    open: Footprint,
}

/// The stepping side's own view of each process between steps.
#[derive(Default)]
struct Book {
    /// Processes waiting inside a server on a released command: that command.
    blocked: HashMap<Actor, Step>,
    /// Each held command as the explorer sees it (entry IDs numbered), by process.
    seen: HashMap<Actor, Step>,
    /// Entry IDs numbered in the order the run first showed them: `e1`, `e2`, …, by (stream,
    /// ID): two streams can hand out the same ID (both appended in the same millisecond), and
    /// whether they do is the clock's, so an ID is numbered within its stream.
    ids: HashMap<(String, String), String>,
    /// Released steps not answered yet, per process (the count the tap had before the step).
    recorded_before: HashMap<Actor, u64>,
    /// Each process's MULTI … EXEC and WATCHes (EXEC does what was queued).
    multi: footprint::RedisTransactions<Actor>,
    /// Each process's open PostgreSQL transaction: what its COMMIT or ROLLBACK touches.
    tx: footprint::Transactions<Actor>,
    keys: HashMap<String, Vec<String>>,
    /// Each process's last step, and whether its reply said nothing changed (a failed SET NX).
    last: HashMap<Actor, (String, bool)>,
    /// Processes parked on a retry that cannot succeed until another process touches what
    /// the retried command reads (a spinning `SET lock NX`): what it would touch.
    parked: HashMap<Actor, Footprint>,
    /// When each process was first seen exited.
    exited_at: HashMap<Actor, tokio::time::Instant>,
    /// What armed the lab's server timers, in order.
    timers: TimerQueue,
    /// The timer the explorer may fire next (actor `N`), as the last candidates offered it.
    timer: Option<Timer>,
    /// Processes holding a poll that has nothing to take (see [`Shared::polls`]).
    idle: BTreeSet<Actor>,
    /// The queue of waiting clients the step just settled joined, if it waits in its server.
    queued: Footprint,
}

/// A command as the explorer reasons about it.
#[derive(Clone, Debug)]
struct Step {
    server: ServerKind,
    /// Its words, entry IDs numbered (`XACK orders g e1`).
    args: Vec<String>,
    /// Its keys (`COMMAND GETKEYS`); none for SQL.
    keys: Vec<String>,
}

impl Book {
    /// `text` with every entry ID (`1796139224957-0`) replaced by its number in this run; the
    /// IDs of a command on one stream key (or of its reply) are that stream's. An ID seen with
    /// no stream (an SQL parameter) takes the number it has in the first stream that has it.
    fn numbered(&mut self, text: &str, keys: &[String]) -> String {
        let stream = if keys.len() == 1 { keys[0].as_str() } else { "" };
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String, ids: &mut HashMap<(String, String), String>| {
            if is_entry_id(word) && word != "0-0" {
                let n = ids.len() + 1;
                let known = || {
                    let mut same: Vec<&String> = ids.iter().filter(|((_, id), _)| id == word).map(|(_, o)| o).collect();
                    same.sort_by_key(|o| o[1..].parse::<usize>().unwrap_or(usize::MAX));
                    same.first().map(|o| o.to_string())
                };
                let found = if stream.is_empty() { known() } else { None };
                let ordinal = match found {
                    Some(o) => o,
                    None => ids.entry((stream.to_string(), word.clone())).or_insert_with(|| format!("e{n}")).clone(),
                };
                out.push_str(&ordinal);
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for ch in text.chars() {
            // `:` too: a lock's token names the entry it is for (`C1:1796455048522-0`).
            if ch.is_whitespace() || matches!(ch, ',' | '[' | ']' | '(' | ')' | '=' | '"' | ':') {
                flush(&mut word, &mut out, &mut self.ids);
                out.push(ch);
            } else {
                word.push(ch);
            }
        }
        flush(&mut word, &mut out, &mut self.ids);
        out
    }
}

/// A command as a replay must repeat it: long numbers (a version made from an entry ID's time,
/// a timestamp) and random tokens ([`super::random_words`]) are left out, since they differ from
/// run to run while the step is the same.
fn shape(command: &str) -> String {
    command
        .split(' ')
        .map(|w| match w {
            w if w.len() >= 10 && w.bytes().all(|b| b.is_ascii_digit()) => "#",
            w if super::random_words::is_random(w) => super::random_words::MASK,
            w => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `1796139224957-0`: a stream entry ID.
fn is_entry_id(w: &str) -> bool {
    w.split_once('-').is_some_and(|(ms, seq)| {
        !ms.is_empty()
            && !seq.is_empty()
            && ms.bytes().all(|b| b.is_ascii_digit())
            && seq.bytes().all(|b| b.is_ascii_digit())
    })
}

impl Control {
    /// Step the run by `strategy` until it is over or cut short, at most `max_steps` steps.
    pub async fn drive(
        &self,
        strategy: &mut dyn Strategy,
        max_steps: usize,
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Result<Stepped, Error> {
        let result = self.step_all(strategy, max_steps, redis, pg).await;
        self.over.send_replace(true);
        // What is still held is dropped only once the lab stopped its processes, so no held
        // command runs after the schedule; dropped, it never reaches the servers.
        let mut done = self.lab_done.subscribe();
        let _ = done.wait_for(|v| *v).await;
        let mut shared = self.shared();
        shared.held.clear();
        shared.doomed.clear();
        drop(shared);
        result
    }

    async fn step_all(
        &self,
        strategy: &mut dyn Strategy,
        max_steps: usize,
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Result<Stepped, Error> {
        let mut begun = self.begun.subscribe();
        tokio::select! {
            _ = begun.wait_for(|v| *v) => {}
            _ = async { let mut d = self.lab_done.subscribe(); let _ = d.wait_for(|v| *v).await; } => return Ok(Stepped::default()),
        }
        let mut book = Book::default();
        let mut out = Stepped::default();
        loop {
            let woken = self.quiesce(&mut book, redis, pg).await?;
            if let Some(last) = out.taken.last_mut() {
                last.woken = woken;
            }
            if self.lab_is_done() {
                return Ok(out);
            }
            let point = self.candidates(&mut book, redis, pg).await;
            if out.turns.len() >= max_steps {
                out.end = Some(Choice::Bound);
                return Ok(out);
            }
            strategy.observe(&out.taken, Seen { waiting: &point.waiting, open: &point.open });
            let choice = strategy.choose(&out.taken, &point.enabled).map_err(|d| Error::Explore(d.to_string()))?;
            let Choice::Take(actor) = choice else {
                if choice == Choice::Done {
                    let pollers = self.shared().pollers.clone();
                    let spinning = book.parked.keys().filter(|a| !pollers.contains(a));
                    out.spinning = spinning.map(|a| format!("{a} {}", book.seen[a].args.join(" "))).collect();
                }
                out.end = Some(choice);
                return Ok(out);
            };
            let (line, fp, reply) = if actor == Actor::Runner {
                self.fire_timer(&mut book, redis).await?
            } else {
                let (line, step) = self.release(actor, &mut book);
                let command = step.args.join(" ");
                let tx_end = transaction_end(&mut book, actor, &step);
                let args = step.args.clone();
                let server = step.server;
                let (fp, reply, nothing) = self.settle(actor, step, &mut book, redis, pg).await?;
                let fp = match server {
                    ServerKind::Redis => book.multi.step(actor, &args, fp, &reply),
                    ServerKind::Postgres => tx_end.unwrap_or(fp),
                };
                let fp = self.after_step(actor, &args, &reply, fp, &mut book);
                book.last.insert(actor, (command, nothing));
                (line, fp, reply)
            };
            let unparked: Vec<Actor> = book
                .parked
                .iter()
                .filter(|(a, waits_on)| **a != actor && waits_on.conflicts(&fp))
                .map(|(a, _)| *a)
                .collect();
            for a in unparked {
                book.parked.remove(&a);
                book.last.remove(&a);
            }
            out.lines.push(format!("{line} → {reply}"));
            out.turns.push(actor);
            let mut taken = Taken::new(actor, fp, Vec::new());
            taken.queued = std::mem::take(&mut book.queued);
            out.taken.push(taken);
        }
    }

    /// What follows `actor`'s answered step `args` (reply `reply`, footprint `fp`): dormant
    /// processes it wakes go, a planned kill it triggers is done (its victim's held command
    /// kept, never released). Returns the footprint with the kills' lives in it.
    fn after_step(&self, actor: Actor, args: &[String], reply: &str, fp: Footprint, book: &mut Book) -> Footprint {
        let mut shared = self.shared();
        let took = reply != "(nil)";
        let woken: Vec<Actor> = shared
            .dormant
            .iter()
            .filter(|(_, w)| match w {
                Wake::Took(by, words) => took && by.is_none_or(|b| b == actor) && starts_with(args, words),
                Wake::Done(_) => false,
            })
            .map(|(a, _)| *a)
            .collect();
        for a in woken {
            shared.dormant.remove(&a);
        }
        let fp = lives(&shared.kills, actor, args, fp);
        let (done, left): (Vec<Fault>, Vec<Fault>) =
            std::mem::take(&mut shared.kills).into_iter().partition(|k| fires(k, actor, args));
        shared.kills = left;
        for k in done {
            let victim = victim(&k);
            if let Some(h) = shared.held.remove(&victim) {
                shared.doomed.push(h);
            }
            shared.finished.insert(victim);
            book.seen.remove(&victim);
            book.parked.remove(&victim);
            book.idle.remove(&victim);
        }
        fp
    }

    /// Let `actor`'s held command go: the line it shows in the report, and the command.
    fn release(&self, actor: Actor, book: &mut Book) -> (String, Step) {
        let mut shared = self.shared();
        let held = shared.held.remove(&actor).expect("an enabled process holds a command");
        let before = shared.actors[&actor].tap.steps().recorded;
        book.recorded_before.insert(actor, before);
        let step = book.seen.remove(&actor).expect("a candidate was seen");
        let line = format!("{} {}", super::schedule::code(actor), step.args.join(" "));
        let _ = held.release.send(());
        (line, step)
    }

    /// Wait for the released step of `actor` to be answered or to wait in a server; what it did.
    async fn settle(
        &self,
        actor: Actor,
        step: Step,
        book: &mut Book,
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Result<(Footprint, String, bool), Error> {
        let before = book.recorded_before.remove(&actor).unwrap_or(0);
        let first_wait = if can_block(&step) { REPLY_FIRST_BLOCKING } else { REPLY_FIRST };
        let started = tokio::time::Instant::now();
        let deadline = started + STUCK_AFTER;
        loop {
            let (steps, name, tap) = {
                let shared = self.shared();
                let slot = &shared.actors[&actor];
                (slot.tap.steps(), slot.client_name.clone(), slot.tap.clone())
            };
            if steps.recorded > before {
                let reply = book.numbered(&steps.last_reply.unwrap_or_default(), &step.keys);
                book.timers.observe(&step.args, &step.keys, &reply);
                let nothing = footprint::changed_nothing(step.server, &step.args, &reply);
                return Ok((footprint::effect(step.server, &step.args, &step.keys, &reply), reply, nothing));
            }
            // Most replies come within a millisecond or two: wait for one before asking the
            // servers whether the command waits inside them.
            if let Some(left) = first_wait.checked_sub(started.elapsed()) {
                let _ = tokio::time::timeout(left, tap.recorded()).await;
                continue;
            }
            if steps.released > steps.recorded && waits_in_server(redis, pg, &name, step.server).await? {
                let fp = footprint::effect(step.server, &step.args, &step.keys, "(nil)");
                book.queued = footprint::waiting_queue(step.server, &step.args, &step.keys);
                book.blocked.insert(actor, step);
                return Ok((fp, "waits in the server".into(), false));
            }
            // The process died with the command unanswered (a fault at its send kills it
            // before the command reaches the server): nothing more of it comes, and the next
            // quiesce sees it gone. Whether the command ran is not known here, so the step
            // counts as touching all it may.
            let gone = self.shared().exits.get(&actor).is_some_and(|gone| gone());
            if gone && tap.steps().recorded <= before {
                let fp = match step.server {
                    ServerKind::Redis => footprint::redis(&step.args, &step.keys),
                    ServerKind::Postgres => footprint::postgres(&step.args),
                };
                return Ok((fp, "no reply: the process died".into(), false));
            }
            if self.lab_is_done() || tokio::time::Instant::now() > deadline {
                return Err(Error::Explore(format!(
                    "{actor}'s step `{}` got no answer and does not wait in a server after {} s",
                    step.args.join(" "),
                    STUCK_AFTER.as_secs()
                )));
            }
            let _ = tokio::time::timeout(Duration::from_millis(1), tap.recorded()).await;
        }
    }

    /// Wait until every process holds a command (all its replies in), waits in a server, or is
    /// done. Returns the processes that were waiting in a server and got their answer since.
    async fn quiesce(
        &self,
        book: &mut Book,
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Result<Vec<(Actor, Footprint)>, Error> {
        let deadline = tokio::time::Instant::now() + STUCK_AFTER;
        let mut woken = Vec::new();
        let mut announced = self.announced.lock().await;
        loop {
            while let Ok(h) = announced.try_recv() {
                self.keep(h)?;
            }
            let (busy, waiting) = self.busy_and_waiting(book, &mut woken);
            let busy = match busy {
                Some(a) => Some(a),
                // Nothing moves on our side: ask the servers whether the waiting still wait (one
                // woken by the last step has its answer on the way).
                None => self.first_not_waiting(&waiting, redis, pg).await?,
            };
            let Some(busy) = busy else { return Ok(woken) };
            if self.lab_is_done() {
                return Ok(woken);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Explore(format!(
                    "{busy} neither sent a command nor waited in a server for {} s (exited, or waits on a timer the explorer does not control)",
                    STUCK_AFTER.as_secs()
                )));
            }
            if let Ok(Some(h)) = tokio::time::timeout(Duration::from_millis(1), announced.recv()).await {
                self.keep(h)?;
            }
        }
    }

    /// A process still on its way to its next command (if any), and the names of those that
    /// waited in a server with no answer yet; those whose answer came are added to `woken`.
    fn busy_and_waiting(
        &self,
        book: &mut Book,
        woken: &mut Vec<(Actor, Footprint)>,
    ) -> (Option<Actor>, Vec<(Actor, String, ServerKind)>) {
        let mut shared = self.shared();
        // Asked before the replies are looked at: a process that got its answer and then died
        // (killed after a receive) is both woken and gone.
        // One that died with a reply in flight at the interposer (written to it, not yet
        // recorded) is gone once that reply is recorded, or after EXIT_GRACE if it never is.
        let now = tokio::time::Instant::now();
        let exited: Vec<Actor> = shared
            .exits
            .iter()
            .filter(|(_, gone)| gone())
            .map(|(a, _)| *a)
            .filter(|a| {
                let steps = shared.actors[a].tap.steps();
                let seen = *book.exited_at.entry(*a).or_insert(now);
                steps.recorded >= steps.released || now.duration_since(seen) > EXIT_GRACE
            })
            .collect();
        let mut busy = None;
        let mut waiting = Vec::new();
        for (actor, slot) in &shared.actors {
            if shared.finished.contains(actor) || shared.dormant.contains_key(actor) {
                continue;
            }
            let steps = slot.tap.steps();
            if let Some(server) = book.blocked.get(actor).map(|s| s.server) {
                if steps.recorded >= steps.released {
                    let step = book.blocked.remove(actor).expect("just seen");
                    let reply = book.numbered(&steps.last_reply.clone().unwrap_or_default(), &step.keys);
                    book.timers.observe(&step.args, &step.keys, &reply);
                    woken.push((*actor, footprint::effect(step.server, &step.args, &step.keys, &reply)));
                } else if !exited.contains(actor) {
                    waiting.push((*actor, slot.client_name.clone(), server));
                    continue;
                }
            }
            let ready = steps.recorded >= steps.released && shared.held.contains_key(actor);
            if !ready && !exited.contains(actor) {
                busy = busy.or(Some(*actor));
            }
        }
        for a in exited {
            shared.exits.remove(&a);
            shared.held.remove(&a);
            shared.finished.insert(a);
            book.blocked.remove(&a);
            book.parked.remove(&a);
        }
        // A dormant process whose predecessor is done is started by the lab now: busy until
        // it holds its first command.
        let started: Vec<Actor> = shared
            .dormant
            .iter()
            .filter(|(_, w)| matches!(w, Wake::Done(after) if shared.finished.contains(after)))
            .map(|(a, _)| *a)
            .collect();
        for a in started {
            shared.dormant.remove(&a);
            busy = busy.or(Some(a));
        }
        (busy, waiting)
    }

    async fn first_not_waiting(
        &self,
        waiting: &[(Actor, String, ServerKind)],
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Result<Option<Actor>, Error> {
        for (actor, name, server) in waiting {
            if !waits_in_server(redis, pg, name, *server).await? {
                return Ok(Some(*actor));
            }
        }
        Ok(None)
    }

    /// Every process that holds a command, with what the command may touch.
    async fn candidates(
        &self,
        book: &mut Book,
        redis: &mut MultiplexedConnection,
        pg: &tokio_postgres::Client,
    ) -> Point {
        let held: Vec<(Actor, ServerKind, Vec<String>)> =
            self.shared().held.iter().map(|(a, h)| (*a, h.server, h.args.clone())).collect();
        let (idle_pollers, polls, kills, key_prefix) = {
            let shared = self.shared();
            (shared.idle_pollers.clone(), shared.polls.clone(), shared.kills.clone(), shared.timers.key_prefix.clone())
        };
        // Every poll's probe, held or not: which guards hold here.
        let mut probed: Vec<(Probe, bool)> = Vec::new();
        for (_, probe) in &polls {
            if !probed.iter().any(|(p, _)| p == probe) {
                let found = something_to_take(probe, &key_prefix, redis, pg).await;
                probed.push((probe.clone(), found));
            }
        }
        let mut point = Point::default();
        for (probe, found) in &probed {
            if *found {
                point.open.reads.extend(probe.guard().reads);
            }
        }
        let out = &mut point.enabled;
        for (actor, server, args) in held {
            let keys = match server {
                ServerKind::Redis => keys_of(book, redis, &args).await,
                ServerKind::Postgres => Vec::new(),
            };
            let numbered: Vec<String> = args.iter().map(|a| book.numbered(a, &keys)).collect();
            let mut fp = match server {
                ServerKind::Postgres if is_tx_end(&numbered) => {
                    book.tx.end_of(&actor).unwrap_or_else(|| footprint::postgres(&numbered))
                }
                ServerKind::Postgres => footprint::postgres(&numbered),
                ServerKind::Redis => footprint::redis(&numbered, &keys),
            };
            if server == ServerKind::Redis && keys.len() == 1 {
                if numbered[0].eq_ignore_ascii_case("XAUTOCLAIM") {
                    fp = book.timers.claim_footprint(&keys[0]);
                } else if numbered[0].eq_ignore_ascii_case("XREADGROUP") && numbered.last().is_some_and(|a| a == ">") {
                    fp = book.timers.read_new_footprint(&keys[0]);
                }
            }
            if server == ServerKind::Redis {
                fp = book.multi.view(&actor, &numbered, fp);
            }
            // The same command again after it changed nothing: a retry loop. It waits, parked,
            // until another process's step touches what it touches.
            let command = numbered.join(" ");
            let keeps_state = polls.iter().any(|(words, probe)| probe.keeps_state() && starts_with(&numbered, words));
            if !keeps_state && book.last.get(&actor).is_some_and(|(c, nothing)| *nothing && *c == command) {
                // A claimer's poll can succeed only after a timer step: it waits on that alone.
                let waits_on = match server {
                    ServerKind::Redis if numbered[0].eq_ignore_ascii_case("XAUTOCLAIM") => {
                        footprint::effect(server, &numbered, &keys, "(nil)")
                    }
                    _ => fp.clone(),
                };
                book.parked.entry(actor).or_insert(waits_on);
            }
            book.timers.asks_for_work(&numbered);
            book.seen.insert(actor, Step { server, args: numbered.clone(), keys: keys.clone() });
            let claim = server == ServerKind::Redis && numbered[0].eq_ignore_ascii_case("XAUTOCLAIM");
            if claim && idle_pollers.contains(&actor) && fp.writes.is_empty() {
                continue; // nothing idle to take: it waits for a timer step
            }
            if book.parked.contains_key(&actor) {
                continue;
            }
            let mut guard = Footprint::default();
            if let Some((_, probe)) = polls.iter().find(|(words, _)| starts_with(&numbered, words)) {
                guard = probe.guard();
                if !probed.iter().any(|(p, found)| p == probe && *found) {
                    book.idle.insert(actor);
                    let fp = lives(&kills, actor, &numbered, fp);
                    point.waiting.push(Candidate::new(actor, shape(&command), fp).guarded(guard));
                    continue; // nothing to take: it waits for work
                }
            }
            if claim && idle_pollers.contains(&actor) {
                guard = Footprint::of(vec![format!("r:{}#idle", keys[0])], vec![]);
            }
            book.idle.remove(&actor);
            let fp = lives(&kills, actor, &numbered, fp);
            point.open.reads.extend(guard.reads.iter().cloned());
            out.push(Candidate::new(actor, shape(&command), fp).guarded(guard));
        }
        if let Some(timer) = self.timer_candidate(book, redis).await {
            point.open.reads.extend(timer.guard.reads.iter().cloned());
            point.enabled.push(timer);
        }
        point
    }

    /// The next armed server timer, as a step of actor `N`.
    async fn timer_candidate(&self, book: &mut Book, redis: &mut MultiplexedConnection) -> Option<Candidate> {
        let (timers, finished) = {
            let shared = self.shared();
            (shared.timers.clone(), shared.finished.iter().map(|a| a.to_string()).collect::<BTreeSet<String>>())
        };
        book.timer = None;
        let working = timers.idle_when_all_wait && !self.all_wait(book);
        if !timers.any() || working && timers.leases_outlasted.is_empty() {
            return None;
        }
        let ids: HashMap<String, String> = book.ids.iter().map(|((_, id), ord)| (ord.clone(), id.clone())).collect();
        let id_of = |ord: &str| ids.get(ord).cloned();
        // A server that does not answer here fails the next step's own query, with its reason.
        let armed = book.timers.next(&timers, working, redis, id_of, |owner| finished.contains(owner)).await.ok()?;
        let timer = armed.or_else(|| if working { None } else { self.block_timeout(&timers, book) })?;
        let group = timers.idle_group.clone().unwrap_or_default();
        let command = shape(&timer.words(&group).join(" "));
        let (footprint, guard) = (timer.footprint(), timer.guard());
        book.timer = Some(timer);
        Some(Candidate::new(Actor::Runner, command, footprint).guarded(guard))
    }

    /// A process blocked in a read with a timeout (the one of lowest name first), as the timer
    /// that ends its wait; after every TTL and idle timer (no lab has both kinds).
    fn block_timeout(&self, timers: &Timers, book: &Book) -> Option<Timer> {
        if !timers.block_timeout {
            return None;
        }
        let shared = self.shared();
        let mut blocked: Vec<(&Actor, &Step)> = book.blocked.iter().collect();
        blocked.sort_by_key(|(a, _)| **a);
        blocked.into_iter().find_map(|(actor, step)| {
            let stream = super::timer::blocks_with_timeout(&step.args, &step.keys)?;
            let code = super::schedule::code(*actor);
            if !timers.polling_streams.is_empty() && !book.timers.may_time_out(&code, &step.args) {
                return None; // round its loop once since the last change: it waits for work
            }
            let client_name = shared.actors.get(actor)?.client_name.clone();
            Some(Timer::Unblock { actor: code, client_name, stream, polling: timers.polling_streams.clone() })
        })
    }

    /// Does every process wait for work: done, not started, blocked in a server, or a poller
    /// holding its poll?
    fn all_wait(&self, book: &Book) -> bool {
        let shared = self.shared();
        shared.actors.keys().all(|a| {
            let polls = || {
                shared.pollers.contains(a)
                    && book.seen.get(a).is_some_and(|s| s.args[0].eq_ignore_ascii_case("XAUTOCLAIM"))
            };
            shared.finished.contains(a)
                || shared.dormant.contains_key(a)
                || book.blocked.contains_key(a)
                || polls()
                || book.idle.contains(a)
        })
    }

    /// Take the timer step the strategy chose: the line it shows, what it touched, its reply.
    async fn fire_timer(
        &self,
        book: &mut Book,
        redis: &mut MultiplexedConnection,
    ) -> Result<(String, Footprint, String), Error> {
        let timer = book.timer.take().expect("a timer was offered");
        let ended = match &timer {
            Timer::Unblock { actor, .. } => {
                book.blocked.iter().find(|(a, _)| super::schedule::code(**a) == *actor).map(|(_, s)| s.args.clone())
            }
            _ => None,
        };
        book.timers.fired(&timer, ended.as_deref());
        let timers = self.shared().timers.clone();
        let words = timer.words(timers.idle_group.as_deref().unwrap_or_default());
        let (sent, reply) = super::timer::fire(&timer, &timers, redis)
            .await
            .map_err(|e| Error::Explore(format!("{}: {e}", words[0])))?;
        let kind = crate::timeline::EventKind::ServerCommand {
            server: ServerKind::Redis,
            connection: 0,
            args: sent,
            reply: reply.clone(),
            error: false,
            entries: Vec::new(),
            round_trip_us: None,
        };
        self.shared().events.push(RawEvent::now(Actor::Runner, kind));
        let line = format!("{} {}", super::schedule::code(Actor::Runner), words.join(" "));
        Ok((line, timer.footprint(), reply))
    }
}

/// `fp` of `actor`'s step `args` with what the planned kills make of it: a victim's step reads
/// its life, the step that kills it writes it.
fn lives(kills: &[Fault], actor: Actor, args: &[String], fp: Footprint) -> Footprint {
    let mut fp = fp;
    for k in kills {
        if victim(k) == actor {
            fp.reads.insert(footprint::Resource(life(k)));
        }
        if fires(k, actor, args) {
            fp.writes.insert(footprint::Resource(life(k)));
        }
    }
    fp
}

fn is_tx_end(args: &[String]) -> bool {
    footprint::transaction_word(args.first().map(String::as_str).unwrap_or("")) == Some(footprint::TxWord::End)
}

/// Follow `actor`'s PostgreSQL transaction through a step it takes; at its end (COMMIT,
/// ROLLBACK) what the end touched: what the transaction's statements wrote.
fn transaction_end(book: &mut Book, actor: Actor, step: &Step) -> Option<Footprint> {
    if step.server != ServerKind::Postgres {
        return None;
    }
    let fp = book.tx.step(actor, &step.args, footprint::postgres(&step.args));
    is_tx_end(&step.args).then_some(fp)
}

/// Can a poll find something now, by `probe` (keys under the run's `prefix`)? A server that
/// does not answer here fails the next step's own query, with its reason.
async fn something_to_take(
    probe: &Probe,
    prefix: &str,
    redis: &mut MultiplexedConnection,
    pg: &tokio_postgres::Client,
) -> bool {
    if let Probe::Rows { table, condition } = probe {
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE {condition})");
        return pg.query_one(&sql, &[]).await.map(|r| r.get::<_, bool>(0)).unwrap_or(true);
    }
    let found: redis::RedisResult<bool> = match probe {
        Probe::NonEmptyList(key) => {
            redis::cmd("LLEN").arg(format!("{prefix}{key}")).query_async::<i64>(redis).await.map(|n| n > 0)
        }
        Probe::DueMember(key) => redis::cmd("ZCOUNT")
            .arg(format!("{prefix}{key}"))
            .arg("-inf")
            .arg(0)
            .query_async::<i64>(redis)
            .await
            .map(|n| n > 0),
        Probe::Rows { .. } => unreachable!("asked of PostgreSQL above"),
    };
    found.unwrap_or(true)
}

/// The keys of a Redis command, as the server names them (`COMMAND GETKEYS`; none for a
/// command without keys).
async fn keys_of(book: &mut Book, redis: &mut MultiplexedConnection, args: &[String]) -> Vec<String> {
    let k = args.join(" ");
    if let Some(keys) = book.keys.get(&k) {
        return keys.clone();
    }
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("GETKEYS");
    for a in args {
        cmd.arg(a);
    }
    let keys: Vec<String> = cmd.query_async(redis).await.unwrap_or_default();
    book.keys.insert(k, keys.clone());
    keys
}

/// Can this step wait inside its server? Any SQL statement can wait for a lock; a Redis
/// command only if it is a blocking one (`BLPOP`, `XREADGROUP … BLOCK`, `WAIT`).
fn can_block(step: &Step) -> bool {
    if step.server == ServerKind::Postgres {
        return true;
    }
    let name = step.args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    match name.as_str() {
        "XREAD" | "XREADGROUP" => step.args.iter().any(|a| a.eq_ignore_ascii_case("BLOCK")),
        "BLPOP" | "BRPOP" | "BRPOPLPUSH" | "BLMOVE" | "BLMPOP" | "BZPOPMIN" | "BZPOPMAX" | "BZMPOP" | "WAIT"
        | "WAITAOF" => true,
        _ => false,
    }
}

/// Does the process named `name` wait inside `server` on its released step: blocked in Redis
/// (`CLIENT LIST` flag `b`), or waiting for a lock in PostgreSQL? (A step waits only in the
/// server it was sent to: the other is not asked.)
async fn waits_in_server(
    redis: &mut MultiplexedConnection,
    pg: &tokio_postgres::Client,
    name: &str,
    server: ServerKind,
) -> Result<bool, Error> {
    if server == ServerKind::Redis {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(redis)
            .await
            .map_err(|e| Error::Explore(format!("CLIENT LIST: {e}")))?;
        let needle = format!(" name={name} ");
        let blocked = |l: &str| l.split(' ').any(|kv| kv.strip_prefix("flags=").is_some_and(|f| f.contains('b')));
        return Ok(list.lines().any(|l| l.contains(&needle) && blocked(l)));
    }
    let rows = pg
        .query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", &[&name])
        .await
        .map_err(|e| Error::Explore(format!("pg_stat_activity: {e}")))?;
    Ok(!rows.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_ids_are_numbered_in_the_order_first_seen() {
        let mut book = super::Book::default();
        assert_eq!(book.numbered("1733059200123-0", &[]), "e1");
        assert_eq!(
            book.numbered("1 entry 1733059200124-0 order=42, 1733059200123-0 x", &[]),
            "1 entry e2 order=42, e1 x"
        );
        assert_eq!(book.numbered("XACK orders g 1733059200124-0 42 a-b 7-", &[]), "XACK orders g e2 42 a-b 7-");
        assert_eq!(book.numbered("C1-3a2db1 1-3x [1-5]", &[]), "C1-3a2db1 1-3x [e3]", "only whole words");
    }

    #[test]
    fn the_same_id_on_two_streams_is_two_entries() {
        let mut book = super::Book::default();
        let (a, b) = (["orders:0".to_string()], ["orders:1".to_string()]);
        assert_eq!(book.numbered("1733059200123-0", &a), "e1");
        assert_eq!(book.numbered("1733059200123-0", &b), "e2", "appended in the same millisecond");
        assert_eq!(book.numbered("1 entry 1733059200123-0 order=2", &b), "1 entry e2 order=2");
        assert_eq!(book.numbered("XACK orders:0 g 1733059200123-0", &a), "XACK orders:0 g e1");
        assert_eq!(book.numbered("$1 1733059200123-0", &[]), "$1 e1", "no stream: the first that has it");
    }

    #[test]
    fn a_planned_kill_is_a_write_its_victim_s_steps_read() {
        use super::{fires, kill_after_step, lives, Actor, Footprint};
        let s = |w: &[&str]| w.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let ack = s(&["EVALSHA", "9388"]);
        let kills = [kill_after_step(Actor::Worker(1), Actor::Worker(2), &ack)];
        let w2 = Actor::Worker(2);
        assert!(fires(&kills[0], w2, &s(&["evalsha", "9388", "2", "processing"])), "the name in any case");
        assert!(!fires(&kills[0], w2, &s(&["EVALSHA", "a6d3", "4"])) && !fires(&kills[0], w2, &s(&["EVALSHA"])));
        assert!(!fires(&kills[0], w2, &s(&["EVALSHA", "93880", "2"])), "a whole word");
        assert!(!fires(&kills[0], Actor::Worker(1), &s(&["EVALSHA", "9388", "2"])), "W2's step, not W1's");
        let none = Footprint::default();
        let w1_mail = lives(&kills, Actor::Worker(1), &s(&["SELECT 1"]), none.clone());
        let w2_ack = lives(&kills, Actor::Worker(2), &s(&["EVALSHA", "9388", "2"]), none.clone());
        let w2_take = lives(&kills, Actor::Worker(2), &s(&["EVALSHA", "a6d3", "4"]), none.clone());
        assert!(w1_mail.conflicts(&w2_ack), "W1's e-mail comes before the kill or never");
        assert!(!w1_mail.conflicts(&w2_take), "W2's take kills no one");
        assert_eq!(lives(&kills, Actor::Producer, &s(&["LPUSH", "q", "j"]), none.clone()), none);
    }

    #[test]
    fn a_command_s_shape_leaves_out_long_numbers_only() {
        assert_eq!(super::shape("UPDATE t SET v = $1 paid 179614212585800000 42"), "UPDATE t SET v = $1 paid # 42");
    }

    #[test]
    fn only_a_blocking_redis_command_or_sql_can_wait_in_its_server() {
        let step = |server, words: &str| super::Step {
            server,
            args: words.split(' ').map(str::to_string).collect(),
            keys: Vec::new(),
        };
        let (redis, pg) = (super::ServerKind::Redis, super::ServerKind::Postgres);
        assert!(super::can_block(&step(redis, "XREADGROUP GROUP g C1 COUNT 1 BLOCK 0 STREAMS orders >")));
        assert!(super::can_block(&step(redis, "blpop jobs 0")));
        assert!(!super::can_block(&step(redis, "XREADGROUP GROUP g C1 COUNT 1 STREAMS orders >")), "a poll");
        assert!(!super::can_block(&step(redis, "SET lock C1 NX PX 1000")));
        assert!(super::can_block(&step(pg, "UPDATE ordlab.orders SET status = $1")), "a lock wait");
    }

    #[test]
    fn application_name_is_added_to_a_url() {
        assert_eq!(super::with_application_name("postgresql://u@h/db", "x"), "postgresql://u@h/db?application_name=x");
        assert_eq!(
            super::with_application_name("postgresql://u@h/db?a=1", "x"),
            "postgresql://u@h/db?a=1&application_name=x"
        );
    }
}
