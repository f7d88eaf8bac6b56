//! Sockets as `futures` [`Stream`]s and [`Sink`]s, so `StreamExt` / `SinkExt` combinators,
//! `forward` and `select!` work on them.
//!
//! [`Socket::stream`] gives the reading half, [`Socket::sink`] the writing half; both are
//! handles to the same socket (take as many as you like). Both are poll-based and cancel-safe:
//! a message is taken off the socket's queue only by the `poll_next` that returns it, and
//! `poll_ready` is pending while no peer has room (as `send` waits), so a `SinkExt::send`
//! dropped while it waits has sent nothing.
//!
//! The sink takes messages ahead of the socket, up to [`SINK_BATCH`] and never more than the
//! socket had room for at its last look (`omq_core::Socket::send_room`: PUSH, DEALER, PAIR and
//! their single-part kin count their peers' room; the other types take one at a time), and
//! hands them over under one lock at `poll_flush`, `poll_close` or the `poll_ready` that finds
//! the batch full: `send_all` and `forward` take the socket's lock once a batch instead of twice
//! a message. "Flushed" means handed to the socket, as `send` returning does: the socket's
//! connections write it out in the background. Should another handle take the room first, the
//! sink keeps what it holds and hands it over once there is room again. A sink dropped before
//! it was flushed hands what it holds to the socket if there is room, which there is unless
//! another handle took it; an error the socket gives a held message (an unroutable ROUTER
//! message with ROUTER_MANDATORY, say) comes back from the `poll_flush` or `poll_ready` that
//! handed it over, not from `start_send`.
//!
//! The halves wait without limit: RCVTIMEO and SNDTIMEO apply to `recv` and `send`, not here
//! (wrap a stream in your runtime's timeout combinator instead).

use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::EventListener;
use futures_core::Stream;
use futures_util::Sink;
use omq_core::{Message, RecvError};

use crate::error::Error;
use crate::runtime::Runtime;
use crate::shared::Shared;
use crate::socket::Socket;

/// Which queue a half waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Recv,
    Send,
}

/// A registered interest in the socket becoming readable or writable, counted in the socket's
/// state while it exists (dispatch only checks readiness when someone waits).
struct Wait {
    shared: Arc<Shared>,
    side: Side,
    listener: EventListener,
}

impl Wait {
    /// Listens, then counts the waiter; the caller looks again before sleeping on it, so a
    /// change between its last look and the listen is not missed.
    fn new(shared: &Arc<Shared>, side: Side) -> Wait {
        let listener = match side {
            Side::Recv => shared.recv_ready.listen(),
            Side::Send => shared.send_ready.listen(),
        };
        let mut st = shared.lock();
        match side {
            Side::Recv => st.recv_waiters += 1,
            Side::Send => st.send_waiters += 1,
        }
        Wait {
            shared: shared.clone(),
            side,
            listener,
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        match self.side {
            Side::Recv => st.recv_waiters -= 1,
            Side::Send => st.send_waiters -= 1,
        }
    }
}

/// The reading half of a socket: a `Stream` of received messages. Ends when the socket is
/// closed; an error the socket type gives (recv on a PUB) is yielded as an item.
pub struct SocketStream<R: Runtime> {
    socket: Socket<R>,
    wait: Option<Wait>,
    done: bool,
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> std::fmt::Debug for SocketStream<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketStream")
            .field("socket", &self.socket)
            .finish()
    }
}

impl<R: Runtime> SocketStream<R> {
    pub(crate) fn new(socket: Socket<R>) -> Self {
        SocketStream {
            socket,
            wait: None,
            done: false,
            _runtime: PhantomData,
        }
    }

    /// The socket this half reads from.
    pub fn socket(&self) -> &Socket<R> {
        &self.socket
    }
}

