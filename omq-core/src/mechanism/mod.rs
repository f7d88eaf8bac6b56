//! Security mechanisms as bytes-in/bytes-out state machines (specs 23, 24, 25, 26).
//!
//! Every mechanism has the same two halves:
//! - the handshake: after the greeting, the mechanism queues its first commands
//!   ([`Mechanism::start`]), takes the peer's commands one at a time
//!   ([`Mechanism::handle_command`]) and finally yields the peer's properties;
//! - traffic: every frame after the handshake, message parts and commands alike, passes through
//!   [`Mechanism::encode_frame`] / [`Mechanism::encode_command`] on the way out and
//!   [`Mechanism::decode_frame`] on the way in. NULL and PLAIN pass frames through; CURVE wraps
//!   each one in a MESSAGE box whose encrypted flags byte carries MORE and COMMAND, so the
//!   session's frame path is the same for all three.
//!
//! A server-side mechanism can pause its handshake to ask its owner whether to let the peer in
//! (see [`AuthRequest`]): it leaves the request for
//! [`Mechanism::take_auth_request`] and resumes on [`Mechanism::handle_auth_reply`].
//!
//! Keys and randomness are given to a mechanism ([`MechanismConfig`], [`Entropy`]); it never
//! fetches them.

pub mod auth;
mod curve;
mod keys;
mod null;
mod plain;

use bytes::{BufMut, Bytes, BytesMut};

pub use auth::{AuthReply, AuthRequest, Credentials};
pub use curve::{CurveConfig, CurveMechanism};
pub use keys::{generate_keypair, CurveKeyPair, CurvePublicKey, CurveSecretKey, Entropy, KEY_LEN};
pub use null::NullMechanism;
pub use plain::{PlainConfig, PlainMechanism};
/// The `rand_core` (0.6) whose `CryptoRngCore` key generation takes, so callers can name it.
pub use rand_core;

use crate::error::{ConfigError, ProtocolError, SessionError};
use crate::message::Part;
use crate::session::SessionConfig;
use crate::socket_type::SocketType;
use crate::wire::command::Command;
use crate::wire::frame::Frame;
use crate::wire::greeting::{Greeting, MechanismName};
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;
use auth::AuthSettings;

/// Which mechanism a connection uses, with its keys and settings.
///
/// PLAIN and CURVE have a client and a server side, and the configuration says which; the
/// greeting's as-server flag follows it (for NULL, which has no roles, it follows
/// `SessionConfig::as_server`). `Debug` never shows a password or a secret key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MechanismConfig {
    /// No security (spec 23's NULL).
    #[default]
    Null,
    /// Username and password in clear (spec 24).
    Plain(PlainConfig),
    /// CurveZMQ encryption and authentication (specs 25 and 26).
    Curve(CurveConfig),
}

impl MechanismConfig {
    /// A PLAIN client that logs in with these credentials (each at most 255 bytes).
    pub fn plain_client(
        username: impl AsRef<[u8]>,
        password: impl AsRef<[u8]>,
    ) -> Result<Self, ConfigError> {
        Ok(MechanismConfig::Plain(PlainConfig::client(
            username, password,
        )?))
    }

    /// A PLAIN server.
    pub fn plain_server() -> Self {
        MechanismConfig::Plain(PlainConfig::server())
    }

    /// A CURVE client that trusts `server_key` and proves itself with `keypair`.
    pub fn curve_client(server_key: CurvePublicKey, keypair: CurveKeyPair) -> Self {
        MechanismConfig::Curve(CurveConfig::client(server_key, keypair))
    }

    /// A CURVE server with its long-term keypair.
    pub fn curve_server(keypair: CurveKeyPair) -> Self {
        MechanismConfig::Curve(CurveConfig::server(keypair))
    }

    /// The name announced in the greeting.
    pub fn name(&self) -> MechanismName {
        match self {
            MechanismConfig::Null => MechanismName::NULL,
            MechanismConfig::Plain(_) => MechanismName::PLAIN,
            MechanismConfig::Curve(_) => MechanismName::CURVE,
        }
    }

    /// The as-server role the mechanism imposes, or None when it has no roles (NULL).
    pub fn as_server(&self) -> Option<bool> {
        match self {
            MechanismConfig::Null => None,
            MechanismConfig::Plain(p) => Some(p.is_server()),
            MechanismConfig::Curve(c) => Some(c.is_server()),
        }
    }
}

