//! A sorted-set worker: one OS process that takes the highest-scored job from one sorted set
//! and handles it, as the seed's `sorted_set_worker` does (`ZPOPMAX`, then `sleep(0.5)` when
//! the set is empty), with `BZPOPMAX` (which the seed says does not exist), or with a reliable
//! pop: a Lua script moves the job into a `processing` set scored by its lease deadline, and
//! expired leases go back to the queue with their score.
//!
//! A job is done when its id is in the run's `done` set on the server: the lab counts lost
//! jobs from the server, not from what the worker says.

use crate::error::{Context, Error};
use crate::fault::crash_now;
use crate::lang::Words;
use crate::priority_queue::PriorityEvent;
use crate::priority_queue::{Phase, Priority};
use crate::roles::consumer::named_connection;
use crate::roles::RoleEnv;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};

/// How the worker takes a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PopSpec {
    /// `ZPOPMAX`; when the set is empty, sleep `sleep_ms` and try again (the seed: 500 ms).
    PollSleep {
        #[serde(default = "seed_sleep")]
        sleep_ms: f64,
    },
    /// `BZPOPMAX <set> 0`: blocked until a job arrives.
    Bzpopmax,
    /// A Lua script pops and leases (`processing` scored by the deadline); before each pop
    /// any expired lease goes back to the queue with its score; `sleep_ms` when empty.
    Reliable {
        lease_ms: f64,
        #[serde(default = "reliable_sleep")]
        sleep_ms: f64,
    },
}

fn seed_sleep() -> f64 {
    500.0
}
fn reliable_sleep() -> f64 {
    50.0
}

impl PopSpec {
    pub fn name(&self) -> &'static str {
        match self {
            PopSpec::PollSleep { .. } => "poll-sleep",
            PopSpec::Bzpopmax => "bzpopmax",
            PopSpec::Reliable { .. } => "reliable",
        }
    }

    /// The pop as a timeline shows it (durations as sent, after the time scale).
    pub fn command(&self, scale: crate::fault::TimeScale) -> String {
        match self {
            PopSpec::PollSleep { sleep_ms } => format!("ZPOPMAX jobs (empty: sleep {:.0} ms)", sleep_ms * scale.0),
            PopSpec::Bzpopmax => "BZPOPMAX jobs 0".to_string(),
            PopSpec::Reliable { lease_ms, .. } => format!("pop-and-lease {:.0} ms (Lua)", lease_ms * scale.0),
        }
    }
}

/// The run's keys.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZsetKeys {
    pub queue: String,
    pub processing: String,
    /// Each leased member's score, to requeue it as it was.
    pub scores: String,
    pub done: String,
}

impl ZsetKeys {
    pub fn new(prefix: &str) -> ZsetKeys {
        ZsetKeys {
            queue: format!("{prefix}jobs"),
            processing: format!("{prefix}processing"),
            scores: format!("{prefix}scores"),
            done: format!("{prefix}done"),
        }
    }
}

/// Everything a sorted-set worker needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZsetWorkerConfig {
    pub env: RoleEnv,
    /// 1-based; the process is `C<index>` in the timeline.
    pub index: u32,
    pub client_name: String,
    pub keys: ZsetKeys,
    pub pop: PopSpec,
    /// Handler work per priority in ms (critical, normal, low; before the time scale).
    pub cost_ms: [f64; 3],
    /// Kill this process with SIGKILL right after its n-th pop, before handling the job.
    #[serde(default)]
    pub crash_after_pops: Option<u32>,
}

/// A popped member as the worker reads it: a JSON object with `job` (or the seed's
/// `order_id`), `priority` (or the seed's `type`), and optionally `phase`, `traced` and
/// `queued_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub job: String,
    pub priority: Priority,
    pub phase: Phase,
    pub traced: bool,
    pub queued_ns: Option<u64>,
}

