//! `omq-bench curve-crypto [COUNT] [IMPL] [SIZE]`: CURVE's per-message cryptography alone, no
//! sockets, no runtime, one thread. Each message is sealed by one side and opened by the
//! other, so a figure is one seal plus one open:
//!
//! - `omq`: omq's CURVE message codec as a session runs it, after a real handshake between a
//!   client and a server [`Mechanism`]: `encode_frame` into the transmit queue, the chunk
//!   copied into a read buffer (what the socket's read would do), `FrameDecoder::decode_owned`, then
//!   `decode_owned_frame` (nonce check, open, flags), as a CURVE session does.
//! - `libsodium`: the anchor, libsodium's `crypto_box_easy_afternm` then
//!   `crypto_box_open_easy_afternm` with a precomputed key (`crypto_box_beforenm`), a 24-byte
//!   nonce built per message as CurveZMQ builds it. libsodium is linked into this benchmark
//!   only (Debian's libzmq depends on it anyway); omq itself has no C.
//!
//! `IMPL` and `SIZE` pick one cell, for counting instructions with callgrind (two runs with
//! different `COUNT`s, differenced, give the instructions of one message).

#![allow(unsafe_code)]

use std::time::Instant;

use bytes::BytesMut;
use omq_core::mechanism::{
    CurveKeyPair, CurveSecretKey, Entropy, LocalProperties, Mechanism, MechanismConfig,
};
use omq_core::session::SessionConfig;
use omq_core::wire::frame::FrameDecoder;
use omq_core::wire::metadata::Metadata;
use omq_core::wire::tx::TxQueue;
use omq_core::SocketType;

/// Message sizes of the cell (the end-to-end CURVE cell's).
pub const SIZES: [usize; 3] = [64, 1024, 16 * 1024];

#[link(name = "sodium")]
extern "C" {
    fn sodium_init() -> i32;
    fn crypto_box_beforenm(k: *mut u8, pk: *const u8, sk: *const u8) -> i32;
    fn crypto_box_easy_afternm(
        c: *mut u8,
        m: *const u8,
        mlen: u64,
        n: *const u8,
        k: *const u8,
    ) -> i32;
    fn crypto_box_open_easy_afternm(
        m: *mut u8,
        c: *const u8,
        clen: u64,
        n: *const u8,
        k: *const u8,
    ) -> i32;
    fn crypto_scalarmult_base(q: *mut u8, n: *const u8) -> i32;
}

fn keypair(seed: u8) -> CurveKeyPair {
    let mut s = [seed; 32];
    s[0] &= 248;
    CurveKeyPair::from_secret(CurveSecretKey::from_bytes(s))
}

fn local(socket_type: SocketType) -> LocalProperties {
    LocalProperties {
        socket_type,
        routing_id: bytes::Bytes::new(),
        application: Metadata::new(),
    }
}

/// Moves every queued frame of `out` to `to`'s handshake; true when `to` finished it.
fn deliver(out: &mut TxQueue, to: &mut Mechanism, l: &LocalProperties, back: &mut TxQueue) -> bool {
    let mut rb = BytesMut::new();
    while let Some(c) = out.poll_transmit() {
        rb.extend_from_slice(&c);
    }
    let mut d = FrameDecoder::new(None);
    let mut done = false;
    while let Some(f) = d.decode(&mut rb).expect("handshake frame") {
        done |= to
            .handle_command(&f.body.to_bytes(), l, back)
            .expect("handshake")
            .is_some();
    }
    done
}

/// A CURVE client (PUSH) and server (PULL) mechanism past their handshake.
fn omq_pair() -> (Mechanism, Mechanism) {
    let server_keys = keypair(9);
    let mut cc = SessionConfig::new(SocketType::Push);
    cc.mechanism = MechanismConfig::curve_client(*server_keys.public(), keypair(8));
    let mut sc = SessionConfig::new(SocketType::Pull);
    sc.mechanism = MechanismConfig::curve_server(server_keys);
    let mut c = Mechanism::new(&cc, Some(Entropy::from_bytes([1; 32]))).expect("client");
    let mut s = Mechanism::new(&sc, Some(Entropy::from_bytes([2; 32]))).expect("server");
    let (lc, ls) = (local(SocketType::Push), local(SocketType::Pull));
    let (mut to_s, mut to_c) = (TxQueue::new(), TxQueue::new());
    c.start(&lc, &mut to_s);
    s.start(&ls, &mut to_c);
    let (mut c_done, mut s_done) = (false, false);
    for _ in 0..4 {
        s_done |= deliver(&mut to_s, &mut s, &ls, &mut to_c);
        c_done |= deliver(&mut to_c, &mut c, &lc, &mut to_s);
    }
    assert!(c_done && s_done, "CURVE handshake did not complete");
    (c, s)
}

