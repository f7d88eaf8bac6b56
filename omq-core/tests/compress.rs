//! `lz4+tcp://` and `zstd+tcp://`: the part envelope round-trips under any split of the byte
//! stream, with and without dictionaries, under NULL, PLAIN and CURVE; and what goes on the
//! wire is what the omq.rs drafts say.

use bytes::Bytes;
use proptest::prelude::*;

use omq_core::compress::{lz4, zstd, Compression, CompressionConfig, Decoded, TrainingParams};
use omq_core::mechanism::{generate_keypair, MechanismConfig};
use omq_core::sim::{Direction, LinkConfig, Pair};
use omq_core::wire::frame::{FrameDecoder, FLAG_MORE};
use omq_core::{CompressionError, Message, Part, SessionConfig, SocketType};
use rand_chacha::rand_core::SeedableRng;

/// A JSON record like the telemetry the transports are for.
fn json(i: usize, len: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut k = 0;
    while s.len() < len {
        s.push_str(&format!(
            "{{\"id\":{i},\"seq\":{k},\"sensor\":\"temperature-{}\",\"unit\":\"C\",\"value\":{}.{}}},",
            i % 7,
            20 + (i * 31 + k) % 10,
            (i * 17 + k) % 100
        ));
        k += 1;
    }
    s.truncate(len);
    s.into_bytes()
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..64),
        2 => (0usize..1000, 0usize..3000).prop_map(|(i, n)| json(i, n)),
        1 => proptest::collection::vec(any::<u8>(), 500..3000),
        1 => (0usize..1000, 8000usize..40000).prop_map(|(i, n)| json(i, n)),
    ]
}

/// A ZDICT dictionary trained from JSON records.
fn zstd_dict() -> Bytes {
    let mut t =
        omq_core::compress::train::Trainer::new(TrainingParams::for_kind(Compression::Zstd));
    for i in 0..1000 {
        t.sample(&json(i, 300));
    }
    t.train(Compression::Zstd, 7).expect("trains")
}

#[derive(Debug, Clone, Copy)]
enum Dict {
    None,
    Static,
    Trained,
}

fn config(t: SocketType, kind: Compression, dict: Dict, mech: MechanismConfig) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    let mut cc = CompressionConfig::new(kind);
    match dict {
        Dict::None => {}
        Dict::Static => {
            cc.dict = Some(match kind {
                Compression::Lz4 => Bytes::from(json(99, 2048)),
                _ => zstd_dict(),
            })
        }
        Dict::Trained => cc.auto_train = true,
    }
    cc.seed = 42;
    c.compression = Some(cc);
    c.mechanism = mech;
    c
}

