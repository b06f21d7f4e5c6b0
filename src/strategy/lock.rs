//! Per-key lock: `SET lock:order:<id> <token> NX PX <ttl>`, retried until taken, released
//! only if still ours. A lock gives mutual exclusion, not order: whoever asks first wins,
//! and the OS scheduler, not the stream, decides who asks first.
//!
//! Release uses `DELEX key IFEQ token` where the server has it (Redis ≥ 8.4) and otherwise
//! the classic atomic Lua compare-and-delete; the timeline says which one ran.

use super::Handler;
use crate::error::{Context, Error};
use crate::scenario::LockSpec;
use crate::timeline::EventKind;
use rand::{Rng, RngCore};

/// The compare-and-delete every Redis before 8.4 needs: delete only if the value is our token.
const COMPARE_AND_DELETE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// A lock we took: its logical key (as reports show it) and our token.
pub struct Held {
    key: String,
    token: String,
}

/// Optional random work, then try `SET NX PX` every `retry_ms` until it succeeds.
pub async fn acquire(h: &mut Handler<'_>, spec: &LockSpec, order: i64) -> Result<Held, Error> {
    if spec.prework_max_ms > 0 {
        let ms = h.rng.random_range(0..=spec.prework_max_ms);
        h.scale.sleep(ms as f64).await;
    }
    let key = format!("lock:order:{order}");
    let token = format!("{}-{:016x}", h.actor, h.rng.next_u64());
    let ttl = h.scale.ms_ceil(spec.ttl_ms);
    let mut tries = 0u32;
    loop {
        tries += 1;
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
            h.emit(EventKind::LockAcquired { key: key.clone(), tries, ttl_ms: spec.ttl_ms });
            return Ok(Held { key, token });
        }
        h.scale.sleep(spec.retry_ms as f64).await;
    }
}

/// Release only if the lock is still ours; the server's answer goes into the timeline.
pub async fn release(h: &mut Handler<'_>, held: Held) -> Result<(), Error> {
    let full_key = format!("{}{}", h.key_prefix, held.key);
    let (method, released): (&str, i64) = if h.has_delex {
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
    h.emit(EventKind::LockReleased { key: held.key, method: method.to_string(), released });
    Ok(())
}
