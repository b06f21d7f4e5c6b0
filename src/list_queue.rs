//! Jobs on Redis lists as seed 003 keeps them: a JSON document per job in `queue:<name>`, taken
//! into `processing:<name>` and removed from it by value when done. Next to the seed's own
//! commands, the Lua scripts that add what it lacks: a lease per taken job (a list keeps no age)
//! that a reaper can expire, and a delayed set of retries that a scheduler moves back when due.
//!
//! Every function takes any async connection (a single server or a cluster: every key of one
//! queue then needs the same hash tag, which [`ListKeys::new`] keeps from the prefix).

pub mod events;

use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};

/// The keys of one queue, under a run's prefix (a prefix with a `{tag}` keeps them in one slot).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListKeys {
    /// Jobs waiting (the seed's `queue:default`).
    pub queue: String,
    /// Jobs taken by a worker and not finished (the seed's `processing:default`).
    pub processing: String,
    /// Lease deadline per taken entry: a sorted set, score = ms on the server's clock.
    pub leases: String,
    /// Retries waiting for their time: a sorted set, score = due ms on the server's clock.
    pub delayed: String,
    /// The seed's `queue:retry` (nothing reads it).
    pub retry: String,
    /// The dead-letter list (the seed's `queue:failed`).
    pub failed: String,
    /// Counter that makes delivery tokens.
    pub tokens: String,
}

impl ListKeys {
    pub fn new(prefix: &str) -> ListKeys {
        let key = |k: &str| format!("{prefix}{k}");
        ListKeys {
            queue: key("queue:default"),
            processing: key("processing:default"),
            leases: key("leases:default"),
            delayed: key("queue:delayed"),
            retry: key("queue:retry"),
            failed: key("queue:failed"),
            tokens: key("tokens"),
        }
    }
}

/// The seed's job document (`dispatch` builds it), with a working id: the seed's
/// `generateUniqueId` does not parse (`toString(36.substring(2, 9))`). Jobs without an id are
/// the identical-payload case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListJob {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub data: serde_json::Value,
    pub attempts: u32,
    pub max_attempts: u32,
    pub created_at: u64,
}

impl ListJob {
    /// What the side-effect ledger and the timeline call the job: its id, else its name.
    pub fn label(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("jobs serialize")
    }

    /// The job in a payload, or why it is poison.
    pub fn parse(payload: &str) -> Result<ListJob, String> {
        serde_json::from_str(payload).map_err(|e| e.to_string())
    }

    /// The same job after one more failed attempt (what the seed pushes to `queue:retry`).
    pub fn failed_once(&self) -> ListJob {
        ListJob { attempts: self.attempts + 1, ..self.clone() }
    }
}

/// The id of job number `n`: `job-000042` (a working stand-in for the seed's
/// `generateUniqueId`, which does not parse).
pub fn job_id(n: u64) -> String {
    format!("job-{n:06}")
}

/// The number in an id made by [`job_id`].
pub fn job_number(id: &str) -> Option<u64> {
    id.strip_prefix("job-")?.parse().ok()
}

/// Job number `n` of a steady producer: the seed's welcome e-mail, `data` padded with a note
/// to about `bytes` bytes of JSON.
pub fn numbered_job(n: u64, bytes: usize, created_at: u64) -> ListJob {
    let mut job = ListJob {
        id: Some(job_id(n)),
        name: "send_welcome_email".into(),
        data: serde_json::json!({ "email": format!("user{n}@example.com") }),
        attempts: 0,
        max_attempts: 3,
        created_at,
    };
    let short = job.to_json().len();
    if bytes > short + 12 {
        job.data["note"] = serde_json::Value::String("x".repeat(bytes - short - 12));
    }
    job
}

/// A payload as the timeline names it: the job's label, or its first bytes when it is poison.
pub fn payload_label(payload: &str) -> String {
    match ListJob::parse(payload) {
        Ok(job) => job.label().to_string(),
        Err(_) if payload.chars().count() <= 24 => payload.to_string(),
        Err(_) => {
            let head: String = payload.chars().take(23).collect();
            format!("{head}…")
        }
    }
}

