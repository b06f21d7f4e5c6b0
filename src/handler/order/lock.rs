//! Per-key lock: `SET lock:order:<id> <token> NX PX <ttl>`, retried until taken, released
//! only if still ours. A lock gives mutual exclusion, not order: whoever asks first wins, and
//! that is decided by who received what first and by the scheduler, not by the events' order.
//!
//! Release uses `DELEX key IFEQ token` where the server has it (Redis ≥ 8.4) and otherwise
//! the classic atomic Lua compare-and-delete; the timeline says which one ran.

use crate::handler::order::events::HandlerEvent;
use crate::timeline::vocabulary::Vocabulary as _;
use super::{plain, Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::error::{Context, Error};
use crate::lang::Lang;
use crate::timeline::RawEvent;
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use crate::fault::TimeScale;

/// The compare-and-delete every Redis before 8.4 needs: delete only if the value is our token.
const COMPARE_AND_DELETE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// `strategy = { kind = "lock", ttl_ms = 5000, retry_ms = 20, prework_max_ms = 0 }`, and
/// `release = "del"` for a plain `DEL` instead of the release by token.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    #[serde(default = "LockSpec::default_ttl")]
    pub ttl_ms: u64,
    #[serde(default = "LockSpec::default_retry")]
    pub retry_ms: u64,
    /// Random work before taking the lock, uniform in `[0, prework_max_ms]` (seeded RNG).
    #[serde(default)]
    pub prework_max_ms: u64,
    /// How the holder releases it: by its token (default), or `"del"`, a plain `DEL` that
    /// deletes the key whoever holds it by then (the mistake the token exists to prevent).
    #[serde(default, skip_serializing_if = "Release::is_token")]
    pub release: Release,
}

/// How a holder releases its lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    /// Only if the key still holds our token: `DELEX IFEQ`, or the Lua compare-and-delete.
    #[default]
    Token,
    /// `DEL key`, whoever's lock it is.
    Del,
}

impl Release {
    fn is_token(&self) -> bool {
        *self == Release::Token
    }
}

impl Default for LockSpec {
    fn default() -> Self {
        LockSpec {
            ttl_ms: Self::default_ttl(),
            retry_ms: Self::default_retry(),
            prework_max_ms: 0,
            release: Release::Token,
        }
    }
}

/// A lock we took: its logical key (as reports show it) and our token.
struct Held {
    key: String,
    token: String,
}

impl Described for LockSpec {
    fn describe(&self, lang: Lang) -> String {
        let (ttl, retry, pre) = (self.ttl_ms, self.retry_ms, self.prework_max_ms);
        let mut t = crate::tr!(
            lang,
            "per-key lock SET NX PX {ttl}, retry every {retry} ms",
            "lock theo khoá SET NX PX {ttl}, thử lại mỗi {retry} ms"
        );
        if pre > 0 {
            t.push_str(&crate::tr!(lang, ", 0–{pre} ms random work first", ", làm việc ngẫu nhiên 0–{pre} ms trước"));
        }
        if self.release == Release::Del {
            t.push_str(&crate::tr!(lang, ", released by a plain DEL", ", nhả bằng DEL thường"));
        }
        t
    }

    fn short(&self) -> String {
        let del = if self.release == Release::Del { ", plain DEL" } else { "" };
        if self.prework_max_ms > 0 {
            format!("lock TTL {} ms, 0–{} ms pre-work{del}", self.ttl_ms, self.prework_max_ms)
        } else {
            format!("lock TTL {} ms{del}", self.ttl_ms)
        }
    }
}

impl StrategyKind for LockSpec {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        let held = self.acquire(h, d.job.order).await?;
        h.work(d).await;
        plain::write(h, d).await?;
        release(h, held, self.release).await
    }

    fn lock_ttl_ms(&self) -> Option<u64> {
        Some(self.ttl_ms)
    }

    /// Waiting for the lock (at most its TTL) after the random pre-work.
    fn max_wait_per_event_ms(&self) -> f64 {
        (self.ttl_ms + self.prework_max_ms) as f64
    }
}

