//! omq-core sessions against a real libzmq: handshake, multipart messages both ways, and the
//! exact greeting and READY bytes libzmq sends and accepts.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use conformance::blocking::BlockingSession;
use conformance::libzmq_peer::LibzmqPeer;
use omq_core::wire::greeting::GREETING_LEN;
use omq_core::{Message, Session, SessionConfig, SocketType};

const T: Duration = Duration::from_secs(10);

fn peer() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn omq_session_connects_to_libzmq_and_messages_cross_both_ways() {
    let mut z = peer();
    z.socket(1, "ROUTER").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let stream = TcpStream::connect(("127.0.0.1", port_of(&ep))).unwrap();
    let mut cfg = SessionConfig::new(SocketType::Dealer);
    cfg.routing_id = Bytes::from_static(b"omq-dealer");
    cfg.metadata
        .insert("X-Hello", Bytes::from_static(b"from omq"));
    let mut s = BlockingSession::new(stream, cfg).unwrap();
    s.handshake(T).unwrap();
    assert_eq!(s.session.peer().unwrap().socket_type, SocketType::Router);

    // omq → libzmq: the ROUTER sees our routing id, then every part, empty ones included.
    let parts: [&[u8]; 3] = [b"", b"\x00\x01binary\xff", &[7u8; 1000]];
    s.send(&Message::multipart(parts)).unwrap();
    let got = z.recv(1, T).unwrap();
    assert_eq!(got[0], b"omq-dealer");
    assert_eq!(&got[1..], &parts.map(<[u8]>::to_vec)[..]);

    // libzmq → omq.
    let big = vec![0xabu8; 70_000];
    z.send(1, &[b"omq-dealer", b"reply", b"", &big]).unwrap();
    let m = s.recv(T).unwrap();
    let want: Vec<&[u8]> = vec![b"reply", b"", &big];
    assert_eq!(m, Message::multipart(want));
    assert_eq!(m.property("Socket-Type"), Some(&b"ROUTER"[..]));
}

#[test]
fn libzmq_connects_to_an_omq_session() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut z = peer();
    z.socket(1, "PUSH").unwrap();
    z.socket(2, "PULL").unwrap();
    z.connect(1, &format!("tcp://127.0.0.1:{port}")).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let mut s = BlockingSession::new(stream, SessionConfig::new(SocketType::Pull)).unwrap();
    s.handshake(T).unwrap();
    z.send(1, &[b"one", b"two"]).unwrap();
    assert_eq!(s.recv(T).unwrap(), Message::multipart(["one", "two"]));

    // And the other way, to a libzmq PULL that binds.
    let ep = z.bind(2, "tcp://127.0.0.1:*").unwrap();
    let stream = TcpStream::connect(("127.0.0.1", port_of(&ep))).unwrap();
    let mut push = BlockingSession::new(stream, SessionConfig::new(SocketType::Push)).unwrap();
    push.handshake(T).unwrap();
    push.send(&Message::multipart(["x", "", "z"])).unwrap();
    assert_eq!(
        z.recv(2, T).unwrap(),
        vec![b"x".to_vec(), vec![], b"z".to_vec()]
    );
}

#[test]
fn incompatible_libzmq_peer_is_refused() {
    let mut z = peer();
    z.socket(1, "PUB").unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let stream = TcpStream::connect(("127.0.0.1", port_of(&ep))).unwrap();
    let mut s = BlockingSession::new(stream, SessionConfig::new(SocketType::Push)).unwrap();
    let err = s.handshake(T).unwrap_err();
    assert!(
        matches!(
            err,
            conformance::blocking::DriveError::Session(omq_core::SessionError::Incompatible { .. })
                | conformance::blocking::DriveError::Closed
        ),
        "{err}"
    );
}

/// Reads exactly `n` bytes from a raw stream, with a deadline.
fn read_exact(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    stream.set_read_timeout(Some(T)).unwrap();
    stream.read_exact(&mut out).unwrap();
    out
}

