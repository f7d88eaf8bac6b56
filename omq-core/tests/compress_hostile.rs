//! What a hostile peer on `lz4+tcp://` or `zstd+tcp://` can make the receiver do: every bad
//! envelope ends the connection with its own error, before anything is decompressed, and a
//! claimed size never sizes a buffer beyond MAXMSGSIZE and the format's expansion limit.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use omq_core::compress::{lz4, zstd, Compression, CompressionConfig};
use omq_core::error::{CompressionError, SessionError};
use omq_core::wire::command::Command;
use omq_core::wire::frame::encode_header;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::wire::metadata::Metadata;
use omq_core::{Session, SessionConfig, SessionEvent, SocketType};

/// A PULL session on `kind` that has finished its handshake with a PUSH peer.
fn ready(kind: Compression, max: Option<u64>) -> (Session, Instant) {
    let now = Instant::now();
    let mut cfg = SessionConfig::new(SocketType::Pull);
    cfg.max_msg_size = max;
    cfg.compression = Some(CompressionConfig::new(kind));
    let mut s = Session::new(cfg, now);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&Greeting::ours(MechanismName::NULL, false).encode());
    let mut m = Metadata::new();
    m.insert("Socket-Type", Bytes::from_static(b"PUSH"));
    let ready = Command::Ready(m).to_bytes();
    encode_header(&mut buf, false, true, ready.len());
    buf.extend_from_slice(&ready);
    s.handle_input(&mut buf, now).unwrap();
    assert!(s.is_ready());
    while s.poll_transmit().is_some() {}
    while s.poll_event().is_some() {}
    (s, now)
}

fn frame(more: bool, body: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    encode_header(&mut b, more, false, body.len());
    b.put_slice(body);
    b.to_vec()
}

/// Feeds frames and returns the session's result and the messages it delivered.
fn feed(
    kind: Compression,
    max: Option<u64>,
    frames: &[Vec<u8>],
) -> (Result<(), SessionError>, usize) {
    let (mut s, now) = ready(kind, max);
    let mut buf = BytesMut::from(&frames.concat()[..]);
    let mut r = Ok(());
    while !buf.is_empty() && r.is_ok() {
        r = s.handle_input(&mut buf, now);
        if !s.input_pending(&buf) {
            break;
        }
    }
    let mut delivered = 0;
    while let Some(e) = s.poll_event() {
        if matches!(e, SessionEvent::Message(_)) {
            delivered += 1;
        }
    }
    (r, delivered)
}

fn refused(kind: Compression, max: Option<u64>, frames: &[Vec<u8>]) -> CompressionError {
    match feed(kind, max, frames) {
        (Err(SessionError::Compression(e)), 0) => e,
        other => panic!("expected a compression error and nothing delivered, got {other:?}"),
    }
}

fn lz4b(claimed: u64, block: &[u8]) -> Vec<u8> {
    let mut v = b"LZ4B".to_vec();
    v.extend_from_slice(&claimed.to_le_bytes());
    v.extend_from_slice(block);
    v
}

/// A zstd frame for `data` (zrip writes Frame_Content_Size).
fn zstd_frame(data: &[u8]) -> Vec<u8> {
    zrip::compress(data, 1).unwrap()
}

#[test]
fn honest_parts_are_delivered() {
    let data = vec![b'a'; 5000];
    let block = lz4_flex::block::compress(&data);
    let (r, n) = feed(
        Compression::Lz4,
        Some(5000),
        &[frame(false, &lz4b(5000, &block))],
    );
    assert!(r.is_ok() && n == 1, "{r:?}");
    let (r, n) = feed(
        Compression::Zstd,
        Some(5000),
        &[frame(false, &zstd_frame(&data))],
    );
    assert!(r.is_ok() && n == 1, "{r:?}");
}