/// How a worker takes a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Take {
    /// `BRPOP queue 0`: the job is in the worker's memory only.
    Brpop,
    /// The seed's `BRPOPLPUSH queue processing 0` (deprecated since 6.2).
    Brpoplpush,
    /// `BLMOVE queue processing RIGHT LEFT 0`, the same move by its new name.
    Blmove,
    /// The [`FETCH`] script: the move and a lease in one step (a script cannot block: polled).
    Lease,
}

/// What identifies a taken entry in the processing list and its lease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Identity {
    /// The payload itself: two identical payloads are one value to LREM and to the lease set.
    #[default]
    Payload,
    /// A delivery token (`<n>|<payload>`) made by the fetch: every taken entry is distinct.
    Token,
}

/// What a worker does with a job whose handler failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// The seed: push the job (attempts + 1) to `queue:retry` while attempts < maxAttempts,
    /// else to `queue:failed`; then LREM it from processing. Nothing reads `queue:retry`.
    SeedRetryList,
    /// Schedule the next attempt in the delayed set after an exponential backoff, atomically
    /// with its removal from processing; the dead-letter list after `max_attempts`.
    Backoff(Backoff),
}

/// Retry k (after failed attempt k, 1-based) is due `base_ms × factor^(k-1)` later.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backoff {
    pub base_ms: f64,
    #[serde(default = "Backoff::default_factor")]
    pub factor: f64,
    pub max_attempts: u32,
}

impl Backoff {
    fn default_factor() -> f64 {
        2.0
    }

    /// The delay before the retry that follows failed attempt `attempt` (1-based), in ms.
    pub fn delay_after(&self, attempt: u32) -> f64 {
        self.base_ms * self.factor.powi(attempt.max(1) as i32 - 1)
    }
}

/// What a worker does with a payload that does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnPoison {
    /// The seed: the exception reaches the loop's catch, which sleeps `ms` (1000) and goes
    /// on; the entry stays in processing (its LREM is skipped).
    SeedSleep { ms: f64 },
    /// Move it to the dead-letter list at once.
    DeadLetter,
}

/// A job a worker took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The value in the processing list (the payload, or `<token>|<payload>`); None after BRPOP.
    pub entry: Option<String>,
    pub payload: String,
    /// The lease deadline, ms on the server's clock.
    pub lease_until_ms: Option<i64>,
}

/// Take the next job (None: the lease fetch found the queue empty; blocking takes wait).
pub async fn take<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &ListKeys,
    how: Take,
    lease_ms: u64,
    identity: Identity,
) -> redis::RedisResult<Option<Taken>> {
    let moved = |payload: String| Taken { entry: Some(payload.clone()), payload, lease_until_ms: None };
    Ok(match how {
        Take::Brpop => {
            let got: Option<(String, String)> = redis::cmd("BRPOP").arg(&keys.queue).arg(0).query_async(conn).await?;
            got.map(|(_, payload)| Taken { entry: None, payload, lease_until_ms: None })
        }
        Take::Brpoplpush => {
            let got: Option<String> =
                redis::cmd("BRPOPLPUSH").arg(&keys.queue).arg(&keys.processing).arg(0).query_async(conn).await?;
            got.map(moved)
        }
        Take::Blmove => {
            let got: Option<String> = redis::cmd("BLMOVE")
                .arg(&keys.queue)
                .arg(&keys.processing)
                .arg("RIGHT")
                .arg("LEFT")
                .arg(0)
                .query_async(conn)
                .await?;
            got.map(moved)
        }
        Take::Lease => {
            let token = matches!(identity, Identity::Token);
            let got: Option<(String, String, i64)> = redis::Script::new(FETCH)
                .key(&keys.queue)
                .key(&keys.processing)
                .key(&keys.leases)
                .key(&keys.tokens)
                .arg(lease_ms)
                .arg(if token { "token" } else { "payload" })
                .invoke_async(conn)
                .await?;
            got.map(|(entry, payload, until)| Taken { entry: Some(entry), payload, lease_until_ms: Some(until) })
        }
    })
}

/// Remove a finished entry from the processing list (LREM by value, count 1, as the seed does)
/// and its lease: the number LREM removed (0: the entry was no longer there).
pub async fn finish<C: ConnectionLike + Send>(conn: &mut C, keys: &ListKeys, entry: &str) -> redis::RedisResult<i64> {
    redis::Script::new(ACK).key(&keys.processing).key(&keys.leases).arg(entry).invoke_async(conn).await
}

