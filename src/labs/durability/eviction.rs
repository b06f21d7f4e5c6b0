//! Eviction (seed 003's advice to "set a policy that deletes old data when memory is full"): a
//! Redis that also serves as a cache fills up while the job queue grows. Under an `allkeys-*`
//! policy the server makes room by deleting keys — cache keys first, then the queue itself, a
//! whole list at a time — and every push is still acknowledged: queued jobs vanish silently.
//! Under `volatile-*` (only keys with a TTL go) or `noeviction` the producer gets an error it
//! can handle (`OOM command not allowed…`) and nothing already queued is lost.
//!
//! One run, on a redis-server of its own: `cache_keys` keys with a TTL, then `maxmemory` set
//! to what the server uses plus `budget_kib`, then `jobs` pushes of ~`job_bytes` each, one at
//! a time. RPUSH answers the list's new length, so a reply of 1 after 9701 says the whole
//! queue went, with 9701 jobs. With `layout = "job-keys"` each job's body is a key of its own
//! (`job:<id>`, as Bull keeps jobs) and only its id is queued: eviction then takes the least
//! recently used bodies — the oldest jobs — and leaves their ids in the queue.

use crate::checker::{health::health, RunVerdict};
use crate::error::{Context, Error};
use crate::labs::durability::checker::{durability, Durability, JobRanges};
use crate::labs::{
    FactRow, Facts, FinalItem, Judge, LabProcedure, Line, Piece, Present, RunContext, RunNotes, RunOutcome, RunView,
};
use crate::lang::{pick, Lang};
use crate::list_queue::events::ListEvent;
use crate::list_queue::{job_id, job_number, numbered_job, ListJob};
use crate::service::NodeSpec;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, RawEvent, Sink};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// `kind = "eviction"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EvictionSpec {
    /// `maxmemory-policy`.
    pub policy: EvictionPolicy,
    /// Room above what the server uses once the cache is written, KiB.
    #[serde(default = "EvictionSpec::default_budget")]
    pub budget_kib: u64,
    /// Cache keys (with a TTL of an hour) written before the queue grows.
    #[serde(default = "EvictionSpec::default_cache_keys")]
    pub cache_keys: u64,
    #[serde(default = "EvictionSpec::default_cache_bytes")]
    pub cache_bytes: usize,
    /// Jobs pushed, one at a time.
    #[serde(default = "EvictionSpec::default_jobs")]
    pub jobs: u64,
    #[serde(default = "EvictionSpec::default_job_bytes")]
    pub job_bytes: usize,
    #[serde(default)]
    pub layout: QueueLayout,
}

/// Redis's `maxmemory-policy` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionPolicy {
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    Noeviction,
}

impl EvictionPolicy {
    /// allkeys-*: any key may go, a queue without a TTL too.
    pub fn evicts_any_key(self) -> bool {
        matches!(self, EvictionPolicy::AllkeysLru | EvictionPolicy::AllkeysLfu | EvictionPolicy::AllkeysRandom)
    }

    pub fn name(self) -> &'static str {
        match self {
            EvictionPolicy::AllkeysLru => "allkeys-lru",
            EvictionPolicy::AllkeysLfu => "allkeys-lfu",
            EvictionPolicy::AllkeysRandom => "allkeys-random",
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileLfu => "volatile-lfu",
            EvictionPolicy::VolatileRandom => "volatile-random",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
            EvictionPolicy::Noeviction => "noeviction",
        }
    }
}

/// How the queue keeps its jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueLayout {
    /// The seed's: every job's JSON in one list, `queue:default`.
    #[default]
    OneList,
    /// Each job's body in a key `job:<id>`, its id in the list `queue:ids` (MULTI/EXEC).
    JobKeys,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvictionObserved {
    /// Bytes the server used with the cache written, and the `maxmemory` set above it.
    pub used_before: i64,
    pub maxmemory: i64,
    pub acked: JobRanges,
    pub refused: JobRanges,
    /// The server's first refusal, word for word.
    pub first_refusal: Option<String>,
    /// Jobs still in the queue with their body.
    pub held: JobRanges,
    /// Whole-queue evictions: (the push that saw it, jobs the list held).
    pub queue_evictions: Vec<(u64, i64)>,
    /// Ids queued whose body key is gone (job-keys layout).
    pub ids_without_body: u64,
    pub cache_left: u64,
    /// INFO stats `evicted_keys`.
    pub evicted_keys: i64,
}

