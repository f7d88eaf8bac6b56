//! The seed corpus: meaningful starting inputs for every target, written by
//! `cargo run --example seeds` into `fuzz/corpus/<target>/`.
//!
//! Session seeds are transcripts of real handshakes: a well-behaved peer session with the same
//! fixed keys and entropy as the targets' talks to the session a target builds, and what the
//! peer sent is recorded, so the seed replays exactly and the fuzzer starts past the
//! cryptography it could never forge.

use std::fs;
use std::io;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use omq_core::wire::command::Command;
use omq_core::wire::frame::{encode_header, FLAG_COMMAND, FLAG_LONG, FLAG_MORE};
use omq_core::wire::greeting::{Greeting, MechanismName, GREETING_LEN};
use omq_core::wire::metadata::Metadata;
use omq_core::wire::tx::TxQueue;
use omq_core::{Message, Part, Session, SessionConfig, SessionEvent, SocketType};

use crate::session::op;
use crate::setup::{Cfg, Side};

/// Writes every seed under `root` (one folder per target). Returns how many were written.
pub fn write_all(root: &Path) -> io::Result<usize> {
    let mut n = 0;
    let mut put = |target: &str, name: &str, data: &[u8]| -> io::Result<()> {
        let dir = root.join(target);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join(format!("seed-{name}")), data)?;
        n += 1;
        Ok(())
    };
    for (name, data) in greetings() {
        put("greeting", &name, &data)?;
    }
    for (name, data) in frames() {
        put("frame", &name, &data)?;
    }
    for (name, data) in commands() {
        put("command", &name, &data)?;
    }
    for (name, data) in metadata() {
        put("metadata", &name, &data)?;
    }
    for side in Side::ALL {
        for (name, data) in sessions(side) {
            put(side.target(), &name, &data)?;
        }
    }
    for (name, data) in session_pairs() {
        put("session_pair", &name, &data)?;
    }
    for (name, data) in sockets() {
        put("socket", &name, &data)?;
    }
    for (name, data) in compressed() {
        put("compress", &name, &data)?;
    }
    Ok(n)
}

/// Seeds for the `compress` target: real envelopes (plain, LZ4B, LZ4M-sized claims, zstd
/// frames, dictionaries) as a peer's parts, and round trips of JSON-like and random parts.
fn compressed() -> Vec<(String, Vec<u8>)> {
    use omq_core::compress::{Codec, Compression, CompressionConfig};
    let json = |i: usize| -> Vec<u8> {
        format!("{{\"id\":{i},\"sensor\":\"t-{}\",\"unit\":\"C\",\"value\":21.5}}", i % 5)
            .repeat(12)
            .into_bytes()
    };
    let part = |out: &mut Vec<u8>, more: bool, body: &[u8]| {
        out.push(u8::from(more));
        out.extend_from_slice(&(body.len().min(65_535) as u16).to_be_bytes());
        out.extend_from_slice(&body[..body.len().min(65_535)]);
    };
    let mut seeds = Vec::new();
    for (kind, bit, name) in [(Compression::Lz4, 0u8, "lz4"), (Compression::Zstd, 1, "zstd")] {
        let codec = Codec::new(&CompressionConfig::new(kind)).expect("codec");
        // Hostile mode: what a real sender writes, MAXMSGSIZE 64 KiB.
        let mut hostile = vec![bit, 0, 64];
        for i in 0..4 {
            part(&mut hostile, i % 2 == 0, &codec.encode_part(&json(i)));
        }
        part(&mut hostile, false, &codec.encode_part(b"tiny"));
        seeds.push((format!("{name}-parts"), hostile));
        // Round trip: a multipart message and single ones, with and without a dictionary.
        for dict in [0u8, 4] {
            let mut rt = vec![bit | 2 | dict, 0, 16];
            if dict != 0 && kind == Compression::Lz4 {
                let d = json(99);
                rt.push(d.len().min(255) as u8);
                rt.extend_from_slice(&d[..d.len().min(255)]);
            }
            part(&mut rt, true, b"envelope");
            part(&mut rt, false, &json(1));
            for i in 2..6 {
                part(&mut rt, false, &json(i));
            }
            seeds.push((format!("{name}-round-trip-{dict}"), rt));
        }
    }
    seeds
}

