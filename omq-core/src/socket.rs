//! A whole socket as one state machine: its options, its pipes, its endpoints, reconnection
//! and monitor events, and its type's messaging pattern (the private `pattern` module), which
//! it calls once for anything type-specific.
//!
//! Inputs: user operations ([`Socket::send`], [`Socket::recv`], [`Socket::bind`],
//! [`Socket::connect`], [`Socket::set_option`]...) and network events from the driver
//! (`handle_connected`, `handle_accepted`, `handle_ready`, `handle_message`, `handle_closed`,
//! `handle_timeout`...). Outputs: messages to transmit per pipe ([`Socket::poll_transmit`]),
//! actions for the driver ([`Socket::poll_action`]: dial, close, flush, resume reading), monitor
//! events ([`Socket::poll_monitor`]) and the next deadline ([`Socket::poll_timeout`]).
//!
//! Sessions (the wire) belong to connections, not to the socket: only whole messages and
//! connection events cross into it. [`crate::connection::Connection`] joins the two.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::compress::{Compression, CompressionConfig};
use crate::endpoint::{Endpoint, EndpointError};
use crate::error::{LimitError, ProtocolError, SessionError};
use crate::message::{Message, Part};
use crate::monitor::{EventKind, EventPeer, MonitorEvent};
use crate::options::{OptionError, OptionName, Options, SocketOption};
use crate::pattern::{Attach, Ctx, Pattern};
use crate::pipe::{Command, Origin, Outbound, PipeId, PipeState, Pipes};
use crate::rng::SplitMix64;
use crate::routing::FairQueue;
use crate::session::{PeerInfo, SessionConfig};
use crate::socket_type::SocketType;
use crate::trace;

/// Most monitor events kept unread; later ones are counted ([`Socket::monitor_dropped`]) and
/// dropped. libzmq's monitor is a PAIR socket whose default SNDHWM is 1,000; we keep more, since
/// a burst of connection events is worth seeing whole.
pub const MONITOR_QUEUE_MAX: usize = 10_000;

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Open a connection to `endpoint` for `pipe`; report `handle_dialing`, then
    /// `handle_connected` or `handle_connect_failed`.
    Dial {
        /// The pipe the connection will serve.
        pipe: PipeId,
        /// Where to connect.
        endpoint: Endpoint,
    },
    /// Drop the connection of `pipe` (the socket has already forgotten it).
    Close {
        /// The pipe.
        pipe: PipeId,
    },
    /// Messages wait in `pipe`: take them with [`Socket::poll_transmit`].
    Flush {
        /// The pipe.
        pipe: PipeId,
    },
    /// `pipe`'s incoming queue has room again: resume reading its connection.
    ResumeRead {
        /// The pipe.
        pipe: PipeId,
    },
}

/// Why a connection ended, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The peer closed the connection.
    Eof,
    /// The transport failed.
    Io(std::io::ErrorKind),
    /// The session failed (protocol, limits, timeouts, authentication).
    Session(SessionError),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Eof => f.write_str("the peer closed the connection"),
            CloseReason::Io(kind) => write!(f, "transport error: {kind}"),
            CloseReason::Session(e) => write!(f, "{e}"),
        }
    }
}

/// Why a message does not fit the socket it was sent on (libzmq's EINVAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// A message needs at least one part.
    #[error("a message needs at least one part")]
    Empty,
    /// ROUTER: the first part is the routing id, then the body.
    #[error("a ROUTER message starts with a routing id part, then the body")]
    NoRoutingId,
    /// CLIENT, SERVER, SCATTER, GATHER, CHANNEL, PEER, RADIO, DISH: one part per message.
    #[error("this socket type sends single-part messages only")]
    Multipart,
    /// RADIO: every message goes to a group.
    #[error("a RADIO message needs a group (Message::with_group)")]
    NoGroup,
    /// RADIO: a group is at most 255 bytes.
    #[error("a group is at most 255 bytes")]
    GroupTooLong,
}

/// A send could not happen. The message comes back so the caller can retry without a copy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No peer can take the message now (no peers, or all at SNDHWM); libzmq's EAGAIN.
    #[error("send would block (no peer has room)")]
    WouldBlock(Message),
    /// ROUTER_MANDATORY: no peer has this routing id; libzmq's EHOSTUNREACH.
    #[error("no peer with that routing id (host unreachable)")]
    HostUnreachable(Message),
    /// Not allowed in the socket's current state (REQ twice, REP before a request); EFSM.
    #[error("operation not allowed in the socket's current state")]
    InvalidState(Message),
    /// This socket type cannot send (PULL, SUB); ENOTSUP.
    #[error("this socket type cannot send")]
    NotSupported(Message),
    /// The message does not fit the socket type (a ROUTER message without a routing id part).
    #[error("invalid message for this socket type: {1}")]
    InvalidMessage(Message, MessageError),
    /// The socket has been closed.
    #[error("the socket is closed")]
    Closed(Message),
}

impl SendError {
    /// The message that was not sent.
    pub fn into_message(self) -> Message {
        match self {
            SendError::WouldBlock(m)
            | SendError::HostUnreachable(m)
            | SendError::InvalidState(m)
            | SendError::NotSupported(m)
            | SendError::InvalidMessage(m, _)
            | SendError::Closed(m) => m,
        }
    }
}

/// A receive could not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// Nothing to receive now; libzmq's EAGAIN.
    #[error("receive would block (no message)")]
    WouldBlock,
    /// Not allowed in the socket's current state (REQ before sending); EFSM.
    #[error("operation not allowed in the socket's current state")]
    InvalidState,
    /// This socket type cannot receive (PUSH, PUB); ENOTSUP.
    #[error("this socket type cannot receive")]
    NotSupported,
    /// The socket has been closed.
    #[error("the socket is closed")]
    Closed,
}

/// A socket-level operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// An option was invalid or does not apply.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// An endpoint was malformed or unsupported.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// `unbind` of an endpoint that is not bound.
    #[error("endpoint {0} is not bound")]
    NotBound(String),
    /// `disconnect` of an endpoint that is not connected.
    #[error("endpoint {0} is not connected")]
    NotConnected(String),
    /// A socket type the core does not implement yet.
    #[error("socket type {0} is not supported yet")]
    UnsupportedType(SocketType),
    /// The socket is closed.
    #[error("the socket is closed")]
    Closed,
    /// DISH: a group longer than 255 bytes, joined twice, or left without being joined
    /// (libzmq's EINVAL).
    #[error("group: {0}")]
    Group(&'static str),
    /// The operation is for other socket types (`connect_peer` on anything but PEER).
    #[error("{operation} is not for a {socket_type} socket")]
    WrongType {
        /// The operation.
        operation: &'static str,
        /// This socket's type.
        socket_type: SocketType,
    },
}

