//! One peer connection, from its first byte to its end, as a sans-io state machine.
//!
//! Phases: greeting (sent in three stages) → mechanism handshake → ready (traffic). The session
//! never reads a clock and never touches a socket. The driver:
//! 1. feeds received bytes with [`Session::handle_input`] and timer expiries with
//!    [`Session::handle_timeout`], passing the current time;
//! 2. after every input, drains every output: [`Session::poll_transmit`] (bytes to write, in
//!    order), [`Session::poll_event`] (handshake done, messages, subscriptions) and
//!    [`Session::poll_timeout`] (when to call back next);
//! 3. on an error, writes what is still queued for transmission (an ERROR command, perhaps)
//!    and closes the connection. The error is sticky: every later call returns it again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use crate::compress::{Codec, CompressionConfig, Decoded};
use crate::error::{LimitError, ProtocolError, SessionError, Timeout, UsageError};
use crate::mechanism::{
    AuthReply, AuthRequest, Entropy, LocalProperties, Mechanism, MechanismConfig, NullMechanism,
};
use crate::message::{Message, Part};
use crate::socket_type::SocketType;
use crate::wire::command::{Command, MAX_PING_CONTEXT};
use crate::wire::frame::{Frame, FrameDecoder};
use crate::wire::greeting::{Greeting, GREETING_LEN, SIGNATURE_LEN};
use crate::wire::metadata::{self, Metadata};
use crate::wire::tx::TxQueue;

/// Read room once traffic flows: libzmq reads 8 KiB at a time; a larger buffer costs nothing
/// extra and batches better under load.
pub const READ_BATCH: usize = 64 * 1024;

/// Read room while the greeting and handshake are in progress: enough for any handshake
/// command of an ordinary peer in one read, small enough that stalled handshakes cost little.
pub const HANDSHAKE_READ: usize = 512;

/// Most parts of one received message by default: 2 MiB of part records at most for a
/// message of empty parts (the 2^20 allowed before cost 40 MB for 2 MB on the wire).
pub const DEFAULT_MAX_PARTS: usize = 1 << 16;

/// The longest Identity a peer may announce (spec 23: `identity = 0*255OCTET`).
pub const MAX_IDENTITY: usize = 255;

/// The longest heartbeat TTL a session announces: the HEARTBEAT_TTL option's limit
/// ([`crate::options::MAX_HEARTBEAT_TTL_MS`], as libzmq's), which the wire's 16-bit count of
/// deciseconds carries as 65535 (milliseconds are truncated to deciseconds, as libzmq does).
pub const MAX_HEARTBEAT_TTL: Duration = Duration::from_millis(crate::options::MAX_HEARTBEAT_TTL_MS);

/// How a session behaves. Built by the socket from its options.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Our socket type.
    pub socket_type: SocketType,
    /// Our routing id (ROUTING_ID), announced as Identity by REQ, DEALER and ROUTER.
    pub routing_id: Bytes,
    /// Application properties sent in READY (names should start with `X-`).
    pub metadata: Metadata,
    /// Security mechanism.
    pub mechanism: MechanismConfig,
    /// Our as-server role in the greeting. PLAIN and CURVE take it from their configuration
    /// (which says client or server); it matters only to NULL.
    pub as_server: bool,
    /// Fresh randomness for this connection, which CURVE needs (short-term keys, cookie,
    /// nonces). The driver fills it from the OS for every connection; tests pass fixed seeds.
    /// [`Session::new`] takes it out of the configuration it keeps, so a config cloned from a
    /// running session cannot hand the same value to a second connection.
    pub entropy: Option<Entropy>,
    /// An authenticator is attached (libzmq: a ZAP handler runs): server-side PLAIN and CURVE,
    /// and NULL when [`SessionConfig::zap_domain`] is set, ask the owner about each peer with
    /// [`SessionEvent::AuthRequest`]. Without one, every peer is let in, as libzmq does.
    pub authenticate: bool,
    /// The ZAP domain (ZAP_DOMAIN), passed on in each [`AuthRequest`]; empty when unset.
    pub zap_domain: Bytes,
    /// The peer's address as the driver knows it; shown to the authenticator and attached to
    /// received messages as their `Peer-Address` property, as libzmq does.
    pub peer_address: Option<String>,
    /// Largest frame accepted from the peer (MAXMSGSIZE; libzmq applies it per frame).
    pub max_msg_size: Option<u64>,
    /// Most parts accepted in one message, so endless empty MORE frames cannot grow memory
    /// (each part costs 32 bytes here for 2 bytes on the wire). Default [`DEFAULT_MAX_PARTS`].
    pub max_parts: usize,
    /// Most events one [`Session::handle_input`] call produces before it stops decoding and
    /// leaves the rest of the buffer for the next call (None: decode everything given). A
    /// socket's connections set it, so a read full of tiny frames becomes a bounded batch of
    /// messages rather than tens of thousands held at once while the application is slow
    /// (a 2-byte frame costs about a hundred bytes as a message). See
    /// [`Session::input_pending`].
    pub max_events: Option<usize>,
    /// Time allowed from start to the end of the handshake (HANDSHAKE_IVL; None: unlimited).
    pub handshake_ivl: Option<Duration>,
    /// Interval between our PINGs (HEARTBEAT_IVL; None: no heartbeats).
    pub heartbeat_ivl: Option<Duration>,
    /// The compressed transport this connection runs (`lz4+tcp://`, `zstd+tcp://`), with the
    /// socket's compression options; None for plain tcp, ipc and inproc. Message parts after
    /// the handshake travel in its envelope, and MAXMSGSIZE then bounds each message's
    /// decompressed size, summed over its parts.
    pub compression: Option<CompressionConfig>,
    /// TTL announced in our PINGs (HEARTBEAT_TTL), cut to [`MAX_HEARTBEAT_TTL`].
    pub heartbeat_ttl: Option<Duration>,
    /// Time to wait for any traffic after a PING (HEARTBEAT_TIMEOUT; None: the interval).
    pub heartbeat_timeout: Option<Duration>,
}

