//! Server timers as steps: where a lab's outcome depends on a key's TTL running out or on an
//! entry having been idle long enough for `XAUTOCLAIM`, that moment is a step the explorer
//! schedules like any process's command, taken by the harness (actor `N`), never by the clock.
//!
//! Under the explorer the labs set such timers so long that the clock never decides them
//! ([`NEVER_BY_THE_CLOCK_MS`]); the timer step then makes the key expire (`PEXPIRE key 0`)
//! or the entry idle (`XCLAIM … IDLE`, same owner, delivery count unchanged). Timers fire in
//! the order they were armed, as equal durations do on a real clock: the entry delivered
//! first becomes idle first, the key set first expires first. A timer is armed while what it
//! acts on is there: a key set with a TTL until it is deleted, an entry a process was handed
//! until it is acknowledged (or claimed again, which re-arms it behind the others).
//!
//! A lease in a sorted set (member: the taken entry, score: its deadline, as the list queue's
//! lease script keeps them) runs out as a step that sets its deadline to 0
//! (`ZADD leases XX CH 0 <entry>`), so the reaper's `ZRANGEBYSCORE … -inf <now>` finds it; the
//! first taken runs out first, and a lease is armed while its member is there.
//!
//! A process's own timer can be a server timer too: a reorder buffer holding an entry waits
//! for the missing one in `XREADGROUP … BLOCK <gap timeout>`; the step that makes its gap run
//! out is `CLIENT UNBLOCK <client> TIMEOUT`, after which the read returns nothing, exactly as
//! when the block's time is up.

use super::footprint::{self, Footprint};
use redis::aio::MultiplexedConnection;

pub use crate::fault::NEVER_BY_THE_CLOCK_MS;

/// The idle time a timer step gives an entry: past [`NEVER_BY_THE_CLOCK_MS`] (and below the
/// epoch's milliseconds, which Redis requires of `XCLAIM … IDLE`).
const IDLE_GIVEN_MS: u64 = 2 * NEVER_BY_THE_CLOCK_MS;

/// Which server timers of a lab are steps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    /// A key set with a TTL (`SET … PX`, a lock) can expire while it is held.
    pub ttl: bool,
    /// Entries pending in this consumer group can become idle for its claimer.
    pub idle_group: Option<String>,
    /// An entry can go idle while its consumer still works on it (the min-idle is no longer
    /// than the longest job); otherwise only an entry whose consumer is gone can.
    pub idle_while_working: bool,
    /// A process blocked in a read with a timeout (`XREADGROUP … BLOCK ms`, ms > 0) can have
    /// its time run out.
    pub block_timeout: bool,
    /// An entry can go idle once its consumer has left it (it asked for more work since it
    /// was handed the entry, without acknowledging it: a job that failed and stays pending),
    /// not while the consumer still works on it. Timers keep their order: the first armed
    /// waits until its consumer leaves it or acknowledges it.
    pub idle_once_left: bool,
    /// Entries go idle only while every process waits for work (blocked in a read, or a
    /// poller holding its poll): the lab retries only once every job was handled once, and a
    /// timer that ran out while the claimer handled another entry is the same as one that ran
    /// out just before its next poll.
    pub idle_when_all_wait: bool,
    /// Leases in this sorted set (member: the taken entry, score: its deadline on the
    /// server's clock) can run out.
    pub leases: Option<String>,
    /// Payloads whose delivery can outlast its lease (a job slower than the lease at its first
    /// delivery): their lease can also run out while the worker still works on it, once each;
    /// other leases only as `idle_when_all_wait` says. A member is the payload, or a delivery
    /// token ending in `|<payload>`.
    pub leases_outlasted: Vec<String>,
    /// Delayed retries in this sorted set (member: the payload, score: its due time on the
    /// server's clock) can come due, as a lease runs out: the same step on another set.
    pub due: Option<String>,
    /// Streams a process polls in turn, blocking on each with a timeout (a priority worker's
    /// loop: `XREADGROUP critical … BLOCK 100`, then normal, then low, round and round). Its
    /// read's time runs out once per change: after an append, or any step but a read that
    /// found nothing, the loop goes round at most once (a read it already timed out of since
    /// then waits for work), or the schedule would never end. Every append to these streams
    /// is such a change, so each of these timeouts depends on every append.
    pub polling_streams: Vec<String>,
    /// The run's key prefix, which the processes' commands carry on the server but not in
    /// what the explorer sees of them.
    pub key_prefix: String,
}