impl LockSpec {
    /// What a worker from a command line needs to take the same lock (examples/README.md):
    /// the key prefix its order id goes after, the PX (time scale applied), the retry pause,
    /// the random pre-work bound, and the release the server has (`DELEX` on Redis ≥ 8.4,
    /// otherwise `EVAL`, the Lua compare-and-delete).
    pub fn worker_env(&self, key_prefix: &str, scale: TimeScale, has_delex: bool) -> BTreeMap<String, String> {
        let ms = |v: u64| (v as f64 * scale.0).to_string();
        BTreeMap::from([
            ("ORDLAB_LOCK_PREFIX".to_string(), format!("{key_prefix}lock:order:")),
            ("ORDLAB_LOCK_TTL_MS".to_string(), scale.timer_ms(self.ttl_ms).to_string()),
            ("ORDLAB_LOCK_RETRY_MS".to_string(), ms(self.retry_ms)),
            ("ORDLAB_LOCK_PREWORK_MAX_MS".to_string(), ms(self.prework_max_ms)),
            ("ORDLAB_LOCK_RELEASE".to_string(), if has_delex { "DELEX" } else { "EVAL" }.to_string()),
        ])
    }

    fn default_ttl() -> u64 {
        5000
    }
    fn default_retry() -> u64 {
        20
    }

    /// Optional random work, then try `SET NX PX` every `retry_ms` until it succeeds.
    async fn acquire(&self, h: &mut Handler<'_>, order: i64) -> Result<Held, Error> {
        if self.prework_max_ms > 0 {
            let ms = h.rng.random_range(0..=self.prework_max_ms);
            h.scale.sleep(ms as f64).await;
        }
        let key = format!("lock:order:{order}");
        let token = format!("{}-{:016x}", h.actor, h.rng.next_u64());
        let ttl = h.scale.timer_ms(self.ttl_ms);
        let mut tries = 0u32;
        loop {
            tries += 1;
            let sent_ns = crate::clock::now_ns();
            let taken: Option<String> = redis::cmd("SET")
                .arg(format!("{}{key}", h.key_prefix))
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(ttl)
                .query_async(h.redis)
                .await
                .context("SET NX PX")?;
            if taken.is_some() {
                // Stamped at the reply; the send time goes with it, so the exclusion checker
                // can tell when the lock could have expired at the earliest.
                let round_trip_us = (crate::clock::now_ns().saturating_sub(sent_ns) / 1000) as i64;
                h.emit(HandlerEvent::LockAcquired { key: key.clone(), tries, ttl_ms: self.ttl_ms, px_ms: ttl, round_trip_us }.event());
                return Ok(Held { key, token });
            }
            h.scale.sleep(self.retry_ms as f64).await;
        }
    }
}

/// Release only if the lock is still ours; the server's answer goes into the timeline.
async fn release(h: &mut Handler<'_>, held: Held, how: Release) -> Result<(), Error> {
    let full_key = format!("{}{}", h.key_prefix, held.key);
    // Stamped when sent, before the server deletes the key: with the acquisition stamped at its
    // reply, two holders' intervals can then never overlap under a correct lock.
    let sent_ns = crate::clock::now_ns();
    let (method, released): (&str, i64) = if how == Release::Del {
        let n = redis::cmd("DEL").arg(&full_key).query_async(h.redis).await.context("DEL")?;
        ("DEL", n)
    } else if h.has_delex {
        let n = redis::cmd("DELEX")
            .arg(&full_key)
            .arg("IFEQ")
            .arg(&held.token)
            .query_async(h.redis)
            .await
            .context("DELEX IFEQ")?;
        ("DELEX IFEQ", n)
    } else {
        let n = redis::Script::new(COMPARE_AND_DELETE)
            .key(&full_key)
            .arg(&held.token)
            .invoke_async(h.redis)
            .await
            .context("Lua compare-and-delete")?;
        ("Lua compare-and-delete", n)
    };
    let kind = HandlerEvent::LockReleased { key: held.key, method: method.to_string(), released }.event();
    h.sink.record(RawEvent { mono_ns: sent_ns, actor: h.actor, kind });
    Ok(())
}
