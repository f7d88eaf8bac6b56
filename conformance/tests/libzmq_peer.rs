//! The libzmq peer harness itself: if these fail, every interop test would.

use std::thread;
use std::time::{Duration, Instant};

use conformance::libzmq_peer::{LibzmqPeer, PeerError};

const SECOND: Duration = Duration::from_secs(1);

fn spawn() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn reports_version_and_curve() {
    let mut peer = spawn();
    assert!(
        peer.version().starts_with("4."),
        "unexpected libzmq version {}",
        peer.version()
    );
    assert!(
        peer.has_curve(),
        "this libzmq lacks CURVE (libsodium); install Debian's libzmq3-dev"
    );
    let reply = peer.cmd("version").unwrap();
    assert_eq!(reply, format!("libzmq {} curve=1", peer.version()));
}

#[test]
fn push_pull_carries_empty_and_binary_parts() {
    let mut peer = spawn();
    peer.socket(1, "PUSH").unwrap();
    peer.socket(2, "PULL").unwrap();
    let endpoint = peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    assert!(
        endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with(":*"),
        "bind should return the resolved endpoint, got {endpoint}"
    );
    assert_eq!(peer.getsockopt(1, "LAST_ENDPOINT").unwrap(), endpoint);
    peer.connect(2, &endpoint).unwrap();

    let parts: [&[u8]; 3] = [b"", b"\x00\xff\x0a", b"tail \n part"];
    peer.send(1, &parts).unwrap();
    let got = peer.recv(2, 5 * SECOND).unwrap();
    assert_eq!(got, parts.map(<[u8]>::to_vec));
    assert_eq!(peer.getsockopt_int(2, "RCVMORE").unwrap(), 0);
}

#[test]
fn recv_timeout_is_distinguishable_and_prompt() {
    let mut peer = spawn();
    peer.socket(1, "PULL").unwrap();
    peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    let start = Instant::now();
    let err = peer.recv(1, Duration::from_millis(100)).unwrap_err();
    let took = start.elapsed();
    assert!(err.is_timeout(), "expected a timeout, got {err}");
    assert!(matches!(err, PeerError::Timeout { .. }));
    assert!(
        took >= Duration::from_millis(90) && took < 5 * SECOND,
        "a 100 ms recv took {took:?}"
    );
    // The peer is still in step after a timeout.
    assert_eq!(peer.getsockopt_int(1, "RCVHWM").unwrap(), 1000);
}

#[test]
fn malformed_commands_get_errors_not_crashes() {
    let mut peer = spawn();
    for line in [
        "",
        "frobnicate 1",
        "socket",
        "socket 1 NOT_A_TYPE",
        "socket 99999999 PAIR",
        "send 1 00",
        "recv x 10",
    ] {
        let err = peer.cmd(line).unwrap_err();
        assert_eq!(err.errno(), Some("EINVAL"), "`{line}` gave {err}");
    }
    peer.socket(1, "PAIR").unwrap();
    for line in [
        "socket 1 PAIR",
        "send 1 zz",
        "send 1 abc",
        "send 1 dontwait",
        "setsockopt 1 SNDHWM lots",
        "setsockopt 1 NO_SUCH_OPTION 1",
        "recv 1 soon",
    ] {
        let err = peer.cmd(line).unwrap_err();
        assert_eq!(err.errno(), Some("EINVAL"), "`{line}` gave {err}");
    }
    // libzmq's own refusals come back with its errno.
    let err = peer.connect(1, "nonsense://x").unwrap_err();
    assert_eq!(err.errno(), Some("EPROTONOSUPPORT"), "{err}");
    // A line break can't be smuggled into a command.
    assert!(matches!(
        peer.cmd("version\nexit"),
        Err(PeerError::Protocol { .. })
    ));
    // And the peer still works.
    assert!(peer.cmd("version").is_ok());
}

