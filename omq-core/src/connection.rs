//! One connection of a socket: its session (the wire) joined to its pipe (the socket's view of
//! the peer). Every driver — the simulated network, the async backends, a user's own event
//! loop — moves bytes through a `Connection` and lets it carry whole messages and connection
//! events between the session and the socket, so that glue exists once.
//!
//! The socket is passed into each call rather than owned, because in a multi-threaded driver
//! the socket is shared (behind a lock) while each connection lives in its own task.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use crate::error::{SessionError, UsageError};
use crate::mechanism::{AuthReply, AuthRequest};
use crate::pipe::{Command, Outbound, PipeId};
use crate::session::{Session, SessionConfig, SessionEvent};
use crate::socket::Socket;
use crate::socket_type::SocketType;
use crate::wire::command::Command as WireCommand;

/// How many bytes a connection lets wait for the wire before it stops taking messages from
/// its pipe. Beyond this the pipe (bounded by SNDHWM) holds them, so HWM keeps its meaning.
pub const MAX_QUEUED_TRANSMIT: usize = 256 * 1024;

/// Most events a connection decodes before handing them to the socket (see
/// [`crate::session::SessionConfig::max_events`]): what one peer's read can make us hold
/// beyond the socket's queues.
pub const EVENT_BATCH: usize = 256;

/// A STREAM message that asks to close the connection: no bytes at all.
fn is_close(m: &crate::message::Message) -> bool {
    m.parts().iter().all(|p| p.is_empty())
}

/// A socket's connection to one peer.
#[derive(Debug)]
pub struct Connection {
    pipe: PipeId,
    session: Session,
    /// Events decoded but refused by the socket (its queue for this pipe, or XPUB's queue of
    /// subscription notifications, was full): messages, subscriptions and cancels.
    stash: VecDeque<SessionEvent>,
    /// An error raised while delivering (an authentication refusal), reported by the next
    /// input call.
    failed: Option<SessionError>,
    /// STREAM: the application sent an empty message; the connection ends once what came
    /// before it is written.
    close_requested: bool,
    /// When the connection started: a raw (STREAM) connection is ready at once and says so
    /// on the first [`Connection::pull`], before any byte has arrived.
    started: Instant,
    /// Whether the raw connection's readiness has been delivered.
    announced: bool,
}

impl Connection {
    /// A connection for `pipe` with a fresh session.
    pub fn new(pipe: PipeId, config: SessionConfig, now: Instant) -> Self {
        Connection {
            pipe,
            session: Session::new(config, now),
            stash: VecDeque::new(),
            failed: None,
            close_requested: false,
            started: now,
            announced: false,
        }
    }

    /// The socket attaches the peer's properties to each message as it is read, not the
    /// session as it decodes it (see [`Session::leave_properties_to_reader`]): for a driver
    /// whose connections decode on another thread than the one the socket's user reads on.
    pub fn leave_properties_to_reader(&mut self) {
        self.session.leave_properties_to_reader();
    }

