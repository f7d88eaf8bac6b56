//! Two real sessions joined by an in-memory pipe; the input chooses the mechanism, the socket
//! types, how the bytes are cut on the way, which side sends what, and when time passes.
//!
//! Input: a set-up byte (bits 0-2: mechanism and roles, bits 3-4: authenticator, bit 5:
//! heartbeats, bits 6-7: socket types), then operations:
//!
//! | byte        | operation                                                                |
//! |-------------|--------------------------------------------------------------------------|
//! | `00..=3F`   | move bytes a→b (bit 5 clear) or b→a: `(k+1)^2` of them, all for k = 31   |
//! | `40..=7F`   | a (bit 5 clear) or b sends `1 + (op & 3)` parts, each (length byte) ×   |
//! |             | `1 << ((op >> 2) & 3)` bytes long                                        |
//! | `80..=BF`   | a (bit 5 clear) or b sends a subscription (bit 4 clear) or cancellation; |
//! |             | topic: length byte + bytes                                               |
//! | `C0..=DF`   | advance the clock by `(op & 0x1F)^2 * 10` ms on both sides              |
//! | `E0..=FF`   | move everything both ways until nothing moves                            |
//!
//! Invariants: between two correct sessions, the only failures are timeouts (time passed
//! while bytes were held) and an authenticator's refusal; every message, subscription and
//! cancellation sent arrives whole and in order (a ZMTP 3.0-style `\x01topic` message at a PUB
//! or XPUB is a subscription); once all bytes have moved, both sides are ready and nothing
//! sent is missing.
#![no_main]

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use omq_core::error::SessionError;
use omq_core::mechanism::{Entropy, MechanismConfig};
use omq_core::{AuthReply, Message, Session, SessionConfig, SessionEvent, SocketType};
use omq_fuzz::reader::Reader;
use omq_fuzz::setup::{self, CLIENT_ENTROPY, SERVER_ENTROPY};

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Msg(Message),
    Sub(Bytes),
    Cancel(Bytes),
}

struct End {
    session: Session,
    rx: BytesMut,
    /// Bytes this side has written and the other has not read yet.
    wire: VecDeque<u8>,
    /// What this side must receive next, in order.
    expect: VecDeque<Expect>,
    failed: Option<SessionError>,
    reply: Option<AuthReply>,
    asked: bool,
    refused: bool,
    succeeded: bool,
}

impl End {
    fn new(config: SessionConfig, reply: Option<AuthReply>) -> Self {
        End {
            session: Session::new(config, omq_fuzz::epoch()),
            rx: BytesMut::new(),
            wire: VecDeque::new(),
            expect: VecDeque::new(),
            failed: None,
            reply,
            asked: false,
            refused: false,
            succeeded: false,
        }
    }

    fn record(&mut self, r: Result<(), SessionError>) {
        if let Err(e) = r {
            if let Some(prev) = &self.failed {
                assert_eq!(prev, &e, "sticky error");
            }
            self.failed = Some(e);
        }
    }

    /// Drains events (checking them against what is expected) and output (onto the wire).
    fn drain(&mut self, now: std::time::Instant) {
        while let Some(ev) = self.session.poll_event() {
            match ev {
                SessionEvent::HandshakeSucceeded => {
                    assert!(!self.succeeded);
                    self.succeeded = true;
                }
                SessionEvent::AuthRequest(_) => {
                    assert!(!self.asked, "asked twice");
                    self.asked = true;
                    let reply = self.reply.clone().expect("asked without an authenticator");
                    self.refused = !reply.is_allowed();
                    let r = self.session.handle_auth_reply(reply, now);
                    self.record(r);
                }
                SessionEvent::Message(m) => self.arrived(Expect::Msg(m)),
                SessionEvent::Subscribe(t) => self.arrived(Expect::Sub(t)),
                SessionEvent::Cancel(t) => self.arrived(Expect::Cancel(t)),
                other => panic!("unexpected event {other:?}"),
            }
        }
        while let Some(chunk) = self.session.poll_transmit() {
            self.wire.extend(chunk.iter());
        }
    }

