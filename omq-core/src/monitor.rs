//! Monitor events, with libzmq's names, numbers and order (zmq_socket_monitor).
//!
//! Client side: (CONNECT_DELAYED), CONNECTED, HANDSHAKE_SUCCEEDED, then DISCONNECTED and
//! CONNECT_RETRIED when the connection is lost. Server side: LISTENING, ACCEPTED,
//! HANDSHAKE_SUCCEEDED, then DISCONNECTED, and CLOSED when the endpoint is unbound. A failed
//! handshake gives HANDSHAKE_FAILED_* then DISCONNECTED. MONITOR_STOPPED ends the stream.

use std::fmt;

/// The kind of a monitor event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// A connection was established (the value is the driver's descriptor, or 0).
    Connected,
    /// A connect attempt is in progress.
    ConnectDelayed,
    /// A reconnect was scheduled (the value is the delay in milliseconds).
    ConnectRetried,
    /// An endpoint was bound.
    Listening,
    /// Binding failed (the value is the OS error number).
    BindFailed,
    /// A connection was accepted.
    Accepted,
    /// Accepting failed.
    AcceptFailed,
    /// A bound endpoint was closed.
    Closed,
    /// Closing an endpoint failed.
    CloseFailed,
    /// A connection ended.
    Disconnected,
    /// Monitoring stopped; no further events.
    MonitorStopped,
    /// A handshake failed for a reason that is not the peer's protocol or authentication.
    HandshakeFailedNoDetail,
    /// A handshake completed.
    HandshakeSucceeded,
    /// A handshake failed because the peer broke the protocol (the value says how).
    HandshakeFailedProtocol,
    /// A handshake failed authentication (the value is the status code).
    HandshakeFailedAuth,
}

impl EventKind {
    /// libzmq's event number (`ZMQ_EVENT_*`).
    pub fn code(self) -> u32 {
        match self {
            EventKind::Connected => 0x0001,
            EventKind::ConnectDelayed => 0x0002,
            EventKind::ConnectRetried => 0x0004,
            EventKind::Listening => 0x0008,
            EventKind::BindFailed => 0x0010,
            EventKind::Accepted => 0x0020,
            EventKind::AcceptFailed => 0x0040,
            EventKind::Closed => 0x0080,
            EventKind::CloseFailed => 0x0100,
            EventKind::Disconnected => 0x0200,
            EventKind::MonitorStopped => 0x0400,
            EventKind::HandshakeFailedNoDetail => 0x0800,
            EventKind::HandshakeSucceeded => 0x1000,
            EventKind::HandshakeFailedProtocol => 0x2000,
            EventKind::HandshakeFailedAuth => 0x4000,
        }
    }

    /// libzmq's name without the `ZMQ_EVENT_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Connected => "CONNECTED",
            EventKind::ConnectDelayed => "CONNECT_DELAYED",
            EventKind::ConnectRetried => "CONNECT_RETRIED",
            EventKind::Listening => "LISTENING",
            EventKind::BindFailed => "BIND_FAILED",
            EventKind::Accepted => "ACCEPTED",
            EventKind::AcceptFailed => "ACCEPT_FAILED",
            EventKind::Closed => "CLOSED",
            EventKind::CloseFailed => "CLOSE_FAILED",
            EventKind::Disconnected => "DISCONNECTED",
            EventKind::MonitorStopped => "MONITOR_STOPPED",
            EventKind::HandshakeFailedNoDetail => "HANDSHAKE_FAILED_NO_DETAIL",
            EventKind::HandshakeSucceeded => "HANDSHAKE_SUCCEEDED",
            EventKind::HandshakeFailedProtocol => "HANDSHAKE_FAILED_PROTOCOL",
            EventKind::HandshakeFailedAuth => "HANDSHAKE_FAILED_AUTH",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One monitor event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MonitorEvent {
    /// What happened.
    pub kind: EventKind,
    /// The event's value (see [`EventKind`]).
    pub value: i64,
    /// The endpoint it concerns.
    pub endpoint: String,
    /// The peer, where the event concerns one whose handshake has completed
    /// (HANDSHAKE_SUCCEEDED, and DISCONNECTED after it): libzmq's integer alone cannot say who.
    pub peer: Option<EventPeer>,
    /// Why, for HANDSHAKE_FAILED_* and DISCONNECTED: the typed cause behind libzmq's integer.
    pub cause: Option<crate::socket::CloseReason>,
}

impl MonitorEvent {
    /// An event with no peer and no cause.
    pub fn new(kind: EventKind, value: i64, endpoint: String) -> Self {
        MonitorEvent {
            kind,
            value,
            endpoint,
            peer: None,
            cause: None,
        }
    }
}

/// Who a monitor event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventPeer {
    /// The peer's routing id, where it announced one (REQ, DEALER, ROUTER peers).
    pub routing_id: Option<bytes::Bytes>,
    /// The peer's address (its `Peer-Address` property: the IP for tcp).
    pub address: Option<String>,
    /// The peer's socket type.
    pub socket_type: crate::socket_type::SocketType,
}

