//! CURVE (specs 25 and 26) on the simulated network: handshakes both ways, encrypted traffic
//! (messages, heartbeats, subscriptions, whose COMMAND bit travels inside the box), and every
//! way an attacker or a misconfiguration can break a connection: wrong server key, tampered,
//! replayed or reordered frames, malformed HELLO and INITIATE, refused clients, mismatched
//! mechanisms. Each ends the connection with an error naming its cause, and nothing from the
//! peer reaches the application.

mod security_support;

use std::time::Duration;

use bytes::Bytes;
use omq_core::error::{ConfigError, CurveError, ProtocolError, SessionError};
use omq_core::mechanism::{Credentials, CurveKeyPair, CurveSecretKey, Entropy};
use omq_core::sim::{Direction, LinkConfig, Pair};
use omq_core::wire::command::Command;
use omq_core::wire::frame::Frame;
use omq_core::{AuthReply, Message, Session, SessionConfig, SessionEvent, SocketType};
use proptest::prelude::*;
use security_support::*;

fn curve_err(e: &Option<SessionError>) -> Option<CurveError> {
    match e {
        Some(SessionError::Protocol(ProtocolError::Curve(c))) => Some(c.clone()),
        _ => None,
    }
}

/// A client (a) and server (b) pair, handshake done.
fn ready_pair(client: SocketType, server: SocketType) -> Pair {
    let mut p = Pair::new(curve_client(client, server_public()), curve_server(server));
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    p
}

#[test]
fn curve_handshake_both_ways_and_multipart_traffic() {
    for client_dials in [true, false] {
        let client = curve_client(SocketType::Dealer, server_public());
        let server = curve_server(SocketType::Router);
        let mut p = if client_dials {
            Pair::new(client, server)
        } else {
            Pair::new(server, client)
        };
        p.drive();
        assert!(p.a.session.is_ready() && p.b.session.is_ready());
        let big = vec![0x5au8; 70_000];
        let parts: [&[u8]; 4] = [b"a", b"", &big, b"\x00\xff"];
        let m1 = Message::multipart(parts);
        let m2 = Message::from("second");
        for m in [&m1, &m2] {
            p.a.session.send_message(m).unwrap();
            p.b.session.send_message(m).unwrap();
        }
        p.drive();
        assert_eq!(p.a.messages(), vec![m1.clone(), m2.clone()]);
        assert_eq!(p.b.messages(), vec![m1, m2]);
        let from_client = if client_dials { &p.b } else { &p.a };
        assert_eq!(
            from_client.messages()[0].property("Socket-Type"),
            Some(&b"DEALER"[..])
        );
        assert_eq!(from_client.messages()[0].property("User-Id"), None);
    }
}

#[test]
fn handshake_commands_have_libzmqs_sizes_and_traffic_is_opaque() {
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    let mut up = Tap::new(&mut p, Direction::AToB);
    let mut down = Tap::new(&mut p, Direction::BToA);
    for _ in 0..10 {
        up.pass(&mut p);
        down.pass(&mut p);
    }
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    // Socket-Type DEALER and an empty Identity: 27 bytes of properties.
    let props = 1 + 11 + 4 + 6 + 1 + 8 + 4;
    let sizes = |log: &[Frame]| log.iter().map(|f| f.body.len()).collect::<Vec<_>>();
    assert_eq!(sizes(&up.log), [200, 257 + props]);
    assert_eq!(sizes(&down.log), [168, 30 + props]);
    for (f, name) in up.log.iter().chain(&down.log).zip([
        &b"\x05HELLO"[..],
        b"\x08INITIATE",
        b"\x07WELCOME",
        b"\x05READY",
    ]) {
        assert!(f.is_command() && f.body.starts_with(name));
    }
    // HELLO: version 1.0, 72 zero bytes of padding, then C' and the short nonce 1.
    let hello = &up.log[0].body;
    assert_eq!(&hello[6..8], &[1, 0]);
    assert!(hello[8..80].iter().all(|&b| b == 0));
    assert_eq!(&hello[112..120], &1u64.to_be_bytes());
    assert_eq!(&up.log[1].body[105..113], &2u64.to_be_bytes());
    assert_eq!(&down.log[1].body[6..14], &1u64.to_be_bytes());

    let secret = b"attack at dawn, bring snacks";
    p.a.session
        .send_message(&Message::from(&secret[..]))
        .unwrap();
    up.pass(&mut p);
    let wire = &up.log[2];
    assert_eq!(wire.flags, 0, "a MESSAGE travels in a frame with no flags");
    assert!(wire.body.starts_with(b"\x07MESSAGE"));
    assert_eq!(&wire.body[8..16], &3u64.to_be_bytes());
    assert_eq!(wire.body.len(), 33 + secret.len());
    assert!(!wire.body.windows(6).any(|w| w == b"attack"));
    assert_eq!(p.b.messages(), vec![Message::from(&secret[..])]);
}