impl SessionConfig {
    /// libzmq's defaults for a socket of the given type: NULL security, no size limit,
    /// a 30-second handshake limit, no heartbeats.
    pub fn new(socket_type: SocketType) -> Self {
        SessionConfig {
            socket_type,
            routing_id: Bytes::new(),
            metadata: Metadata::new(),
            mechanism: MechanismConfig::Null,
            as_server: false,
            entropy: None,
            authenticate: false,
            zap_domain: Bytes::new(),
            peer_address: None,
            max_msg_size: None,
            max_parts: DEFAULT_MAX_PARTS,
            max_events: None,
            handshake_ivl: Some(Duration::from_secs(30)),
            heartbeat_ivl: None,
            heartbeat_ttl: None,
            heartbeat_timeout: None,
            compression: None,
        }
    }
}

/// What is known about the peer once the handshake completes.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    /// The peer's socket type.
    pub socket_type: SocketType,
    /// The peer's Identity property, when it sent one.
    pub routing_id: Option<Bytes>,
    /// All of the peer's properties (plus, later, what authentication adds).
    pub properties: Arc<Metadata>,
    /// The peer's ZMTP minor version (0: 3.0, 1: 3.1).
    pub zmtp_minor: u8,
}

impl PeerInfo {
    /// A ZMTP 3.1 peer of type `socket_type` that sent no Identity and no other property: what
    /// a datagram pipe knows of its peer, and what an embedder (or a test) that completes a
    /// handshake of its own hands to [`Socket::handle_ready`](crate::Socket::handle_ready).
    pub fn new(socket_type: SocketType) -> Self {
        Self {
            socket_type,
            routing_id: None,
            properties: Arc::default(),
            zmtp_minor: 1,
        }
    }

    /// The same peer, having sent `routing_id` as its Identity.
    pub fn with_routing_id(mut self, routing_id: Bytes) -> Self {
        self.routing_id = Some(routing_id);
        self
    }
}

/// Something the session has to tell its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The handshake completed; messages may flow.
    HandshakeSucceeded,
    /// A whole message arrived.
    Message(Message),
    /// The peer subscribed to a topic prefix (SUBSCRIBE command, or a ZMTP 3.0 `\x01topic`
    /// message arriving at a PUB or XPUB).
    Subscribe(Bytes),
    /// The peer cancelled a subscription.
    Cancel(Bytes),
    /// The peer joined a group (DISH → RADIO).
    Join(Bytes),
    /// The peer left a group.
    Leave(Bytes),
    /// The handshake waits for the owner to let the peer in or keep it out: answer with
    /// [`Session::handle_auth_reply`] (see [`crate::mechanism::AuthRequest`]). Boxed: it comes
    /// once per connection and is larger than a message, which every other event carries.
    AuthRequest(Box<AuthRequest>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Greeting,
    Handshake,
    Ready,
    Failed,
}

