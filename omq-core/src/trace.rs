//! What a socket tells [`tracing`] when the `tracing` cargo feature is on, and nothing at all
//! (not even a branch) when it is off.
//!
//! Connection life cycle (the monitor's events, whether or not a monitor is attached) goes out
//! at INFO, failures at WARN, dials and reconnection scheduling at DEBUG; a message dropped on
//! purpose (an unroutable ROUTER message, a full subscriber, a stale reply...) at DEBUG under
//! the target `omq::drop`, since it is per message. Nothing per message at INFO.

/// Notes a message dropped on purpose, with a static reason (DEBUG, target `omq::drop`).
#[cfg(feature = "tracing")]
macro_rules! dropped {
    ($why:literal) => {
        ::tracing::debug!(target: "omq::drop", reason = $why, "message dropped")
    };
}

/// Compiled out without the `tracing` feature.
#[cfg(not(feature = "tracing"))]
macro_rules! dropped {
    ($why:literal) => {
        ()
    };
}

pub(crate) use dropped;

/// Whether monitor-style events are worth building when no monitor is attached.
pub(crate) const LIFECYCLE: bool = cfg!(feature = "tracing");

/// Emits one connection life-cycle event.
#[cfg(feature = "tracing")]
pub(crate) fn lifecycle(socket_type: crate::SocketType, e: &crate::MonitorEvent) {
    use crate::EventKind as K;
    use tracing::Level;
    let level = match e.kind {
        K::HandshakeFailedNoDetail
        | K::HandshakeFailedProtocol
        | K::HandshakeFailedAuth
        | K::BindFailed
        | K::AcceptFailed
        | K::CloseFailed => Level::WARN,
        K::ConnectDelayed | K::ConnectRetried | K::MonitorStopped => Level::DEBUG,
        _ => Level::INFO,
    };
    let peer_id = e
        .peer
        .as_ref()
        .and_then(|p| p.routing_id.as_ref())
        .map(|id| tracing::field::debug(id.as_ref()));
    let peer_address = e.peer.as_ref().and_then(|p| p.address.as_deref());
    let cause = e.cause.as_ref().map(tracing::field::display);
    macro_rules! at {
        ($lvl:expr) => {
            tracing::event!(
                target: "omq::connection",
                $lvl,
                socket = %socket_type,
                event = ?e.kind,
                value = e.value,
                endpoint = %e.endpoint,
                peer_id,
                peer_address,
                cause,
            )
        };
    }
    match level {
        Level::WARN => at!(Level::WARN),
        Level::DEBUG => at!(Level::DEBUG),
        _ => at!(Level::INFO),
    }
}
