//! omq-core's PLAIN and CURVE against a real libzmq (4.3, with libsodium), both ways: omq as
//! client and as server, multipart messages, heartbeats and subscriptions inside CURVE boxes
//! (which only work if both sides put the COMMAND bit inside the box), omq's authenticator
//! hook against libzmq clients, and a wrong server key seen from libzmq's monitor.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use conformance::blocking::{BlockingSession, DriveError};
use conformance::libzmq_peer::LibzmqPeer;
use omq_core::error::{CurveError, ProtocolError};
use omq_core::mechanism::{
    Credentials, CurveKeyPair, CurvePublicKey, CurveSecretKey, Entropy, MechanismConfig,
};
use omq_core::wire::greeting::{Greeting, MechanismName, GREETING_LEN};
use omq_core::{
    AuthReply, AuthRequest, Message, SessionConfig, SessionError, SessionEvent, SocketType,
};

const T: Duration = Duration::from_secs(10);

/// The CurveZMQ reference keys (libzmq's `zmq_curve` man page and tests).
const CLIENT_PUBLIC: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
const CLIENT_SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
const SERVER_PUBLIC: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const SERVER_SECRET: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

/// errno libzmq reports when a PLAIN server has no ZAP handler to ask.
const EFAULT: i64 = 14;

/// libzmq's monitor value for a box that does not open.
const ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC: i64 = 0x1100_0001;

fn peer() -> LibzmqPeer {
    let p = LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"));
    assert!(p.has_curve(), "this libzmq lacks CURVE (libsodium)");
    p
}

fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

/// Per-connection entropy; fixed per test so runs repeat (a real driver reads the OS).
fn entropy(n: u8) -> Option<Entropy> {
    Some(Entropy::from_bytes([n; 32]))
}

fn keypair(secret: &str) -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_z85(secret).unwrap())
}

fn curve_client(t: SocketType, server_key: &str, n: u8) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::curve_client(
        CurvePublicKey::from_z85(server_key).unwrap(),
        keypair(CLIENT_SECRET),
    );
    c.entropy = entropy(n);
    c
}

fn curve_server(t: SocketType, n: u8) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::curve_server(keypair(SERVER_SECRET));
    c.entropy = entropy(n);
    c
}

/// A libzmq socket `id` of type `kind` as a CURVE server with the reference keys, bound; its
/// port.
fn libzmq_curve_server(z: &mut LibzmqPeer, id: u32, kind: &str) -> u16 {
    z.socket(id, kind).unwrap();
    z.setsockopt(id, "CURVE_SERVER", 1).unwrap();
    z.setsockopt(id, "CURVE_SECRETKEY", SERVER_SECRET).unwrap();
    port_of(&z.bind(id, "tcp://127.0.0.1:*").unwrap())
}

/// A libzmq socket `id` of type `kind` as a CURVE client trusting `server_key`.
fn libzmq_curve_client(z: &mut LibzmqPeer, id: u32, kind: &str, server_key: &str) {
    z.socket(id, kind).unwrap();
    z.setsockopt(id, "CURVE_SERVERKEY", server_key).unwrap();
    z.setsockopt(id, "CURVE_PUBLICKEY", CLIENT_PUBLIC).unwrap();
    z.setsockopt(id, "CURVE_SECRETKEY", CLIENT_SECRET).unwrap();
}

fn connect(port: u16, config: SessionConfig) -> BlockingSession {
    BlockingSession::new(TcpStream::connect(("127.0.0.1", port)).unwrap(), config).unwrap()
}

/// Accepts libzmq socket `id`'s connection to a fresh listener.
fn accept_from(z: &mut LibzmqPeer, id: u32, config: SessionConfig) -> BlockingSession {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    z.connect(id, &format!("tcp://127.0.0.1:{port}")).unwrap();
    let (stream, _) = listener.accept().unwrap();
    BlockingSession::new(stream, config).unwrap()
}

