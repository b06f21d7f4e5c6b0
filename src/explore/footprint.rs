//! What a step reads and writes on the servers, so the explorer knows which steps commute: two
//! steps of different processes that touch disjoint resources (or only read the same ones) give
//! the same state and the same replies in either order, and count as one schedule.
//!
//! This module is the explorer's dependence relation, stated once: two steps of different
//! processes are dependent (their order can matter) exactly when their footprints conflict
//! ([`Footprint::conflicts`]: one writes what the other reads or writes); a process orders its
//! own steps, and a step that woke a waiting process is part of that process's order
//! ([`crate::explore::search::Event::depends`]). The search, the reduction and the classes all
//! use this and nothing else. What a step's footprint is:
//!
//! - A resource is a Redis key or a part of a stream key (its entries, a group's cursor, a
//!   group's pending list) or of a sorted set (one member: a lease), or a PostgreSQL table or
//!   one row of it (`WHERE id = $n`), or the row locks of a table or row (`pg:lock:…`: a
//!   `SELECT … FOR UPDATE` reads the rows and takes their locks, a write takes its rows' locks
//!   too, a plain read never looks at locks); a list is one resource (its order is its state).
//!   Reads of the same resource commute.
//! - Before a step runs its footprint is what the command may do (conservative: a write
//!   command writes every key it names); after it ran, a reply that says nothing changed
//!   (`(nil)`, `0`, `UPDATE 0`) makes it a read ([`effect`]).
//! - A script (`EVAL`, `EVALSHA`, `FCALL`) is one step that writes every key it declares;
//!   `MULTI` … `EXEC` is one step, at `EXEC`, touching what the queued commands touch; `WATCH`
//!   reads its keys, and the `EXEC` after it reads them again (a write in between makes it
//!   fail), so `WATCH` depends on writes to its keys and on nothing else.
//! - A PostgreSQL transaction's `COMMIT` or `ROLLBACK` touches what its statements wrote
//!   ([`Transactions`]); a bare `BEGIN` nothing.
//! - A step that waits inside its server (a blocked `XREADGROUP … BLOCK`, `BRPOP`, a row lock
//!   wait) read what it waits on; the step that answers it carries what the answer did. It
//!   also joined the queue of clients waiting there ([`waiting_queue`]), which the server
//!   serves first come, first served; whether that order matters depends on whether an answer
//!   comes, so it is not part of the relation (two waits nobody answers commute, as before),
//!   and the search uses it only to wake a sleeping process that waits on the same key.

use crate::timeline::ServerKind;
use std::collections::BTreeSet;

/// One thing a step touches: `r:orders`, `r:orders#entries`, `pg:ordlab.orders`,
/// `pg:ordlab.orders#42`; `pg:*` stands for every table (transaction control, unknown SQL).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource(pub String);

impl Resource {
    /// Two resources overlap when equal, or when one is the whole of which the other is a part
    /// (a key and its entries, a table and its row, `pg:*` and any table).
    pub fn overlaps(&self, other: &Resource) -> bool {
        let (a, b) = (self.0.as_str(), other.0.as_str());
        if a == b {
            return true;
        }
        let whole = |w: &str, part: &str| part.strip_prefix(w).is_some_and(|rest| rest.starts_with('#'));
        let everything = |w: &str, x: &str| w == "pg:*" && x.starts_with("pg:");
        whole(a, b) || whole(b, a) || everything(a, b) || everything(b, a) || rows_by_other_keys(a, b)
    }
}

/// Two rows of one table named by different key columns (`pg:t#42`, its `id`, and
/// `pg:t#order_id=job-1`) may be the same row.
fn rows_by_other_keys(a: &str, b: &str) -> bool {
    let row = |r: &str| {
        let (table, key) = r.strip_prefix("pg:")?.split_once('#')?;
        Some((table.to_string(), key.split_once('=').map_or("id", |(column, _)| column).to_string()))
    };
    matches!((row(a), row(b)), (Some((ta, ca)), Some((tb, cb))) if ta == tb && ca != cb)
}

/// What a step reads and what it writes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Footprint {
    pub reads: BTreeSet<Resource>,
    pub writes: BTreeSet<Resource>,
}

impl Footprint {
    /// Two steps conflict (their order can matter) when one writes what the other touches.
    pub fn conflicts(&self, other: &Footprint) -> bool {
        let hits = |a: &BTreeSet<Resource>, b: &BTreeSet<Resource>| a.iter().any(|x| b.iter().any(|y| x.overlaps(y)));
        hits(&self.writes, &other.writes) || hits(&self.writes, &other.reads) || hits(&self.reads, &other.writes)
    }

    /// The same step once it ran and changed nothing: everything it touched, read only.
    pub fn read_only(&self) -> Footprint {
        let reads = self.reads.iter().chain(&self.writes).cloned().collect();
        Footprint { reads, writes: BTreeSet::new() }
    }

    /// A footprint from its resources' names.
    pub fn of(reads: Vec<String>, writes: Vec<String>) -> Footprint {
        let set = |v: Vec<String>| v.into_iter().map(Resource).collect();
        Footprint { reads: set(reads), writes: set(writes) }
    }

    fn read(mut self, r: String) -> Footprint {
        self.reads.insert(Resource(r));
        self
    }

    fn write(mut self, r: String) -> Footprint {
        self.writes.insert(Resource(r));
        self
    }
}

/// The footprint of a Redis command before it runs; `keys` are its keys as the server named
/// them (`COMMAND GETKEYS`).
pub fn redis(args: &[String], keys: &[String]) -> Footprint {
    let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    let mut fp = Footprint::default();
    for k in keys {
        let key = format!("r:{k}");
        fp = match name.as_str() {
            // Appends entries (and wakes readers, who then write the group's cursor).
            "XADD" => fp.write(format!("{key}#entries")),
            // `>` takes new entries: moves the group's cursor, adds to the pending list.
            "XREADGROUP" | "XREAD" => {
                fp.read(format!("{key}#entries")).write(format!("{key}#cursor")).write(format!("{key}#pending"))
            }
            // Acknowledging entry e1 touches e1's place in the pending list only.
            "XACK" => {
                let ids: Vec<&String> = args.iter().skip(3).filter(|a| is_ordinal(a)).collect();
                if ids.len() + 3 == args.len() && !ids.is_empty() {
                    ids.iter().fold(fp, |fp, e| fp.write(format!("{key}#pending#{e}")))
                } else {
                    fp.write(format!("{key}#pending"))
                }
            }
            "XCLAIM" => fp.read(format!("{key}#entries")).write(format!("{key}#pending")),
            // Under the explorer an entry is idle enough only once a timer step made it so
            // (`#idle`, see `explore::timer`).
            "XAUTOCLAIM" => {
                fp.read(format!("{key}#entries")).read(format!("{key}#idle")).write(format!("{key}#pending"))
            }
            // `XPENDING key group e1 e1 1`: one entry's place only.
            "XPENDING" => match (args.get(3), args.get(4)) {
                (Some(a), Some(b)) if a == b && is_ordinal(a) => fp.read(format!("{key}#pending#{a}")),
                _ => fp.read(format!("{key}#pending")),
            },
            "XRANGE" | "XREVRANGE" | "XLEN" => fp.read(format!("{key}#entries")),
            // A list's pushes, pops, moves and LREM write the whole list: its order is its
            // state (LREM 1 removes the first equal entry from the head, so even a push of
            // another value changes which one goes), and a pop of either end can reach any
            // entry. A move writes both of its lists (they are both among `keys`).
            "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" | "LPOP" | "RPOP" | "BLPOP" | "BRPOP" | "LMOVE" | "BLMOVE"
            | "RPOPLPUSH" | "BRPOPLPUSH" | "LREM" => fp.write(key),
            // A sorted set's member (a lease: the entry it is for, scored by its deadline):
            // adding, re-scoring or removing one member touches that member only; ranges and
            // counts read the whole set, so they meet every member.
            "ZADD" => zadd_members(args).fold(fp, |fp, m| fp.write(format!("{key}#m:{m}"))),
            "ZREM" => args.iter().skip(2).fold(fp, |fp, m| fp.write(format!("{key}#m:{m}"))),
            "ZSCORE" if args.len() == 3 => fp.read(format!("{key}#m:{}", args[2])),
            n if READ_ONLY.contains(&n) => fp.read(key),
            _ => fp.write(key),
        };
    }
    fp
}

