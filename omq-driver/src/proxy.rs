//! The built-in proxy (libzmq's `zmq_proxy` and `zmq_proxy_steerable`): messages from the
//! frontend go to the backend and back, each optionally copied to a capture socket.
//!
//! It runs in the caller's task: a message moves from one socket's queue to the other's by
//! value (bodies are reference-counted, never copied; the capture gets a clone of the same
//! bodies), with no task or thread between the two sockets. Sending waits when the other side
//! has no room, as libzmq's proxy blocks, so a slow consumer slows the producer instead of
//! growing memory. After each wake-up it forwards whatever is queued on both sides, in batches.
//!
//! A message the other side refuses as a message (one no ROUTER can route: no envelope, or,
//! with ROUTER_MANDATORY, a peer that has gone; one a single-part type cannot take) is
//! dropped and the proxy goes on: such messages come from peers, and one peer's message must
//! not stop a broker that serves all of them. libzmq's ROUTER drops the first kind silently
//! too; its `zmq_proxy` ends on the second (EHOSTUNREACH), which omq does not copy. Errors
//! of a socket itself (closed, wrong type, wrong state) still end the proxy.
//!
//! The classic pairs: ROUTER/DEALER (a request-reply broker), XSUB/XPUB (a forwarder; the
//! subscriptions travel back through the same loop), PULL/PUSH (a streamer).

use std::collections::VecDeque;
use std::pin::pin;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use omq_core::{Message, SocketType};

use crate::error::Error;
use crate::runtime::Runtime;
use crate::socket::Socket;

/// Most messages forwarded from one side before looking at the other (fairness).
const BATCH: usize = 256;

/// What a steerable proxy has forwarded, as libzmq 4.3.5 counts it: frames and bytes received
/// and sent on each side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStatistics {
    /// Frames received from the frontend.
    pub frontend_recv_frames: u64,
    /// Bytes received from the frontend.
    pub frontend_recv_bytes: u64,
    /// Frames sent to the frontend.
    pub frontend_sent_frames: u64,
    /// Bytes sent to the frontend.
    pub frontend_sent_bytes: u64,
    /// Frames received from the backend.
    pub backend_recv_frames: u64,
    /// Bytes received from the backend.
    pub backend_recv_bytes: u64,
    /// Frames sent to the backend.
    pub backend_sent_frames: u64,
    /// Bytes sent to the backend.
    pub backend_sent_bytes: u64,
}

impl ProxyStatistics {
    /// The STATISTICS reply: eight frames of one `u64` each, in host byte order (as libzmq).
    pub fn to_message(&self) -> Message {
        Message::multipart(
            [
                self.frontend_recv_frames,
                self.frontend_recv_bytes,
                self.frontend_sent_frames,
                self.frontend_sent_bytes,
                self.backend_recv_frames,
                self.backend_recv_bytes,
                self.backend_sent_frames,
                self.backend_sent_bytes,
            ]
            .map(|n| n.to_ne_bytes().to_vec()),
        )
    }
}

/// Whether a send error refuses only the message (which a peer sent, so the proxy drops it
/// and goes on), not the socket.
fn refuses_the_message(e: &Error) -> bool {
    matches!(e, Error::InvalidMessage(_) | Error::HostUnreachable)
}

/// Whether a socket of this type can receive (the proxy only reads from those).
fn reads(t: SocketType) -> bool {
    !matches!(
        t,
        SocketType::Push | SocketType::Pub | SocketType::Radio | SocketType::Scatter
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    FrontToBack,
    BackToFront,
}

struct Proxy<'a, R: Runtime> {
    frontend: &'a Socket<R>,
    backend: &'a Socket<R>,
    capture: Option<&'a Socket<R>>,
    stats: ProxyStatistics,
    /// Reused for each batch taken off a socket.
    scratch: VecDeque<Message>,
}