#[test]
fn heartbeats_travel_boxed_with_the_command_bit_inside() {
    let mut client = curve_client(SocketType::Dealer, server_public());
    client.heartbeat_ivl = Some(Duration::from_millis(100));
    client.heartbeat_timeout = Some(Duration::from_millis(300));
    client.heartbeat_ttl = Some(Duration::from_millis(1000));
    let link = LinkConfig {
        latency: Duration::from_millis(5),
        ..LinkConfig::default()
    };
    let mut p = Pair::with_links(
        client,
        curve_server(SocketType::Dealer),
        link.clone(),
        link,
        11,
    );
    let mut up = Tap::new(&mut p, Direction::AToB);
    let mut down = Tap::new(&mut p, Direction::BToA);
    while p.elapsed() < Duration::from_secs(2) {
        up.pass(&mut p);
        down.pass(&mut p);
        if !p.step() {
            break;
        }
    }
    up.pass(&mut p);
    down.pass(&mut p);
    assert!(
        p.a.error.is_none() && p.b.error.is_none(),
        "{:?} {:?}",
        p.a.error,
        p.b.error
    );
    // Every PING and PONG went out as a MESSAGE in a flagless frame...
    let pings = &up.log[2..];
    let pongs = &down.log[2..];
    assert!(pings.len() >= 15, "{}", pings.len());
    assert!(pongs.len() <= pings.len() && pongs.len() + 1 >= pings.len());
    for f in pings.iter().chain(pongs) {
        assert_eq!(f.flags, 0);
        assert!(f.body.starts_with(b"\x07MESSAGE"));
    }
    // ...and was taken as a command on arrival: nobody saw a message.
    assert!(p.a.messages().is_empty() && p.b.messages().is_empty());
    // The connection still carries messages.
    p.a.session
        .send_message(&Message::from("still here"))
        .unwrap();
    while p.b.messages().is_empty() && p.elapsed() < Duration::from_secs(3) {
        up.pass(&mut p);
        down.pass(&mut p);
        p.step();
    }
    assert_eq!(p.b.messages(), vec![Message::from("still here")]);
}

#[test]
fn a_dead_peer_is_detected_through_curve_heartbeats() {
    let mut client = curve_client(SocketType::Dealer, server_public());
    client.heartbeat_ivl = Some(Duration::from_millis(100));
    client.heartbeat_timeout = Some(Duration::from_millis(250));
    let mut p = Pair::new(client, curve_server(SocketType::Dealer));
    p.run_until(Duration::from_secs(1));
    assert!(p.a.error.is_none());
    p.cut();
    while p.a.error.is_none() && p.step() {}
    assert_eq!(
        p.a.error,
        Some(SessionError::Timeout(omq_core::Timeout::Heartbeat))
    );
}

#[test]
fn messages_right_behind_ready_are_not_lost() {
    // The server may send as soon as READY is out; the client reads both in one chunk.
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    p.hold(Direction::BToA, true);
    for _ in 0..20 {
        p.drive();
        if p.b.session.is_ready() {
            break;
        }
        for chunk in p.intercept(Direction::BToA) {
            p.inject(Direction::BToA, chunk);
        }
    }
    assert!(p.b.session.is_ready() && !p.a.session.is_ready());
    p.b.session
        .send_message(&Message::multipart(["early", "bird"]))
        .unwrap();
    let all: Vec<u8> = p
        .intercept(Direction::BToA)
        .iter()
        .flat_map(|c| c.to_vec())
        .collect();
    p.inject(Direction::BToA, Bytes::from(all));
    p.drive();
    assert!(p.a.session.is_ready());
    assert_eq!(p.a.messages(), vec![Message::multipart(["early", "bird"])]);
}

