//! A list-queue worker (actor `W<n>`): seed 003's `TaskQueueWorker` as an OS process. It takes
//! a job from the queue list (BRPOP, the seed's BRPOPLPUSH or BLMOVE into the processing list,
//! or the lease fetch script), runs the handler (an injected sleep, then the job's side effect
//! at the outside partner, the sink), and removes the entry from processing by value (LREM).
//! A failed job goes where its policy says (the seed's `queue:retry`, or a delayed retry and
//! the dead-letter list); a payload that does not parse is slept over (the seed) or
//! dead-lettered at once. It can kill itself at a planned point.
//!
//! The loop ([`run_loop`]) is generic over the Redis connection, so a cluster connection can
//! drive it too.

use crate::error::{Context, Error};
use crate::fault::{Fault, ListPoint};
use crate::lang::Words;
use crate::list_queue::events::{DeadLetterReason, ListEvent};
use crate::list_queue::{self, payload_label, Identity, ListJob, ListKeys, OnFailure, OnPoison, Take, Taken};
use crate::roles::RoleEnv;
use crate::side_effect::{EffectRequest, SideEffectSink, SinkConfig};
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, EventKind, Sink, StdoutSink};
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything a list worker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListWorkerConfig {
    pub env: RoleEnv,
    /// 1-based; the process is `W<index>` on the timeline.
    pub index: u32,
    /// `CLIENT SETNAME` of its connection, so the orchestrator can see it wait.
    pub client_name: String,
    pub keys: ListKeys,
    pub take: Take,
    #[serde(default)]
    pub identity: Identity,
    /// Lease of the lease fetch, and how often an idle worker polls with it (ms, before scale).
    pub lease_ms: f64,
    pub poll_ms: f64,
    pub on_failure: OnFailure,
    pub on_poison: OnPoison,
    /// Handler work of this worker (ms, before scale), unless the job has its own.
    pub cost_ms: f64,
    #[serde(default)]
    pub job_cost_ms: BTreeMap<String, f64>,
    /// Handler work of a job's first delivery only (whichever worker takes it first).
    #[serde(default)]
    pub first_cost_ms: BTreeMap<String, f64>,
    /// Its faults at its named points (`after-take`, `after-effect`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    pub sink: SinkConfig,
    /// The side effect every job asks the partner for (`email`).
    pub effect: String,
}

impl ListWorkerConfig {
    pub fn actor(&self) -> Actor {
        Actor::Worker(self.index)
    }

    /// What the timeline calls the way it takes jobs.
    pub fn via(&self) -> &'static str {
        match self.take {
            Take::Brpop => "BRPOP",
            Take::Brpoplpush => "BRPOPLPUSH",
            Take::Blmove => "BLMOVE",
            Take::Lease => "lease script",
        }
    }
}

/// The worker process: connect, name the connection, run the loop until killed.
pub async fn run(cfg: ListWorkerConfig) -> Result<(), Error> {
    crate::fault::role::install(&cfg.faults, cfg.env.seed, cfg.env.scale);
    let mut conn = crate::connect::redis(&cfg.env.redis_url).await.context("worker connect")?;
    crate::roles::client_list::name_connection(&mut conn, &cfg.client_name).await?;
    let sink = SideEffectSink::connect(&cfg.sink).await?;
    run_loop(&mut conn, &cfg, &sink, &StdoutSink).await
}

/// Take, handle and finish jobs until an error (or the process is killed).
pub async fn run_loop<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListWorkerConfig,
    partner: &SideEffectSink,
    events: &dyn Sink,
) -> Result<(), Error> {
    let (actor, scale) = (cfg.actor(), cfg.env.scale);
    // A server timer: under the explorer so long that only a timer step runs it out.
    let lease_ms = scale.timer_ms(cfg.lease_ms.round() as u64);
    events.emit(actor, EventKind::Ready);
    loop {
        let taken = list_queue::take(conn, &cfg.keys, cfg.take, lease_ms, cfg.identity).await.context("take a job")?;
        let Some(taken) = taken else {
            scale.sleep(cfg.poll_ms).await;
            continue;
        };
        let label = payload_label(&taken.payload);
        // The lab's lease, as the timeline shows it (under the explorer a timer step ends it).
        let lease = taken.lease_until_ms.map(|_| scale.ms_ceil(cfg.lease_ms.round() as u64) as f64);
        events.emit(actor, ListEvent::Taken { job: label.clone(), via: cfg.via().into(), lease_ms: lease }.event());
        maybe_crash(conn, cfg, &label, ListPoint::AfterTake).await?;
        match ListJob::parse(&taken.payload) {
            Ok(job) => handle(conn, cfg, partner, events, &taken, &job).await?,
            Err(_) => poison(conn, cfg, events, &taken, &label).await?,
        }
    }
}

