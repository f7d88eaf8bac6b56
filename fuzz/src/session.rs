//! The harness the five mechanism targets share: one [`Session`] of a given mechanism and
//! side, fed a peer's byte stream in pieces the input chooses, with time advanced by the input,
//! every output drained after every step, and invariants checked throughout.
//!
//! Input: a [`Cfg`] byte, then operations:
//!
//! | byte        | operation                                                            |
//! |-------------|----------------------------------------------------------------------|
//! | `00..=7F`   | feed the next `op + 1` bytes                                         |
//! | `80..=BF`   | advance the clock by `(op & 0x3F)^2 * 10` ms, then `handle_timeout`  |
//! | `C0..=DF`   | send a message of `1 + (op & 3)` parts, each as long as the next byte |
//! | `E0..=E7`   | send a subscription (topic: length byte + bytes)                     |
//! | `E8..=EF`   | send a cancellation (same)                                           |
//! | `F0..=FD`   | feed the next `(op - 0xEF) * 256` bytes                              |
//! | `FE`        | send a PING (ttl: 2 bytes, context: length byte + bytes)              |
//! | `FF`        | feed everything left                                                 |
//!
//! With [`Cfg::GREETING`] the harness first feeds a valid greeting for the mechanism, so the
//! fuzzer starts at the mechanism's commands.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use omq_core::error::SessionError;
use omq_core::wire::command::Command;
use omq_core::wire::frame::FrameDecoder;
use omq_core::wire::greeting::{Greeting, GREETING_LEN};
use omq_core::{Message, Session, SessionEvent, UsageError};

use crate::reader::Reader;
use crate::setup::{AuthMode, Cfg, Side};

/// Operation bytes (for the seed generator).
pub mod op {
    /// Feed the rest of the input.
    pub const FEED_REST: u8 = 0xFF;
    /// Advance the clock by `n^2 * 10` ms (n < 64).
    pub const fn advance(n: u8) -> u8 {
        0x80 | (n & 0x3F)
    }
    /// Feed the next `n` bytes (1..=128).
    pub const fn feed(n: u8) -> u8 {
        n - 1
    }
    /// Send a message with `parts` parts (1..=4); one length byte per part follows.
    pub const fn send(parts: u8) -> u8 {
        0xC0 | ((parts - 1) & 3)
    }
    /// Send a subscription; a length byte and the topic follow.
    pub const SUBSCRIBE: u8 = 0xE0;
    /// Send a cancellation; a length byte and the topic follow.
    pub const CANCEL: u8 = 0xE8;
    /// Send a PING; ttl (2 bytes), a length byte and the context follow.
    pub const PING: u8 = 0xFE;
}

/// The handshake commands a side sends, in order.
fn expected_handshake(side: Side) -> &'static [&'static str] {
    match side {
        Side::Null => &["READY"],
        Side::PlainClient | Side::CurveClient => &["HELLO", "INITIATE"],
        Side::PlainServer | Side::CurveServer => &["WELCOME", "READY"],
    }
}