/// libzmq's `ZMQ_PROTOCOL_ERROR_*` codes for HANDSHAKE_FAILED_PROTOCOL, as far as omq's errors
/// map onto them.
pub mod protocol_error {
    /// Unspecified ZMTP error.
    pub const ZMTP_UNSPECIFIED: i64 = 0x1000_0000;
    /// A command the handshake did not expect.
    pub const ZMTP_UNEXPECTED_COMMAND: i64 = 0x1000_0001;
    /// A command out of sequence (a replayed or reordered CURVE nonce).
    pub const ZMTP_INVALID_SEQUENCE: i64 = 0x1000_0002;
    /// A malformed command.
    pub const ZMTP_MALFORMED_COMMAND_UNSPECIFIED: i64 = 0x1000_0011;
    /// A malformed MESSAGE command.
    pub const ZMTP_MALFORMED_COMMAND_MESSAGE: i64 = 0x1000_0012;
    /// A malformed HELLO command.
    pub const ZMTP_MALFORMED_COMMAND_HELLO: i64 = 0x1000_0013;
    /// A malformed INITIATE command.
    pub const ZMTP_MALFORMED_COMMAND_INITIATE: i64 = 0x1000_0014;
    /// A malformed ERROR command.
    pub const ZMTP_MALFORMED_COMMAND_ERROR: i64 = 0x1000_0015;
    /// A malformed READY command.
    pub const ZMTP_MALFORMED_COMMAND_READY: i64 = 0x1000_0016;
    /// A malformed WELCOME command.
    pub const ZMTP_MALFORMED_COMMAND_WELCOME: i64 = 0x1000_0017;
    /// Malformed or unacceptable metadata.
    pub const ZMTP_INVALID_METADATA: i64 = 0x1000_0018;
    /// Unspecified security mechanism error.
    pub const ZMTP_CRYPTOGRAPHIC: i64 = 0x1100_0001;
    /// The mechanisms differ.
    pub const ZMTP_MECHANISM_MISMATCH: i64 = 0x1100_0002;
}

#[cfg(test)]
mod tests {
    use super::EventKind as E;

    #[test]
    fn event_numbers_and_names_are_libzmqs() {
        // zmq.h's ZMQ_EVENT_* values: one bit each, in this order, so a monitor reader built
        // for libzmq (pyzmq's constants, a bitmask of events to watch) reads omq's events.
        let kinds = [
            (E::Connected, "CONNECTED"),
            (E::ConnectDelayed, "CONNECT_DELAYED"),
            (E::ConnectRetried, "CONNECT_RETRIED"),
            (E::Listening, "LISTENING"),
            (E::BindFailed, "BIND_FAILED"),
            (E::Accepted, "ACCEPTED"),
            (E::AcceptFailed, "ACCEPT_FAILED"),
            (E::Closed, "CLOSED"),
            (E::CloseFailed, "CLOSE_FAILED"),
            (E::Disconnected, "DISCONNECTED"),
            (E::MonitorStopped, "MONITOR_STOPPED"),
            (E::HandshakeFailedNoDetail, "HANDSHAKE_FAILED_NO_DETAIL"),
            (E::HandshakeSucceeded, "HANDSHAKE_SUCCEEDED"),
            (E::HandshakeFailedProtocol, "HANDSHAKE_FAILED_PROTOCOL"),
            (E::HandshakeFailedAuth, "HANDSHAKE_FAILED_AUTH"),
        ];
        for (bit, (kind, name)) in kinds.into_iter().enumerate() {
            assert_eq!(kind.code(), 1 << bit, "{name}");
            assert_eq!(kind.name(), name);
            assert_eq!(kind.to_string(), name);
        }
    }
}