impl Member {
    pub fn parse(member: &str) -> Option<Member> {
        let v: serde_json::Value = serde_json::from_str(member).ok()?;
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let priority = match text("priority").or_else(|| text("type"))?.as_str() {
            "critical" | "payment" => Priority::Critical,
            "normal" | "email" => Priority::Normal,
            _ => Priority::Low,
        };
        Some(Member {
            job: ["job", "order_id", "user_id", "date"].iter().find_map(|k| text(k))?,
            priority,
            phase: text("phase").map_or(Ok(Phase::Ties), |p| p.parse()).ok()?,
            traced: v.get("traced").and_then(|x| x.as_bool()).unwrap_or(true),
            queued_ns: v.get("queued_ns").and_then(|x| x.as_u64()),
        })
    }
}

/// Pop and lease: `ZPOPMAX`, then the member into `processing` scored by now + lease (server
/// clock) and its score kept. Returns `{member, score}` or nil.
const POP_AND_LEASE: &str = r#"
local r = redis.call('ZPOPMAX', KEYS[1])
if #r == 0 then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), r[1])
redis.call('HSET', KEYS[3], r[1], r[2])
return r
"#;

/// Every member whose lease ended goes back to the queue with its score; returns them.
const REQUEUE_EXPIRED: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, m in ipairs(expired) do
  redis.call('ZADD', KEYS[1], redis.call('HGET', KEYS[3], m), m)
  redis.call('ZREM', KEYS[2], m)
end
return expired
"#;

/// The worker loop; returns only on error.
pub async fn run(cfg: ZsetWorkerConfig) -> Result<(), Error> {
    let mut conn = named_connection(&cfg.env.redis_url, &cfg.client_name).await?;
    let actor = Actor::Consumer(cfg.index);
    let (pop_script, requeue) = (redis::Script::new(POP_AND_LEASE), redis::Script::new(REQUEUE_EXPIRED));
    StdoutSink.emit(actor, EventKind::Ready);
    let (mut pops, mut was_empty) = (0, false);
    loop {
        if let PopSpec::Reliable { .. } = cfg.pop {
            let back: Vec<String> = requeue
                .key(&cfg.keys.queue)
                .key(&cfg.keys.processing)
                .key(&cfg.keys.scores)
                .invoke_async(&mut conn)
                .await
                .context("requeue expired leases")?;
            for m in back.iter().filter_map(|m| Member::parse(m)) {
                StdoutSink.emit(actor, PriorityEvent::JobRequeued { job: m.job }.event());
            }
        }
        let started = crate::clock::now_ns();
        let popped = pop(&mut conn, &cfg, &pop_script).await?;
        let waited_ms = (crate::clock::now_ns() - started) as f64 / 1e6;
        // A run of empty polls is reported once, at its first: the server counts the rest
        // (INFO commandstats), and a timeline line every 10 ms would drown the jobs.
        if !(was_empty && popped.is_none()) {
            let read = cfg.pop.command(cfg.env.scale);
            let got = vec![u32::from(popped.is_some())];
            StdoutSink
                .emit(actor, PriorityEvent::QueueRead { read, queues: Vec::new(), count: 1, got, waited_ms }.event());
        }
        was_empty = popped.is_none();
        match popped {
            Some(member) => {
                pops += 1;
                handle(&mut conn, &cfg, &member, cfg.crash_after_pops == Some(pops)).await?
            }
            None => match cfg.pop {
                PopSpec::PollSleep { sleep_ms } | PopSpec::Reliable { sleep_ms, .. } => {
                    cfg.env.scale.sleep(sleep_ms).await
                }
                PopSpec::Bzpopmax => {}
            },
        }
    }
}

