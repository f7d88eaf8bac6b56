//! Sockets as `futures` [`Stream`]s and [`Sink`]s, so `StreamExt` / `SinkExt` combinators,
//! `forward` and `select!` work on them.
//!
//! [`Socket::stream`] gives the reading half, [`Socket::sink`] the writing half; both are
//! handles to the same socket (take as many as you like). Both are poll-based and cancel-safe:
//! a message is taken off the socket's queue only by the `poll_next` that returns it, and
//! `poll_ready` is pending while no peer has room (as `send` waits), so a `SinkExt::send`
//! dropped while it waits has sent nothing. Should another handle take the room between
//! `poll_ready` and `start_send`, the sink keeps that one message and hands it over on the
//! next `poll_ready` / `poll_flush`. "Flushed" means handed to the socket, as `send` returning
//! does: the socket's connections write it out in the background.
//!
//! The halves wait without limit: RCVTIMEO and SNDTIMEO apply to `recv` and `send`, not here
//! (wrap a stream in your runtime's timeout combinator instead).

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

/// The writing half of a socket: a `Sink` of messages, with backpressure.
pub struct SocketSink<R: Runtime> {
    socket: Socket<R>,
    /// A message accepted by `start_send` that the socket had no room for yet.
    held: Option<Message>,
    wait: Option<Wait>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> std::fmt::Debug for SocketSink<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketSink")
            .field("socket", &self.socket)
            .field("holding", &self.held.is_some())
            .finish()
    }
}

impl<R: Runtime> SocketSink<R> {
    pub(crate) fn new(socket: Socket<R>) -> Self {
        SocketSink {
            socket,
            held: None,
            wait: None,
            _runtime: PhantomData,
        }
    }

    /// The socket this half writes to.
    pub fn socket(&self) -> &Socket<R> {
        &self.socket
    }

    /// Hands the held message to the socket, waiting for room.
    fn poll_push(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let shared = self.socket.shared().clone();
        loop {
            let Some(msg) = self.held.take() else {
                self.wait = None;
                return Poll::Ready(Ok(()));
            };
            {
                let (st, r) = shared.lock_send(msg);
                match r {
                    Ok(()) => {
                        shared.finish(st);
                        continue;
                    }
                    Err(e) => {
                        let (err, m) = Error::from_send(e);
                        if !matches!(err, Error::WouldBlock) {
                            self.wait = None;
                            return Poll::Ready(Err(err));
                        }
                        self.held = Some(m);
                    }
                }
            }
            match &mut self.wait {
                None => self.wait = Some(Wait::new(&shared, Side::Send)),
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

    /// Ready when the socket has room for a message now (and nothing is held), so a send
    /// future dropped while waiting here has sent nothing.
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.poll_push(cx)?.is_pending() {
            return Poll::Pending;
        }
        let shared = self.socket.shared().clone();
        loop {
            if shared.can_send() {
                self.wait = None;
                return Poll::Ready(Ok(()));
            }
            match &mut self.wait {
                None => self.wait = Some(Wait::new(&shared, Side::Send)),
                Some(w) => match Pin::new(&mut w.listener).poll(cx) {
                    Poll::Ready(()) => self.wait = None,
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }

    fn start_send(mut self: Pin<&mut Self>, item: Message) -> Result<(), Error> {
        debug_assert!(self.held.is_none(), "start_send without poll_ready");
        // Hand it over at once when there is room; otherwise keep it for the next poll.
        let shared = self.socket.shared().clone();
        let (st, r) = shared.lock_send(item);
        match r {
            Ok(()) => {
                shared.finish(st);
                Ok(())
            }
            Err(e) => {
                let (err, m) = Error::from_send(e);
                if matches!(err, Error::WouldBlock) {
                    self.held = Some(m);
                    Ok(())
                } else {
                    Err(err)
                }
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.poll_push(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.poll_push(cx)
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
