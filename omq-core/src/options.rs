//! Socket options: a typed builder with libzmq's names, defaults and validation.
//!
//! Every option is a field of [`Options`], set with a builder method named after it
//! (`Options::default().send_hwm(10_000)`), or changed on a live socket with a
//! [`SocketOption`]. Values are checked where they are set (the first invalid one is kept and
//! reported when the socket is created); whether an option applies to a socket type is checked
//! when the socket is created and when the option is changed, so SUBSCRIBE on a PUSH or
//! ROUTER_MANDATORY on a DEALER is a clear error rather than a silent no-op.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use std::sync::Arc;

use crate::mechanism::auth::{AuthReply, AuthRequest, Authenticator};
use crate::mechanism::{CurveKeyPair, CurvePublicKey, CurveSecretKey, MechanismConfig};
use crate::socket_type::SocketType;
use crate::wire::metadata::{is_valid_name, Metadata};

/// The longest HEARTBEAT_TTL libzmq accepts, in milliseconds: truncated to deciseconds it is
/// 65535, the most the PING's 16-bit TTL field holds. The one limit; the session's
/// [`crate::session::MAX_HEARTBEAT_TTL`] is the same value.
pub const MAX_HEARTBEAT_TTL_MS: u64 = 6_553_599;

/// Option names, as libzmq spells them (without `ZMQ_`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum OptionName {
    SndHwm,
    RcvHwm,
    Linger,
    RoutingId,
    ConnectRoutingId,
    RouterMandatory,
    RouterHandover,
    ProbeRouter,
    RouterNotify,
    HelloMsg,
    DisconnectMsg,
    HiccupMsg,
    StreamNotify,
    ReqCorrelate,
    ReqRelaxed,
    Conflate,
    MaxMsgSize,
    SndTimeo,
    RcvTimeo,
    Immediate,
    ReconnectIvl,
    ReconnectIvlMax,
    ReconnectStop,
    HandshakeIvl,
    HeartbeatIvl,
    HeartbeatTtl,
    HeartbeatTimeout,
    Subscribe,
    Unsubscribe,
    XpubVerbose,
    XpubVerboser,
    XpubManual,
    XpubWelcomeMsg,
    XpubNodrop,
    XsubVerboseUnsubscribe,
    InvertMatching,
    Metadata,
    Mechanism,
    ZapDomain,
    TcpKeepalive,
    TcpKeepaliveIdle,
    TcpKeepaliveCnt,
    TcpKeepaliveIntvl,
    Backlog,
    SndBuf,
    RcvBuf,
    Tos,
    Ipv6,
    ConnectTimeout,
    TcpMaxRt,
    BindToDevice,
    CompressionDict,
    CompressionAutoTrain,
    CompressionLevel,
    MaxSubscriptions,
}

impl OptionName {
    /// libzmq's name.
    pub fn as_str(self) -> &'static str {
        use OptionName::*;
        match self {
            SndHwm => "SNDHWM",
            RcvHwm => "RCVHWM",
            Linger => "LINGER",
            RoutingId => "ROUTING_ID",
            ConnectRoutingId => "CONNECT_ROUTING_ID",
            RouterMandatory => "ROUTER_MANDATORY",
            RouterHandover => "ROUTER_HANDOVER",
            ProbeRouter => "PROBE_ROUTER",
            RouterNotify => "ROUTER_NOTIFY",
            HelloMsg => "HELLO_MSG",
            DisconnectMsg => "DISCONNECT_MSG",
            HiccupMsg => "HICCUP_MSG",
            StreamNotify => "STREAM_NOTIFY",
            ReqCorrelate => "REQ_CORRELATE",
            ReqRelaxed => "REQ_RELAXED",
            Conflate => "CONFLATE",
            MaxMsgSize => "MAXMSGSIZE",
            SndTimeo => "SNDTIMEO",
            RcvTimeo => "RCVTIMEO",
            Immediate => "IMMEDIATE",
            ReconnectIvl => "RECONNECT_IVL",
            ReconnectIvlMax => "RECONNECT_IVL_MAX",
            ReconnectStop => "RECONNECT_STOP",
            HandshakeIvl => "HANDSHAKE_IVL",
            HeartbeatIvl => "HEARTBEAT_IVL",
            HeartbeatTtl => "HEARTBEAT_TTL",
            HeartbeatTimeout => "HEARTBEAT_TIMEOUT",
            Subscribe => "SUBSCRIBE",
            Unsubscribe => "UNSUBSCRIBE",
            XpubVerbose => "XPUB_VERBOSE",
            XpubVerboser => "XPUB_VERBOSER",
            XpubManual => "XPUB_MANUAL",
            XpubWelcomeMsg => "XPUB_WELCOME_MSG",
            XpubNodrop => "XPUB_NODROP",
            XsubVerboseUnsubscribe => "XSUB_VERBOSE_UNSUBSCRIBE",
            InvertMatching => "INVERT_MATCHING",
            Metadata => "METADATA",
            Mechanism => "MECHANISM",
            ZapDomain => "ZAP_DOMAIN",
            TcpKeepalive => "TCP_KEEPALIVE",
            TcpKeepaliveIdle => "TCP_KEEPALIVE_IDLE",
            TcpKeepaliveCnt => "TCP_KEEPALIVE_CNT",
            TcpKeepaliveIntvl => "TCP_KEEPALIVE_INTVL",
            Backlog => "BACKLOG",
            SndBuf => "SNDBUF",
            RcvBuf => "RCVBUF",
            Tos => "TOS",
            Ipv6 => "IPV6",
            ConnectTimeout => "CONNECT_TIMEOUT",
            TcpMaxRt => "TCP_MAXRT",
            BindToDevice => "BINDTODEVICE",
            CompressionDict => "COMPRESSION_DICT",
            CompressionAutoTrain => "COMPRESSION_AUTO_TRAIN",
            CompressionLevel => "COMPRESSION_LEVEL",
            MaxSubscriptions => "MAX_SUBSCRIPTIONS",
        }
    }

    /// Whether the option means anything on a socket of type `t` (as libzmq accepts it).
    pub fn applies_to(self, t: SocketType) -> bool {
        use OptionName::*;
        use SocketType as T;
        match self {
            ConnectRoutingId => matches!(t, T::Router | T::Stream),
            RouterMandatory | RouterHandover | RouterNotify => t == T::Router,
            StreamNotify => t == T::Stream,
            // libzmq: HELLO_MSG for the types that talk to one addressed peer per connection,
            // DISCONNECT_MSG where the application can tell peers apart, HICCUP_MSG where
            // a connecting pipe outlives its connection.
            HelloMsg => matches!(t, T::Router | T::Dealer | T::Server | T::Client | T::Peer),
            DisconnectMsg => matches!(t, T::Router | T::Server | T::Peer),
            HiccupMsg => matches!(t, T::Dealer | T::Client | T::Peer),
            // A PEER's connect_peer names the pipe it makes at once (libzmq refuses it with
            // IMMEDIATE, where there is no pipe before the handshake).
            Immediate => t != T::Peer,
            ProbeRouter => matches!(t, T::Router | T::Dealer | T::Req),
            ReqCorrelate | ReqRelaxed => t == T::Req,
            Conflate => matches!(t, T::Dealer | T::Pull | T::Push | T::Pub | T::Sub),
            Subscribe | Unsubscribe => matches!(t, T::Sub | T::XPub),
            XpubVerbose | XpubVerboser | XpubManual | XpubWelcomeMsg => t == T::XPub,
            XpubNodrop => matches!(t, T::Pub | T::XPub),
            XsubVerboseUnsubscribe => t == T::XSub,
            MaxSubscriptions => matches!(t, T::Pub | T::XPub | T::Radio),
            InvertMatching => matches!(t, T::Pub | T::XPub | T::Sub | T::XSub),
            _ => true,
        }
    }
}

