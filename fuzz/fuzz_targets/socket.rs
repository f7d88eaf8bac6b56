//! The `Socket` state machine of every core socket type, driven by peer events and user
//! operations decoded from the input.
//!
//! Input: a socket-type byte, two option bytes, an HWM byte (SNDHWM low nibble, RCVHWM high;
//! 0 is unlimited), then operations, one byte each (`op % 16`) with their arguments: accept,
//! connect, handshake done (with an identity), a message from a peer, a peer's subscription or
//! cancellation, a closed connection, time passing, user send / recv / subscribe, the driver
//! pulling a pipe's output, an HWM change, a disconnect.
//!
//! Every message a peer delivers carries a tag at the end of its last part, so whatever the
//! user receives is traced back to exactly one delivered message. Invariants after every
//! step: no panic; a received message is exactly what the peer sent, transformed only as the
//! socket type says (a ROUTER's routing id in front, REQ's and REP's envelopes off), never a
//! partial multipart, never twice, in order per peer; `can_recv` tells what `recv` does; no
//! pipe queue grows beyond the largest HWM set (plus the welcome and probe messages); once every
//! peer is gone and the user has read everything, no pipe is left.
#![no_main]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use omq_core::pipe::{Outbound, PipeId, PipeState};
use omq_core::wire::metadata::Metadata;
use omq_core::{
    Action, CloseReason, Message, Options, PeerInfo, RecvError, SendError, Socket, SocketOption,
    SocketType,
};
use omq_fuzz::reader::Reader;

const TYPES: [SocketType; 11] = [
    SocketType::Pub,
    SocketType::XPub,
    SocketType::Sub,
    SocketType::XSub,
    SocketType::Router,
    SocketType::Dealer,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Push,
    SocketType::Pull,
    SocketType::Pair,
];

/// Once a bug, fixed (the trie is iterative now; `trie_hostile` runs it on a 64 KiB stack): the
/// subscription trie recursed once per topic byte, so a long topic overflowed the stack. Topics
/// are cut to this length only with `OMQ_FUZZ_CHECK_KNOWN=0` (for an older omq-core).
const KNOWN_MAX_TOPIC: usize = 1024;

/// Most peers at once (keeps the cost of an input linear).
const MAX_PEERS: usize = 32;

const TAG_MAGIC: [u8; 2] = [0xF7, 0x7A];
const TAG_LEN: usize = 6;

fn compatible_peer(t: SocketType) -> SocketType {
    match t {
        SocketType::Pub | SocketType::XPub => SocketType::Sub,
        SocketType::Sub | SocketType::XSub => SocketType::Pub,
        SocketType::Router => SocketType::Dealer,
        SocketType::Dealer => SocketType::Router,
        SocketType::Req => SocketType::Rep,
        SocketType::Rep => SocketType::Req,
        SocketType::Push => SocketType::Pull,
        SocketType::Pull => SocketType::Push,
        _ => SocketType::Pair,
    }
}

struct Peer {
    pipe: PipeId,
    endpoint: Option<String>,
    /// A connection exists (accepted, or dialled and connected).
    connected: bool,
    ready: bool,
    /// Messages the socket refused (queue at RCVHWM), kept until ResumeRead, as
    /// `Connection` does.
    stash: Vec<Message>,
}

struct Sent {
    pipe: PipeId,
    parts: Vec<Bytes>,
}

struct Fuzz {
    t: SocketType,
    s: Socket,
    now: Instant,
    peers: Vec<Peer>,
    next_port: u32,
    next_tag: u32,
    sent: HashMap<u32, Sent>,
    /// Last tag received from each pipe (FIFO per peer).
    last_tag: HashMap<PipeId, u32>,
    /// Routing ids as the ROUTER named each pipe.
    rids: HashMap<PipeId, Bytes>,
    /// Largest SNDHWM / RCVHWM ever set (None once unlimited was set).
    snd_max: Option<usize>,
    rcv_max: Option<usize>,
    conflate: bool,
    correlate: bool,
    extras: usize,
}

impl Fuzz {
    fn peer_idx(&self, b: u8) -> Option<usize> {
        (!self.peers.is_empty()).then(|| b as usize % self.peers.len())
    }