impl<'a, R: Runtime> Proxy<'a, R> {
    /// Counts a batch going the given way as received and as sent (a message the other side
    /// refuses is taken off the sent count again: [`Proxy::uncount_sent`]), and returns the
    /// socket it goes to.
    fn count(&mut self, dir: Dir, batch: &VecDeque<Message>) -> &'a Socket<R> {
        let frames: u64 = batch.iter().map(|m| m.len() as u64).sum();
        let bytes: u64 = batch.iter().map(|m| m.byte_len() as u64).sum();
        let s = &mut self.stats;
        match dir {
            Dir::FrontToBack => {
                s.frontend_recv_frames += frames;
                s.frontend_recv_bytes += bytes;
                s.backend_sent_frames += frames;
                s.backend_sent_bytes += bytes;
                self.backend
            }
            Dir::BackToFront => {
                s.backend_recv_frames += frames;
                s.backend_recv_bytes += bytes;
                s.frontend_sent_frames += frames;
                s.frontend_sent_bytes += bytes;
                self.frontend
            }
        }
    }

    /// A message of `frames` frames and `bytes` bytes going the given way was dropped.
    fn uncount_sent(&mut self, dir: Dir, frames: usize, bytes: usize) {
        let s = &mut self.stats;
        let (f, b) = match dir {
            Dir::FrontToBack => (&mut s.backend_sent_frames, &mut s.backend_sent_bytes),
            Dir::BackToFront => (&mut s.frontend_sent_frames, &mut s.frontend_sent_bytes),
        };
        *f -= frames as u64;
        *b -= bytes as u64;
    }

    /// Forwards a batch the given way: each message to the capture first (as libzmq), then
    /// the batch to the other side under one lock; what finds no room waits (backpressure).
    /// A message the other side refuses as a message is dropped (see the module's comment).
    async fn forward(&mut self, dir: Dir, batch: &mut VecDeque<Message>) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(c) = self.capture {
            for m in batch.iter() {
                c.send(m.clone()).await?;
            }
        }
        let to = self.count(dir, batch);
        loop {
            match to.try_send_many(batch) {
                Ok(_) => {}
                Err(e) if refuses_the_message(&e) => {
                    // The refused message is back at the front of the batch.
                    let m = batch.pop_front().expect("a refused message");
                    self.uncount_sent(dir, m.len(), m.byte_len());
                    continue;
                }
                Err(e) => return Err(e),
            }
            let Some(m) = batch.pop_front() else {
                return Ok(());
            };
            let (frames, bytes) = (m.len(), m.byte_len());
            match to.send(m).await {
                Ok(()) => {}
                Err(e) if refuses_the_message(&e) => self.uncount_sent(dir, frames, bytes),
                Err(e) => return Err(e),
            }
        }
    }

    /// Forwards what is already queued on `from`, at most [`BATCH`] messages, taken under one
    /// lock.
    async fn drain(&mut self, dir: Dir) -> Result<(), Error> {
        let from = match dir {
            Dir::FrontToBack => self.frontend,
            Dir::BackToFront => self.backend,
        };
        if !reads(from.socket_type()) {
            return Ok(());
        }
        let mut batch = std::mem::take(&mut self.scratch);
        let r = match from.try_recv_many(&mut batch, BATCH) {
            Ok(_) => self.forward(dir, &mut batch).await,
            Err(e) => Err(e),
        };
        batch.clear();
        self.scratch = batch;
        r
    }

    /// Forwards one message that woke the proxy, through the reused batch.
    async fn forward_one(&mut self, dir: Dir, msg: Message) -> Result<(), Error> {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.push_back(msg);
        let r = self.forward(dir, &mut batch).await;
        batch.clear();
        self.scratch = batch;
        r
    }
}

/// What woke the proxy.
enum Woken {
    Front(Option<Result<Message, Error>>),
    Back(Option<Result<Message, Error>>),
    Control(Option<Result<Message, Error>>),
}

