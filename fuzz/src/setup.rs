//! Fixed keys, entropy and session configurations shared by the targets and the seed
//! generator, so that a transcript recorded by the generator replays byte for byte against the
//! session a target builds.

use std::time::Duration;

use bytes::Bytes;
use omq_core::mechanism::{CurveKeyPair, CurvePublicKey, CurveSecretKey, Entropy};
use omq_core::wire::greeting::{Greeting, MechanismName, GREETING_LEN};
use omq_core::{AuthReply, MechanismConfig, SessionConfig, SocketType};

/// The server keys of libzmq's `zmq_curve` man page (as in omq-core's tests).
pub const SERVER_SECRET: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
/// The client keys of the same page.
pub const CLIENT_SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";

/// Entropy of every CURVE client session the targets run.
pub const CLIENT_ENTROPY: [u8; 32] = [0xC1; 32];
/// Entropy of every CURVE server session the targets run.
pub const SERVER_ENTROPY: [u8; 32] = [0x5E; 32];

/// PLAIN client credentials.
pub const USERNAME: &[u8] = b"fuzz-user";
/// PLAIN client password.
pub const PASSWORD: &[u8] = b"fuzz-pass";

/// The CURVE server's long-term keys.
pub fn server_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_z85(SERVER_SECRET).expect("valid key"))
}

/// The CURVE client's long-term keys.
pub fn client_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_z85(CLIENT_SECRET).expect("valid key"))
}

/// The CURVE server's public key.
pub fn server_public() -> CurvePublicKey {
    *server_keys().public()
}

/// Which mechanism and side the session under test plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// NULL (no roles).
    Null,
    /// PLAIN client.
    PlainClient,
    /// PLAIN server.
    PlainServer,
    /// CURVE client.
    CurveClient,
    /// CURVE server.
    CurveServer,
}

impl Side {
    /// Every side.
    pub const ALL: [Side; 5] = [
        Side::Null,
        Side::PlainClient,
        Side::PlainServer,
        Side::CurveClient,
        Side::CurveServer,
    ];

    /// The side the peer plays.
    pub fn peer(self) -> Side {
        match self {
            Side::Null => Side::Null,
            Side::PlainClient => Side::PlainServer,
            Side::PlainServer => Side::PlainClient,
            Side::CurveClient => Side::CurveServer,
            Side::CurveServer => Side::CurveClient,
        }
    }

    /// The mechanism configuration of this side.
    pub fn mechanism(self) -> MechanismConfig {
        match self {
            Side::Null => MechanismConfig::Null,
            Side::PlainClient => {
                MechanismConfig::plain_client(USERNAME, PASSWORD).expect("short credentials")
            }
            Side::PlainServer => MechanismConfig::plain_server(),
            Side::CurveClient => MechanismConfig::curve_client(server_public(), client_keys()),
            Side::CurveServer => MechanismConfig::curve_server(server_keys()),
        }
    }

    /// The mechanism name.
    pub fn name(self) -> MechanismName {
        self.mechanism().name()
    }

    /// True for the server side of PLAIN and CURVE.
    pub fn is_server(self) -> bool {
        matches!(self, Side::PlainServer | Side::CurveServer)
    }

    /// The entropy a session of this side gets.
    pub fn entropy(self) -> Option<Entropy> {
        match self {
            Side::CurveClient => Some(Entropy::from_bytes(CLIENT_ENTROPY)),
            Side::CurveServer => Some(Entropy::from_bytes(SERVER_ENTROPY)),
            _ => None,
        }
    }

    /// The target name of this side's session target.
    pub fn target(self) -> &'static str {
        match self {
            Side::Null => "session_null",
            Side::PlainClient => "session_plain_client",
            Side::PlainServer => "session_plain_server",
            Side::CurveClient => "session_curve_client",
            Side::CurveServer => "session_curve_server",
        }
    }
}

/// The first byte of a session target's input: how the session under test is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cfg(pub u8);