impl fmt::Display for OptionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An option could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// The value is out of range or malformed.
    #[error("invalid value for {option}: {reason}")]
    InvalidValue {
        /// Which option.
        option: OptionName,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The option does not apply to this socket type.
    #[error("{option} does not apply to a {socket_type} socket")]
    NotApplicable {
        /// Which option.
        option: OptionName,
        /// The socket's type.
        socket_type: SocketType,
    },
}

/// When a connecting socket stops trying to reconnect (libzmq's ZMQ_RECONNECT_STOP flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconnectStop {
    /// Stop after a connection attempt is refused.
    pub conn_refused: bool,
    /// Stop after a handshake fails.
    pub handshake_failed: bool,
    /// Stop after an established connection is lost.
    pub after_disconnect: bool,
}

/// Which connection changes a ROUTER reports to its application as an empty message from the
/// peer (libzmq's ZMQ_ROUTER_NOTIFY flags: CONNECT 1, DISCONNECT 2). The application reads
/// `[routing id]["" ]`; nothing goes on the wire. Not for inproc peers, as in libzmq.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterNotify {
    /// After a peer's handshake.
    pub connect: bool,
    /// When a peer's connection ends (after what it sent before).
    pub disconnect: bool,
}

impl RouterNotify {
    /// libzmq's integer form (bit 1 CONNECT, bit 2 DISCONNECT); `None` for other bits.
    pub fn from_bits(bits: i32) -> Option<Self> {
        if bits & !3 != 0 {
            return None;
        }
        Some(RouterNotify {
            connect: bits & 1 != 0,
            disconnect: bits & 2 != 0,
        })
    }

    /// libzmq's integer form.
    pub fn bits(self) -> i32 {
        i32::from(self.connect) | (i32::from(self.disconnect) << 1)
    }
}

/// One option change for a live socket.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SocketOption {
    /// Outgoing queue limit per peer, in messages (0: unlimited).
    SndHwm(usize),
    /// Incoming queue limit per peer, in messages (0: unlimited).
    RcvHwm(usize),
    /// How long closing waits for queued messages (None: forever).
    Linger(Option<Duration>),
    /// Routing id announced to peers (1–255 bytes, not starting with 0).
    RoutingId(Bytes),
    /// ROUTER: the routing id to give the peer of the next connect.
    ConnectRoutingId(Bytes),
    /// ROUTER: unroutable messages fail instead of being dropped.
    RouterMandatory(bool),
    /// ROUTER: a new peer with a known routing id takes it over.
    RouterHandover(bool),
    /// Send an empty message to each new peer (to let a ROUTER learn our id).
    ProbeRouter(bool),
    /// ROUTER: tell the application about peers connecting and disconnecting.
    RouterNotify(RouterNotify),
    /// ROUTER, DEALER: a message sent first on every new connection (None or empty: none).
    HelloMsg(Option<Bytes>),
    /// ROUTER: a message received "from" a peer whose connection ended (None or empty: none).
    DisconnectMsg(Option<Bytes>),
    /// DEALER: a message received when a connection ends and will be redialled (None or
    /// empty: none).
    HiccupMsg(Option<Bytes>),
    /// STREAM: report connections opening and ending as `[id][""]` (default on).
    StreamNotify(bool),
    /// REQ: match replies to requests with a request id.
    ReqCorrelate(bool),
    /// REQ: allow a new request before the reply.
    ReqRelaxed(bool),
    /// Keep only the last message in each queue.
    Conflate(bool),
    /// Largest frame accepted from a peer (None: unlimited).
    MaxMsgSize(Option<u64>),
    /// How long a send waits (None: forever; zero: not at all).
    SndTimeo(Option<Duration>),
    /// How long a receive waits.
    RcvTimeo(Option<Duration>),
    /// Queue only to peers whose connection is complete.
    Immediate(bool),
    /// First reconnect delay (None: never reconnect).
    ReconnectIvl(Option<Duration>),
    /// Cap on the exponential reconnect delay (zero: no backoff).
    ReconnectIvlMax(Duration),
    /// When to give up reconnecting.
    ReconnectStop(ReconnectStop),
    /// Time allowed for a handshake (None: unlimited).
    HandshakeIvl(Option<Duration>),
    /// Interval between PINGs (None: no heartbeats).
    HeartbeatIvl(Option<Duration>),
    /// TTL announced in PINGs.
    HeartbeatTtl(Duration),
    /// How long to wait for traffic after a PING (None: the interval).
    HeartbeatTimeout(Option<Duration>),
    /// XPUB: pass every subscription up, duplicates too.
    XpubVerbose(bool),
    /// XPUB: pass every subscription and unsubscription up.
    XpubVerboser(bool),
    /// XPUB: the application sets subscriptions itself.
    XpubManual(bool),
    /// XPUB: message sent to each new subscriber.
    XpubWelcomeMsg(Option<Bytes>),
    /// PUB/XPUB: a full subscriber makes send fail instead of losing the message.
    XpubNodrop(bool),
    /// XSUB: forward every unsubscription, not just the last.
    XsubVerboseUnsubscribe(bool),
    /// Deliver messages that do NOT match the subscriptions.
    InvertMatching(bool),
    /// Application property sent in the handshake (name must start with `X-`).
    Metadata(String, Bytes),
    /// Security mechanism.
    Mechanism(MechanismConfig),
    /// The domain passed to the authenticator (ZAP_DOMAIN); with NULL security, setting it
    /// is what makes the authenticator be consulted.
    ZapDomain(Bytes),
    /// TCP_KEEPALIVE: SO_KEEPALIVE on or off (None: the system's default, libzmq's -1).
    TcpKeepalive(Option<bool>),
    /// TCP_KEEPALIVE_IDLE: idle time before the first probe, in whole seconds (None: system).
    TcpKeepaliveIdle(Option<Duration>),
    /// TCP_KEEPALIVE_CNT: unanswered probes before the connection is dropped (None: system).
    TcpKeepaliveCnt(Option<u32>),
    /// TCP_KEEPALIVE_INTVL: time between probes, in whole seconds (None: system).
    TcpKeepaliveIntvl(Option<Duration>),
    /// BACKLOG: the listen queue of bound tcp and ipc endpoints.
    Backlog(i32),
    /// SNDBUF: the kernel's send buffer, in bytes (None: the system's default).
    SndBuf(Option<usize>),
    /// RCVBUF: the kernel's receive buffer, in bytes (None: the system's default).
    RcvBuf(Option<usize>),
    /// TOS: the IP type-of-service byte of outgoing packets (None: the system's default).
    Tos(Option<u8>),
    /// IPV6: `tcp://*` binds IPv4 and IPv6, and host names may resolve to IPv6 addresses.
    Ipv6(bool),
    /// CONNECT_TIMEOUT: how long one tcp connect attempt may take (None: the system's limit).
    ConnectTimeout(Option<Duration>),
    /// TCP_MAXRT: how long sent data may stay unacknowledged before the connection is dropped
    /// (TCP_USER_TIMEOUT; None: the system's default). Linux only: elsewhere a bind or
    /// connect with it set fails with `Unsupported`.
    TcpMaxRt(Option<Duration>),
    /// BINDTODEVICE: tcp sockets use only this network interface (SO_BINDTODEVICE; needs
    /// CAP_NET_RAW). Linux only, as TCP_MAXRT.
    BindToDevice(Option<String>),
    /// COMPRESSION_DICT (omq.rs's OMQ_COMPRESSION_DICT): the dictionary `lz4+tcp://` and
    /// `zstd+tcp://` connections ship once and compress with (1 to 8192 bytes; raw bytes for
    /// LZ4, a ZDICT blob for zstd; None: none).
    CompressionDict(Option<Bytes>),
    /// COMPRESSION_AUTO_TRAIN (OMQ_COMPRESSION_AUTO_TRAIN): without a dictionary, train one
    /// from the first outgoing parts of each compressed connection and ship it. Off by default.
    CompressionAutoTrain(bool),
    /// COMPRESSION_LEVEL (OMQ_COMPRESSION_LEVEL): the zstd level, -7 to 4 (default 1).
    CompressionLevel(i32),
    /// MAX_SUBSCRIPTIONS (omq's own; PUB, XPUB, RADIO): the most topics (groups, for RADIO)
    /// one peer may hold subscribed; a peer that asks for more is disconnected (monitor:
    /// DISCONNECTED). 0, the default, is no limit, as libzmq.
    MaxSubscriptions(usize),
}