impl Timers {
    pub fn any(&self) -> bool {
        self.ttl || self.idle_group.is_some() || self.block_timeout || self.leases.is_some() || self.due.is_some()
    }
}

/// One armed timer, as the explorer may fire it next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Timer {
    /// `key`'s TTL runs out.
    Expire { key: String },
    /// Entry `ordinal` (server ID `id`) of `stream`, pending at `owner`, has been idle long enough.
    Idle { stream: String, ordinal: String, id: String, owner: String },
    /// Process `actor` (connections named `client_name`), blocked reading `stream` with a
    /// timeout, has waited long enough: its read returns nothing.
    Unblock {
        actor: String,
        client_name: String,
        stream: String,
        /// The streams whose appends let it run out again ([`Timers::polling_streams`]).
        polling: Vec<String>,
    },
    /// The lease of `member` in sorted set `key` runs out (or a delayed retry comes due): its
    /// deadline becomes 0, so a reaper's (a scheduler's) `ZRANGEBYSCORE key -inf <now>` finds it.
    Lease { key: String, member: String },
}

impl Timer {
    /// The command the harness sends for it, entry IDs as the run numbers them.
    pub fn words(&self, group: &str) -> Vec<String> {
        match self {
            Timer::Expire { key } => vec!["PEXPIRE".into(), key.clone(), "0".into()],
            Timer::Idle { stream, ordinal, owner, .. } => {
                let idle = IDLE_GIVEN_MS.to_string();
                ["XCLAIM", stream, group, owner, "0", ordinal, "IDLE", &idle, "JUSTID"].map(String::from).to_vec()
            }
            Timer::Unblock { actor, .. } => ["CLIENT", "UNBLOCK", actor, "TIMEOUT"].map(String::from).to_vec(),
            Timer::Lease { key, member } => ["ZADD", key, "XX", "CH", "0", member].map(String::from).to_vec(),
        }
    }

    /// What made it possible (read): the key its TTL is on, the entry handed out, the read
    /// waiting, the lease taken. The step that first wrote it can never come after it.
    pub fn guard(&self) -> Footprint {
        let made = match self {
            Timer::Expire { key } => format!("r:{key}"),
            Timer::Idle { stream, ordinal, .. } => format!("r:{stream}#pending#{ordinal}"),
            Timer::Unblock { stream, .. } => format!("r:{stream}#waiters"),
            Timer::Lease { key, member } => format!("r:{key}#m:{member}"),
        };
        Footprint::of(vec![made], vec![])
    }

    /// What the step touches: the key, or that entry's place in the pending list.
    pub fn footprint(&self) -> Footprint {
        let (reads, writes) = match self {
            Timer::Expire { key } => (vec![], vec![format!("r:{key}")]),
            Timer::Idle { stream, ordinal, .. } => {
                (vec![], vec![format!("r:{stream}#pending#{ordinal}"), format!("r:{stream}#idle")])
            }
            // It ends a read that an entry appended first would have answered.
            Timer::Unblock { actor, stream, polling, .. } => {
                let mut reads = vec![format!("r:{stream}#entries")];
                reads.extend(polling.iter().filter(|s| *s != stream).map(|s| format!("r:{s}#entries")));
                (reads, vec![format!("r:{stream}#blocked#{actor}")])
            }
            Timer::Lease { key, member } => (vec![], vec![format!("r:{key}#m:{member}")]),
        };
        Footprint::of(reads, writes)
    }
}

