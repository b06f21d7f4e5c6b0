//! A replication link with a shape: a TCP proxy in the harness between a replica and its
//! primary that delays and rate-limits the primary's replication stream, can be partitioned,
//! and dies with the primary's machine. What a replica has not received when its primary
//! dies is decided here, by the link, and measured, never set by a count.
//!
//! Primary → replica: each chunk read from the primary is *transmitted* when the line is free
//! (`bytes_per_s`, a token bucket of one chunk) and *delivered* `delay` after that. Replica →
//! primary (PSYNC, REPLCONF ACK): the same delay, no rate limit. [`Link::crash`] models the
//! primary's machine dying: nothing more is read from the primary, chunks not yet transmitted
//! are dropped (the sender's queue dies with it), chunks already transmitted ("on the wire")
//! are still delivered until the replica drops the connection. [`Link::partition`] drops
//! everything in both directions from then on, sockets left open (as a network partition:
//! neither side sees a close).

use super::forward::{deliver, forward, Direction, Outbox, Piece, Schedule, Step};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// How the link treats the primary's stream. Durations are already time-scaled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShape {
    /// One-way delay, both directions.
    pub delay: Duration,
    /// Primary → replica bandwidth; None = unlimited.
    pub bytes_per_s: Option<u64>,
}

/// Byte counts of the primary → replica direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkCounts {
    /// Read from the primary.
    pub from_primary: u64,
    /// Written to the replica.
    pub to_replica: u64,
    /// Dropped: not transmitted when the primary died, or sent during a partition.
    pub dropped: u64,
}

impl LinkCounts {
    /// Read from the primary and neither delivered nor dropped: on the wire or queued.
    pub fn in_link(&self) -> u64 {
        self.from_primary.saturating_sub(self.to_replica + self.dropped)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forwarding = 0,
    Partitioned = 1,
    Crashed = 2,
}

struct Shared {
    mode: AtomicU8,
    from_primary: AtomicU64,
    to_replica: AtomicU64,
    dropped: AtomicU64,
    /// Connections accepted from the replica.
    connections: AtomicU64,
    crashed_at: Mutex<Option<Instant>>,
    /// When the replica stops taking the old primary's stream (its promotion).
    cutoff: Mutex<Option<Instant>>,
    /// Bumped at each change of mode: a writer waiting on a piece looks at it again.
    changes: watch::Sender<u64>,
    /// True once the primary's machine is gone: nothing more is read from it.
    crashed: watch::Sender<bool>,
}

impl Shared {
    fn mode(&self) -> Mode {
        match self.mode.load(Ordering::SeqCst) {
            0 => Mode::Forwarding,
            1 => Mode::Partitioned,
            _ => Mode::Crashed,
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }
}

/// One direction's schedule: the primary → replica one counts what it delivers and drops.
struct Way {
    shared: Arc<Shared>,
    primary_to_replica: bool,
}

impl Schedule for Way {
    /// A partition loses whatever it has not delivered yet; the primary's crash loses what had
    /// not left it yet, and what would land after the promotion.
    fn lost(&self, piece: &Piece) -> bool {
        let s = &self.shared;
        match s.mode() {
            Mode::Forwarding => false,
            Mode::Partitioned => true,
            Mode::Crashed => {
                s.crashed_at.lock().unwrap().is_some_and(|at| piece.sent > at)
                    || s.cutoff.lock().unwrap().is_some_and(|at| piece.due > at)
            }
        }
    }

    fn delivered(&self, piece: &Piece) {
        if self.primary_to_replica {
            self.shared.to_replica.fetch_add(piece.bytes.len() as u64, Ordering::SeqCst);
        }
    }

    fn dropped(&self, piece: &Piece) {
        if self.primary_to_replica {
            self.shared.dropped.fetch_add(piece.bytes.len() as u64, Ordering::SeqCst);
        }
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }
}

/// The read side of one direction: each chunk is *transmitted* when the line is free (a
/// token bucket of one chunk at `bytes_per_s`) and due `delay` after that.
struct Shaped {
    shape: LinkShape,
    way: Arc<Way>,
    line_free: Instant,
}

impl Direction for Shaped {
    type End = ();

    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> std::io::Result<Step<()>> {
        let shared = &self.way.shared;
        let n = input.len();
        if self.way.primary_to_replica {
            shared.from_primary.fetch_add(n as u64, Ordering::SeqCst);
        }
        if shared.mode() != Mode::Forwarding {
            if self.way.primary_to_replica {
                shared.dropped.fetch_add(n as u64, Ordering::SeqCst);
            }
            return Ok(Step::Continue);
        }
        let now = Instant::now();
        let transmitted = match self.shape.bytes_per_s {
            Some(rate) => self.line_free.max(now) + Duration::from_secs_f64(n as f64 / rate.max(1) as f64),
            None => now,
        };
        self.line_free = transmitted;
        out.push_due(input, transmitted, transmitted + self.shape.delay)?;
        Ok(Step::Continue)
    }