impl SocketOption {
    /// The option's name.
    pub fn name(&self) -> OptionName {
        use SocketOption as O;
        match self {
            O::SndHwm(_) => OptionName::SndHwm,
            O::RcvHwm(_) => OptionName::RcvHwm,
            O::Linger(_) => OptionName::Linger,
            O::RoutingId(_) => OptionName::RoutingId,
            O::ConnectRoutingId(_) => OptionName::ConnectRoutingId,
            O::RouterMandatory(_) => OptionName::RouterMandatory,
            O::RouterHandover(_) => OptionName::RouterHandover,
            O::ProbeRouter(_) => OptionName::ProbeRouter,
            O::RouterNotify(_) => OptionName::RouterNotify,
            O::HelloMsg(_) => OptionName::HelloMsg,
            O::DisconnectMsg(_) => OptionName::DisconnectMsg,
            O::HiccupMsg(_) => OptionName::HiccupMsg,
            O::StreamNotify(_) => OptionName::StreamNotify,
            O::ReqCorrelate(_) => OptionName::ReqCorrelate,
            O::ReqRelaxed(_) => OptionName::ReqRelaxed,
            O::Conflate(_) => OptionName::Conflate,
            O::MaxMsgSize(_) => OptionName::MaxMsgSize,
            O::SndTimeo(_) => OptionName::SndTimeo,
            O::RcvTimeo(_) => OptionName::RcvTimeo,
            O::Immediate(_) => OptionName::Immediate,
            O::ReconnectIvl(_) => OptionName::ReconnectIvl,
            O::ReconnectIvlMax(_) => OptionName::ReconnectIvlMax,
            O::ReconnectStop(_) => OptionName::ReconnectStop,
            O::HandshakeIvl(_) => OptionName::HandshakeIvl,
            O::HeartbeatIvl(_) => OptionName::HeartbeatIvl,
            O::HeartbeatTtl(_) => OptionName::HeartbeatTtl,
            O::HeartbeatTimeout(_) => OptionName::HeartbeatTimeout,
            O::XpubVerbose(_) => OptionName::XpubVerbose,
            O::XpubVerboser(_) => OptionName::XpubVerboser,
            O::XpubManual(_) => OptionName::XpubManual,
            O::XpubWelcomeMsg(_) => OptionName::XpubWelcomeMsg,
            O::XpubNodrop(_) => OptionName::XpubNodrop,
            O::XsubVerboseUnsubscribe(_) => OptionName::XsubVerboseUnsubscribe,
            O::InvertMatching(_) => OptionName::InvertMatching,
            O::Metadata(..) => OptionName::Metadata,
            O::Mechanism(_) => OptionName::Mechanism,
            O::ZapDomain(_) => OptionName::ZapDomain,
            O::TcpKeepalive(_) => OptionName::TcpKeepalive,
            O::TcpKeepaliveIdle(_) => OptionName::TcpKeepaliveIdle,
            O::TcpKeepaliveCnt(_) => OptionName::TcpKeepaliveCnt,
            O::TcpKeepaliveIntvl(_) => OptionName::TcpKeepaliveIntvl,
            O::Backlog(_) => OptionName::Backlog,
            O::SndBuf(_) => OptionName::SndBuf,
            O::RcvBuf(_) => OptionName::RcvBuf,
            O::Tos(_) => OptionName::Tos,
            O::Ipv6(_) => OptionName::Ipv6,
            O::ConnectTimeout(_) => OptionName::ConnectTimeout,
            O::TcpMaxRt(_) => OptionName::TcpMaxRt,
            O::BindToDevice(_) => OptionName::BindToDevice,
            O::CompressionDict(_) => OptionName::CompressionDict,
            O::CompressionAutoTrain(_) => OptionName::CompressionAutoTrain,
            O::CompressionLevel(_) => OptionName::CompressionLevel,
            O::MaxSubscriptions(_) => OptionName::MaxSubscriptions,
        }
    }
}

