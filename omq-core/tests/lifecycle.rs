//! The connection lifecycle on the simulated network: reconnection and its options, monitor
//! events in libzmq's order, IMMEDIATE, heartbeats and the handshake limit at socket level
//! (libzmq's test_reconnect_ivl, test_reconnect_options, test_monitor, test_immediate,
//! test_heartbeats).

use std::time::Duration;

use omq_core::options::ReconnectStop;
use omq_core::simnet::Net;
use omq_core::{EventKind, Message, Options, SocketType};

const MS10: Duration = Duration::from_millis(10);

fn kinds(events: &[omq_core::MonitorEvent]) -> Vec<EventKind> {
    events.iter().map(|e| e.kind).collect()
}

#[test]
fn monitor_events_in_libzmq_order() {
    let mut net = Net::new(1);
    let server = net.socket(SocketType::Rep, Options::default()).unwrap();
    let client = net.socket(SocketType::Req, Options::default()).unwrap();
    net.monitor(server);
    net.monitor(client);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    net.connect(client, &ep).unwrap();
    net.run_for(MS10);
    net.close(server);
    net.run_for(Duration::from_millis(50));
    net.close(client);
    let s = net.events(server);
    assert_eq!(
        kinds(&s),
        [
            EventKind::Listening,
            EventKind::Accepted,
            EventKind::HandshakeSucceeded,
            EventKind::Closed,
            EventKind::MonitorStopped,
        ]
    );
    assert!(s[..4].iter().all(|e| e.endpoint == ep));
    let c = net.events(client);
    assert_eq!(
        kinds(&c),
        [
            EventKind::ConnectDelayed,
            EventKind::Connected,
            EventKind::HandshakeSucceeded,
            EventKind::Disconnected,
            EventKind::ConnectRetried,
            EventKind::MonitorStopped,
        ]
    );
    assert!(c[..5].iter().all(|e| e.endpoint == ep));
}

#[test]
fn unbind_closes_the_endpoint_and_its_connections() {
    let mut net = Net::new(2);
    let server = net.socket(SocketType::Pull, Options::default()).unwrap();
    let client = net.socket(SocketType::Push, Options::default()).unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    net.connect(client, &ep).unwrap();
    net.run_for(MS10);
    assert_eq!(net.connection_count(), 1);
    net.unbind(server, &ep).unwrap();
    assert_eq!(net.connection_count(), 0);
    let k = kinds(&net.events(server));
    assert_eq!(k.last(), Some(&EventKind::Closed));
    assert!(
        net.unbind(server, &ep).is_err(),
        "unbinding twice is an error"
    );
    assert!(net.disconnect(server, "tcp://127.0.0.1:1").is_err());
}

