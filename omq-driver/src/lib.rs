//! # omq-driver
//!
//! The one async driver of omq: it joins the sans-io core (`omq-core`) to any async runtime
//! through the small executor traits of [`runtime`], and gives every backend the same
//! user-facing [`Socket`]. A backend crate implements [`Runtime`] (streams with owned buffers,
//! listeners, connect, a timer, the clock, and `spawn`) and re-exports the rest.
//!
//! See `docs/ARCHITECTURE.md` for the tasks, the locking rule and the `Send` decision.
//!
//! The public surface is what an application and a backend need, and no more:
//! - [`socket`]: [`Socket`] and its [`Monitor`]; [`stream`]: a socket as a `futures` `Stream`
//!   and `Sink`; [`proxy`](mod@proxy): libzmq's `zmq_proxy` and `zmq_proxy_steerable`; [`error`]: the
//!   async API's [`Error`].
//! - For backends: the executor traits of [`runtime`]; [`net`], sockets made the same way for
//!   every backend (and the connect and bind every [`Runtime`] gets unless it overrides them);
//!   [`futures_io`], the halves for runtimes whose streams are futures-io ones; and an opaque
//!   [`Task`] a backend runs with `task.run()`.
//!
//! The socket's shared state, its tasks' insides, wake-up signals, inproc links and the udp
//! tasks are private, so they can change without breaking anyone; these do not compile from
//! outside:
//!
//! ```compile_fail
//! use omq_driver::shared::Shared;
//! ```
//! ```compile_fail
//! use omq_driver::signal::Signal;
//! ```
//! ```compile_fail
//! use omq_driver::inproc::Link;
//! ```
//! ```compile_fail
//! use omq_driver::tasks::ConnectionTask;
//! ```
//! ```compile_fail
//! fn inside<R: omq_driver::Runtime>(t: omq_driver::Task<R>) {
//!     match t {
//!         omq_driver::Task::Dial(_) => {}
//!         _ => {}
//!     }
//! }
//! ```

pub mod error;
pub mod futures_io;
mod inbox;
mod inproc;
pub mod net;
mod outbox;
pub mod proxy;
pub mod runtime;
mod shared;
mod signal;
pub mod socket;
pub mod stream;
mod tasks;
mod udp;

pub use error::Error;
pub use proxy::{proxy, proxy_steerable, ProxyStatistics};
pub use runtime::{Datagram, Listener, ReadHalf, Runtime, WriteHalf};
pub use socket::{AsEndpoint, Monitor, Socket, TrySendError};
pub use stream::{SocketSink, SocketStream, SINK_BATCH};
pub use tasks::{close_orphans, run_then_close, Task, READ_SIZE};

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
