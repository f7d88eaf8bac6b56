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

#[cfg(test)]
#[cfg(feature = "tracing")]
mod tests {
    use std::fmt;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::{span, Event, Level, Metadata, Subscriber};

    use crate::{EventKind as K, MonitorEvent, SocketType};

    /// A subscriber that keeps the target, level and `event` field of every event it sees.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<(String, Level, String)>>>);

    impl Subscriber for Seen {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, e: &Event<'_>) {
            struct Kind(String);
            impl Visit for Kind {
                fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
                    if f.name() == "event" {
                        self.0 = format!("{v:?}");
                    }
                }
            }
            let mut kind = Kind(String::new());
            e.record(&mut kind);
            let m = e.metadata();
            self.0
                .lock()
                .unwrap()
                .push((m.target().to_owned(), *m.level(), kind.0));
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    /// Failures at WARN, dials and reconnection scheduling at DEBUG, the rest of the life cycle
    /// at INFO, all under `omq::connection`: an operator filtering on level sees failures
    /// without the chatter of a peer that keeps reconnecting.
    #[test]
    fn failures_warn_dials_debug_and_the_rest_inform() {
        let cases = [
            (K::HandshakeFailedNoDetail, Level::WARN),
            (K::HandshakeFailedProtocol, Level::WARN),
            (K::HandshakeFailedAuth, Level::WARN),
            (K::BindFailed, Level::WARN),
            (K::AcceptFailed, Level::WARN),
            (K::CloseFailed, Level::WARN),
            (K::ConnectDelayed, Level::DEBUG),
            (K::ConnectRetried, Level::DEBUG),
            (K::MonitorStopped, Level::DEBUG),
            (K::Connected, Level::INFO),
            (K::Listening, Level::INFO),
            (K::Accepted, Level::INFO),
            (K::Closed, Level::INFO),
            (K::Disconnected, Level::INFO),
            (K::HandshakeSucceeded, Level::INFO),
        ];
        let seen = Seen::default();
        tracing::subscriber::with_default(seen.clone(), || {
            for (kind, _) in cases {
                let e = MonitorEvent::new(kind, 0, "tcp://127.0.0.1:5555".into());
                super::lifecycle(SocketType::Dealer, &e);
            }
        });
        let seen = seen.0.lock().unwrap();
        let want: Vec<_> = cases
            .iter()
            .map(|(k, l)| ("omq::connection".to_owned(), *l, format!("{k:?}")))
            .collect();
        assert_eq!(*seen, want);
    }

    /// A socket traces its life cycle whether or not a monitor is attached: its own events
    /// (a dial, a connection) and those about a connection's peer (its end).
    #[test]
    fn a_socket_without_a_monitor_still_traces() {
        let seen = Seen::default();
        tracing::subscriber::with_default(seen.clone(), || {
            let now = std::time::Instant::now();
            let mut s = crate::Socket::new(SocketType::Dealer, Default::default(), 1).unwrap();
            s.connect("tcp://127.0.0.1:5555", now).unwrap();
            let Some(crate::Action::Dial { pipe, .. }) = s.poll_action() else {
                panic!("no dial");
            };
            s.handle_dialing(pipe);
            s.handle_connected(pipe, now).unwrap();
            s.handle_closed(pipe, &crate::CloseReason::Eof, now);
            assert_eq!(s.monitor_queued(), None);
        });
        let seen = seen.0.lock().unwrap();
        let kinds: Vec<_> = seen
            .iter()
            .filter(|(target, _, _)| target == "omq::connection")
            .map(|(_, _, kind)| kind.as_str())
            .collect();
        assert_eq!(kinds[..2], ["ConnectDelayed", "Connected"], "{kinds:?}");
        assert!(kinds.contains(&"Disconnected"), "{kinds:?}");
    }
}
