//! Session behaviour on the simulated network and virtual clock.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use omq_core::error::{LimitError, ProtocolError, SessionError, Timeout};
use omq_core::sim::{LinkConfig, Pair};
use omq_core::wire::command::Command;
use omq_core::wire::frame::encode_header;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::wire::metadata::Metadata;
use omq_core::{Message, Session, SessionConfig, SessionEvent, SocketType};

fn cfg(t: SocketType) -> SessionConfig {
    SessionConfig::new(t)
}

#[test]
fn null_handshake_and_multipart_both_ways() {
    let mut a = cfg(SocketType::Dealer);
    a.routing_id = Bytes::from_static(b"dealer-1");
    a.metadata.insert("X-App", Bytes::from_static(b"demo"));
    let mut p = Pair::new(a, cfg(SocketType::Router));
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    assert_eq!(p.a.events, vec![SessionEvent::HandshakeSucceeded]);
    let peer = p.b.session.peer().unwrap();
    assert_eq!(peer.socket_type, SocketType::Dealer);
    assert_eq!(peer.routing_id.as_deref(), Some(&b"dealer-1"[..]));
    assert_eq!(peer.properties.get("x-app"), Some(&b"demo"[..]));
    assert_eq!(peer.zmtp_minor, 1);

    let m = Message::multipart(["a", "", "ccc"]);
    p.a.session.send_message(&m).unwrap();
    let big = Message::multipart([vec![1u8; 70_000], vec![2u8; 3]]);
    p.b.session.send_message(&big).unwrap();
    p.drive();
    assert_eq!(p.b.messages(), vec![m]);
    let got = p.a.messages();
    assert_eq!(got, vec![big]);
    assert_eq!(got[0].property("Socket-Type"), Some(&b"ROUTER"[..]));
}

#[test]
fn any_fragmentation_gives_the_same_messages() {
    for seed in 0..20 {
        let link = LinkConfig {
            max_piece: 1 + (seed as usize % 7),
            ..LinkConfig::default()
        };
        let mut p = Pair::with_links(
            cfg(SocketType::Push),
            cfg(SocketType::Pull),
            link.clone(),
            link,
            seed,
        );
        let msgs: Vec<Message> = (0..20)
            .map(|i| Message::multipart([vec![i as u8; i * 37], vec![7; 300]]))
            .collect();
        p.drive();
        for m in &msgs {
            p.a.session.send_message(m).unwrap();
        }
        p.drive();
        assert_eq!(p.b.messages(), msgs, "seed {seed}");
    }
}

#[test]
fn incompatible_types_get_an_error_command() {
    let mut p = Pair::new(cfg(SocketType::Push), cfg(SocketType::Sub));
    p.drive();
    assert!(matches!(
        p.a.error,
        Some(SessionError::Incompatible {
            local: SocketType::Push,
            peer: SocketType::Sub
        }) | Some(SessionError::PeerError { .. })
    ));
    assert!(p.b.error.is_some());
    assert!(!p.a.session.is_ready() && !p.b.session.is_ready());
    assert!(p.a.messages().is_empty());
}

#[test]
fn send_before_ready_is_a_usage_error_not_fatal() {
    let mut s = Session::new(cfg(SocketType::Push), std::time::Instant::now());
    assert_eq!(
        s.send_message(&Message::from("x")),
        Err(omq_core::UsageError::NotReady)
    );
    assert!(s.error().is_none());
}

#[test]
fn heartbeats_keep_a_live_connection_and_detect_a_dead_one() {
    let mut a = cfg(SocketType::Dealer);
    a.heartbeat_ivl = Some(Duration::from_millis(100));
    a.heartbeat_timeout = Some(Duration::from_millis(250));
    let link = LinkConfig {
        latency: Duration::from_millis(5),
        ..LinkConfig::default()
    };
    let mut p = Pair::with_links(a, cfg(SocketType::Dealer), link.clone(), link, 3);
    while !p.a.session.is_ready() {
        assert!(p.step());
    }
    // PINGs leave every 100 ms from the end of the handshake.
    let ready_at = p.elapsed();
    p.run_until(Duration::from_millis(5_050));
    assert!(p.a.error.is_none() && p.b.error.is_none());
    assert!(p.a.session.is_ready());
    // Cut the connection silently: the next PING goes unanswered.
    p.cut();
    let cut_at = p.elapsed();
    while p.a.error.is_none() && p.step() {}
    assert_eq!(p.a.error, Some(SessionError::Timeout(Timeout::Heartbeat)));
    // Exactly: the first PING after the cut, then HEARTBEAT_TIMEOUT (250 ms) later, on the
    // virtual clock.
    let ivl = Duration::from_millis(100);
    let pings_before = (cut_at - ready_at).as_nanos() / ivl.as_nanos();
    let next_ping = ready_at + ivl * (pings_before as u32 + 1);
    assert_eq!(p.elapsed(), next_ping + Duration::from_millis(250));
    assert!(p.b.error.is_none(), "b has no heartbeat of its own");
}