/// All options of a socket. Defaults are libzmq's (src/options.cpp).
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) sndhwm: usize,
    pub(crate) rcvhwm: usize,
    pub(crate) linger: Option<Duration>,
    /// LINGER was set: a SUB, XSUB or DISH then keeps it instead of its default of zero.
    pub(crate) linger_set: bool,
    pub(crate) routing_id: Bytes,
    pub(crate) connect_routing_id: Option<Bytes>,
    pub(crate) router_mandatory: bool,
    pub(crate) router_handover: bool,
    pub(crate) probe_router: bool,
    pub(crate) router_notify: RouterNotify,
    pub(crate) hello_msg: Option<Bytes>,
    pub(crate) disconnect_msg: Option<Bytes>,
    pub(crate) hiccup_msg: Option<Bytes>,
    pub(crate) stream_notify: bool,
    pub(crate) req_correlate: bool,
    pub(crate) req_relaxed: bool,
    pub(crate) conflate: bool,
    pub(crate) max_msg_size: Option<u64>,
    pub(crate) sndtimeo: Option<Duration>,
    pub(crate) rcvtimeo: Option<Duration>,
    pub(crate) immediate: bool,
    pub(crate) reconnect_ivl: Option<Duration>,
    pub(crate) reconnect_ivl_max: Duration,
    pub(crate) reconnect_stop: ReconnectStop,
    pub(crate) handshake_ivl: Option<Duration>,
    pub(crate) heartbeat_ivl: Option<Duration>,
    pub(crate) heartbeat_ttl: Duration,
    pub(crate) heartbeat_timeout: Option<Duration>,
    pub(crate) xpub_verbose: bool,
    pub(crate) xpub_verboser: bool,
    pub(crate) xpub_manual: bool,
    pub(crate) xpub_welcome_msg: Option<Bytes>,
    pub(crate) xpub_nodrop: bool,
    pub(crate) xsub_verbose_unsubscribe: bool,
    pub(crate) invert_matching: bool,
    pub(crate) metadata: Metadata,
    pub(crate) mechanism: MechanismConfig,
    pub(crate) zap_domain: Bytes,
    pub(crate) transport: TransportOptions,
    pub(crate) authenticator: Option<AuthenticatorHandle>,
    pub(crate) compression_dict: Option<Bytes>,
    pub(crate) compression_auto_train: bool,
    pub(crate) compression_level: i32,
    pub(crate) max_subscriptions: usize,
    /// libzmq-style security options, turned into `mechanism` when the socket is made.
    security: Security,
    /// Options set explicitly (checked against the socket type).
    set: Vec<OptionName>,
    /// The first invalid value given to the builder.
    error: Option<OptionError>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sndhwm: 1000,
            rcvhwm: 1000,
            linger: None,
            linger_set: false,
            routing_id: Bytes::new(),
            connect_routing_id: None,
            router_mandatory: false,
            router_handover: false,
            probe_router: false,
            router_notify: RouterNotify::default(),
            hello_msg: None,
            disconnect_msg: None,
            hiccup_msg: None,
            stream_notify: true,
            req_correlate: false,
            req_relaxed: false,
            conflate: false,
            max_msg_size: None,
            sndtimeo: None,
            rcvtimeo: None,
            immediate: false,
            reconnect_ivl: Some(Duration::from_millis(100)),
            reconnect_ivl_max: Duration::ZERO,
            reconnect_stop: ReconnectStop::default(),
            handshake_ivl: Some(Duration::from_secs(30)),
            heartbeat_ivl: None,
            heartbeat_ttl: Duration::ZERO,
            heartbeat_timeout: None,
            xpub_verbose: false,
            xpub_verboser: false,
            xpub_manual: false,
            xpub_welcome_msg: None,
            xpub_nodrop: false,
            xsub_verbose_unsubscribe: false,
            invert_matching: false,
            metadata: Metadata::new(),
            mechanism: MechanismConfig::Null,
            zap_domain: Bytes::new(),
            transport: TransportOptions::default(),
            authenticator: None,
            compression_dict: None,
            compression_auto_train: false,
            compression_level: crate::compress::DEFAULT_LEVEL,
            max_subscriptions: 0,
            security: Security::default(),
            set: Vec::new(),
            error: None,
        }
    }
}