#[derive(Debug)]
struct Connect {
    endpoint: Endpoint,
    text: String,
    pipe: Option<PipeId>,
    retry_at: Option<Instant>,
    ivl: Option<Duration>,
    routing_id: Option<Bytes>,
}

#[derive(Debug)]
struct Bound {
    requested: String,
    resolved: String,
}

/// One ZeroMQ socket.
#[derive(Debug)]
pub struct Socket {
    socket_type: SocketType,
    options: Options,
    pipes: Pipes,
    /// The fair-queued incoming side every receiving type shares.
    fq: FairQueue,
    /// Everything specific to the socket's type.
    pattern: Pattern,
    connects: Vec<Option<Connect>>,
    binds: Vec<Bound>,
    actions: VecDeque<Action>,
    monitor: Option<VecDeque<MonitorEvent>>,
    /// Events dropped because the monitor queue was full.
    monitor_dropped: u64,
    rng: SplitMix64,
    closed: bool,
}

impl Socket {
    /// A socket of type `t`. `seed` feeds its randomness (reconnect jitter, the first generated
    /// routing id, the first REQ_CORRELATE id); drivers draw it from the OS, tests fix it.
    pub fn new(t: SocketType, mut options: Options, seed: u64) -> Result<Socket, SocketError> {
        options.validate(t)?;
        options.resolve_security()?;
        if !options.linger_set && t.lingers_zero_by_default() {
            options.linger = Some(std::time::Duration::ZERO);
        }
        let mut rng = SplitMix64::new(seed);
        let pattern = Pattern::new(t, &mut rng).ok_or(SocketError::UnsupportedType(t))?;
        Ok(Socket {
            socket_type: t,
            options,
            pipes: Pipes::default(),
            fq: FairQueue::default(),
            pattern,
            connects: Vec::new(),
            binds: Vec::new(),
            actions: VecDeque::new(),
            monitor: None,
            monitor_dropped: 0,
            rng,
            closed: false,
        })
    }

    /// The socket's type.
    pub fn socket_type(&self) -> SocketType {
        self.socket_type
    }

    /// The socket's options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Changes an option. HWM changes apply to live pipes at once (lowering a limit drops
    /// nothing already queued).
    pub fn set_option(&mut self, opt: SocketOption) -> Result<(), SocketError> {
        let name = opt.name();
        if !name.applies_to(self.socket_type) {
            return Err(OptionError::NotApplicable {
                option: name,
                socket_type: self.socket_type,
            }
            .into());
        }
        self.options.apply(opt)?;
        // A raised RCVHWM may unblock paused readers.
        self.ctx().resume_all();
        Ok(())
    }

    /// Starts or stops recording monitor events (recording is off by default, so an unwatched
    /// socket never accumulates them). Stopping records MONITOR_STOPPED as the last event.
    pub fn set_monitor(&mut self, on: bool) {
        match (on, self.monitor.is_some()) {
            (true, false) => self.monitor = Some(VecDeque::new()),
            (false, true) => self.event(EventKind::MonitorStopped, 0, String::new()),
            // Stopping keeps the queue until it is drained: poll_monitor drops it after
            // MONITOR_STOPPED.
            _ => {}
        }
    }

    fn event(&mut self, kind: EventKind, value: i64, endpoint: String) {
        if self.monitor.is_none() && !trace::LIFECYCLE {
            return;
        }
        self.emit(MonitorEvent::new(kind, value, endpoint));
    }

    /// Traces an event (with the `tracing` feature) and queues it for the monitor, if any.
    fn emit(&mut self, e: MonitorEvent) {
        #[cfg(feature = "tracing")]
        trace::lifecycle(self.socket_type, &e);
        if let Some(q) = &mut self.monitor {
            // A monitor nobody reads must not grow without bound (peers that connect and
            // leave in a loop produce events forever): past the cap, new events are counted
            // and dropped, except MONITOR_STOPPED, which always ends the stream.
            if q.len() >= MONITOR_QUEUE_MAX && e.kind != EventKind::MonitorStopped {
                self.monitor_dropped += 1;
                return;
            }
            q.push_back(e);
        }
    }

    /// An event about `pipe`'s connection: with its peer when the handshake has told us who it
    /// is, and with `cause` when the connection ended.
    fn pipe_event(
        &mut self,
        kind: EventKind,
        value: i64,
        pipe: PipeId,
        cause: Option<&CloseReason>,
    ) {
        if self.monitor.is_none() && !trace::LIFECYCLE {
            return;
        }
        let mut e = MonitorEvent::new(kind, value, self.endpoint_of(pipe));
        e.peer = self
            .pipes
            .get(pipe)
            .and_then(|p| p.peer.as_ref())
            .map(|info| EventPeer {
                routing_id: info.routing_id.clone().filter(|id| !id.is_empty()),
                address: info
                    .properties
                    .get(crate::wire::metadata::PEER_ADDRESS)
                    .map(|a| String::from_utf8_lossy(a).into_owned()),
                socket_type: info.socket_type,
            });
        e.cause = cause.cloned();
        self.emit(e);
    }

    /// Monitor events waiting to be read; None when monitoring is off.
    pub fn monitor_queued(&self) -> Option<usize> {
        self.monitor.as_ref().map(VecDeque::len)
    }

    /// Monitor events dropped because [`MONITOR_QUEUE_MAX`] events were waiting unread.
    pub fn monitor_dropped(&self) -> u64 {
        self.monitor_dropped
    }

    /// Stops monitoring at once and forgets the events not yet read (the driver calls this
    /// when the last reader of the monitor goes away: no MONITOR_STOPPED is queued, since no
    /// one is left to read it).
    pub fn drop_monitor(&mut self) {
        self.monitor = None;
    }

