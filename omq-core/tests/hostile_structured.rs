//! Structure-aware hostile input: random bytes almost never spell a command name, so a fuzzer
//! of raw bytes leaves the command parsers untried. Here the peer writes real command frames
//! (every name the core knows, and some it does not) with hostile bodies (empty, short, long,
//! random, a real body with bytes flipped or cut), in every mechanism's handshake and after a
//! finished NULL one, cut into any pieces. The session must end in progress or a clean error:
//! never a panic, a failed session stays failed, no whole frame is left undecoded, and its read
//! room never follows a size the peer merely announced.

mod fragments;
mod security_support;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use omq_core::mechanism::MechanismConfig;
use omq_core::wire::command::Command;
use omq_core::wire::frame::encode_header;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::wire::metadata::Metadata;
use omq_core::{Session, SessionConfig, SocketType};

const NAMES: [&str; 16] = [
    "READY",
    "ERROR",
    "PING",
    "PONG",
    "SUBSCRIBE",
    "CANCEL",
    "JOIN",
    "LEAVE",
    "HELLO",
    "WELCOME",
    "INITIATE",
    "MESSAGE",
    "READYX",
    "",
    "X",
    "ZAP",
];

/// A command body: nothing, a few bytes, random bytes of any length, or a real command's body
/// with damage.
fn hostile_body() -> impl Strategy<Value = Vec<u8>> {
    let real = prop_oneof![
        Just(body_of(&Command::Ping {
            ttl_deciseconds: 10,
            context: Bytes::from_static(b"ctx")
        })),
        Just(ready_body("SUB")),
        Just(ready_body("DEALER")),
        Just(body_of(&Command::Error {
            reason: Bytes::from_static(b"no")
        })),
    ];
    prop_oneof![
        1 => Just(Vec::new()),
        2 => proptest::collection::vec(any::<u8>(), 0..8),
        3 => proptest::collection::vec(any::<u8>(), 0..600),
        1 => proptest::collection::vec(any::<u8>(), 4000..9000),
        3 => (real, any::<usize>(), any::<u8>(), any::<bool>()).prop_map(|(mut b, at, x, cut)| {
            if !b.is_empty() {
                let i = at % b.len();
                if cut {
                    b.truncate(i);
                } else {
                    b[i] ^= x | 1;
                }
            }
            b
        }),
    ]
}

/// A command's body without its name (the frame writes the name).
fn body_of(c: &Command) -> Vec<u8> {
    let all = c.to_bytes();
    all[1 + usize::from(all[0])..].to_vec()
}

fn ready_body(socket_type: &str) -> Vec<u8> {
    let mut m = Metadata::new();
    m.insert(
        "Socket-Type",
        Bytes::copy_from_slice(socket_type.as_bytes()),
    );
    body_of(&Command::Ready(m))
}

/// A command frame named `name` (its own length byte, which may lie) with `body` after it.
fn command_frame(name: &str, length_lies: Option<u8>, body: &[u8]) -> Vec<u8> {
    let mut payload = vec![length_lies.unwrap_or(name.len() as u8)];
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(body);
    let mut out = BytesMut::new();
    encode_header(&mut out, false, true, payload.len());
    out.extend_from_slice(&payload);
    out.to_vec()
}

fn data_frame(more: bool, body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_header(&mut out, more, false, body.len());
    out.extend_from_slice(body);
    out.to_vec()
}

#[derive(Debug, Clone)]
enum Piece {
    Command(usize, Option<u8>, Vec<u8>),
    Data(bool, Vec<u8>),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => (0..NAMES.len(), proptest::option::weighted(0.1, any::<u8>()), hostile_body())
            .prop_map(|(n, l, b)| Piece::Command(n, l, b)),
        1 => (any::<bool>(), proptest::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(m, b)| Piece::Data(m, b)),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Mech {
    Null,
    PlainServer,
    CurveServer,
    CurveClient,
}

fn mech() -> impl Strategy<Value = Mech> {
    prop_oneof![
        Just(Mech::Null),
        Just(Mech::PlainServer),
        Just(Mech::CurveServer),
        Just(Mech::CurveClient),
    ]
}

fn config(m: Mech, t: SocketType) -> (SessionConfig, MechanismName, bool) {
    match m {
        Mech::Null => (SessionConfig::new(t), MechanismName::NULL, false),
        Mech::PlainServer => {
            let mut c = SessionConfig::new(t);
            c.mechanism = MechanismConfig::plain_server();
            (c, MechanismName::PLAIN, false)
        }
        Mech::CurveServer => (
            security_support::curve_server(t),
            MechanismName::CURVE,
            false,
        ),
        // The peer plays the server: its greeting says so.
        Mech::CurveClient => (
            security_support::curve_client(t, security_support::server_public()),
            MechanismName::CURVE,
            true,
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn real_commands_with_hostile_bodies_never_panic(
        m in mech(),
        after_null_ready: bool,
        pieces in proptest::collection::vec(piece(), 1..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        max in proptest::option::of(0u64..5000),
    ) {
        let now = Instant::now();
        let t = SocketType::XPub;
        // After a finished handshake only NULL is reachable without the keys' cooperation.
        let m = if after_null_ready { Mech::Null } else { m };
        let (mut cfg, name, peer_is_server) = config(m, t);
        cfg.max_msg_size = max;
        let mut s = Session::new(cfg, now);
        let mut input = Greeting::ours(name, peer_is_server).encode().to_vec();
        if after_null_ready {
            input.extend(command_frame("READY", None, &ready_body("SUB")));
        }
        for p in &pieces {
            match p {
                Piece::Command(n, lies, body) => {
                    input.extend(command_frame(NAMES[*n], *lies, body));
                }
                Piece::Data(more, body) => input.extend(data_frame(*more, body)),
            }
        }
        let failed = fragments::feed_checked(&mut s, &input, &cuts, max, now, false)?;
        let _ = s.handle_timeout(now + Duration::from_secs(3600));
        prop_assert!(s.is_ready() || failed || s.error().is_some() || !after_null_ready,
            "after READY the session is ready or failed");
    }
}

/// The frames written here are real ones: the same helpers, given well-formed bodies, get a
/// NULL session ready, subscribed and answering a PING (so the hostile cases above reach the
/// parsers past the handshake, not just the framing).
#[test]
fn the_frame_writers_speak_real_zmtp() {
    let now = Instant::now();
    let mut s = Session::new(SessionConfig::new(SocketType::XPub), now);
    let mut input = Greeting::ours(MechanismName::NULL, false).encode().to_vec();
    input.extend(command_frame("READY", None, &ready_body("SUB")));
    input.extend(command_frame("SUBSCRIBE", None, b"topic"));
    input.extend(command_frame(
        "PING",
        None,
        &body_of(&Command::Ping {
            ttl_deciseconds: 0,
            context: Bytes::from_static(b"c"),
        }),
    ));
    let mut buf = BytesMut::from(&input[..]);
    s.handle_input(&mut buf, now).unwrap();
    assert!(s.is_ready());
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(
        events.contains(&omq_core::SessionEvent::Subscribe(Bytes::from_static(
            b"topic"
        ))),
        "{events:?}"
    );
    let out: Vec<u8> = std::iter::from_fn(|| s.poll_transmit())
        .flat_map(|b| b.to_vec())
        .collect();
    assert!(out.windows(5).any(|w| w == b"\x04PONG"), "a PONG went out");
}