#[test]
fn socket_options_round_trip() {
    let mut peer = spawn();
    peer.socket(1, "DEALER").unwrap();
    peer.setsockopt(1, "SNDHWM", 7).unwrap();
    assert_eq!(peer.getsockopt_int(1, "SNDHWM").unwrap(), 7);
    peer.setsockopt(1, "ROUTING_ID", b"\x01id\xff").unwrap();
    assert_eq!(
        peer.getsockopt_bytes(1, "ROUTING_ID").unwrap(),
        b"\x01id\xff"
    );
    peer.setsockopt(1, "ZAP_DOMAIN", "global").unwrap();
    assert_eq!(peer.getsockopt(1, "ZAP_DOMAIN").unwrap(), "str:global");
    // Out of range for libzmq: its EINVAL, not ours.
    let err = peer.setsockopt(1, "HEARTBEAT_TTL", 6_553_600).unwrap_err();
    assert_eq!(err.errno(), Some("EINVAL"), "{err}");
}

#[test]
fn try_send_reports_would_block() {
    let mut peer = spawn();
    peer.socket(1, "PUSH").unwrap();
    // No peer connected: PUSH has nowhere to put it.
    assert!(!peer.try_send(1, &[b"x"]).unwrap());
}

#[test]
fn two_peers_run_concurrently() {
    let workers: Vec<_> = (0..2)
        .map(|_| {
            thread::spawn(|| {
                let mut server = spawn();
                let mut client = spawn();
                assert_ne!(server.pid(), client.pid());
                server.socket(1, "REP").unwrap();
                let endpoint = server.bind(1, "tcp://127.0.0.1:*").unwrap();
                client.socket(1, "REQ").unwrap();
                client.connect(1, &endpoint).unwrap();
                client.send(1, &[b"ping"]).unwrap();
                assert_eq!(server.recv(1, 5 * SECOND).unwrap(), [b"ping"]);
                server.send(1, &[b"pong"]).unwrap();
                assert_eq!(client.recv(1, 5 * SECOND).unwrap(), [b"pong"]);
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}

#[test]
fn monitor_reports_listening_and_the_end() {
    let mut peer = spawn();
    peer.socket(1, "PULL").unwrap();
    peer.monitor(1).unwrap();
    let endpoint = peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    let (name, _fd, ep) = peer.event(1, 5 * SECOND).unwrap();
    assert_eq!(
        (name.as_str(), ep.as_str()),
        ("LISTENING", endpoint.as_str())
    );
    assert!(peer
        .event(1, Duration::from_millis(50))
        .unwrap_err()
        .is_timeout());
    peer.close(1).unwrap();
    let mut names = Vec::new();
    while let Ok((name, _, _)) = peer.event(1, 5 * SECOND) {
        let stopped = name == "MONITOR_STOPPED";
        names.push(name);
        if stopped {
            break;
        }
    }
    assert_eq!(names, ["CLOSED", "MONITOR_STOPPED"]);
}

#[test]
fn recv_meta_reads_message_properties() {
    let mut peer = spawn();
    peer.socket(1, "PUSH").unwrap();
    peer.socket(2, "PULL").unwrap();
    let endpoint = peer.bind(2, "tcp://127.0.0.1:*").unwrap();
    peer.connect(1, &endpoint).unwrap();
    peer.send(1, &[b"a"]).unwrap();
    let (socket_type, parts) = peer.recv_meta(2, 5 * SECOND, "Socket-Type").unwrap();
    assert_eq!(socket_type.as_deref(), Some("PUSH"));
    assert_eq!(parts, [b"a"]);
    peer.send(1, &[b"b"]).unwrap();
    let (user, _) = peer.recv_meta(2, 5 * SECOND, "User-Id").unwrap();
    assert_eq!(user, None, "NULL mechanism without ZAP has no User-Id");
}

#[test]
fn killed_peer_fails_commands_instead_of_hanging() {
    let mut peer = spawn();
    peer.socket(1, "PAIR").unwrap();
    peer.kill().unwrap();
    let start = Instant::now();
    let err = peer.cmd("version").unwrap_err();
    assert!(matches!(err, PeerError::Exited { .. }), "{err}");
    assert!(start.elapsed() < 5 * SECOND);
}

#[test]
fn drop_ends_the_process() {
    let peer = spawn();
    let pid = peer.pid();
    let start = Instant::now();
    drop(peer);
    assert!(
        start.elapsed() < 3 * SECOND,
        "drop took {:?}",
        start.elapsed()
    );
    // Reaped, so /proc no longer lists it (or lists a different process).
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(!cmdline.contains("zmq_peer"), "peer {pid} still running");
}
