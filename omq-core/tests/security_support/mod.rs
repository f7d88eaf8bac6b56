//! Shared by the security tests: the CurveZMQ reference keys, configs, and a frame-level man
//! in the middle for the simulated network.
#![allow(dead_code, unreachable_pub)]

use bytes::{Bytes, BytesMut};
use omq_core::mechanism::{CurveKeyPair, CurvePublicKey, CurveSecretKey, MechanismConfig};
use omq_core::sim::{Direction, Pair};
use omq_core::wire::frame::{encode_header, Frame, FrameDecoder};
use omq_core::wire::greeting::GREETING_LEN;
use omq_core::{Message, SessionConfig, SessionEvent, SocketType};

/// The four keys of libzmq's `zmq_curve` man page and tests (also pyzmq's test_z85), as Z85
/// and as bytes.
pub const CLIENT_PUBLIC: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
pub const CLIENT_SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
pub const SERVER_PUBLIC: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
pub const SERVER_SECRET: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

pub const CLIENT_PUBLIC_BYTES: [u8; 32] = [
    0xBB, 0x88, 0x47, 0x1D, 0x65, 0xE2, 0x65, 0x9B, 0x30, 0xC5, 0x5A, 0x53, 0x21, 0xCE, 0xBB, 0x5A,
    0xAB, 0x2B, 0x70, 0xA3, 0x98, 0x64, 0x5C, 0x26, 0xDC, 0xA2, 0xB2, 0xFC, 0xB4, 0x3F, 0xC5, 0x18,
];
pub const CLIENT_SECRET_BYTES: [u8; 32] = [
    0x7B, 0xB8, 0x64, 0xB4, 0x89, 0xAF, 0xA3, 0x67, 0x1F, 0xBE, 0x69, 0x10, 0x1F, 0x94, 0xB3, 0x89,
    0x72, 0xF2, 0x48, 0x16, 0xDF, 0xB0, 0x1B, 0x51, 0x65, 0x6B, 0x3F, 0xEC, 0x8D, 0xFD, 0x08, 0x88,
];
pub const SERVER_PUBLIC_BYTES: [u8; 32] = [
    0x54, 0xFC, 0xBA, 0x24, 0xE9, 0x32, 0x49, 0x96, 0x93, 0x16, 0xFB, 0x61, 0x7C, 0x87, 0x2B, 0xB0,
    0xC1, 0xD1, 0xFF, 0x14, 0x80, 0x04, 0x27, 0xC5, 0x94, 0xCB, 0xFA, 0xCF, 0x1B, 0xC2, 0xD6, 0x52,
];
pub const SERVER_SECRET_BYTES: [u8; 32] = [
    0x8E, 0x0B, 0xDD, 0x69, 0x76, 0x28, 0xB9, 0x1D, 0x8F, 0x24, 0x55, 0x87, 0xEE, 0x95, 0xC5, 0xB0,
    0x4D, 0x48, 0x96, 0x3F, 0x79, 0x25, 0x98, 0x77, 0xB4, 0x9C, 0xD9, 0x06, 0x3A, 0xEA, 0xD3, 0xB7,
];

pub fn server_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_z85(SERVER_SECRET).unwrap())
}

pub fn client_keys() -> CurveKeyPair {
    CurveKeyPair::from_secret(CurveSecretKey::from_z85(CLIENT_SECRET).unwrap())
}

pub fn server_public() -> CurvePublicKey {
    CurvePublicKey::from_z85(SERVER_PUBLIC).unwrap()
}

/// A CURVE client session config trusting `server_key`.
pub fn curve_client(t: SocketType, server_key: CurvePublicKey) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::curve_client(server_key, client_keys());
    c
}

/// A CURVE server session config with the reference server keys.
pub fn curve_server(t: SocketType) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::curve_server(server_keys());
    c
}

/// Events of one end that are not messages or the handshake (subscriptions, auth requests...).
pub fn others(events: &[SessionEvent]) -> Vec<SessionEvent> {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                SessionEvent::Message(_) | SessionEvent::HandshakeSucceeded
            )
        })
        .cloned()
        .collect()
}

pub fn messages(events: &[SessionEvent]) -> Vec<Message> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

/// A man in the middle on one direction of a [`Pair`]: it passes the greeting through, cuts
/// the rest into frames, and lets a test drop, alter or repeat frame number `i` (counted from
/// the first frame after the greeting).
pub struct Tap {
    dir: Direction,
    greeting_left: usize,
    buf: BytesMut,
    /// Frames seen so far.
    pub frames: usize,
    /// Every frame seen, as it arrived (before any edit).
    pub log: Vec<Frame>,
}

impl Tap {
    /// A tap from the first byte (the greeting passes untouched).
    pub fn new(p: &mut Pair, dir: Direction) -> Self {
        Tap::with_greeting(p, dir, GREETING_LEN)
    }

    /// A tap on a connection whose greeting has already gone by.
    pub fn mid_stream(p: &mut Pair, dir: Direction) -> Self {
        Tap::with_greeting(p, dir, 0)
    }

    fn with_greeting(p: &mut Pair, dir: Direction, greeting_left: usize) -> Self {
        p.hold(dir, true);
        Tap {
            dir,
            greeting_left,
            buf: BytesMut::new(),
            frames: 0,
            log: Vec::new(),
        }
    }

    /// Runs the pair until nothing moves, passing every frame of the tapped direction through
    /// `edit`, which returns the frames to forward in its place.
    pub fn run(&mut self, p: &mut Pair, mut edit: impl FnMut(usize, Frame) -> Vec<Frame>) {
        loop {
            p.drive();
            let chunks = p.intercept(self.dir);
            if chunks.is_empty() {
                return;
            }
            let mut out = BytesMut::new();
            for chunk in chunks {
                let mut chunk = &chunk[..];
                let pass = self.greeting_left.min(chunk.len());
                out.extend_from_slice(&chunk[..pass]);
                self.greeting_left -= pass;
                chunk = &chunk[pass..];
                self.buf.extend_from_slice(chunk);
            }
            if self.greeting_left == 0 {
                while let Some(frame) = FrameDecoder::new(None).decode(&mut self.buf).unwrap() {
                    self.log.push(frame.clone());
                    for f in edit(self.frames, frame) {
                        encode_header(&mut out, f.more(), f.is_command(), f.body.len());
                        out.extend_from_slice(&f.body);
                    }
                    self.frames += 1;
                }
            }
            if !out.is_empty() {
                p.inject(self.dir, out.freeze());
            }
        }
    }

    /// Runs the pair passing everything through unchanged.
    pub fn pass(&mut self, p: &mut Pair) {
        self.run(p, |_, f| vec![f]);
    }
}

/// A copy of `frame` with `f` applied to its body.
pub fn edited(frame: &Frame, f: impl FnOnce(&mut Vec<u8>)) -> Frame {
    let mut body = frame.body.to_vec();
    f(&mut body);
    Frame {
        flags: frame.flags,
        body: Bytes::from(body).into(),
    }
}