#[test]
fn a_claim_over_maxmsgsize_summed_over_the_message_is_refused_before_decoding() {
    let data = vec![b'a'; 600];
    let block = lz4_flex::block::compress(&data);
    // 600 plain bytes, then a part claiming 600 more: 1200 > 1000 for the message.
    let first = [&[0u8; 4][..], &data[..]].concat();
    let e = refused(
        Compression::Lz4,
        Some(1000),
        &[frame(true, &first), frame(false, &lz4b(600, &block))],
    );
    assert_eq!(
        e,
        CompressionError::OverBudget {
            claimed: 600,
            left: 400
        }
    );
    let e = refused(
        Compression::Zstd,
        Some(1000),
        &[frame(true, &first), frame(false, &zstd_frame(&data))],
    );
    assert_eq!(
        e,
        CompressionError::OverBudget {
            claimed: 600,
            left: 400
        }
    );
    // Each alone fits: the budget is per message.
    let (r, n) = feed(
        Compression::Lz4,
        Some(1000),
        &[frame(false, &first), frame(false, &lz4b(600, &block))],
    );
    assert!(r.is_ok() && n == 2, "{r:?}");
    // A plain part counts too.
    let e = refused(
        Compression::Zstd,
        Some(1000),
        &[frame(true, &first), frame(false, &first)],
    );
    assert_eq!(
        e,
        CompressionError::OverBudget {
            claimed: 600,
            left: 400
        }
    );
}

#[test]
fn a_claim_beyond_what_the_bytes_can_hold_is_refused_without_a_limit() {
    // No MAXMSGSIZE: a 20-byte part claiming 1 GiB would size a 1 GiB buffer.
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(false, &lz4b(1 << 30, &[0u8; 8]))],
    );
    assert!(matches!(e, CompressionError::Implausible { .. }), "{e:?}");
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(false, &lz4b(1 << 40, &[0u8; 8]))],
    );
    assert_eq!(e, CompressionError::BlockTooLarge(1 << 40));
    // A zstd header claiming 2^40 bytes (descriptor: 8-byte FCS, single segment).
    let mut z = zstd::FRAME_MAGIC.to_vec();
    z.push(0xE0);
    z.extend_from_slice(&(1u64 << 40).to_le_bytes());
    z.extend_from_slice(&[1, 0, 0, 0]);
    let e = refused(Compression::Zstd, None, &[frame(false, &z)]);
    assert!(matches!(e, CompressionError::Implausible { .. }), "{e:?}");
}

#[test]
fn malformed_blocks_are_refused() {
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(false, &lz4b(100, &[0xff; 10]))],
    );
    assert!(matches!(e, CompressionError::Malformed(_)), "{e:?}");
    // A valid block that decodes to less than it claims.
    let block = lz4_flex::block::compress(&[b'a'; 100]);
    let e = refused(Compression::Lz4, None, &[frame(false, &lz4b(200, &block))]);
    assert!(
        matches!(
            e,
            CompressionError::SizeMismatch { .. } | CompressionError::Malformed(_)
        ),
        "{e:?}"
    );
    let e = refused(Compression::Lz4, None, &[frame(false, b"LZ4B\x01")]);
    assert!(matches!(e, CompressionError::ShortPart { .. }), "{e:?}");
    // A zstd frame cut short, and one without Frame_Content_Size.
    let z = zstd_frame(&[b'x'; 3000]);
    let e = refused(Compression::Zstd, None, &[frame(false, &z[..z.len() - 3])]);
    assert!(matches!(e, CompressionError::Malformed(_)), "{e:?}");
    let e = refused(
        Compression::Zstd,
        None,
        &[frame(
            false,
            &[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x50, 1, 0, 0, b'a'],
        )],
    );
    assert_eq!(e, CompressionError::MissingContentSize);
}