/// Seals and opens `count` messages of `size` bytes with omq's codec; returns ns per message.
pub fn omq(size: usize, count: usize) -> f64 {
    let (mut c, mut s) = omq_pair();
    let body = vec![0x5au8; size];
    let mut q = TxQueue::new();
    let mut rb = BytesMut::with_capacity(64 * 1024);
    let mut d = FrameDecoder::new(None);
    let mut got = 0usize;
    let start = Instant::now();
    for _ in 0..count {
        c.encode_frame(false, &body, None, &mut q);
        while let Some(chunk) = q.poll_transmit() {
            rb.extend_from_slice(&chunk);
        }
        // As a session takes CURVE traffic: each frame as the read buffer's own bytes.
        while let Some((flags, body)) = d.decode_owned(&mut rb).expect("frame") {
            let m = s.decode_owned_frame(flags, body).expect("opens");
            got += m.body.len();
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(got, size * count);
    elapsed.as_nanos() as f64 / count as f64
}

/// The same with libsodium's precomputed-key crypto_box; ns per message.
pub fn libsodium(size: usize, count: usize) -> f64 {
    let mut k = [0u8; 32];
    let (a, b) = (keypair(8), keypair(9));
    let mut b_pub = [0u8; 32];
    // SAFETY: every pointer is to a live array of the length libsodium's API documents
    // (32-byte keys, 24-byte nonces, ciphertext = plaintext + 16), and nothing aliases.
    unsafe {
        assert!(sodium_init() >= 0);
        assert_eq!(
            crypto_scalarmult_base(b_pub.as_mut_ptr(), b.secret().expose_bytes().as_ptr()),
            0
        );
        assert_eq!(
            crypto_box_beforenm(
                k.as_mut_ptr(),
                b_pub.as_ptr(),
                a.secret().expose_bytes().as_ptr()
            ),
            0
        );
    }
    let body = vec![0x5au8; size + 1];
    let mut sealed = vec![0u8; size + 1 + 16];
    let mut opened = vec![0u8; size + 1];
    let mut nonce = *b"CurveZMQMESSAGEC\0\0\0\0\0\0\0\0";
    let mut got = 0usize;
    let start = Instant::now();
    for i in 1..=count as u64 {
        nonce[16..].copy_from_slice(&i.to_be_bytes());
        // SAFETY: as above; `sealed` is `body.len() + 16` bytes and `opened` `body.len()`.
        let ok = unsafe {
            crypto_box_easy_afternm(
                sealed.as_mut_ptr(),
                body.as_ptr(),
                body.len() as u64,
                nonce.as_ptr(),
                k.as_ptr(),
            ) == 0
                && crypto_box_open_easy_afternm(
                    opened.as_mut_ptr(),
                    sealed.as_ptr(),
                    sealed.len() as u64,
                    nonce.as_ptr(),
                    k.as_ptr(),
                ) == 0
        };
        assert!(ok);
        got += std::hint::black_box(&opened).len() - 1;
    }
    let elapsed = start.elapsed();
    assert_eq!(got, size * count);
    elapsed.as_nanos() as f64 / count as f64
}

/// Runs the cells (all, or the one `imp`/`size` names) and prints a table.
pub fn run(count: usize, imp: Option<&str>, size: Option<usize>) {
    let sizes: Vec<usize> = size.map_or(SIZES.to_vec(), |s| vec![s]);
    println!("| size | omq msg/s | libsodium msg/s | omq ÷ libsodium |");
    println!("|---:|---:|---:|---:|");
    for size in sizes {
        // Fewer large messages, so each cell takes a similar time; exactly COUNT for one cell.
        let n = if imp.is_some() {
            count
        } else {
            (count * 64 / size.max(64)).max(1000)
        };
        let o = (imp != Some("libsodium")).then(|| omq(size, n));
        let l = (imp != Some("omq")).then(|| libsodium(size, n));
        let rate = |ns: Option<f64>| ns.map_or("-".into(), |ns| format!("{:.0}k", 1e6 / ns));
        let ratio = match (o, l) {
            (Some(o), Some(l)) => format!("{:.2}×", l / o),
            _ => "-".into(),
        };
        println!("| {size} B | {} | {} | {ratio} |", rate(o), rate(l));
    }
}