#[test]
fn peer_ttl_drops_a_peer_that_stops_talking() {
    let mut a = cfg(SocketType::Dealer);
    a.heartbeat_ivl = Some(Duration::from_millis(100));
    a.heartbeat_ttl = Some(Duration::from_millis(500));
    a.heartbeat_timeout = Some(Duration::from_secs(100));
    let mut p = Pair::new(a, cfg(SocketType::Dealer));
    p.run_until(Duration::from_secs(2));
    assert!(p.b.error.is_none());
    // a goes silent: b, which never pings, must still drop it within the TTL a announced.
    p.cut();
    let cut_at = p.elapsed();
    while p.b.error.is_none() && p.step() {}
    assert_eq!(p.b.error, Some(SessionError::Timeout(Timeout::PeerTtl)));
    assert!(p.elapsed() - cut_at <= Duration::from_millis(500));
}

#[test]
fn handshake_timeout_cuts_off_a_silent_peer() {
    let mut b = cfg(SocketType::Rep);
    b.handshake_ivl = Some(Duration::from_millis(300));
    let link = LinkConfig {
        cut_after: Some(5),
        ..LinkConfig::default()
    };
    let mut p = Pair::with_links(cfg(SocketType::Req), b, link, LinkConfig::default(), 1);
    while p.b.error.is_none() && p.step() {}
    assert_eq!(p.b.error, Some(SessionError::Timeout(Timeout::Handshake)));
    assert_eq!(p.elapsed(), Duration::from_millis(300));
}

/// A hand-driven peer for tests that need to misbehave: raw bytes in, raw bytes out.
struct RawPeer {
    session: Session,
    rx: BytesMut,
    now: std::time::Instant,
}

impl RawPeer {
    fn new(config: SessionConfig) -> Self {
        let now = std::time::Instant::now();
        RawPeer {
            session: Session::new(config, now),
            rx: BytesMut::new(),
            now,
        }
    }
    fn output(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(c) = self.session.poll_transmit() {
            out.extend_from_slice(&c);
        }
        out
    }
    fn input(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        self.rx.extend_from_slice(bytes);
        self.session.handle_input(&mut self.rx, self.now)
    }
    fn events(&mut self) -> Vec<SessionEvent> {
        std::iter::from_fn(|| self.session.poll_event()).collect()
    }
}

fn greeting(minor: u8, mech: MechanismName) -> Vec<u8> {
    let mut g = Greeting::ours(mech, false);
    g.minor = minor;
    g.encode().to_vec()
}

fn command_frame(cmd: &Command) -> Vec<u8> {
    let body = cmd.to_bytes();
    let mut out = BytesMut::new();
    encode_header(&mut out, false, true, body.len());
    out.extend_from_slice(&body);
    out.to_vec()
}

fn ready(t: SocketType) -> Vec<u8> {
    let mut m = Metadata::new();
    m.insert("Socket-Type", Bytes::from_static(t.name().as_bytes()));
    command_frame(&Command::Ready(m))
}

fn message_frame(body: &[u8], more: bool) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_header(&mut out, more, false, body.len());
    out.extend_from_slice(body);
    out.to_vec()
}

#[test]
fn greeting_is_sent_in_three_stages() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    assert_eq!(s.output(), &[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F]);
    let g = greeting(1, MechanismName::NULL);
    s.input(&g[..9]).unwrap();
    assert!(
        s.output().is_empty(),
        "nothing more before the peer's signature"
    );
    s.input(&g[9..10]).unwrap();
    assert_eq!(s.output(), [3], "our major once the peer's signature is in");
    s.input(&g[10..11]).unwrap();
    let rest = s.output();
    assert_eq!(rest.len(), 53);
    assert_eq!(rest[0], 1);
    s.input(&g[11..]).unwrap();
    // Then READY.
    assert_eq!(s.output()[0], 0x04);
}