    fn actions(&mut self) {
        while let Some(a) = self.s.poll_action() {
            match a {
                Action::Dial { pipe, endpoint } => {
                    self.s.handle_dialing(pipe);
                    if self.s.handle_connected(pipe, self.now).is_none() {
                        // The pipe is gone (a PAIR refuses a second peer as it attaches, even
                        // before dialling): the driver drops the connection.
                        assert!(self.s.pipes().get(pipe).is_none());
                        self.peers.retain(|p| p.pipe != pipe);
                        continue;
                    }
                    match self.peers.iter_mut().find(|p| p.pipe == pipe) {
                        Some(p) => {
                            p.connected = true;
                            p.ready = false;
                            p.stash.clear();
                        }
                        None => self.peers.push(Peer {
                            pipe,
                            endpoint: Some(endpoint.to_string()),
                            connected: true,
                            ready: false,
                            stash: Vec::new(),
                        }),
                    }
                }
                Action::Close { pipe } => {
                    // The socket has forgotten the pipe: the driver drops its connection.
                    assert!(
                        self.s.pipes().get(pipe).is_none(),
                        "Close of a pipe the socket still has"
                    );
                    self.peers.retain(|p| p.pipe != pipe);
                }
                Action::Flush { pipe } => {
                    assert!(
                        self.s.pipes().get(pipe).is_some(),
                        "flush of a pipe that is gone"
                    );
                }
                Action::ResumeRead { pipe } => {
                    if let Some(i) = self.peers.iter().position(|p| p.pipe == pipe) {
                        let stash = std::mem::take(&mut self.peers[i].stash);
                        let mut it = stash.into_iter();
                        while let Some(m) = it.next() {
                            if let Err(m) = self.s.handle_message(pipe, m) {
                                let mut rest = vec![m];
                                rest.extend(it);
                                self.peers[i].stash = rest;
                                break;
                            }
                        }
                    }
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
    }

    fn deliver(&mut self, i: usize, parts: Vec<Vec<u8>>) {
        let tag = self.next_tag;
        self.next_tag += 1;
        let mut parts: Vec<Bytes> = parts.into_iter().map(Bytes::from).collect();
        let mut last = parts.pop().unwrap_or_default().to_vec();
        last.extend_from_slice(&TAG_MAGIC);
        last.extend_from_slice(&tag.to_be_bytes());
        parts.push(Bytes::from(last));
        let pipe = self.peers[i].pipe;
        self.sent.insert(
            tag,
            Sent {
                pipe,
                parts: parts.clone(),
            },
        );
        let msg = Message::multipart(parts);
        if !self.peers[i].stash.is_empty() {
            // The connection is not being read.
            self.peers[i].stash.push(msg);
            return;
        }
        if let Err(m) = self.s.handle_message(pipe, msg) {
            self.peers[i].stash.push(m);
        }
    }

    /// Checks a received message against what was delivered.
    fn received(&mut self, m: &Message) {
        assert!(!m.is_empty(), "received an empty message");
        let parts: Vec<&[u8]> = m.parts().iter().map(|p| &p[..]).collect();
        let last = parts[parts.len() - 1];
        let tag = (last.len() >= TAG_LEN && last[last.len() - TAG_LEN..][..2] == TAG_MAGIC)
            .then(|| u32::from_be_bytes(last[last.len() - 4..].try_into().unwrap()));
        let Some(tag) = tag else {
            assert_eq!(self.t, SocketType::XPub, "received a message nobody sent");
            assert!(parts.len() == 1 && matches!(parts[0].first(), Some(0 | 1)));
            return;
        };
        let sent = self
            .sent
            .remove(&tag)
            .expect("a message received twice (or a tag forged)");
        if let Some(prev) = self.last_tag.insert(sent.pipe, tag) {
            assert!(prev < tag, "messages from one peer out of order");
        }
        let sp: Vec<&[u8]> = sent.parts.iter().map(|p| &p[..]).collect();
        let expected: Vec<&[u8]> = match self.t {
            SocketType::Router => {
                let mut rid = &self.rids.get(&sent.pipe).expect("a named peer")[..];
                // Once a finding, fixed: a ROUTER forgot the routing id of a peer that
                // disconnected with messages still queued, and handed those out behind an empty
                // id. Accepted only with `OMQ_FUZZ_CHECK_KNOWN=0`.
                let active = self
                    .s
                    .pipes()
                    .get(sent.pipe)
                    .is_some_and(|p| p.state() == PipeState::Active);
                if parts[0].is_empty() && !active && !omq_fuzz::check_known() {
                    rid = &[];
                }
                std::iter::once(rid).chain(sp.iter().copied()).collect()
            }
            SocketType::Req => {
                let env = if self.correlate { 2 } else { 1 };
                assert!(
                    sp.len() > env && sp[env - 1].is_empty(),
                    "REQ took a non-reply"
                );
                sp[env..].to_vec()
            }
            SocketType::Rep => {
                let at = sp
                    .iter()
                    .position(|p| p.is_empty())
                    .expect("REP took no envelope");
                sp[at + 1..].to_vec()
            }
            _ => sp,
        };
        assert_eq!(
            parts, expected,
            "received something other than what was sent"
        );
    }

    fn recv(&mut self) -> Result<(), RecvError> {
        let can = self.s.can_recv();
        let r = self.s.recv();
        match &r {
            Ok(m) => {
                assert!(can, "recv gave a message when can_recv said no");
                let m = m.clone();
                self.received(&m);
            }
            // Once a finding, fixed: REP's can_recv said yes while only requests without a
            // delimiter were queued, which recv then discards. Accepted only with
            // `OMQ_FUZZ_CHECK_KNOWN=0`.
            Err(RecvError::WouldBlock) => assert!(
                !can || (self.t == SocketType::Rep && !omq_fuzz::check_known()),
                "can_recv said yes, recv would block"
            ),
            Err(_) => {}
        }
        r.map(|_| ())
    }

    fn check(&self) {
        let hwm_ok = |len: usize, max: Option<usize>| match max {
            None => true,
            Some(h) => len <= h.max(usize::from(self.conflate)) + self.extras,
        };
        for p in self.s.pipes().iter() {
            assert!(
                hwm_ok(p.queued_out(), self.snd_max),
                "outgoing queue beyond SNDHWM"
            );
            assert!(
                hwm_ok(p.queued_in(), self.rcv_max),
                "incoming queue beyond RCVHWM"
            );
        }
        assert!(self.s.pipes().len() <= self.next_port as usize + 2 * MAX_PEERS + 64);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let t = TYPES[r.u8() as usize % TYPES.len()];
    let o1 = r.u8();
    let o2 = r.u8();
    let hwm = r.u8();
    let Ok(mut s) = Socket::new(t, Options::default(), u64::from(o1) << 8 | u64::from(o2)) else {
        return;
    };
    let bit = |b: u8, i: u8| b & (1 << i) != 0;
    let (snd, rcv) = ((hwm & 0x0F) as usize, (hwm >> 4) as usize);
    let mut opts = vec![
        SocketOption::SndHwm(snd),
        SocketOption::RcvHwm(rcv),
        SocketOption::RouterMandatory(bit(o1, 0)),
        SocketOption::RouterHandover(bit(o1, 1)),
        SocketOption::ProbeRouter(bit(o1, 2)),
        SocketOption::ReqCorrelate(bit(o1, 3)),
        SocketOption::ReqRelaxed(bit(o1, 4)),
        SocketOption::Conflate(bit(o1, 5)),
        SocketOption::Immediate(bit(o1, 6)),
        SocketOption::InvertMatching(bit(o1, 7)),
        SocketOption::XpubVerbose(bit(o2, 0)),
        SocketOption::XpubVerboser(bit(o2, 1)),
        SocketOption::XpubManual(bit(o2, 2)),
        SocketOption::XpubNodrop(bit(o2, 3)),
        SocketOption::XsubVerboseUnsubscribe(bit(o2, 5)),
    ];
    if bit(o2, 4) {
        opts.push(SocketOption::XpubWelcomeMsg(Some(Bytes::from_static(
            b"welcome",
        ))));
    }
    let mut conflate = false;
    let mut correlate = false;
    let mut extras = 0;
    for o in opts {
        let (c, k, e) = match &o {
            SocketOption::Conflate(v) => (Some(*v), None, 0),
            SocketOption::ReqCorrelate(v) => (None, Some(*v), 0),
            SocketOption::ProbeRouter(true) | SocketOption::XpubWelcomeMsg(Some(_)) => {
                (None, None, 1)
            }
            _ => (None, None, 0),
        };
        if s.set_option(o).is_ok() {
            conflate |= c.unwrap_or(false);
            correlate = k.unwrap_or(correlate);
            extras += e;
        }
    }
    let limit = |h: usize| (h != 0).then_some(h);
    let mut f = Fuzz {
        t,
        s,
        now: omq_fuzz::epoch(),
        peers: Vec::new(),
        next_port: 0,
        next_tag: 0,
        sent: HashMap::new(),
        last_tag: HashMap::new(),
        rids: HashMap::new(),
        snd_max: if conflate { Some(1) } else { limit(snd) },
        rcv_max: if conflate { Some(1) } else { limit(rcv) },
        conflate,
        correlate,
        extras,
    };

    while !r.is_empty() {
        let op = r.u8();
        match op % 16 {
            0 if f.peers.len() < MAX_PEERS => {
                let (pipe, _cfg) = f.s.handle_accepted("tcp://0.0.0.0:5555", f.now);
                f.peers.push(Peer {
                    pipe,
                    endpoint: None,
                    connected: true,
                    ready: false,
                    stash: Vec::new(),
                });
            }
            1 if f.peers.len() < MAX_PEERS => {
                if op & 0x10 != 0 {
                    // ROUTER: name the next connection's peer ourselves.
                    let rid = r.bytes8().to_vec();
                    let _ =
                        f.s.set_option(SocketOption::ConnectRoutingId(Bytes::from(rid)));
                }
                f.next_port += 1;
                let ep = format!("tcp://127.0.0.1:{}", 1000 + f.next_port);
                f.s.connect(&ep, f.now).expect("a valid endpoint");
            }
            2 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                let rid = r.bytes8();
                let p = &mut f.peers[i];
                if !p.connected || p.ready {
                    continue;
                }
                p.ready = true;
                let peer_type = if op & 0x10 != 0 {
                    TYPES[(op >> 5) as usize % TYPES.len()]
                } else {
                    compatible_peer(t)
                };
                let info = PeerInfo {
                    socket_type: peer_type,
                    routing_id: (op & 0x20 == 0).then(|| Bytes::copy_from_slice(rid)),
                    properties: Arc::new(Metadata::new()),
                    zmtp_minor: 1,
                };
                let pipe = p.pipe;
                f.s.handle_ready(pipe, info, f.now);
                if let Some(rid) = f.s.pipes().get(pipe).and_then(|p| p.routing_id().cloned()) {
                    f.rids.insert(pipe, rid);
                }
            }
            3 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                let n = 1 + (op >> 4) as usize % 4;
                let parts = (0..n).map(|_| r.bytes8().to_vec()).collect();
                if f.peers[i].ready {
                    f.deliver(i, parts);
                }
            }
            4 | 5 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                let mut topic = r.bytes8().to_vec();
                if op & 0x80 != 0 {
                    // A long topic from a short input.
                    let times = r.u16() as usize;
                    topic = topic.repeat(times.min(64 << 10));
                }
                if !omq_fuzz::check_known() {
                    topic.truncate(KNOWN_MAX_TOPIC);
                }
                let pipe = f.peers[i].pipe;
                if f.peers[i].ready {
                    if op % 16 == 4 {
                        f.s.handle_subscribe(pipe, Bytes::from(topic));
                    } else {
                        f.s.handle_cancel(pipe, Bytes::from(topic));
                    }
                }
            }
            6 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                if !f.peers[i].connected {
                    continue;
                }
                let reason = match op >> 4 {
                    0..=7 => CloseReason::Eof,
                    8..=11 => CloseReason::Io(std::io::ErrorKind::ConnectionReset),
                    _ => CloseReason::Session(omq_core::SessionError::Timeout(
                        omq_core::Timeout::Heartbeat,
                    )),
                };
                let pipe = f.peers[i].pipe;
                f.s.handle_closed(pipe, &reason, f.now);
                let p = &mut f.peers[i];
                p.connected = false;
                p.ready = false;
                p.stash.clear();
                // Accepted pipes end here; a connecting pipe either waits to redial or, when
                // it is gone or only draining, the next dial makes a new one.
                let redials =
                    f.s.pipes()
                        .get(pipe)
                        .is_some_and(|p| p.state() != PipeState::Draining);
                if p.endpoint.is_none() || !redials {
                    f.peers.remove(i);
                }
            }
            7 => {
                let k = u64::from(r.u8());
                f.now += Duration::from_millis(k * k);
                f.s.handle_timeout(f.now);
                if let Some(t) = f.s.poll_timeout() {
                    assert!(t > f.now, "a redial is still due after handle_timeout");
                }
            }
            8 => {
                let n = 1 + (op >> 4) as usize % 4;
                let mut parts: Vec<Bytes> =
                    (0..n).map(|_| Bytes::copy_from_slice(r.bytes8())).collect();
                if t == SocketType::Router && op & 0x40 == 0 {
                    if let Some(i) = f.peer_idx(r.u8()) {
                        if let Some(rid) = f.rids.get(&f.peers[i].pipe) {
                            parts.insert(0, rid.clone());
                        }
                    }
                }
                let can = f.s.can_send();
                let res = f.s.send(Message::multipart(parts));
                if t != SocketType::Router {
                    if can {
                        assert!(res.is_ok(), "can_send said yes, send said {res:?}");
                    } else if !matches!(t, SocketType::Pub | SocketType::XPub) {
                        assert!(res.is_err(), "can_send said no, send succeeded");
                    }
                }
                if let Err(e) = &res {
                    assert!(!e.clone().into_message().is_empty());
                    if matches!(e, SendError::HostUnreachable(_)) {
                        assert_eq!(t, SocketType::Router);
                    }
                }
            }
            9 => {
                for _ in 0..1 + (op >> 4) {
                    if f.recv().is_err() {
                        break;
                    }
                }
            }
            10 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                let pipe = f.peers[i].pipe;
                for _ in 0..1 + (op >> 4) {
                    match f.s.poll_transmit(pipe) {
                        Some(Outbound::Message(m)) => assert!(!m.is_empty()),
                        Some(_) => {}
                        None => break,
                    }
                }
            }
            11 => {
                let topic = r.bytes8();
                let _ = if op & 0x10 == 0 {
                    f.s.subscribe(topic)
                } else {
                    f.s.unsubscribe(topic)
                };
            }
            12 => {
                let v = (op >> 4) as usize;
                let (opt, slot) = if op & 0x08 == 0 {
                    (SocketOption::SndHwm(v), &mut f.snd_max)
                } else {
                    (SocketOption::RcvHwm(v), &mut f.rcv_max)
                };
                if f.s.set_option(opt).is_ok() {
                    *slot = match (*slot, v) {
                        (_, 0) if !f.conflate => None,
                        (Some(m), v) => Some(m.max(v)),
                        (None, _) => None,
                    };
                }
                f.actions();
            }
            13 => {
                let Some(i) = f.peer_idx(r.u8()) else {
                    continue;
                };
                if let Some(ep) = f.peers[i].endpoint.clone() {
                    f.s.disconnect(&ep).expect("connected");
                    let pipe = f.peers[i].pipe;
                    f.peers.remove(i);
                    assert!(
                        f.s.pipes().get(pipe).is_none(),
                        "disconnect leaves the pipe"
                    );
                }
            }
            _ => {
                let _ = f.s.can_send();
                let _ = f.recv();
            }
        }
        f.actions();
        f.check();
    }

    // Every peer goes away, the user reads everything: no pipe is left.
    for i in (0..f.peers.len()).rev() {
        if let Some(ep) = f.peers[i].endpoint.clone() {
            f.s.disconnect(&ep).expect("connected");
        } else if f.peers[i].connected {
            let pipe = f.peers[i].pipe;
            f.s.handle_closed(pipe, &CloseReason::Eof, f.now);
        }
        f.peers.remove(i);
        f.actions();
    }
    let mut last = Ok(());
    for _ in 0..100_000 {
        last = f.recv();
        match last {
            Ok(()) => {}
            Err(RecvError::InvalidState) if t == SocketType::Rep => {
                // Answer the request being served, then read on.
                assert!(f.s.send(Message::from("reply")).is_ok());
            }
            Err(_) => break,
        }
    }
    f.actions();
    // FINDING (reported, not fixed here): a PUSH keeps what a peer sends it (it never reads),
    // so a peer that sends and disconnects leaves its pipe, with up to RCVHWM messages, for
    // ever; a REQ does the same between request cycles (until its next recv). Exempt unless
    // `OMQ_FUZZ_CHECK_KNOWN=1`.
    let stuck =
        t == SocketType::Push || (t == SocketType::Req && last == Err(RecvError::InvalidState));
    if stuck && !omq_fuzz::check_known() {
        return;
    }
    let left: Vec<_> =
        f.s.pipes()
            .iter()
            .map(|p| (p.state(), p.queued_in(), p.origin().clone()))
            .collect();
    assert!(
        left.is_empty(),
        "pipes left after every peer closed and the user drained: {left:?}"
    );
});
