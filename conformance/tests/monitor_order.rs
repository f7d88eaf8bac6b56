//! omq's monitor events against libzmq's own monitor, on every backend, over tcp and ipc.

use conformance::monitor_order::{compare, MonitorScenario as M};
use conformance::scenarios::Transport::{Ipc, Tcp};

macro_rules! backend {
    ($name:ident, $backend:ty) => {
        mod $name {
            use super::*;
            type B = $backend;
            #[test]
            fn connect_reconnect_tcp() {
                compare::<B>(M::ConnectReconnect, Tcp);
            }
            #[test]
            fn connect_reconnect_ipc() {
                compare::<B>(M::ConnectReconnect, Ipc);
            }
            #[test]
            fn bind_accept_unbind_tcp() {
                compare::<B>(M::BindAcceptUnbind, Tcp);
            }
            #[test]
            fn bind_accept_unbind_ipc() {
                compare::<B>(M::BindAcceptUnbind, Ipc);
            }
            #[test]
            fn incompatible_peer_tcp() {
                compare::<B>(M::IncompatiblePeer, Tcp);
            }
            #[test]
            fn incompatible_peer_ipc() {
                compare::<B>(M::IncompatiblePeer, Ipc);
            }
            #[test]
            fn connect_refused_tcp() {
                compare::<B>(M::ConnectRefused, Tcp);
            }
            #[test]
            fn connect_refused_ipc() {
                compare::<B>(M::ConnectRefused, Ipc);
            }
        }
    };
}

backend!(tokio, conformance::backend::TokioBackend);
backend!(compio, conformance::backend::CompioBackend);
backend!(monoio, conformance::backend::MonoioBackend);
backend!(glommio, conformance::backend::GlommioBackend);