/// Waits for the session's authentication question.
fn await_auth(s: &mut BlockingSession) -> AuthRequest {
    let mut request = None;
    s.run_until(T, |s| {
        let at = s
            .events
            .iter()
            .position(|e| matches!(e, SessionEvent::AuthRequest(_)));
        if let Some(SessionEvent::AuthRequest(r)) = at.map(|i| s.events.remove(i)) {
            request = Some(*r);
        }
        request.is_some()
    })
    .unwrap();
    request.unwrap()
}

/// Answers it and completes the handshake.
fn answer(s: &mut BlockingSession, reply: AuthReply) -> Result<(), SessionError> {
    s.session.handle_auth_reply(reply, Instant::now())?;
    s.flush().unwrap();
    Ok(())
}

/// The first monitor event of libzmq socket `id` whose name starts with `prefix`.
fn wait_event(z: &mut LibzmqPeer, id: u32, prefix: &str) -> (String, i64) {
    let deadline = Instant::now() + T;
    while Instant::now() < deadline {
        match z.event(id, Duration::from_millis(500)) {
            Ok((name, value, _)) if name.starts_with(prefix) => return (name, value),
            Ok(_) => {}
            Err(e) if e.is_timeout() => {}
            Err(e) => panic!("{e}"),
        }
    }
    panic!("no {prefix}* event from libzmq within {T:?}");
}

#[test]
fn omq_curve_client_talks_to_a_libzmq_curve_server() {
    let mut z = peer();
    let port = libzmq_curve_server(&mut z, 1, "ROUTER");
    let mut cfg = curve_client(SocketType::Dealer, SERVER_PUBLIC, 1);
    cfg.routing_id = Bytes::from_static(b"omq-curve");
    let mut s = connect(port, cfg);
    s.handshake(T).unwrap();
    assert_eq!(s.session.peer().unwrap().socket_type, SocketType::Router);

    let big = vec![0xa5u8; 100_000];
    let parts: [&[u8]; 4] = [b"", b"\x00\x01secret\xff", &big, b"end"];
    s.send(&Message::multipart(parts)).unwrap();
    let got = z.recv(1, T).unwrap();
    assert_eq!(
        got[0], b"omq-curve",
        "libzmq read our Identity from INITIATE"
    );
    assert_eq!(&got[1..], &parts.map(<[u8]>::to_vec)[..]);

    z.send(1, &[b"omq-curve", b"reply", b"", &big]).unwrap();
    let m = s.recv(T).unwrap();
    let want: [&[u8]; 3] = [b"reply", b"", &big];
    assert_eq!(m, Message::multipart(want));
    assert_eq!(m.property("Socket-Type"), Some(&b"ROUTER"[..]));

    // Application properties travel in INITIATE too (read from a DEALER: a ROUTER's first
    // part is its routing id, which carries no properties).
    let port = libzmq_curve_server(&mut z, 2, "DEALER");
    let mut cfg = curve_client(SocketType::Dealer, SERVER_PUBLIC, 10);
    cfg.metadata.insert("X-Tenant", Bytes::from_static(b"blue"));
    let mut s = connect(port, cfg);
    s.handshake(T).unwrap();
    s.send(&Message::from("tagged")).unwrap();
    let (tenant, got) = z.recv_meta(2, T, "X-Tenant").unwrap();
    assert_eq!(tenant.as_deref(), Some("blue"));
    assert_eq!(got, vec![b"tagged".to_vec()]);
}

#[test]
fn a_libzmq_curve_client_talks_to_an_omq_curve_server() {
    let mut z = peer();
    libzmq_curve_client(&mut z, 1, "DEALER", SERVER_PUBLIC);
    z.setsockopt(1, "ROUTING_ID", "zmq-client").unwrap();
    let mut s = accept_from(&mut z, 1, curve_server(SocketType::Router, 2));
    s.handshake(T).unwrap();
    let peer = s.session.peer().unwrap();
    assert_eq!(peer.socket_type, SocketType::Dealer);
    assert_eq!(peer.routing_id.as_deref(), Some(&b"zmq-client"[..]));

    let big = vec![0x3cu8; 70_000];
    z.send(1, &[b"first", b"", &big]).unwrap();
    let want: [&[u8]; 3] = [b"first", b"", &big];
    assert_eq!(s.recv(T).unwrap(), Message::multipart(want));
    s.send(&Message::multipart(["x", "", "zz"])).unwrap();
    assert_eq!(
        z.recv(1, T).unwrap(),
        vec![b"x".to_vec(), vec![], b"zz".to_vec()]
    );
}