#[derive(Debug, Default, Clone, Copy)]
struct Timers {
    handshake: Option<Instant>,
    next_ping: Option<Instant>,
    heartbeat_timeout: Option<Instant>,
    peer_ttl: Option<Instant>,
}

impl Timers {
    fn earliest(&self) -> Option<Instant> {
        [
            self.handshake,
            self.next_ping,
            self.heartbeat_timeout,
            self.peer_ttl,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// One ZMTP connection.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    local: LocalProperties,
    phase: Phase,
    our_greeting: Greeting,
    peer_greeting_buf: [u8; GREETING_LEN],
    peer_greeting_len: usize,
    /// How much of our greeting has been queued.
    greeting_sent: usize,
    peer_greeting: Option<Greeting>,
    mechanism: Mechanism,
    /// The compressed transport's part transform, between the session and the mechanism.
    codec: Option<Codec>,
    decoder: FrameDecoder,
    tx: TxQueue,
    events: VecDeque<SessionEvent>,
    partial: Message,
    peer: Option<PeerInfo>,
    error: Option<SessionError>,
    timers: Timers,
    /// Where our last PONG ends in the transmit queue (see [`TxQueue::end_mark`]).
    pong_mark: u64,
    /// PINGs queued so far (HEARTBEAT_IVL), for diagnostics and tests.
    pings_sent: u64,
    /// Each message gets the peer's properties here (false when a socket attaches them as the
    /// message is read: see [`Session::leave_properties_to_reader`]).
    stamps_properties: bool,
}

impl Session {
    /// A session starting at `now`. Our greeting's signature is queued at once. A
    /// configuration that cannot work (CURVE without entropy) gives a session that has already
    /// failed with [`SessionError::Config`] and sends nothing.
    pub fn new(mut config: SessionConfig, now: Instant) -> Self {
        let entropy = config.entropy.take();
        config.as_server = config.mechanism.as_server().unwrap_or(config.as_server);
        let our_greeting = Greeting::ours(config.mechanism.name(), config.as_server);
        let (mechanism, mut error) = match Mechanism::new(&config, entropy) {
            Ok(m) => (m, None),
            Err(e) => (
                Mechanism::Null(NullMechanism::new()),
                Some(SessionError::from(e)),
            ),
        };
        let codec = match config.compression.as_ref().map(Codec::new).transpose() {
            Ok(c) => c,
            Err(e) => {
                error.get_or_insert(SessionError::from(e));
                None
            }
        };
        // A compressed part carries its envelope on top of the payload MAXMSGSIZE bounds, and
        // a dictionary is up to 8 KiB whatever the limit: the frame limit makes room for both,
        // and the codec applies MAXMSGSIZE to the decompressed message.
        let frame_limit = if codec.is_some() {
            Codec::wire_limit(config.max_msg_size)
        } else {
            config.max_msg_size
        };
        let raw = config.socket_type == SocketType::Stream;
        let mut tx = TxQueue::with_staging(crate::wire::tx::HANDSHAKE_STAGING);
        let mut timers = Timers::default();
        if error.is_none() && !raw {
            tx.push_raw(&our_greeting.encode()[..SIGNATURE_LEN]);
            timers.handshake = config.handshake_ivl.map(|d| now + d);
        }
        let mut session = Session {
            local: LocalProperties {
                socket_type: config.socket_type,
                routing_id: config.routing_id.clone(),
                application: config.metadata.clone(),
            },
            mechanism,
            codec,
            decoder: FrameDecoder::new(frame_limit),
            config,
            phase: if error.is_some() {
                Phase::Failed
            } else {
                Phase::Greeting
            },
            our_greeting,
            peer_greeting_buf: [0; GREETING_LEN],
            peer_greeting_len: 0,
            greeting_sent: SIGNATURE_LEN,
            peer_greeting: None,
            tx,
            events: VecDeque::new(),
            partial: Message::new(),
            peer: None,
            error,
            timers,
            pong_mark: 0,
            pings_sent: 0,
            stamps_properties: true,
        };
        if raw && session.error.is_none() {
            session.start_raw();
        }
        session
    }

    /// STREAM: no greeting, no handshake, no heartbeats. The connection is ready at once;
    /// bytes in become one-part messages as they arrive, parts out go as their bytes.
    fn start_raw(&mut self) {
        let mut props = Metadata::new();
        if let Some(addr) = &self.config.peer_address {
            props.insert(
                metadata::PEER_ADDRESS,
                Bytes::copy_from_slice(addr.as_bytes()),
            );
        }
        self.peer = Some(PeerInfo {
            socket_type: SocketType::Stream,
            routing_id: None,
            properties: Arc::new(props),
            zmtp_minor: 0,
        });
        self.phase = Phase::Ready;
        self.tx.set_staging(crate::wire::tx::STAGING);
        self.events.push_back(SessionEvent::HandshakeSucceeded);
    }

    /// Messages leave this session without the peer's properties: its owner attaches them when
    /// the message is read, as [`crate::Socket`] does for a [`crate::connection::Connection`]'s messages
    /// (see `FairQueue::pop`). Taking a reference to the properties is an atomic increment,
    /// and dropping the message a decrement: made here, on the thread that decodes, and there,
    /// on the thread that reads, the two would pass the reference count's cache line between
    /// cores with every message.
    pub fn leave_properties_to_reader(&mut self) {
        self.stamps_properties = false;
    }

    /// Whether this is a STREAM's raw connection.
    fn is_raw(&self) -> bool {
        self.config.socket_type == SocketType::Stream
    }

    /// Feeds received bytes. Complete frames are taken off the front of `buf`; an incomplete
    /// one stays there for the next call (append to the same buffer). On error the session is
    /// over; send what [`Session::poll_transmit`] still gives, then close.
    pub fn handle_input(&mut self, buf: &mut BytesMut, now: Instant) -> Result<(), SessionError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match self.process_input(buf, now) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn process_input(&mut self, buf: &mut BytesMut, now: Instant) -> Result<(), SessionError> {
        if self.is_raw() {
            // What arrived is the message: never more than one read's worth, never sized by
            // a claim.
            if !buf.is_empty() {
                let data = buf.split().freeze();
                self.events
                    .push_back(SessionEvent::Message(Message::from(Part::from(data))));
            }
            return Ok(());
        }
        if self.phase == Phase::Greeting {
            self.read_greeting(buf)?;
            if self.phase == Phase::Greeting {
                return Ok(());
            }
        }
        let max_events = self.config.max_events.unwrap_or(usize::MAX);
        while self.events.len() < max_events {
            if self.phase == Phase::Ready && self.mechanism.opens_in_place() {
                // CURVE takes each frame as the read buffer's own bytes: a large one is opened
                // where it lies, a short one copied once, to where its plaintext will live.
                let Some((flags, body)) = self.decoder.decode_owned(buf)? else {
                    break;
                };
                let frame = self.mechanism.decode_owned_frame(flags, body)?;
                self.handle_traffic(frame, now)?;
            } else {
                let Some(frame) = self.decoder.decode(buf)? else {
                    break;
                };
                self.handle_frame(frame, now)?;
            }
            if self.phase == Phase::Failed {
                break;
            }
        }
        Ok(())
    }

    /// True when `buf` still holds a whole frame that [`Session::handle_input`] left for a
    /// later call (it stopped at [`SessionConfig::max_events`]): drain the events, then call
    /// it again before waiting for more bytes.
    pub fn input_pending(&self, buf: &[u8]) -> bool {
        matches!(self.phase, Phase::Handshake | Phase::Ready)
            && !buf.is_empty()
            && self.decoder.bytes_wanted(buf) == 0
    }

    fn read_greeting(&mut self, buf: &mut BytesMut) -> Result<(), SessionError> {
        let have = self.peer_greeting_len;
        let take = (GREETING_LEN - have).min(buf.len());
        self.peer_greeting_buf[have..have + take].copy_from_slice(&buf[..take]);
        let _ = buf.split_to(take);
        self.peer_greeting_len += take;
        let got = &self.peer_greeting_buf[..self.peer_greeting_len];
        Greeting::check_prefix(got)?;
        // Stages two and three of our greeting, as libzmq: our major version once the peer's
        // signature is in, the rest once its major version is (a peer waiting for our major
        // before sending its own would otherwise never get it).
        let ours = self.our_greeting.encode();
        if self.greeting_sent == SIGNATURE_LEN && got.len() >= SIGNATURE_LEN {
            self.tx.push_raw(&ours[SIGNATURE_LEN..SIGNATURE_LEN + 1]);
            self.greeting_sent += 1;
        }
        if self.greeting_sent == SIGNATURE_LEN + 1 && got.len() > SIGNATURE_LEN {
            self.tx.push_raw(&ours[SIGNATURE_LEN + 1..]);
            self.greeting_sent = GREETING_LEN;
        }
        if self.peer_greeting_len < GREETING_LEN {
            return Ok(());
        }
        let peer = Greeting::decode(&self.peer_greeting_buf)?;
        self.mechanism.check_greeting(&self.our_greeting, &peer)?;
        self.peer_greeting = Some(peer);
        self.phase = Phase::Handshake;
        self.mechanism.start(&self.local, &mut self.tx);
        self.take_auth_request();
        Ok(())
    }

    /// Passes on a question the mechanism has for the owner (see [`SessionEvent::AuthRequest`]).
    fn take_auth_request(&mut self) {
        if let Some(request) = self.mechanism.take_auth_request() {
            self.events
                .push_back(SessionEvent::AuthRequest(Box::new(request)));
        }
    }

    /// The owner's answer to [`SessionEvent::AuthRequest`]. Letting the peer in resumes the
    /// handshake (and may complete it: drain the outputs as after any input); keeping it out
    /// sends the peer an ERROR and fails the session with [`SessionError::AuthFailed`]. A reply
    /// when no question is pending is ignored; on a failed session the error is returned again.
    pub fn handle_auth_reply(
        &mut self,
        reply: AuthReply,
        now: Instant,
    ) -> Result<(), SessionError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.phase != Phase::Handshake {
            return Ok(());
        }
        let result = self
            .mechanism
            .handle_auth_reply(reply, &self.local, &mut self.tx)
            .and_then(|done| match done {
                Some(props) => self.complete_handshake(props, now),
                None => Ok(()),
            });
        result.map_err(|e| self.fail(e))
    }

    fn handle_frame(&mut self, frame: Frame, now: Instant) -> Result<(), SessionError> {
        match self.phase {
            Phase::Handshake => {
                if !frame.is_command() {
                    return Err(ProtocolError::UnexpectedMessage.into());
                }
                let body = frame.body.to_bytes();
                let done = self
                    .mechanism
                    .handle_command(&body, &self.local, &mut self.tx)?;
                self.take_auth_request();
                if let Some(props) = done {
                    self.complete_handshake(props, now)?;
                }
                Ok(())
            }
            Phase::Ready => {
                let frame = self.mechanism.decode_frame(frame)?;
                self.handle_traffic(frame, now)
            }
            Phase::Greeting | Phase::Failed => Ok(()),
        }
    }

    /// A traffic frame, once the mechanism has opened it.
    fn handle_traffic(&mut self, frame: Frame, now: Instant) -> Result<(), SessionError> {
        // Any traffic proves the peer alive.
        self.timers.heartbeat_timeout = None;
        self.timers.peer_ttl = None;
        if frame.is_command() {
            self.handle_traffic_command(&frame.body.to_bytes(), now)
        } else {
            let more = frame.more();
            match &mut self.codec {
                None => self.handle_part(frame.body, more),
                Some(codec) => {
                    match codec.decode_part(frame.body, more, self.config.max_msg_size)? {
                        Decoded::Part(body) => self.handle_part(body, more),
                        // The peer's dictionary is installed; nothing to deliver.
                        Decoded::Dictionary => Ok(()),
                    }
                }
            }
        }
    }

    fn complete_handshake(&mut self, props: Metadata, now: Instant) -> Result<(), SessionError> {
        let Some(type_name) = props.get(metadata::SOCKET_TYPE) else {
            return Err(ProtocolError::MissingSocketType.into());
        };
        let Some(peer_type) = SocketType::from_name(type_name) else {
            return Err(ProtocolError::UnknownSocketType(
                String::from_utf8_lossy(type_name).into(),
            )
            .into());
        };
        if !self.config.socket_type.is_compatible(peer_type) {
            let reason = Bytes::from_static(b"Incompatible socket type");
            self.mechanism
                .encode_command(&Command::Error { reason }, &mut self.tx);
            return Err(SessionError::Incompatible {
                local: self.config.socket_type,
                peer: peer_type,
            });
        }
        let routing_id = props.get(metadata::IDENTITY).map(Bytes::copy_from_slice);
        // Spec 23: an Identity is at most 255 bytes (libzmq cannot send a longer one).
        if routing_id
            .as_ref()
            .is_some_and(|id| id.len() > MAX_IDENTITY)
        {
            return Err(ProtocolError::MalformedMetadata.into());
        }
        let mut props = props;
        if let Some(addr) = &self.config.peer_address {
            props.insert(
                metadata::PEER_ADDRESS,
                Bytes::copy_from_slice(addr.as_bytes()),
            );
        }
        let zmtp_minor = self.peer_greeting.map_or(0, |g| g.minor);
        self.peer = Some(PeerInfo {
            socket_type: peer_type,
            routing_id,
            properties: Arc::new(props),
            zmtp_minor,
        });
        self.phase = Phase::Ready;
        self.tx.set_staging(crate::wire::tx::STAGING);
        self.timers.handshake = None;
        self.timers.next_ping = self.config.heartbeat_ivl.map(|d| now + d);
        self.events.push_back(SessionEvent::HandshakeSucceeded);
        Ok(())
    }

    fn handle_part(&mut self, body: Part, more: bool) -> Result<(), SessionError> {
        let delimited = self.partial.delimited();
        if self.partial.len() + usize::from(delimited) >= self.config.max_parts {
            return Err(LimitError::TooManyParts {
                max: self.config.max_parts,
            }
            .into());
        }
        if more {
            // REQ, REP: the delimiter in front of a request or reply becomes the message's
            // flag, so that delimiter and body are one part inline (no allocation).
            if body.is_empty()
                && self.partial.is_empty()
                && !delimited
                && self.config.socket_type.flags_delimiter()
            {
                self.partial.set_delimited(true);
            } else {
                self.partial.push(body);
            }
            return Ok(());
        }
        // A one-part message (most are) is built from its body directly, not through `partial`.
        let mut msg = if self.partial.is_empty() {
            Message::from(body)
        } else {
            self.partial.push(body);
            std::mem::take(&mut self.partial)
        };
        // The flag moves from `partial` to the message (for more than one part, taking
        // `partial` above moved it already; this repeats that harmlessly). After the fact, so
        // a message without it is built as before.
        if delimited {
            self.partial.set_delimited(false);
            msg.set_delimited(true);
        }
        // ZMTP 3.0 subscriptions are messages whose first byte is 1 (subscribe) or 0 (cancel);
        // libzmq accepts them from any peer, so do we.
        if self.config.socket_type.receives_subscriptions() {
            let first = &msg.parts()[0];
            match first.first() {
                Some(1) => {
                    let topic = Bytes::copy_from_slice(&first[1..]);
                    self.events.push_back(SessionEvent::Subscribe(topic));
                    return Ok(());
                }
                Some(0) => {
                    let topic = Bytes::copy_from_slice(&first[1..]);
                    self.events.push_back(SessionEvent::Cancel(topic));
                    return Ok(());
                }
                _ => {}
            }
        }
        if self.stamps_properties {
            msg.set_metadata(self.peer.as_ref().map(|p| p.properties.clone()));
        }
        self.events.push_back(SessionEvent::Message(msg));
        Ok(())
    }

    fn handle_traffic_command(&mut self, body: &Bytes, now: Instant) -> Result<(), SessionError> {
        let cmd = match Command::decode(body) {
            Ok(cmd) => cmd,
            // A command we cannot parse after the handshake is skipped, as an unknown one is.
            Err(_) => return Ok(()),
        };
        match cmd {
            Command::Ping {
                ttl_deciseconds,
                context,
            } => {
                // One PONG pending at most, as libzmq: a peer that sends PINGs and never reads
                // our replies must not grow our queue by its flood. A PING that arrives while
                // our last PONG has not left yet is answered by that PONG.
                if self.tx.handed_out() >= self.pong_mark {
                    let context = context.slice(..context.len().min(MAX_PING_CONTEXT));
                    self.mechanism
                        .encode_command(&Command::Pong { context }, &mut self.tx);
                    self.pong_mark = self.tx.end_mark();
                }
                if ttl_deciseconds > 0 && self.timers.peer_ttl.is_none() {
                    self.timers.peer_ttl =
                        Some(now + Duration::from_millis(u64::from(ttl_deciseconds) * 100));
                }
            }
            // Subscriptions go only to the sockets that take them (PUB, XPUB) and groups only
            // to RADIO, as libzmq: any peer can send these commands, and a SUBSCRIBE must not
            // join a RADIO group nor a JOIN subscribe at a PUB. Elsewhere they are ignored.
            Command::Subscribe(t) if self.config.socket_type.receives_subscriptions() => {
                self.events.push_back(SessionEvent::Subscribe(t))
            }
            Command::Cancel(t) if self.config.socket_type.receives_subscriptions() => {
                self.events.push_back(SessionEvent::Cancel(t))
            }
            Command::Join(g) if self.config.socket_type == SocketType::Radio => {
                self.events.push_back(SessionEvent::Join(g))
            }
            Command::Leave(g) if self.config.socket_type == SocketType::Radio => {
                self.events.push_back(SessionEvent::Leave(g))
            }
            Command::Error { reason } => {
                return Err(SessionError::PeerError {
                    reason: String::from_utf8_lossy(&reason).into_owned(),
                })
            }
            // PONG (its arrival already counted as traffic), unknown commands, a stray READY,
            // and subscriptions or groups the socket does not take are ignored once traffic
            // has started.
            _ => {}
        }
        Ok(())
    }

    /// Tells the session the time has come (call at [`Session::poll_timeout`]'s instant, or
    /// later; calling early does nothing).
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), SessionError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        if due(self.timers.handshake) {
            return Err(self.fail(SessionError::Timeout(Timeout::Handshake)));
        }
        if due(self.timers.peer_ttl) {
            return Err(self.fail(SessionError::Timeout(Timeout::PeerTtl)));
        }
        if due(self.timers.heartbeat_timeout) {
            return Err(self.fail(SessionError::Timeout(Timeout::Heartbeat)));
        }
        if due(self.timers.next_ping) {
            if let Some(ivl) = self.config.heartbeat_ivl {
                let ttl = self
                    .config
                    .heartbeat_ttl
                    .map_or(0, |t| (t.min(MAX_HEARTBEAT_TTL).as_millis() / 100) as u16);
                let ping = Command::Ping {
                    ttl_deciseconds: ttl,
                    context: Bytes::new(),
                };
                self.mechanism.encode_command(&ping, &mut self.tx);
                self.pings_sent += 1;
                self.timers.next_ping = Some(now + ivl);
                if self.timers.heartbeat_timeout.is_none() {
                    let wait = self.config.heartbeat_timeout.unwrap_or(ivl);
                    self.timers.heartbeat_timeout = Some(now + wait);
                }
            }
        }
        Ok(())
    }

    fn fail(&mut self, e: SessionError) -> SessionError {
        self.phase = Phase::Failed;
        self.timers = Timers::default();
        self.partial = Message::new();
        self.error = Some(e.clone());
        e
    }

    /// Queues a message for the peer. All its parts go out together.
    pub fn send_message(&mut self, msg: &Message) -> Result<(), UsageError> {
        self.check_ready()?;
        if self.is_raw() {
            for part in msg.parts() {
                self.tx.push_raw(part);
            }
            return Ok(());
        }
        if msg.delimited() || self.codec.is_some() {
            return self.send_message_transformed(msg);
        }
        let parts = msg.parts();
        let Some(last) = parts.len().checked_sub(1) else {
            return Err(UsageError::EmptyMessage);
        };
        for (i, part) in parts.iter().enumerate() {
            self.mechanism
                .encode_frame(i < last, part, part.shared(), &mut self.tx);
        }
        Ok(())
    }

    /// [`Session::send_message`] for a message that does not go out part for part as it is:
    /// a REQ's or REP's, whose delimiter flag goes out as the empty frame it stands for, or
    /// any message on a compressed transport. Out of line, so the common path pays one test.
    #[inline(never)]
    fn send_message_transformed(&mut self, msg: &Message) -> Result<(), UsageError> {
        let delimiter = msg.delimited().then(Part::empty);
        let wire = delimiter.iter().chain(msg.parts());
        let Some(last) = wire.clone().count().checked_sub(1) else {
            return Err(UsageError::EmptyMessage);
        };
        if let Some(codec) = &mut self.codec {
            // A dictionary goes out alone, before the first part compressed with it.
            if let Some(dict) = codec.start_message(wire.clone().map(|p| p.as_slice())) {
                self.mechanism
                    .encode_frame(false, &dict, Some(&dict), &mut self.tx);
            }
            for (i, part) in wire.enumerate() {
                let body = codec.encode_part(part);
                self.mechanism
                    .encode_frame(i < last, &body, Some(&body), &mut self.tx);
            }
            return Ok(());
        }
        for (i, part) in wire.enumerate() {
            self.mechanism
                .encode_frame(i < last, part, part.shared(), &mut self.tx);
        }
        Ok(())
    }

    /// Queues a command for the peer (traffic commands only: SUBSCRIBE, CANCEL, JOIN, LEAVE,
    /// PING...). Under CURVE it travels encrypted like any frame.
    pub fn send_command(&mut self, cmd: &Command) -> Result<(), UsageError> {
        self.check_ready()?;
        self.mechanism.encode_command(cmd, &mut self.tx);
        Ok(())
    }

    /// Sends a subscription the way the peer understands it: a SUBSCRIBE command to ZMTP 3.1,
    /// a `\x01topic` message to ZMTP 3.0.
    pub fn send_subscribe(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.send_subscription(true, topic)
    }

    /// Sends a cancellation: a CANCEL command to ZMTP 3.1, a `\x00topic` message to 3.0.
    pub fn send_cancel(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.send_subscription(false, topic)
    }

    fn send_subscription(&mut self, subscribe: bool, topic: &[u8]) -> Result<(), UsageError> {
        self.check_ready()?;
        if self.peer_greeting.is_some_and(|g| g.is_zmtp31()) {
            let t = Bytes::copy_from_slice(topic);
            let cmd = if subscribe {
                Command::Subscribe(t)
            } else {
                Command::Cancel(t)
            };
            self.mechanism.encode_command(&cmd, &mut self.tx);
        } else {
            let mut body = Vec::with_capacity(1 + topic.len());
            body.push(subscribe as u8);
            body.extend_from_slice(topic);
            // A ZMTP 3.0 subscription is a message part, so it takes the transport's envelope.
            let part = match &self.codec {
                Some(codec) => Part::from(codec.encode_part(&body)),
                None => Part::from(body),
            };
            self.mechanism
                .encode_frame(false, &part, part.shared(), &mut self.tx);
        }
        Ok(())
    }

    fn check_ready(&self) -> Result<(), UsageError> {
        match self.phase {
            Phase::Ready => Ok(()),
            Phase::Failed => Err(UsageError::Closed),
            Phase::Greeting | Phase::Handshake => Err(UsageError::NotReady),
        }
    }

    /// The next chunk of bytes to write. Gather several into one vectored write.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.tx.poll_transmit()
    }

    /// Bytes waiting in [`Session::poll_transmit`] (for write backpressure).
    pub fn queued_transmit(&self) -> usize {
        self.tx.queued_bytes()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    /// When to call [`Session::handle_timeout`] next, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.earliest()
    }

    /// How much free room the read buffer should have before the next read, given the bytes
    /// already buffered and not yet consumed (the start of an incomplete frame).
    ///
    /// Room is never sized by what the peer merely *announces*: a frame header claiming 2^62
    /// bytes asks for no more room than a normal read. A frame larger than one read grows the
    /// buffer by at most what has actually arrived of it (so the buffer at most doubles per
    /// step and a large body still lands in one buffer of its own, without a copy at the end),
    /// and a connection that has not finished its handshake reads in small steps, so a
    /// thousand stalled handshakes hold a few hundred bytes each.
    pub fn read_hint(&self, buffered: &[u8]) -> usize {
        if self.is_raw() {
            return if self.phase == Phase::Failed {
                0
            } else {
                READ_BATCH / 4
            };
        }
        let (least, wanted) = match self.phase {
            Phase::Greeting => return HANDSHAKE_READ,
            Phase::Handshake => (HANDSHAKE_READ, self.decoder.bytes_wanted(buffered)),
            // A quarter batch of room is enough to read on into; asking for a whole batch every
            // time made the driver grow (and so move) its buffer after almost every read.
            Phase::Ready => (READ_BATCH / 4, self.decoder.bytes_wanted(buffered)),
            Phase::Failed => return 0,
        };
        least.max(wanted.min(buffered.len()))
    }

    /// True once the handshake has completed (and the session has not failed).
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// True while the handshake has not completed and the session has not failed.
    pub fn is_handshaking(&self) -> bool {
        matches!(self.phase, Phase::Greeting | Phase::Handshake)
    }

    /// The peer, once the handshake has completed.
    pub fn peer(&self) -> Option<&PeerInfo> {
        self.peer.as_ref()
    }

    /// The peer's greeting, once it has arrived.
    pub fn peer_greeting(&self) -> Option<&Greeting> {
        self.peer_greeting.as_ref()
    }

    /// How many PINGs this session has queued (HEARTBEAT_IVL).
    pub fn pings_sent(&self) -> u64 {
        self.pings_sent
    }

    /// Why the session ended, if it has.
    pub fn error(&self) -> Option<&SessionError> {
        self.error.as_ref()
    }

    /// The configuration the session runs with.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }
}