macro_rules! builder {
    ($( $(#[$doc:meta])* $method:ident($ty:ty) => $variant:ident; )*) => {
        impl Options {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $method(mut self, value: $ty) -> Self {
                    if let Err(e) = self.apply(SocketOption::$variant(value.into())) {
                        self.error.get_or_insert(e);
                    }
                    self
                }
            )*
        }
    };
}

builder! {
    /// SNDHWM: outgoing queue limit per peer, in messages (0: unlimited). Default 1000.
    send_hwm(usize) => SndHwm;
    /// RCVHWM: incoming queue limit per peer, in messages (0: unlimited). Default 1000.
    recv_hwm(usize) => RcvHwm;
    /// LINGER: how long close waits to send what is queued (None: forever, the default; zero
    /// for SUB, XSUB and DISH unless set, as libzmq: their queues hold subscriptions, and an
    /// XSUB's messages, for publishers that may never come).
    linger(Option<Duration>) => Linger;
    /// ROUTING_ID: our routing id (1–255 bytes, not starting with a zero byte).
    routing_id(Bytes) => RoutingId;
    /// CONNECT_ROUTING_ID (ROUTER): the routing id to give the peer of the next connect.
    connect_routing_id(Bytes) => ConnectRoutingId;
    /// ROUTER_MANDATORY (ROUTER): an unknown routing id is an error instead of a silent drop,
    /// and a full peer makes send block instead of dropping.
    router_mandatory(bool) => RouterMandatory;
    /// ROUTER_HANDOVER (ROUTER): a new peer with a routing id in use takes it over.
    router_handover(bool) => RouterHandover;
    /// PROBE_ROUTER (ROUTER, DEALER, REQ): send an empty message to every new peer.
    probe_router(bool) => ProbeRouter;
    /// ROUTER_NOTIFY (ROUTER): receive `[routing id][""]` when a peer connects and/or
    /// disconnects (tcp and ipc peers; not inproc, as in libzmq).
    router_notify(RouterNotify) => RouterNotify;
    /// HELLO_MSG (ROUTER, DEALER): sent as the first message on every new connection, before
    /// anything queued (None or empty: none).
    hello_msg(Option<Bytes>) => HelloMsg;
    /// DISCONNECT_MSG (ROUTER): received as `[routing id][msg]` when a peer's connection ends
    /// (None or empty: none). Never sent on the wire.
    disconnect_msg(Option<Bytes>) => DisconnectMsg;
    /// HICCUP_MSG (DEALER): received when a connection of ours ends and will be redialled
    /// (None or empty: none). Never sent on the wire.
    hiccup_msg(Option<Bytes>) => HiccupMsg;
    /// STREAM_NOTIFY (STREAM): receive `[id][""]` when a connection opens and when it ends.
    /// On by default, as libzmq.
    stream_notify(bool) => StreamNotify;
    /// REQ_CORRELATE (REQ): prefix requests with an id and accept only the matching reply.
    req_correlate(bool) => ReqCorrelate;
    /// REQ_RELAXED (REQ): allow a new request before the reply to the last one.
    req_relaxed(bool) => ReqRelaxed;
    /// CONFLATE (DEALER, PULL, PUSH, PUB, SUB): keep only the newest message per queue.
    conflate(bool) => Conflate;
    /// MAXMSGSIZE: largest frame accepted from a peer; a larger one drops the connection.
    max_msg_size(Option<u64>) => MaxMsgSize;
    /// SNDTIMEO: how long a send waits when it cannot proceed (None: forever).
    send_timeout(Option<Duration>) => SndTimeo;
    /// RCVTIMEO: how long a receive waits (None: forever).
    recv_timeout(Option<Duration>) => RcvTimeo;
    /// IMMEDIATE: queue messages only to peers whose connection is complete.
    immediate(bool) => Immediate;
    /// RECONNECT_IVL: first reconnect delay (None: do not reconnect). Default 100 ms.
    reconnect_ivl(Option<Duration>) => ReconnectIvl;
    /// RECONNECT_IVL_MAX: cap of the doubling reconnect delay (zero: no backoff, the default).
    reconnect_ivl_max(Duration) => ReconnectIvlMax;
    /// RECONNECT_STOP: when to give up reconnecting.
    reconnect_stop(ReconnectStop) => ReconnectStop;
    /// HANDSHAKE_IVL: time allowed for a handshake (None: unlimited). Default 30 s.
    handshake_ivl(Option<Duration>) => HandshakeIvl;
    /// HEARTBEAT_IVL: interval between PINGs (None: no heartbeats, the default).
    heartbeat_ivl(Option<Duration>) => HeartbeatIvl;
    /// HEARTBEAT_TTL: TTL announced in our PINGs (at most [`MAX_HEARTBEAT_TTL_MS`]).
    heartbeat_ttl(Duration) => HeartbeatTtl;
    /// HEARTBEAT_TIMEOUT: how long to wait for traffic after a PING (None: the interval).
    heartbeat_timeout(Option<Duration>) => HeartbeatTimeout;
    /// XPUB_VERBOSE (XPUB): pass every subscription up, duplicates too.
    xpub_verbose(bool) => XpubVerbose;
    /// XPUB_VERBOSER (XPUB): pass every subscription and unsubscription up.
    xpub_verboser(bool) => XpubVerboser;
    /// XPUB_MANUAL (XPUB): subscriptions are set by the application, not the subscribers.
    xpub_manual(bool) => XpubManual;
    /// XPUB_WELCOME_MSG (XPUB): sent to each new subscriber.
    xpub_welcome_msg(Option<Bytes>) => XpubWelcomeMsg;
    /// XPUB_NODROP (PUB, XPUB): a full subscriber makes send fail with "would block".
    xpub_nodrop(bool) => XpubNodrop;
    /// XSUB_VERBOSE_UNSUBSCRIBE (XSUB): forward every unsubscription.
    xsub_verbose_unsubscribe(bool) => XsubVerboseUnsubscribe;
    /// INVERT_MATCHING (PUB, XPUB, SUB, XSUB): deliver what does not match.
    invert_matching(bool) => InvertMatching;
    /// The security mechanism (NULL by default).
    mechanism(MechanismConfig) => Mechanism;
    /// ZAP_DOMAIN: the domain the authenticator sees; with NULL security it turns
    /// authentication on.
    zap_domain(Bytes) => ZapDomain;
    /// TCP_KEEPALIVE: SO_KEEPALIVE on (`Some(true)`) or off (None: the system's default).
    tcp_keepalive(Option<bool>) => TcpKeepalive;
    /// TCP_KEEPALIVE_IDLE: idle time before the first keepalive probe (whole seconds).
    tcp_keepalive_idle(Option<Duration>) => TcpKeepaliveIdle;
    /// TCP_KEEPALIVE_CNT: unanswered probes before the connection is dropped.
    tcp_keepalive_cnt(Option<u32>) => TcpKeepaliveCnt;
    /// TCP_KEEPALIVE_INTVL: time between keepalive probes (whole seconds).
    tcp_keepalive_intvl(Option<Duration>) => TcpKeepaliveIntvl;
    /// BACKLOG: the listen queue of bound endpoints. Default 100, as libzmq.
    backlog(i32) => Backlog;
    /// SNDBUF: the kernel's send buffer in bytes (None: the system's default).
    send_buffer(Option<usize>) => SndBuf;
    /// RCVBUF: the kernel's receive buffer in bytes (None: the system's default).
    recv_buffer(Option<usize>) => RcvBuf;
    /// TOS: the IP type-of-service byte (DSCP and ECN) of outgoing packets.
    tos(Option<u8>) => Tos;
    /// IPV6: `tcp://*` binds both IPv4 and IPv6, and names may resolve to IPv6.
    ipv6(bool) => Ipv6;
    /// CONNECT_TIMEOUT: how long one tcp connect attempt may take before it is retried.
    connect_timeout(Option<Duration>) => ConnectTimeout;
    /// TCP_MAXRT: how long sent data may go unacknowledged before the connection is dropped
    /// (Linux only).
    tcp_maxrt(Option<Duration>) => TcpMaxRt;
    /// BINDTODEVICE: tcp sockets use only this interface (needs CAP_NET_RAW; Linux only).
    bind_to_device(Option<String>) => BindToDevice;
    /// COMPRESSION_DICT: the dictionary `lz4+tcp://` / `zstd+tcp://` connections ship and
    /// compress with (1 to 8192 bytes: raw bytes for LZ4, a ZDICT blob for zstd).
    compression_dict(Option<Bytes>) => CompressionDict;
    /// COMPRESSION_AUTO_TRAIN: train a dictionary from each compressed connection's first
    /// outgoing parts and ship it (off by default; ignored with COMPRESSION_DICT).
    compression_auto_train(bool) => CompressionAutoTrain;
    /// COMPRESSION_LEVEL: the zstd level, -7 to 4 (default 1).
    compression_level(i32) => CompressionLevel;
    /// MAX_SUBSCRIPTIONS (PUB, XPUB, RADIO): the most topics or groups one peer may hold; a
    /// peer that subscribes to more is disconnected. 0 (the default): no limit, as libzmq.
    /// Set it on sockets that face untrusted subscribers: each distinct topic costs memory.
    max_subscriptions(usize) => MaxSubscriptions;
}

impl Options {
    /// Adds an application property sent to peers in the handshake (libzmq's ZMQ_METADATA);
    /// the name must start with `X-`.
    #[must_use]
    pub fn metadata(mut self, name: &str, value: impl Into<Bytes>) -> Self {
        if let Err(e) = self.apply(SocketOption::Metadata(name.into(), value.into())) {
            self.error.get_or_insert(e);
        }
        self
    }

    /// Sets the authenticator that decides which peers a server socket admits (libzmq's ZAP
    /// handler). Without one, PLAIN servers accept any credentials and CURVE servers any
    /// client key, as libzmq does without ZAP.
    #[must_use]
    pub fn authenticator(mut self, auth: impl Authenticator) -> Self {
        self.authenticator = Some(AuthenticatorHandle(Arc::new(auth)));
        self
    }

    /// Asks the authenticator about a peer (allowing everyone when there is none).
    pub fn authenticate(&self, request: &AuthRequest) -> AuthReply {
        match &self.authenticator {
            Some(a) => a.0.authenticate(request),
            None => AuthReply::allow(),
        }
    }

    /// CURVE_SERVER: this socket is a CURVE server (set CURVE_SECRETKEY too).
    #[must_use]
    pub fn curve_server(mut self, on: bool) -> Self {
        self.security.curve_server = on;
        self.security.used = true;
        self
    }

    /// CURVE_PUBLICKEY: our long-term public key (32 bytes or 40 Z85 characters). Optional for
    /// a server (derived from the secret key); required with CURVE_SECRETKEY for a client.
    #[must_use]
    pub fn curve_publickey(self, key: impl AsRef<[u8]>) -> Self {
        self.curve_key(CurvePublicKey::from_slice(key.as_ref()), |s, k| {
            s.public = Some(k)
        })
    }

    /// CURVE_SECRETKEY: our long-term secret key (32 bytes or 40 Z85 characters).
    #[must_use]
    pub fn curve_secretkey(self, key: impl AsRef<[u8]>) -> Self {
        self.curve_key(CurveSecretKey::from_slice(key.as_ref()), |s, k| {
            s.secret = Some(k)
        })
    }

    /// CURVE_SERVERKEY: the server's public key; makes this socket a CURVE client.
    #[must_use]
    pub fn curve_serverkey(self, key: impl AsRef<[u8]>) -> Self {
        self.curve_key(CurvePublicKey::from_slice(key.as_ref()), |s, k| {
            s.server_key = Some(k)
        })
    }

    /// Stores a parsed key, or records why it could not be parsed.
    fn curve_key<K, E>(mut self, key: Result<K, E>, store: impl FnOnce(&mut Security, K)) -> Self {
        match key {
            Ok(k) => store(&mut self.security, k),
            Err(_) => self.bad(
                OptionName::Mechanism,
                "CURVE keys are 32 bytes or 40 Z85 characters",
            ),
        }
        self.security.used = true;
        self
    }

    /// PLAIN_SERVER: this socket is a PLAIN server.
    #[must_use]
    pub fn plain_server(mut self, on: bool) -> Self {
        self.security.plain_server = on;
        self.security.used = true;
        self
    }

    /// PLAIN_USERNAME: makes this socket a PLAIN client logging in with this name.
    #[must_use]
    pub fn plain_username(mut self, name: impl Into<Bytes>) -> Self {
        self.security.username = Some(name.into());
        self.security.used = true;
        self
    }

    /// PLAIN_PASSWORD: the PLAIN client's password.
    #[must_use]
    pub fn plain_password(mut self, password: impl Into<Bytes>) -> Self {
        self.security.password = Some(password.into());
        self.security.used = true;
        self
    }

    fn bad(&mut self, option: OptionName, reason: &'static str) {
        self.error
            .get_or_insert(OptionError::InvalidValue { option, reason });
    }

    /// Turns the libzmq-style security options into the mechanism, as libzmq decides it:
    /// CURVE_SERVER, else CURVE_SERVERKEY (client), else PLAIN_SERVER, else PLAIN_USERNAME
    /// (client); none of them leaves the mechanism as set (NULL by default).
    pub(crate) fn resolve_security(&mut self) -> Result<(), OptionError> {
        let sec = &self.security;
        if !sec.used {
            return Ok(());
        }
        let invalid = |reason| OptionError::InvalidValue {
            option: OptionName::Mechanism,
            reason,
        };
        let keypair = |sec: &Security| -> Result<CurveKeyPair, OptionError> {
            let Some(secret) = sec.secret.clone() else {
                return Err(invalid("CURVE needs CURVE_SECRETKEY"));
            };
            match sec.public {
                Some(public) => CurveKeyPair::new(public, secret)
                    .map_err(|_| invalid("CURVE_PUBLICKEY does not belong to CURVE_SECRETKEY")),
                None => Ok(CurveKeyPair::from_secret(secret)),
            }
        };
        self.mechanism = if sec.curve_server {
            MechanismConfig::curve_server(keypair(sec)?)
        } else if let Some(server) = sec.server_key {
            if sec.public.is_none() {
                return Err(invalid(
                    "a CURVE client needs CURVE_PUBLICKEY and CURVE_SECRETKEY",
                ));
            }
            MechanismConfig::curve_client(server, keypair(sec)?)
        } else if sec.plain_server {
            MechanismConfig::plain_server()
        } else if let Some(user) = &sec.username {
            let password = sec.password.clone().unwrap_or_default();
            MechanismConfig::plain_client(user, password)
                .map_err(|_| invalid("PLAIN username and password are at most 255 bytes"))?
        } else {
            return Ok(());
        };
        Ok(())
    }

    /// Checks a value and stores it. Type applicability is checked separately, by the socket.
    pub(crate) fn apply(&mut self, opt: SocketOption) -> Result<(), OptionError> {
        use SocketOption as O;
        let name = opt.name();
        let invalid = |reason| OptionError::InvalidValue {
            option: name,
            reason,
        };
        match opt {
            O::SndHwm(v) => self.sndhwm = v,
            O::RcvHwm(v) => self.rcvhwm = v,
            O::Linger(v) => {
                self.linger = v;
                self.linger_set = true;
            }
            O::RoutingId(v) => {
                check_routing_id(&v).map_err(invalid)?;
                self.routing_id = v;
            }
            O::ConnectRoutingId(v) => {
                check_routing_id(&v).map_err(invalid)?;
                self.connect_routing_id = Some(v);
            }
            O::RouterMandatory(v) => self.router_mandatory = v,
            O::RouterHandover(v) => self.router_handover = v,
            O::ProbeRouter(v) => self.probe_router = v,
            O::RouterNotify(v) => self.router_notify = v,
            // libzmq: an empty value turns the message off.
            O::HelloMsg(v) => self.hello_msg = v.filter(|m| !m.is_empty()),
            O::DisconnectMsg(v) => self.disconnect_msg = v.filter(|m| !m.is_empty()),
            O::HiccupMsg(v) => self.hiccup_msg = v.filter(|m| !m.is_empty()),
            O::StreamNotify(v) => self.stream_notify = v,
            O::ReqCorrelate(v) => self.req_correlate = v,
            O::ReqRelaxed(v) => self.req_relaxed = v,
            O::Conflate(v) => self.conflate = v,
            O::MaxMsgSize(v) => self.max_msg_size = v,
            O::SndTimeo(v) => self.sndtimeo = v,
            O::RcvTimeo(v) => self.rcvtimeo = v,
            O::Immediate(v) => self.immediate = v,
            O::ReconnectIvl(v) => self.reconnect_ivl = v,
            O::ReconnectIvlMax(v) => self.reconnect_ivl_max = v,
            O::ReconnectStop(v) => self.reconnect_stop = v,
            O::HandshakeIvl(v) => self.handshake_ivl = v.filter(|d| !d.is_zero()),
            O::HeartbeatIvl(v) => self.heartbeat_ivl = v.filter(|d| !d.is_zero()),
            O::HeartbeatTtl(v) => {
                if v.as_millis() > u128::from(MAX_HEARTBEAT_TTL_MS) {
                    return Err(invalid(
                        "longer than MAX_HEARTBEAT_TTL_MS, which a PING cannot carry",
                    ));
                }
                self.heartbeat_ttl = v;
            }
            O::HeartbeatTimeout(v) => self.heartbeat_timeout = v,
            O::XpubVerbose(v) => self.xpub_verbose = v,
            O::XpubVerboser(v) => self.xpub_verboser = v,
            O::XpubManual(v) => self.xpub_manual = v,
            O::XpubWelcomeMsg(v) => self.xpub_welcome_msg = v,
            O::XpubNodrop(v) => self.xpub_nodrop = v,
            O::XsubVerboseUnsubscribe(v) => self.xsub_verbose_unsubscribe = v,
            O::InvertMatching(v) => self.invert_matching = v,
            O::Metadata(n, v) => {
                if !is_valid_name(&n) || !n.starts_with("X-") || n.len() < 3 {
                    return Err(invalid(
                        "property names start with X- and use [A-Za-z0-9._+-]",
                    ));
                }
                self.metadata.insert(&n, v);
            }
            O::Mechanism(m) => self.mechanism = m,
            O::ZapDomain(d) => {
                if d.len() > 255 {
                    return Err(invalid("at most 255 bytes"));
                }
                self.zap_domain = d;
            }
            O::TcpKeepalive(v) => self.transport.tcp_keepalive = v,
            O::TcpKeepaliveIdle(v) => {
                self.transport.tcp_keepalive_idle = whole_seconds(v).map_err(invalid)?
            }
            O::TcpKeepaliveCnt(v) => {
                if v == Some(0) {
                    return Err(invalid("at least 1 probe"));
                }
                self.transport.tcp_keepalive_cnt = v;
            }
            O::TcpKeepaliveIntvl(v) => {
                self.transport.tcp_keepalive_intvl = whole_seconds(v).map_err(invalid)?
            }
            O::Backlog(v) => {
                if v < 1 {
                    return Err(invalid("at least 1"));
                }
                self.transport.backlog = v;
            }
            O::SndBuf(v) => self.transport.sndbuf = v.filter(|&n| n > 0),
            O::RcvBuf(v) => self.transport.rcvbuf = v.filter(|&n| n > 0),
            O::Tos(v) => self.transport.tos = v,
            O::Ipv6(v) => self.transport.ipv6 = v,
            O::ConnectTimeout(v) => self.transport.connect_timeout = v.filter(|d| !d.is_zero()),
            O::TcpMaxRt(v) => {
                if v.is_some_and(|d| d.as_millis() > u128::from(u32::MAX)) {
                    return Err(invalid("at most 2^32-1 ms"));
                }
                self.transport.tcp_maxrt = v.filter(|d| !d.is_zero());
            }
            O::CompressionDict(v) => {
                if v.as_ref()
                    .is_some_and(|d| d.is_empty() || d.len() > crate::compress::MAX_DICT)
                {
                    return Err(invalid("a dictionary of 1 to 8192 bytes"));
                }
                self.compression_dict = v;
            }
            O::CompressionAutoTrain(v) => self.compression_auto_train = v,
            O::MaxSubscriptions(v) => self.max_subscriptions = v,
            O::CompressionLevel(v) => {
                if !crate::compress::LEVELS.contains(&v) {
                    return Err(invalid("a zstd level from -7 to 4"));
                }
                self.compression_level = v;
            }
            O::BindToDevice(v) => {
                if v.as_ref().is_some_and(|d| d.is_empty() || d.len() > 15) {
                    return Err(invalid("an interface name of 1 to 15 bytes"));
                }
                self.transport.bind_to_device = v;
            }
        }
        if !self.set.contains(&name) {
            self.set.push(name);
        }
        Ok(())
    }

    /// Checks everything set so far against a socket type.
    pub fn validate(&self, t: SocketType) -> Result<(), OptionError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.clone().resolve_security()?;
        for &name in &self.set {
            if !name.applies_to(t) {
                return Err(OptionError::NotApplicable {
                    option: name,
                    socket_type: t,
                });
            }
        }
        Ok(())
    }

    /// SNDHWM.
    pub fn get_send_hwm(&self) -> usize {
        self.sndhwm
    }
    /// RCVHWM.
    pub fn get_recv_hwm(&self) -> usize {
        self.rcvhwm
    }
    /// LINGER (None: forever).
    pub fn get_linger(&self) -> Option<Duration> {
        self.linger
    }
    /// SNDTIMEO (None: forever).
    pub fn get_send_timeout(&self) -> Option<Duration> {
        self.sndtimeo
    }
    /// RCVTIMEO (None: forever).
    pub fn get_recv_timeout(&self) -> Option<Duration> {
        self.rcvtimeo
    }
    /// CONFLATE.
    pub fn get_conflate(&self) -> bool {
        self.conflate
    }
    /// ROUTING_ID.
    pub fn get_routing_id(&self) -> &Bytes {
        &self.routing_id
    }
    /// The security mechanism.
    pub fn get_mechanism(&self) -> &MechanismConfig {
        &self.mechanism
    }
    /// The options the driver applies to the operating system's sockets.
    pub fn transport(&self) -> &TransportOptions {
        &self.transport
    }
}