/// A peer of the wrong socket type: libzmq reports HANDSHAKE_FAILED_PROTOCOL
/// (ZMTP_INVALID_METADATA) only where a PLAIN or CURVE client reads the server's READY; under
/// NULL, and on the server's side, the connection just ends (DISCONNECTED, whose cause says
/// why). Checked against libzmq itself in conformance's monitor_order.
#[test]
fn a_wrong_socket_type_is_a_handshake_failure_only_for_a_secure_client() {
    use omq_core::mechanism::MechanismConfig;
    use omq_core::{CloseReason, SessionError};
    for secure in [false, true] {
        let mut net = Net::new(3);
        let (server_opts, client_opts) = if secure {
            let client = MechanismConfig::plain_client("u", "p").unwrap();
            (
                Options::default().mechanism(MechanismConfig::plain_server()),
                Options::default().mechanism(client),
            )
        } else {
            (Options::default(), Options::default())
        };
        let server = net.socket(SocketType::Pub, server_opts).unwrap();
        let client = net.socket(SocketType::Push, client_opts).unwrap();
        net.monitor(server);
        net.monitor(client);
        let ep = net.bind(server, "tcp://*:0").unwrap();
        net.connect(client, &ep).unwrap();
        net.run_for(MS10);
        let c = net.events(client);
        let k = kinds(&c);
        let failed = k
            .iter()
            .position(|e| *e == EventKind::HandshakeFailedProtocol);
        let gone = k
            .iter()
            .position(|e| *e == EventKind::Disconnected)
            .unwrap_or_else(|| panic!("PUSH to PUB ends the connection: {k:?}"));
        let incompatible = |e: &omq_core::MonitorEvent| {
            matches!(
                e.cause,
                Some(CloseReason::Session(SessionError::Incompatible { .. }))
            )
        };
        assert!(incompatible(&c[gone]), "{:?}", c[gone]);
        if secure {
            assert_eq!(failed, Some(gone - 1), "{k:?}");
            assert_eq!(
                c[gone - 1].value,
                omq_core::monitor::protocol_error::ZMTP_INVALID_METADATA
            );
            assert!(incompatible(&c[gone - 1]));
        } else {
            assert_eq!(failed, None, "{k:?}");
        }
        let s = kinds(&net.events(server));
        assert!(s.contains(&EventKind::Disconnected), "{s:?}");
        assert!(
            !s.iter().any(|e| matches!(
                e,
                EventKind::HandshakeFailedProtocol | EventKind::HandshakeFailedNoDetail
            )),
            "the server reports no handshake failure (secure: {secure}): {s:?}"
        );
    }
}

#[test]
fn reconnect_interval_and_backoff() {
    let mut net = Net::new(4);
    let client = net
        .socket(
            SocketType::Dealer,
            Options::default()
                .reconnect_ivl(Some(Duration::from_millis(100)))
                .reconnect_ivl_max(Duration::from_millis(800)),
        )
        .unwrap();
    net.monitor(client);
    net.connect(client, "tcp://127.0.0.1:9").unwrap();
    net.run_for(Duration::from_secs(10));
    let retries: Vec<i64> = net
        .events(client)
        .iter()
        .filter(|e| e.kind == EventKind::ConnectRetried)
        .map(|e| e.value)
        .collect();
    // Each delay is the current interval plus a jitter below the base interval; the interval
    // doubles up to the maximum.
    let bases = [100, 200, 400, 800, 800, 800];
    for (i, base) in bases.iter().enumerate() {
        assert!(
            retries[i] >= *base && retries[i] < base + 100,
            "retry {i}: {} not in [{base}, {})",
            retries[i],
            base + 100
        );
    }
}

#[test]
fn no_reconnect_with_negative_interval() {
    let mut net = Net::new(5);
    let client = net
        .socket(SocketType::Dealer, Options::default().reconnect_ivl(None))
        .unwrap();
    net.monitor(client);
    net.connect(client, "tcp://127.0.0.1:9").unwrap();
    net.run_for(Duration::from_secs(2));
    // The failed attempt's descriptor is closed (CLOSED), and no retry is scheduled.
    let k = kinds(&net.events(client));
    assert_eq!(k, [EventKind::ConnectDelayed, EventKind::Closed]);
}

#[test]
fn reconnect_stop_conn_refused() {
    let mut net = Net::new(6);
    let stop = ReconnectStop {
        conn_refused: true,
        ..ReconnectStop::default()
    };
    let client = net
        .socket(SocketType::Dealer, Options::default().reconnect_stop(stop))
        .unwrap();
    net.monitor(client);
    net.connect(client, "tcp://127.0.0.1:9").unwrap();
    net.run_for(Duration::from_secs(2));
    assert_eq!(
        kinds(&net.events(client)),
        [EventKind::ConnectDelayed, EventKind::Closed]
    );
}