/// The members of `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …]`.
fn zadd_members(args: &[String]) -> impl Iterator<Item = &String> {
    const OPTIONS: &[&str] = &["NX", "XX", "GT", "LT", "CH", "INCR"];
    let pairs = args.iter().skip(2).skip_while(|a| OPTIONS.contains(&a.to_ascii_uppercase().as_str()));
    pairs.skip(1).step_by(2)
}

/// What a step did, once its reply is in: a stream read that got nothing read the entries and
/// the cursor only; one that got entries took those (`#pending#e1`, not the whole pending
/// list); any other step whose reply says nothing changed was a read; the rest did what
/// [`redis`] or [`postgres`] said it may. Entry IDs are the run's ordinals (`e1`, `e2`).
pub fn effect(server: ServerKind, args: &[String], keys: &[String], reply: &str) -> Footprint {
    let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    if server == ServerKind::Redis && matches!(name.as_str(), "XREADGROUP" | "XREAD") {
        let delivered: Vec<&str> = ordinals(reply).collect();
        let mut fp = Footprint::default();
        for k in keys {
            fp = fp.read(format!("r:{k}#entries"));
            if delivered.is_empty() {
                fp = fp.read(format!("r:{k}#cursor"));
            } else {
                fp = fp.write(format!("r:{k}#cursor"));
                for e in &delivered {
                    fp = fp.write(format!("r:{k}#pending#{e}"));
                }
            }
        }
        return fp;
    }
    if server == ServerKind::Redis && name == "XAUTOCLAIM" {
        // It read whether a timer step made an entry idle, and took the entries it names.
        let claimed: Vec<&str> = ordinals(reply).collect();
        let mut fp = Footprint::default();
        for k in keys {
            fp = fp.read(format!("r:{k}#idle"));
            for e in &claimed {
                fp = fp.write(format!("r:{k}#pending#{e}"));
            }
        }
        return fp;
    }
    let before = match server {
        ServerKind::Redis => redis(args, keys),
        ServerKind::Postgres => postgres(args),
    };
    if changed_nothing(server, args, reply) {
        before.read_only()
    } else {
        before
    }
}

/// The queue of clients a step that waits inside its server joined: one per key (or row) it
/// waits on (`r:jobs#waiters`). The server answers them first come, first served (a push wakes
/// the first taker blocked on the list), so two waits on one key may be answered in either
/// order depending on which came first.
pub fn waiting_queue(server: ServerKind, args: &[String], keys: &[String]) -> Footprint {
    let queues: Vec<String> = match server {
        ServerKind::Redis => keys.iter().map(|k| format!("r:{k}#waiters")).collect(),
        ServerKind::Postgres => {
            // A statement waits for row locks: their queue (a statement that takes none waits
            // on what it reads).
            let fp = postgres(args);
            let locks: Vec<&Resource> = fp.writes.iter().filter(|r| r.0.starts_with("pg:lock:")).collect();
            match locks.is_empty() {
                true => fp.read_only().reads.iter().map(|r| format!("{}#waiters", r.0)).collect(),
                false => locks.iter().map(|r| format!("{}#waiters", r.0)).collect(),
            }
        }
    };
    Footprint::of(vec![], queues)
}

/// The entries a numbered reply names (`1 entry e1 order=42, e2 …` → `e1`, `e2`).
pub fn ordinals(reply: &str) -> impl Iterator<Item = &str> {
    reply.split([' ', ',']).filter(|w| is_ordinal(w))
}

/// `e7`: an entry ID as the explorer numbers them in a run (first seen, first numbered).
pub fn is_ordinal(w: &str) -> bool {
    w.strip_prefix('e').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Redis commands that never change a key (the rest are taken to write every key they name).
const READ_ONLY: &[&str] = &[
    "GET",
    "MGET",
    "EXISTS",
    "TTL",
    "PTTL",
    "TYPE",
    "STRLEN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "LPOS",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "HGET",
    "HGETALL",
    "HMGET",
    "HEXISTS",
    "HLEN",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZSCORE",
    "ZCARD",
    "ZRANK",
    "ZCOUNT",
    "XINFO",
    // It only marks its keys for the EXEC that follows (which reads them again).
    "WATCH",
];

/// The footprint of a PostgreSQL statement (`[sql, params…]`) before it runs: the tables it
/// names, or one row where it says `WHERE id = $n`; an advisory lock function its key
/// (`pg:advisory#42`); a bare `BEGIN` nothing; other transaction control (and a batch of
/// several statements) everything. A transaction's COMMIT or ROLLBACK is what the
/// transaction touched ([`Transactions`]).
pub fn postgres(args: &[String]) -> Footprint {
    let sql = args.first().map(String::as_str).unwrap_or("");
    if transaction_word(sql) == Some(TxWord::Begin) {
        return Footprint::default();
    }
    let fp = statement(sql, args);
    match advisory_keys(sql, &args[1.min(args.len())..]) {
        Some(keys) => keys.into_iter().fold(fp, |fp, k| fp.write(k)),
        None => fp,
    }
}

/// The tables (or the row) one statement reads or writes.
fn statement(sql: &str, args: &[String]) -> Footprint {
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == '(' || c == ',' || c == ';')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let first = words.first().map(|w| w.to_ascii_uppercase()).unwrap_or_default();
    let upper = sql.to_ascii_uppercase();
    let locking_read =
        ["FOR UPDATE", "FOR SHARE", "FOR NO KEY UPDATE", "FOR KEY SHARE"].iter().any(|w| upper.contains(w));
    // A locking clause after anything but a plain SELECT (`WITH …`) may sit beside a write.
    let writes = matches!(first.as_str(), "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "TRUNCATE")
        || locking_read && first != "SELECT";
    let locks = writes || locking_read;
    let tables = tables_of(&words);
    if first != "SELECT" && (!writes || tables.is_empty()) {
        return Footprint::default().write("pg:*".into());
    }
    let params = args.get(1..).unwrap_or_default();
    let row = row_of(sql, params).or_else(|| inserted_row(sql, params));
    let mut fp = Footprint::default();
    for t in tables {
        let at = |what: &str| match &row {
            Some(id) => format!("pg:{what}{t}#{id}"),
            None => format!("pg:{what}{t}"),
        };
        fp = if writes { fp.write(at("")) } else { fp.read(at("")) };
        if locks {
            fp = fp.write(at(LOCKS));
        }
    }
    fp
}

/// The prefix of a table's row locks as a resource (`pg:lock:ordlab.outbox#3`): a locking
/// read (`SELECT … FOR UPDATE`, `SKIP LOCKED`) reads the rows and takes their locks, which a
/// plain read never looks at (under MVCC it sees the last committed versions, locked or not),
/// so the two commute; a write takes the locks of the rows it writes as well.
const LOCKS: &str = "lock:";

/// What a bare transaction-control statement does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxWord {
    /// `BEGIN`, `START TRANSACTION` (READ COMMITTED, the server's default).
    Begin,
    /// `COMMIT`, `END`, `ROLLBACK`, `ABORT`.
    End,
}