fn greetings() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for (name, mech) in [
        ("null", MechanismName::NULL),
        ("plain", MechanismName::PLAIN),
        ("curve", MechanismName::CURVE),
    ] {
        for server in [false, true] {
            let g = Greeting::ours(mech, server).encode();
            v.push((format!("{name}-server{}", server as u8), g.to_vec()));
        }
    }
    let mut zmtp30 = Greeting::ours(MechanismName::NULL, false);
    zmtp30.minor = 0;
    v.push(("zmtp30".into(), zmtp30.encode().to_vec()));
    let mut old = Greeting::ours(MechanismName::NULL, false).encode();
    old[10] = 2;
    v.push(("zmtp20".into(), old.to_vec()));
    let mut nonzero_padding = Greeting::ours(MechanismName::PLAIN, true).encode();
    nonzero_padding[1..9].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    nonzero_padding[32] = 7;
    v.push(("padding".into(), nonzero_padding.to_vec()));
    v.push((
        "signature".into(),
        Greeting::ours(MechanismName::NULL, false).encode()[..10].to_vec(),
    ));
    v.push(("zmtp10".into(), b"\x05hello".to_vec()));
    v
}

/// The wire bytes of frames queued through the real encoder.
fn wire(frames: &[(bool, bool, Vec<u8>)]) -> Vec<u8> {
    let mut tx = TxQueue::new();
    for (more, command, body) in frames {
        let part = Part::from(body.clone());
        tx.push_frame(*more, *command, &part, part.shared());
    }
    let mut out = Vec::new();
    while let Some(c) = tx.poll_transmit() {
        out.extend_from_slice(&c);
    }
    out
}

fn frames() -> Vec<(String, Vec<u8>)> {
    let ready = Command::Ready(Metadata::new()).to_bytes().to_vec();
    let stream = wire(&[
        (true, false, b"a".to_vec()),
        (true, false, vec![]),
        (false, false, vec![7; 40]),
        (false, true, ready),
        (false, false, vec![1; 300]),
        (false, false, vec![2; 600]),
    ]);
    let mut v = Vec::new();
    let mut whole = vec![0x00];
    whole.extend_from_slice(&stream);
    v.push(("stream".into(), whole));
    let mut cut = vec![0x03, 0, 1, 0, 5, 0, 60];
    cut.extend_from_slice(&stream);
    v.push(("stream-cut".into(), cut));
    let mut limited = vec![0x81, 0x01, 0x00, 0, 3];
    limited.extend_from_slice(&stream);
    v.push(("stream-max256".into(), limited));
    // The long form of a short frame, a command with MORE, a huge claimed size.
    v.push((
        "long-short".into(),
        vec![0, FLAG_LONG, 0, 0, 0, 0, 0, 0, 0, 2, b'h', b'i'],
    ));
    v.push((
        "command-more".into(),
        vec![0, FLAG_COMMAND | FLAG_MORE, 1, b'x'],
    ));
    v.push((
        "huge-claim".into(),
        vec![0, FLAG_LONG, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3],
    ));
    v.push((
        "over-isize".into(),
        vec![0, FLAG_LONG, 0xff, 0, 0, 0, 0, 0, 0, 0],
    ));
    v
}

fn ready_props(t: SocketType) -> Metadata {
    let mut m = Metadata::new();
    m.insert("Socket-Type", Bytes::from_static(t.name().as_bytes()));
    m.insert("Identity", Bytes::from_static(b"peer"));
    m.insert("X-App", Bytes::from_static(b"seed"));
    m
}

fn commands() -> Vec<(String, Vec<u8>)> {
    let b = Bytes::from_static;
    let cmds = [
        ("ready", Command::Ready(ready_props(SocketType::Dealer))),
        ("error", Command::Error { reason: b(b"400") }),
        ("subscribe", Command::Subscribe(b(b"topic"))),
        ("cancel", Command::Cancel(b(b"topic"))),
        (
            "ping",
            Command::Ping {
                ttl_deciseconds: 10,
                context: b(b"ctx"),
            },
        ),
        ("pong", Command::Pong { context: b(b"ctx") }),
        ("join", Command::Join(b(b"group"))),
        ("leave", Command::Leave(b(b"group"))),
        (
            "hello",
            Command::Other {
                name: b(b"HELLO"),
                data: b(b"\x04user\x04pass"),
            },
        ),
    ];
    cmds.into_iter()
        .map(|(n, c)| (n.to_string(), c.to_bytes().to_vec()))
        .collect()
}