/// The options that configure the operating system's sockets rather than the protocol: the
/// core only keeps and checks them; the driver applies them to every tcp socket it binds,
/// accepts or connects (a change applies to sockets made afterwards, as in libzmq).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportOptions {
    /// SO_KEEPALIVE (None: leave the system's default).
    pub tcp_keepalive: Option<bool>,
    /// TCP_KEEPIDLE.
    pub tcp_keepalive_idle: Option<Duration>,
    /// TCP_KEEPCNT.
    pub tcp_keepalive_cnt: Option<u32>,
    /// TCP_KEEPINTVL.
    pub tcp_keepalive_intvl: Option<Duration>,
    /// The listen backlog.
    pub backlog: i32,
    /// SO_SNDBUF.
    pub sndbuf: Option<usize>,
    /// SO_RCVBUF.
    pub rcvbuf: Option<usize>,
    /// IP_TOS / IPV6_TCLASS.
    pub tos: Option<u8>,
    /// Dual-stack binds of `*` and IPv6 name resolution.
    pub ipv6: bool,
    /// Limit of one connect attempt.
    pub connect_timeout: Option<Duration>,
    /// TCP_USER_TIMEOUT (Linux only).
    pub tcp_maxrt: Option<Duration>,
    /// SO_BINDTODEVICE (Linux only).
    pub bind_to_device: Option<String>,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            tcp_keepalive: None,
            tcp_keepalive_idle: None,
            tcp_keepalive_cnt: None,
            tcp_keepalive_intvl: None,
            backlog: 100,
            sndbuf: None,
            rcvbuf: None,
            tos: None,
            ipv6: false,
            connect_timeout: None,
            tcp_maxrt: None,
            bind_to_device: None,
        }
    }
}