#[test]
fn reconnect_stop_after_disconnect() {
    let mut net = Net::new(7);
    let server = net.socket(SocketType::Dealer, Options::default()).unwrap();
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let stop = ReconnectStop {
        after_disconnect: true,
        ..ReconnectStop::default()
    };
    let client = net
        .socket(SocketType::Dealer, Options::default().reconnect_stop(stop))
        .unwrap();
    net.monitor(client);
    net.connect(client, &ep).unwrap();
    net.run_for(MS10);
    net.kill_connections(server);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.connection_count(), 0);
    let k = kinds(&net.events(client));
    assert_eq!(k.last(), Some(&EventKind::Disconnected));
    assert!(!k.contains(&EventKind::ConnectRetried));
    // The endpoint is given up with its pipe: nothing queues for a peer that will never be
    // dialled again, and there is no connect left to disconnect.
    assert!(matches!(
        net.send(client, "lost?"),
        Err(omq_core::SendError::WouldBlock(_))
    ));
    assert!(net.disconnect(client, &ep).is_err());
}

#[test]
fn reconnect_stop_handshake_failed() {
    let mut net = Net::new(8);
    let server = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let stop = ReconnectStop {
        handshake_failed: true,
        ..ReconnectStop::default()
    };
    let client = net
        .socket(SocketType::Push, Options::default().reconnect_stop(stop))
        .unwrap();
    net.monitor(client);
    net.connect(client, &ep).unwrap();
    net.run_for(Duration::from_secs(2));
    let k = kinds(&net.events(client));
    assert_eq!(k.iter().filter(|e| **e == EventKind::Connected).count(), 1);
    // Without the flag it keeps trying.
    let client2 = net.socket(SocketType::Push, Options::default()).unwrap();
    net.monitor(client2);
    net.connect(client2, &ep).unwrap();
    net.run_for(Duration::from_secs(2));
    let k = kinds(&net.events(client2));
    assert!(k.iter().filter(|e| **e == EventKind::Connected).count() > 3);
}

#[test]
fn connect_before_bind_delivers_once_the_peer_binds() {
    let mut net = Net::new(9);
    let client = net.socket(SocketType::Push, Options::default()).unwrap();
    net.connect(client, "tcp://127.0.0.1:40000").unwrap();
    net.send(client, Message::from("early")).unwrap();
    net.run_for(Duration::from_millis(500));
    let server = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.bind(server, "tcp://*:40000").unwrap();
    net.run_for(Duration::from_millis(500));
    assert_eq!(net.recv(server).unwrap(), Message::from("early"));
}

#[test]
fn immediate_sends_only_to_connected_peers() {
    // test_immediate: with IMMEDIATE, a DEALER connected to one live and one dead endpoint
    // sends everything to the live one; without it, half would wait for the dead one.
    for (immediate, expect_all) in [(true, true), (false, false)] {
        let mut net = Net::new(10);
        let live = net.socket(SocketType::Pull, Options::default()).unwrap();
        let ep = net.bind(live, "tcp://*:0").unwrap();
        let client = net
            .socket(SocketType::Push, Options::default().immediate(immediate))
            .unwrap();
        net.connect(client, "tcp://127.0.0.1:9").unwrap();
        net.connect(client, &ep).unwrap();
        net.run_for(MS10);
        for i in 0..10 {
            net.send(client, Message::from(format!("{i}"))).unwrap();
        }
        net.run_for(MS10);
        let mut got = 0;
        while net.recv(live).is_ok() {
            got += 1;
        }
        assert_eq!(got == 10, expect_all, "immediate {immediate}: {got}");
    }
}

#[test]
fn heartbeats_detect_a_dead_link_and_the_client_reconnects() {
    let mut net = Net::new(11);
    let hb = Options::default()
        .heartbeat_ivl(Some(Duration::from_millis(100)))
        .heartbeat_timeout(Some(Duration::from_millis(300)));
    let server = net.socket(SocketType::Dealer, hb.clone()).unwrap();
    let client = net.socket(SocketType::Dealer, hb).unwrap();
    net.monitor(client);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    net.connect(client, &ep).unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.connection_count(), 1, "heartbeats keep a live link up");
    net.cut(client);
    net.run_for(Duration::from_millis(450));
    let k = kinds(&net.events(client));
    assert!(k.contains(&EventKind::Disconnected), "{k:?}");
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.connection_count(), 1, "reconnected");
    net.send(client, Message::from("after")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(server).unwrap(), Message::from("after"));
}