#[test]
fn unknown_sentinels_and_short_parts_are_refused() {
    for kind in [Compression::Lz4, Compression::Zstd] {
        // A plain tcp:// peer's part, and the other transport's sentinel.
        let e = refused(kind, None, &[frame(false, b"hello world")]);
        assert_eq!(e, CompressionError::UnknownSentinel(*b"hell"));
        let other = if kind == Compression::Lz4 {
            zstd_frame(&[1; 600])
        } else {
            lz4b(4, &[0x40, 1, 2, 3, 4])
        };
        let e = refused(kind, None, &[frame(false, &other)]);
        assert!(matches!(e, CompressionError::UnknownSentinel(_)), "{e:?}");
        let e = refused(kind, None, &[frame(false, b"\0\0")]);
        assert_eq!(e, CompressionError::ShortPart { len: 2, need: 4 });
    }
}

#[test]
fn dictionaries_come_once_alone_and_within_8_kib() {
    let lz4d = |len: usize| [&lz4::DICT_SENTINEL[..], &vec![b'd'; len]].concat();
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(false, &lz4d(100)), frame(false, &lz4d(100))],
    );
    assert_eq!(e, CompressionError::SecondDict);
    let e = refused(Compression::Lz4, None, &[frame(false, &lz4d(0))]);
    assert_eq!(e, CompressionError::DictSize(0));
    // Over 8 KiB: refused, with or without MAXMSGSIZE (the frame limit leaves room for 8 KiB).
    let e = refused(Compression::Lz4, None, &[frame(false, &lz4d(8193))]);
    assert_eq!(e, CompressionError::DictSize(8193));
    let (r, _) = feed(Compression::Lz4, Some(100), &[frame(false, &lz4d(8193))]);
    assert!(r.is_err());
    let (r, n) = feed(Compression::Lz4, Some(100), &[frame(false, &lz4d(8192))]);
    assert!(
        r.is_ok() && n == 0,
        "an 8 KiB dictionary is fine under a 100-byte limit: {r:?}"
    );
    // With MORE, or inside a multipart message.
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(true, &lz4d(100)), frame(false, b"\0\0\0\0x")],
    );
    assert_eq!(e, CompressionError::DictInMultipart);
    let e = refused(
        Compression::Lz4,
        None,
        &[frame(true, b"\0\0\0\0x"), frame(false, &lz4d(100))],
    );
    assert_eq!(e, CompressionError::DictInMultipart);
    // zstd: not a ZDICT blob behind the magic, and a second one.
    let e = refused(
        Compression::Zstd,
        None,
        &[frame(false, &[0x37, 0xA4, 0x30, 0xEC, 1, 2, 3])],
    );
    assert!(matches!(e, CompressionError::BadDict(_)), "{e:?}");
    let mut big = zstd::DICT_MAGIC.to_vec();
    big.resize(9000, 7);
    let e = refused(Compression::Zstd, None, &[frame(false, &big)]);
    assert_eq!(e, CompressionError::DictSize(9000));
}

#[test]
fn the_error_reaches_the_socket_as_a_disconnect_cause() {
    use omq_core::simnet::Net;
    use omq_core::{EventKind, Options};
    // A PULL on lz4+tcp:// and a PUSH on plain tcp:// to the same port: the handshake works,
    // the first part fails sentinel dispatch, and the monitor says why.
    let mut net = Net::new(1);
    let pull = net.socket(SocketType::Pull, Options::default()).unwrap();
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    net.monitor(pull);
    let ep = net.bind(pull, "lz4+tcp://127.0.0.1:0").unwrap();
    assert!(ep.starts_with("lz4+tcp://"), "{ep}");
    let plain = ep.replacen("lz4+tcp", "tcp", 1);
    net.connect(push, &plain).unwrap();
    net.send(push, omq_core::Message::from("hello world"))
        .unwrap();
    net.run_for(std::time::Duration::from_secs(1));
    let events = net.events(pull);
    let cause = events
        .iter()
        .find(|e| e.kind == EventKind::Disconnected)
        .and_then(|e| e.cause.clone())
        .expect("a DISCONNECTED event with its cause");
    assert!(
        format!("{cause:?}").contains("UnknownSentinel"),
        "{cause:?}"
    );
}