impl EvictionObserved {
    pub fn durability(&self) -> Durability {
        durability(&self.acked.ids(job_id), &self.refused.ids(job_id), &self.held.ids(job_id))
    }
}

impl EvictionSpec {
    fn default_budget() -> u64 {
        2048
    }
    fn default_cache_keys() -> u64 {
        2000
    }
    fn default_cache_bytes() -> usize {
        100
    }
    fn default_jobs() -> u64 {
        20000
    }
    fn default_job_bytes() -> usize {
        200
    }

    fn queue_key(&self, prefix: &str) -> String {
        match self.layout {
            QueueLayout::OneList => format!("{prefix}queue:default"),
            QueueLayout::JobKeys => format!("{prefix}queue:ids"),
        }
    }
}

/// What the producer was told, push by push.
#[derive(Default)]
struct Pushes {
    acked: Vec<u64>,
    refused: Vec<u64>,
    first_refusal: Option<String>,
    queue_evictions: Vec<(u64, i64)>,
}

/// What an eviction run measured; every figure differs from run to run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvictionFacts {
    pub acked: i64,
    pub refused: i64,
    pub held: i64,
    pub lost_acked: i64,
    pub queue_evictions: i64,
    pub ids_without_body: i64,
    pub cache_evicted: i64,
    pub evicted_keys: i64,
    /// The lowest and highest job number lost (0 when none was).
    pub oldest_lost: i64,
    pub newest_lost: i64,
}

impl Facts for EvictionFacts {
    fn rows(&self) -> Vec<FactRow> {
        vec![
            FactRow::measured("acked", self.acked),
            FactRow::measured("refused", self.refused),
            FactRow::measured("held", self.held),
            FactRow::measured("lost_acked", self.lost_acked),
            FactRow::measured("queue_evictions", self.queue_evictions),
            FactRow::measured("ids_without_body", self.ids_without_body),
            FactRow::measured("cache_evicted", self.cache_evicted),
            FactRow::measured("evicted_keys", self.evicted_keys),
            FactRow::measured("oldest_lost", self.oldest_lost),
            FactRow::measured("newest_lost", self.newest_lost),
        ]
    }
}

impl LabProcedure for EvictionSpec {
    fn needs(&self) -> crate::labs::Needs {
        crate::labs::Needs {
            not_external: Some("it starts a Redis server of its own (it fills one to maxmemory)"),
            ..Default::default()
        }
    }

    fn validate(&mut self) -> Result<(), String> {
        if self.jobs == 0 || self.budget_kib == 0 {
            return Err("setup.jobs and setup.budget_kib: use values > 0".into());
        }
        Ok(())
    }

    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<EvictionObserved>, Error> {
        let server = ctx.services.start_redis_node(&NodeSpec::new(["--maxmemory-policy", self.policy.name()])).await?;
        let mut conn = crate::connect::redis(&server.url).await.context("connect")?;
        let prefix = ctx.key_prefix();
        self.write_cache(&mut conn, &prefix).await?;
        let info = crate::redis_info::read(&mut conn, "memory").await.context("INFO memory")?;
        let used_before = crate::redis_info::int(&info, "used_memory").unwrap_or(0);
        let maxmemory = used_before + (self.budget_kib * 1024) as i64;
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(maxmemory)
            .query_async::<()>(&mut conn)
            .await
            .context("CONFIG SET maxmemory")?;
        let (tx, mut rx) = mpsc::unbounded_channel::<RawEvent>();
        let t0_ns = crate::clock::now_ns();
        let pushes = self.push_all(&mut conn, &prefix, &tx).await?;
        let (held, ids_without_body) = self.held(&mut conn, &prefix).await?;
        let cache_left = self.cache_left(&mut conn, &prefix).await?;
        let stats = crate::redis_info::read(&mut conn, "stats").await.context("INFO stats")?;
        server.stop().await;
        drop(tx);
        let mut raw = Vec::new();
        while let Some(ev) = rx.recv().await {
            raw.push(ev);
        }
        let observed = EvictionObserved {
            used_before,
            maxmemory,
            acked: JobRanges::from_numbers(pushes.acked),
            refused: JobRanges::from_numbers(pushes.refused),
            first_refusal: pushes.first_refusal,
            held,
            queue_evictions: pushes.queue_evictions,
            ids_without_body,
            cache_left,
            evicted_keys: crate::redis_info::int(&stats, "evicted_keys").unwrap_or(0),
        };
        Ok(RunOutcome { t0_ns, raw, timed_out: false, observed })
    }
}

