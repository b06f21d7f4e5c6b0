//! The list-queue scripts (`ordlab::list_queue`) on a real redis-server: the atomic fetch with
//! a lease, the reaper's requeue, the scheduler's move of due retries, and what LREM by value
//! does to two identical payloads with and without delivery tokens (finding F4).

use ordlab::list_queue::{self, Identity, ListKeys, Take};
use ordlab::service::start_local_redis;
use redis::aio::MultiplexedConnection;

async fn server() -> (ordlab::service::LocalRedis, MultiplexedConnection) {
    let server = start_local_redis(&[]).await.expect("redis-server starts");
    let conn = ordlab::connect::redis(&server.url).await.unwrap();
    (server, conn)
}

async fn lrange(conn: &mut MultiplexedConnection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(conn).await.unwrap()
}

async fn zcard(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("ZCARD").arg(key).query_async(conn).await.unwrap()
}

async fn push(conn: &mut MultiplexedConnection, keys: &ListKeys, payloads: &[&str]) {
    let _: i64 = redis::cmd("LPUSH").arg(&keys.queue).arg(payloads).query_async(conn).await.unwrap();
}

/// Wait until the server's clock (ms) is past `until` (leases are on the server's clock).
async fn server_time_past(conn: &mut MultiplexedConnection, until: i64) {
    loop {
        let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await.unwrap();
        if s * 1000 + us / 1000 > until {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_lease_fetch_moves_and_leases_in_one_step_and_the_reaper_puts_it_back() {
    let (server, mut conn) = server().await;
    let keys = ListKeys::new("t:");
    push(&mut conn, &keys, &["a", "b"]).await;
    // LPUSH a b → [b, a]: the fetch pops the right end, the oldest job first.
    let got = list_queue::take(&mut conn, &keys, Take::Lease, 200, Identity::Payload).await.unwrap().unwrap();
    assert_eq!((got.entry.as_deref(), got.payload.as_str()), (Some("a"), "a"));
    assert_eq!(lrange(&mut conn, &keys.processing).await, ["a"]);
    assert_eq!(zcard(&mut conn, &keys.leases).await, 1);
    // Not expired yet: nothing moves.
    assert!(list_queue::requeue_expired(&mut conn, &keys).await.unwrap().is_empty());
    server_time_past(&mut conn, got.lease_until_ms.unwrap()).await;
    let back = list_queue::requeue_expired(&mut conn, &keys).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].payload, "a");
    assert!(back[0].expired_ms_ago >= 0);
    // Back at the right end: the next job taken.
    assert_eq!(lrange(&mut conn, &keys.queue).await, ["b", "a"]);
    assert!(lrange(&mut conn, &keys.processing).await.is_empty());
    assert_eq!(zcard(&mut conn, &keys.leases).await, 0);
    // A finished entry is removed with its lease; finishing it again removes nothing.
    let again = list_queue::take(&mut conn, &keys, Take::Lease, 10_000, Identity::Payload).await.unwrap().unwrap();
    let entry = again.entry.unwrap();
    assert_eq!(list_queue::finish(&mut conn, &keys, &entry).await.unwrap(), 1);
    assert_eq!(list_queue::finish(&mut conn, &keys, &entry).await.unwrap(), 0);
    assert_eq!(zcard(&mut conn, &keys.leases).await, 0);
    server.stop().await;
}

#[tokio::test]
async fn two_identical_payloads_share_one_lease_unless_each_delivery_has_a_token() {
    let (server, mut conn) = server().await;
    // By payload: the second lease overwrites the first; finishing one copy removes the only
    // lease, and the other copy is left in processing with none: no reaper will ever see it.
    let keys = ListKeys::new("value:");
    push(&mut conn, &keys, &["X", "X"]).await;
    let first = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Payload).await.unwrap().unwrap();
    let _second = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Payload).await.unwrap().unwrap();
    assert_eq!(zcard(&mut conn, &keys.leases).await, 1, "one member for two deliveries");
    assert_eq!(list_queue::finish(&mut conn, &keys, first.entry.as_deref().unwrap()).await.unwrap(), 1);
    assert_eq!(lrange(&mut conn, &keys.processing).await, ["X"]);
    assert_eq!(zcard(&mut conn, &keys.leases).await, 0, "the other delivery lost its lease");
    // By token: two entries, two leases; finishing one leaves the other's lease.
    let keys = ListKeys::new("token:");
    push(&mut conn, &keys, &["X", "X"]).await;
    let first = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Token).await.unwrap().unwrap();
    let second = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Token).await.unwrap().unwrap();
    assert_ne!(first.entry, second.entry);
    assert_eq!((first.payload.as_str(), second.payload.as_str()), ("X", "X"));
    assert_eq!(list_queue::finish(&mut conn, &keys, first.entry.as_deref().unwrap()).await.unwrap(), 1);
    assert_eq!(lrange(&mut conn, &keys.processing).await, [second.entry.clone().unwrap()]);
    assert_eq!(zcard(&mut conn, &keys.leases).await, 1);
    server.stop().await;
}