#[test]
fn subscriptions_arrive_as_commands_not_messages() {
    let mut p = ready_pair(SocketType::Sub, SocketType::XPub);
    let mut up = Tap::mid_stream(&mut p, Direction::AToB);
    p.a.session.send_subscribe(b"weather.").unwrap();
    p.a.session.send_cancel(b"weather.").unwrap();
    p.a.session.send_subscribe(b"").unwrap();
    up.pass(&mut p);
    assert_eq!(
        others(&p.b.events),
        vec![
            SessionEvent::Subscribe(Bytes::from_static(b"weather.")),
            SessionEvent::Cancel(Bytes::from_static(b"weather.")),
            SessionEvent::Subscribe(Bytes::new()),
        ]
    );
    assert!(p.b.messages().is_empty());
    assert!(up
        .log
        .iter()
        .all(|f| f.flags == 0 && f.body.starts_with(b"\x07MESSAGE")));

    // And a subscription-shaped *message* from the XPUB side stays a message.
    p.b.session
        .send_message(&Message::from("\x01data"))
        .unwrap();
    p.drive();
    assert_eq!(p.a.messages(), vec![Message::from("\x01data")]);
}

#[test]
fn a_client_with_the_wrong_server_key_is_refused_at_hello() {
    let impostor = CurveKeyPair::from_secret(CurveSecretKey::from_bytes([3; 32]));
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, *impostor.public()),
        curve_server(SocketType::Dealer),
    );
    p.drive();
    assert_eq!(curve_err(&p.b.error), Some(CurveError::HelloBox));
    assert!(!p.a.session.is_ready());
    assert!(p.a.events.is_empty() && p.b.events.is_empty());
}

#[test]
fn a_server_that_is_not_the_one_we_trust_is_refused_at_welcome() {
    // An impostor that knows nothing can only send garbage in WELCOME.
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    let mut down = Tap::new(&mut p, Direction::BToA);
    down.run(&mut p, |i, f| {
        if i == 0 {
            vec![edited(&f, |b| b[100] ^= 1)]
        } else {
            vec![f]
        }
    });
    assert_eq!(curve_err(&p.a.error), Some(CurveError::WelcomeBox));
    assert!(p.a.events.is_empty());
}

#[test]
fn a_tampered_ready_is_refused() {
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    let mut down = Tap::new(&mut p, Direction::BToA);
    down.run(&mut p, |i, f| {
        if i == 1 {
            vec![edited(&f, |b| *b.last_mut().unwrap() ^= 1)]
        } else {
            vec![f]
        }
    });
    assert_eq!(curve_err(&p.a.error), Some(CurveError::ReadyBox));
    assert!(!p.a.events.contains(&SessionEvent::HandshakeSucceeded));
}

/// An edit of one frame's body.
type Edit = Box<dyn Fn(&mut Vec<u8>)>;

/// Runs a handshake with frame `index` of the client's output edited, and says how the
/// server ended.
fn server_error_after_client_edit(
    index: usize,
    edit: impl Fn(&mut Vec<u8>),
) -> Option<SessionError> {
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    let mut up = Tap::new(&mut p, Direction::AToB);
    up.run(&mut p, |i, f| {
        if i == index {
            vec![edited(&f, &edit)]
        } else {
            vec![f]
        }
    });
    assert!(!p.b.events.contains(&SessionEvent::HandshakeSucceeded));
    p.b.error.clone()
}

#[test]
fn malformed_hello_is_refused_by_cause() {
    let cases: [(&str, Edit, CurveError); 4] = [
        (
            "short",
            Box::new(|b| b.truncate(199)),
            CurveError::BadLength {
                command: "HELLO",
                len: 199,
                expected: "200 bytes",
            },
        ),
        (
            "long",
            Box::new(|b| b.push(0)),
            CurveError::BadLength {
                command: "HELLO",
                len: 201,
                expected: "200 bytes",
            },
        ),
        (
            "version 2.0",
            Box::new(|b| b[6] = 2),
            CurveError::BadVersion { major: 2, minor: 0 },
        ),
        (
            "forged signature",
            Box::new(|b| b[150] ^= 4),
            CurveError::HelloBox,
        ),
    ];
    for (what, edit, want) in cases {
        let got = server_error_after_client_edit(0, edit);
        assert_eq!(curve_err(&got), Some(want), "{what}: {got:?}");
    }
}