/// What the explorer has seen arm timers, in the order they were armed.
#[derive(Debug, Default)]
pub struct TimerQueue {
    /// Entries a process was handed: (stream key, ordinal), first handed first.
    delivered: Vec<(String, String)>,
    /// Keys a process set with a TTL, first set first.
    expiring: Vec<String>,
    /// Entries a timer step made idle that nobody has claimed since: (stream key, ordinal).
    idle: Vec<(String, String)>,
    /// Entries appended, and those ever handed to a process (a `>` read never takes them again).
    appended: Vec<(String, String)>,
    handed: std::collections::BTreeSet<(String, String)>,
    /// Reads a polling loop's process timed out of since the last change (see
    /// [`Timers::polling_streams`]): (actor's code, the read's words).
    timed_out: Vec<(String, Vec<String>)>,
    /// Who each delivered entry was handed to (the consumer named in the read), and whether
    /// that consumer has asked for more work since.
    owners: std::collections::BTreeMap<(String, String), (String, bool)>,
    /// Lease members of [`Timers::leases_outlasted`] whose lease has run out (once each).
    outlasted: std::collections::BTreeSet<String>,
}

impl TimerQueue {
    /// Note what a step that ran armed: `args` numbered, `keys` as the server named them,
    /// `reply` numbered.
    pub fn observe(&mut self, args: &[String], keys: &[String], reply: &str) {
        let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
        let found_nothing = name == "XREADGROUP" && (reply == "(nil)" || reply == "[]");
        if !found_nothing {
            self.timed_out.clear();
        }
        match name.as_str() {
            "XADD" if footprint::is_ordinal(reply) => {
                if let Some(stream) = keys.first() {
                    self.appended.push((stream.clone(), reply.to_string()));
                }
            }
            "XREADGROUP" | "XAUTOCLAIM" | "XCLAIM" => {
                let Some(stream) = keys.first() else { return };
                let consumer = args.get(3).cloned().unwrap_or_default();
                for ord in footprint::ordinals(reply) {
                    self.handed.insert((stream.clone(), ord.to_string()));
                    self.owners.insert((stream.clone(), ord.to_string()), (consumer.clone(), false));
                    let other = |(s, o): &(String, String)| !(s == stream && o == ord);
                    self.delivered.retain(other);
                    self.idle.retain(other);
                    self.delivered.push((stream.clone(), ord.to_string()));
                }
            }
            "SET" if reply == "OK" => {
                let options: Vec<String> = args.iter().skip(3).map(|a| a.to_ascii_uppercase()).collect();
                let key = &args[1];
                if options.iter().any(|o| o == "PX" || o == "EX") {
                    self.expiring.retain(|k| k != key);
                    self.expiring.push(key.clone());
                } else if !options.iter().any(|o| o == "KEEPTTL") {
                    // A SET without a TTL clears the key's: nothing runs out any more (a lease
                    // marked `done`).
                    self.expiring.retain(|k| k != key);
                }
            }
            _ => {}
        }
    }

    /// A process holds (or waits in) `args`, numbered: a read of more work (`XREADGROUP`,
    /// `XAUTOCLAIM`) says its consumer has left every entry it was handed before.
    pub fn asks_for_work(&mut self, args: &[String]) {
        let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
        if !matches!(name.as_str(), "XREADGROUP" | "XAUTOCLAIM") {
            return;
        }
        let Some(consumer) = args.get(3) else { return };
        for (owner, left) in self.owners.values_mut() {
            if owner == consumer {
                *left = true;
            }
        }
    }

    fn left(&self, stream: &str, ordinal: &str) -> bool {
        self.owners.get(&(stream.to_string(), ordinal.to_string())).is_some_and(|(_, left)| *left)
    }

    /// `timer` ran: an entry it made idle waits for a claim. `blocked` is the read it ended,
    /// if it ended one.
    pub fn fired(&mut self, timer: &Timer, blocked: Option<&[String]>) {
        match timer {
            Timer::Idle { stream, ordinal, .. } => self.idle.push((stream.clone(), ordinal.clone())),
            Timer::Lease { member, .. } => {
                self.outlasted.insert(member.clone());
            }
            Timer::Unblock { actor, polling, .. } if !polling.is_empty() => {
                if let Some(read) = blocked {
                    self.timed_out.push((actor.clone(), read.to_vec()));
                }
            }
            _ => {}
        }
    }

