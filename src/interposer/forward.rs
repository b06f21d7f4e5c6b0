//! The one forwarding loop: every proxy of ordlab (a worker's Redis and PostgreSQL
//! connections, the shaped replication link) reads one side, hands each read to a
//! [`Direction`] that decides what passes, and writes it to the other side. What differs
//! between them is only the direction's own logic: the wire protocol it parses and where the
//! fault layer acts.
//!
//! What passes goes through an [`Outbox`]: written at once (a proxy that records and faults at
//! command boundaries: a delay holds the direction), or scheduled, each piece delivered at its
//! own moment by a writer of its own while reading goes on (a link with latency and bandwidth,
//! whose [`Schedule`] may drop what is in flight).

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// How much one read takes at most.
pub const CHUNK: usize = 64 * 1024;

/// What a direction decided after a read.
pub enum Step<E> {
    /// Go on reading.
    Continue,
    /// This direction is over (a fault closed it, a frame was refused): what the outbox holds
    /// is delivered first.
    End(E),
}

/// One direction of a proxy: what it makes of the bytes it reads.
#[allow(async_fn_in_trait)] // Driven on the proxy's own task: no Send bound needed.
pub trait Direction {
    /// How the direction ends, besides the other side closing.
    type End;

    /// Decide on `input` (just read): pass what passes into `out`.
    async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> io::Result<Step<Self::End>>;

    /// The side it reads closed its end.
    fn closed(&mut self) -> Self::End;
}

/// A piece of a scheduled direction: its bytes, when they left the sender and when they are
/// due at the receiver.
#[derive(Debug)]
pub struct Piece {
    pub bytes: Vec<u8>,
    pub sent: Instant,
    pub due: Instant,
}

/// What a scheduled direction's writer asks of the link it serves.
pub trait Schedule: Send + Sync + 'static {
    /// Is `piece` lost now, rather than delivered when it is due?
    fn lost(&self, piece: &Piece) -> bool;
    /// `piece` reached the receiver.
    fn delivered(&self, _piece: &Piece) {}
    /// `piece` was lost.
    fn dropped(&self, _piece: &Piece) {}
    /// Changes whenever [`Schedule::lost`] may answer otherwise (the writer looks again at a
    /// piece it is waiting to deliver).
    fn changes(&self) -> watch::Receiver<u64>;
}

enum Delivery<'a> {
    Now(&'a mut (dyn AsyncWrite + Unpin + Send)),
    Scheduled(mpsc::UnboundedSender<Piece>),
}

/// Where a direction puts what passes.
pub struct Outbox<'a> {
    delivery: Delivery<'a>,
    buf: Vec<u8>,
}

impl<'a> Outbox<'a> {
    /// Written to `to` at each flush, in the direction's own task.
    pub fn now(to: &'a mut (dyn AsyncWrite + Unpin + Send)) -> Outbox<'a> {
        Outbox { delivery: Delivery::Now(to), buf: Vec::with_capacity(16 * 1024) }
    }

    /// Pieces delivered by [`deliver`] at their due moments.
    pub fn scheduled(queue: mpsc::UnboundedSender<Piece>) -> Outbox<'static> {
        Outbox { delivery: Delivery::Scheduled(queue), buf: Vec::new() }
    }

    /// Pass `bytes` on at the next flush.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Pass `bytes` on at `due` (scheduled) or at the next flush.
    pub fn push_due(&mut self, bytes: &[u8], sent: Instant, due: Instant) -> io::Result<()> {
        match &self.delivery {
            Delivery::Scheduled(queue) => {
                let piece = Piece { bytes: bytes.to_vec(), sent, due };
                queue.send(piece).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the writer is gone"))
            }
            Delivery::Now(_) => {
                self.push(bytes);
                Ok(())
            }
        }
    }

    /// Does what waits for the next flush end with `bytes`?
    pub fn ends_with(&self, bytes: &[u8]) -> bool {
        self.buf.ends_with(bytes)
    }

    /// Pass on what was pushed, now.
    pub async fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        match &mut self.delivery {
            Delivery::Now(to) => to.write_all(&self.buf).await?,
            Delivery::Scheduled(queue) => {
                let now = Instant::now();
                let piece = Piece { bytes: std::mem::take(&mut self.buf), sent: now, due: now };
                queue.send(piece).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the writer is gone"))?;
            }
        }
        self.buf.clear();
        Ok(())
    }

    /// Pass on what was pushed, then hold the direction `d` (what comes after waits).
    pub async fn hold(&mut self, d: Duration) -> io::Result<()> {
        self.flush().await?;
        tokio::time::sleep(d).await;
        Ok(())
    }
}