/// The Curve25519 points of small order (libsodium's blacklist): a CURVE peer's short-term key
/// must not be one of them.
const LOW_ORDER: [[u8; 32]; 7] = [
    [0; 32],
    [
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,
    ],
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef,
        0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f,
        0x11, 0x57,
    ],
    [
        0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    [
        0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    [
        0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
];

/// How a run ended (for the seed generator's report; targets ignore it).
#[derive(Debug, Default)]
pub struct Outcome {
    /// The handshake completed.
    pub succeeded: bool,
    /// Why the session failed, if it did.
    pub failed: Option<SessionError>,
}

/// Runs one input against a session of `side`.
pub fn run(side: Side, data: &[u8]) -> Outcome {
    let mut r = Reader::new(data);
    if r.is_empty() {
        return Outcome::default();
    }
    let cfg = Cfg(r.u8());
    // Received parts cost a 32-byte `Part` each (for a 2-byte empty frame at worst), plus the
    // vectors that hold them; everything else is a small multiple of the input, and the
    // transmit queue's 64 KiB staging buffer is the constant.
    let _budget = crate::alloc::budget(64 * data.len() + (1 << 20));
    let mut h = Harness::new(side, cfg);
    if cfg.feeds_greeting() {
        let g = cfg.peer_greeting(side);
        h.feed(&g);
        h.after_step();
    }
    while !r.is_empty() {
        let op = r.u8();
        match op {
            0x00..=0x7F => {
                let chunk = r.take(op as usize + 1);
                h.feed(chunk);
            }
            0x80..=0xBF => {
                let n = u64::from(op & 0x3F);
                h.advance(Duration::from_millis(n * n * 10));
            }
            0xC0..=0xDF => {
                let parts = 1 + (op & 3) as usize;
                let mut m = Message::new();
                for i in 0..parts {
                    let len = r.u8() as usize * 3;
                    m.push(vec![i as u8; len]);
                }
                h.send(|s| s.send_message(&m));
            }
            0xE0..=0xEF => {
                let topic = r.bytes8();
                if op < 0xE8 {
                    h.send(|s| s.send_subscribe(topic));
                } else {
                    h.send(|s| s.send_cancel(topic));
                }
            }
            0xF0..=0xFD => {
                let chunk = r.take((op - 0xEF) as usize * 256);
                h.feed(chunk);
            }
            0xFE => {
                let ttl = r.u16();
                let context = Bytes::copy_from_slice(r.bytes8());
                h.send(|s| {
                    s.send_command(&Command::Ping {
                        ttl_deciseconds: ttl,
                        context,
                    })
                });
            }
            0xFF => {
                let chunk = r.rest();
                h.feed(chunk);
            }
        }
        h.after_step();
    }
    Outcome {
        succeeded: h.succeeded,
        failed: h.failed,
    }
}

/// One session under test and everything known about what it said and did.
struct Harness {
    side: Side,
    cfg: Cfg,
    session: Session,
    rx: BytesMut,
    now: Instant,
    /// The session's error, once it failed.
    failed: Option<SessionError>,
    /// HandshakeSucceeded was reported.
    succeeded: bool,
    /// The owner was asked / answered (true: let in).
    asked: bool,
    allowed: Option<bool>,
    /// Our output, parsed: greeting bytes, then frames.
    out_greeting: Vec<u8>,
    out_buf: BytesMut,
    out_dec: FrameDecoder,
    handshake_sent: Vec<&'static str>,
    error_sent: bool,
    /// The peer's stream as fed, parsed (for checks about what the peer said).
    in_seen: usize,
    in_buf: BytesMut,
    in_dec: FrameDecoder,
    in_broken: bool,
    peer_hello_key: Option<[u8; 32]>,
}

impl Harness {
    fn new(side: Side, cfg: Cfg) -> Self {
        let now = crate::epoch();
        Harness {
            side,
            cfg,
            session: Session::new(cfg.session_config(side), now),
            rx: BytesMut::new(),
            now,
            failed: None,
            succeeded: false,
            asked: false,
            allowed: None,
            out_greeting: Vec::new(),
            out_buf: BytesMut::new(),
            out_dec: FrameDecoder::new(None),
            handshake_sent: Vec::new(),
            error_sent: false,
            in_seen: 0,
            in_buf: BytesMut::new(),
            in_dec: FrameDecoder::new(None),
            in_broken: false,
            peer_hello_key: None,
        }
    }

    /// Whether this side asks its owner about the peer.
    fn asks(&self) -> bool {
        self.cfg.auth() != AuthMode::Off
            && matches!(
                self.side,
                Side::Null | Side::PlainServer | Side::CurveServer
            )
    }

    fn check_result(&mut self, r: Result<(), SessionError>) {
        match r {
            Ok(()) => assert!(
                self.failed.is_none(),
                "a failed session accepted more input"
            ),
            Err(e) => {
                if let Some(prev) = &self.failed {
                    assert_eq!(&e, prev, "a session's error is sticky");
                }
                assert_eq!(
                    self.session.error(),
                    Some(&e),
                    "error() is the error returned"
                );
                self.failed = Some(e);
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.shadow_input(bytes);
        self.rx.extend_from_slice(bytes);
        let r = self.session.handle_input(&mut self.rx, self.now);
        let ok = r.is_ok();
        self.check_result(r);
        if ok {
            // Every complete frame was taken: the session needs more before progressing.
            let hint = self.session.read_hint(&self.rx);
            assert!(hint >= 1, "read_hint 0 with no complete frame buffered");
        }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        let r = self.session.handle_timeout(self.now);
        let ok = r.is_ok();
        self.check_result(r);
        if ok {
            if let Some(t) = self.session.poll_timeout() {
                assert!(t > self.now, "a timer is still due after handle_timeout");
            }
        }
    }

    fn send(&mut self, f: impl FnOnce(&mut Session) -> Result<(), UsageError>) {
        let ready = self.session.is_ready();
        let handshaking = self.session.is_handshaking();
        let r = f(&mut self.session);
        match r {
            Ok(()) => assert!(ready, "sent on a session that is not ready"),
            Err(UsageError::NotReady) => assert!(handshaking),
            Err(UsageError::Closed) => assert!(self.failed.is_some()),
            Err(e) => panic!("unexpected usage error {e:?}"),
        }
    }

    /// Parses the peer's stream as fed, to know what it said (the first HELLO's key).
    fn shadow_input(&mut self, bytes: &[u8]) {
        let skip = GREETING_LEN.saturating_sub(self.in_seen).min(bytes.len());
        self.in_seen += bytes.len();
        if self.in_broken || self.side != Side::CurveServer {
            return;
        }
        self.in_buf.extend_from_slice(&bytes[skip..]);
        loop {
            match self.in_dec.decode(&mut self.in_buf) {
                Ok(Some(f)) => {
                    if self.peer_hello_key.is_none()
                        && f.is_command()
                        && f.body.len() == 200
                        && f.body.starts_with(b"\x05HELLO")
                    {
                        let mut k = [0u8; 32];
                        k.copy_from_slice(&f.body[80..112]);
                        self.peer_hello_key = Some(k);
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.in_broken = true;
                    break;
                }
            }
        }
        if self.in_buf.len() > 4096 {
            // Only the handshake matters here; stop before a large frame grows this buffer.
            self.in_broken = true;
        }
    }

    fn after_step(&mut self) {
        self.drain_events();
        self.drain_output();
        self.check_state();
    }

    fn drain_events(&mut self) {
        while let Some(ev) = self.session.poll_event() {
            match ev {
                SessionEvent::HandshakeSucceeded => {
                    assert!(!self.succeeded, "HandshakeSucceeded twice");
                    self.succeeded = true;
                    if self.asks() {
                        assert_eq!(
                            self.allowed,
                            Some(true),
                            "handshake succeeded without the owner letting the peer in"
                        );
                    }
                    let peer = self.session.peer().expect("a ready session knows its peer");
                    assert!(self
                        .cfg
                        .session_config(self.side)
                        .socket_type
                        .is_compatible(peer.socket_type));
                }
                SessionEvent::Message(m) => {
                    assert!(self.succeeded, "a message before the handshake");
                    assert!(!m.is_empty(), "an empty message");
                    if self.cfg.0 & Cfg::MAX_MSG != 0 {
                        assert!(m.parts().iter().all(|p| p.len() <= 512), "MAXMSGSIZE");
                    }
                    assert!(m.property("Socket-Type").is_some());
                    let user_id = m.property("User-Id");
                    if self.asks() && self.cfg.auth() == AuthMode::Allow {
                        assert_eq!(user_id, Some(&b"fuzz-user-id"[..]));
                    } else {
                        assert_eq!(user_id, None, "only the authenticator sets User-Id");
                    }
                }
                SessionEvent::Subscribe(_)
                | SessionEvent::Cancel(_)
                | SessionEvent::Join(_)
                | SessionEvent::Leave(_) => {
                    assert!(self.succeeded, "a traffic command before the handshake");
                }
                SessionEvent::AuthRequest(req) => {
                    assert!(self.asks(), "asked although no authenticator is attached");
                    assert!(!self.asked, "asked twice");
                    assert_eq!(req.mechanism, self.side.name());
                    self.asked = true;
                    let reply = self.cfg.reply().expect("asks() implies a reply");
                    let allow = reply.is_allowed();
                    self.allowed = Some(allow);
                    let r = self.session.handle_auth_reply(reply, self.now);
                    if let Some(prev) = &self.failed {
                        // The request was queued before the session failed on later input.
                        assert_eq!(r.as_ref(), Err(prev), "a failed session stays failed");
                    } else if !allow {
                        assert!(
                            matches!(r, Err(SessionError::AuthFailed { .. })),
                            "a refusal fails the session: {r:?}"
                        );
                    }
                    self.check_result(r);
                }
                other => panic!("unexpected event {other:?}"),
            }
        }
    }

    fn drain_output(&mut self) {
        let mut fresh = 0usize;
        while let Some(chunk) = self.session.poll_transmit() {
            fresh += chunk.len();
            let mut c = &chunk[..];
            if self.out_greeting.len() < GREETING_LEN {
                let n = (GREETING_LEN - self.out_greeting.len()).min(c.len());
                self.out_greeting.extend_from_slice(&c[..n]);
                c = &c[n..];
                if self.out_greeting.len() == GREETING_LEN {
                    let mut g = [0u8; GREETING_LEN];
                    g.copy_from_slice(&self.out_greeting);
                    let g = Greeting::decode(&g).expect("our greeting is valid");
                    assert_eq!(g.mechanism, self.side.name());
                    assert_eq!(g.as_server, self.side.is_server());
                }
            }
            self.out_buf.extend_from_slice(c);
        }
        assert_eq!(self.session.queued_transmit(), 0);
        if fresh > 0 {
            assert!(!self.error_sent, "output after an ERROR command");
        }
        while let Some(frame) = self
            .out_dec
            .decode(&mut self.out_buf)
            .expect("our output is well-formed ZMTP")
        {
            assert!(!self.error_sent, "a frame after an ERROR command");
            let body = frame.body.to_bytes();
            if frame.is_command() {
                let (name, _) = Command::split(&body).expect("our command is well-formed");
                let handshake = expected_handshake(self.side);
                match &name[..] {
                    b"HELLO" | b"WELCOME" | b"INITIATE" | b"READY" => {
                        let n = self.handshake_sent.len();
                        assert!(
                            n < handshake.len() && handshake[n].as_bytes() == &name[..],
                            "handshake command {:?} after {:?}",
                            String::from_utf8_lossy(&name),
                            self.handshake_sent
                        );
                        self.handshake_sent.push(handshake[n]);
                    }
                    b"ERROR" => {
                        assert!(matches!(Command::decode(&body), Ok(Command::Error { .. })));
                        self.error_sent = true;
                    }
                    _ => {
                        assert!(self.succeeded, "traffic command before the handshake");
                        assert!(
                            !matches!(self.side, Side::CurveClient | Side::CurveServer),
                            "a CURVE command in clear after the handshake"
                        );
                    }
                }
            } else if matches!(self.side, Side::CurveClient | Side::CurveServer) {
                assert!(body.starts_with(b"\x07MESSAGE") && body.len() >= 33);
                assert!(
                    self.succeeded
                        || matches!(self.failed, Some(SessionError::Incompatible { .. })),
                    "a MESSAGE before the handshake"
                );
            } else {
                assert!(self.succeeded, "a message frame before the handshake");
            }
        }
        if self.asks() && self.allowed != Some(true) {
            // Nothing that lets the peer further in goes out before the owner says yes.
            let gate = match self.side {
                Side::PlainServer => "WELCOME",
                _ => "READY",
            };
            assert!(
                !self.handshake_sent.contains(&gate),
                "{gate} sent without the owner's consent"
            );
        }
        if self.side == Side::CurveServer && crate::check_known() {
            // KNOWN BUG (being fixed in omq-core): CURVE accepts a low-order (all-zero) short
            // key in HELLO, whose shared secret anyone can compute.
            if let Some(k) = self.peer_hello_key {
                assert!(
                    !(LOW_ORDER.contains(&k) && self.handshake_sent.contains(&"WELCOME")),
                    "CURVE server answered a HELLO from a low-order key"
                );
            }
        }
    }

    fn check_state(&self) {
        let s = &self.session;
        match s.error() {
            Some(_) => {
                assert!(!s.is_ready() && !s.is_handshaking());
                assert!(s.poll_timeout().is_none(), "a failed session has no timers");
            }
            None => {
                assert!(s.is_ready() != s.is_handshaking());
                assert_eq!(s.is_ready(), self.succeeded);
                assert!(s.read_hint(&self.rx) >= 1);
            }
        }
    }
}