#[test]
fn malformed_initiate_is_refused_by_cause() {
    let cases: [(&str, Edit, CurveError); 5] = [
        (
            "short",
            Box::new(|b| b.truncate(256)),
            CurveError::BadLength {
                command: "INITIATE",
                len: 256,
                expected: "at least 257 bytes",
            },
        ),
        (
            "forged cookie",
            Box::new(|b| b[40] ^= 1),
            CurveError::BadCookie,
        ),
        (
            "replayed nonce",
            Box::new(|b| b[105..113].copy_from_slice(&1u64.to_be_bytes())),
            CurveError::NonceNotIncreasing { got: 1, last: 1 },
        ),
        (
            "altered box",
            Box::new(|b| b[200] ^= 1),
            CurveError::InitiateBox,
        ),
        (
            "truncated box",
            Box::new(|b| {
                b.pop();
            }),
            CurveError::InitiateBox,
        ),
    ];
    for (what, edit, want) in cases {
        let got = server_error_after_client_edit(1, edit);
        assert_eq!(curve_err(&got), Some(want), "{what}: {got:?}");
    }
}

#[test]
fn a_hello_after_hello_is_an_unexpected_command() {
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    );
    let mut up = Tap::new(&mut p, Direction::AToB);
    let mut hello = None;
    up.run(&mut p, |i, f| {
        if i == 0 {
            hello = Some(f.clone());
            vec![f]
        } else {
            vec![hello.clone().unwrap()]
        }
    });
    assert!(matches!(
        p.b.error,
        Some(SessionError::Protocol(ProtocolError::UnexpectedCommand { ref name })) if name == "HELLO"
    ));
}

#[test]
fn a_tampered_message_ends_the_connection_and_is_never_delivered() {
    let mut p = ready_pair(SocketType::Push, SocketType::Pull);
    let mut up = Tap::mid_stream(&mut p, Direction::AToB);
    p.a.session.send_message(&Message::from("good")).unwrap();
    p.a.session.send_message(&Message::from("evil")).unwrap();
    p.a.session.send_message(&Message::from("after")).unwrap();
    up.run(&mut p, |i, f| {
        if i == 1 {
            vec![edited(&f, |b| b[35] ^= 0x01)]
        } else {
            vec![f]
        }
    });
    assert_eq!(curve_err(&p.b.error), Some(CurveError::MessageBox));
    assert_eq!(p.b.messages(), vec![Message::from("good")]);
}

#[test]
fn a_replayed_message_is_refused() {
    let mut p = ready_pair(SocketType::Push, SocketType::Pull);
    let mut up = Tap::mid_stream(&mut p, Direction::AToB);
    p.a.session.send_message(&Message::from("pay 100")).unwrap();
    up.run(
        &mut p,
        |i, f| {
            if i == 0 {
                vec![f.clone(), f]
            } else {
                vec![f]
            }
        },
    );
    assert_eq!(
        curve_err(&p.b.error),
        Some(CurveError::NonceNotIncreasing { got: 3, last: 3 })
    );
    assert_eq!(p.b.messages(), vec![Message::from("pay 100")]);
}

#[test]
fn reordered_messages_are_refused() {
    let mut p = ready_pair(SocketType::Push, SocketType::Pull);
    let mut up = Tap::mid_stream(&mut p, Direction::AToB);
    p.a.session.send_message(&Message::from("first")).unwrap();
    p.a.session.send_message(&Message::from("second")).unwrap();
    let mut held = None;
    up.run(&mut p, |i, f| match i {
        0 => {
            held = Some(f);
            vec![]
        }
        1 => vec![f, held.take().unwrap()],
        _ => vec![f],
    });
    assert_eq!(
        curve_err(&p.b.error),
        Some(CurveError::NonceNotIncreasing { got: 3, last: 4 })
    );
    assert_eq!(p.b.messages(), vec![Message::from("second")]);
}

#[test]
fn a_multipart_message_cut_by_a_bad_frame_is_not_delivered_in_part() {
    let mut p = ready_pair(SocketType::Push, SocketType::Pull);
    let mut up = Tap::mid_stream(&mut p, Direction::AToB);
    p.a.session
        .send_message(&Message::multipart(["one", "two", "three"]))
        .unwrap();
    up.run(&mut p, |i, f| {
        if i == 1 {
            vec![edited(&f, |b| b[20] ^= 0x80)]
        } else {
            vec![f]
        }
    });
    assert_eq!(curve_err(&p.b.error), Some(CurveError::MessageBox));
    assert!(p.b.messages().is_empty());
}