#[test]
fn omq_curve_server_authenticates_a_libzmq_client_by_key() {
    let mut z = peer();
    libzmq_curve_client(&mut z, 1, "PUSH", SERVER_PUBLIC);
    let mut cfg = curve_server(SocketType::Pull, 3);
    cfg.authenticate = true;
    let mut s = accept_from(&mut z, 1, cfg);
    let req = await_auth(&mut s);
    assert_eq!(
        req.credentials,
        Credentials::Curve {
            client_key: CurvePublicKey::from_z85(CLIENT_PUBLIC).unwrap()
        }
    );
    answer(&mut s, AuthReply::allow().user_id("known-client")).unwrap();
    s.handshake(T).unwrap();
    z.send(1, &[b"authenticated"]).unwrap();
    let m = s.recv(T).unwrap();
    assert_eq!(m, Message::from("authenticated"));
    assert_eq!(m.property("User-Id"), Some(&b"known-client"[..]));
}

#[test]
fn omq_curve_server_refusal_reaches_libzmq_as_an_auth_failure() {
    let mut z = peer();
    libzmq_curve_client(&mut z, 1, "DEALER", SERVER_PUBLIC);
    z.monitor(1).unwrap();
    let mut cfg = curve_server(SocketType::Dealer, 4);
    cfg.authenticate = true;
    let mut s = accept_from(&mut z, 1, cfg);
    await_auth(&mut s);
    let err = answer(&mut s, AuthReply::deny("not on the list")).unwrap_err();
    assert!(matches!(err, SessionError::AuthFailed { .. }), "{err}");
    s.flush().unwrap();
    assert_eq!(
        wait_event(&mut z, 1, "HANDSHAKE_FAILED"),
        ("HANDSHAKE_FAILED_AUTH".to_owned(), 400)
    );
}

#[test]
fn heartbeats_cross_curve_both_ways_as_commands() {
    let mut z = peer();
    z.socket(1, "DEALER").unwrap();
    z.setsockopt(1, "HEARTBEAT_IVL", 50).unwrap();
    z.setsockopt(1, "HEARTBEAT_TIMEOUT", 1000).unwrap();
    z.setsockopt(1, "CURVE_SERVER", 1).unwrap();
    z.setsockopt(1, "CURVE_SECRETKEY", SERVER_SECRET).unwrap();
    let port = port_of(&z.bind(1, "tcp://127.0.0.1:*").unwrap());
    z.monitor(1).unwrap();
    let mut cfg = curve_client(SocketType::Dealer, SERVER_PUBLIC, 5);
    cfg.heartbeat_ivl = Some(Duration::from_millis(50));
    cfg.heartbeat_timeout = Some(Duration::from_millis(1000));
    let mut s = connect(port, cfg);
    s.handshake(T).unwrap();
    // About 30 PINGs each way, and their PONGs, inside MESSAGE boxes. Had either side lost
    // the COMMAND bit, the other would deliver "\x04PING..." as a message, or time out.
    let until = Instant::now() + Duration::from_millis(1500);
    let r = s.run_until(T, |_| Instant::now() >= until);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(s.events, vec![SessionEvent::HandshakeSucceeded]);
    // omq did PING (one per 50 ms; a wide margin for a busy machine), and libzmq, which would
    // not deliver them as messages (checked below), answered or we would have timed out.
    let pings = s.session.pings_sent();
    assert!(pings >= 10, "omq sent {pings} PINGs in 1.5 s");
    assert!(
        z.recv(1, Duration::from_millis(100))
            .unwrap_err()
            .is_timeout(),
        "libzmq delivered a heartbeat as a message"
    );
    s.send(&Message::from("after heartbeats")).unwrap();
    assert_eq!(z.recv(1, T).unwrap(), vec![b"after heartbeats".to_vec()]);
    z.send(1, &[b"back"]).unwrap();
    assert_eq!(s.recv(T).unwrap(), Message::from("back"));
    // libzmq saw one handshake and no disconnection.
    assert_eq!(wait_event(&mut z, 1, "HANDSHAKE").0, "HANDSHAKE_SUCCEEDED");
    while let Ok((name, _, _)) = z.event(1, Duration::from_millis(100)) {
        assert!(!name.starts_with("DISCONNECTED"), "libzmq dropped us");
    }
}