/// The handler: work, the side effect, then LREM (or the failure policy when the partner refuses).
async fn handle<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListWorkerConfig,
    partner: &SideEffectSink,
    events: &dyn Sink,
    taken: &Taken,
    job: &ListJob,
) -> Result<(), Error> {
    let (actor, label) = (cfg.actor(), job.label().to_string());
    let mut cost = cfg.job_cost_ms.get(&label).copied().unwrap_or(cfg.cost_ms);
    if let Some(first) = cfg.first_cost_ms.get(&label) {
        if first_time(conn, cfg, &format!("slow:{label}")).await? {
            cost = *first;
        }
    }
    let work_ms = cfg.env.scale.duration(cost).as_secs_f64() * 1000.0;
    events.emit(actor, EventKind::WorkStarted { entry_id: label.clone(), ms: work_ms });
    cfg.env.scale.sleep(cost).await;
    let attempt = job.attempts + 1;
    let request = EffectRequest { job: &label, effect: &cfg.effect, idem_key: None, actor, delivery: Some(attempt) };
    match partner.perform(&request).await {
        Ok(_) => {}
        Err(e) if e.is_partner_failure() => {
            events
                .emit(actor, ListEvent::ListJobFailed { job: label.clone(), attempt, error: short_error(&e) }.event());
            return failed(conn, cfg, events, taken, job).await;
        }
        Err(e) => return Err(e.into()),
    }
    maybe_crash(conn, cfg, &label, ListPoint::AfterEffect).await?;
    let removed = match &taken.entry {
        Some(entry) => Some(list_queue::finish(conn, &cfg.keys, entry).await.context("LREM the finished job")?),
        None => None,
    };
    events.emit(actor, ListEvent::ListJobDone { job: label, removed }.event());
    Ok(())
}

/// A failed attempt: the seed pushes the job (attempts + 1) to `queue:retry` or `queue:failed`
/// and then LREMs it; the fixed worker schedules the retry or dead-letters it atomically.
async fn failed<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListWorkerConfig,
    events: &dyn Sink,
    taken: &Taken,
    job: &ListJob,
) -> Result<(), Error> {
    let (actor, label) = (cfg.actor(), job.label().to_string());
    let next = job.failed_once();
    let entry = taken.entry.clone().unwrap_or_default();
    match &cfg.on_failure {
        OnFailure::SeedRetryList => {
            let (to, event) = if next.attempts < next.max_attempts {
                let to = short_key(&cfg.keys.retry);
                (
                    &cfg.keys.retry,
                    ListEvent::RetryScheduled { job: label, attempt: next.attempts + 1, to, delay_ms: None }.event(),
                )
            } else {
                (
                    &cfg.keys.failed,
                    ListEvent::ListDeadLettered { job: label, reason: DeadLetterReason::MaxAttempts }.event(),
                )
            };
            redis::cmd("RPUSH").arg(to).arg(next.to_json()).query_async::<i64>(conn).await.context("RPUSH")?;
            events.emit(actor, event);
            if taken.entry.is_some() {
                redis::cmd("LREM")
                    .arg(&cfg.keys.processing)
                    .arg(1)
                    .arg(&entry)
                    .query_async::<i64>(conn)
                    .await
                    .context("LREM")?;
            }
        }
        OnFailure::Backoff(b) if next.attempts >= b.max_attempts => {
            list_queue::dead_letter(conn, &cfg.keys, &entry, &next.to_json()).await.context("dead-letter")?;
            events
                .emit(actor, ListEvent::ListDeadLettered { job: label, reason: DeadLetterReason::MaxAttempts }.event());
        }
        OnFailure::Backoff(b) => {
            let delay = cfg.env.scale.ms_ceil(b.delay_after(next.attempts).round() as u64);
            // A server timer: under the explorer it comes due only as its timer step.
            let due_in = cfg.env.scale.timer_ms(b.delay_after(next.attempts).round() as u64);
            list_queue::retry_later(conn, &cfg.keys, &entry, &next.to_json(), due_in)
                .await
                .context("schedule a retry")?;
            let to = short_key(&cfg.keys.delayed);
            events.emit(
                actor,
                ListEvent::RetryScheduled { job: label, attempt: next.attempts + 1, to, delay_ms: Some(delay as f64) }
                    .event(),
            );
        }
    }
    Ok(())
}