/// What the local socket tells the peer about itself during the handshake.
#[derive(Debug, Clone)]
pub struct LocalProperties {
    /// Our socket type.
    pub socket_type: SocketType,
    /// Our routing id (sent as Identity by REQ, DEALER and ROUTER).
    pub routing_id: Bytes,
    /// Application properties (`X-` names), sent after the standard ones.
    pub application: Metadata,
}

impl LocalProperties {
    /// The property list sent in READY (or in a mechanism's INITIATE/READY): Socket-Type, then
    /// Identity for the types that send one, then the application's properties, in the order
    /// libzmq uses.
    pub fn to_metadata(&self) -> Metadata {
        let mut m = Metadata::new();
        m.insert(
            crate::wire::metadata::SOCKET_TYPE,
            Bytes::from_static(self.socket_type.name().as_bytes()),
        );
        if self.socket_type.sends_identity() {
            m.insert(crate::wire::metadata::IDENTITY, self.routing_id.clone());
        }
        m.extend_from(&self.application);
        m
    }
}

/// A running mechanism.
#[derive(Debug)]
#[non_exhaustive]
pub enum Mechanism {
    /// NULL.
    Null(NullMechanism),
    /// PLAIN.
    Plain(PlainMechanism),
    /// CURVE (boxed: its keys and cipher state are larger than the other variants).
    Curve(Box<CurveMechanism>),
}

impl Mechanism {
    /// The mechanism a session with this configuration runs. `entropy` seeds the mechanism's
    /// own random generator; CURVE cannot run without it.
    pub fn new(config: &SessionConfig, entropy: Option<Entropy>) -> Result<Self, ConfigError> {
        let auth = AuthSettings {
            authenticate: config.authenticate,
            zap_domain: config.zap_domain.clone(),
            peer_address: config.peer_address.clone().unwrap_or_default(),
        };
        Ok(match &config.mechanism {
            MechanismConfig::Null => Mechanism::Null(NullMechanism::with_auth(auth)),
            MechanismConfig::Plain(p) => Mechanism::Plain(PlainMechanism::new(p, auth)),
            MechanismConfig::Curve(c) => {
                if c.server_key().is_some_and(|k| k.is_weak()) {
                    return Err(ConfigError::WeakServerKey);
                }
                let entropy = entropy.ok_or(ConfigError::MissingEntropy)?;
                Mechanism::Curve(Box::new(CurveMechanism::new(c, auth, &entropy)))
            }
        })
    }