#[test]
fn handshake_ivl_cuts_off_a_peer_that_never_finishes() {
    let mut net = Net::new(12);
    net.link.cut_after = Some(10); // only the signature gets through
    let server = net
        .socket(
            SocketType::Pull,
            Options::default().handshake_ivl(Some(Duration::from_millis(200))),
        )
        .unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let client = net
        .socket(SocketType::Push, Options::default().handshake_ivl(None))
        .unwrap();
    net.connect(client, &ep).unwrap();
    net.run_for(Duration::from_millis(199));
    assert!(!kinds(&net.events(server)).contains(&EventKind::HandshakeFailedNoDetail));
    net.run_for(Duration::from_millis(2));
    let k = kinds(&net.events(server));
    assert!(k.contains(&EventKind::HandshakeFailedNoDetail), "{k:?}");
}

#[test]
fn accept_and_close_failures_are_monitor_events() {
    let mut net = Net::new(13);
    let s = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.monitor(s);
    net.get(s).handle_accept_failed("tcp://127.0.0.1:5", 24);
    net.get(s).handle_close_failed("ipc:///x", 13);
    let e = net.events(s);
    assert_eq!(kinds(&e), [EventKind::AcceptFailed, EventKind::CloseFailed]);
    assert_eq!(e[0].value, 24);
    assert_eq!(e[1].endpoint, "ipc:///x");
    // Binding the same endpoint twice is BIND_FAILED.
    net.bind(s, "tcp://*:4000").unwrap();
    let t = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.monitor(t);
    assert!(net.bind(t, "tcp://*:4000").is_err());
    assert_eq!(kinds(&net.events(t)), [EventKind::BindFailed]);
}

/// Stopping the monitor queues MONITOR_STOPPED after what is waiting, and once that is read
/// the socket keeps no queue: later events are not recorded. Turning it on twice keeps what it
/// holds.
#[test]
fn stopping_the_monitor_ends_its_stream_with_monitor_stopped() {
    use omq_core::{Action, Socket};
    let now = std::time::Instant::now();
    let mut s = Socket::new(SocketType::Dealer, Options::default(), 1).unwrap();
    assert_eq!(s.monitor_queued(), None);
    s.set_monitor(true);
    s.connect("tcp://127.0.0.1:5555", now).unwrap();
    let pipe = match s.poll_action() {
        Some(Action::Dial { pipe, .. }) => pipe,
        a => panic!("{a:?}"),
    };
    s.handle_dialing(pipe);
    s.set_monitor(true);
    assert_eq!(s.monitor_queued(), Some(1));
    s.set_monitor(false);
    assert_eq!(s.monitor_queued(), Some(2));
    let k: Vec<_> = std::iter::from_fn(|| s.poll_monitor())
        .map(|e| e.kind)
        .collect();
    assert_eq!(k, [EventKind::ConnectDelayed, EventKind::MonitorStopped]);
    assert_eq!(s.monitor_queued(), None);
    s.handle_connected(pipe, now).unwrap();
    assert_eq!(s.monitor_queued(), None);
    assert!(s.poll_monitor().is_none());
}

/// HANDSHAKE_SUCCEEDED names the peer: its socket type, and its routing id where it announced
/// one (an empty Identity is no routing id).
#[test]
fn handshake_events_name_the_peer_and_its_routing_id() {
    let mut net = Net::new(7);
    let server = net.socket(SocketType::Router, Options::default()).unwrap();
    let named = net
        .socket(
            SocketType::Dealer,
            Options::default().routing_id(bytes::Bytes::from_static(b"abc")),
        )
        .unwrap();
    let anonymous = net.socket(SocketType::Dealer, Options::default()).unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    net.connect(named, &ep).unwrap();
    net.run_for(MS10);
    net.connect(anonymous, &ep).unwrap();
    net.run_for(MS10);
    let peers: Vec<_> = net
        .events(server)
        .into_iter()
        .filter(|e| e.kind == EventKind::HandshakeSucceeded)
        .map(|e| e.peer.expect("a handshake event names its peer"))
        .collect();
    assert_eq!(peers.len(), 2);
    assert_eq!(peers[0].routing_id.as_deref(), Some(&b"abc"[..]));
    assert_eq!(peers[1].routing_id, None);
    assert!(peers.iter().all(|p| p.socket_type == SocketType::Dealer));
}