/// How the session's owner answers an authentication request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// No authenticator: nobody is asked.
    Off,
    /// Let the peer in, with a User-Id and a property.
    Allow,
    /// Keep it out (status 400).
    Deny,
    /// Temporary failure (status 300).
    Later,
}

impl Cfg {
    /// Bits 0-1: the authenticator.
    pub const AUTH_MASK: u8 = 0x03;
    /// Bit 2: heartbeats on.
    pub const HEARTBEAT: u8 = 0x04;
    /// Bit 3: MAXMSGSIZE 512.
    pub const MAX_MSG: u8 = 0x08;
    /// Bit 4: the harness feeds a valid peer greeting first (else the input carries it).
    pub const GREETING: u8 = 0x10;
    /// Bit 5: that greeting says ZMTP 3.0.
    pub const ZMTP30: u8 = 0x20;
    /// Bits 6-7: the local socket type.
    pub const TYPE_SHIFT: u8 = 6;

    /// The local socket types bits 6-7 choose from.
    pub const TYPES: [SocketType; 4] = [
        SocketType::Dealer,
        SocketType::Router,
        SocketType::Pub,
        SocketType::Sub,
    ];

    /// The authenticator mode.
    pub fn auth(self) -> AuthMode {
        match self.0 & Self::AUTH_MASK {
            0 => AuthMode::Off,
            1 => AuthMode::Allow,
            2 => AuthMode::Deny,
            _ => AuthMode::Later,
        }
    }

    /// The local socket type.
    pub fn socket_type(self) -> SocketType {
        Self::TYPES[(self.0 >> Self::TYPE_SHIFT) as usize]
    }

    /// A socket type the local one accepts as a peer (for the seed generator).
    pub fn peer_type(self) -> SocketType {
        match self.socket_type() {
            SocketType::Dealer => SocketType::Router,
            SocketType::Router => SocketType::Dealer,
            SocketType::Pub => SocketType::Sub,
            _ => SocketType::Pub,
        }
    }

    /// Whether the harness feeds the peer greeting.
    pub fn feeds_greeting(self) -> bool {
        self.0 & Self::GREETING != 0
    }

    /// The configuration of the session under test.
    pub fn session_config(self, side: Side) -> SessionConfig {
        let mut c = SessionConfig::new(self.socket_type());
        c.mechanism = side.mechanism();
        c.entropy = side.entropy();
        c.routing_id = Bytes::from_static(b"fuzz-rid");
        c.metadata.insert("X-Fuzz", Bytes::from_static(b"1"));
        c.peer_address = Some("127.0.0.1:5555".into());
        if self.auth() != AuthMode::Off {
            c.authenticate = true;
            c.zap_domain = Bytes::from_static(b"fuzz");
        }
        if self.0 & Self::HEARTBEAT != 0 {
            c.heartbeat_ivl = Some(Duration::from_millis(100));
            c.heartbeat_ttl = Some(Duration::from_millis(1000));
            c.heartbeat_timeout = Some(Duration::from_millis(300));
        }
        if self.0 & Self::MAX_MSG != 0 {
            c.max_msg_size = Some(512);
        }
        c
    }

    /// The reply to an authentication request, if anyone is asked.
    pub fn reply(self) -> Option<AuthReply> {
        match self.auth() {
            AuthMode::Off => None,
            AuthMode::Allow => Some(
                AuthReply::allow()
                    .user_id("fuzz-user-id")
                    .property("X-Auth", "yes"),
            ),
            AuthMode::Deny => Some(AuthReply::deny("fuzz says no")),
            AuthMode::Later => Some(AuthReply::with_status(300, "later")),
        }
    }

    /// The greeting a well-behaved peer of `side` sends.
    pub fn peer_greeting(self, side: Side) -> [u8; GREETING_LEN] {
        let mut g = Greeting::ours(side.name(), side.peer().is_server());
        if self.0 & Self::ZMTP30 != 0 {
            g.minor = 0;
        }
        g.encode()
    }
}