#[test]
fn unencrypted_frames_after_the_handshake_are_refused() {
    let mut p = ready_pair(SocketType::Dealer, SocketType::Dealer);
    p.inject(Direction::AToB, Bytes::from_static(b"\x00\x05hello"));
    p.drive();
    assert_eq!(curve_err(&p.b.error), Some(CurveError::NotAMessage));
    let mut p = ready_pair(SocketType::Dealer, SocketType::Dealer);
    let ping = Command::Ping {
        ttl_deciseconds: 0,
        context: Bytes::new(),
    }
    .to_bytes();
    let mut raw = vec![0x04, ping.len() as u8];
    raw.extend_from_slice(&ping);
    p.inject(Direction::BToA, Bytes::from(raw));
    p.drive();
    assert_eq!(curve_err(&p.a.error), Some(CurveError::NotAMessage));
    let mut p = ready_pair(SocketType::Dealer, SocketType::Dealer);
    p.inject(
        Direction::AToB,
        Bytes::from_static(b"\x00\x20\x07MESSAGE\x00\x00\x00\x00\x00\x00\x00\x09................"),
    );
    p.drive();
    assert_eq!(
        curve_err(&p.b.error),
        Some(CurveError::BadLength {
            command: "MESSAGE",
            len: 32,
            expected: "at least 33 bytes"
        })
    );
}

#[test]
fn the_authenticator_sees_the_client_key_and_names_the_user() {
    let mut server = curve_server(SocketType::Router);
    server.authenticate = true;
    server.zap_domain = Bytes::from_static(b"curve-domain");
    let mut p = Pair::new(curve_client(SocketType::Dealer, server_public()), server);
    p.drive();
    let reqs: Vec<_> = others(&p.b.events);
    let [SessionEvent::AuthRequest(req)] = &reqs[..] else {
        panic!("{reqs:?}")
    };
    assert_eq!(&req.zap_domain[..], b"curve-domain");
    assert_eq!(
        req.credentials,
        Credentials::Curve {
            client_key: *client_keys().public()
        }
    );
    assert!(!p.a.session.is_ready());
    p.b.session
        .handle_auth_reply(AuthReply::allow().user_id(CLIENT_PUBLIC), p.now)
        .unwrap();
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    p.a.session.send_message(&Message::from("hello")).unwrap();
    p.drive();
    let m = &p.b.messages()[0];
    assert_eq!(m.property("User-Id"), Some(CLIENT_PUBLIC.as_bytes()));
    assert_eq!(m.property("Socket-Type"), Some(&b"DEALER"[..]));
}

#[test]
fn a_refused_client_gets_error_and_nothing_else() {
    let mut server = curve_server(SocketType::Router);
    server.authenticate = true;
    let mut p = Pair::new(curve_client(SocketType::Dealer, server_public()), server);
    p.drive();
    let err =
        p.b.session
            .handle_auth_reply(AuthReply::deny("unknown key"), p.now)
            .unwrap_err();
    assert!(matches!(err, SessionError::AuthFailed { .. }));
    p.drive();
    assert_eq!(
        p.a.error,
        Some(SessionError::PeerError {
            reason: "400".into()
        })
    );
    assert!(p.a.messages().is_empty() && p.b.messages().is_empty());
    assert!(!p.a.events.contains(&SessionEvent::HandshakeSucceeded));
}

#[test]
fn curve_against_null_fails_cleanly_on_both_sides() {
    for curve_dials in [true, false] {
        let curve = curve_client(SocketType::Dealer, server_public());
        let null = SessionConfig::new(SocketType::Dealer);
        let mut p = if curve_dials {
            Pair::new(curve, null)
        } else {
            Pair::new(null, curve)
        };
        p.drive();
        for end in [&p.a, &p.b] {
            assert!(
                matches!(
                    end.error,
                    Some(SessionError::Protocol(
                        ProtocolError::MechanismMismatch { .. }
                    ))
                ),
                "{:?}",
                end.error
            );
            assert!(end.events.is_empty());
        }
    }
}

