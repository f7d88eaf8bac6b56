//! Errors of the async API, by cause, convertible to `io::Error` for code that wants one.

use std::io;

use omq_core::endpoint::EndpointError;
use omq_core::options::OptionError;
use omq_core::{Message, RecvError, SendError, SocketError};

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
    InvalidMessage(&'static str),
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
    /// The operating system refused (bind: address in use, permission...).
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<SocketError> for Error {
    fn from(e: SocketError) -> Self {
        match e {
            SocketError::Option(o) => Error::Option(o),
            SocketError::Endpoint(e) => Error::Endpoint(e),
            SocketError::NotBound(s) | SocketError::NotConnected(s) => Error::NotInUse(s),
            SocketError::Closed => Error::Closed,
            other => Error::Io(io::Error::other(other.to_string())),
        }
    }
}

impl From<RecvError> for Error {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::WouldBlock => Error::WouldBlock,
            RecvError::InvalidState => Error::InvalidState,
            RecvError::Closed => Error::Closed,
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
            other => {
                let text = other.to_string();
                (Error::Io(io::Error::other(text)), other.into_message())
            }
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e {
            Error::WouldBlock => io::ErrorKind::WouldBlock,
            Error::InvalidState | Error::InvalidMessage(_) => io::ErrorKind::InvalidInput,
            Error::NotSupported => io::ErrorKind::Unsupported,
            Error::HostUnreachable => io::ErrorKind::HostUnreachable,
            Error::Endpoint(_) | Error::Option(_) => io::ErrorKind::InvalidInput,
            Error::NotInUse(_) => io::ErrorKind::NotFound,
            Error::Closed => io::ErrorKind::NotConnected,
            Error::LingerExpired => io::ErrorKind::TimedOut,
            Error::Io(e) => return io::Error::new(e.kind(), e.to_string()),
        };
        io::Error::new(kind, e)
    }
}