/// `sql` as one transaction-control statement (a trailing `;` allowed), or None: a batch of
/// several statements, or a BEGIN at another isolation level, is not one.
pub fn transaction_word(sql: &str) -> Option<TxWord> {
    let one = sql.trim().trim_end_matches(';').trim().to_ascii_uppercase();
    if one.contains(';') {
        return None;
    }
    let words: Vec<&str> = one.split_whitespace().collect();
    match words.as_slice() {
        ["BEGIN"] | ["BEGIN", "TRANSACTION" | "WORK"] | ["START", "TRANSACTION"] => Some(TxWord::Begin),
        ["BEGIN" | "START", .., "READ", "COMMITTED"] => Some(TxWord::Begin),
        ["COMMIT" | "END" | "ROLLBACK" | "ABORT"]
        | ["COMMIT" | "END" | "ROLLBACK" | "ABORT", "TRANSACTION" | "WORK"] => Some(TxWord::End),
        _ => None,
    }
}

/// Each session's open transaction, as the explorer follows it. Under READ COMMITTED a
/// `BEGIN` changes nothing another session can see and depends on nothing: it commutes with
/// every step. What a statement inside the transaction writes it also writes at COMMIT or
/// ROLLBACK (the new row versions become visible, its row and advisory locks are released),
/// so the transaction's end is the union of what its statements wrote: it conflicts with
/// every step that touches those, and with nothing else. (Reads need not be in it: under
/// READ COMMITTED a COMMIT cannot fail on what others wrote since.) A transaction's end the
/// explorer did not see begin touches everything, as any statement it cannot read.
#[derive(Debug)]
pub struct Transactions<K> {
    open: std::collections::HashMap<K, BTreeSet<Resource>>,
}

impl<K> Default for Transactions<K> {
    fn default() -> Self {
        Transactions { open: std::collections::HashMap::new() }
    }
}

impl<K: std::hash::Hash + Eq> Transactions<K> {
    /// The footprint of `args`, about to run in session `who`, whose footprint on its own is
    /// `fp` ([`postgres`]); a statement inside a transaction adds what it writes to the
    /// transaction's end.
    pub fn step(&mut self, who: K, args: &[String], fp: Footprint) -> Footprint {
        match transaction_word(args.first().map(String::as_str).unwrap_or("")) {
            Some(TxWord::Begin) => {
                self.open.insert(who, BTreeSet::new());
                fp
            }
            Some(TxWord::End) => match self.open.remove(&who) {
                Some(writes) => Footprint { reads: BTreeSet::new(), writes },
                None => Footprint::default().write("pg:*".into()),
            },
            None => {
                if let Some(acc) = self.open.get_mut(&who) {
                    acc.extend(fp.writes.iter().cloned());
                }
                fp
            }
        }
    }

    /// What the end of `who`'s open transaction would touch now (for a step not taken yet).
    pub fn end_of(&self, who: &K) -> Option<Footprint> {
        self.open.get(who).map(|w| Footprint { reads: BTreeSet::new(), writes: w.clone() })
    }
}

/// Each Redis client's `MULTI` … `EXEC` and the keys it `WATCH`es, as the explorer follows
/// them: a queued command touches nothing when it is sent (the server answers `QUEUED`);
/// `EXEC` does what they all do at once, and reads the keys watched (a write to one since
/// `WATCH` makes it fail, and then it changed nothing); `DISCARD` touches nothing.
#[derive(Debug)]
pub struct RedisTransactions<K> {
    open: std::collections::HashMap<K, Footprint>,
    watched: std::collections::HashMap<K, BTreeSet<Resource>>,
}

impl<K> Default for RedisTransactions<K> {
    fn default() -> Self {
        RedisTransactions { open: Default::default(), watched: Default::default() }
    }
}

impl<K: std::hash::Hash + Eq + Clone> RedisTransactions<K> {
    /// What `args` (on its own: `fp`), which `who` is about to send, may touch.
    pub fn view(&self, who: &K, args: &[String], fp: Footprint) -> Footprint {
        let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
        match (name.as_str(), self.open.get(who)) {
            ("MULTI" | "DISCARD", _) => Footprint::default(),
            ("EXEC", Some(queued)) => self.at_exec(who, queued.clone()),
            (_, Some(_)) => Footprint::default(),
            (_, None) => fp,
        }
    }

    /// `who` sent `args` (on its own: `fp`) and got `reply`: what the step touched.
    pub fn step(&mut self, who: K, args: &[String], fp: Footprint, reply: &str) -> Footprint {
        let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
        match name.as_str() {
            "MULTI" => {
                self.open.insert(who, Footprint::default());
                Footprint::default()
            }
            "EXEC" => {
                let queued = self.open.remove(&who).unwrap_or_default();
                let all = self.at_exec(&who, queued);
                self.watched.remove(&who);
                if reply == "(nil)" {
                    all.read_only()
                } else {
                    all
                }
            }
            "DISCARD" => {
                self.open.remove(&who);
                self.watched.remove(&who);
                Footprint::default()
            }
            "UNWATCH" => {
                self.watched.remove(&who);
                fp
            }
            "WATCH" => {
                self.watched.entry(who).or_default().extend(fp.reads.iter().cloned());
                fp
            }
            _ => match self.open.get_mut(&who) {
                Some(queued) => {
                    queued.reads.extend(fp.reads);
                    queued.writes.extend(fp.writes);
                    Footprint::default()
                }
                None => fp,
            },
        }
    }