fn mechanisms(which: u8) -> (MechanismConfig, MechanismConfig) {
    match which {
        0 => (MechanismConfig::Null, MechanismConfig::Null),
        1 => (
            MechanismConfig::plain_client("user", "pass").unwrap(),
            MechanismConfig::plain_server(),
        ),
        _ => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let server = generate_keypair(&mut rng);
            let client = generate_keypair(&mut rng);
            (
                MechanismConfig::curve_client(*server.public(), client),
                MechanismConfig::curve_server(server),
            )
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn compressed_sessions_deliver_every_message_under_any_fragmentation(
        msgs in proptest::collection::vec(proptest::collection::vec(body(), 1..4), 1..10),
        zstd in any::<bool>(),
        dict in prop_oneof![Just(Dict::None), Just(Dict::Static), Just(Dict::Trained)],
        mech in 0u8..3,
        max_piece in 1usize..3000,
        seed: u64,
    ) {
        let kind = if zstd { Compression::Zstd } else { Compression::Lz4 };
        let (ma, mb) = mechanisms(mech);
        let link = LinkConfig { max_piece, ..LinkConfig::default() };
        let mut p = Pair::with_links(
            config(SocketType::Dealer, kind, dict, ma),
            config(SocketType::Router, kind, dict, mb),
            link.clone(), link, seed);
        p.drive();
        prop_assert!(p.a.session.is_ready() && p.b.session.is_ready());
        let msgs: Vec<Message> = msgs.into_iter().map(Message::multipart).collect();
        // Enough traffic for training to trigger (LZ4 after 100 samples) mid-stream.
        let rounds = if matches!(dict, Dict::Trained) { 12 } else { 1 };
        let mut sent = Vec::new();
        for _ in 0..rounds {
            for m in &msgs {
                p.a.session.send_message(m).unwrap();
                p.b.session.send_message(m).unwrap();
                sent.push(m.clone());
            }
            p.drive();
        }
        prop_assert!(p.a.error.is_none() && p.b.error.is_none(), "{:?} {:?}", p.a.error, p.b.error);
        prop_assert_eq!(p.a.messages(), sent.clone());
        prop_assert_eq!(p.b.messages(), sent);
    }
}

/// Sends `msgs` from a to b over a compressed pair and returns the message frames b received
/// (flags, body) as they were on the wire.
fn wire_frames(kind: Compression, dict: Dict, msgs: &[Message]) -> Vec<(u8, Bytes)> {
    let mut p = Pair::new(
        config(SocketType::Push, kind, dict, MechanismConfig::Null),
        config(SocketType::Pull, kind, dict, MechanismConfig::Null),
    );
    p.drive();
    p.hold(Direction::AToB, true);
    for m in msgs {
        p.a.session.send_message(m).unwrap();
    }
    p.drive();
    let bytes: Vec<u8> = p.intercept(Direction::AToB).concat();
    let mut buf = bytes::BytesMut::from(&bytes[..]);
    let mut dec = FrameDecoder::new(None);
    let mut out = Vec::new();
    while let Some(f) = dec.decode(&mut buf).unwrap() {
        out.push((f.flags, f.body.to_bytes()));
    }
    out
}

#[test]
fn lz4_envelopes_are_the_drafts() {
    let big = json(1, 2000);
    let frames = wire_frames(
        Compression::Lz4,
        Dict::None,
        &[Message::multipart([&b"topic"[..], &big[..]])],
    );
    assert_eq!(frames.len(), 2);
    // Small parts go as they are behind four zero bytes.
    assert_eq!(frames[0].0, FLAG_MORE);
    assert_eq!(&frames[0].1[..], b"\0\0\0\0topic");
    // Large compressible ones as LZ4B | size u64 LE | block.
    let b = &frames[1].1;
    assert_eq!(&b[..4], b"LZ4B");
    assert_eq!(u64::from_le_bytes(b[4..12].try_into().unwrap()), 2000);
    assert!(
        b.len() < 1000,
        "2000 bytes of JSON compressed to {}",
        b.len()
    );
    assert_eq!(
        lz4_flex::block::decompress(&b[12..], 2000).unwrap(),
        big,
        "a raw LZ4 block"
    );
}

#[test]
fn a_static_dictionary_is_shipped_once_and_first() {
    let msgs: Vec<Message> = (0..3).map(|i| Message::from(json(i, 300))).collect();
    let frames = wire_frames(Compression::Lz4, Dict::Static, &msgs);
    assert_eq!(frames.len(), 4);
    assert_eq!(frames[0].0, 0, "a single-part message");
    assert_eq!(&frames[0].1[..4], b"LZ4D");
    assert_eq!(frames[0].1.len(), 4 + 2048);
    for (_, b) in &frames[1..] {
        assert_eq!(
            &b[..4],
            b"LZ4B",
            "300-byte parts compress with a dictionary"
        );
    }

    let frames = wire_frames(Compression::Zstd, Dict::Static, &msgs);
    assert_eq!(frames.len(), 4);
    assert_eq!(
        &frames[0].1[..],
        &zstd_dict()[..],
        "the ZDICT blob as it is"
    );
    for (_, b) in &frames[1..] {
        assert_eq!(&b[..4], &zstd::FRAME_MAGIC);
    }
}

#[test]
fn zstd_frames_carry_their_content_size() {
    let big = json(3, 5000);
    let frames = wire_frames(Compression::Zstd, Dict::None, &[Message::from(big.clone())]);
    let b = &frames[0].1;
    assert_eq!(&b[..4], &zstd::FRAME_MAGIC);
    let h = zrip::frame::header::parse_frame_header(b).unwrap();
    assert_eq!(h.frame_content_size, Some(5000));
    assert_eq!(zrip::decompress(b).unwrap(), big);
}

#[test]
fn incompressible_parts_go_as_they_are() {
    let mut noise = vec![0u8; 4000];
    let mut x = 0x1234_5678_u32;
    for b in &mut noise {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    // Even one that starts like a sentinel: the zero prefix disambiguates it.
    noise[..4].copy_from_slice(b"LZ4B");
    for kind in [Compression::Lz4, Compression::Zstd] {
        let frames = wire_frames(kind, Dict::None, &[Message::from(noise.clone())]);
        assert_eq!(&frames[0].1[..4], &[0, 0, 0, 0]);
        assert_eq!(&frames[0].1[4..], &noise[..]);
    }
}

#[test]
fn auto_training_ships_one_dictionary_after_enough_traffic() {
    let msgs: Vec<Message> = (0..150).map(|i| Message::from(json(i, 400))).collect();
    let frames = wire_frames(Compression::Lz4, Dict::Trained, &msgs);
    let dicts: Vec<usize> = frames
        .iter()
        .enumerate()
        .filter(|(_, (_, b))| b.starts_with(b"LZ4D"))
        .map(|(i, _)| i)
        .collect();
    // The 100th message is the 100th sample: the dictionary is trained and goes out just
    // before it, and that message is the first compressed with it.
    assert_eq!(dicts, vec![99]);
    assert!(frames[99].1.len() - 4 <= 2048);
    assert_eq!(frames.len(), 151);

    let msgs: Vec<Message> = (0..1100).map(|i| Message::from(json(i, 300))).collect();
    let frames = wire_frames(Compression::Zstd, Dict::Trained, &msgs);
    let dicts: Vec<usize> = frames
        .iter()
        .enumerate()
        .filter(|(_, (_, b))| b.starts_with(&zstd::DICT_MAGIC))
        .map(|(i, _)| i)
        .collect();
    // 100 KiB of 300-byte samples: after 342 messages.
    assert_eq!(dicts.len(), 1);
    let d = &frames[dicts[0]].1;
    let id = u32::from_le_bytes(d[4..8].try_into().unwrap());
    assert!((32768..(1 << 31)).contains(&id), "dictionary id {id}");
    // Messages after it are smaller than before it.
    let before = frames[dicts[0] - 1].1.len();
    let after = frames[dicts[0] + 1].1.len();
    assert!(
        after < before,
        "{after} bytes with the dictionary, {before} without"
    );
}

#[test]
fn lz4_multi_block_parts_round_trip() {
    // LZ4M is for parts over 1 GiB; decode a hand-made one with small blocks' layout to
    // check the block walk (two blocks of a 1 GiB part would need 2 GiB here).
    let part = json(5, 3000);
    let block = lz4_flex::block::compress(&part);
    let mut wire = b"LZ4M".to_vec();
    wire.extend_from_slice(&(part.len() as u64).to_le_bytes());
    wire.extend_from_slice(&(block.len() as u32).to_le_bytes());
    wire.extend_from_slice(&block);
    assert_eq!(lz4::decode(&wire, None, u64::MAX).unwrap(), part);
    // Bytes after the last block are refused.
    wire.push(0);
    assert!(lz4::decode(&wire, None, u64::MAX).is_err());
}

/// A dictionary the transport cannot use is refused, with the reason, before any connection:
/// one of the wrong size when the option is set, one that is not a ZDICT when a socket with it
/// binds or connects a `zstd+tcp://` endpoint (it would fail on every connection otherwise).
#[test]
fn unusable_dictionaries_are_refused_before_any_connection() {
    use omq_core::options::{OptionError, OptionName};
    use omq_core::{Options, Socket, SocketError};
    use std::time::Instant;

    let check = |what: &str, r: Result<(), SocketError>, refused: Option<&str>| match (refused, r) {
        (None, Ok(())) => {}
        (
            Some(why),
            Err(SocketError::Option(OptionError::InvalidValue {
                option: OptionName::CompressionDict,
                reason,
            })),
        ) => assert!(reason.contains(why), "{what}: {reason}"),
        (want, got) => panic!("{what}: {got:?}, want {want:?}"),
    };
    let dict = |d: Bytes| Options::default().compression_dict(Some(d));
    for (len, refused) in [
        (0, Some("1 to 8192")),
        (8193, Some("1 to 8192")),
        (8192, None),
    ] {
        let r = Socket::new(SocketType::Push, dict(Bytes::from(vec![7u8; len])), 1);
        check(&format!("{len} bytes"), r.map(|_| ()), refused);
    }
    let raw = Bytes::from(json(1, 2000));
    for (scheme, d, refused) in [
        ("lz4+tcp", raw.clone(), None),
        ("zstd+tcp", raw.clone(), Some("ZDICT")),
        ("zstd+tcp", zstd_dict(), None),
        // A plain tcp endpoint does not use the dictionary at all.
        ("tcp", raw, None),
    ] {
        let ep = format!("{scheme}://127.0.0.1:5555");
        let mut s = Socket::new(SocketType::Push, dict(d.clone()), 1).unwrap();
        check(&format!("bind {scheme}"), s.bind(&ep).map(|_| ()), refused);
        let mut s = Socket::new(SocketType::Push, dict(d), 1).unwrap();
        let r = s.connect(&ep, Instant::now()).map(|_| ());
        check(&format!("connect {scheme}"), r, refused);
    }
}

/// A socket gives each connection on a compressed endpoint the transport and the socket's
/// compression options, on the connecting side as on the accepting one, with fresh randomness
/// for each; a plain tcp connection gets none.
#[test]
fn sockets_hand_each_compressed_connection_its_options() {
    use omq_core::Socket;
    use std::time::Instant;
    let now = Instant::now();
    let opts = || {
        omq_core::Options::default()
            .compression_level(3)
            .compression_auto_train(true)
    };
    let mut s = Socket::new(SocketType::Push, opts(), 1).unwrap();
    let mut seeds = Vec::new();
    for (ep, kind) in [
        ("zstd+tcp://127.0.0.1:5555", Some(Compression::Zstd)),
        ("lz4+tcp://127.0.0.1:5556", Some(Compression::Lz4)),
        ("tcp://127.0.0.1:5557", None),
    ] {
        s.connect(ep, now).unwrap();
        let pipe = match s.poll_action() {
            Some(omq_core::Action::Dial { pipe, .. }) => pipe,
            a => panic!("{a:?}"),
        };
        let c = s.handle_connected(pipe, now).unwrap().compression;
        assert_eq!(c.as_ref().map(|c| c.kind), kind, "{ep}");
        if let Some(c) = c {
            assert_eq!((c.level, c.auto_train), (3, true), "{ep}");
            seeds.push(c.seed);
        }
    }
    let mut s = Socket::new(SocketType::Pull, opts(), 2).unwrap();
    let (_, c) = s.handle_accepted("lz4+tcp://127.0.0.1:5558", now);
    let c = c
        .compression
        .expect("an accepted lz4+tcp connection compresses");
    assert_eq!((c.kind, c.level, c.auto_train), (Compression::Lz4, 3, true));
    seeds.push(c.seed);
    let (_, c) = s.handle_accepted("tcp://127.0.0.1:5559", now);
    assert!(c.compression.is_none());
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 3, "each connection has its own seed");
}

/// The dictionary rule itself, for an embedder that builds its session config by hand
/// (sockets check the option first): 1 to 8192 bytes, whatever the transport.
#[test]
fn check_dict_takes_1_to_8192_bytes() {
    use omq_core::compress::check_dict;
    for kind in [Compression::Lz4, Compression::Zstd] {
        assert!(check_dict(kind, &[]).is_err(), "{kind:?} empty");
        assert!(check_dict(kind, &[7u8; 8193]).is_err(), "{kind:?} 8193");
    }
    assert!(check_dict(Compression::Lz4, &[7u8; 8192]).is_ok());
    assert!(check_dict(Compression::Lz4, &[7u8]).is_ok());
    let mut config = CompressionConfig::new(Compression::Lz4);
    config.dict = Some(Bytes::from(vec![7u8; 8193]));
    assert!(omq_core::compress::Codec::new(&config).is_err());
}

fn codec(kind: Compression, dict: Option<Bytes>) -> omq_core::compress::Codec {
    let mut c = CompressionConfig::new(kind);
    c.dict = dict;
    omq_core::compress::Codec::new(&c).unwrap()
}

/// `has_send_dict` says whether this side compresses with a dictionary: from the start with a
/// static one, after training with auto-training, never without either.
#[test]
fn has_send_dict_follows_the_dictionary() {
    assert!(!codec(Compression::Lz4, None).has_send_dict());
    assert!(codec(Compression::Lz4, Some(Bytes::from_static(b"dictionary"))).has_send_dict());
    let mut c = CompressionConfig::new(Compression::Lz4);
    c.auto_train = true;
    let mut auto = omq_core::compress::Codec::new(&c).unwrap();
    assert!(!auto.has_send_dict());
    for i in 0..100 {
        let part = json(i, 300);
        auto.start_message(std::iter::once(&part[..]));
    }
    assert!(auto.has_send_dict(), "trained after 100 samples");
}

/// MAXMSGSIZE holds to the byte for a plain part and for a compressed one: a message of
/// exactly the limit passes, one byte more is refused.
#[test]
fn the_size_limit_is_exact_for_plain_and_compressed_parts() {
    let mut plain = vec![0u8; 4];
    plain.extend_from_slice(&[9u8; 10]);
    let compressed = codec(Compression::Lz4, None).encode_part(&[b'a'; 1000]);
    assert_eq!(&compressed[..4], b"LZ4B");
    for (wire, len) in [(Bytes::from(plain), 10u64), (compressed, 1000)] {
        let mut c = codec(Compression::Lz4, None);
        let ok = c.decode_part(Part::from(wire.clone()), false, Some(len));
        assert!(matches!(ok, Ok(Decoded::Part(p)) if p.len() as u64 == len));
        let over = c.decode_part(Part::from(wire), false, Some(len - 1));
        assert!(
            matches!(over, Err(CompressionError::OverBudget { .. })),
            "{over:?}"
        );
    }
}

/// A zstd dictionary of up to 8192 bytes is taken, one byte more is refused (a ZDICT blob
/// padded with content is still one).
#[test]
fn a_peer_dictionary_of_8192_bytes_is_taken() {
    let mut blob = zstd_dict().to_vec();
    blob.resize(8192, b'x');
    let mut c = codec(Compression::Zstd, None);
    let r = c.decode_part(Part::from(blob.clone()), false, None);
    assert!(matches!(r, Ok(Decoded::Dictionary)), "{r:?}");
    blob.push(b'x');
    let mut c = codec(Compression::Zstd, None);
    let r = c.decode_part(Part::from(blob), false, None);
    assert!(matches!(r, Err(CompressionError::DictSize(8193))), "{r:?}");
}

/// The largest wire frame a receiver with a MAXMSGSIZE must take: the limit plus the LZ4
/// envelope (12 bytes and 4 per started GiB), and never less than a dictionary message.
#[test]
fn wire_limit_adds_the_envelope() {
    use omq_core::compress::Codec;
    const GIB: u64 = 1 << 30;
    assert_eq!(Codec::wire_limit(None), None);
    assert_eq!(Codec::wire_limit(Some(100)), Some(4 + 8192));
    assert_eq!(Codec::wire_limit(Some(1 << 20)), Some((1 << 20) + 12 + 4));
    assert_eq!(Codec::wire_limit(Some(3 * GIB)), Some(3 * GIB + 12 + 16));
    assert_eq!(Codec::wire_limit(Some(u64::MAX)), Some(u64::MAX));
}

/// A codec's worth-it rule at its boundary: searches parts made of a compressible run and then
/// random bytes (the run growing, seeded by `seed`) until it meets both a part whose compressed
/// envelope (`compressed`) is exactly one byte shorter than its plain one (`plain` of its length),
/// which must be sent compressed (`sent`), and one where the two tie, which must go plain.
/// Returns the random source, to go on drawing from it.
fn check_sent_only_when_shorter(
    seed: u64,
    lens: std::ops::Range<usize>,
    runs: std::ops::Range<usize>,
    compressed: impl Fn(&[u8]) -> usize,
    plain: impl Fn(usize) -> usize,
    sent: impl Fn(&[u8]) -> bool,
) -> omq_core::rng::SplitMix64 {
    let mut rng = omq_core::rng::SplitMix64::new(seed);
    let (mut saves_one, mut ties) = (false, false);
    'search: for len in lens {
        for run in runs.clone() {
            let mut part = vec![b'r'; run];
            part.extend((run..len).map(|_| rng.next_u64() as u8));
            let (c, p) = (compressed(&part), plain(part.len()));
            if c + 1 == p {
                assert!(sent(&part), "shorter by a byte: compressed");
                saves_one = true;
            } else if c == p {
                assert!(!sent(&part), "a tie: plain");
                ties = true;
            }
            if saves_one && ties {
                break 'search;
            }
        }
    }
    assert!(saves_one && ties, "both cases met");
    rng
}