    fn arrived(&mut self, got: Expect) {
        assert!(self.succeeded, "traffic before the handshake");
        let want = self.expect.pop_front();
        assert_eq!(want.as_ref(), Some(&got), "arrived out of order or altered");
    }
}

struct Pair {
    a: End,
    b: End,
    now: std::time::Instant,
    sent: u32,
}

impl Pair {
    fn end(&mut self, b: bool) -> (&mut End, &mut End) {
        if b {
            (&mut self.b, &mut self.a)
        } else {
            (&mut self.a, &mut self.b)
        }
    }

    /// Moves up to `n` bytes from `from`'s wire into the other side. True if any moved.
    fn carry(&mut self, from_b: bool, n: usize) -> bool {
        let now = self.now;
        let (from, to) = self.end(from_b);
        from.drain(now);
        let n = n.min(from.wire.len());
        if n == 0 {
            return false;
        }
        let bytes: Vec<u8> = from.wire.drain(..n).collect();
        if to.failed.is_none() {
            to.rx.extend_from_slice(&bytes);
            let r = to.session.handle_input(&mut to.rx, now);
            to.record(r);
        }
        to.drain(now);
        true
    }

    fn flush(&mut self) {
        loop {
            let moved = self.carry(false, usize::MAX) | self.carry(true, usize::MAX);
            if !moved {
                break;
            }
        }
    }

    fn send(&mut self, from_b: bool, msg: Message) {
        let now = self.now;
        let (from, to) = self.end(from_b);
        let ready = from.session.is_ready();
        match from.session.send_message(&msg) {
            Ok(()) => {
                assert!(ready);
                let first = &msg.parts()[0];
                let t = to.session.config().socket_type;
                let e = match first.first() {
                    Some(1) if t.receives_subscriptions() => {
                        Expect::Sub(Bytes::copy_from_slice(&first[1..]))
                    }
                    Some(0) if t.receives_subscriptions() => {
                        Expect::Cancel(Bytes::copy_from_slice(&first[1..]))
                    }
                    _ => Expect::Msg(msg),
                };
                to.expect.push_back(e);
            }
            Err(_) => assert!(!ready),
        }
        from.drain(now);
    }

    fn subscription(&mut self, from_b: bool, on: bool, topic: &[u8]) {
        let now = self.now;
        let (from, to) = self.end(from_b);
        let r = if on {
            from.session.send_subscribe(topic)
        } else {
            from.session.send_cancel(topic)
        };
        // Subscriptions surface only at the sockets that take them (PUB, XPUB); elsewhere the
        // command is ignored, as libzmq does.
        if r.is_ok() && to.session.config().socket_type.receives_subscriptions() {
            let t = Bytes::copy_from_slice(topic);
            to.expect.push_back(if on {
                Expect::Sub(t)
            } else {
                Expect::Cancel(t)
            });
        }
        from.drain(now);
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        let now = self.now;
        for e in [&mut self.a, &mut self.b] {
            if e.failed.is_none() {
                let r = e.session.handle_timeout(now);
                e.record(r);
            }
            e.drain(now);
        }
    }
}

