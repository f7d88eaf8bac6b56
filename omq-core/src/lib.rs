//! # omq-core
//!
//! The sans-io heart of omq, a pure-Rust ZeroMQ: everything that turns bytes into messages and
//! back, and every rule of the protocol, as pure step functions. No async runtime, no sockets,
//! no clock, no global randomness: time and randomness are parameters, inputs go in through
//! `handle_*` methods and outputs come out through `poll_*` methods.
//!
//! - [`wire`]: greeting, frames, commands, metadata, and the transmit queue (specs 23, 37).
//! - [`compress`]: the `lz4+tcp://` and `zstd+tcp://` transports (omq.rs's drafts): each
//!   message part compressed after the handshake.
//! - [`mechanism`]: security mechanisms as state machines (NULL, PLAIN, CURVE; specs 23–26),
//!   CURVE keys, and the authentication hook.
//! - [`z85`]: the Z85 text form of binary keys (spec 32).
//! - [`session`]: one peer connection from first byte to close; [`connection`]: a session
//!   joined to its socket's pipe (what a driver runs per connection).
//! - [`socket`]: a whole socket (pipes, endpoints, reconnection, monitor events) and its
//!   messaging pattern (one private module per pattern, `pattern/`); [`socket_type`]: the
//!   types and which may talk to which.
//! - [`pipe`]: the per-peer queues between the socket and its connections; [`routing`]: the
//!   structures patterns route with (fair queue, load balancer, ROUTER table, subscription
//!   trie).
//! - [`message`]: messages and their parts; [`options`]: socket options with libzmq's names
//!   and defaults; [`endpoint`]: endpoint parsing (`tcp://`, `ipc://`, `inproc://`).
//! - [`monitor`]: monitor events with libzmq's names and codes; [`error`]: errors by cause.
//! - [`rng`]: the small seeded generator (never seeded from the OS here).
//! - `sim` and `simnet` (feature `sim`): the deterministic simulated network and virtual
//!   clock the tests run on.
//!
//! See `docs/ARCHITECTURE.md` for the run loop a driver follows.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod arena;
pub mod compress;
pub mod connection;
pub mod endpoint;
pub mod error;
pub mod mechanism;
pub mod message;
pub mod monitor;
pub mod options;
mod pattern;
pub mod pipe;
pub mod rng;
pub mod routing;
pub mod session;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
#[cfg(any(test, feature = "sim"))]
pub mod simnet;
pub mod socket;
pub mod socket_type;
mod trace;
pub mod wire;
pub mod z85;

pub use endpoint::Endpoint;
pub use error::{CompressionError, LimitError, ProtocolError, SessionError, Timeout, UsageError};
pub use mechanism::auth::{Authenticator, CurveAllowList};
pub use mechanism::{AuthReply, AuthRequest, MechanismConfig};
pub use message::{Message, Part};
pub use monitor::{EventKind, EventPeer, MonitorEvent};
pub use options::{Options, SocketOption};
pub use session::{PeerInfo, Session, SessionConfig, SessionEvent};
pub use socket::{Action, CloseReason, MessageError, RecvError, SendError, Socket, SocketError};
pub use socket_type::SocketType;