#[tokio::test]
async fn a_retry_waits_in_the_delayed_set_until_due_and_poison_goes_to_the_dead_letters() {
    let (server, mut conn) = server().await;
    let keys = ListKeys::new("r:");
    push(&mut conn, &keys, &["job", "{not json"]).await;
    let job = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Payload).await.unwrap().unwrap();
    let due =
        list_queue::retry_later(&mut conn, &keys, job.entry.as_deref().unwrap(), "job-attempt-2", 150).await.unwrap();
    assert!(lrange(&mut conn, &keys.processing).await.is_empty(), "out of processing with its lease");
    assert_eq!(zcard(&mut conn, &keys.leases).await, 0);
    assert!(list_queue::move_due(&mut conn, &keys).await.unwrap().is_empty(), "not due yet");
    server_time_past(&mut conn, due).await;
    let moved = list_queue::move_due(&mut conn, &keys).await.unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].0, "job-attempt-2");
    assert!(moved[0].1 >= 0, "never moved before its due time");
    // The due retry goes to the right end: taken before the job that waited behind it.
    assert_eq!(lrange(&mut conn, &keys.queue).await, ["{not json", "job-attempt-2"]);
    let retried = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Payload).await.unwrap().unwrap();
    assert_eq!(retried.payload, "job-attempt-2");
    let poison = list_queue::take(&mut conn, &keys, Take::Lease, 60_000, Identity::Payload).await.unwrap().unwrap();
    assert_eq!(poison.payload, "{not json");
    assert_eq!(list_queue::dead_letter(&mut conn, &keys, &poison.payload, &poison.payload).await.unwrap(), 1);
    assert_eq!(lrange(&mut conn, &keys.failed).await, ["{not json"]);
    assert_eq!(lrange(&mut conn, &keys.processing).await, ["job-attempt-2"]);
    assert_eq!(zcard(&mut conn, &keys.leases).await, 1, "the retried job's lease only");
    server.stop().await;
}

#[tokio::test]
async fn the_seeds_commands_move_the_newest_job_first() {
    let (server, mut conn) = server().await;
    let keys = ListKeys::new("seed:");
    // The seed pushes with RPUSH and takes with BRPOPLPUSH: both at the right end (LIFO).
    let _: i64 = redis::cmd("RPUSH").arg(&keys.queue).arg(&["job-1", "job-2"]).query_async(&mut conn).await.unwrap();
    for how in [Take::Brpoplpush, Take::Blmove] {
        let got = list_queue::take(&mut conn, &keys, how, 0, Identity::Payload).await.unwrap().unwrap();
        assert_eq!(got.payload, if how == Take::Brpoplpush { "job-2" } else { "job-1" });
    }
    assert_eq!(lrange(&mut conn, &keys.processing).await, ["job-1", "job-2"]);
    server.stop().await;
}

/// A connection whose replies come back 50 ms late (a supervisor stalled on a loaded machine),
/// noting when each command was sent.
struct LateReplies {
    inner: MultiplexedConnection,
    sent_ns: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl redis::aio::ConnectionLike for LateReplies {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(async move {
            self.sent_ns.lock().unwrap().push(ordlab::clock::now_ns());
            let reply = self.inner.req_packed_command(cmd).await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        Box::pin(async move {
            self.sent_ns.lock().unwrap().push(ordlab::clock::now_ns());
            let replies = self.inner.req_packed_commands(pipeline, offset, count).await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

/// The events a supervisor emitted, as they came.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<ordlab::timeline::RawEvent>>);

impl ordlab::timeline::Sink for Recorded {
    fn record(&self, event: ordlab::timeline::RawEvent) {
        self.0.lock().unwrap().push(event);
    }
}

/// A worker polling the queue can take a job the reaper put back before the reaper reads its
/// script's reply: the put-back is stamped when the script is sent, so on the timeline it comes
/// before any take of the job, however late the reply (list-crash's lease-reaper under load).
#[tokio::test]
async fn the_reapers_put_back_is_stamped_when_its_script_is_sent() {
    use ordlab::labs::list_queue::supervisor::{run_loop, ListSupervisorConfig};
    use ordlab::list_queue::events::ListEvent;
    let (server, mut conn) = server().await;
    let keys = ListKeys::new("stamp:");
    push(&mut conn, &keys, &["a"]).await;
    let got = list_queue::take(&mut conn, &keys, Take::Lease, 1, Identity::Payload).await.unwrap().unwrap();
    server_time_past(&mut conn, got.lease_until_ms.unwrap()).await;
    let env = ordlab::roles::RoleEnv {
        redis_url: server.url.clone(),
        pg_config: String::new(),
        key_prefix: "stamp:".into(),
        scale: ordlab::fault::TimeScale(1.0),
        seed: 1,
        has_delex: false,
    };
    let cfg = ListSupervisorConfig {
        env,
        client_name: "stamp-reaper".into(),
        keys: keys.clone(),
        reaper_poll_ms: Some(60_000.0),
        scheduler_poll_ms: None,
    };
    let sent_ns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut late = LateReplies { inner: conn.clone(), sent_ns: sent_ns.clone() };
    let events = Recorded::default();
    // The first look finds the expired lease; the next is a minute away.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), run_loop(&mut late, &cfg, &events)).await;
    let recorded = std::mem::take(&mut *events.0.lock().unwrap());
    let put_back: Vec<u64> = recorded
        .iter()
        .filter(|e| matches!(e.kind.family::<ListEvent>(), Some(ListEvent::Requeued { .. })))
        .map(|e| e.mono_ns)
        .collect();
    assert_eq!(put_back.len(), 1, "one put-back: {recorded:?}");
    let first_sent = sent_ns.lock().unwrap()[0];
    assert!(put_back[0] <= first_sent, "stamped {} µs after the script was sent", (put_back[0] - first_sent) / 1000);
    assert_eq!(lrange(&mut conn, &keys.queue).await, ["a"]);
    server.stop().await;
}