/// One pop: the member, or None when the set was empty.
async fn pop(
    conn: &mut MultiplexedConnection,
    cfg: &ZsetWorkerConfig,
    script: &redis::Script,
) -> Result<Option<String>, Error> {
    let q = &cfg.keys.queue;
    Ok(match &cfg.pop {
        PopSpec::PollSleep { .. } => {
            let r: Vec<(String, f64)> = redis::cmd("ZPOPMAX").arg(q).query_async(conn).await.context("ZPOPMAX")?;
            r.into_iter().next().map(|(m, _)| m)
        }
        PopSpec::Bzpopmax => {
            let r: Option<(String, String, f64)> =
                redis::cmd("BZPOPMAX").arg(q).arg(0).query_async(conn).await.context("BZPOPMAX")?;
            r.map(|(_, m, _)| m)
        }
        PopSpec::Reliable { lease_ms, .. } => {
            let lease = (lease_ms * cfg.env.scale.0).ceil().max(1.0) as u64;
            let r: Option<(String, f64)> = script
                .key(q)
                .key(&cfg.keys.processing)
                .key(&cfg.keys.scores)
                .arg(lease)
                .invoke_async(conn)
                .await
                .context("pop-and-lease")?;
            r.map(|(m, _)| m)
        }
    })
}

/// One job: maybe the planned crash, then its work, then done (on the server).
async fn handle(
    conn: &mut MultiplexedConnection,
    cfg: &ZsetWorkerConfig,
    member: &str,
    crash: bool,
) -> Result<(), Error> {
    let actor = Actor::Consumer(cfg.index);
    let Some(m) = Member::parse(member) else {
        StdoutSink.emit(actor, EventKind::crashed(false, format!("undecodable member {member}")));
        return Ok(());
    };
    let waited_ms = m.queued_ns.map(|q| crate::clock::now_ns().saturating_sub(q) as f64 / 1e6);
    let (job, priority, phase, traced) = (m.job.clone(), m.priority, m.phase, m.traced);
    StdoutSink.emit(actor, PriorityEvent::PriorityJobTaken { job, priority, phase, traced, waited_ms }.event());
    if crash {
        crash_now(
            &StdoutSink,
            actor,
            Words::new(
                format!("right after popping {}, before handling it", m.job),
                format!("ngay sau khi pop {}, trước khi xử lý", m.job),
            ),
        );
    }
    cfg.env.scale.sleep(cfg.cost_ms[m.priority.index()]).await;
    let mut done = redis::pipe();
    done.atomic().cmd("SADD").arg(&cfg.keys.done).arg(&m.job).ignore();
    if let PopSpec::Reliable { .. } = cfg.pop {
        done.cmd("ZREM").arg(&cfg.keys.processing).arg(member).ignore();
        done.cmd("HDEL").arg(&cfg.keys.scores).arg(member).ignore();
    }
    done.query_async::<()>(conn).await.context("mark done")?;
    StdoutSink.emit(actor, PriorityEvent::JobDone { job: m.job }.event());
    Ok(())
}

impl crate::roles::Role for ZsetWorkerConfig {
    const NAME: &'static str = "zset-worker";

    fn actor(&self) -> crate::timeline::Actor {
        use crate::timeline::Actor;
        Actor::Consumer(self.index)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::zset_worker::*;

    #[test]
    fn members_are_the_labs_json_or_the_seeds_own() {
        let seed = Member::parse(r#"{"type":"payment","order_id":"A1"}"#).unwrap();
        assert_eq!(
            (seed.job.as_str(), seed.priority, seed.phase, seed.queued_ns),
            ("A1", Priority::Critical, Phase::Ties, None)
        );
        assert_eq!(
            Member::parse(r#"{"type":"analytics","date":"2026-06-01","order_id":"X"}"#).unwrap().priority,
            Priority::Low
        );
        let ours =
            Member::parse(r#"{"job":"l-0001","priority":"low","phase":"flood","traced":false,"queued_ns":7}"#).unwrap();
        assert_eq!(
            (ours.priority, ours.phase, ours.traced, ours.queued_ns),
            (Priority::Low, Phase::Flood, false, Some(7))
        );
        assert!(Member::parse("not json").is_none());
        assert_eq!(Member::parse(r#"{"type":"email","user_id":"U5"}"#).unwrap().job, "U5");
    }
}