#[test]
fn non_zmtp_and_old_peers_are_refused_at_the_first_wrong_byte() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    assert_eq!(
        s.input(b"G"),
        Err(SessionError::Protocol(ProtocolError::NotZmtp))
    );
    // Sticky.
    assert!(s.input(b"ET / HTTP/1.1").is_err());

    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F]).unwrap();
    assert_eq!(
        s.input(&[2]),
        Err(SessionError::Protocol(ProtocolError::UnsupportedVersion {
            major: 2
        }))
    );
}

#[test]
fn mechanism_mismatch_is_refused() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    let r = s.input(&greeting(1, MechanismName::CURVE));
    assert!(matches!(
        r,
        Err(SessionError::Protocol(
            ProtocolError::MechanismMismatch { .. }
        ))
    ));
}

#[test]
fn unexpected_command_during_handshake_fails_but_unknown_after_is_ignored() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    let r = s.input(&command_frame(&Command::Subscribe(Bytes::new())));
    assert!(matches!(
        r,
        Err(SessionError::Protocol(
            ProtocolError::UnexpectedCommand { .. }
        ))
    ));

    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    let r = s.input(&message_frame(b"early", false));
    assert_eq!(
        r,
        Err(SessionError::Protocol(ProtocolError::UnexpectedMessage))
    );

    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    s.input(&ready(SocketType::Push)).unwrap();
    s.input(&command_frame(&Command::Other {
        name: Bytes::from_static(b"X-FUTURE"),
        data: Bytes::from_static(b"whatever"),
    }))
    .unwrap();
    s.input(&message_frame(b"after", false)).unwrap();
    let ev = s.events();
    assert_eq!(ev.len(), 2);
    assert!(matches!(&ev[1], SessionEvent::Message(m) if &m.parts()[0][..] == b"after"));
}

#[test]
fn ready_without_socket_type_or_with_unknown_type_fails() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    let r = s.input(&command_frame(&Command::Ready(Metadata::new())));
    assert_eq!(
        r,
        Err(SessionError::Protocol(ProtocolError::MissingSocketType))
    );
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    let mut m = Metadata::new();
    m.insert("Socket-Type", Bytes::from_static(b"STREAMER"));
    assert!(s.input(&command_frame(&Command::Ready(m))).is_err());
}

#[test]
fn peer_error_command_ends_the_handshake_with_its_reason() {
    let mut s = RawPeer::new(cfg(SocketType::Pull));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    let r = s.input(&command_frame(&Command::Error {
        reason: Bytes::from_static(b"go away"),
    }));
    assert_eq!(
        r,
        Err(SessionError::PeerError {
            reason: "go away".into()
        })
    );
}

#[test]
fn ping_context_is_echoed_truncated_to_16_bytes() {
    let mut s = RawPeer::new(cfg(SocketType::Dealer));
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    s.input(&ready(SocketType::Dealer)).unwrap();
    s.output();
    s.input(&command_frame(&Command::Ping {
        ttl_deciseconds: 0,
        context: Bytes::from_static(b"0123456789abcdefXYZ"),
    }))
    .unwrap();
    let out = s.output();
    assert_eq!(
        out,
        command_frame(&Command::Pong {
            context: Bytes::from_static(b"0123456789abcdef")
        })
    );
}

#[test]
fn zmtp30_peers_get_legacy_subscriptions_and_31_peers_commands() {
    for minor in [0u8, 1] {
        let mut s = RawPeer::new(cfg(SocketType::Sub));
        s.input(&greeting(minor, MechanismName::NULL)).unwrap();
        s.input(&ready(SocketType::Pub)).unwrap();
        s.output();
        s.session.send_subscribe(b"A").unwrap();
        let out = s.output();
        if minor == 0 {
            assert_eq!(out, [0x00, 0x02, 0x01, b'A']);
        } else {
            let mut want = vec![0x04, 0x0b, 0x09];
            want.extend_from_slice(b"SUBSCRIBEA");
            assert_eq!(out, want);
        }
    }
}