/// Keepalive times are whole seconds on the wire of the socket API.
fn whole_seconds(v: Option<Duration>) -> Result<Option<Duration>, &'static str> {
    match v {
        Some(d) if d.as_secs() == 0 || d.subsec_nanos() != 0 => {
            Err("a whole number of seconds, at least 1")
        }
        _ => Ok(v),
    }
}

/// The libzmq-style security options as set, before they become a mechanism.
#[derive(Debug, Clone, Default)]
struct Security {
    used: bool,
    curve_server: bool,
    public: Option<CurvePublicKey>,
    secret: Option<CurveSecretKey>,
    server_key: Option<CurvePublicKey>,
    plain_server: bool,
    username: Option<Bytes>,
    password: Option<Bytes>,
}

/// A shared authenticator (printed without its contents).
#[derive(Clone)]
pub(crate) struct AuthenticatorHandle(pub(crate) Arc<dyn Authenticator>);

impl fmt::Debug for AuthenticatorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<authenticator>")
    }
}

fn check_routing_id(id: &Bytes) -> Result<(), &'static str> {
    if id.is_empty() || id.len() > 255 {
        return Err("a routing id is 1 to 255 bytes");
    }
    if id[0] == 0 {
        return Err("a routing id may not start with a zero byte (reserved for generated ids)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_libzmqs() {
        let o = Options::default();
        assert_eq!(o.sndhwm, 1000);
        assert_eq!(o.rcvhwm, 1000);
        assert_eq!(o.linger, None);
        assert_eq!(o.reconnect_ivl, Some(Duration::from_millis(100)));
        assert_eq!(o.handshake_ivl, Some(Duration::from_secs(30)));
        assert!(o.validate(SocketType::Push).is_ok());
    }

    #[test]
    fn invalid_values_are_reported_at_validation() {
        let o = Options::default().routing_id(Bytes::from_static(b"\0abc"));
        assert!(matches!(
            o.validate(SocketType::Dealer),
            Err(OptionError::InvalidValue {
                option: OptionName::RoutingId,
                ..
            })
        ));
        let o = Options::default().heartbeat_ttl(Duration::from_millis(6_553_600));
        assert!(o.validate(SocketType::Dealer).is_err());
        let o = Options::default().heartbeat_ttl(Duration::from_millis(6_553_599));
        assert!(o.validate(SocketType::Dealer).is_ok());
        let o = Options::default().metadata("Hello", Bytes::new());
        assert!(o.validate(SocketType::Dealer).is_err());
    }

    #[test]
    fn options_on_the_wrong_type_are_refused() {
        let o = Options::default().router_mandatory(true);
        assert_eq!(
            o.validate(SocketType::Dealer),
            Err(OptionError::NotApplicable {
                option: OptionName::RouterMandatory,
                socket_type: SocketType::Dealer
            })
        );
        assert!(o.validate(SocketType::Router).is_ok());
        let o = Options::default().conflate(true);
        assert!(o.validate(SocketType::Router).is_err());
        assert!(o.validate(SocketType::Pull).is_ok());
    }

    /// The driver reads CONFLATE back to keep its receive-ahead queue (the inbox) off a
    /// conflating socket, where a message taken ahead would outlive a newer one.
    #[test]
    fn conflate_reads_back_as_set() {
        assert!(!Options::default().get_conflate());
        assert!(Options::default().conflate(true).get_conflate());
        let mut o = Options::default().conflate(true);
        o.apply(SocketOption::Conflate(false)).unwrap();
        assert!(!o.get_conflate());
    }

    #[test]
    fn connection_options_are_checked_and_kept() {
        let o = Options::default()
            .tcp_keepalive(Some(true))
            .tcp_keepalive_idle(Some(Duration::from_secs(30)))
            .tcp_keepalive_cnt(Some(3))
            .tcp_keepalive_intvl(Some(Duration::from_secs(5)))
            .backlog(10)
            .send_buffer(Some(1 << 20))
            .recv_buffer(Some(0))
            .tos(Some(0x10))
            .ipv6(true)
            .connect_timeout(Some(Duration::from_millis(250)))
            .tcp_maxrt(Some(Duration::from_secs(3)))
            .bind_to_device(Some("eth0".into()));
        assert!(o.validate(SocketType::Dealer).is_ok());
        let t = o.transport();
        assert_eq!(t.tcp_keepalive, Some(true));
        assert_eq!(t.tcp_keepalive_cnt, Some(3));
        assert_eq!(t.backlog, 10);
        assert_eq!(t.sndbuf, Some(1 << 20));
        assert_eq!(
            t.rcvbuf, None,
            "0 means the system's default, as libzmq's -1"
        );
        assert_eq!(t.bind_to_device.as_deref(), Some("eth0"));
        assert_eq!(Options::default().transport().backlog, 100);
        for bad in [
            Options::default().tcp_keepalive_idle(Some(Duration::from_millis(1500))),
            Options::default().tcp_keepalive_intvl(Some(Duration::ZERO)),
            Options::default().tcp_keepalive_cnt(Some(0)),
            Options::default().backlog(0),
            Options::default().bind_to_device(Some("a-very-long-interface".into())),
            Options::default().tcp_maxrt(Some(Duration::from_secs(5_000_000))),
        ] {
            assert!(
                matches!(
                    bad.validate(SocketType::Pull),
                    Err(OptionError::InvalidValue { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