fn metadata() -> Vec<(String, Vec<u8>)> {
    let mut out = BytesMut::new();
    ready_props(SocketType::Router).encode(&mut out);
    let mut dup = Metadata::new();
    dup.insert("User-Id", Bytes::from_static(b"root"));
    dup.insert("a", Bytes::new());
    let mut out2 = BytesMut::new();
    dup.encode(&mut out2);
    out2.extend_from_slice(b"\x01A\x00\x00\x00\x01x");
    vec![
        ("ready".into(), out.to_vec()),
        ("duplicates".into(), out2.to_vec()),
    ]
}

/// What a well-behaved peer sends to the session a target builds for `side` and `cfg`, with
/// `script` run on the peer once both are ready.
pub fn transcript(side: Side, cfg: Cfg, script: &dyn Fn(&mut Session)) -> Vec<u8> {
    let t0 = crate::epoch();
    let mut local = Session::new(cfg.session_config(side), t0);
    let peer_side = side.peer();
    let mut pc = SessionConfig::new(cfg.peer_type());
    pc.mechanism = peer_side.mechanism();
    pc.entropy = peer_side.entropy();
    pc.routing_id = Bytes::from_static(b"peer");
    let mut peer = Session::new(pc, t0);
    let (mut lrx, mut prx) = (BytesMut::new(), BytesMut::new());
    let mut rec = Vec::new();
    let mut scripted = false;
    for _ in 0..1000 {
        let mut moved = false;
        while let Some(c) = local.poll_transmit() {
            prx.extend_from_slice(&c);
            moved = true;
        }
        if moved {
            let _ = peer.handle_input(&mut prx, t0);
        }
        while let Some(c) = peer.poll_transmit() {
            rec.extend_from_slice(&c);
            lrx.extend_from_slice(&c);
            moved = true;
        }
        let _ = local.handle_input(&mut lrx, t0);
        while let Some(ev) = local.poll_event() {
            if let SessionEvent::AuthRequest(_) = ev {
                let reply = cfg.reply().expect("asked only with an authenticator");
                let _ = local.handle_auth_reply(reply, t0);
                moved = true;
            }
        }
        while peer.poll_event().is_some() {}
        if !moved {
            if peer.is_ready() && !scripted {
                script(&mut peer);
                scripted = true;
                continue;
            }
            break;
        }
    }
    rec
}

/// A peer's traffic after the handshake: messages (one with a long header), a PING, and
/// subscriptions.
fn chatter(peer: &mut Session) {
    let _ = peer.send_message(&Message::from("hello"));
    let _ = peer.send_message(&Message::multipart([&b"a"[..], b"", &[9u8; 300][..]]));
    let _ = peer.send_command(&Command::Ping {
        ttl_deciseconds: 10,
        context: Bytes::from_static(b"ctx"),
    });
    let _ = peer.send_subscribe(b"topic");
    let _ = peer.send_cancel(b"topic");
    let _ = peer.send_message(&Message::from(&b"\x01old-style"[..]));
}

/// A session seed: the config byte, then the stream as one FEED_REST (minus the greeting when
/// the harness feeds it), or in chunks of `chunk` bytes with a clock tick between them.
fn session_seed(cfg: Cfg, stream: &[u8], chunk: Option<u8>, tail: &[u8]) -> Vec<u8> {
    let stream = if cfg.feeds_greeting() {
        &stream[GREETING_LEN.min(stream.len())..]
    } else {
        stream
    };
    let mut v = vec![cfg.0];
    match chunk {
        None => {
            v.extend_from_slice(tail);
            v.push(op::FEED_REST);
            v.extend_from_slice(stream);
        }
        Some(n) => {
            for c in stream.chunks(n as usize) {
                v.push(op::feed(c.len() as u8));
                v.extend_from_slice(c);
                v.push(op::advance(1));
            }
            v.extend_from_slice(tail);
        }
    }
    v
}