    /// The configuration for a new connection's session on `endpoint`: a compressed
    /// transport's connection gets the socket's compression options, and fresh randomness for
    /// the id of a dictionary it trains.
    fn session_config_on(&mut self, endpoint: Option<Compression>) -> SessionConfig {
        let mut c = self.session_config();
        c.compression = endpoint.map(|kind| CompressionConfig {
            kind,
            dict: self.options.compression_dict.clone(),
            auto_train: self.options.compression_auto_train,
            level: self.options.compression_level,
            seed: self.rng.next_u64(),
        });
        c
    }

    /// Checks the compression options against a compressed endpoint, so a dictionary the
    /// transport cannot use is refused at bind/connect rather than on every connection.
    fn check_compression(&self, ep: &Endpoint) -> Result<(), SocketError> {
        if let (Some(kind), Some(dict)) = (ep.compression(), &self.options.compression_dict) {
            crate::compress::check_dict(kind, dict).map_err(|e| {
                SocketError::Option(OptionError::InvalidValue {
                    option: OptionName::CompressionDict,
                    reason: match e {
                        crate::error::ConfigError::CompressionDict(r) => r,
                        _ => "unusable dictionary",
                    },
                })
            })?;
        }
        Ok(())
    }

    /// The configuration for a new connection's session (plain transports).
    pub fn session_config(&self) -> SessionConfig {
        let o = &self.options;
        let mut c = SessionConfig::new(self.socket_type);
        c.routing_id = o.routing_id.clone();
        c.metadata = o.metadata.clone();
        c.mechanism = o.mechanism.clone();
        c.max_msg_size = o.max_msg_size;
        c.handshake_ivl = o.handshake_ivl;
        c.heartbeat_ivl = o.heartbeat_ivl;
        c.heartbeat_ttl = Some(o.heartbeat_ttl).filter(|d| !d.is_zero());
        c.heartbeat_timeout = o.heartbeat_timeout;
        c.authenticate = o.authenticator.is_some();
        c.zap_domain = o.zap_domain.clone();
        c.max_events = Some(crate::connection::EVENT_BATCH);
        c
    }

    // ----- endpoints -------------------------------------------------------------------

    /// Checks an endpoint for binding. The driver binds it, then reports
    /// [`Socket::handle_bound`] or [`Socket::handle_bind_failed`].
    pub fn bind(&mut self, endpoint: &str) -> Result<Endpoint, SocketError> {
        if self.closed {
            return Err(SocketError::Closed);
        }
        let ep = endpoint.parse::<Endpoint>()?;
        self.check_compression(&ep)?;
        self.check_udp(&ep, SocketType::Dish, "bind to udp://")?;
        Ok(ep)
    }

    /// `udp://` is for a DISH binding and a RADIO connecting (libzmq's ENOCOMPATPROTO
    /// otherwise).
    fn check_udp(
        &self,
        ep: &Endpoint,
        only: SocketType,
        operation: &'static str,
    ) -> Result<(), SocketError> {
        if matches!(ep, Endpoint::Udp { .. }) && self.socket_type != only {
            return Err(SocketError::WrongType {
                operation,
                socket_type: self.socket_type,
            });
        }
        Ok(())
    }

    /// The driver bound `requested`; `resolved` is the real address (port 0 resolved).
    pub fn handle_bound(&mut self, requested: &str, resolved: &str) {
        self.binds.push(Bound {
            requested: requested.into(),
            resolved: resolved.into(),
        });
        // An inproc bind has no listener: libzmq reports neither LISTENING nor CLOSED for it.
        if !is_inproc(resolved) {
            self.event(EventKind::Listening, 0, resolved.into());
        }
    }

    /// The driver could not bind `requested` (`errno`: the OS error number, if any).
    pub fn handle_bind_failed(&mut self, requested: &str, errno: i64) {
        self.event(EventKind::BindFailed, errno, requested.into());
    }

    /// Forgets a bound endpoint (by the address given to bind or the resolved one) and closes
    /// the connections accepted on it. The driver closes the listener.
    pub fn unbind(&mut self, endpoint: &str) -> Result<String, SocketError> {
        // Not an endpoint at all is libzmq's EINVAL, told apart from one not bound (ENOENT).
        endpoint.parse::<Endpoint>()?;
        let Some(i) = self
            .binds
            .iter()
            .position(|b| b.resolved == endpoint || b.requested == endpoint)
        else {
            return Err(SocketError::NotBound(endpoint.into()));
        };
        let bound = self.binds.remove(i);
        let accepted: Vec<PipeId> = self
            .pipes
            .iter()
            .filter(|p| p.origin == Origin::Accept(bound.resolved.clone()))
            .map(|p| p.id)
            .collect();
        for id in accepted {
            self.drop_pipe(id, true);
        }
        if !is_inproc(&bound.resolved) {
            self.event(EventKind::Closed, 0, bound.resolved.clone());
        }
        Ok(bound.resolved)
    }

    /// Starts connecting to `endpoint` (and reconnecting whenever the connection is lost).
    /// Unless IMMEDIATE is set, a pipe exists from now on, so messages queue for the peer.
    pub fn connect(&mut self, endpoint: &str, now: Instant) -> Result<Endpoint, SocketError> {
        if self.closed {
            return Err(SocketError::Closed);
        }
        let ep: Endpoint = endpoint.parse()?;
        self.check_compression(&ep)?;
        self.check_udp(&ep, SocketType::Radio, "connect to udp://")?;
        ep.check_dialable()?;
        let routing_id = self.options.connect_routing_id.take();
        self.connects.push(Some(Connect {
            endpoint: ep.clone(),
            text: endpoint.into(),
            pipe: None,
            retry_at: None,
            ivl: self.options.reconnect_ivl,
            routing_id,
        }));
        self.dial(self.connects.len() - 1, now);
        Ok(ep)
    }

    /// PEER: connects as [`Socket::connect`] does and returns the number of the peer it dials
    /// (libzmq's `zmq_connect_peer`): messages to it carry that routing id, and messages from
    /// it arrive with it, across reconnections too.
    pub fn connect_peer(&mut self, endpoint: &str, now: Instant) -> Result<u32, SocketError> {
        if self.socket_type != SocketType::Peer {
            return Err(SocketError::WrongType {
                operation: "connect_peer",
                socket_type: self.socket_type,
            });
        }
        self.connect(endpoint, now)?;
        let pipe = self.connects.last().and_then(|c| c.as_ref()?.pipe);
        pipe.and_then(|p| self.pipes.get(p))
            .and_then(|p| p.routing_id.as_deref())
            .and_then(crate::pattern::peer_number)
            .ok_or(SocketError::Closed)
    }