fn allowed_failure(e: &SessionError, refused: bool) -> bool {
    matches!(e, SessionError::Timeout(_))
        || (refused
            && matches!(
                e,
                SessionError::AuthFailed { .. } | SessionError::PeerError { .. }
            ))
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let setup_byte = r.u8();
    let (ta, tb) = [
        (SocketType::Dealer, SocketType::Router),
        (SocketType::Pair, SocketType::Pair),
        (SocketType::XSub, SocketType::XPub),
        (SocketType::Sub, SocketType::Pub),
    ][(setup_byte >> 6) as usize];
    let mut ca = SessionConfig::new(ta);
    let mut cb = SessionConfig::new(tb);
    ca.routing_id = Bytes::from_static(b"side-a");
    let plain_client = || MechanismConfig::plain_client(setup::USERNAME, setup::PASSWORD).unwrap();
    let curve_client =
        || MechanismConfig::curve_client(setup::server_public(), setup::client_keys());
    let curve_server = || MechanismConfig::curve_server(setup::server_keys());
    let (ma, mb) = match setup_byte & 7 {
        1 => (plain_client(), MechanismConfig::plain_server()),
        2 => (MechanismConfig::plain_server(), plain_client()),
        3 => (curve_client(), curve_server()),
        4 => (curve_server(), curve_client()),
        _ => (MechanismConfig::Null, MechanismConfig::Null),
    };
    for (c, m) in [(&mut ca, ma), (&mut cb, mb)] {
        c.entropy = Some(Entropy::from_bytes(if m.as_server() == Some(true) {
            SERVER_ENTROPY
        } else {
            CLIENT_ENTROPY
        }));
        c.mechanism = m;
    }
    let reply = match (setup_byte >> 3) & 3 {
        0 => None,
        1 => Some(AuthReply::allow().user_id("u")),
        2 => Some(AuthReply::deny("no")),
        _ => Some(AuthReply::with_status(300, "later")),
    };
    // Servers ask (and NULL, on both sides, with a ZAP domain; setups 5-7 use NULL so).
    let mut ra = None;
    let mut rb = None;
    if let Some(reply) = reply {
        for (c, slot) in [(&mut ca, &mut ra), (&mut cb, &mut rb)] {
            let asks = match c.mechanism {
                MechanismConfig::Null => setup_byte & 7 >= 5,
                _ => c.mechanism.as_server() == Some(true),
            };
            if asks {
                c.authenticate = true;
                c.zap_domain = Bytes::from_static(b"fuzz");
                *slot = Some(reply.clone());
            }
        }
    }
    if setup_byte & 0x20 != 0 {
        for c in [&mut ca, &mut cb] {
            c.heartbeat_ivl = Some(Duration::from_millis(100));
            c.heartbeat_ttl = Some(Duration::from_millis(1000));
            c.heartbeat_timeout = Some(Duration::from_millis(300));
        }
    }
    let mut p = Pair {
        a: End::new(ca, ra),
        b: End::new(cb, rb),
        now: omq_fuzz::epoch(),
        sent: 0,
    };
    p.a.drain(p.now);
    p.b.drain(p.now);

    while !r.is_empty() {
        let op = r.u8();
        let side_b = op & 0x20 != 0;
        match op {
            0x00..=0x3F => {
                let k = (op & 0x1F) as usize;
                let n = if k == 31 {
                    usize::MAX
                } else {
                    (k + 1) * (k + 1)
                };
                p.carry(side_b, n);
            }
            0x40..=0x7F => {
                let parts = 1 + (op & 3) as usize;
                let scale = 1usize << ((op >> 2) & 3);
                let mut m = Message::new();
                for i in 0..parts {
                    let len = r.u8() as usize * scale;
                    m.push(vec![(p.sent as u8) ^ (i as u8); len]);
                }
                p.sent += 1;
                p.send(side_b, m);
            }
            0x80..=0xBF => {
                let on = op & 0x10 == 0;
                let topic = r.bytes8();
                p.subscription(side_b, on, topic);
            }
            0xC0..=0xDF => {
                let k = u64::from(op & 0x1F);
                p.advance(Duration::from_millis(k * k * 10));
            }
            0xE0..=0xFF => p.flush(),
        }
        let refused = p.a.refused || p.b.refused;
        for e in [&p.a, &p.b] {
            if let Some(err) = &e.failed {
                assert!(
                    allowed_failure(err, refused),
                    "two correct sessions failed: {err:?}"
                );
            }
        }
    }

    // Everything moves: both sides finish the handshake, and everything sent arrives.
    p.flush();
    let refused = p.a.refused || p.b.refused;
    for e in [&p.a, &p.b] {
        if let Some(err) = &e.failed {
            assert!(allowed_failure(err, refused), "failed: {err:?}");
        }
    }
    if p.a.failed.is_none() && p.b.failed.is_none() && !refused {
        assert!(
            p.a.session.is_ready() && p.b.session.is_ready(),
            "handshake did not complete with every byte delivered"
        );
        assert!(
            p.a.expect.is_empty(),
            "a is missing {:?}",
            p.a.expect.front()
        );
        assert!(
            p.b.expect.is_empty(),
            "b is missing {:?}",
            p.b.expect.front()
        );
    }
});