/// A payload that does not parse: the seed's catch sleeps and leaves it in processing; the
/// fixed worker moves it to the dead-letter list at once.
async fn poison<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListWorkerConfig,
    events: &dyn Sink,
    taken: &Taken,
    label: &str,
) -> Result<(), Error> {
    let actor = cfg.actor();
    match cfg.on_poison {
        OnPoison::SeedSleep { ms } => {
            let slept_ms = cfg.env.scale.duration(ms).as_secs_f64() * 1000.0;
            events.emit(actor, ListEvent::Poison { payload: label.to_string(), slept_ms }.event());
            cfg.env.scale.sleep(ms).await;
        }
        OnPoison::DeadLetter => {
            events.emit(actor, ListEvent::Poison { payload: label.to_string(), slept_ms: 0.0 }.event());
            let entry = taken.entry.clone().unwrap_or_default();
            list_queue::dead_letter(conn, &cfg.keys, &entry, &taken.payload).await.context("dead-letter")?;
            events.emit(
                actor,
                ListEvent::ListDeadLettered { job: label.to_string(), reason: DeadLetterReason::Poison }.event(),
            );
        }
    }
    Ok(())
}

async fn maybe_crash<C: ConnectionLike + Send>(
    conn: &mut C,
    cfg: &ListWorkerConfig,
    label: &str,
    at: ListPoint,
) -> Result<(), Error> {
    let fired = crate::fault::role::due(cfg.actor(), at.name(), Some(label), None);
    if fired.is_empty() {
        return Ok(());
    }
    let (point, detail) = match at {
        ListPoint::AfterTake => (
            "after taking",
            Words::new(format!("SIGKILL after taking {label}"), format!("SIGKILL sau khi lấy {label}")),
        ),
        ListPoint::AfterEffect => (
            "after the side effect, before LREM",
            Words::new(
                format!("SIGKILL after the side effect, before LREM {label}"),
                format!("SIGKILL sau hiệu ứng, trước LREM {label}"),
            ),
        ),
    };
    // Once per run, whichever worker gets there: the first to claim it dies.
    if first_time(conn, cfg, &format!("crash:{label}:{point}")).await? {
        for f in &fired {
            crate::fault::role::carry_out(f, cfg.actor(), detail.clone());
        }
    }
    Ok(())
}

/// True for the first worker of the run to ask about `what` (SET NX on a key of the run): a
/// planned fault hits one delivery, not every worker that takes the job again.
async fn first_time<C: ConnectionLike + Send>(conn: &mut C, cfg: &ListWorkerConfig, what: &str) -> Result<bool, Error> {
    let key = format!("{}fault:{what}", cfg.env.key_prefix);
    let set: Option<String> =
        redis::cmd("SET").arg(key).arg(cfg.index).arg("NX").query_async(conn).await.context("SET NX")?;
    Ok(set.is_some())
}

/// `queue:retry` for `ordlab:…:queue:retry`.
pub fn short_key(key: &str) -> String {
    let last_two: Vec<&str> = key.rsplitn(3, ':').take(2).collect();
    match last_two[..] {
        [last, before] => format!("{before}:{last}"),
        _ => key.to_string(),
    }
}

/// The partner's failure in a few words.
fn short_error(e: &crate::side_effect::SinkError) -> String {
    match e {
        crate::side_effect::SinkError::Refused { .. } => "partner refused (503)".into(),
        crate::side_effect::SinkError::ReplyLost { .. } => "partner's reply lost".into(),
        other => other.to_string(),
    }
}

impl crate::roles::Role for ListWorkerConfig {
    const NAME: &'static str = "list-worker";

    fn actor(&self) -> crate::timeline::Actor {
        ListWorkerConfig::actor(self)
    }

    async fn run(self) -> Result<(), crate::error::Error> {
        run(self).await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_shown_without_the_run_prefix() {
        assert_eq!(
            crate::labs::list_queue::worker::short_key("ordlab:ab12:list-retry:seed:1:queue:retry"),
            "queue:retry"
        );
        assert_eq!(crate::labs::list_queue::worker::short_key("queue:failed"), "queue:failed");
        assert_eq!(crate::labs::list_queue::worker::short_key("plain"), "plain");
    }
}