    /// Stops connecting to `endpoint` and drops its pipe with whatever is queued in it.
    pub fn disconnect(&mut self, endpoint: &str) -> Result<(), SocketError> {
        endpoint.parse::<Endpoint>()?;
        let Some(i) = self
            .connects
            .iter()
            .position(|c| c.as_ref().is_some_and(|c| c.text == endpoint))
        else {
            return Err(SocketError::NotConnected(endpoint.into()));
        };
        let c = self.connects[i].take().expect("found");
        if let Some(pipe) = c.pipe {
            self.drop_pipe(pipe, true);
        }
        Ok(())
    }

    fn dial(&mut self, idx: usize, now: Instant) {
        let immediate = self.options.immediate;
        let Some(Some(c)) = self.connects.get(idx) else {
            return;
        };
        let endpoint = c.endpoint.clone();
        let pipe = match c.pipe {
            Some(p) if self.pipes.get(p).is_some() => p,
            _ => {
                let p = self
                    .pipes
                    .insert(Origin::Connect(idx), PipeState::Disconnected);
                // A udp pipe is known as one from the start: a RADIO queues every group for
                // it before its socket exists, as libzmq's udp pipes subscribe to all.
                if matches!(endpoint, Endpoint::Udp { .. }) {
                    if let Some(pipe) = self.pipes.get_mut(p) {
                        pipe.datagram = true;
                    }
                }
                if let Some(Some(c)) = self.connects.get_mut(idx) {
                    c.pipe = Some(p);
                    if let Some(rid) = &c.routing_id {
                        if let Some(pipe) = self.pipes.get_mut(p) {
                            pipe.assigned_routing_id = Some(rid.clone());
                        }
                    }
                }
                // Without IMMEDIATE, a connecting pipe takes messages before its connection
                // exists, as libzmq's does (unless its pattern waits for the handshake: a
                // ROUTER cannot address a peer before knowing its id).
                if !immediate && self.pattern.attaches_early() && !self.attach(p) {
                    // The pattern has no room for another peer now (PAIR already has one):
                    // try again later, as after any failed connect, instead of dialling for a
                    // pipe that is gone (which left this endpoint dead for good).
                    if let Some(Some(c)) = self.connects.get_mut(idx) {
                        c.pipe = None;
                    }
                    self.schedule_redial(idx, now);
                    return;
                }
                p
            }
        };
        self.actions.push_back(Action::Dial { pipe, endpoint });
    }

    fn endpoint_of(&self, id: PipeId) -> String {
        match self.pipes.get(id).map(|p| &p.origin) {
            Some(Origin::Connect(i)) => self
                .connects
                .get(*i)
                .and_then(|c| c.as_ref())
                .map(|c| c.text.clone())
                .unwrap_or_default(),
            Some(Origin::Accept(ep)) => ep.clone(),
            None => String::new(),
        }
    }

    // ----- connection events from the driver -------------------------------------------

    /// A connect attempt for `pipe` is in progress: CONNECT_DELAYED over tcp. libzmq reports
    /// it when a non-blocking connect does not complete at once, which over tcp it never does
    /// (even on loopback), while a unix-domain connect (ipc) completes or fails at once and a
    /// udp "connect" has nothing to wait for.
    pub fn handle_dialing(&mut self, pipe: PipeId) {
        let tcp = match self.pipes.get(pipe).map(|p| &p.origin) {
            Some(Origin::Connect(i)) => self
                .connects
                .get(*i)
                .and_then(|c| c.as_ref())
                .is_some_and(|c| matches!(c.endpoint, Endpoint::Tcp { .. })),
            _ => false,
        };
        if tcp {
            let ep = self.endpoint_of(pipe);
            self.event(EventKind::ConnectDelayed, 0, ep);
        }
    }

    /// `pipe`'s connection is established; its session starts with the returned config.
    /// `None`: the pipe is gone (disconnected meanwhile); drop the connection.
    pub fn handle_connected(&mut self, pipe: PipeId, _now: Instant) -> Option<SessionConfig> {
        let p = self.pipes.get_mut(pipe)?;
        p.state = PipeState::Handshaking;
        let ep = self.endpoint_of(pipe);
        self.event(EventKind::Connected, 0, ep);
        let compression = match self.pipes.get(pipe).map(|p| &p.origin) {
            Some(Origin::Connect(i)) => self
                .connects
                .get(*i)
                .and_then(|c| c.as_ref())
                .and_then(|c| c.endpoint.compression()),
            _ => None,
        };
        Some(self.session_config_on(compression))
    }

    /// udp: the driver opened a datagram socket for `pipe` (a RADIO's connect). The pipe is
    /// ready at once: no handshake. False when the pipe is gone (drop the socket).
    pub fn handle_datagram_connected(&mut self, pipe: PipeId, now: Instant) -> bool {
        if self.handle_connected(pipe, now).is_none() {
            return false;
        }
        self.datagram_ready(pipe, SocketType::Dish, now);
        true
    }

    /// udp: a DISH bound `listener` (its resolved text); returns the pipe the datagrams
    /// arriving there are handed to ([`Socket::handle_message`], in the form
    /// [`crate::wire::datagram::decode`] gives).
    pub fn handle_datagram_bound(&mut self, listener: &str, now: Instant) -> PipeId {
        let (pipe, _) = self.handle_accepted(listener, now);
        self.datagram_ready(pipe, SocketType::Radio, now);
        pipe
    }

    fn datagram_ready(&mut self, pipe: PipeId, peer_type: SocketType, now: Instant) {
        if let Some(p) = self.pipes.get_mut(pipe) {
            p.datagram = true;
        }
        self.handle_ready(pipe, PeerInfo::new(peer_type), now);
    }

    /// A connect attempt for `pipe` failed (`refused`: the peer actively refused it).
    pub fn handle_connect_failed(&mut self, pipe: PipeId, refused: bool, now: Instant) {
        let Some(Origin::Connect(idx)) = self.pipes.get(pipe).map(|p| p.origin.clone()) else {
            return;
        };
        // libzmq closes the descriptor of the failed attempt and says so (CLOSED, with the
        // endpoint connected to) before it schedules the next one.
        let ep = self.endpoint_of(pipe);
        self.event(EventKind::Closed, 0, ep);
        if refused && self.options.reconnect_stop.conn_refused {
            self.stop_connect(idx);
        } else {
            self.schedule_redial(idx, now);
        }
    }