    /// May `actor`'s blocked `read` run out of time now? Not if it already did since the last
    /// change ([`Timers::polling_streams`]).
    pub fn may_time_out(&self, actor: &str, read: &[String]) -> bool {
        !self.timed_out.iter().any(|(a, r)| a == actor && r == read)
    }

    /// What an `XAUTOCLAIM` on `stream` may do before it runs: under the explorer it can take
    /// only an entry a timer step made idle, so it reads whether there is one and may take
    /// those (a poll with none commutes with every step but a timer's).
    pub fn claim_footprint(&self, stream: &str) -> Footprint {
        let mut writes: Vec<String> =
            self.idle.iter().filter(|(s, _)| s == stream).map(|(_, o)| format!("r:{stream}#pending#{o}")).collect();
        if !writes.is_empty() {
            writes.push(format!("r:{stream}#idle"));
        }
        Footprint::of(vec![format!("r:{stream}#idle")], writes)
    }

    /// What `XREADGROUP … >` on `stream` may do before it runs: take entries never handed to
    /// anyone (those appended so far, or any later one), so it touches the pending places of
    /// those alone, not of entries already handed out (their acks and claims commute with it).
    pub fn read_new_footprint(&self, stream: &str) -> Footprint {
        let mut writes = vec![format!("r:{stream}#cursor"), format!("r:{stream}#pending#new")];
        for (s, o) in &self.appended {
            if s == stream && !self.handed.contains(&(s.clone(), o.clone())) {
                writes.push(format!("r:{stream}#pending#{o}"));
            }
        }
        Footprint::of(vec![format!("r:{stream}#entries")], writes)
    }

    /// May the lease of `member` run out while its worker works on it? Only a delivery that
    /// outlasts its lease ([`Timers::leases_outlasted`]), and once.
    fn outlasts(&self, timers: &Timers, member: &str) -> bool {
        let named = |p: &String| member == p || member.strip_suffix(p.as_str()).is_some_and(|t| t.ends_with('|'));
        timers.leases_outlasted.iter().any(named) && !self.outlasted.contains(member)
    }

    /// The first armed timer, asking the server what is still there (a released key, an
    /// acknowledged entry disarm theirs). `id_of` gives an ordinal's server ID. `working`:
    /// some process is not waiting for work, and the lab runs timers out only while every one
    /// does ([`Timers::idle_when_all_wait`]): only a lease that outlasts its delivery can.
    pub async fn next(
        &mut self,
        timers: &Timers,
        working: bool,
        redis: &mut MultiplexedConnection,
        id_of: impl Fn(&str) -> Option<String>,
        gone: impl Fn(&str) -> bool,
    ) -> Result<Option<Timer>, redis::RedisError> {
        let on_server = |key: &str| format!("{}{key}", timers.key_prefix);
        if working {
            let Some(key) = &timers.leases else { return Ok(None) };
            let leases: Vec<(String, f64)> =
                redis::cmd("ZRANGE").arg(on_server(key)).arg(0).arg(-1).arg("WITHSCORES").query_async(redis).await?;
            let armed = leases
                .into_iter()
                .find(|(m, deadline)| *deadline >= NEVER_BY_THE_CLOCK_MS as f64 && self.outlasts(timers, m));
            return Ok(armed.map(|(member, _)| Timer::Lease { key: key.clone(), member }));
        }
        if timers.ttl {
            while let Some(key) = self.expiring.first().cloned() {
                let exists: bool = redis::cmd("EXISTS").arg(on_server(&key)).query_async(redis).await?;
                if exists {
                    return Ok(Some(Timer::Expire { key }));
                }
                self.expiring.remove(0);
            }
        }
        for key in timers.leases.iter().chain(&timers.due) {
            // Every lease the explorer's lease script set ends far in the future (every retry
            // the worker delayed is due there); one a timer step ran out is at 0. The first by
            // deadline (the first taken, the first delayed) runs out first.
            let leases: Vec<(String, f64)> =
                redis::cmd("ZRANGE").arg(on_server(key)).arg(0).arg(-1).arg("WITHSCORES").query_async(redis).await?;
            let armed = leases.into_iter().find(|(_, deadline)| *deadline >= NEVER_BY_THE_CLOCK_MS as f64);
            if let Some((member, _)) = armed {
                return Ok(Some(Timer::Lease { key: key.clone(), member }));
            }
        }
        let Some(group) = &timers.idle_group else { return Ok(None) };
        while let Some((stream, ordinal)) = self.delivered.first().cloned() {
            if let Some(id) = id_of(&ordinal) {
                let pending: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
                    .arg(on_server(&stream))
                    .arg(group)
                    .arg(&id)
                    .arg(&id)
                    .arg(1)
                    .query_async(redis)
                    .await?;
                let not_yet_idle = pending.ids.first().filter(|p| (p.last_delivered_ms as u64) < NEVER_BY_THE_CLOCK_MS);
                if let Some(p) = not_yet_idle {
                    let left = timers.idle_once_left && self.left(&stream, &ordinal);
                    if timers.idle_while_working || gone(&p.consumer) || left {
                        return Ok(Some(Timer::Idle { stream, ordinal, id, owner: p.consumer.clone() }));
                    }
                    if timers.idle_once_left {
                        // Its consumer still works on it: no later entry goes idle first.
                        return Ok(None);
                    }
                }
            }
            self.delivered.remove(0);
        }
        Ok(None)
    }
}