    fn at_exec(&self, who: &K, queued: Footprint) -> Footprint {
        let mut all = queued;
        all.reads.extend(self.watched.get(who).into_iter().flatten().cloned());
        all
    }
}

/// The keys an advisory lock function takes or releases (`pg:advisory#42`, `pg:advisory#1,2`
/// for the two-key form; `pg_advisory_unlock_all` every key, `pg:advisory`); None when the
/// statement calls none. A key that is not a literal or a parameter is every key.
fn advisory_keys(sql: &str, params: &[String]) -> Option<Vec<String>> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("pg_advisory") && !lower.contains("pg_try_advisory") {
        return None;
    }
    let mut keys = Vec::new();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("advisory_") {
        rest = &rest[at..];
        let name_end = rest.find('(').unwrap_or(rest.len());
        let name = &rest[..name_end];
        let after = &rest[name_end..];
        let close = after.find(')').unwrap_or(after.len());
        let inside = after.get(1..close).unwrap_or("");
        rest = &after[close.min(after.len())..];
        if name.ends_with("unlock_all") {
            keys.push("pg:advisory".to_string());
            continue;
        }
        let mut parts = Vec::new();
        for arg in inside.split(',').map(str::trim) {
            let value = match arg.strip_prefix('$') {
                Some(n) => n.parse::<usize>().ok().and_then(|n| params.get(n.checked_sub(1)?)).cloned(),
                None if !arg.is_empty() && arg.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) => {
                    Some(arg.to_string())
                }
                None => None,
            };
            match value {
                Some(v) => parts.push(v),
                None => {
                    parts.clear();
                    keys.push("pg:advisory".to_string());
                    break;
                }
            }
        }
        if !parts.is_empty() {
            keys.push(format!("pg:advisory#{}", parts.join(",")));
        }
    }
    if keys.is_empty() {
        keys.push("pg:advisory".to_string());
    }
    Some(keys)
}

/// Names after FROM, UPDATE (not `FOR UPDATE`), INTO, JOIN (lower-cased, quotes dropped).
fn tables_of(words: &[String]) -> Vec<String> {
    let mut tables = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        // `FOR UPDATE OF o` is a row lock, not a table named `of`.
        let row_lock = i > 0 && words[i - 1].eq_ignore_ascii_case("FOR");
        if !row_lock && matches!(pair[0].to_ascii_uppercase().as_str(), "FROM" | "UPDATE" | "INTO" | "JOIN") {
            let t = pair[1].trim_matches('"').to_ascii_lowercase();
            if !t.is_empty() && !t.starts_with('$') && !tables.contains(&t) {
                tables.push(t);
            }
        }
    }
    tables
}

/// The row a statement is about, where it says `WHERE id = $n` (or `id = 42`) and nothing
/// that could reach other rows (`OR`).
fn row_of(sql: &str, params: &[String]) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let (_, after) = lower.split_once(" where ")?;
    if after.contains(" or ") {
        return None;
    }
    let at = after.find("id = ").or_else(|| after.find("id="))?;
    if at > 0 && (after.as_bytes()[at - 1].is_ascii_alphanumeric() || after.as_bytes()[at - 1] == b'_') {
        return None;
    }
    let value: String = after[at..]
        .trim_start_matches("id")
        .trim_start()
        .trim_start_matches('=')
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '$')
        .collect();
    match value.strip_prefix('$') {
        Some(n) => params.get(n.parse::<usize>().ok()?.checked_sub(1)?).cloned(),
        None if !value.is_empty() && value.chars().all(|c| c.is_ascii_digit()) => Some(value),
        None => None,
    }
}

/// The row a one-row `INSERT INTO t (c1, c2) VALUES ($1, …) ON CONFLICT (c1) …` is about: the
/// value of its conflict key, which decides whether it inserts, updates or does nothing
/// (`42` for the column `id`, as [`row_of`] names rows, else `order_id=job-1`).
fn inserted_row(sql: &str, params: &[String]) -> Option<String> {
    let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = flat.to_ascii_lowercase();
    let rest = lower.strip_prefix("insert into ")?;
    let columns = inside_parens(&rest[rest.find('(')?..])?;
    let columns: Vec<&str> = columns.split(',').map(str::trim).collect();
    let values_at = lower.find(" values ")? + " values ".len();
    let values = inside_parens(&flat[values_at..])?;
    let after_values = flat[values_at..].trim_start()[values.len() + 2..].trim_start();
    if after_values.starts_with(',') {
        return None; // several rows
    }
    let target = inside_parens(&lower[lower.find(" on conflict ")? + " on conflict ".len()..])?.trim();
    if target.contains(',') {
        return None;
    }
    let value = split_top_level(values).get(columns.iter().position(|c| *c == target)?)?.trim().to_string();
    let value = match value.strip_prefix('$') {
        Some(n) => params.get(n.parse::<usize>().ok()?.checked_sub(1)?)?.clone(),
        None if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') => {
            value[1..value.len() - 1].to_string()
        }
        None if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => value,
        None => return None,
    };
    Some(if target == "id" { value } else { format!("{target}={value}") })
}