#[test]
fn two_curve_clients_are_a_role_mismatch() {
    let mut p = Pair::new(
        curve_client(SocketType::Dealer, server_public()),
        curve_client(SocketType::Dealer, server_public()),
    );
    p.drive();
    for end in [&p.a, &p.b] {
        assert_eq!(
            end.error,
            Some(SessionError::Protocol(ProtocolError::RoleMismatch))
        );
    }
}

#[test]
fn curve_without_entropy_fails_at_once_and_sends_nothing() {
    let mut s = Session::new(
        curve_client(SocketType::Dealer, server_public()),
        std::time::Instant::now(),
    );
    assert_eq!(
        s.error(),
        Some(&SessionError::Config(ConfigError::MissingEntropy))
    );
    assert!(s.poll_transmit().is_none());
    assert!(!s.is_handshaking());
}

#[test]
fn the_session_keeps_no_copy_of_its_entropy() {
    let mut c = curve_client(SocketType::Dealer, server_public());
    c.entropy = Some(Entropy::from_bytes([4; 32]));
    let s = Session::new(c, std::time::Instant::now());
    assert!(s.config().entropy.is_none());
    assert!(!s.config().as_server);
    let s = Session::new(
        {
            let mut c = curve_server(SocketType::Dealer);
            c.entropy = Some(Entropy::from_bytes([4; 32]));
            c
        },
        std::time::Instant::now(),
    );
    assert!(
        s.config().as_server,
        "the mechanism's role decides the greeting"
    );
}

#[test]
fn different_entropy_gives_different_wire_bytes() {
    let hello_with = |seed: u8| {
        let mut c = curve_client(SocketType::Dealer, server_public());
        c.entropy = Some(Entropy::from_bytes([seed; 32]));
        let mut p = Pair::new(c, curve_server(SocketType::Dealer));
        let mut up = Tap::new(&mut p, Direction::AToB);
        up.pass(&mut p);
        up.log[0].body.to_bytes()
    };
    assert_eq!(
        hello_with(1),
        hello_with(1),
        "same seed, same bytes: no hidden RNG"
    );
    assert_ne!(hello_with(1), hello_with(2));
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..40),
        2 => proptest::collection::vec(any::<u8>(), 200..300),
        1 => proptest::collection::vec(any::<u8>(), 5000..9000),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    proptest::collection::vec(body(), 1..4).prop_map(Message::multipart)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn curve_pairs_deliver_any_messages_under_any_fragmentation(
        up in proptest::collection::vec(message(), 0..8),
        down in proptest::collection::vec(message(), 0..8),
        piece_ab in 1usize..64,
        piece_ba in 1usize..64,
        seed in any::<u64>(),
    ) {
        let link = |max_piece| LinkConfig { max_piece, ..LinkConfig::default() };
        let mut p = Pair::with_links(
            curve_client(SocketType::Dealer, server_public()),
            curve_server(SocketType::Dealer),
            link(piece_ab),
            link(piece_ba),
            seed,
        );
        p.drive();
        prop_assert!(p.a.session.is_ready() && p.b.session.is_ready());
        for m in &up {
            p.a.session.send_message(m).unwrap();
        }
        for m in &down {
            p.b.session.send_message(m).unwrap();
        }
        p.drive();
        prop_assert!(p.a.error.is_none() && p.b.error.is_none());
        prop_assert_eq!(p.b.messages(), up);
        prop_assert_eq!(p.a.messages(), down);
    }
}