    fn closed(&mut self) {}
}

/// A running link. Dropping it stops every task of it and closes its sockets.
pub struct Link {
    addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Link {
    /// Listen on 127.0.0.1 (a free port); each connection accepted is forwarded to `primary`.
    pub async fn start(primary: SocketAddr, shape: LinkShape) -> std::io::Result<Link> {
        Link::start_on(TcpListener::bind(("127.0.0.1", 0)).await?, primary, shape)
    }

    /// Accept on `listener` (where the replica can reach this process: loopback, or the
    /// gateway of a Docker network) and forward each connection to `primary`.
    pub fn start_on(listener: TcpListener, primary: SocketAddr, shape: LinkShape) -> std::io::Result<Link> {
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            mode: AtomicU8::new(Mode::Forwarding as u8),
            from_primary: AtomicU64::new(0),
            to_replica: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            crashed_at: Mutex::new(None),
            cutoff: Mutex::new(None),
            changes: watch::channel(0).0,
            crashed: watch::channel(false).0,
        });
        let tasks = Arc::new(Mutex::new(JoinSet::new()));
        let (s, t) = (shared.clone(), tasks.clone());
        tasks.lock().unwrap().spawn(async move {
            while let Ok((replica, _)) = listener.accept().await {
                s.connections.fetch_add(1, Ordering::SeqCst);
                if s.mode() == Mode::Crashed {
                    continue; // the primary's machine is gone: nobody answers
                }
                let Ok(upstream) = TcpStream::connect(primary).await else { continue };
                let _ = (replica.set_nodelay(true), upstream.set_nodelay(true));
                let (pr, pw) = upstream.into_split();
                let (rr, rw) = replica.into_split();
                let mut set = t.lock().unwrap();
                direction(&mut set, pr, rw, shape, &s, true);
                let back = LinkShape { delay: shape.delay, bytes_per_s: None };
                direction(&mut set, rr, pw, back, &s, false);
            }
        });
        Ok(Link { addr, shared, tasks })
    }