fn sessions(side: Side) -> Vec<(String, Vec<u8>)> {
    let ty = |i: u8| i << Cfg::TYPE_SHIFT;
    // Operations the local side performs after the peer's stream: two messages, a
    // subscription, a PING, time passing (heartbeats and their timeout).
    let local_ops = [
        op::send(2),
        3,
        100,
        op::SUBSCRIBE,
        2,
        b'a',
        b'b',
        op::PING,
        0,
        5,
        1,
        b'c',
        op::advance(4),
        op::advance(20),
    ];
    let mut v = Vec::new();
    let cases: [(&str, u8, Option<u8>, &[u8]); 6] = [
        ("dealer-raw", ty(0), None, &[]),
        (
            "router-allow-heartbeat-chunked",
            ty(1) | Cfg::GREETING | Cfg::HEARTBEAT | 1,
            Some(37),
            &local_ops,
        ),
        ("pub-zmtp30", ty(2) | Cfg::GREETING | Cfg::ZMTP30, None, &[]),
        ("sub-deny", ty(3) | Cfg::GREETING | 2, None, &[]),
        (
            "dealer-maxmsg-later",
            ty(0) | Cfg::GREETING | Cfg::MAX_MSG | 3,
            None,
            &[],
        ),
        (
            "router-local-ops",
            ty(1) | Cfg::GREETING | Cfg::HEARTBEAT,
            Some(100),
            &local_ops,
        ),
    ];
    for (name, c, chunk, tail) in cases {
        let cfg = Cfg(c);
        let stream = transcript(side, cfg, &chatter);
        v.push((name.to_string(), session_seed(cfg, &stream, chunk, tail)));
    }
    v.push(("greeting-only".into(), vec![Cfg::GREETING]));
    if side == Side::CurveServer {
        v.push(("low-order-hello".into(), low_order_hello()));
    }
    if side == Side::PlainServer {
        // A bare HELLO, then time passing.
        let mut s = vec![Cfg::GREETING | 1, op::feed(23)];
        encode_header_vec(&mut s, true, b"\x05HELLO\x04user\x0bpassword123");
        s.push(op::advance(63));
        v.push(("hello".into(), s));
    }
    v
}

fn encode_header_vec(out: &mut Vec<u8>, command: bool, body: &[u8]) {
    let mut h = BytesMut::new();
    encode_header(&mut h, false, command, body.len());
    out.extend_from_slice(&h);
    out.extend_from_slice(body);
}

/// A CURVE HELLO from the all-zero short-term key, boxed correctly: the shared secret with a
/// low-order point is zero, so anyone can seal (and open) it.
fn low_order_hello() -> Vec<u8> {
    use crypto_box::aead::{AeadInPlace, Nonce};
    use crypto_box::{PublicKey, SalsaBox, SecretKey};
    let zero = PublicKey::from([0u8; 32]);
    let any = SecretKey::from([0x42u8; 32]);
    let b = SalsaBox::new(&zero, &any);
    let short_nonce = 1u64.to_be_bytes();
    let mut nonce = [0u8; 24];
    nonce[..16].copy_from_slice(b"CurveZMQHELLO---");
    nonce[16..].copy_from_slice(&short_nonce);
    let mut sig = [0u8; 64];
    let tag = b
        .encrypt_in_place_detached(Nonce::<SalsaBox>::from_slice(&nonce), b"", &mut sig)
        .expect("no associated data");
    let mut body = Vec::with_capacity(200);
    body.extend_from_slice(b"\x05HELLO\x01\x00");
    body.extend_from_slice(&[0; 72]);
    body.extend_from_slice(&[0; 32]);
    body.extend_from_slice(&short_nonce);
    body.extend_from_slice(&tag);
    body.extend_from_slice(&sig);
    assert_eq!(body.len(), 200);
    let mut s = vec![Cfg::GREETING, op::FEED_REST];
    encode_header_vec(&mut s, true, &body);
    s
}

