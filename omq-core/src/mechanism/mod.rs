//! Security mechanisms as bytes-in/bytes-out state machines (specs 23, 24, 25).
//!
//! Every mechanism has the same two halves:
//! - the handshake: after the greeting, the mechanism queues its first commands
//!   ([`Mechanism::start`]), takes the peer's commands one at a time
//!   ([`Mechanism::handle_command`]) and finally yields the peer's properties;
//! - traffic: every frame after the handshake, message parts and commands alike, passes through
//!   [`Mechanism::encode_frame`] on the way out and [`Mechanism::decode_frame`] on the way in.
//!   NULL and PLAIN pass frames through; CURVE wraps each one in a MESSAGE box whose encrypted
//!   flags byte carries MORE and COMMAND, so the session's frame path does not change when
//!   CURVE arrives.
//!
//! Keys and randomness are given to a mechanism in its configuration; it never fetches them.

mod null;

use bytes::Bytes;

pub use null::NullMechanism;

use crate::error::{ProtocolError, SessionError};
use crate::socket_type::SocketType;
use crate::wire::command::Command;
use crate::wire::frame::Frame;
use crate::wire::greeting::{Greeting, MechanismName};
use crate::wire::metadata::Metadata;
use crate::wire::tx::TxQueue;

/// Which mechanism a connection uses, with its keys and settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MechanismConfig {
    /// No security (spec 23's NULL).
    #[default]
    Null,
}

impl MechanismConfig {
    /// The name announced in the greeting.
    pub fn name(&self) -> MechanismName {
        match self {
            MechanismConfig::Null => MechanismName::NULL,
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
}

impl Mechanism {
    /// A mechanism for the given configuration and role.
    pub fn new(config: &MechanismConfig, _as_server: bool) -> Self {
        match config {
            MechanismConfig::Null => Mechanism::Null(NullMechanism::new()),
        }
    }

    /// Checks the peer's greeting against ours (name, and roles where they matter).
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
        }
    }

    /// Queues the mechanism's first commands once the greetings are exchanged.
    pub fn start(&mut self, local: &LocalProperties, out: &mut TxQueue) {
        match self {
            Mechanism::Null(m) => m.start(local, out),
        }
    }

    /// Takes one handshake command. `Ok(Some(props))` means the handshake is complete and gives
    /// the peer's properties.
    pub fn handle_command(
        &mut self,
        body: &Bytes,
        local: &LocalProperties,
        out: &mut TxQueue,
    ) -> Result<Option<Metadata>, SessionError> {
        match self {
            Mechanism::Null(m) => m.handle_command(body, local, out),
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
            Mechanism::Null(_) => out.push_frame(more, false, body, shared),
        }
    }

    /// Queues one outgoing traffic command.
    pub fn encode_command(&mut self, cmd: &Command, out: &mut TxQueue) {
        match self {
            Mechanism::Null(_) => out.push_frame_with(true, cmd.encoded_len(), |b| cmd.encode(b)),
        }
    }

    /// Opens one incoming traffic frame.
    #[inline]
    pub fn decode_frame(&mut self, frame: Frame) -> Result<Frame, SessionError> {
        match self {
            Mechanism::Null(_) => Ok(frame),
        }
    }
}