    /// A connection was accepted on the bound endpoint `listener` (its resolved text). Returns
    /// its pipe and the config for its session.
    pub fn handle_accepted(&mut self, listener: &str, _now: Instant) -> (PipeId, SessionConfig) {
        let id = self
            .pipes
            .insert(Origin::Accept(listener.into()), PipeState::Handshaking);
        self.event(EventKind::Accepted, 0, listener.into());
        let compression = listener
            .parse::<Endpoint>()
            .ok()
            .and_then(|e| e.compression());
        (id, self.session_config_on(compression))
    }

    /// Accepting on the bound endpoint `listener` failed (`errno`: the OS error number).
    pub fn handle_accept_failed(&mut self, listener: &str, errno: i64) {
        self.event(EventKind::AcceptFailed, errno, listener.into());
    }

    /// Closing a bound endpoint failed (its ipc file could not be removed, say).
    pub fn handle_close_failed(&mut self, endpoint: &str, errno: i64) {
        self.event(EventKind::CloseFailed, errno, endpoint.into());
    }

    /// `pipe`'s handshake completed.
    pub fn handle_ready(&mut self, pipe: PipeId, peer: PeerInfo, _now: Instant) {
        // A STREAM's raw messages never carried the peer's properties; keep it so.
        let stamped = self.socket_type != SocketType::Stream && !self.is_inproc(pipe);
        let Some(p) = self.pipes.get_mut(pipe) else {
            return;
        };
        p.properties = (stamped && !p.datagram).then(|| peer.properties.clone());
        p.peer = Some(peer);
        p.state = PipeState::Active;
        let attached = p.attached;
        let origin = p.origin.clone();
        // udp has no handshake to report.
        if !p.datagram {
            self.pipe_event(EventKind::HandshakeSucceeded, 0, pipe, None);
        }
        if let Origin::Connect(idx) = origin {
            if let Some(Some(c)) = self.connects.get_mut(idx) {
                c.ivl = self.options.reconnect_ivl;
            }
        }
        if !attached && !self.attach(pipe) {
            return;
        }
        let (pattern, mut ctx) = self.split();
        pattern.handle_ready(&mut ctx, pipe);
        // HELLO_MSG goes first on every connection, before PROBE_ROUTER's message and
        // whatever waited for the peer (libzmq's hello_msg_session_t).
        if let Some(hello) = self.options.hello_msg.clone() {
            if let Some(p) = self.pipes.get_mut(pipe) {
                p.out.push_front(Message::from(Part::from(hello)));
            }
        }
        if self.notifies_connect() && !self.is_inproc(pipe) {
            self.notice(pipe, Bytes::new());
        }
        self.ctx().request_flush(pipe);
    }

    /// ROUTER_NOTIFY's CONNECT bit, or a STREAM with STREAM_NOTIFY.
    fn notifies_connect(&self) -> bool {
        self.options.router_notify.connect
            || (self.socket_type == SocketType::Stream && self.options.stream_notify)
    }

    /// ROUTER_NOTIFY's DISCONNECT bit, or a STREAM with STREAM_NOTIFY.
    fn notifies_disconnect(&self) -> bool {
        self.options.router_notify.disconnect
            || (self.socket_type == SocketType::Stream && self.options.stream_notify)
    }

    /// Whether `pipe` is an in-process link (ROUTER_NOTIFY leaves those out, as libzmq).
    fn is_inproc(&self, pipe: PipeId) -> bool {
        self.endpoint_of(pipe).starts_with("inproc://")
    }

    /// A message the socket itself puts in `pipe`'s incoming queue as if its peer had sent it
    /// (ROUTER_NOTIFY, DISCONNECT_MSG, HICCUP_MSG): past RCVHWM, as libzmq's, since it is
    /// one per connection change. Nothing once the socket is closed: nobody reads it.
    fn notice(&mut self, pipe: PipeId, body: Bytes) {
        if self.closed {
            return;
        }
        if let Some(p) = self.pipes.get_mut(pipe) {
            // Empty properties, so a socket that attaches the peer's as messages are read
            // (`FairQueue::pop`) leaves a notice without them, as libzmq's come.
            let mut notice = Message::from(Part::from(body));
            notice.set_metadata(Some(std::sync::Arc::new(
                crate::wire::metadata::Metadata::new(),
            )));
            p.inbound.push_back(notice);
            self.fq.notify(&mut self.pipes, pipe);
        }
    }

    /// A whole message arrived on `pipe`. `Err` gives it back when the pipe's incoming queue is
    /// at RCVHWM: stop reading that connection until [`Action::ResumeRead`], then offer the
    /// message again.
    #[inline]
    pub fn handle_message(&mut self, pipe: PipeId, msg: Message) -> Result<(), Message> {
        // A message with the delimiter flag comes only from a REQ or REP session, or from a
        // REQ or REP in process that saw this socket is one too (`Pipe::peer_flags_delimiter`).
        debug_assert!(!msg.delimited() || self.socket_type.flags_delimiter());
        let (pattern, mut ctx) = self.split();
        pattern.handle_message(&mut ctx, pipe, msg)
    }

    /// How many more messages `pipe`'s incoming queue takes now (0 when the pipe is not
    /// active). In-process transports move exactly this many, so SNDHWM + RCVHWM is exact.
    /// When there is no room, the next receive that makes some emits
    /// [`Action::ResumeRead`], as if a message had been refused.
    pub fn inbound_room(&mut self, pipe: PipeId) -> usize {
        let hwm = self.options.rcvhwm;
        let unlimited = hwm == 0 || self.options.conflate;
        match self.pipes.get_mut(pipe) {
            Some(p) if p.state == PipeState::Active => {
                if unlimited {
                    return usize::MAX;
                }
                let room = hwm.saturating_sub(p.inbound.len());
                if room == 0 {
                    p.read_paused = true;
                }
                room
            }
            _ => 0,
        }
    }

    /// The peer on `pipe` subscribed to `topic`.
    pub fn handle_subscribe(&mut self, pipe: PipeId, topic: Bytes) {
        self.handle_subscription(pipe, &topic, true);
    }