impl Judge for EvictionSpec {
    type Observed = EvictionObserved;
    type Facts = EvictionFacts;

    fn judge(&self, run: &RunView<'_, EvictionObserved>) -> RunVerdict {
        health(run.events, run.timed_out).and(run.observed.durability().verdict())
    }

    fn final_state(&self, observed: &EvictionObserved) -> Vec<FinalItem> {
        crate::labs::durability::checker::acknowledged_jobs(&observed.durability())
    }

    fn facts(&self, run: &RunView<'_, EvictionObserved>) -> EvictionFacts {
        let o = run.observed;
        let d = o.durability();
        let lost: Vec<u64> = d.lost_acked.iter().filter_map(|id| job_number(id)).collect();
        EvictionFacts {
            acked: d.acked as i64,
            refused: d.refused as i64,
            held: d.held as i64,
            lost_acked: d.lost_acked.len() as i64,
            queue_evictions: o.queue_evictions.len() as i64,
            ids_without_body: o.ids_without_body as i64,
            cache_evicted: (self.cache_keys - o.cache_left.min(self.cache_keys)) as i64,
            evicted_keys: o.evicted_keys,
            oldest_lost: lost.iter().min().map_or(0, |n| *n as i64),
            newest_lost: lost.iter().max().map_or(0, |n| *n as i64),
        }
    }
}

impl Present for EvictionSpec {
    fn describe(&self, lang: Lang) -> String {
        let (policy, budget, cache, jobs, bytes) =
            (self.policy.name(), self.budget_kib, self.cache_keys, self.jobs, self.job_bytes);
        let layout = match (self.layout, lang) {
            (QueueLayout::OneList, Lang::En) => "one list (the seed's queue:default)",
            (QueueLayout::OneList, Lang::Vi) => "một list (queue:default của seed)",
            (QueueLayout::JobKeys, Lang::En) => "a key per job body, ids in a list (Bull-style)",
            (QueueLayout::JobKeys, Lang::Vi) => "mỗi job một key, id trong một list (kiểu Bull)",
        };
        crate::tr!(
            lang,
            "maxmemory-policy {policy}; maxmemory = used + {budget} KiB; {cache} cache keys with a TTL; {jobs} jobs of ~{bytes} B pushed into {layout}",
            "maxmemory-policy {policy}; maxmemory = đang dùng + {budget} KiB; {cache} key cache có TTL; đẩy {jobs} job ~{bytes} B vào {layout}"
        )
    }

    fn approach(&self) -> String {
        match self.layout {
            QueueLayout::OneList => self.policy.name().to_string(),
            QueueLayout::JobKeys => format!("{}, a key per job", self.policy.name()),
        }
    }

    fn wrong_means(&self, lang: Lang) -> String {
        pick(lang, "acknowledged jobs silently gone", "job đã được xác nhận biến mất không báo lỗi").into()
    }

    fn notes(&self, run: &RunView<'_, EvictionObserved>, lang: Lang) -> RunNotes {
        RunNotes { heading: None, after: notes(self, run.observed, lang) }
    }

    fn table_row(&self, run: &RunView<'_, EvictionObserved>, lang: Lang) -> Option<Vec<(String, Line)>> {
        let o = run.observed;
        let d = o.durability();
        Some(vec![
            (pick(lang, "policy", "chính sách").into(), Line::text(self.approach())),
            (pick(lang, "acknowledged", "đã xác nhận").into(), Line(vec![Piece::Count(d.acked as i64)])),
            (pick(lang, "refused (OOM)", "bị từ chối (OOM)").into(), Line(vec![Piece::Count(d.refused as i64)])),
            (pick(lang, "lost silently", "mất không báo").into(), Line(vec![Piece::Count(d.lost_acked.len() as i64)])),
            (pick(lang, "cache keys left", "key cache còn").into(), Line(vec![Piece::Count(o.cache_left as i64)])),
        ])
    }
}