/// A message a socket could not send comes back whole with the error.
#[test]
fn a_refused_send_gives_the_message_back() {
    let mut s = omq_core::Socket::new(SocketType::Pull, Options::default(), 1).unwrap();
    let msg = Message::multipart(["a", "bc"]);
    let err = s.send(msg.clone()).unwrap_err();
    assert!(matches!(err, omq_core::SendError::NotSupported(_)));
    assert_eq!(err.into_message(), msg);
    s.close();
    let err = s.send(msg.clone()).unwrap_err();
    assert_eq!(err.into_message(), msg);
}

/// unbind finds a bound endpoint by the address given to bind or by the one it resolved to,
/// and only that one; disconnect finds a connect by its text, and only that one.
#[test]
fn unbind_and_disconnect_take_only_the_endpoint_named() {
    use omq_core::{Action, Socket, SocketError};
    let now = std::time::Instant::now();
    let mut s = Socket::new(SocketType::Pull, Options::default(), 1).unwrap();
    s.bind("tcp://*:0").unwrap();
    s.handle_bound("tcp://*:0", "tcp://0.0.0.0:4000");
    s.bind("tcp://127.0.0.1:5000").unwrap();
    s.handle_bound("tcp://127.0.0.1:5000", "tcp://127.0.0.1:5000");
    assert!(matches!(
        s.unbind("tcp://127.0.0.1:9"),
        Err(SocketError::NotBound(_))
    ));
    assert_eq!(
        s.unbind("tcp://127.0.0.1:5000").unwrap(),
        "tcp://127.0.0.1:5000"
    );
    assert_eq!(s.unbind("tcp://*:0").unwrap(), "tcp://0.0.0.0:4000");
    assert!(s.unbind("tcp://0.0.0.0:4000").is_err());

    let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    let dial = |s: &mut Socket, ep: &str| {
        s.connect(ep, now).unwrap();
        match s.poll_action() {
            Some(Action::Dial { pipe, .. }) => pipe,
            a => panic!("{a:?}"),
        }
    };
    let a = dial(&mut s, "tcp://127.0.0.1:5001");
    let b = dial(&mut s, "tcp://127.0.0.1:5002");
    assert!(matches!(
        s.disconnect("tcp://127.0.0.1:9"),
        Err(SocketError::NotConnected(_))
    ));
    assert!(s.pipes().get(a).is_some() && s.pipes().get(b).is_some());
    s.disconnect("tcp://127.0.0.1:5002").unwrap();
    assert!(s.pipes().get(a).is_some() && s.pipes().get(b).is_none());
}