#[test]
fn subscriptions_cross_curve_both_ways() {
    // omq SUB (CURVE client) to a libzmq PUB: our SUBSCRIBE command, boxed, filters libzmq.
    let mut z = peer();
    let port = libzmq_curve_server(&mut z, 1, "PUB");
    let mut s = connect(port, curve_client(SocketType::Sub, SERVER_PUBLIC, 6));
    s.handshake(T).unwrap();
    s.session.send_subscribe(b"weather").unwrap();
    s.flush().unwrap();
    // Subscriptions reach a PUB asynchronously: publish until one comes through.
    let deadline = Instant::now() + T;
    let got = loop {
        assert!(Instant::now() < deadline, "subscription never took effect");
        z.send(1, &[b"sports: 1-0"]).unwrap();
        z.send(1, &[b"weather: rain"]).unwrap();
        if let Ok(m) = s.recv(Duration::from_millis(50)) {
            break m;
        }
    };
    assert_eq!(got, Message::from("weather: rain"));

    // A libzmq SUB (CURVE client) to an omq XPUB: its SUBSCRIBE arrives as a command.
    libzmq_curve_client(&mut z, 2, "SUB", SERVER_PUBLIC);
    let mut s = accept_from(&mut z, 2, curve_server(SocketType::XPub, 7));
    s.handshake(T).unwrap();
    z.setsockopt(2, "SUBSCRIBE", "news").unwrap();
    s.events.clear();
    s.run_until(T, |s| {
        s.events
            .iter()
            .any(|e| matches!(e, SessionEvent::Subscribe(_)))
    })
    .unwrap();
    assert_eq!(
        s.events,
        vec![SessionEvent::Subscribe(Bytes::from_static(b"news"))]
    );
    s.send(&Message::from("news: omq speaks CURVE")).unwrap();
    assert_eq!(
        z.recv(2, T).unwrap(),
        vec![b"news: omq speaks CURVE".to_vec()]
    );
}

#[test]
fn a_wrong_server_key_fails_the_handshake_on_both_sides() {
    let wrong = CurveKeyPair::from_secret(CurveSecretKey::from_bytes([7; 32]));

    // omq client with the wrong key: libzmq cannot open our HELLO and says so.
    let mut z = peer();
    z.socket(1, "ROUTER").unwrap();
    z.setsockopt(1, "CURVE_SERVER", 1).unwrap();
    z.setsockopt(1, "CURVE_SECRETKEY", SERVER_SECRET).unwrap();
    z.monitor(1).unwrap();
    let port = port_of(&z.bind(1, "tcp://127.0.0.1:*").unwrap());
    let mut s = connect(
        port,
        curve_client(SocketType::Dealer, &wrong.public().to_z85(), 8),
    );
    let err = s.handshake(T).unwrap_err();
    assert!(
        matches!(err, DriveError::Closed | DriveError::Io(_)),
        "{err}"
    );
    assert!(!s.session.is_ready());
    assert_eq!(
        wait_event(&mut z, 1, "HANDSHAKE_FAILED"),
        (
            "HANDSHAKE_FAILED_PROTOCOL".to_owned(),
            ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
        )
    );

    // libzmq client with the wrong key: we cannot open its HELLO and say why.
    libzmq_curve_client(&mut z, 2, "DEALER", &wrong.public().to_z85());
    let mut s = accept_from(&mut z, 2, curve_server(SocketType::Dealer, 9));
    let err = s.handshake(T).unwrap_err();
    assert!(
        matches!(
            err,
            DriveError::Session(SessionError::Protocol(ProtocolError::Curve(
                CurveError::HelloBox
            )))
        ),
        "{err}"
    );
}