    /// XPUB: whether a (un)subscription from `pipe` can be taken now. False when RCVHWM
    /// notifications already wait for the application: the connection then keeps the event,
    /// stops reading, and is resumed ([`Action::ResumeRead`]) once the application has read
    /// half of them, so a flood of distinct topics costs the peer backpressure, not us memory.
    pub fn subscription_room(&mut self, pipe: PipeId) -> bool {
        let (pattern, mut ctx) = self.split();
        pattern.subscription_room(&mut ctx, pipe)
    }

    /// RADIO: the DISH on `pipe` joined `group`.
    pub fn handle_join(&mut self, pipe: PipeId, group: Bytes) {
        self.handle_subscription(pipe, &group, true);
    }

    /// RADIO: the DISH on `pipe` left `group`.
    pub fn handle_leave(&mut self, pipe: PipeId, group: Bytes) {
        self.handle_subscription(pipe, &group, false);
    }

    /// DISH: joins a group (libzmq's `zmq_join`): messages a RADIO sends to it arrive.
    pub fn join(&mut self, group: &[u8]) -> Result<(), SocketError> {
        self.change_group(group, true)
    }

    /// DISH: leaves a group (libzmq's `zmq_leave`).
    pub fn leave(&mut self, group: &[u8]) -> Result<(), SocketError> {
        self.change_group(group, false)
    }

    fn change_group(&mut self, group: &[u8], on: bool) -> Result<(), SocketError> {
        let socket_type = self.socket_type;
        let (pattern, mut ctx) = self.split();
        match pattern.join(&mut ctx, group, on) {
            None => Err(SocketError::WrongType {
                operation: if on { "join" } else { "leave" },
                socket_type,
            }),
            Some(Ok(())) => Ok(()),
            Some(Err(crate::pattern::GroupError::TooLong)) => {
                Err(SocketError::Group("at most 255 bytes"))
            }
            Some(Err(crate::pattern::GroupError::NotChanged)) => Err(SocketError::Group(if on {
                "already joined"
            } else {
                "not joined"
            })),
        }
    }

    /// The peer on `pipe` cancelled a subscription.
    pub fn handle_cancel(&mut self, pipe: PipeId, topic: Bytes) {
        self.handle_subscription(pipe, &topic, false);
    }

    /// PUB/XPUB/RADIO: records a peer's (un)subscription (XPUB passes it up to the
    /// application), and counts what the peer holds for MAX_SUBSCRIPTIONS.
    fn handle_subscription(&mut self, pipe: PipeId, topic: &[u8], on: bool) {
        let (pattern, mut ctx) = self.split();
        if pattern.handle_subscription(&mut ctx, pipe, topic, on) {
            if let Some(p) = self.pipes.get_mut(pipe) {
                if on {
                    p.subscriptions += 1;
                } else {
                    p.subscriptions = p.subscriptions.saturating_sub(1);
                }
            }
        }
    }

    /// MAX_SUBSCRIPTIONS: an error once the peer on `pipe` holds more topics (or groups) than
    /// allowed. [`crate::connection::Connection`] asks after each subscription and ends the connection
    /// with it; the peer's subscriptions go with the connection.
    pub fn subscription_limit(&self, pipe: PipeId) -> Result<(), LimitError> {
        let max = self.options.max_subscriptions;
        match self.pipes.get(pipe) {
            Some(p) if max != 0 && p.subscriptions > max => {
                Err(LimitError::TooManySubscriptions { max })
            }
            _ => Ok(()),
        }
    }

    /// Subscribes to a topic prefix: SUB's SUBSCRIBE option, or, with XPUB_MANUAL, subscribes
    /// the peer whose subscription was last received.
    pub fn subscribe(&mut self, topic: &[u8]) -> Result<(), SocketError> {
        self.change_subscription(true, topic)
    }

    /// Unsubscribes (UNSUBSCRIBE). Duplicated subscriptions need as many unsubscriptions.
    pub fn unsubscribe(&mut self, topic: &[u8]) -> Result<(), SocketError> {
        self.change_subscription(false, topic)
    }

    /// libzmq's TOPICS_COUNT: the distinct topics a SUB or XSUB is subscribed to, or that a
    /// PUB's or XPUB's peers are; `None` for the other types (libzmq: EINVAL).
    pub fn topics_count(&self) -> Option<usize> {
        self.pattern.topics_count()
    }

    fn change_subscription(&mut self, on: bool, topic: &[u8]) -> Result<(), SocketError> {
        let name = if on {
            crate::options::OptionName::Subscribe
        } else {
            crate::options::OptionName::Unsubscribe
        };
        if !name.applies_to(self.socket_type) {
            return Err(OptionError::NotApplicable {
                option: name,
                socket_type: self.socket_type,
            }
            .into());
        }
        let (pattern, mut ctx) = self.split();
        pattern.subscribe(&mut ctx, topic, on);
        Ok(())
    }

    /// `pipe`'s connection ended.
    pub fn handle_closed(&mut self, pipe: PipeId, reason: &CloseReason, now: Instant) {
        let Some(p) = self.pipes.get(pipe) else {
            return;
        };
        let state = p.state;
        // libzmq reports a security failure as HANDSHAKE_FAILED_* even once traffic has
        // started (a CURVE MESSAGE that does not open, a replayed nonce).
        let security = matches!(
            reason,
            CloseReason::Session(SessionError::Protocol(ProtocolError::Curve(_)))
        );
        if state == PipeState::Handshaking || security {
            let client = self.options.get_mechanism().as_server() == Some(false);
            if let Some((kind, value)) = handshake_failure(reason, client) {
                self.pipe_event(kind, value, pipe, Some(reason));
            }
        }
        if matches!(state, PipeState::Handshaking | PipeState::Active) {
            self.pipe_event(EventKind::Disconnected, 0, pipe, Some(reason));
        }
        // A ROUTER hears about a peer that left after what that peer sent before.
        if state == PipeState::Active {
            if self.notifies_disconnect() && !self.is_inproc(pipe) {
                self.notice(pipe, Bytes::new());
            }
            if let Some(msg) = self.options.disconnect_msg.clone() {
                self.notice(pipe, msg);
            }
        }
        let origin = self.pipes.get(pipe).map(|p| p.origin.clone());
        match origin {
            Some(Origin::Accept(_)) => self.drop_pipe(pipe, false),
            Some(Origin::Connect(idx)) => {
                let stop = &self.options.reconnect_stop;
                let stop = (state == PipeState::Active && stop.after_disconnect)
                    || (state == PipeState::Handshaking && stop.handshake_failed);
                let keep = !self.options.immediate && self.pattern.attaches_early();
                if keep && !stop {
                    if let Some(p) = self.pipes.get_mut(pipe) {
                        p.state = PipeState::Disconnected;
                        p.flush_requested = false;
                        p.read_paused = false;
                    }
                    // HICCUP_MSG: the pipe outlives its connection and will be redialled
                    // (libzmq's session_base_t::reconnect, after any connection that
                    // reached the handshake).
                    if let Some(msg) = self.options.hiccup_msg.clone() {
                        if matches!(state, PipeState::Handshaking | PipeState::Active) {
                            self.notice(pipe, msg);
                        }
                    }
                } else {
                    self.drop_pipe(pipe, false);
                    if let Some(Some(c)) = self.connects.get_mut(idx) {
                        c.pipe = None;
                    }
                }
                if stop {
                    self.stop_connect(idx);
                } else {
                    self.schedule_redial(idx, now);
                }
            }
            None => {}
        }
    }