    /// Checks the peer's greeting against ours: the same mechanism name, and for PLAIN and
    /// CURVE not two servers.
    ///
    /// Two clients cannot be caught here: libzmq (4.3) sends as-server 0 in every greeting, its
    /// PLAIN and CURVE servers included, so a client must accept a peer claiming 0. Two clients
    /// are caught one step later instead, when a client receives the other's HELLO.
    pub fn check_greeting(&self, ours: &Greeting, peer: &Greeting) -> Result<(), ProtocolError> {
        if ours.mechanism != peer.mechanism {
            return Err(ProtocolError::MechanismMismatch {
                ours: ours.mechanism.display(),
                theirs: peer.mechanism.display(),
            });
        }
        match self {
            // NULL has no roles: either side may claim either.
            Mechanism::Null(_) => Ok(()),
            Mechanism::Plain(_) | Mechanism::Curve(_) => {
                if ours.as_server && peer.as_server {
                    Err(ProtocolError::RoleMismatch)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Queues the mechanism's first commands once the greetings are exchanged.
    pub fn start(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        match self {
            Mechanism::Null(m) => m.start(local, out),
            Mechanism::Plain(m) => m.start(out),
            Mechanism::Curve(m) => m.start(out),
        }
    }

    /// Takes one handshake command. `Ok(Some(props))` means the handshake is complete and gives
    /// the properties the connection's messages carry (the peer's, plus what authentication
    /// added).
    pub fn handle_command(
        &mut self,
        body: &Bytes,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        match self {
            Mechanism::Null(m) => m.handle_command(body, local, out),
            Mechanism::Plain(m) => m.handle_command(body, local, out),
            Mechanism::Curve(m) => m.handle_command(body, local, out),
        }
    }

    /// The question for the owner the handshake is waiting on, once (see [`AuthRequest`]).
    pub fn take_auth_request(&mut self) -> Option<AuthRequest> {
        match self {
            Mechanism::Null(m) => m.take_auth_request(),
            Mechanism::Plain(m) => m.take_auth_request(),
            Mechanism::Curve(m) => m.take_auth_request(),
        }
    }

    /// The owner's answer. Resumes the handshake (`Ok(Some(props))` when that completes it),
    /// or refuses the peer: an ERROR is queued and the error is
    /// [`SessionError::AuthFailed`]. A reply nobody asked for is ignored.
    pub fn handle_auth_reply(
        &mut self,
        reply: AuthReply,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        match self {
            Mechanism::Null(m) => m.handle_auth_reply(reply, local, out),
            Mechanism::Plain(m) => m.handle_auth_reply(reply, out),
            Mechanism::Curve(m) => m.handle_auth_reply(reply, local, out),
        }
    }

    /// Queues one outgoing traffic frame.
    #[inline]
    pub fn encode_frame(
        &mut self,
        more: bool,
        body: &[u8],
        shared: Option<&Bytes>,
        out: &mut TxQueue,
    ) {
        match self {
            Mechanism::Null(_) | Mechanism::Plain(_) => out.push_frame(more, false, body, shared),
            Mechanism::Curve(m) => m.encode_frame(more, body, out),
        }
    }

    /// Queues one outgoing traffic command.
    pub fn encode_command(&mut self, cmd: &Command, out: &mut TxQueue) {
        match self {
            Mechanism::Null(_) | Mechanism::Plain(_) => {
                out.push_frame_with(true, cmd.encoded_len(), |b| cmd.encode(b))
            }
            Mechanism::Curve(m) => m.encode_command(cmd, out),
        }
    }

    /// Opens one incoming traffic frame.
    #[inline]
    pub fn decode_frame(&mut self, frame: Frame) -> Result<Frame, SessionError> {
        match self {
            Mechanism::Null(_) | Mechanism::Plain(_) => Ok(frame),
            Mechanism::Curve(m) => m.decode_frame(frame),
        }
    }

    /// Whether traffic frames should come as the read buffer's own bytes
    /// ([`FrameDecoder::decode_owned`](crate::wire::frame::FrameDecoder::decode_owned), then
    /// [`Mechanism::decode_owned_frame`]): CURVE opens a large one where it lies and copies a
    /// short one once, where the frame decoder would copy it first.
    #[inline]
    pub fn opens_in_place(&self) -> bool {
        matches!(self, Mechanism::Curve(_))
    }

    /// Opens one incoming traffic frame given as bytes nothing else holds (a range split off
    /// the read buffer): what [`Mechanism::decode_frame`] does, without the frame decoder's
    /// copy. NULL and PLAIN keep the frame decoder's rule: a slice of the buffer from
    /// [`SLICE_MIN`](crate::message::SLICE_MIN) bytes, a copy below.
    pub fn decode_owned_frame(&mut self, flags: u8, body: BytesMut) -> Result<Frame, SessionError> {
        match self {
            Mechanism::Null(_) | Mechanism::Plain(_) => Ok(Frame {
                flags,
                body: if body.len() >= crate::message::SLICE_MIN {
                    Part::from(body.freeze())
                } else {
                    Part::copy_received(&body)
                },
            }),
            Mechanism::Curve(m) => m.decode_owned_frame(body),
        }
    }
}

/// Queues a handshake command frame: name, then `len` bytes of data written by `fill`.
fn push_command(out: &mut TxQueue, name: &[u8], len: usize, fill: impl FnOnce(&mut BytesMut)) {
    out.push_frame_with(true, 1 + name.len() + len, |b| {
        b.put_u8(name.len() as u8);
        b.put_slice(name);
        fill(b);
    });
}

/// The error for a peer's ERROR command during a handshake.
fn peer_error(body: &Bytes) -> SessionError {
    match Command::decode(body) {
        Ok(Command::Error { reason }) => SessionError::PeerError {
            reason: String::from_utf8_lossy(&reason).into_owned(),
        },
        _ => ProtocolError::MalformedCommand { name: "ERROR" }.into(),
    }
}

/// The error for a command that does not belong at this point of the handshake.
fn unexpected(name: &[u8]) -> SessionError {
    ProtocolError::UnexpectedCommand {
        name: crate::wire::command::printable_name(name),
    }
    .into()
}

/// Refuses a peer the authenticator turned away: queues ERROR with the status code (unless
/// `send_error` is false) and gives the session's error.
fn refuse(reply: &AuthReply, send_error: bool, out: &mut TxQueue) -> SessionError {
    if send_error {
        let err = Command::Error {
            reason: reply.error_reason(),
        };
        out.push_frame_with(true, err.encoded_len(), |b| err.encode(b));
    }
    SessionError::AuthFailed {
        reason: reply.failure_reason(),
    }
}