/// Fire `timer` on the server: the command sent (server IDs, the key prefix left out as in
/// every recorded command) and its reply, as a line shows it.
pub async fn fire(
    timer: &Timer,
    timers: &Timers,
    redis: &mut MultiplexedConnection,
) -> Result<(Vec<String>, String), redis::RedisError> {
    if let Timer::Unblock { client_name, .. } = timer {
        return unblock(timer, client_name, redis).await;
    }
    let mut words = timer.words(timers.idle_group.as_deref().unwrap_or_default());
    if let Timer::Idle { ordinal, id, .. } = timer {
        for w in words.iter_mut().filter(|w| *w == ordinal) {
            *w = id.clone();
        }
    }
    let mut cmd = redis::cmd(&words[0]);
    for (i, w) in words.iter().enumerate().skip(1) {
        // The key is the second word of both commands.
        if i == 1 {
            cmd.arg(format!("{}{w}", timers.key_prefix));
        } else {
            cmd.arg(w);
        }
    }
    let reply: redis::Value = cmd.query_async(redis).await?;
    let shown = match reply {
        redis::Value::Int(n) => n.to_string(),
        redis::Value::Array(a) => format!("{} entry", a.len()),
        other => format!("{other:?}"),
    };
    Ok((words, shown))
}

/// A blocked read's time runs out: `CLIENT UNBLOCK <id> TIMEOUT` for the client named
/// `client_name` that is blocked; the line shows the process, not the connection's number.
async fn unblock(
    timer: &Timer,
    client_name: &str,
    redis: &mut MultiplexedConnection,
) -> Result<(Vec<String>, String), redis::RedisError> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(redis).await?;
    let needle = format!(" name={client_name} ");
    let blocked = |l: &&str| l.split(' ').any(|kv| kv.strip_prefix("flags=").is_some_and(|f| f.contains('b')));
    let id = list
        .lines()
        .filter(|l| l.contains(&needle))
        .find(blocked)
        .and_then(|l| l.split(' ').find_map(|kv| kv.strip_prefix("id=")).map(str::to_string));
    let reply: i64 = match id {
        Some(id) => redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg("TIMEOUT").query_async(redis).await?,
        None => 0,
    };
    Ok((timer.words(""), reply.to_string()))
}