    fn schedule_redial(&mut self, idx: usize, now: Instant) {
        let max = self.options.reconnect_ivl_max;
        let Some(Some(c)) = self.connects.get_mut(idx) else {
            return;
        };
        let Some(ivl) = c.ivl else {
            // RECONNECT_IVL -1: never reconnect.
            let pipe = c.pipe.take();
            if let Some(p) = pipe {
                self.drop_pipe(p, false);
            }
            return;
        };
        let base = self.options.reconnect_ivl.unwrap_or(ivl);
        // libzmq: the delay is the current interval plus a random jitter below the base
        // interval; the interval doubles up to RECONNECT_IVL_MAX when that is above the base.
        let jitter_ms = self.rng.below(base.as_millis() as u64);
        let delay = ivl + Duration::from_millis(jitter_ms);
        if max > base {
            c.ivl = Some((ivl * 2).min(max));
        }
        c.retry_at = Some(now + delay);
        let text = c.text.clone();
        self.event(EventKind::ConnectRetried, delay.as_millis() as i64, text);
    }

    fn stop_connect(&mut self, idx: usize) {
        if let Some(c) = self.connects.get_mut(idx).and_then(Option::take) {
            if let Some(p) = c.pipe {
                self.drop_pipe(p, false);
            }
        }
    }