impl EvictionSpec {
    async fn write_cache(&self, conn: &mut MultiplexedConnection, prefix: &str) -> Result<(), Error> {
        let value = "c".repeat(self.cache_bytes);
        for chunk in (0..self.cache_keys).collect::<Vec<_>>().chunks(500) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.cmd("SET").arg(format!("{prefix}cache:{i}")).arg(&value).arg("EX").arg(3600).ignore();
            }
            pipe.query_async::<()>(conn).await.context("SET cache keys")?;
        }
        Ok(())
    }

    /// Push every job, one round trip each; record what the server answered.
    async fn push_all(&self, conn: &mut MultiplexedConnection, prefix: &str, sink: &dyn Sink) -> Result<Pushes, Error> {
        let queue = self.queue_key(prefix);
        let mut out = Pushes::default();
        let mut last_len = 0i64;
        for n in 1..=self.jobs {
            let job = numbered_job(n, self.job_bytes, crate::clock::now_ns() / 1_000_000);
            let reply = match self.layout {
                QueueLayout::OneList => {
                    redis::cmd("RPUSH").arg(&queue).arg(job.to_json()).query_async::<i64>(conn).await
                }
                QueueLayout::JobKeys => redis::pipe()
                    .atomic()
                    .cmd("SET")
                    .arg(format!("{prefix}job:{}", job.label()))
                    .arg(job.to_json())
                    .ignore()
                    .cmd("RPUSH")
                    .arg(&queue)
                    .arg(job.label())
                    .query_async::<(i64,)>(conn)
                    .await
                    .map(|(len,)| len),
            };
            match reply {
                Ok(len) => {
                    if len <= last_len {
                        // The list was evicted whole after the previous push.
                        let jobs = last_len + 1 - len;
                        out.queue_evictions.push((n, jobs));
                        // On the timeline only for the seed's one list, which must go whole
                        // (the memory cannot hold the jobs). Whether LRU sampling also picks the
                        // id list of the job-keys layout differs run to run: its notes count it.
                        if self.layout == QueueLayout::OneList {
                            let key = queue.strip_prefix(prefix).unwrap_or(&queue).to_string();
                            sink.emit(Actor::Producer, ListEvent::Evicted { key, jobs }.event());
                        }
                    }
                    last_len = len;
                    out.acked.push(n);
                }
                Err(e) => {
                    out.refused.push(n);
                    if out.first_refusal.is_none() {
                        let error = server_words(&e);
                        // On the timeline where refusing is the policy's answer to a full
                        // memory. Under allkeys-* Redis 7.0 refuses nothing and 8.6 now and
                        // then a few pushes around an eviction: notes and facts count those.
                        if !self.policy.evicts_any_key() {
                            sink.emit(
                                Actor::Producer,
                                ListEvent::Refused { job: job_id(n), error: error.clone(), refusals: 1 }.event(),
                            );
                        }
                        out.first_refusal = Some(error);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The jobs still queued with their body, and the queued ids whose body is gone.
    async fn held(&self, conn: &mut MultiplexedConnection, prefix: &str) -> Result<(JobRanges, u64), Error> {
        let queue = self.queue_key(prefix);
        let items: Vec<String> =
            redis::cmd("LRANGE").arg(&queue).arg(0).arg(-1).query_async(conn).await.context("LRANGE")?;
        if self.layout == QueueLayout::OneList {
            let numbers =
                items.iter().filter_map(|p| ListJob::parse(p).ok()?.id.and_then(|id| job_number(&id))).collect();
            return Ok((JobRanges::from_numbers(numbers), 0));
        }
        let mut with_body = Vec::new();
        for chunk in items.chunks(500) {
            let keys: Vec<String> = chunk.iter().map(|id| format!("{prefix}job:{id}")).collect();
            let bodies: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(conn).await.context("MGET")?;
            with_body
                .extend(chunk.iter().zip(bodies).filter(|(_, b)| b.is_some()).filter_map(|(id, _)| job_number(id)));
        }
        let missing = items.len() as u64 - with_body.len() as u64;
        Ok((JobRanges::from_numbers(with_body), missing))
    }

    async fn cache_left(&self, conn: &mut MultiplexedConnection, prefix: &str) -> Result<u64, Error> {
        let mut left = 0;
        for chunk in (0..self.cache_keys).collect::<Vec<_>>().chunks(500) {
            let keys: Vec<String> = chunk.iter().map(|i| format!("{prefix}cache:{i}")).collect();
            left += redis::cmd("EXISTS").arg(&keys).query_async::<u64>(conn).await.context("EXISTS")?;
        }
        Ok(left)
    }
}

/// The run's lines after its timeline.
fn notes(spec: &EvictionSpec, o: &EvictionObserved, lang: Lang) -> Vec<Line> {
    let d = o.durability();
    let kib = |b: i64| Piece::Count(b / 1024);
    let mut lines = vec![Line(vec![
        Piece::Text("maxmemory ".into()),
        kib(o.maxmemory),
        Piece::Text(pick(lang, " KiB (the server used ", " KiB (server đang dùng ").into()),
        kib(o.used_before),
        Piece::Text(pick(lang, " KiB with the cache written)", " KiB sau khi ghi cache)").into()),
    ])];
    lines.push(Line(vec![
        Piece::Text(pick(lang, "pushes acknowledged: ", "lần đẩy được xác nhận: ").into()),
        Piece::Count(d.acked as i64),
        Piece::Text(pick(lang, ", refused with an error: ", ", bị từ chối có báo lỗi: ").into()),
        Piece::Count(d.refused as i64),
        Piece::Text(pick(lang, "; in the queue at the end: ", "; còn trong hàng đợi cuối cùng: ").into()),
        Piece::Count(d.held as i64),
        Piece::Text(pick(lang, " → acknowledged and silently gone: ", " → đã xác nhận mà biến mất không báo: ").into()),
        Piece::Count(d.lost_acked.len() as i64),
    ]));
    if let Some(e) = o.first_refusal.as_ref().filter(|_| !spec.policy.evicts_any_key()) {
        lines.push(Line::text(crate::tr!(lang, "the server's refusal: {e}", "server từ chối: {e}")));
    }
    // Printed whatever happened, so every run has the same lines (a snapshot redacts the counts).
    let evicted_jobs: i64 = o.queue_evictions.iter().map(|(_, jobs)| jobs).sum();
    lines.push(Line(vec![
        Piece::Text(pick(lang, "whole-list evictions of the queue: ", "số lần cả list hàng đợi bị evict: ").into()),
        Piece::Count(o.queue_evictions.len() as i64),
        Piece::Text(pick(lang, ", with ", ", cùng ").into()),
        Piece::Count(evicted_jobs),
        Piece::Text(pick(lang, " jobs in them", " job trong đó").into()),
    ]));
    if spec.layout == QueueLayout::JobKeys {
        lines.push(Line(vec![
            Piece::Text(
                pick(
                    lang,
                    "ids still queued whose job body was evicted: ",
                    "id vẫn trong hàng đợi nhưng thân job đã bị evict: ",
                )
                .into(),
            ),
            Piece::Count(o.ids_without_body as i64),
        ]));
    }
    let lost: Vec<u64> = d.lost_acked.iter().filter_map(|id| job_number(id)).collect();
    if !lost.is_empty() {
        lines.push(Line(vec![
            Piece::Text(pick(lang, "lost jobs by number: oldest ", "job bị mất theo số thứ tự: cũ nhất ").into()),
            Piece::Count(lost.iter().min().map_or(0, |n| *n as i64)),
            Piece::Text(pick(lang, ", newest ", ", mới nhất ").into()),
            Piece::Count(lost.iter().max().map_or(0, |n| *n as i64)),
        ]));
    }
    lines.push(Line(vec![
        Piece::Text(pick(lang, "cache keys left: ", "key cache còn lại: ").into()),
        Piece::Count(o.cache_left as i64),
        Piece::Text(crate::tr!(lang, " of {}", " trên {}", spec.cache_keys)),
    ]));
    lines
}

/// A server error as the server wrote it: `OOM command not allowed when used memory > …`.
fn server_words(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}