/// What LINGER waits for: messages queued for a peer whether or not it is connected yet, and
/// commands (a SUB's subscriptions) waiting to go; nothing once all has been handed to the
/// connection.
#[test]
fn pending_output_is_what_linger_waits_for() {
    use omq_core::{Action, PeerInfo, Socket};
    let now = std::time::Instant::now();
    let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    assert!(!s.has_pending_output());
    s.connect("tcp://127.0.0.1:5555", now).unwrap();
    let pipe = match s.poll_action() {
        Some(Action::Dial { pipe, .. }) => pipe,
        a => panic!("{a:?}"),
    };
    assert!(!s.has_pending_output(), "an empty pipe");
    s.send(Message::from("x")).unwrap();
    assert!(
        s.has_pending_output(),
        "queued before the connection exists"
    );
    s.handle_connected(pipe, now).unwrap();
    assert!(s.has_pending_output(), "queued during the handshake");
    s.handle_ready(pipe, PeerInfo::new(SocketType::Pull), now);
    assert!(s.has_pending_output());
    while s.poll_transmit(pipe).is_some() {}
    assert!(!s.has_pending_output(), "all handed to the connection");

    let mut sub = Socket::new(SocketType::Sub, Options::default(), 1).unwrap();
    let (pipe, _) = sub.handle_accepted("tcp://127.0.0.1:5556", now);
    sub.handle_ready(pipe, PeerInfo::new(SocketType::Pub), now);
    while sub.poll_transmit(pipe).is_some() {}
    assert!(!sub.has_pending_output());
    sub.subscribe(b"topic").unwrap();
    assert!(sub.has_pending_output(), "a SUBSCRIBE waiting to go");
    while sub.poll_transmit(pipe).is_some() {}
    assert!(!sub.has_pending_output());
}

/// The driver is told to close a connection only when the socket drops a pipe that has one:
/// not for a connection that has already ended, nor for a pipe never connected.
#[test]
fn close_actions_only_for_live_connections() {
    use omq_core::{Action, PeerInfo, Socket};
    let now = std::time::Instant::now();
    let closes = |s: &mut Socket| {
        std::iter::from_fn(|| s.poll_action())
            .filter(|a| matches!(a, Action::Close { .. }))
            .count()
    };
    let mut s = Socket::new(SocketType::Pull, Options::default(), 1).unwrap();
    assert!(!s.is_closed());
    s.bind("tcp://127.0.0.1:5557").unwrap();
    s.handle_bound("tcp://127.0.0.1:5557", "tcp://127.0.0.1:5557");
    let (ended, _) = s.handle_accepted("tcp://127.0.0.1:5557", now);
    s.handle_ready(ended, PeerInfo::new(SocketType::Push), now);
    let (live, _) = s.handle_accepted("tcp://127.0.0.1:5557", now);
    s.handle_ready(live, PeerInfo::new(SocketType::Push), now);
    closes(&mut s);
    s.handle_closed(ended, &omq_core::CloseReason::Eof, now);
    assert_eq!(closes(&mut s), 0, "that connection has ended already");
    s.unbind("tcp://127.0.0.1:5557").unwrap();
    assert_eq!(closes(&mut s), 1, "the live one is closed");

    let mut s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    s.connect("tcp://127.0.0.1:5558", now).unwrap();
    closes(&mut s);
    s.disconnect("tcp://127.0.0.1:5558").unwrap();
    assert_eq!(closes(&mut s), 0, "never connected: nothing to close");
    s.close();
    assert!(s.is_closed());
}

/// An inproc bind has no listener: libzmq's monitor reports neither LISTENING nor CLOSED for
/// it, on unbind or on close; a tcp bind beside it reports both.
#[test]
fn an_inproc_bind_reports_no_listener_events() {
    let mut s = omq_core::Socket::new(SocketType::Pull, Options::default(), 1).unwrap();
    s.set_monitor(true);
    for (requested, resolved) in [
        ("inproc://a", "inproc://a"),
        ("inproc://b", "inproc://b"),
        ("tcp://127.0.0.1:*", "tcp://127.0.0.1:4000"),
    ] {
        s.bind(requested).unwrap();
        s.handle_bound(requested, resolved);
    }
    s.unbind("inproc://a").unwrap();
    s.close();
    let mut seen = Vec::new();
    while let Some(e) = s.poll_monitor() {
        seen.push((e.kind, e.endpoint));
    }
    assert_eq!(
        seen,
        [
            (EventKind::Listening, "tcp://127.0.0.1:4000".to_string()),
            (EventKind::Closed, "tcp://127.0.0.1:4000".to_string()),
            (EventKind::MonitorStopped, String::new()),
        ]
    );
}