    /// Time has come: redial what is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        for idx in 0..self.connects.len() {
            let due =
                matches!(&self.connects[idx], Some(c) if c.retry_at.is_some_and(|t| t <= now));
            if due {
                if let Some(Some(c)) = self.connects.get_mut(idx) {
                    c.retry_at = None;
                }
                self.dial(idx, now);
            }
        }
    }

    /// When to call [`Socket::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.connects
            .iter()
            .flatten()
            .filter_map(|c| c.retry_at)
            .min()
    }

    // ----- pipes and routing -----------------------------------------------------------

    /// The pattern, and the shared pieces it may touch (disjoint fields, so both at once).
    #[inline]
    fn split(&mut self) -> (&mut Pattern, Ctx<'_>) {
        (
            &mut self.pattern,
            Ctx {
                pipes: &mut self.pipes,
                fq: &mut self.fq,
                options: &self.options,
                actions: &mut self.actions,
            },
        )
    }

    #[inline]
    fn ctx(&mut self) -> Ctx<'_> {
        self.split().1
    }

    /// Puts a pipe into the pattern's routing. False when the pipe was refused and closed.
    fn attach(&mut self, id: PipeId) -> bool {
        let (pattern, mut ctx) = self.split();
        match pattern.attach(&mut ctx, id) {
            Attach::Attached => {}
            Attach::Refused => {
                self.drop_pipe(id, true);
                return false;
            }
            Attach::Replaces(old) => self.drop_pipe(old, true),
        }
        let probe = self.options.probe_router;
        if let Some(p) = self.pipes.get_mut(id) {
            p.attached = true;
            if probe {
                p.out.push_front(Message::from(Part::empty()));
            }
        }
        true
    }

    /// Takes a pipe out of routing. With `close`, the driver is told to drop its connection.
    /// Received messages stay readable (the pipe drains) unless the pipe is closed on purpose.
    fn drop_pipe(&mut self, id: PipeId, close: bool) {
        let Some(p) = self.pipes.get_mut(id) else {
            return;
        };
        let has_connection = matches!(p.state, PipeState::Handshaking | PipeState::Active);
        p.attached = false;
        p.out.clear();
        p.commands.clear();
        p.subscriptions = 0;
        let keep_inbound = !close && !p.inbound.is_empty();
        // A pipe kept for its unread messages keeps its routing id too: ROUTER still prefixes
        // them with it (taking it gave them an empty id).
        let rid = if keep_inbound {
            p.routing_id.clone()
        } else {
            p.routing_id.take()
        };
        if keep_inbound {
            p.state = PipeState::Draining;
        } else {
            self.pipes.remove(id);
            self.fq.remove(id);
        }
        let (pattern, mut ctx) = self.split();
        pattern.detach(&mut ctx, id, rid.as_ref());
        if close && has_connection {
            self.actions.push_back(Action::Close { pipe: id });
        }
    }

    // ----- user operations -------------------------------------------------------------

    /// Sends a message, or says why it cannot go now. Never waits: the driver turns
    /// [`SendError::WouldBlock`] into waiting up to SNDTIMEO.
    pub fn send(&mut self, msg: Message) -> Result<(), SendError> {
        if self.closed {
            return Err(SendError::Closed(msg));
        }
        if msg.is_empty() {
            return Err(SendError::InvalidMessage(msg, MessageError::Empty));
        }
        let (pattern, mut ctx) = self.split();
        let r = pattern.send(&mut ctx, msg);
        #[cfg(feature = "tracing")]
        if matches!(r, Err(SendError::WouldBlock(_))) {
            tracing::debug!(
                target: "omq::hwm",
                socket = %self.socket_type,
                "send would block: no peer has room (SNDHWM reached, or no peer yet)"
            );
        }
        r
    }

    /// Receives a message, or says why there is none now. Never waits.
    #[inline]
    pub fn recv(&mut self) -> Result<Message, RecvError> {
        if self.closed {
            return Err(RecvError::Closed);
        }
        let (pattern, mut ctx) = self.split();
        pattern.recv(&mut ctx)
    }

    /// Whether [`Socket::send`] would accept a message now (for REQ and REP: whether the
    /// state allows a send and, for REQ, a peer has room).
    pub fn can_send(&self) -> bool {
        self.pattern.can_send(&self.pipes, &self.options)
    }

    /// At least how many messages [`Socket::send`] would take now, one after another, before
    /// it would block, counted no further than `enough` needs: for a PUSH, DEALER, PAIR,
    /// SCATTER, CLIENT or CHANNEL the free room of the peers it balances over, in turn, until
    /// the sum reaches `enough` (all of them with `usize::MAX`; unbounded with SNDHWM 0), so
    /// asking for a batch costs one or a few peers, not every peer; for the other types one
    /// when [`Socket::can_send`] says so. A lower bound for a driver that takes messages ahead
    /// of the socket (a buffering sink), so what it holds never exceeds what SNDHWM allows;
    /// sends can still fail for other reasons. 0 once closed.
    pub fn send_room(&self, enough: usize) -> usize {
        if self.closed {
            return 0;
        }
        self.pattern.send_room(&self.pipes, &self.options, enough)
    }

    /// Whether [`Socket::recv`] would return a message now (or a state error). Discards what
    /// REQ and REP would discard, so the answer is exact.
    pub fn can_recv(&mut self) -> bool {
        let (pattern, mut ctx) = self.split();
        pattern.can_recv(&mut ctx)
    }

    /// The next outbound item for `pipe`'s connection. `None` means the pipe has nothing more
    /// (the next message will come with a new [`Action::Flush`]).
    pub fn poll_transmit(&mut self, pipe: PipeId) -> Option<Outbound> {
        let p = self.pipes.get_mut(pipe)?;
        if p.state != PipeState::Active {
            return None;
        }
        if let Some(c) = p.commands.pop_front() {
            return Some(Outbound::Command(c));
        }
        match p.out.pop_front() {
            Some(m) => Some(Outbound::Message(m)),
            None => {
                p.flush_requested = false;
                None
            }
        }
    }

    /// [`Socket::poll_transmit`] in bulk, for a driver that moves messages by value (the
    /// in-process transport): every queued command onto `commands`, then up to `max`
    /// messages onto the end of `messages`, in order. When `messages` is empty and everything
    /// fits, the two queues are swapped, so the cost does not grow with the count. Returns
    /// whether the pipe was found empty (as `poll_transmit` returning `None`: the next
    /// message comes with a new [`Action::Flush`]); an inactive pipe gives nothing.
    pub fn transmit_into(
        &mut self,
        pipe: PipeId,
        commands: &mut Vec<Command>,
        messages: &mut VecDeque<Message>,
        max: usize,
    ) -> bool {
        let Some(p) = self.pipes.get_mut(pipe) else {
            return true;
        };
        if p.state != PipeState::Active {
            return true;
        }
        commands.extend(p.commands.drain(..));
        if messages.is_empty() && p.out.len() <= max {
            std::mem::swap(&mut p.out, messages);
        } else {
            let n = max.min(p.out.len());
            messages.extend(p.out.drain(..n));
        }
        let drained = p.out.is_empty();
        if drained {
            p.flush_requested = false;
        }
        drained
    }

    /// The next action for the driver.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next monitor event.
    pub fn poll_monitor(&mut self) -> Option<MonitorEvent> {
        let q = self.monitor.as_mut()?;
        let e = q.pop_front();
        if matches!(
            &e,
            Some(MonitorEvent {
                kind: EventKind::MonitorStopped,
                ..
            })
        ) {
            self.monitor = None;
        }
        e
    }

    /// Closes the socket: no more operations; what is queued may still be flushed by the
    /// driver within LINGER (see [`Socket::has_pending_output`]).
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        // Listeners stop at once (the driver closes them as close begins); libzmq reports
        // each as CLOSED before monitoring stops.
        for bound in std::mem::take(&mut self.binds) {
            if !is_inproc(&bound.resolved) {
                self.event(EventKind::Closed, 0, bound.resolved);
            }
        }
        // Connections keep being retried: during LINGER, what is queued for a peer that is
        // not up yet still goes out once it is (as libzmq does). The driver stops everything
        // when the linger is over.
        if self.monitor.is_some() {
            self.event(EventKind::MonitorStopped, 0, String::new());
        }
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether any pipe still has messages to send, connected or not yet (what LINGER waits
    /// for).
    pub fn has_pending_output(&self) -> bool {
        self.pipes.iter().any(|p| match p.state {
            PipeState::Active => !(p.out.is_empty() && p.commands.is_empty()),
            // Messages waiting for a connection that is not up yet count too.
            PipeState::Disconnected | PipeState::Handshaking => !p.out.is_empty(),
            PipeState::Draining => false,
        })
    }

    /// The pipes and their states, for tests and diagnostics.
    pub fn pipes(&self) -> &Pipes {
        &self.pipes
    }
}

/// Whether a bound endpoint is an inproc name (no listener, so no listener events).
fn is_inproc(resolved: &str) -> bool {
    resolved.starts_with("inproc://")
}

/// The monitor event and value for a connection that ended during its handshake; None when
/// libzmq reports none (only DISCONNECTED follows).
///
/// libzmq checks the peer's Socket-Type while it parses the peer's metadata and reports a
/// mismatch (HANDSHAKE_FAILED_PROTOCOL, ZMTP_INVALID_METADATA) only where a PLAIN or CURVE
/// `client` parses the server's READY; under NULL, and on a PLAIN or CURVE server, the
/// connection just ends. The typed cause still rides on DISCONNECTED.
fn handshake_failure(reason: &CloseReason, client: bool) -> Option<(EventKind, i64)> {
    match reason {
        CloseReason::Session(
            SessionError::Incompatible { .. }
            | SessionError::Protocol(ProtocolError::UnknownSocketType(_)),
        ) if !client => None,
        CloseReason::Session(e) => Some(e.handshake_failure()),
        _ => Some((EventKind::HandshakeFailedNoDetail, 0)),
    }
}
