//! Errors of the async API, by cause, convertible to `io::Error` for code that wants one.

use std::io;

use omq_core::endpoint::EndpointError;
use omq_core::options::OptionError;
use omq_core::{Message, MessageError, RecvError, SendError, SocketError, SocketType};

/// What went wrong with a socket operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operation could not complete now (no peer has room, nothing to receive) and the
    /// caller did not want to wait, or SNDTIMEO/RCVTIMEO ran out. libzmq's EAGAIN.
    #[error("operation would block")]
    WouldBlock,
    /// Not allowed in the socket's state (REQ sending twice, REP sending first). EFSM.
    #[error("operation not allowed in the socket's current state")]
    InvalidState,
    /// The socket type cannot do this (send on PULL, recv on PUB). ENOTSUP.
    #[error("operation not supported by this socket type")]
    NotSupported,
    /// ROUTER_MANDATORY and no peer has this routing id. EHOSTUNREACH.
    #[error("no peer with that routing id")]
    HostUnreachable,
    /// The message does not fit the socket type.
    #[error("invalid message: {0}")]
    InvalidMessage(MessageError),
    /// A malformed endpoint or an unsupported transport.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// An invalid option value, or an option on the wrong socket type.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// `unbind` / `disconnect` of an endpoint that is not bound / connected.
    #[error("endpoint not in use: {0}")]
    NotInUse(String),
    /// The socket was closed.
    #[error("socket is closed")]
    Closed,
    /// `close` gave up when LINGER ran out, with messages still unsent.
    #[error("linger expired with messages still unsent")]
    LingerExpired,
    /// A socket type omq does not implement (yet).
    #[error("socket type {0} is not supported")]
    UnsupportedType(SocketType),
    /// The operating system refused (bind: address in use, permission...). The `io::Error`
    /// is the one the OS gave, with its error code.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A socket error this version of the driver has no variant of its own for (the core's
    /// error enums are non-exhaustive), kept whole as the source.
    #[error(transparent)]
    Socket(SocketError),
}

impl From<SocketError> for Error {
    fn from(e: SocketError) -> Self {
        match e {
            SocketError::Option(o) => Error::Option(o),
            SocketError::Endpoint(e) => Error::Endpoint(e),
            SocketError::NotBound(s) | SocketError::NotConnected(s) => Error::NotInUse(s),
            SocketError::Closed => Error::Closed,
            SocketError::UnsupportedType(t) => Error::UnsupportedType(t),
            SocketError::WrongType { .. } => Error::NotSupported,
            other => Error::Socket(other),
        }
    }
}

impl From<RecvError> for Error {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::WouldBlock => Error::WouldBlock,
            RecvError::InvalidState => Error::InvalidState,
            RecvError::Closed => Error::Closed,
            RecvError::NotSupported => Error::NotSupported,
            // A future core variant: the closest libzmq meaning of a receive that cannot be.
            _ => Error::NotSupported,
        }
    }
}

impl Error {
    /// The error of a failed send, with the message it gives back.
    pub(crate) fn from_send(e: SendError) -> (Error, Message) {
        match e {
            SendError::WouldBlock(m) => (Error::WouldBlock, m),
            SendError::HostUnreachable(m) => (Error::HostUnreachable, m),
            SendError::InvalidState(m) => (Error::InvalidState, m),
            SendError::NotSupported(m) => (Error::NotSupported, m),
            SendError::InvalidMessage(m, why) => (Error::InvalidMessage(why), m),
            SendError::Closed(m) => (Error::Closed, m),
            // A future core variant: say what it was, and give the message back.
            other => {
                let text = other.to_string();
                (Error::Io(io::Error::other(text)), other.into_message())
            }
        }
    }
}

impl Error {
    /// The `io::ErrorKind` closest to this error.
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            Error::WouldBlock => io::ErrorKind::WouldBlock,
            Error::InvalidState | Error::InvalidMessage(_) => io::ErrorKind::InvalidInput,
            Error::NotSupported | Error::UnsupportedType(_) => io::ErrorKind::Unsupported,
            Error::HostUnreachable => io::ErrorKind::HostUnreachable,
            Error::Endpoint(_) | Error::Option(_) => io::ErrorKind::InvalidInput,
            Error::NotInUse(_) => io::ErrorKind::NotFound,
            Error::Closed => io::ErrorKind::NotConnected,
            Error::LingerExpired => io::ErrorKind::TimedOut,
            Error::Io(e) => e.kind(),
            Error::Socket(_) => io::ErrorKind::Other,
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            // The OS's own error goes out as it came in, with its raw error code.
            Error::Io(io) => io,
            other => io::Error::new(other.io_kind(), other),
        }
    }
}