/// libzmq's PLAIN client's HELLO and INITIATE, captured by a raw server that answers WELCOME.
fn libzmq_plain_client_commands() -> (Vec<u8>, Vec<u8>) {
    let mut z = peer();
    z.socket(1, "DEALER").unwrap();
    z.setsockopt(1, "PLAIN_USERNAME", "admin").unwrap();
    z.setsockopt(1, "PLAIN_PASSWORD", "password").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    z.connect(1, &format!("tcp://127.0.0.1:{port}")).unwrap();
    let (mut raw, _) = listener.accept().unwrap();
    raw.set_read_timeout(Some(T)).unwrap();
    raw.write_all(&Greeting::ours(MechanismName::PLAIN, true).encode())
        .unwrap();
    let mut greeting = [0u8; GREETING_LEN];
    raw.read_exact(&mut greeting).unwrap();
    let read_frame = |raw: &mut TcpStream| {
        let mut hdr = [0u8; 2];
        raw.read_exact(&mut hdr).unwrap();
        let mut body = vec![0u8; usize::from(hdr[1])];
        raw.read_exact(&mut body).unwrap();
        [&hdr[..], &body].concat()
    };
    let hello = read_frame(&mut raw);
    raw.write_all(b"\x04\x08\x07WELCOME").unwrap();
    let initiate = read_frame(&mut raw);
    (hello, initiate)
}

/// The same two commands from an omq PLAIN client, fed a server greeting and a WELCOME.
fn omq_plain_client_commands() -> (Vec<u8>, Vec<u8>) {
    let now = Instant::now();
    let mut cfg = SessionConfig::new(SocketType::Dealer);
    cfg.mechanism = MechanismConfig::plain_client("admin", "password").unwrap();
    let mut s = omq_core::Session::new(cfg, now);
    let take = |s: &mut omq_core::Session| -> Vec<u8> {
        std::iter::from_fn(|| s.poll_transmit())
            .flat_map(|c| c.to_vec())
            .collect()
    };
    let mut buf = BytesMut::from(&Greeting::ours(MechanismName::PLAIN, true).encode()[..]);
    s.handle_input(&mut buf, now).unwrap();
    let hello = take(&mut s).split_off(GREETING_LEN);
    buf.extend_from_slice(b"\x04\x08\x07WELCOME");
    s.handle_input(&mut buf, now).unwrap();
    (hello, take(&mut s))
}

#[test]
fn omq_plain_client_speaks_libzmqs_plain() {
    // Byte for byte what libzmq's PLAIN client sends.
    assert_eq!(omq_plain_client_commands(), libzmq_plain_client_commands());

    // A libzmq PLAIN server parses our HELLO (a malformed one would be refused with
    // MALFORMED_COMMAND_HELLO), then stops for want of a ZAP handler: libzmq 4.3.4's PLAIN
    // server refuses every client when none runs (EFAULT), unlike its CURVE server.
    let mut z = peer();
    z.socket(1, "REP").unwrap();
    z.setsockopt(1, "PLAIN_SERVER", 1).unwrap();
    z.monitor(1).unwrap();
    let port = port_of(&z.bind(1, "tcp://127.0.0.1:*").unwrap());
    let mut cfg = SessionConfig::new(SocketType::Req);
    cfg.mechanism = MechanismConfig::plain_client("admin", "password").unwrap();
    let mut s = connect(port, cfg);
    // libzmq closes the connection, or (on a loaded machine, before its I/O thread gets to it)
    // has not yet: either way the handshake must not succeed, and libzmq reports why.
    assert!(matches!(
        s.handshake(Duration::from_secs(3)).unwrap_err(),
        DriveError::Closed | DriveError::Io(_) | DriveError::TimedOut
    ));
    assert_eq!(
        wait_event(&mut z, 1, "HANDSHAKE_FAILED"),
        ("HANDSHAKE_FAILED_NO_DETAIL".to_owned(), EFAULT)
    );
}

