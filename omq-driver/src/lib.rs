//! # omq-driver
//!
//! The one async driver of omq: it joins the sans-io core (`omq-core`) to any async runtime
//! through the small executor traits of [`runtime`], and gives every backend the same
//! user-facing [`Socket`]. A backend crate implements [`Runtime`] (streams with owned buffers,
//! listeners, connect, a timer, the clock, and `spawn`) and re-exports the rest.
//!
//! See `docs/ARCHITECTURE.md` for the tasks, the locking rule and the `Send` decision.

pub mod error;
pub mod futures_io;
pub mod inproc;
pub mod net;
pub mod proxy;
pub mod runtime;
pub mod shared;
pub mod signal;
pub mod socket;
pub mod stream;
pub mod tasks;
pub mod udp;

pub use error::Error;
pub use proxy::{proxy, proxy_steerable, ProxyStatistics};
pub use runtime::{Datagram, Listener, ReadHalf, Runtime, WriteHalf};
pub use socket::{AsEndpoint, Monitor, Socket, TrySendError};
pub use stream::{SocketSink, SocketStream};
pub use tasks::{close_orphans, Task};

pub use omq_core::mechanism::{
    generate_keypair, Credentials, CurveKeyPair, CurvePublicKey, CurveSecretKey, MechanismConfig,
};
pub use omq_core::options::{ReconnectStop, RouterNotify};
pub use omq_core::{
    AuthReply, AuthRequest, Authenticator, CloseReason, CurveAllowList, Endpoint, EventKind,
    EventPeer, Message, MessageError, MonitorEvent, Options, Part, SocketOption, SocketType,
};

/// The OS random generator, for [`generate_keypair`] and [`CurveSecretKey::generate`].
pub use rand_core::OsRng;