/// Runs a proxy until a socket fails (libzmq's `zmq_proxy`, which never returns otherwise).
/// Messages from `frontend` go to `backend` and back; each is also sent to `capture` first.
pub async fn proxy<R: Runtime>(
    frontend: &Socket<R>,
    backend: &Socket<R>,
    capture: Option<&Socket<R>>,
) -> Result<(), Error> {
    run(frontend, backend, capture, None).await.map(|_| ())
}

/// A proxy steered through `control` (libzmq's `zmq_proxy_steerable`): the single-frame
/// commands `PAUSE` (stop forwarding, messages wait in the sockets), `RESUME`, `TERMINATE`
/// (return, with the statistics) and `STATISTICS` (reply with [`ProxyStatistics::to_message`]).
/// A REP control socket gets an empty reply to the other commands; unknown commands are
/// ignored.
pub async fn proxy_steerable<R: Runtime>(
    frontend: &Socket<R>,
    backend: &Socket<R>,
    capture: Option<&Socket<R>>,
    control: &Socket<R>,
) -> Result<ProxyStatistics, Error> {
    run(frontend, backend, capture, Some(control)).await
}

async fn run<R: Runtime>(
    frontend: &Socket<R>,
    backend: &Socket<R>,
    capture: Option<&Socket<R>>,
    control: Option<&Socket<R>>,
) -> Result<ProxyStatistics, Error> {
    let mut p = Proxy {
        frontend,
        backend,
        capture,
        stats: ProxyStatistics::default(),
        scratch: VecDeque::with_capacity(BATCH),
    };
    let mut front = frontend.stream();
    let mut back = backend.stream();
    let mut ctl = control.map(Socket::stream);
    let (front_reads, back_reads) = (reads(frontend.socket_type()), reads(backend.socket_type()));
    let mut paused = false;
    loop {
        let woken = {
            // Each half is cancel-safe: a `next` dropped unfinished has taken nothing.
            let f = async {
                if front_reads && !paused {
                    Woken::Front(front.next().await)
                } else {
                    std::future::pending().await
                }
            };
            let b = async {
                if back_reads && !paused {
                    Woken::Back(back.next().await)
                } else {
                    std::future::pending().await
                }
            };
            let c = async {
                match ctl.as_mut() {
                    Some(s) => Woken::Control(s.next().await),
                    None => std::future::pending().await,
                }
            };
            match select(pin!(c), select(pin!(f), pin!(b))).await {
                Either::Left((w, _)) => w,
                Either::Right((Either::Left((w, _)), _)) => w,
                Either::Right((Either::Right((w, _)), _)) => w,
            }
        };
        match woken {
            Woken::Front(Some(m)) => {
                p.forward_one(Dir::FrontToBack, m?).await?;
                p.drain(Dir::FrontToBack).await?;
                p.drain(Dir::BackToFront).await?;
            }
            Woken::Back(Some(m)) => {
                p.forward_one(Dir::BackToFront, m?).await?;
                p.drain(Dir::BackToFront).await?;
                p.drain(Dir::FrontToBack).await?;
            }
            Woken::Front(None) | Woken::Back(None) | Woken::Control(None) => {
                return Err(Error::Closed)
            }
            Woken::Control(Some(cmd)) => {
                let cmd = cmd?;
                let control = control.expect("a control message needs a control socket");
                let word = cmd.parts().first().map_or(&[][..], |p| &p[..]);
                let rep = control.socket_type() == SocketType::Rep;
                match word {
                    b"PAUSE" => paused = true,
                    b"RESUME" => paused = false,
                    b"TERMINATE" => {
                        if rep {
                            control.send(Message::from(Vec::new())).await?;
                        }
                        return Ok(p.stats);
                    }
                    b"STATISTICS" => {
                        control.send(p.stats.to_message()).await?;
                        continue;
                    }
                    _ => {}
                }
                if rep {
                    control.send(Message::from(Vec::new())).await?;
                }
            }
        }
    }
}