/// Where a flipped bit may go unnoticed: the greeting's padding (bytes 1–8), its minor version
/// (byte 11: a "downgrade" to ZMTP 3.0 only changes how subscriptions are sent, and libzmq does
/// not authenticate it either) and filler (33–63), and HELLO's anti-amplification padding.
fn unauthenticated(offset: usize, from_client: bool) -> bool {
    let greeting = (1..=8).contains(&offset) || offset == 11 || (33..64).contains(&offset);
    // The client's HELLO frame starts right after its greeting: a 2-byte header, then
    // "\x05HELLO", the version (2 bytes) and 72 bytes of zero padding.
    let hello_padding = from_client && (64 + 2 + 6 + 2..64 + 2 + 6 + 2 + 72).contains(&offset);
    greeting || hello_padding
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Flipping any authenticated bit of the handshake, either way, makes the handshake fail:
    /// nothing altered is ever accepted.
    #[test]
    fn corrupting_any_authenticated_handshake_byte_is_detected(
        offset in 0usize..700,
        from_client: bool,
        seed: u64,
    ) {
        prop_assume!(!unauthenticated(offset, from_client));
        let (client, server) = curve_configs(seed);
        let flipped = LinkConfig { flip_at: Some(offset), ..LinkConfig::default() };
        let (ab, ba) = if from_client {
            (flipped, LinkConfig::default())
        } else {
            (LinkConfig::default(), flipped)
        };
        let mut p = Pair::with_links(client, server, ab, ba, seed);
        // A flipped length field is not authenticated by ZMTP: the receiver then waits for a
        // frame that never completes, and HANDSHAKE_IVL (30 s, virtual here) ends it.
        p.run_until(Duration::from_secs(40));
        let handshake_bytes_done = p.a.session.is_ready() && p.b.session.is_ready();
        if handshake_bytes_done {
            // The flip landed after the handshake (the handshake is shorter than `offset`):
            // then the next message must not get through unnoticed either.
            p.a.session.send_message(&Message::from(vec![7u8; 64])).unwrap();
            p.b.session.send_message(&Message::from(vec![7u8; 64])).unwrap();
            p.run_until(Duration::from_secs(45));
            let clean = p.a.error.is_none() && p.b.error.is_none();
            if clean {
                // Nothing was flipped at all: the stream that way was shorter than `offset`.
                prop_assert!(p.a.messages().iter().chain(p.b.messages().iter()).all(|m| m == &Message::from(vec![7u8; 64])));
            }
        } else {
            prop_assert!(p.a.error.is_some() || p.b.error.is_some(), "a corrupted handshake must fail");
            prop_assert!(p.a.messages().is_empty() && p.b.messages().is_empty());
        }
    }
}

/// Every bit of every byte either way, from the greeting through the first message each way:
/// a flip where CURVE (or ZMTP's framing around it) authenticates makes the connection fail,
/// and nothing altered is ever delivered. The random-offset property above samples this; here
/// all ~11,000 cases run (each a whole handshake on the virtual clock).
#[test]
fn every_authenticated_bit_is_checked_exhaustively() {
    let (client, server) = curve_configs(0);
    let msg = Message::from(vec![7u8; 64]);
    let run = |ab: LinkConfig, ba: LinkConfig| {
        let mut p = Pair::with_links(client.clone(), server.clone(), ab, ba, 11);
        p.run_until(Duration::from_secs(40));
        if p.a.session.is_ready() && p.b.session.is_ready() {
            p.a.session.send_message(&msg).unwrap();
            p.b.session.send_message(&msg).unwrap();
            p.run_until(Duration::from_secs(45));
        }
        p
    };
    // A clean run: how many bytes each way carries, handshake and one message included.
    let clean = run(LinkConfig::default(), LinkConfig::default());
    assert_eq!(clean.b.messages(), std::slice::from_ref(&msg));
    assert_eq!(clean.a.messages(), std::slice::from_ref(&msg));
    let mut checked = 0;
    let mut unnoticed = Vec::new();
    for (from_client, dir) in [(true, Direction::AToB), (false, Direction::BToA)] {
        for offset in 0..clean.carried(dir) {
            if unauthenticated(offset, from_client) {
                continue;
            }
            for bit in 0..8 {
                let flipped = LinkConfig {
                    flip_at: Some(offset),
                    flip_mask: 1 << bit,
                    ..LinkConfig::default()
                };
                let p = if from_client {
                    run(flipped, LinkConfig::default())
                } else {
                    run(LinkConfig::default(), flipped)
                };
                let failed = p.a.error.is_some() || p.b.error.is_some();
                // A flipped length makes a frame wait for bytes that never come: the handshake
                // or the message then never completes, which is detection too (HANDSHAKE_IVL
                // or heartbeats end it); what must never happen is an altered delivery.
                let delivered_all =
                    p.a.messages() == [msg.clone()] && p.b.messages() == [msg.clone()];
                if !failed && delivered_all {
                    unnoticed.push((from_client, offset, bit));
                }
                for m in p.a.messages().iter().chain(p.b.messages().iter()) {
                    assert_eq!(
                        m, &msg,
                        "bit {bit} of byte {offset}: an altered message delivered"
                    );
                }
                checked += 1;
            }
        }
    }
    // What may change without notice, as in libzmq: the greeting's signature bits other than
    // the lowest of byte 9, a higher major version (byte 10), the server's as-server byte
    // (the client knows its role), and the frame flags outside what CURVE boxes: reserved
    // bits, and MORE / COMMAND on the frame around a MESSAGE (its own flags are inside the
    // box). Everything else was caught above, and nothing altered was ever delivered.
    for &(from_client, offset, bit) in &unnoticed {
        let dir = if from_client {
            Direction::AToB
        } else {
            Direction::BToA
        };
        let headers = frame_flag_offsets(clean.transcript(dir));
        let ok = match offset {
            9 => bit > 0,
            10 => bit > 1,
            32 => !from_client,
            _ => headers.contains(&offset) && (bit >= 3 || bit == 0 || bit == 2),
        };
        assert!(
            ok,
            "bit {bit} of byte {offset} (from the client: {from_client}) went unnoticed"
        );
    }
    assert!(checked > 7_000, "{checked} cases");
}