impl<R: Runtime> Stream for SocketStream<R> {
    type Item = Result<Message, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(m) = this.socket.shared().recv_ahead() {
            this.wait = None;
            return Poll::Ready(Some(Ok(m)));
        }
        let shared = this.socket.shared().clone();
        loop {
            {
                let (st, r) = shared.lock_recv();
                match r {
                    Ok(m) => {
                        shared.finish(st);
                        this.wait = None;
                        return Poll::Ready(Some(Ok(m)));
                    }
                    Err(RecvError::WouldBlock) => {}
                    Err(RecvError::Closed) => {
                        this.done = true;
                        this.wait = None;
                        return Poll::Ready(None);
                    }
                    Err(e) => return Poll::Ready(Some(Err(e.into()))),
                }
            }
            match &mut this.wait {
                None => this.wait = Some(Wait::new(&shared, Side::Recv)),
                Some(w) => match Pin::new(&mut w.listener).poll(cx) {
                    Poll::Ready(()) => this.wait = None,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

/// Most messages a sink takes ahead of the socket before handing them over under one lock.
pub const SINK_BATCH: usize = 64;

/// The writing half of a socket: a `Sink` of messages, with backpressure.
pub struct SocketSink<R: Runtime> {
    socket: Socket<R>,
    /// Messages `start_send` took and the socket has not yet, in order (at most
    /// [`SINK_BATCH`]).
    buf: VecDeque<Message>,
    /// How many more messages `start_send` may take: the socket's room at the last look
    /// (`omq_core::Socket::send_room`), less what `buf` took since. So what the sink holds
    /// never goes past what SNDHWM lets the socket take.
    credit: usize,
    wait: Option<Wait>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> std::fmt::Debug for SocketSink<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketSink")
            .field("socket", &self.socket)
            .field("holding", &self.buf.len())
            .finish()
    }
}

impl<R: Runtime> SocketSink<R> {
    pub(crate) fn new(socket: Socket<R>) -> Self {
        SocketSink {
            socket,
            buf: VecDeque::new(),
            credit: 0,
            wait: None,
            _runtime: PhantomData,
        }
    }

    /// The socket this half writes to.
    pub fn socket(&self) -> &Socket<R> {
        &self.socket
    }

    /// Hands what the sink holds to the socket under one lock and looks at the room left.
    /// True when nothing is held any more. A message the socket refuses for a reason other
    /// than room is dropped with its error, as `send` would drop it.
    fn hand_over(&mut self) -> Result<bool, Error> {
        let (r, room) = self.socket.send_many(&mut self.buf, true);
        if let Err(e) = r {
            self.buf.pop_front();
            self.credit = 0;
            return Err(e);
        }
        self.credit = if self.buf.is_empty() { room } else { 0 };
        Ok(self.buf.is_empty())
    }

    /// Hands over what is held, waiting for room; with `credit`, then also waits until the
    /// socket has room for another message.
    fn poll_hand_over(&mut self, cx: &mut Context<'_>, credit: bool) -> Poll<Result<(), Error>> {
        loop {
            match self.hand_over() {
                Err(e) => {
                    self.wait = None;
                    return Poll::Ready(Err(e));
                }
                Ok(true) if !credit || self.credit > 0 => {
                    self.wait = None;
                    return Poll::Ready(Ok(()));
                }
                Ok(_) => {}
            }
            match &mut self.wait {
                None => self.wait = Some(Wait::new(self.socket.shared(), Side::Send)),
                Some(w) => match Pin::new(&mut w.listener).poll(cx) {
                    Poll::Ready(()) => self.wait = None,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

impl<R: Runtime> Sink<Message> for SocketSink<R> {
    type Error = Error;

    /// Ready while the socket had room, at the last look, for one more than the sink holds
    /// (and the sink holds fewer than [`SINK_BATCH`]); otherwise hands over what it holds and
    /// waits for room. So a send future dropped while waiting here has sent nothing.
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.credit > 0 && self.buf.len() < SINK_BATCH {
            return Poll::Ready(Ok(()));
        }
        self.poll_hand_over(cx, true)
    }

    /// Takes the message; it goes to the socket with the next `poll_flush`, `poll_close`, or
    /// the `poll_ready` that finds [`SINK_BATCH`] held.
    fn start_send(mut self: Pin<&mut Self>, item: Message) -> Result<(), Error> {
        self.buf.push_back(item);
        self.credit = self.credit.saturating_sub(1);
        Ok(())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.poll_hand_over(cx, false)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.poll_hand_over(cx, false)
    }
}

impl<R: Runtime> Drop for SocketSink<R> {
    /// What the sink still holds goes to the socket if it has room: the sink took it only
    /// while the socket had room, so it fits unless another handle took that room since.
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.socket.send_many(&mut self.buf, false);
        }
    }
}

impl<R: Runtime> Socket<R> {
    /// The reading half of this socket as a `Stream` (see [`crate::stream`]).
    pub fn stream(&self) -> SocketStream<R> {
        SocketStream::new(self.clone())
    }

    /// The writing half of this socket as a `Sink` (see [`crate::stream`]).
    pub fn sink(&self) -> SocketSink<R> {
        SocketSink::new(self.clone())
    }

    /// Both halves.
    pub fn split(&self) -> (SocketSink<R>, SocketStream<R>) {
        (self.sink(), self.stream())
    }
}