/// What is inside the parentheses `text` starts with (after spaces), nested ones kept.
fn inside_parens(text: &str) -> Option<&str> {
    let text = text.trim_start().strip_prefix('(')?;
    let mut depth = 1;
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' if depth == 1 => return Some(&text[..i]),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `$1, NOW(), 'a'` → its items, commas inside parentheses kept.
fn split_top_level(list: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, ch) in list.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// Did the step change nothing, by its reply? A read that got nothing, a conditional write
/// that did not happen, a delete of nothing.
pub fn changed_nothing(server: ServerKind, args: &[String], reply: &str) -> bool {
    match server {
        ServerKind::Redis => {
            let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
            match name.as_str() {
                "XREADGROUP" | "XREAD" | "BLMOVE" | "LMOVE" | "BRPOPLPUSH" | "RPOPLPUSH" | "LPOP" | "RPOP"
                | "BLPOP" | "BRPOP" | "BZPOPMAX" | "BZPOPMIN" | "ZPOPMAX" | "ZPOPMIN" | "XAUTOCLAIM" | "XCLAIM" => {
                    reply == "(nil)" || reply == "[]"
                }
                "SET" => reply == "(nil)",
                "DEL" | "UNLINK" | "XACK" | "LREM" | "SREM" | "ZREM" | "HDEL" | "XDEL" => reply == "0",
                _ => false,
            }
        }
        ServerKind::Postgres => {
            let sql = args.first().map(|s| s.to_ascii_lowercase()).unwrap_or_default();
            // `SELECT 1` says nothing of whether an advisory lock was taken.
            if sql.contains("advisory_") {
                return false;
            }
            matches!(reply, "UPDATE 0" | "DELETE 0" | "INSERT 0 0" | "SELECT 0")
                || reply.starts_with("SELECT ")
                    && !args.first().is_some_and(|s| s.to_ascii_uppercase().contains("FOR "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a statement writes but row locks (which every write takes as well).
    fn data_writes(fp: &Footprint) -> Vec<&str> {
        fp.writes.iter().map(|r| r.0.as_str()).filter(|r| !r.starts_with("pg:lock:")).collect()
    }

    fn s(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn stream_steps_conflict_only_where_they_meet() {
        let xadd = redis(&s(&["XADD", "orders", "*", "type", "paid"]), &s(&["orders"]));
        let read =
            redis(&s(&["XREADGROUP", "GROUP", "g", "C1", "COUNT", "1", "STREAMS", "orders", ">"]), &s(&["orders"]));
        let ack = redis(&s(&["XACK", "orders", "g", "1-0"]), &s(&["orders"]));
        let other = redis(&s(&["XADD", "other", "*"]), &s(&["other"]));
        assert!(xadd.conflicts(&read), "a new entry changes what a read gets");
        assert!(read.conflicts(&read.clone()), "two reads of new entries split them");
        assert!(!xadd.conflicts(&ack), "appending and acknowledging commute");
        assert!(read.conflicts(&ack), "a read about to run may take what the ack touches");
        assert!(!xadd.conflicts(&other), "different keys commute");
        // A read that got nothing moved no cursor: it commutes with another empty read and an ack.
        let empty = effect(
            ServerKind::Redis,
            &s(&["XREADGROUP", "GROUP", "g", "C1", "STREAMS", "orders", ">"]),
            &s(&["orders"]),
            "(nil)",
        );
        assert!(!empty.conflicts(&empty.clone()));
        assert!(!empty.conflicts(&ack));
        assert!(empty.conflicts(&xadd));
    }

    #[test]
    fn a_claim_and_a_pending_look_touch_their_entry_only() {
        let keys = s(&["orders"]);
        let claim = s(&["XAUTOCLAIM", "orders", "g", "reaper", "#", "0-0", "COUNT", "1"]);
        let took_e1 = effect(ServerKind::Redis, &claim, &keys, "1 entry e1 order=42");
        let look_e1 = redis(&s(&["XPENDING", "orders", "g", "e1", "e1", "1"]), &keys);
        let ack_e2 = redis(&s(&["XACK", "orders", "g", "e2"]), &keys);
        let read = redis(&s(&["XREADGROUP", "GROUP", "g", "C2", "STREAMS", "orders", ">"]), &keys);
        let read_e2 = effect(
            ServerKind::Redis,
            &s(&["XREADGROUP", "GROUP", "g", "C2", "STREAMS", "orders", ">"]),
            &keys,
            "1 entry e2 x",
        );
        assert!(took_e1.conflicts(&look_e1), "the look at e1 sees who owns it");
        assert!(!took_e1.conflicts(&ack_e2) && !look_e1.conflicts(&ack_e2), "another entry's ack commutes");
        assert!(!took_e1.conflicts(&read_e2) && !look_e1.conflicts(&read_e2), "a read that took e2 commutes");
        assert!(look_e1.conflicts(&read), "a read about to run may take e1");
    }

    #[test]
    fn a_read_that_ran_touches_only_what_it_took() {
        let r = ServerKind::Redis;
        let read = s(&["XREADGROUP", "GROUP", "g", "C1", "COUNT", "1", "STREAMS", "orders", ">"]);
        let keys = s(&["orders"]);
        let took = effect(r, &read, &keys, "1 entry e1 order=42 type=created version=1");
        let ack = |e: &str| redis(&s(&["XACK", "orders", "g", e]), &keys);
        assert!(took.conflicts(&ack("e1")), "acknowledging the entry it took");
        assert!(!took.conflicts(&ack("e2")), "acknowledging another entry commutes");
        let got_nothing = effect(r, &read, &keys, "(nil)");
        assert!(!got_nothing.conflicts(&ack("e2")));
        assert!(got_nothing.conflicts(&took), "another read moved the cursor it read");
        assert!(!got_nothing.conflicts(&got_nothing.clone()));
        let set_nx = s(&["SET", "lock", "C1", "NX", "PX", "5000"]);
        assert!(effect(r, &set_nx, &s(&["lock"]), "(nil)").writes.is_empty());
        assert!(!effect(r, &set_nx, &s(&["lock"]), "OK").writes.is_empty());
    }

    #[test]
    fn list_steps_write_their_lists_and_a_lease_touches_its_member_only() {
        let r = ServerKind::Redis;
        let push = redis(&s(&["LPUSH", "queue", "job"]), &s(&["queue"]));
        let pop = redis(&s(&["BRPOP", "queue", "0"]), &s(&["queue"]));
        let take = redis(&s(&["BLMOVE", "queue", "processing", "RIGHT", "LEFT", "0"]), &s(&["queue", "processing"]));
        let lmove = redis(&s(&["LMOVE", "queue", "processing", "RIGHT", "LEFT"]), &s(&["queue", "processing"]));
        let lrem = redis(&s(&["LREM", "processing", "1", "job"]), &s(&["processing"]));
        let rpush_retry = redis(&s(&["RPUSH", "queue:retry", "job"]), &s(&["queue:retry"]));
        assert!(push.conflicts(&pop) && push.conflicts(&take), "a push changes what a take gets");
        assert!(take.conflicts(&lrem) && lmove.conflicts(&lrem), "a move into processing meets an LREM of it");
        assert!(!pop.conflicts(&lrem), "BRPOP never touches processing");
        assert!(!rpush_retry.conflicts(&lrem) && !rpush_retry.conflicts(&push), "other lists commute");
        let got_nothing = effect(r, &s(&["BRPOP", "queue", "0"]), &s(&["queue"]), "(nil)");
        assert!(got_nothing.writes.is_empty() && got_nothing.conflicts(&push));
        assert!(effect(r, &s(&["LREM", "processing", "1", "job"]), &s(&["processing"]), "0").writes.is_empty());
        let lease = |m: &str| redis(&s(&["ZADD", "leases", "XX", "0", m]), &s(&["leases"]));
        let zrem = |m: &str| redis(&s(&["ZREM", "leases", m]), &s(&["leases"]));
        let due = redis(&s(&["ZRANGEBYSCORE", "leases", "-inf", "42"]), &s(&["leases"]));
        assert!(lease("a").conflicts(&zrem("a")), "the same lease");
        assert!(!lease("a").conflicts(&zrem("b")), "another entry's lease commutes");
        assert!(lease("b").conflicts(&due) && zrem("a").conflicts(&due), "a range reads every member");
        assert!(!due.conflicts(&due.clone()), "two looks commute");
        let score = redis(&s(&["ZSCORE", "leases", "a"]), &s(&["leases"]));
        assert!(score.writes.is_empty() && score.conflicts(&lease("a")) && !score.conflicts(&lease("b")));
        let two = redis(&s(&["ZADD", "leases", "NX", "CH", "1", "a", "2", "b"]), &s(&["leases"]));
        assert_eq!(two.writes, lease("a").writes.union(&lease("b").writes).cloned().collect());
        assert!(effect(r, &s(&["ZREM", "leases", "a"]), &s(&["leases"]), "0").writes.is_empty());
    }

    #[test]
    fn sql_steps_conflict_by_table_and_row() {
        let upd = |id: &str| postgres(&s(&["UPDATE ordlab.orders SET status = $1 WHERE id = $2", "paid", id]));
        assert!(upd("42").conflicts(&upd("42")));
        assert!(!upd("42").conflicts(&upd("43")), "different rows commute");
        let select = postgres(&s(&["SELECT status FROM ordlab.orders WHERE id = $1", "42"]));
        assert!(select.conflicts(&upd("42")));
        assert!(!select.conflicts(&select.clone()));
        let whole = postgres(&s(&["UPDATE ordlab.orders SET status = 'x'"]));
        assert!(whole.conflicts(&upd("43")), "a whole-table write meets every row");
        let begin = postgres(&s(&["BEGIN"]));
        assert!(!begin.conflicts(&select), "a bare BEGIN touches nothing");
        let savepoint = postgres(&s(&["SAVEPOINT a"]));
        assert!(savepoint.conflicts(&select), "other transaction control is taken to touch everything");
        let other = postgres(&s(&["INSERT INTO ordlab.ledger (job) VALUES ($1)", "7"]));
        assert!(!other.conflicts(&upd("42")));
        let customer = postgres(&s(&["UPDATE t SET a = 1 WHERE customer_id = $1", "42"]));
        assert_eq!(data_writes(&customer), ["pg:t"], "customer_id is not the row's id");
    }

    /// The statements of the jobs kind's database techniques: a one-row INSERT … ON CONFLICT
    /// is about the row of its conflict key, as a `WHERE id = $1` statement is about its row.
    #[test]
    fn an_insert_on_conflict_touches_the_row_of_its_key() {
        let processed = |job: &str| {
            postgres(&s(&[
                "INSERT INTO ordlab.processed_orders (order_id, processed_at) VALUES ($1, NOW())\n                 ON CONFLICT (order_id) DO NOTHING RETURNING order_id",
                job,
            ]))
        };
        assert_eq!(data_writes(&processed("job-1")), ["pg:ordlab.processed_orders#order_id=job-1"]);
        assert!(processed("job-1").conflicts(&processed("job-1")), "the second insert of a job finds the first");
        assert!(!processed("job-1").conflicts(&processed("job-2")), "two jobs' rows commute");
        let reset = |id: &str| {
            postgres(&s(&[
                "INSERT INTO ordlab.notifications (id, status) VALUES ($1, 'pending') ON CONFLICT (id) DO UPDATE SET status = 'pending'",
                id,
            ]))
        };
        let check = |id: &str| postgres(&s(&["SELECT status FROM ordlab.notifications WHERE id = $1", id]));
        let mark = |id: &str| {
            postgres(&s(&["UPDATE ordlab.notifications SET status = 'sent', sent_at = NOW() WHERE id = $1", id]))
        };
        assert!(reset("job-7").conflicts(&check("job-7")) && reset("job-7").conflicts(&mark("job-7")));
        assert!(!reset("job-7").conflicts(&check("job-1")));
        assert!(check("job-7").conflicts(&mark("job-7")) && mark("job-7").conflicts(&mark("job-7")));
        assert!(!check("job-7").conflicts(&check("job-7")) && !check("job-7").conflicts(&mark("job-1")));
        // A row named by another key column may be the same row: it conflicts.
        let by_id = postgres(&s(&["UPDATE ordlab.processed_orders SET processed_at = NOW() WHERE id = $1", "job-2"]));
        assert!(by_id.conflicts(&processed("job-1")));
        // Several rows, no conflict target, or a key not given as a value: the whole table.
        let two =
            postgres(&s(&["INSERT INTO t (id, v) VALUES ($1, 1), ($2, 2) ON CONFLICT (id) DO NOTHING", "1", "2"]));
        let plain = postgres(&s(&["INSERT INTO t (id, v) VALUES ($1, 1)", "1"]));
        let computed = postgres(&s(&["INSERT INTO t (id, v) VALUES (nextval('s'), 1) ON CONFLICT (id) DO NOTHING"]));
        for whole in [two, plain, computed] {
            assert_eq!(data_writes(&whole), ["pg:t"]);
        }
        let literal = postgres(&s(&["INSERT INTO t (id, v) VALUES (42, 'x') ON CONFLICT (id) DO NOTHING"]));
        assert_eq!(data_writes(&literal), ["pg:t#42"]);
        // It inserted nothing (its key was there): a read.
        let nothing = effect(
            ServerKind::Postgres,
            &s(&["INSERT INTO t (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", "1"]),
            &[],
            "INSERT 0 0",
        );
        assert!(nothing.writes.is_empty() && !nothing.reads.is_empty());
    }

    /// The Redis commands of the jobs kind's key techniques, on one job's key or another's.
    #[test]
    fn a_job_s_key_commands_conflict_on_that_job_s_key_only() {
        let r = ServerKind::Redis;
        let cmd = |words: &[&str]| s(words);
        let set_nx = |job: &str| cmd(&["SET", &format!("idem:{job}"), "1", "NX", "EX", "86400"]);
        let key = |job: &str| s(&[&format!("idem:{job}")]);
        let claimed = effect(r, &set_nx("job-1"), &key("job-1"), "OK");
        let refused = effect(r, &set_nx("job-1"), &key("job-1"), "(nil)");
        assert!(claimed.conflicts(&redis(&set_nx("job-1"), &key("job-1"))), "two claims of one job");
        assert!(!claimed.conflicts(&redis(&set_nx("job-2"), &key("job-2"))), "another job's key commutes");
        assert!(refused.writes.is_empty() && refused.conflicts(&claimed), "a refused claim read the key");
        let get = redis(&cmd(&["GET", "idem:job-1"]), &key("job-1"));
        let exists = redis(&cmd(&["EXISTS", "idem:job-1"]), &key("job-1"));
        assert!(get.writes.is_empty() && exists.writes.is_empty() && !get.conflicts(&exists));
        let del = redis(&cmd(&["DEL", "idem:job-1"]), &key("job-1"));
        assert!(del.conflicts(&get) && del.conflicts(&claimed));
        assert!(effect(r, &cmd(&["DEL", "idem:job-1"]), &key("job-1"), "0").writes.is_empty(), "nothing deleted");
        let incr = redis(&cmd(&["INCR", "views:job-1"]), &s(&["views:job-1"]));
        assert!(incr.conflicts(&incr.clone()) && !incr.conflicts(&get));
    }

    /// The outbox dispatchers' statements (scenarios/outbox-multi.toml).
    #[test]
    fn skip_locked_and_advisory_locks_conflict_on_their_key_only() {
        let head = postgres(&s(&[
            "SELECT aggregate_id FROM ordlab.outbox o WHERE published_at IS NULL AND NOT EXISTS (SELECT 1 FROM ordlab.outbox e WHERE e.aggregate_id = o.aggregate_id AND e.published_at IS NULL AND e.id < o.id) ORDER BY aggregate_id LIMIT 1 FOR UPDATE OF o SKIP LOCKED",
        ]));
        assert_eq!(
            head,
            Footprint::of(vec!["pg:ordlab.outbox".into()], vec!["pg:lock:ordlab.outbox".into()]),
            "it reads the table and may lock any row"
        );
        let poll = postgres(&s(&["SELECT id FROM ordlab.outbox WHERE published_at IS NULL ORDER BY id"]));
        assert!(!head.conflicts(&poll), "a plain read does not see row locks: taking one commutes with it");
        assert!(head.conflicts(&head.clone()), "who locks first matters");
        let key_rows = postgres(&s(&[
            "SELECT id FROM ordlab.outbox WHERE aggregate_id = $1 AND published_at IS NULL ORDER BY id FOR UPDATE",
            "42",
        ]));
        assert_eq!(
            key_rows.writes.iter().next().unwrap().0,
            "pg:lock:ordlab.outbox",
            "aggregate_id is not the row's id"
        );
        let mark = postgres(&s(&["UPDATE ordlab.outbox SET published_at = now() WHERE id = $1", "3"]));
        assert_eq!(
            mark.writes,
            Footprint::of(vec![], vec!["pg:lock:ordlab.outbox#3".into(), "pg:ordlab.outbox#3".into()]).writes
        );
        assert!(head.conflicts(&mark) && key_rows.conflicts(&mark) && mark.conflicts(&poll));
        let try_lock = |k: &str| postgres(&s(&["SELECT pg_try_advisory_xact_lock($1)", k]));
        assert_eq!(try_lock("42"), Footprint::of(vec![], vec!["pg:advisory#42".into()]));
        assert!(try_lock("42").conflicts(&try_lock("42")), "who takes the key first matters");
        assert!(!try_lock("42").conflicts(&try_lock("43")), "other keys commute");
        assert!(!try_lock("42").conflicts(&mark), "a lock function touches no table");
        let two = postgres(&s(&["SELECT pg_advisory_lock(7, $1)", "42"]));
        assert_eq!(two.writes.iter().next().unwrap().0, "pg:advisory#7,42");
        let all = postgres(&s(&["SELECT pg_advisory_unlock_all()"]));
        assert!(all.conflicts(&try_lock("42")) && all.conflicts(&two), "unlock_all releases every key");
        let unknown = postgres(&s(&["SELECT pg_advisory_lock(hashtext($1))", "x"]));
        assert!(unknown.conflicts(&try_lock("42")), "a key it cannot read is every key");
        let in_query = postgres(&s(&["SELECT id FROM ordlab.outbox WHERE pg_try_advisory_xact_lock(aggregate_id)"]));
        assert!(in_query.conflicts(&try_lock("1")) && in_query.conflicts(&mark), "its table and every key");
        // The tag says one row came back, not whether the lock was taken: never a read.
        let p = ServerKind::Postgres;
        assert!(!changed_nothing(p, &s(&["SELECT pg_try_advisory_xact_lock($1)", "42"]), "SELECT 1"));
        assert!(!effect(p, &s(&["SELECT pg_try_advisory_xact_lock($1)", "42"]), &[], "SELECT 1").writes.is_empty());
        // A SKIP LOCKED that got no row locked none: it read which rows were free.
        let skipped = effect(p, &s(&["SELECT id FROM ordlab.outbox FOR UPDATE SKIP LOCKED"]), &[], "SELECT 0");
        assert!(skipped.writes.is_empty() && skipped.conflicts(&mark));
        let delete = postgres(&s(&["DELETE FROM ordlab.outbox WHERE id = $1", "3"]));
        assert!(
            delete.conflicts(&mark) && !delete.conflicts(&postgres(&s(&["DELETE FROM ordlab.outbox WHERE id = 4"])))
        );
        let any = postgres(&s(&["UPDATE ordlab.outbox SET published_at = now() WHERE id = ANY($1)", "{1,3}"]));
        assert_eq!(data_writes(&any), ["pg:ordlab.outbox"], "ANY($1) may reach any row");
    }

    #[test]
    fn transaction_control_is_read_as_one_statement() {
        assert_eq!(transaction_word("BEGIN"), Some(TxWord::Begin));
        assert_eq!(transaction_word(" begin; "), Some(TxWord::Begin));
        assert_eq!(transaction_word("START TRANSACTION"), Some(TxWord::Begin));
        assert_eq!(transaction_word("BEGIN ISOLATION LEVEL READ COMMITTED"), Some(TxWord::Begin));
        assert_eq!(transaction_word("BEGIN ISOLATION LEVEL SERIALIZABLE"), None, "another isolation level");
        assert_eq!(transaction_word("COMMIT"), Some(TxWord::End));
        assert_eq!(transaction_word("rollback"), Some(TxWord::End));
        assert_eq!(transaction_word("BEGIN; SELECT 1; COMMIT"), None, "a batch");
        assert_eq!(transaction_word("COMMIT PREPARED 'x'"), None);
        assert!(postgres(&s(&["BEGIN"])).writes.is_empty() && postgres(&s(&["BEGIN"])).reads.is_empty());
        let serializable = postgres(&s(&["BEGIN ISOLATION LEVEL SERIALIZABLE"]));
        assert_eq!(serializable.writes.iter().next().unwrap().0, "pg:*");
        assert_eq!(postgres(&s(&["BEGIN; UPDATE t SET a = 1; COMMIT"])).writes.iter().next().unwrap().0, "pg:*");
    }

    #[test]
    fn a_transaction_s_end_touches_what_its_statements_wrote() {
        let mut tx = Transactions::default();
        let step = |tx: &mut Transactions<u32>, who: u32, args: &[&str]| tx.step(who, &s(args), postgres(&s(args)));
        let mark = |id: &str| postgres(&s(&["UPDATE ordlab.outbox SET published_at = now() WHERE id = $1", id]));
        let poll = postgres(&s(&["SELECT id FROM ordlab.outbox WHERE published_at IS NULL ORDER BY id"]));
        let other = postgres(&s(&["UPDATE ordlab.orders SET status = $1 WHERE id = $2", "paid", "42"]));
        assert_eq!(step(&mut tx, 1, &["BEGIN"]), Footprint::default(), "BEGIN commutes with every step");
        assert_eq!(step(&mut tx, 1, &["SELECT pg_try_advisory_xact_lock($1)", "42"]).writes.len(), 1);
        assert_eq!(step(&mut tx, 1, &["UPDATE ordlab.outbox SET published_at = now() WHERE id = $1", "1"]), mark("1"));
        step(&mut tx, 1, &["SELECT id FROM ordlab.outbox WHERE aggregate_id = $1 AND published_at IS NULL", "42"]);
        // Another session's transaction is its own.
        step(&mut tx, 2, &["BEGIN"]);
        step(&mut tx, 2, &["UPDATE ordlab.outbox SET published_at = now() WHERE id = $1", "2"]);
        assert_eq!(
            tx.end_of(&1),
            Some(Footprint::of(
                vec![],
                vec!["pg:advisory#42".into(), "pg:lock:ordlab.outbox#1".into(), "pg:ordlab.outbox#1".into()]
            ))
        );
        let commit = step(&mut tx, 1, &["COMMIT"]);
        assert_eq!(
            commit,
            Footprint::of(
                vec![],
                vec!["pg:advisory#42".into(), "pg:lock:ordlab.outbox#1".into(), "pg:ordlab.outbox#1".into()]
            )
        );
        assert!(commit.conflicts(&poll), "the mark becomes visible to a poll");
        assert!(commit.conflicts(&mark("1")) && !commit.conflicts(&mark("2")), "row 1's lock is released");
        assert!(!commit.conflicts(&other), "a table it did not write commutes");
        assert_eq!(tx.end_of(&1), None, "closed");
        let rollback = step(&mut tx, 2, &["ROLLBACK"]);
        assert_eq!(
            rollback,
            Footprint::of(vec![], vec!["pg:lock:ordlab.outbox#2".into(), "pg:ordlab.outbox#2".into()])
        );
        assert!(step(&mut tx, 3, &["COMMIT"]).conflicts(&other), "an end it did not see begin touches everything");
        // Outside a transaction nothing is kept.
        step(&mut tx, 4, &["UPDATE ordlab.outbox SET published_at = now() WHERE id = $1", "5"]);
        assert_eq!(tx.end_of(&4), None);
    }

    #[test]
    fn two_waits_on_one_key_join_one_queue() {
        let (r, p) = (ServerKind::Redis, ServerKind::Postgres);
        let brpop = |list: &str| waiting_queue(r, &s(&["BRPOP", list, "0"]), &s(&[list]));
        assert_eq!(brpop("q"), Footprint::of(vec![], vec!["r:q#waiters".into()]));
        assert!(brpop("q").conflicts(&brpop("q")), "the first to wait is the first answered");
        assert!(!brpop("q").conflicts(&brpop("other")));
        let upd = s(&["UPDATE ordlab.orders SET status = $1 WHERE id = $2", "paid", "42"]);
        let row_wait = waiting_queue(p, &upd, &[]);
        assert_eq!(row_wait, Footprint::of(vec![], vec!["pg:lock:ordlab.orders#42#waiters".into()]));
        // What the wait itself touched is a read: two unanswered waits commute.
        let wait = effect(r, &s(&["BRPOP", "q", "0"]), &s(&["q"]), "(nil)");
        assert!(!wait.conflicts(&wait.clone()) && wait.conflicts(&redis(&s(&["LPUSH", "q", "j"]), &s(&["q"]))));
    }

    #[test]
    fn multi_exec_is_one_step_and_it_reads_what_was_watched() {
        let mut tx = RedisTransactions::default();
        let keys = |k: &[&str]| s(k);
        let hset = |k: &str| redis(&s(&["HSET", k, "status", "finished"]), &keys(&[k]));
        let other_writer = |k: &str| redis(&s(&["SET", k, "x"]), &keys(&[k]));
        let watch = redis(&s(&["WATCH", "deps"]), &keys(&["deps"]));
        assert_eq!(tx.step(1, &s(&["WATCH", "deps"]), watch.clone(), "OK"), watch);
        assert_eq!(tx.step(1, &s(&["MULTI"]), Footprint::default(), "OK"), Footprint::default());
        assert_eq!(tx.view(&1, &s(&["HSET", "job", "status", "finished"]), hset("job")), Footprint::default());
        assert_eq!(tx.step(1, &s(&["HSET", "job", "status", "finished"]), hset("job"), "QUEUED"), Footprint::default());
        let exec = tx.view(&1, &s(&["EXEC"]), Footprint::default());
        assert!(exec.conflicts(&other_writer("job")), "EXEC does what was queued");
        assert!(exec.conflicts(&other_writer("deps")), "and a write to a watched key makes it fail");
        assert!(!exec.conflicts(&redis(&s(&["GET", "deps"]), &keys(&["deps"]))));
        assert!(!exec.conflicts(&other_writer("else")));
        // Another client's transaction is its own.
        assert_eq!(tx.view(&2, &s(&["HSET", "job", "a", "b"]), hset("job")), hset("job"));
        let failed = tx.step(1, &s(&["EXEC"]), Footprint::default(), "(nil)");
        assert!(failed.writes.is_empty() && failed.conflicts(&other_writer("job")), "an aborted EXEC read only");
        assert_eq!(tx.view(&1, &s(&["HSET", "job", "a", "b"]), hset("job")), hset("job"), "closed");
        assert!(!tx.view(&1, &s(&["EXEC"]), Footprint::default()).conflicts(&other_writer("deps")), "unwatched");
    }

    #[test]
    fn watch_reads_its_keys() {
        let watch = redis(&s(&["WATCH", "rq:job:1", "rq:job:2"]), &s(&["rq:job:1", "rq:job:2"]));
        assert!(watch.writes.is_empty() && watch.reads.len() == 2);
        assert!(watch.conflicts(&redis(&s(&["HSET", "rq:job:1", "status", "finished"]), &s(&["rq:job:1"]))));
        assert!(!watch.conflicts(&redis(&s(&["HGET", "rq:job:1", "status"]), &s(&["rq:job:1"]))), "reads commute");
        assert!(!watch.conflicts(&redis(&s(&["SET", "other", "1"]), &s(&["other"]))));
    }

    #[test]
    fn replies_that_changed_nothing() {
        let r = ServerKind::Redis;
        assert!(changed_nothing(r, &s(&["XREADGROUP"]), "(nil)"));
        assert!(!changed_nothing(r, &s(&["XREADGROUP"]), "1 entry 1-0 type=paid"));
        assert!(changed_nothing(r, &s(&["SET", "lock", "x", "NX"]), "(nil)"));
        assert!(!changed_nothing(r, &s(&["SET", "lock", "x", "NX"]), "OK"));
        assert!(changed_nothing(r, &s(&["XACK"]), "0"));
        assert!(!changed_nothing(r, &s(&["INCR", "n"]), "0"), "INCR to 0 changed the key");
        let p = ServerKind::Postgres;
        assert!(changed_nothing(p, &s(&["UPDATE t SET a = 1 WHERE id = 1"]), "UPDATE 0"));
        assert!(!changed_nothing(p, &s(&["UPDATE t SET a = 1 WHERE id = 1"]), "UPDATE 1"));
        assert!(!changed_nothing(p, &s(&["SELECT * FROM t FOR UPDATE"]), "SELECT 1"), "a row lock is a write");
    }
}