    /// Where the replica connects (`--replicaof <ip> <port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many connections the replica has opened to the link.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// From now on nothing passes in either direction; the sockets stay open.
    pub fn partition(&self) {
        let _ = self.shared.mode.compare_exchange(0, Mode::Partitioned as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.shared.changed();
    }

    /// The primary's machine dies now: stop reading it, drop what was not yet transmitted;
    /// the replica is promoted `promotion_after` from now, and what arrives later is not
    /// applied (a promoted replica has left its old primary). The promotion is the link's
    /// moment, not the orchestrator's: how long the harness takes to send `REPLICAOF NO ONE`
    /// on a loaded machine must not decide what the replica got.
    pub fn crash(&self, promotion_after: Duration) {
        let now = Instant::now();
        *self.shared.crashed_at.lock().unwrap() = Some(now);
        *self.shared.cutoff.lock().unwrap() = Some(now + promotion_after);
        // A partitioned link stays partitioned: what it held is lost either way.
        let _ = self.shared.mode.compare_exchange(0, Mode::Crashed as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.shared.crashed.send_replace(true);
        self.shared.changed();
    }

    pub fn counts(&self) -> LinkCounts {
        LinkCounts {
            from_primary: self.shared.from_primary.load(Ordering::SeqCst),
            to_replica: self.shared.to_replica.load(Ordering::SeqCst),
            dropped: self.shared.dropped.load(Ordering::SeqCst),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.tasks.lock().unwrap().abort_all();
    }
}

/// One direction through the forwarding loop: its reader shapes, its writer delivers.
fn direction(
    set: &mut JoinSet<()>,
    mut from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
    shape: LinkShape,
    shared: &Arc<Shared>,
    primary_to_replica: bool,
) {
    let way = Arc::new(Way { shared: shared.clone(), primary_to_replica });
    let (queue, pieces) = mpsc::unbounded_channel::<Piece>();
    let crashed = shared.crashed.subscribe();
    let mut shaped = Shaped { shape, way: way.clone(), line_free: Instant::now() };
    set.spawn(async move {
        let _ = forward(&mut from, Outbox::scheduled(queue), &mut shaped, &[], Some(crashed)).await;
    });
    set.spawn(deliver(pieces, to, way));
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A "primary" that writes `payload` to whoever connects, in `pieces` writes `gap` apart.
    async fn primary(payload: Vec<u8>, pieces: usize, gap: Duration) -> SocketAddr {
        let l = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            for piece in payload.chunks(payload.len().div_ceil(pieces)) {
                s.write_all(piece).await.unwrap();
                tokio::time::sleep(gap).await;
            }
            // Keep the connection open, as a primary does.
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        addr
    }

    async fn read_for(s: &mut TcpStream, d: Duration) -> usize {
        let mut total = 0;
        let mut buf = vec![0u8; 65536];
        let end = tokio::time::Instant::now() + d;
        while let Ok(Ok(n)) = tokio::time::timeout_at(end, s.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            total += n;
        }
        total
    }

    #[tokio::test]
    async fn bytes_arrive_no_earlier_than_the_delay() {
        let p = primary(vec![7u8; 100], 1, Duration::ZERO).await;
        let link = Link::start(p, LinkShape { delay: Duration::from_millis(80), bytes_per_s: None }).await.unwrap();
        assert_eq!(link.connections(), 0);
        let t = Instant::now();
        let mut r = TcpStream::connect(link.addr()).await.unwrap();
        let mut b = [0u8; 100];
        r.read_exact(&mut b).await.unwrap();
        assert_eq!(link.connections(), 1);
        assert!(t.elapsed() >= Duration::from_millis(80), "{:?}", t.elapsed());
        assert_eq!(link.counts(), LinkCounts { from_primary: 100, to_replica: 100, dropped: 0 });
    }

    #[tokio::test]
    async fn bandwidth_spreads_a_burst() {
        // 20 000 bytes at 100 000 B/s: the last byte leaves after 200 ms.
        let p = primary(vec![1u8; 20_000], 1, Duration::ZERO).await;
        let shape = LinkShape { delay: Duration::ZERO, bytes_per_s: Some(100_000) };
        let link = Link::start(p, shape).await.unwrap();
        let t = Instant::now();
        let mut r = TcpStream::connect(link.addr()).await.unwrap();
        let mut b = vec![0u8; 20_000];
        r.read_exact(&mut b).await.unwrap();
        assert!(t.elapsed() >= Duration::from_millis(190), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn a_crash_delivers_the_wire_and_drops_the_backlog() {
        // 10 pieces of 1000 bytes, 10 ms apart, at 10 000 B/s: each piece takes 100 ms to
        // transmit, so at the crash (~150 ms) one piece has left, one is leaving, the rest wait.
        let p = primary(vec![2u8; 10_000], 10, Duration::from_millis(10)).await;
        let shape = LinkShape { delay: Duration::from_millis(50), bytes_per_s: Some(10_000) };
        let link = Link::start(p, shape).await.unwrap();
        let mut r = TcpStream::connect(link.addr()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        link.crash(Duration::from_secs(10));
        let got = read_for(&mut r, Duration::from_millis(400)).await;
        let c = link.counts();
        assert!((1000..=2000).contains(&got), "received {got}");
        assert_eq!(c.to_replica as usize, got);
        assert!(c.dropped >= 8000 - 1000, "{c:?}");
        assert_eq!(c.in_link(), 0, "{c:?}");
    }

    #[tokio::test]
    async fn a_promotion_before_the_wire_lands_drops_it() {
        let p = primary(vec![4u8; 1000], 1, Duration::ZERO).await;
        let link = Link::start(p, LinkShape { delay: Duration::from_millis(100), bytes_per_s: None }).await.unwrap();
        let mut r = TcpStream::connect(link.addr()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        link.crash(Duration::ZERO);
        assert_eq!(read_for(&mut r, Duration::from_millis(200)).await, 0);
        assert_eq!(link.counts().dropped, 1000);
    }

    #[tokio::test]
    async fn a_partition_passes_nothing_and_keeps_the_socket_open() {
        let p = primary(vec![3u8; 4000], 4, Duration::from_millis(40)).await;
        let link = Link::start(p, LinkShape { delay: Duration::ZERO, bytes_per_s: None }).await.unwrap();
        let mut r = TcpStream::connect(link.addr()).await.unwrap();
        let first = read_for(&mut r, Duration::from_millis(20)).await;
        link.partition();
        let later = read_for(&mut r, Duration::from_millis(200)).await;
        assert_eq!((first, later), (1000, 0));
        assert_eq!(link.counts().dropped, 3000);
    }
}