/// Read `from` until it closes, `stop` turns true, or the direction ends; `initial` (bytes
/// read before, by a start-up phase) is relayed first. What passes is flushed after every read.
pub async fn forward<D: Direction>(
    from: &mut (impl AsyncRead + Unpin),
    mut out: Outbox<'_>,
    direction: &mut D,
    initial: &[u8],
    stop: Option<watch::Receiver<bool>>,
) -> io::Result<D::End> {
    if !initial.is_empty() {
        if let Step::End(end) = direction.relay(initial, &mut out).await? {
            out.flush().await?;
            return Ok(end);
        }
        out.flush().await?;
    }
    let mut chunk = vec![0u8; CHUNK];
    let mut stop = stop;
    loop {
        let n = match &mut stop {
            None => from.read(&mut chunk).await?,
            Some(signal) => tokio::select! {
                r = from.read(&mut chunk) => r?,
                _ = signal.wait_for(|s| *s) => 0,
            },
        };
        if n == 0 {
            out.flush().await?;
            return Ok(direction.closed());
        }
        let step = direction.relay(&chunk[..n], &mut out).await?;
        out.flush().await?;
        if let Step::End(end) = step {
            return Ok(end);
        }
    }
}

/// The writer of a scheduled direction: each piece in order, at its due moment, unless the
/// schedule has lost it by then (asked again whenever it changes while a piece waits).
pub async fn deliver(
    mut queue: mpsc::UnboundedReceiver<Piece>,
    mut to: impl AsyncWrite + Unpin,
    schedule: Arc<dyn Schedule>,
) {
    let mut changes = schedule.changes();
    'pieces: while let Some(piece) = queue.recv().await {
        loop {
            if schedule.lost(&piece) {
                schedule.dropped(&piece);
                continue 'pieces;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(piece.due.into()) => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        // Nothing can change any more: wait out the piece.
                        tokio::time::sleep_until(piece.due.into()).await;
                        break;
                    }
                }
            }
        }
        if schedule.lost(&piece) {
            schedule.dropped(&piece);
            continue;
        }
        if to.write_all(&piece.bytes).await.is_err() {
            return;
        }
        schedule.delivered(&piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upper-cases what passes; a `!` ends the direction.
    struct Shout;

    impl Direction for Shout {
        type End = &'static str;
        async fn relay(&mut self, input: &[u8], out: &mut Outbox<'_>) -> io::Result<Step<&'static str>> {
            for &b in input {
                if b == b'!' {
                    return Ok(Step::End("bang"));
                }
                out.push(&[b.to_ascii_uppercase()]);
            }
            Ok(Step::Continue)
        }
        fn closed(&mut self) -> &'static str {
            "eof"
        }
    }

    #[tokio::test]
    async fn a_direction_decides_what_passes_and_when_it_ends() {
        let mut to = Vec::new();
        let mut from: &[u8] = b"abc!def";
        let end = forward(&mut from, Outbox::now(&mut to), &mut Shout, b"x", None).await.unwrap();
        assert_eq!((end, to.as_slice()), ("bang", &b"XABC"[..]));
        let mut to = Vec::new();
        let mut from: &[u8] = b"de";
        assert_eq!(forward(&mut from, Outbox::now(&mut to), &mut Shout, b"", None).await.unwrap(), "eof");
        assert_eq!(to, b"DE");
    }

    struct Losing(watch::Sender<u64>, std::sync::atomic::AtomicBool);
    impl Schedule for Losing {
        fn lost(&self, _piece: &Piece) -> bool {
            self.1.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn changes(&self) -> watch::Receiver<u64> {
            self.0.subscribe()
        }
    }

    #[tokio::test]
    async fn a_scheduled_piece_arrives_when_due_unless_lost_meanwhile() {
        let (tx, rx) = mpsc::unbounded_channel();
        let schedule = Arc::new(Losing(watch::channel(0).0, false.into()));
        let (mut reader, writer) = tokio::io::duplex(1024);
        let writer_task = tokio::spawn(deliver(rx, writer, schedule.clone()));
        let mut out = Outbox::scheduled(tx.clone());
        let t = Instant::now();
        out.push_due(b"soon", t, t + Duration::from_millis(50)).unwrap();
        out.push_due(b"late", t, t + Duration::from_millis(400)).unwrap();
        let mut got = [0u8; 4];
        reader.read_exact(&mut got).await.unwrap();
        assert!(t.elapsed() >= Duration::from_millis(50) && &got == b"soon");
        schedule.1.store(true, std::sync::atomic::Ordering::SeqCst);
        schedule.0.send_replace(1);
        drop((out, tx));
        writer_task.await.unwrap();
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "the late piece was lost while it waited");
        assert!(t.elapsed() < Duration::from_millis(400), "and not waited out: {:?}", t.elapsed());
    }
}