    /// The pipe this connection serves.
    pub fn pipe(&self) -> PipeId {
        self.pipe
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Feeds received bytes, then hands what they completed to the socket, a batch at a time,
    /// until the buffer holds no whole frame or the socket has no room (then what is left
    /// waits in `buf`: call [`Connection::handle_resume`] after
    /// [`crate::socket::Action::ResumeRead`]).
    pub fn handle_input(
        &mut self,
        socket: &mut Socket,
        buf: &mut BytesMut,
        now: Instant,
    ) -> Result<(), SessionError> {
        loop {
            let r = self.handle_bytes(buf, now);
            let r = self.finish_input(socket, r, now);
            if r.is_err() || !self.wants_read() || !self.input_pending(buf) {
                return r;
            }
        }
    }

    /// After [`crate::socket::Action::ResumeRead`]: delivers what waited, then decodes what the
    /// buffer still holds, as [`Connection::handle_input`] does.
    pub fn handle_resume(
        &mut self,
        socket: &mut Socket,
        buf: &mut BytesMut,
        now: Instant,
    ) -> Result<(), SessionError> {
        if !self.deliver(socket, now) {
            return self.failed.take().map_or(Ok(()), Err);
        }
        if self.input_pending(buf) {
            return self.handle_input(socket, buf, now);
        }
        self.failed.take().map_or(Ok(()), Err)
    }

    /// True when `buf` holds a whole frame not decoded yet (see [`Session::input_pending`]).
    pub fn input_pending(&self, buf: &[u8]) -> bool {
        self.session.input_pending(buf)
    }

    /// The half of [`Connection::handle_input`] that needs no socket: decodes the bytes (and
    /// decrypts them, under CURVE) into events kept in the session. A multi-threaded driver
    /// calls it outside the socket's lock, so one connection's protocol work never holds up
    /// the socket's other connections, then calls [`Connection::finish_input`] under it.
    pub fn handle_bytes(&mut self, buf: &mut BytesMut, now: Instant) -> Result<(), SessionError> {
        self.session.handle_input(buf, now)
    }

    /// Takes the authentication request that [`Connection::handle_bytes`] raised, if any, so
    /// that a driver can ask the authenticator outside the socket's lock (an authenticator
    /// may wait, for a ZAP handler in another thread, and must not hold up the socket
    /// meanwhile). Answer with [`Connection::handle_auth_reply`] before
    /// [`Connection::finish_input`]; events decoded before the request keep their order. A
    /// request not taken is answered by [`Connection::deliver`], under the lock.
    pub fn take_auth_request(&mut self) -> Option<AuthRequest> {
        if self.session.is_ready() {
            return None;
        }
        let mut before = Vec::new();
        let mut found = None;
        while let Some(e) = self.session.poll_event() {
            match e {
                SessionEvent::AuthRequest(r) => {
                    found = Some(*r);
                    break;
                }
                e => before.push(e),
            }
        }
        // What came before goes first; what the session still holds comes after it.
        self.stash.extend(before);
        found
    }

    /// The authenticator's answer to [`Connection::take_auth_request`]; a refusal is
    /// reported by the next input call, as when [`Connection::deliver`] asks.
    pub fn handle_auth_reply(&mut self, reply: AuthReply, now: Instant) {
        if let Err(e) = self.session.handle_auth_reply(reply, now) {
            self.failed = Some(e);
        }
    }

    /// The other half: hands what [`Connection::handle_bytes`] completed to the socket and
    /// returns its result, or the error delivering raised (an authentication refusal).
    pub fn finish_input(
        &mut self,
        socket: &mut Socket,
        decoded: Result<(), SessionError>,
        now: Instant,
    ) -> Result<(), SessionError> {
        self.deliver(socket, now);
        decoded.and_then(|()| self.failed.take().map_or(Ok(()), Err))
    }

    /// Fires the session's timers.
    pub fn handle_timeout(
        &mut self,
        socket: &mut Socket,
        now: Instant,
    ) -> Result<(), SessionError> {
        let r = self.session.handle_timeout(now);
        self.deliver(socket, now);
        r.and_then(|()| self.failed.take().map_or(Ok(()), Err))
    }

    /// Hands session events to the socket until it refuses a message (its queue for this pipe
    /// is at RCVHWM). Returns true when everything was delivered; call again after
    /// [`crate::socket::Action::ResumeRead`].
    pub fn deliver(&mut self, socket: &mut Socket, now: Instant) -> bool {
        loop {
            let event = match self.stash.pop_front() {
                Some(e) => e,
                None => match self.session.poll_event() {
                    Some(e) => e,
                    None => return true,
                },
            };
            match event {
                SessionEvent::HandshakeSucceeded => {
                    if let Some(peer) = self.session.peer().cloned() {
                        socket.handle_ready(self.pipe, peer, now);
                    }
                }
                SessionEvent::Message(msg) => {
                    if let Err(msg) = socket.handle_message(self.pipe, msg) {
                        self.stash.push_front(SessionEvent::Message(msg));
                        return false;
                    }
                }
                e @ (SessionEvent::Subscribe(_) | SessionEvent::Cancel(_))
                    if !socket.subscription_room(self.pipe) =>
                {
                    self.stash.push_front(e);
                    return false;
                }
                SessionEvent::Subscribe(t) => {
                    socket.handle_subscribe(self.pipe, t);
                    if self.over_subscribed(socket) {
                        return true;
                    }
                }
                SessionEvent::Cancel(t) => socket.handle_cancel(self.pipe, t),
                SessionEvent::AuthRequest(request) => {
                    let reply = socket.options().authenticate(&request);
                    if let Err(e) = self.session.handle_auth_reply(reply, now) {
                        self.failed = Some(e);
                    }
                }
                SessionEvent::Join(g) => {
                    socket.handle_join(self.pipe, g);
                    if self.over_subscribed(socket) {
                        return true;
                    }
                }
                SessionEvent::Leave(g) => socket.handle_leave(self.pipe, g),
            }
        }
    }

    /// MAX_SUBSCRIPTIONS: true (and the connection failed) once the peer holds more topics
    /// or groups than allowed; the events after it are not delivered.
    fn over_subscribed(&mut self, socket: &Socket) -> bool {
        match socket.subscription_limit(self.pipe) {
            Ok(()) => false,
            Err(e) => {
                self.failed = Some(e.into());
                true
            }
        }
    }

    /// Whether the driver should read more: false while refused messages wait for room, so a
    /// full queue stops reading and the peer feels the backpressure through TCP.
    pub fn wants_read(&self) -> bool {
        self.stash.is_empty()
    }

    /// Moves messages from the socket's pipe into the session, until the pipe is empty or
    /// [`MAX_QUEUED_TRANSMIT`] bytes wait for the wire.
    pub fn pull(&mut self, socket: &mut Socket) -> Result<(), UsageError> {
        if !self.session.is_ready() {
            return Ok(());
        }
        // A STREAM's connection is ready before any input: the socket hears of it here.
        if self
            .session
            .peer()
            .is_some_and(|p| p.socket_type == SocketType::Stream)
            && !self.announced
        {
            self.announced = true;
            self.deliver(socket, self.started);
        }
        while self.session.queued_transmit() < MAX_QUEUED_TRANSMIT && !self.close_requested {
            match socket.poll_transmit(self.pipe) {
                None => break,
                Some(Outbound::Message(m))
                    if is_close(&m) && socket.socket_type() == SocketType::Stream =>
                {
                    self.close_requested = true;
                }
                Some(Outbound::Message(m)) => self.session.send_message(&m)?,
                Some(Outbound::Command(c)) => match c {
                    Command::Subscribe(t) => self.session.send_subscribe(&t)?,
                    Command::Cancel(t) => self.session.send_cancel(&t)?,
                    Command::Join(g) => self.session.send_command(&WireCommand::Join(g))?,
                    Command::Leave(g) => self.session.send_command(&WireCommand::Leave(g))?,
                },
            }
        }
        Ok(())
    }

    /// STREAM: the application asked to close this connection, and every byte queued before
    /// that has left the session. The driver closes the connection once its own writes are
    /// done too (the socket then hears of it as of any ended connection).
    pub fn close_requested(&self) -> bool {
        self.close_requested && self.session.queued_transmit() == 0
    }

    /// The next chunk to write.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.session.poll_transmit()
    }

    /// Bytes waiting to be written.
    pub fn queued_transmit(&self) -> usize {
        self.session.queued_transmit()
    }

    /// When to call [`Connection::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.session.poll_timeout()
    }

    /// How much free room the read buffer should have (see [`Session::read_hint`]).
    pub fn read_hint(&self, buffered: &[u8]) -> usize {
        self.session.read_hint(buffered)
    }
}