/// Take a failed entry out of processing and schedule `payload` again in `delay_ms` (server
/// clock), in one step. Returns the due time.
pub async fn retry_later<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &ListKeys,
    entry: &str,
    payload: &str,
    delay_ms: u64,
) -> redis::RedisResult<i64> {
    redis::Script::new(RETRY_LATER)
        .key(&keys.processing)
        .key(&keys.leases)
        .key(&keys.delayed)
        .arg(entry)
        .arg(payload)
        .arg(delay_ms)
        .invoke_async(conn)
        .await
}

/// Take an entry out of processing and push `payload` to the dead-letter list, in one step.
pub async fn dead_letter<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &ListKeys,
    entry: &str,
    payload: &str,
) -> redis::RedisResult<i64> {
    redis::Script::new(DEAD_LETTER)
        .key(&keys.processing)
        .key(&keys.leases)
        .key(&keys.failed)
        .arg(entry)
        .arg(payload)
        .invoke_async(conn)
        .await
}

/// An entry the reaper put back: its payload and how long ago its lease had run out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requeued {
    pub entry: String,
    pub payload: String,
    pub expired_ms_ago: i64,
}

/// Put every entry whose lease has run out back at the head of the queue (the next one taken).
/// A lease whose entry is gone from processing is only removed.
pub async fn requeue_expired<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &ListKeys,
) -> redis::RedisResult<Vec<Requeued>> {
    let got: Vec<(String, String, i64)> = redis::Script::new(REQUEUE_EXPIRED)
        .key(&keys.queue)
        .key(&keys.processing)
        .key(&keys.leases)
        .invoke_async(conn)
        .await?;
    Ok(got.into_iter().map(|(entry, payload, expired_ms_ago)| Requeued { entry, payload, expired_ms_ago }).collect())
}

/// Move every due retry back to the head of the queue: each payload and how late it was moved.
pub async fn move_due<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &ListKeys,
) -> redis::RedisResult<Vec<(String, i64)>> {
    redis::Script::new(MOVE_DUE).key(&keys.delayed).key(&keys.queue).invoke_async(conn).await
}

/// `now`: ms on the server's clock, inside a script (scripts use the server's clock only, so
/// no client clock is ever compared with a deadline).
macro_rules! lua_now {
    () => {
        "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
    };
}

/// KEYS queue, processing, leases, tokens; ARGV lease_ms, identity (`payload` | `token`).
/// Pops the queue's head (RIGHT), pushes the entry into processing and leases it, atomically.
/// Returns {entry, payload, lease deadline} or nil when the queue is empty.
pub const FETCH: &str = concat!(
    "local p = redis.call('RPOP', KEYS[1]) if not p then return false end ",
    "local e = p if ARGV[2] == 'token' then e = redis.call('INCR', KEYS[4]) .. '|' .. p end ",
    "redis.call('LPUSH', KEYS[2], e) ",
    lua_now!(),
    "local until_ms = now + tonumber(ARGV[1]) redis.call('ZADD', KEYS[3], until_ms, e) ",
    "return {e, p, until_ms}"
);

/// KEYS processing, leases; ARGV entry. LREM 1 + ZREM; returns LREM's count.
pub const ACK: &str = "local n = redis.call('LREM', KEYS[1], 1, ARGV[1]) redis.call('ZREM', KEYS[2], ARGV[1]) return n";

/// KEYS processing, leases, delayed; ARGV entry, payload, delay_ms. Returns the due time.
pub const RETRY_LATER: &str = concat!(
    "redis.call('LREM', KEYS[1], 1, ARGV[1]) redis.call('ZREM', KEYS[2], ARGV[1]) ",
    lua_now!(),
    "local due = now + tonumber(ARGV[3]) redis.call('ZADD', KEYS[3], due, ARGV[2]) return due"
);

/// KEYS processing, leases, failed; ARGV entry, payload. Returns the dead-letter list's length.
pub const DEAD_LETTER: &str = concat!(
    "redis.call('LREM', KEYS[1], 1, ARGV[1]) redis.call('ZREM', KEYS[2], ARGV[1]) ",
    "return redis.call('RPUSH', KEYS[3], ARGV[2])"
);