/// A read that blocks with a timeout (`XREADGROUP … BLOCK ms`, ms > 0), and its stream.
pub fn blocks_with_timeout(args: &[String], keys: &[String]) -> Option<String> {
    if !args.first().is_some_and(|a| a.eq_ignore_ascii_case("XREADGROUP")) {
        return None;
    }
    let block = args.iter().position(|a| a.eq_ignore_ascii_case("BLOCK"))?;
    let ms: u64 = args.get(block + 1)?.parse().ok()?;
    (ms > 0).then(|| keys.first().cloned()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_polling_loop_s_read_runs_out_once_per_change_and_races_every_append() {
        let read =
            |stream: &str| s(&["XREADGROUP", "GROUP", "g", "C1", "COUNT", "10", "BLOCK", "9", "STREAMS", stream, ">"]);
        let polling = s(&["critical", "normal", "low"]);
        let t = |stream: &str| Timer::Unblock {
            actor: "C1".into(),
            client_name: "ordlab-x-C1".into(),
            stream: stream.into(),
            polling: polling.clone(),
        };
        let mut q = TimerQueue::default();
        // Round the loop once: critical, normal and low each run out.
        for stream in ["critical", "normal", "low"] {
            assert!(q.may_time_out("C1", &read(stream)));
            q.fired(&t(stream), Some(&read(stream)));
            q.observe(&read(stream), &s(&[stream]), "(nil)");
        }
        // Back at critical with nothing new: it waits for work.
        assert!(!q.may_time_out("C1", &read("critical")));
        assert!(q.may_time_out("C2", &read("critical")), "another process's read is its own");
        // An append anywhere is a change: the loop may go round again.
        q.observe(&s(&["XADD", "low", "*", "job", "l-1"]), &s(&["low"]), "e1");
        assert!(q.may_time_out("C1", &read("critical")));
        // So is a read that found something, and the acknowledgement after it.
        q.fired(&t("critical"), Some(&read("critical")));
        q.observe(&read("low"), &s(&["low"]), "[[low, [[e1, [job, l-1]]]]]");
        assert!(q.may_time_out("C1", &read("critical")));
        // Every append races the timeout (the loop goes round again after it).
        let xadd = footprint::redis(&s(&["XADD", "critical", "*"]), &s(&["critical"]));
        assert!(t("low").footprint().conflicts(&xadd));
        let plain = Timer::Unblock {
            actor: "C1".into(),
            client_name: "ordlab-x-C1".into(),
            stream: "low".into(),
            polling: vec![],
        };
        assert!(!plain.footprint().conflicts(&xadd), "a reorder buffer's gap timeout waits on its own stream only");
    }

    #[test]
    fn a_read_blocked_with_a_timeout_is_a_timer_that_an_append_races() {
        let read =
            |block: &str| s(&["XREADGROUP", "GROUP", "g", "C1", "COUNT", "1", "BLOCK", block, "STREAMS", "o", ">"]);
        assert_eq!(blocks_with_timeout(&read("10000000000"), &s(&["o"])), Some("o".into()));
        assert_eq!(blocks_with_timeout(&read("0"), &s(&["o"])), None, "BLOCK 0 waits for ever: no timer");
        assert_eq!(blocks_with_timeout(&s(&["XREADGROUP", "GROUP", "g", "C1", "STREAMS", "o", ">"]), &s(&["o"])), None);
        let t = Timer::Unblock {
            actor: "C1".into(),
            client_name: "ordlab-x-C1".into(),
            stream: "o".into(),
            polling: vec![],
        };
        assert_eq!(t.words("g"), s(&["CLIENT", "UNBLOCK", "C1", "TIMEOUT"]));
        let xadd = footprint::redis(&s(&["XADD", "o", "*", "type", "created"]), &s(&["o"]));
        let other = footprint::redis(&s(&["XADD", "p", "*", "type", "created"]), &s(&["p"]));
        let ack = footprint::redis(&s(&["XACK", "o", "g", "e1"]), &s(&["o"]));
        assert!(t.footprint().conflicts(&xadd), "an entry appended first answers the read instead");
        assert!(!t.footprint().conflicts(&other) && !t.footprint().conflicts(&ack));
        let t2 = Timer::Unblock {
            actor: "C2".into(),
            client_name: "ordlab-x-C2".into(),
            stream: "o".into(),
            polling: vec![],
        };
        assert!(!t.footprint().conflicts(&t2.footprint()), "two processes' timeouts commute");
    }

    #[test]
    fn deliveries_and_ttl_keys_arm_timers_in_order() {
        let mut q = TimerQueue::default();
        q.observe(&s(&["XREADGROUP", "GROUP", "g", "C1", "STREAMS", "o", ">"]), &s(&["o"]), "1 entry e1 order=42");
        q.observe(&s(&["XREADGROUP", "GROUP", "g", "C2", "STREAMS", "o", ">"]), &s(&["o"]), "1 entry e2 order=42");
        q.observe(&s(&["XREADGROUP", "GROUP", "g", "C2", "STREAMS", "o", ">"]), &s(&["o"]), "(nil)");
        assert_eq!(q.delivered, vec![("o".into(), "e1".into()), ("o".into(), "e2".into())]);
        // A claim hands e1 over again: it is idle last now.
        q.observe(&s(&["XAUTOCLAIM", "o", "g", "reaper", "1", "0-0"]), &s(&["o"]), "1 entry e1 order=42");
        assert_eq!(q.delivered, vec![("o".into(), "e2".into()), ("o".into(), "e1".into())]);
        let idle =
            |o: &str| Timer::Idle { stream: "o".into(), ordinal: o.into(), id: "1-0".into(), owner: "C1".into() };
        assert!(q.claim_footprint("o").writes.is_empty(), "nothing idle: a poll only reads");
        q.fired(&idle("e2"), None);
        let claim = q.claim_footprint("o");
        assert!(claim.conflicts(&idle("e2").footprint()) && claim.conflicts(&idle("e1").footprint()));
        let ack_e1 = footprint::redis(&s(&["XACK", "o", "g", "e1"]), &s(&["o"]));
        assert!(!claim.conflicts(&ack_e1), "it can take e2 only");
        q.observe(&s(&["XAUTOCLAIM", "o", "g", "reaper", "1", "0-0"]), &s(&["o"]), "1 entry e2 order=42");
        assert!(q.claim_footprint("o").writes.is_empty(), "claimed: idle no more");
        q.observe(&s(&["XADD", "o", "*", "k", "v"]), &s(&["o"]), "e3");
        let read_new = q.read_new_footprint("o");
        let ack = |e: &str| footprint::redis(&s(&["XACK", "o", "g", e]), &s(&["o"]));
        assert!(read_new.conflicts(&ack("e3")), "e3 was never handed out: a read may take it");
        assert!(!read_new.conflicts(&ack("e1")), "e1 was: a `>` read never takes it again");
        q.observe(&s(&["SET", "lock:42", "t1", "NX", "PX", "500"]), &s(&["lock:42"]), "OK");
        q.observe(&s(&["SET", "lock:43", "t1", "NX", "PX", "500"]), &s(&["lock:43"]), "(nil)");
        q.observe(&s(&["SET", "plain", "v"]), &s(&["plain"]), "OK");
        assert_eq!(q.expiring, vec!["lock:42".to_string()]);
    }

    /// A consumer that asks for more work has left what it was handed before (a failed job
    /// stays pending at it): only those entries, and only its own.
    #[test]
    fn a_consumer_asking_for_work_has_left_the_entries_it_held() {
        let mut q = TimerQueue::default();
        let read = |c: &str| s(&["XREADGROUP", "GROUP", "g", c, "COUNT", "1", "BLOCK", "0", "STREAMS", "jobs", ">"]);
        q.observe(&read("C4"), &s(&["jobs"]), "1 entry e4 job=job-4");
        q.observe(&read("C5"), &s(&["jobs"]), "1 entry e7 job=job-7");
        assert!(!q.left("jobs", "e4"), "C4 still handles e4");
        q.asks_for_work(&s(&["SET", "job:done:job-4", "1", "NX", "EX", "86400"]));
        assert!(!q.left("jobs", "e4"), "a command of the handler is no read");
        q.asks_for_work(&read("C4"));
        assert!(q.left("jobs", "e4") && !q.left("jobs", "e7"), "C4 left e4; C5 still holds e7");
        q.observe(&read("C4"), &s(&["jobs"]), "1 entry e5 job=job-5");
        assert!(!q.left("jobs", "e5"), "handed after the read: held");
        // The claimer takes e4: held again, by the claimer, until it polls again.
        q.observe(&s(&["XAUTOCLAIM", "jobs", "g", "reaper", "1", "0-0", "COUNT", "1"]), &s(&["jobs"]), "1 entry e4 x");
        assert!(!q.left("jobs", "e4"));
        q.asks_for_work(&s(&["XAUTOCLAIM", "jobs", "g", "reaper", "1", "0-0", "COUNT", "1"]));
        assert!(q.left("jobs", "e4") && !q.left("jobs", "e5"));
    }

    #[test]
    fn a_lease_runs_out_at_its_member_only() {
        let lease = |m: &str| Timer::Lease { key: "leases:default".into(), member: m.into() };
        assert_eq!(lease("1|job").words(""), s(&["ZADD", "leases:default", "XX", "CH", "0", "1|job"]));
        let keys = s(&["processing:default", "leases:default"]);
        let ack =
            footprint::redis(&s(&["EVALSHA", "9388", "2", "processing:default", "leases:default", "2|job"]), &keys);
        assert!(lease("1|job").footprint().conflicts(&ack), "a script that declares the lease set may touch any lease");
        let zrem = |m: &str| footprint::redis(&s(&["ZREM", "leases:default", m]), &s(&["leases:default"]));
        assert!(lease("1|job").footprint().conflicts(&zrem("1|job")));
        assert!(!lease("1|job").footprint().conflicts(&zrem("2|job")), "another delivery's lease commutes with it");
        assert!(!lease("1|job").footprint().conflicts(&lease("2|job").footprint()));
        assert!(Timers { leases: Some("leases:default".into()), ..Timers::default() }.any());
    }

    #[test]
    fn a_timer_step_touches_what_it_ends() {
        let expire = Timer::Expire { key: "lock:42".into() };
        assert_eq!(expire.words("g"), s(&["PEXPIRE", "lock:42", "0"]));
        let set = footprint::redis(&s(&["SET", "lock:42", "t", "NX", "PX", "9"]), &s(&["lock:42"]));
        assert!(expire.footprint().conflicts(&set));
        let idle = Timer::Idle { stream: "o".into(), ordinal: "e1".into(), id: "5-0".into(), owner: "C1".into() };
        assert_eq!(idle.words("g")[..6], s(&["XCLAIM", "o", "g", "C1", "0", "e1"]));
        let claim = footprint::redis(&s(&["XAUTOCLAIM", "o", "g", "reaper", "1", "0-0"]), &s(&["o"]));
        assert!(idle.footprint().conflicts(&claim), "the claimer's poll waits on it");
        let ack_other = footprint::redis(&s(&["XACK", "o", "g", "e2"]), &s(&["o"]));
        assert!(!idle.footprint().conflicts(&ack_other), "another entry's ack commutes with it");
        // A poll that claimed nothing read only whether a timer made something idle.
        let poll = s(&["XAUTOCLAIM", "o", "g", "reaper", "1", "0-0"]);
        let nil = footprint::effect(crate::timeline::ServerKind::Redis, &poll, &s(&["o"]), "(nil)");
        assert!(idle.footprint().conflicts(&nil));
        let append = footprint::redis(&s(&["XADD", "o", "*", "k", "v"]), &s(&["o"]));
        let read = footprint::redis(&s(&["XREADGROUP", "GROUP", "g", "C1", "STREAMS", "o", ">"]), &s(&["o"]));
        assert!(!nil.conflicts(&append) && !nil.conflicts(&read), "it commutes with appends and reads");
    }
}