#[test]
fn a_libzmq_plain_client_is_checked_by_the_omq_authenticator() {
    let mut z = peer();
    z.socket(1, "DEALER").unwrap();
    z.setsockopt(1, "PLAIN_USERNAME", "admin").unwrap();
    z.setsockopt(1, "PLAIN_PASSWORD", "s3cret").unwrap();
    let mut cfg = SessionConfig::new(SocketType::Router);
    cfg.mechanism = MechanismConfig::plain_server();
    cfg.authenticate = true;
    cfg.zap_domain = Bytes::from_static(b"test");
    let mut s = accept_from(&mut z, 1, cfg);
    let req = await_auth(&mut s);
    assert_eq!(&req.zap_domain[..], b"test");
    let Credentials::Plain { username, password } = &req.credentials else {
        panic!("{req:?}")
    };
    assert_eq!(
        (&username[..], &password[..]),
        (&b"admin"[..], &b"s3cret"[..])
    );
    answer(&mut s, AuthReply::allow().user_id("admin")).unwrap();
    s.handshake(T).unwrap();
    z.send(1, &[b"a", b"b"]).unwrap();
    let m = s.recv(T).unwrap();
    assert_eq!(m, Message::multipart(["a", "b"]));
    assert_eq!(m.property("User-Id"), Some(&b"admin"[..]));
    assert_eq!(m.property("Socket-Type"), Some(&b"DEALER"[..]));
}

#[test]
fn bad_plain_credentials_are_refused_and_libzmq_hears_why() {
    let mut z = peer();
    z.socket(1, "DEALER").unwrap();
    z.setsockopt(1, "PLAIN_USERNAME", "admin").unwrap();
    z.setsockopt(1, "PLAIN_PASSWORD", "guess").unwrap();
    z.monitor(1).unwrap();
    let mut cfg = SessionConfig::new(SocketType::Dealer);
    cfg.mechanism = MechanismConfig::plain_server();
    cfg.authenticate = true;
    let mut s = accept_from(&mut z, 1, cfg);
    await_auth(&mut s);
    assert!(answer(&mut s, AuthReply::deny("wrong password")).is_err());
    // The same ERROR, byte for byte, that libzmq's PLAIN server sends when ZAP says 400.
    let sent: Vec<u8> = std::iter::from_fn(|| s.session.poll_transmit())
        .flat_map(|c| c.to_vec())
        .collect();
    assert_eq!(sent, b"\x04\x0a\x05ERROR\x03400");
    s.stream.write_all(&sent).unwrap();
    // libzmq 4.3.4's PLAIN client reports any ERROR as a protocol failure (UNEXPECTED_COMMAND),
    // whoever sends it; its CURVE client reports HANDSHAKE_FAILED_AUTH 400 (see above).
    let (name, _) = wait_event(&mut z, 1, "HANDSHAKE_");
    assert!(name.starts_with("HANDSHAKE_FAILED"), "{name}");
    assert_eq!(wait_event(&mut z, 1, "DISCONNECTED").0, "DISCONNECTED");
}

#[test]
fn an_omq_plain_server_without_authenticator_takes_any_libzmq_client() {
    let mut z = peer();
    z.socket(1, "PUSH").unwrap();
    z.setsockopt(1, "PLAIN_USERNAME", "whoever").unwrap();
    z.setsockopt(1, "PLAIN_PASSWORD", "anything").unwrap();
    let mut cfg = SessionConfig::new(SocketType::Pull);
    cfg.mechanism = MechanismConfig::plain_server();
    let mut s = accept_from(&mut z, 1, cfg);
    s.handshake(T).unwrap();
    z.send(1, &[b"in"]).unwrap();
    assert_eq!(s.recv(T).unwrap(), Message::from("in"));
}