/// KEYS queue, processing, leases. For each lease at or before now (server clock), oldest
/// first, at most 100: ZREM it, and if LREM 1 finds its entry, RPUSH the payload (a token is
/// stripped). Returns {entry, payload, ms since the lease ran out} per job put back.
pub const REQUEUE_EXPIRED: &str = concat!(
    lua_now!(),
    "local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 100) ",
    "local out = {} ",
    "for i = 1, #due, 2 do ",
    "  local e = due[i] redis.call('ZREM', KEYS[3], e) ",
    "  if redis.call('LREM', KEYS[2], 1, e) == 1 then ",
    "    local p = string.match(e, '^%d+|(.*)$') or e ",
    "    redis.call('RPUSH', KEYS[1], p) ",
    "    table.insert(out, {e, p, now - tonumber(due[i + 1])}) ",
    "  end ",
    "end ",
    "return out"
);

/// KEYS delayed, queue. Every retry due at or before now, at most 100: ZREM + RPUSH. Returns
/// {payload, ms late} per job moved.
pub const MOVE_DUE: &str = concat!(
    lua_now!(),
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 100) ",
    "local out = {} ",
    "for i = 1, #due, 2 do ",
    "  redis.call('ZREM', KEYS[1], due[i]) redis.call('RPUSH', KEYS[2], due[i]) ",
    "  table.insert(out, {due[i], now - tonumber(due[i + 1])}) ",
    "end ",
    "return out"
);

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: Option<&str>) -> ListJob {
        ListJob {
            id: id.map(str::to_string),
            name: "send_welcome_email".into(),
            data: serde_json::json!({ "email": "a@example.com" }),
            attempts: 0,
            max_attempts: 3,
            created_at: 1,
        }
    }

    #[test]
    fn the_payload_has_the_seeds_field_names() {
        let json = job(Some("job-0001")).to_json();
        assert!(json.contains("\"maxAttempts\":3") && json.contains("\"createdAt\":1"), "{json}");
        assert_eq!(ListJob::parse(&json).unwrap(), job(Some("job-0001")));
        assert!(!job(None).to_json().contains("\"id\""));
    }

    #[test]
    fn a_job_is_named_by_its_id_else_its_name_and_poison_by_its_first_bytes() {
        assert_eq!(payload_label(&job(Some("job-0007")).to_json()), "job-0007");
        assert_eq!(payload_label(&job(None).to_json()), "send_welcome_email");
        assert_eq!(payload_label("{\"id\":\"job-0003\",\"name\":"), "{\"id\":\"job-0003\",\"name\":");
        assert_eq!(payload_label("{\"id\":\"job-0003\",\"name\":\"x"), "{\"id\":\"job-0003\",\"name\"…");
    }

    #[test]
    fn numbered_jobs_have_working_ids_and_their_size() {
        assert_eq!(job_id(42), "job-000042");
        assert_eq!(job_number("job-000042"), Some(42));
        assert_eq!(job_number("x-1"), None);
        let j = numbered_job(7, 200, 1);
        assert_eq!(j.label(), "job-000007");
        assert!((195..=205).contains(&j.to_json().len()), "{}", j.to_json().len());
        assert!(numbered_job(7, 10, 1).data.get("note").is_none());
    }

    #[test]
    fn backoff_doubles_from_its_base() {
        let b = Backoff { base_ms: 200.0, factor: 2.0, max_attempts: 4 };
        assert_eq!([b.delay_after(1), b.delay_after(2), b.delay_after(3)], [200.0, 400.0, 800.0]);
    }

    #[test]
    fn a_failure_counts_one_attempt() {
        assert_eq!(job(None).failed_once().attempts, 1);
    }

    #[test]
    fn keys_keep_the_prefix_and_its_hash_tag() {
        let k = ListKeys::new("{shard-1}:");
        assert_eq!(k.queue, "{shard-1}:queue:default");
        assert!([&k.processing, &k.leases, &k.delayed, &k.retry, &k.failed, &k.tokens]
            .iter()
            .all(|x| x.starts_with("{shard-1}:")));
    }
}