fn session_pairs() -> Vec<(String, Vec<u8>)> {
    // Handshake, a message each way (one 3-part, with a long part), subscriptions, time,
    // messages cut into small pieces.
    let script = [
        0xE0, 0x41, 3, 0, 200, 0x62, 1, 2, 3, 0xE0, 0x80, 3, b'a', b'b', b'c', 0x90, 1, b'a', 0xE0,
        0xC3, 0x40, 10, 0x02, 0x22, 0x05, 0x25, 0xE0,
    ];
    let mut v = Vec::new();
    for (name, setup) in [
        ("null-dealer-router", 0x00),
        ("plain-pair-allow", 0x40 | 0x08 | 1),
        ("plain-server-first", 0x40 | 2),
        ("curve-xsub-xpub-heartbeat", 0x80 | 0x20 | 3),
        ("curve-server-first-deny", 0xC0 | 0x10 | 4),
        ("null-zap-allow", 0x08 | 5),
    ] {
        let mut s = vec![setup];
        s.extend_from_slice(&script);
        v.push((name.to_string(), s));
    }
    // Bytes trickle one at a time through the whole handshake.
    let mut slow = vec![0x03];
    for _ in 0..80 {
        slow.extend_from_slice(&[0x00, 0x20]);
    }
    slow.extend_from_slice(&[0x41, 5, 5, 0xE0]);
    v.push(("curve-trickle".into(), slow));
    v
}

fn sockets() -> Vec<(String, Vec<u8>)> {
    // accept, handshake (identity "abc"), a 2-part message with an empty delimiter, connect,
    // handshake, subscribe, user send, recv, pull the pipe, close, time, drain.
    let ops = [
        0x00, 0x02, 0, 3, b'a', b'b', b'c', // accept; ready peer 0 as "abc"
        0x13, 0, 0, 2, b'h', b'i', // message from peer 0: ["", "hi"]
        0x01, 0x02, 1, 0, // connect; ready peer 1
        0x04, 1, 1, b'h', // peer 1 subscribes to "h"
        0x18, 3, b'a', b'b', b'c', 1, b'x', 0, // send ["abc", "x"] (ROUTER: to peer 0)
        0x09, 0x0A, 0, 0x1A, 1, // recv; pull pipes
        0x23, 1, 0, 1, b'r', 2, b'h', b'i', // message from peer 1: ["", "r", "hi"]
        0x19, 0x0B, 1, b'h', // recv twice; subscribe "h"
        0x06, 0, 0x07, 200, 0x0D, 0, 0x0E, // close 0; time; disconnect; recv
    ];
    let mut v = Vec::new();
    for (i, t) in [
        "pub", "xpub", "sub", "xsub", "router", "dealer", "req", "rep", "push", "pull", "pair",
    ]
    .iter()
    .enumerate()
    {
        let mut s = vec![i as u8, 0x00, 0x00, 0x22];
        s.extend_from_slice(&ops);
        v.push((t.to_string(), s));
    }
    // ROUTER with mandatory and handover, two peers claiming one id.
    let mut r = vec![
        4, 0x03, 0x00, 0x11, 0x00, 0x00, 0x02, 0, 1, b'x', 0x02, 1, 1, b'x',
    ];
    r.extend_from_slice(&[
        0x18, 1, b'x', 1, b'm', 0, 0x18, 1, b'y', 1, b'm', 0, 0x0A, 1,
    ]);
    v.push(("router-mandatory-handover".into(), r));
    // XPUB verbose + welcome + manual.
    let x = vec![
        1, 0x00, 0x17, 0x11, 0x00, 0x02, 0, 0, 0x04, 0, 1, b't', 0x05, 0, 1, b't', 0x09, 0x19,
        0x0B, 1, b't', 0x0A, 0, 0x06, 0,
    ];
    v.push(("xpub-manual-welcome".into(), x));
    // REQ correlate: a request, then a reply with the wrong and right envelope.
    let q = vec![
        6, 0x08, 0x00, 0x00, 0x00, 0x02, 0, 0, 0x08, 1, b'q', 0x0A, 0, 0x13, 0, 0, 1, b'a', 0x09,
    ];
    v.push(("req-correlate".into(), q));
    v
}