/// Offsets of the flags byte of every ZMTP frame after the 64-byte greeting.
fn frame_flag_offsets(stream: &[u8]) -> Vec<usize> {
    let mut at = 64;
    let mut out = Vec::new();
    while at < stream.len() {
        out.push(at);
        let flags = stream[at];
        let (size, header) = if flags & 2 != 0 {
            let b: [u8; 8] = stream[at + 1..at + 9].try_into().unwrap();
            (u64::from_be_bytes(b) as usize, 9)
        } else {
            (stream[at + 1] as usize, 2)
        };
        at += header + size;
    }
    out
}

fn curve_configs(_seed: u64) -> (SessionConfig, SessionConfig) {
    (
        curve_client(SocketType::Dealer, server_public()),
        curve_server(SocketType::Dealer),
    )
}

/// A large MESSAGE is opened where it lies in the read buffer, as a large message without
/// CURVE is sliced out of it: no copy and no allocation of its own. Shorter ones are copied
/// out, so a small part never pins a whole read buffer. All arrive in one read, so the buffer
/// is shared and cannot be handed over whole. The same read with one ciphertext byte of the
/// large MESSAGE flipped is refused and delivers nothing.
#[test]
fn large_messages_are_opened_in_the_read_buffer() {
    let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
    for tamper in [false, true] {
        let mut p = ready_pair(SocketType::Dealer, SocketType::Dealer);
        while p.b.session.poll_event().is_some() {}
        let mid = vec![0x3cu8; 4000];
        let small = vec![0x5au8; 100];
        p.a.session.send_message(&Message::from(&big[..])).unwrap();
        p.a.session.send_message(&Message::from("after")).unwrap();
        p.a.session.send_message(&Message::from(&mid[..])).unwrap();
        p.a.session
            .send_message(&Message::from(&small[..]))
            .unwrap();
        let mut wire = bytes::BytesMut::new();
        while let Some(b) = p.a.session.poll_transmit() {
            wire.extend_from_slice(&b);
        }
        if tamper {
            wire[10_000] ^= 0x10;
        }
        let start = wire.as_ptr() as usize;
        let read = start..start + wire.len();
        let result = p.b.session.handle_input(&mut wire, p.now);
        let mut got = Vec::new();
        while let Some(e) = p.b.session.poll_event() {
            if let SessionEvent::Message(m) = e {
                got.push(m);
            }
        }
        if tamper {
            assert_eq!(
                curve_err(&result.err()),
                Some(CurveError::MessageBox),
                "a tampered large MESSAGE"
            );
            assert!(got.is_empty(), "nothing of a tampered read is delivered");
            continue;
        }
        result.unwrap();
        assert_eq!(got.len(), 4);
        let wanted: [&[u8]; 4] = [&big, b"after", &mid, &small];
        for (m, want) in got.iter().zip(wanted) {
            assert_eq!(&m.parts()[0][..], want);
            let at = m.parts()[0].shared().map(|b| b.as_ptr() as usize);
            let in_read = at.is_some_and(|at| read.contains(&at));
            assert_eq!(
                in_read,
                want.len() >= 8 * 1024,
                "{} bytes: a slice of the read buffer only from 8 KiB",
                want.len()
            );
        }
    }
}