/// What an omq session of `t` sends first: its whole greeting and its READY frame, once it has
/// seen a peer greeting.
fn omq_opening(t: SocketType, routing_id: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let now = Instant::now();
    let mut cfg = SessionConfig::new(t);
    cfg.routing_id = Bytes::copy_from_slice(routing_id);
    let mut s = Session::new(cfg, now);
    let mut fake_peer = omq_core::wire::greeting::Greeting::ours(
        omq_core::wire::greeting::MechanismName::NULL,
        false,
    )
    .encode()
    .to_vec();
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&fake_peer);
    s.handle_input(&mut buf, now).unwrap();
    let mut out = Vec::new();
    while let Some(c) = s.poll_transmit() {
        out.extend_from_slice(&c);
    }
    fake_peer.clear();
    let ready = out.split_off(GREETING_LEN);
    (out, ready)
}

/// libzmq's bytes, captured over a raw TCP connection: its greeting and READY for a socket of
/// type `t` (with routing id `rid`), after we send it a plain ZMTP 3.1 NULL greeting.
fn libzmq_opening(t: &str, rid: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut z = peer();
    z.socket(1, t).unwrap();
    if !rid.is_empty() {
        z.setsockopt(1, "ROUTING_ID", rid).unwrap();
    }
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let mut raw = TcpStream::connect(("127.0.0.1", port_of(&ep))).unwrap();
    // Stage by stage, as a careful peer: signature, then the rest.
    let ours = omq_core::wire::greeting::Greeting::ours(
        omq_core::wire::greeting::MechanismName::NULL,
        false,
    )
    .encode();
    raw.write_all(&ours[..10]).unwrap();
    let sig = read_exact(&mut raw, 10);
    raw.write_all(&ours[10..]).unwrap();
    let mut greeting = sig;
    greeting.extend(read_exact(&mut raw, GREETING_LEN - 10));
    // READY: short command frame.
    let hdr = read_exact(&mut raw, 2);
    assert_eq!(hdr[0], 0x04, "READY must be a short command frame");
    let body = read_exact(&mut raw, hdr[1] as usize);
    let mut ready = hdr;
    ready.extend(body);
    (greeting, ready)
}

#[test]
fn greeting_and_ready_bytes_match_libzmq() {
    for (t, name, rid) in [
        (SocketType::Dealer, "DEALER", &b""[..]),
        (SocketType::Router, "ROUTER", &b"rid-1"[..]),
        (SocketType::Req, "REQ", &b""[..]),
        (SocketType::Rep, "REP", &b""[..]),
        (SocketType::Push, "PUSH", &b""[..]),
        (SocketType::Pull, "PULL", &b""[..]),
        (SocketType::Pub, "PUB", &b""[..]),
        (SocketType::Sub, "SUB", &b""[..]),
        (SocketType::XPub, "XPUB", &b""[..]),
        (SocketType::XSub, "XSUB", &b""[..]),
        (SocketType::Pair, "PAIR", &b""[..]),
    ] {
        let (z_greeting, z_ready) = libzmq_opening(name, rid);
        let (o_greeting, o_ready) = omq_opening(t, rid);
        // Everything but the padding (bytes 1..=8), which receivers ignore. libzmq sets as-server
        // on the accepting side of NULL; compare the rest of the greeting except that byte.
        assert_eq!(z_greeting[0], o_greeting[0], "{name}");
        assert_eq!(z_greeting[9..32], o_greeting[9..32], "{name} greeting");
        assert_eq!(z_greeting[33..], o_greeting[33..], "{name} filler");
        assert_eq!(z_ready, o_ready, "{name} READY");
    }
}

/// Fixtures written from spec 23 and checked against libzmq above: the READY of a DEALER with
/// an empty routing id, byte for byte.
#[test]
fn ready_fixture_from_the_spec() {
    let (_, ready) = omq_opening(SocketType::Dealer, b"");
    let mut want = vec![0x04, 0x29, 0x05];
    want.extend_from_slice(b"READY");
    want.extend_from_slice(b"\x0bSocket-Type\x00\x00\x00\x06DEALER");
    want.extend_from_slice(b"\x08Identity\x00\x00\x00\x00");
    assert_eq!(ready, want);
}