#[test]
fn pub_side_accepts_both_subscription_forms() {
    let mut s = RawPeer::new(cfg(SocketType::XPub));
    s.input(&greeting(0, MechanismName::NULL)).unwrap();
    s.input(&ready(SocketType::Sub)).unwrap();
    s.input(&message_frame(b"\x01A", false)).unwrap();
    s.input(&command_frame(&Command::Subscribe(Bytes::from_static(
        b"B",
    ))))
    .unwrap();
    s.input(&message_frame(b"\x00A", false)).unwrap();
    s.input(&command_frame(&Command::Cancel(Bytes::from_static(b"B"))))
        .unwrap();
    assert_eq!(
        s.events(),
        vec![
            SessionEvent::HandshakeSucceeded,
            SessionEvent::Subscribe(Bytes::from_static(b"A")),
            SessionEvent::Subscribe(Bytes::from_static(b"B")),
            SessionEvent::Cancel(Bytes::from_static(b"A")),
            SessionEvent::Cancel(Bytes::from_static(b"B")),
        ]
    );
}

#[test]
fn oversized_frames_and_endless_parts_are_refused() {
    let mut c = cfg(SocketType::Pull);
    c.max_msg_size = Some(100);
    let mut s = RawPeer::new(c);
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    s.input(&ready(SocketType::Push)).unwrap();
    s.input(&message_frame(&[0u8; 100], false)).unwrap();
    // The header alone is enough to refuse.
    let r = s.input(&[0x02, 0, 0, 0, 0, 0, 0, 0, 101]);
    assert_eq!(
        r,
        Err(SessionError::Limit(LimitError::MessageTooLarge {
            size: 101,
            max: 100
        }))
    );

    let mut c = cfg(SocketType::Pull);
    c.max_parts = 10;
    let mut s = RawPeer::new(c);
    s.input(&greeting(1, MechanismName::NULL)).unwrap();
    s.input(&ready(SocketType::Push)).unwrap();
    let r = s.input(&[0x01, 0x00].repeat(11));
    assert_eq!(
        r,
        Err(SessionError::Limit(LimitError::TooManyParts { max: 10 }))
    );
    // Nothing half-delivered.
    assert_eq!(s.events(), vec![SessionEvent::HandshakeSucceeded]);
}

/// Without CURVE a session takes frames through the frame decoder, which cuts short bodies
/// one after another from one arena (a read buffer is never pinned by a small part, and a
/// part costs no allocation of its own). Three 100-byte messages in one read sit back to back.
#[test]
fn short_parts_without_curve_share_one_arena() {
    let mut p = Pair::new(cfg(SocketType::Push), cfg(SocketType::Pull));
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    while p.b.session.poll_event().is_some() {}
    for i in 0..3u8 {
        p.a.session
            .send_message(&Message::from(vec![i; 100]))
            .unwrap();
    }
    let mut wire = BytesMut::new();
    while let Some(b) = p.a.session.poll_transmit() {
        wire.extend_from_slice(&b);
    }
    p.b.session.handle_input(&mut wire, p.now).unwrap();
    let mut at = Vec::new();
    while let Some(e) = p.b.session.poll_event() {
        if let SessionEvent::Message(m) = e {
            at.push(m.parts()[0].shared().map(|b| b.as_ptr() as usize));
        }
    }
    assert_eq!(at.len(), 3);
    let at: Vec<usize> = at.into_iter().map(|a| a.expect("a shared part")).collect();
    assert_eq!(at[1], at[0] + 100, "parts of one arena sit back to back");
    assert_eq!(at[2], at[1] + 100, "parts of one arena sit back to back");
}

/// `Mechanism::decode_owned_frame` under NULL keeps the frame decoder's rule for what a part
/// may hold on to: a slice of the given bytes from SLICE_MIN up, a copy below.
#[test]
fn null_owned_frames_follow_the_frame_decoders_rule() {
    use omq_core::mechanism::Mechanism;
    let mut m = Mechanism::new(&cfg(SocketType::Pull), None).unwrap();
    assert!(
        !m.opens_in_place(),
        "only CURVE takes frames as the buffer's own bytes"
    );
    for (len, sliced) in [(100, false), (8 * 1024 - 1, false), (8 * 1024, true)] {
        let body = BytesMut::from(&vec![7u8; len][..]);
        let at = body.as_ptr() as usize;
        let f = m.decode_owned_frame(0, body).unwrap();
        assert_eq!(f.body.len(), len);
        let same = f.body.shared().map(|b| b.as_ptr() as usize) == Some(at);
        assert_eq!(same, sliced, "{len} bytes");
    }
}
