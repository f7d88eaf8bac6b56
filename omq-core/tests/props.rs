//! Property tests: codec round trips under any fragmentation, and hostile input never panics.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

mod fragments;
use fragments::split_at_points;

use omq_core::sim::{LinkConfig, Pair};
use omq_core::wire::command::Command;
use omq_core::wire::frame::{encode_header, Frame, FrameDecoder};
use omq_core::wire::greeting::{Greeting, MechanismName, GREETING_LEN};
use omq_core::wire::metadata::Metadata;
use omq_core::wire::tx::TxQueue;
use omq_core::{Message, Part, Session, SessionConfig, SocketType};

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..64),
        2 => proptest::collection::vec(any::<u8>(), 200..300),
        1 => proptest::collection::vec(any::<u8>(), 4000..12000),
    ]
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._+-]{1,40}"
}

fn metadata() -> impl Strategy<Value = Metadata> {
    proptest::collection::vec((name(), body()), 0..6).prop_map(|props| {
        let mut m = Metadata::new();
        for (n, v) in props {
            m.insert(&n, Bytes::from(v));
        }
        m
    })
}

fn command() -> impl Strategy<Value = Command> {
    let b = || body().prop_map(Bytes::from);
    prop_oneof![
        metadata().prop_map(Command::Ready),
        proptest::collection::vec(any::<u8>(), 0..256).prop_map(|r| Command::Error {
            reason: Bytes::from(r)
        }),
        b().prop_map(Command::Subscribe),
        b().prop_map(Command::Cancel),
        (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(t, c)| {
            Command::Ping {
                ttl_deciseconds: t,
                context: Bytes::from(c),
            }
        }),
        b().prop_map(|c| Command::Pong { context: c }),
        b().prop_map(Command::Join),
        b().prop_map(Command::Leave),
        ("X-[A-Z]{1,10}", b()).prop_map(|(n, d)| Command::Other {
            name: Bytes::from(n),
            data: d
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn frames_round_trip_under_any_split(
        frames in proptest::collection::vec((any::<bool>(), any::<bool>(), body()), 1..20),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
    ) {
        let mut tx = TxQueue::new();
        for (more, command, b) in &frames {
            let part = Part::from(b.clone());
            // Commands never carry MORE.
            tx.push_frame(*more && !*command, *command, &part, part.shared());
        }
        let mut wire = Vec::new();
        while let Some(c) = tx.poll_transmit() {
            wire.extend_from_slice(&c);
        }
        let mut decoder = FrameDecoder::new(None);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in split_at_points(&wire, &cuts) {
            buf.extend_from_slice(&piece);
            while let Some(f) = decoder.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        prop_assert!(buf.is_empty());
        let want: Vec<Frame> = frames
            .iter()
            .map(|(more, command, b)| {
                let part = Part::from(b.clone());
                if *command { Frame::command(part) } else { Frame::message(part, *more) }
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn commands_round_trip(cmd in command()) {
        let bytes = cmd.to_bytes();
        prop_assert_eq!(bytes.len(), cmd.encoded_len());
        prop_assert_eq!(Command::decode(&bytes).unwrap(), cmd);
    }

    #[test]
    fn metadata_round_trips(m in metadata()) {
        let mut out = BytesMut::new();
        m.encode(&mut out);
        prop_assert_eq!(Metadata::decode(&out.freeze()).unwrap(), m);
    }

    #[test]
    fn greeting_round_trips(minor in 0u8..=255, mech in "[A-Z]{1,20}", as_server: bool, padding: [u8; 8]) {
        let mut g = Greeting::ours(MechanismName::new(mech.as_bytes()), as_server);
        g.minor = minor;
        let mut raw = g.encode();
        // Padding is ignored whatever it holds.
        raw[1..9].copy_from_slice(&padding);
        prop_assert_eq!(Greeting::decode(&raw).unwrap(), g);
    }

    #[test]
    fn metadata_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Metadata::decode(&Bytes::from(data));
    }

    #[test]
    fn command_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Command::decode(&Bytes::from(data));
    }

    #[test]
    fn sessions_deliver_every_message_under_any_fragmentation(
        msgs in proptest::collection::vec(proptest::collection::vec(body(), 1..4), 1..12),
        max_piece in 1usize..600,
        seed: u64,
    ) {
        let link = LinkConfig { max_piece, ..LinkConfig::default() };
        let mut p = Pair::with_links(
            SessionConfig::new(SocketType::Dealer),
            SessionConfig::new(SocketType::Router),
            link.clone(), link, seed);
        p.drive();
        let msgs: Vec<Message> = msgs.into_iter().map(Message::multipart).collect();
        for m in &msgs {
            p.a.session.send_message(m).unwrap();
            p.b.session.send_message(m).unwrap();
        }
        p.drive();
        prop_assert_eq!(p.a.messages(), msgs.clone());
        prop_assert_eq!(p.b.messages(), msgs);
    }

    /// Any bytes at all, fed in any pieces, end in progress or a clean error: never a panic,
    /// and after an error the session stays failed.
    #[test]
    fn hostile_bytes_never_panic(
        handshake_first: bool,
        garbage in proptest::collection::vec(any::<u8>(), 0..2000),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
        max in proptest::option::of(0u64..5000),
    ) {
        let now = std::time::Instant::now();
        let mut cfg = SessionConfig::new(SocketType::XPub);
        cfg.max_msg_size = max;
        let mut s = Session::new(cfg, now);
        let mut input = Vec::new();
        if handshake_first {
            input.extend_from_slice(&Greeting::ours(MechanismName::NULL, false).encode());
            let mut m = Metadata::new();
            m.insert("Socket-Type", Bytes::from_static(b"SUB"));
            let ready = Command::Ready(m).to_bytes();
            let mut hdr = BytesMut::new();
            encode_header(&mut hdr, false, true, ready.len());
            input.extend_from_slice(&hdr);
            input.extend_from_slice(&ready);
        }
        input.extend_from_slice(&garbage);
        fragments::feed_checked(&mut s, &input, &cuts, max, now, true)?;
        let _ = GREETING_LEN;
    }
}