/// LZ4 compresses parts from 512 bytes up, or from 128 with a dictionary.
#[test]
fn lz4_compresses_from_its_minimum_size() {
    use lz4::encode;
    let dict = Bytes::from_static(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert!(encode(&[b'a'; 511], None).is_none());
    assert!(encode(&[b'a'; 512], None).is_some());
    assert!(encode(&[b'a'; 127], Some(&dict)).is_none());
    assert!(encode(&[b'a'; 128], Some(&dict)).is_some());
}

/// An LZ4 envelope goes out only when it is shorter than the plain one (the part and four
/// bytes): a part that compression shortens by exactly one byte over that is compressed, one
/// where the two tie goes plain.
#[test]
fn lz4_compresses_only_what_it_shortens() {
    let mut rng = check_sent_only_when_shorter(
        3,
        600..700,
        0..64,
        |part| lz4_flex::block::compress(part).len() + 12,
        |len| len + 4,
        |part| lz4::encode(part, None).is_some(),
    );
    // Random bytes do not compress: they go plain.
    let noise: Vec<u8> = (0..600).map(|_| rng.next_u64() as u8).collect();
    assert!(lz4::encode(&noise, None).is_none());
}

/// zstd compresses parts from 512 bytes up, or from 64 with a dictionary; a frame goes out
/// only when it and the four bytes of the plain envelope are shorter than the part (a frame
/// one byte shorter than that is sent, one that ties is not).
#[test]
fn zstd_compresses_from_its_minimum_size_and_only_what_it_shortens() {
    let dict = zstd::parse_dict(&zstd_dict()).unwrap();
    assert!(zstd::encode(&[b'a'; 511], 1, None).is_none());
    assert!(zstd::encode(&[b'a'; 512], 1, None).is_some());
    assert!(zstd::encode(&[b'a'; 63], 1, Some(&dict)).is_none());
    assert!(zstd::encode(&[b'a'; 64], 1, Some(&dict)).is_some());

    check_sent_only_when_shorter(
        5,
        600..800,
        0..96,
        |part| zrip::compress(part, 1).unwrap().len() + 4,
        |len| len,
        |part| zstd::encode(part, 1, None).is_some(),
    );
}

/// A zstd frame may expand up to 32 KiB-fold (an RLE block of four bytes says 128 KiB): 1 MiB
/// of zeros, a few dozen bytes on the wire, is plausible and decodes.
#[test]
fn a_highly_compressed_zstd_frame_is_plausible() {
    let part = vec![0u8; 1 << 20];
    let frame = zstd::encode(&part, 1, None).unwrap();
    assert!(frame.len() * 2048 < part.len(), "{} bytes", frame.len());
    assert_eq!(zstd::decode(&frame, None, u64::MAX).unwrap(), part);
}
