//! A simulated network of whole sockets, with a virtual clock: the reference driver.
//!
//! [`Net`] plays the part an async backend plays for real: it carries out the sockets'
//! actions (dial, close, flush, resume reading), runs one [`Connection`] per simulated
//! connection, moves bytes over links that can fragment, delay and lose them, and fires timers
//! when the clock jumps to the next deadline. Exact counts (HWM, fairness) and timings
//! (reconnect intervals, heartbeats) are asserted here, deterministically for a given seed.
//!
//! Endpoints are only names here: `tcp://anything:PORT` is keyed by its port, `ipc://` and
//! `inproc://` by their names, and binding port 0 hands out ports from 30001 up.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use crate::connection::Connection;
use crate::endpoint::Endpoint;
use crate::message::Message;
use crate::monitor::MonitorEvent;
use crate::options::Options;
use crate::pipe::PipeId;
use crate::rng::SplitMix64;
use crate::sim::LinkConfig;
use crate::socket::{Action, CloseReason, RecvError, SendError, Socket, SocketError};
use crate::socket_type::SocketType;

/// A socket's handle in the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SockId(usize);

/// A connection's handle in the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId(usize);

#[derive(Debug)]
struct Side {
    sock: SockId,
    conn: Connection,
    rx: BytesMut,
    /// Bytes that arrived while the connection did not want to read (backpressure).
    held: BytesMut,
}

#[derive(Debug)]
struct Flight {
    at: Instant,
    bytes: bytes::Bytes,
}

#[derive(Debug)]
struct SimConn {
    sides: [Side; 2],
    /// links[0] carries side 0's bytes to side 1.
    links: [std::collections::VecDeque<Flight>; 2],
    link: LinkConfig,
    carried: [usize; 2],
    /// Silently losing everything (a cut cable): neither side is told.
    cut: bool,
}

/// The simulated network.
#[derive(Debug)]
pub struct Net {
    /// Virtual time now.
    pub now: Instant,
    start: Instant,
    sockets: Vec<Option<Socket>>,
    listeners: HashMap<String, (SockId, String)>,
    conns: Vec<Option<SimConn>>,
    rng: SplitMix64,
    /// Link behaviour for new connections.
    pub link: LinkConfig,
    /// Bytes a connection holds in flight one way before its sender must wait (the kernel's
    /// socket buffers, in effect), so a stalled reader pushes back on its writer.
    pub buffer: usize,
    next_port: u16,
    /// Every monitor event, per socket, once monitoring is on.
    events: HashMap<SockId, Vec<MonitorEvent>>,
    /// Flip a bit in the last byte of the next chunk this socket transmits (tamper tests).
    pub tamper: Option<SockId>,
    /// New connections leave the peer's properties to the socket, which attaches them as
    /// each message is read, as a multi-threaded driver does
    /// ([`Connection::leave_properties_to_reader`]).
    pub properties_at_read: bool,
}

fn listener_key(ep: &Endpoint) -> String {
    match ep {
        Endpoint::Tcp { port, .. } => format!("tcp:{port}"),
        other => other.to_string(),
    }
}

impl Net {
    /// An empty network with instant links (cutting chunks at random places; see
    /// [`LinkConfig::max_piece`]).
    pub fn new(seed: u64) -> Self {
        let start = Instant::now();
        Net {
            now: start,
            start,
            sockets: Vec::new(),
            listeners: HashMap::new(),
            conns: Vec::new(),
            rng: SplitMix64::new(seed),
            link: LinkConfig::default(),
            next_port: 30000,
            buffer: 128 * 1024,
            events: HashMap::new(),
            tamper: None,
            properties_at_read: false,
        }
    }

    /// Virtual time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Adds a socket.
    pub fn socket(&mut self, t: SocketType, options: Options) -> Result<SockId, SocketError> {
        let s = Socket::new(t, options, self.rng.next_u64())?;
        self.sockets.push(Some(s));
        Ok(SockId(self.sockets.len() - 1))
    }

    /// The socket behind a handle.
    pub fn get(&mut self, s: SockId) -> &mut Socket {
        self.sockets[s.0].as_mut().expect("socket closed")
    }

    /// Turns monitoring on for a socket; events are collected by [`Net::events`].
    pub fn monitor(&mut self, s: SockId) {
        self.get(s).set_monitor(true);
        self.events.entry(s).or_default();
    }

    /// The monitor events of a socket so far.
    pub fn events(&mut self, s: SockId) -> Vec<MonitorEvent> {
        self.collect_events();
        self.events.get(&s).cloned().unwrap_or_default()
    }

    fn collect_events(&mut self) {
        for (i, s) in self.sockets.iter_mut().enumerate() {
            if let Some(s) = s {
                while let Some(e) = s.poll_monitor() {
                    self.events.entry(SockId(i)).or_default().push(e);
                }
            }
        }
    }

    /// Binds; returns the resolved endpoint.
    pub fn bind(&mut self, s: SockId, endpoint: &str) -> Result<String, SocketError> {
        let ep = self.get(s).bind(endpoint)?;
        let resolved = match &ep {
            Endpoint::Tcp { port: 0, .. } => {
                self.next_port += 1;
                ep.rescheme(format!("tcp://127.0.0.1:{}", self.next_port))
            }
            other => other.to_string(),
        };
        let key = listener_key(&resolved.parse().expect("valid"));
        if self.listeners.contains_key(&key) {
            self.get(s).handle_bind_failed(endpoint, 98);
            return Err(SocketError::NotBound(format!("{endpoint}: address in use")));
        }
        self.listeners.insert(key, (s, resolved.clone()));
        self.get(s).handle_bound(endpoint, &resolved);
        self.drive();
        Ok(resolved)
    }

    /// Unbinds.
    pub fn unbind(&mut self, s: SockId, endpoint: &str) -> Result<(), SocketError> {
        let resolved = self.get(s).unbind(endpoint)?;
        self.listeners
            .retain(|_, (sock, ep)| !(*sock == s && *ep == resolved));
        self.drive();
        Ok(())
    }

    /// Connects.
    pub fn connect(&mut self, s: SockId, endpoint: &str) -> Result<(), SocketError> {
        let now = self.now;
        self.get(s).connect(endpoint, now)?;
        self.drive();
        Ok(())
    }

    /// Disconnects.
    pub fn disconnect(&mut self, s: SockId, endpoint: &str) -> Result<(), SocketError> {
        self.get(s).disconnect(endpoint)?;
        self.drive();
        Ok(())
    }

    /// Sends without waiting.
    pub fn send(&mut self, s: SockId, msg: impl Into<Message>) -> Result<(), SendError> {
        let r = self.get(s).send(msg.into());
        self.drive();
        r
    }

    /// Receives without waiting (moving any bytes in flight first).
    pub fn recv(&mut self, s: SockId) -> Result<Message, RecvError> {
        self.drive();
        let r = self.get(s).recv();
        self.drive();
        r
    }

    /// Sends, waiting on the virtual clock up to `timeout` (None: as long as anything is
    /// scheduled) when the socket cannot take the message: what a driver does with SNDTIMEO.
    pub fn send_wait(
        &mut self,
        s: SockId,
        msg: impl Into<Message>,
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        let deadline = timeout.map(|t| self.now + t);
        let mut msg = msg.into();
        loop {
            match self.send(s, msg) {
                Err(SendError::WouldBlock(m)) => msg = m,
                other => return other,
            }
            if !self.wait_step(deadline) {
                return Err(SendError::WouldBlock(msg));
            }
        }
    }

    /// Receives, waiting on the virtual clock up to `timeout`.
    pub fn recv_wait(
        &mut self,
        s: SockId,
        timeout: Option<Duration>,
    ) -> Result<Message, RecvError> {
        let deadline = timeout.map(|t| self.now + t);
        loop {
            match self.recv(s) {
                Err(RecvError::WouldBlock) => {}
                other => return other,
            }
            if !self.wait_step(deadline) {
                return Err(RecvError::WouldBlock);
            }
        }
    }

    /// Advances to the next deadline, but not past `deadline`. False when there is nothing
    /// to wait for before it (the clock is then at the deadline).
    fn wait_step(&mut self, deadline: Option<Instant>) -> bool {
        match (self.next_deadline(), deadline) {
            (Some(t), Some(d)) if t <= d => {
                self.advance_to(t);
                true
            }
            (Some(t), None) => {
                self.advance_to(t);
                true
            }
            (_, Some(d)) => {
                self.advance_to(d);
                false
            }
            (None, None) => false,
        }
    }

    /// Runs the network for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.drive();
        while let Some(t) = self.next_deadline() {
            if t > until {
                break;
            }
            self.advance_to(t);
        }
        self.advance_to(until);
    }

    fn advance_to(&mut self, t: Instant) {
        self.now = self.now.max(t);
        let now = self.now;
        for s in self.sockets.iter_mut().flatten() {
            s.handle_timeout(now);
        }
        for i in 0..self.conns.len() {
            for side in 0..2 {
                let r = match self.conns[i].as_mut() {
                    Some(c) => {
                        let sock = c.sides[side].sock;
                        let Some(socket) = self.sockets[sock.0].as_mut() else {
                            continue;
                        };
                        c.sides[side].conn.handle_timeout(socket, now)
                    }
                    None => continue,
                };
                if let Err(e) = r {
                    self.fail(ConnId(i), side, CloseReason::Session(e));
                }
            }
        }
        self.drive();
    }

    /// The next scheduled instant.
    pub fn next_deadline(&self) -> Option<Instant> {
        let sockets = self
            .sockets
            .iter()
            .flatten()
            .filter_map(|s| s.poll_timeout());
        let conns = self.conns.iter().flatten().flat_map(|c| {
            let timers = c.sides.iter().filter_map(|s| s.conn.poll_timeout());
            let flights = c.links.iter().filter_map(|l| l.front().map(|f| f.at));
            timers.chain(flights).collect::<Vec<_>>()
        });
        sockets.chain(conns).min()
    }

    /// Closes a socket, first letting it flush for up to its LINGER (virtual time).
    pub fn close(&mut self, s: SockId) {
        let linger = self.get(s).options().get_linger();
        self.get(s).close();
        // An infinite linger towards a peer that never comes would wait forever; the
        // simulation gives up after an hour of virtual time.
        let deadline = Some(self.now + linger.unwrap_or(Duration::from_secs(3600)));
        self.drive();
        while self.pending_output(s) && self.wait_step(deadline) {}
        self.collect_events();
        for i in 0..self.conns.len() {
            let Some(side) = self.conns[i]
                .as_ref()
                .and_then(|c| c.sides.iter().position(|x| x.sock == s))
            else {
                continue;
            };
            self.hang_up(ConnId(i), side);
        }
        self.listeners.retain(|_, (sock, _)| *sock != s);
        self.sockets[s.0] = None;
        self.drive();
    }

    /// Whether `s` still has messages queued or bytes on the way to a peer.
    fn pending_output(&mut self, s: SockId) -> bool {
        if self.get(s).has_pending_output() {
            return true;
        }
        self.conns.iter().flatten().any(|c| {
            c.sides.iter().enumerate().any(|(i, side)| {
                side.sock == s
                    && !c.cut
                    && (side.conn.queued_transmit() > 0 || !c.links[i].is_empty())
            })
        })
    }

    /// Silently loses everything on every connection of `s` from now on (a cut cable): only
    /// heartbeats can tell.
    pub fn cut(&mut self, s: SockId) {
        for c in self.conns.iter_mut().flatten() {
            if c.sides.iter().any(|x| x.sock == s) {
                c.cut = true;
                c.links[0].clear();
                c.links[1].clear();
            }
        }
    }

    /// Ends every connection of `s` as if its peer process died (both sides see the end).
    pub fn kill_connections(&mut self, s: SockId) {
        for i in 0..self.conns.len() {
            if self.conns[i]
                .as_ref()
                .is_some_and(|c| c.sides.iter().any(|x| x.sock == s))
            {
                self.hang_up(ConnId(i), 0);
            }
        }
        self.drive();
    }

    /// Number of live connections.
    pub fn connection_count(&self) -> usize {
        self.conns.iter().flatten().count()
    }

    /// Moves everything that can move without the clock advancing.
    pub fn drive(&mut self) {
        loop {
            let mut progress = false;
            progress |= self.run_actions();
            for i in 0..self.conns.len() {
                progress |= self.pump(ConnId(i));
            }
            self.collect_events();
            if !progress {
                break;
            }
        }
    }

    fn run_actions(&mut self) -> bool {
        let mut any = false;
        for si in 0..self.sockets.len() {
            while let Some(action) = self.sockets[si].as_mut().and_then(|s| s.poll_action()) {
                any = true;
                let sock = SockId(si);
                match action {
                    Action::Dial { pipe, endpoint } => self.dial(sock, pipe, &endpoint),
                    Action::Close { pipe } => {
                        if let Some((c, side)) = self.find(sock, pipe) {
                            self.hang_up(c, side);
                        }
                    }
                    // Every connection is pumped on every pass, so these need no bookkeeping.
                    Action::Flush { .. } | Action::ResumeRead { .. } => {}
                }
            }
        }
        any
    }

    fn find(&self, sock: SockId, pipe: PipeId) -> Option<(ConnId, usize)> {
        self.conns.iter().enumerate().find_map(|(i, c)| {
            let c = c.as_ref()?;
            let side = c
                .sides
                .iter()
                .position(|s| s.sock == sock && s.conn.pipe() == pipe)?;
            Some((ConnId(i), side))
        })
    }

    fn dial(&mut self, sock: SockId, pipe: PipeId, endpoint: &Endpoint) {
        let now = self.now;
        self.get(sock).handle_dialing(pipe);
        let Some((listener, listener_ep)) = self.listeners.get(&listener_key(endpoint)).cloned()
        else {
            self.get(sock).handle_connect_failed(pipe, true, now);
            return;
        };
        let Some(mut cfg_a) = self.get(sock).handle_connected(pipe, now) else {
            return;
        };
        let (pipe_b, mut cfg_b) = self.get(listener).handle_accepted(&listener_ep, now);
        // Deterministic "randomness" for the security handshakes, from the network's seed.
        for cfg in [&mut cfg_a, &mut cfg_b] {
            let mut bytes = [0u8; 32];
            for chunk in bytes.chunks_mut(8) {
                chunk.copy_from_slice(&self.rng.next_u64().to_le_bytes());
            }
            cfg.entropy = Some(crate::mechanism::Entropy::from_bytes(bytes));
        }
        let at_read = self.properties_at_read;
        let side = |s, pipe, cfg| Side {
            sock: s,
            conn: {
                let mut c = Connection::new(pipe, cfg, now);
                if at_read {
                    c.leave_properties_to_reader();
                }
                c
            },
            rx: BytesMut::new(),
            held: BytesMut::new(),
        };
        let conn = SimConn {
            sides: [side(sock, pipe, cfg_a), side(listener, pipe_b, cfg_b)],
            links: Default::default(),
            link: self.link.clone(),
            carried: [0, 0],
            cut: false,
        };
        self.conns.push(Some(conn));
    }

    /// One pass over a connection: pull from pipes, transmit, deliver. True on progress.
    fn pump(&mut self, id: ConnId) -> bool {
        let now = self.now;
        let mut progress = false;
        for side in 0..2 {
            let Some(c) = self.conns[id.0].as_mut() else {
                return progress;
            };
            let sock = c.sides[side].sock;
            let Some(socket) = self.sockets[sock.0].as_mut() else {
                continue;
            };
            let s = &mut c.sides[side];
            let _ = s.conn.pull(socket);
            if !s.conn.wants_read() || s.conn.input_pending(&s.rx) {
                let (was_waiting, had) = (!s.conn.wants_read(), s.rx.len());
                let r = s.conn.handle_resume(socket, &mut s.rx, now);
                if (was_waiting && s.conn.wants_read()) || s.rx.len() != had {
                    progress = true;
                }
                if let Err(e) = r {
                    self.fail(id, side, CloseReason::Session(e));
                    return true;
                }
            }
            loop {
                let in_flight: usize = c.links[side].iter().map(|f| f.bytes.len()).sum::<usize>()
                    + c.sides[1 - side].held.len();
                if in_flight >= self.buffer && !c.cut {
                    break;
                }
                let Some(mut chunk) = c.sides[side].conn.poll_transmit() else {
                    break;
                };
                if self.tamper == Some(c.sides[side].sock) && !chunk.is_empty() {
                    self.tamper = None;
                    let mut bytes = chunk.to_vec();
                    let last = bytes.len() - 1;
                    bytes[last] ^= 1;
                    chunk = bytes::Bytes::from(bytes);
                }
                progress = true;
                if c.cut {
                    continue;
                }
                Self::send_on_link(c, side, chunk, now, &mut self.rng);
            }
            // STREAM: closed on request once everything before it is on the other side.
            if c.sides[side].conn.close_requested() && c.links[side].is_empty() {
                self.fail(id, side, CloseReason::Eof);
                return true;
            }
        }
        // Deliveries.
        for from in 0..2 {
            let to = 1 - from;
            loop {
                let Some(c) = self.conns[id.0].as_mut() else {
                    return progress;
                };
                if c.links[from].front().is_none_or(|f| f.at > now) {
                    break;
                }
                let flight = c.links[from].pop_front().expect("checked");
                progress = true;
                c.sides[to].held.extend_from_slice(&flight.bytes);
            }
            let Some(c) = self.conns[id.0].as_mut() else {
                return progress;
            };
            let s = &mut c.sides[to];
            if s.held.is_empty() || !s.conn.wants_read() {
                continue;
            }
            let Some(socket) = self.sockets[s.sock.0].as_mut() else {
                continue;
            };
            s.rx.extend_from_slice(&s.held.split());
            progress = true;
            if let Err(e) = s.conn.handle_input(socket, &mut s.rx, now) {
                self.fail(id, to, CloseReason::Session(e));
                return true;
            }
        }
        progress
    }

    fn send_on_link(
        c: &mut SimConn,
        side: usize,
        chunk: bytes::Bytes,
        now: Instant,
        rng: &mut SplitMix64,
    ) {
        let at = now + c.link.latency;
        c.link.pieces(chunk, &mut c.carried[side], rng, |bytes| {
            c.links[side].push_back(Flight { at, bytes });
        });
    }

    /// A side's session failed: its last words (an ERROR command) reach the peer, then both
    /// sides see the connection end.
    fn fail(&mut self, id: ConnId, side: usize, reason: CloseReason) {
        let now = self.now;
        let Some(mut c) = self.conns[id.0].take() else {
            return;
        };
        let other = 1 - side;
        // What was already on the wire arrives first, then the failing side's last words.
        let mut last = BytesMut::new();
        for f in c.links[side].drain(..) {
            last.extend_from_slice(&f.bytes);
        }
        while let Some(chunk) = c.sides[side].conn.poll_transmit() {
            last.extend_from_slice(&chunk);
        }
        let mut other_reason = CloseReason::Eof;
        if !c.cut && !last.is_empty() {
            let o = &mut c.sides[other];
            o.rx.extend_from_slice(&o.held.split());
            o.rx.extend_from_slice(&last);
            if let Some(socket) = self.sockets[o.sock.0].as_mut() {
                if let Err(e) = o.conn.handle_input(socket, &mut o.rx, now) {
                    other_reason = CloseReason::Session(e);
                }
            }
        }
        for (s, r) in [(side, reason), (other, other_reason)] {
            let sd = &c.sides[s];
            if let Some(socket) = self.sockets[sd.sock.0].as_mut() {
                socket.handle_closed(sd.conn.pipe(), &r, now);
            }
        }
    }

    /// Ends a connection from `side`: both sides see it end (the other as end of file).
    fn hang_up(&mut self, id: ConnId, side: usize) {
        let now = self.now;
        let Some(c) = self.conns[id.0].take() else {
            return;
        };
        for (s, r) in [(side, CloseReason::Eof), (1 - side, CloseReason::Eof)] {
            let sd = &c.sides[s];
            if let Some(socket) = self.sockets[sd.sock.0].as_mut() {
                socket.handle_closed(sd.conn.pipe(), &r, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::EventKind;

    fn pull(net: &mut Net) -> SockId {
        net.socket(SocketType::Pull, Options::default()).unwrap()
    }

    #[test]
    fn port_zero_hands_out_ports_from_30001_up() {
        let mut net = Net::new(1);
        let s = pull(&mut net);
        assert_eq!(
            net.bind(s, "tcp://127.0.0.1:0").unwrap(),
            "tcp://127.0.0.1:30001"
        );
        assert_eq!(net.bind(s, "tcp://*:0").unwrap(), "tcp://127.0.0.1:30002");
    }

    #[test]
    fn a_wait_ends_when_what_it_waits_for_arrives_not_at_its_timeout() {
        let mut net = Net::new(1);
        net.link.latency = Duration::from_millis(100);
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        let sink = pull(&mut net);
        net.bind(sink, "tcp://*:5555").unwrap();
        net.connect(push, "tcp://127.0.0.1:5555").unwrap();
        net.send(push, "late").unwrap();
        let got = net.recv_wait(sink, Some(Duration::from_secs(10))).unwrap();
        assert_eq!(&got.parts()[0][..], b"late");
        // The handshake's two round trips and the message: five trips of 100 ms at most.
        assert!(
            net.elapsed() <= Duration::from_millis(500),
            "{:?}",
            net.elapsed()
        );
    }

    /// A PUSH connected to a PULL at `port`, handshake done.
    fn pipeline(net: &mut Net, port: u16) -> (SockId, SockId) {
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        let sink = pull(net);
        net.bind(sink, &format!("tcp://*:{port}")).unwrap();
        net.connect(push, &format!("tcp://127.0.0.1:{port}"))
            .unwrap();
        net.run_for(Duration::from_secs(1));
        (push, sink)
    }

    #[test]
    fn drive_finishes_a_handshake_without_the_clock() {
        let mut net = Net::new(1);
        // An idle connection beside it: a pass where it makes no progress is not the end.
        pipeline(&mut net, 6666);
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        let sink = pull(&mut net);
        net.monitor(sink);
        net.bind(sink, "tcp://*:5555").unwrap();
        net.connect(push, "tcp://127.0.0.1:5555").unwrap();
        let kinds: Vec<_> = net.events(sink).iter().map(|e| e.kind).collect();
        assert!(kinds.contains(&EventKind::HandshakeSucceeded), "{kinds:?}");
    }

    #[test]
    fn close_waits_for_what_is_on_the_way_and_no_longer() {
        let mut net = Net::new(1);
        net.link.latency = Duration::from_millis(100);
        net.buffer = 4096;
        let (push, sink) = pipeline(&mut net, 5555);
        let start = net.elapsed();
        for _ in 0..100 {
            net.send(push, vec![7u8; 1000]).unwrap();
        }
        net.close(push);
        let took = net.elapsed() - start;
        // One trip of 100 ms, a few at most; an hour if close waited for nothing in particular.
        assert!(
            took >= Duration::from_millis(100) && took < Duration::from_secs(10),
            "{took:?}"
        );
        for _ in 0..100 {
            assert_eq!(net.recv(sink).unwrap().parts()[0].len(), 1000);
        }
    }

    #[test]
    fn close_takes_away_only_its_own_listeners() {
        let mut net = Net::new(1);
        let (a, b) = (pull(&mut net), pull(&mut net));
        net.bind(a, "tcp://*:5555").unwrap();
        net.bind(b, "tcp://*:6666").unwrap();
        net.close(a);
        let c = pull(&mut net);
        net.bind(c, "tcp://*:5555").unwrap();
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        net.connect(push, "tcp://127.0.0.1:6666").unwrap();
        assert_eq!(net.connection_count(), 1);
    }

    #[test]
    fn cut_and_kill_touch_only_that_sockets_connections() {
        let mut net = Net::new(1);
        let (p1, _) = pipeline(&mut net, 5555);
        let (p2, s2) = pipeline(&mut net, 6666);
        net.cut(p1);
        net.send(p2, "through").unwrap();
        assert_eq!(&net.recv(s2).unwrap().parts()[0][..], b"through");
        net.kill_connections(p1);
        assert_eq!(net.connection_count(), 1);
    }

    #[test]
    fn a_close_action_ends_the_connection_of_its_pipe() {
        let mut net = Net::new(1);
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        let (s1, s2) = (pull(&mut net), pull(&mut net));
        net.bind(s1, "tcp://*:5555").unwrap();
        net.bind(s2, "tcp://*:6666").unwrap();
        // The second connect's pipe has an id no pipe of either PULL has.
        net.connect(push, "tcp://127.0.0.1:6666").unwrap();
        net.connect(push, "tcp://127.0.0.1:5555").unwrap();
        net.run_for(Duration::from_secs(1));
        assert_eq!(net.connection_count(), 2);
        net.disconnect(push, "tcp://127.0.0.1:5555").unwrap();
        assert_eq!(net.connection_count(), 1);
        net.send(push, "to the second").unwrap();
        assert_eq!(net.recv(s1), Err(RecvError::WouldBlock));
        assert_eq!(&net.recv(s2).unwrap().parts()[0][..], b"to the second");
    }

    #[test]
    fn tamper_flips_the_lowest_bit_of_the_last_byte() {
        let mut net = Net::new(1);
        let (push, sink) = pipeline(&mut net, 5555);
        net.tamper = Some(push);
        net.send(push, "a").unwrap();
        assert_eq!(&net.recv(sink).unwrap().parts()[0][..], b"`");
        assert_eq!(net.tamper, None);
        net.send(push, "a").unwrap();
        assert_eq!(&net.recv(sink).unwrap().parts()[0][..], b"a");
    }

    #[test]
    fn unbind_takes_away_only_the_listener_named() {
        let mut net = Net::new(1);
        let (a, b) = (pull(&mut net), pull(&mut net));
        net.bind(a, "tcp://*:5555").unwrap();
        net.bind(a, "ipc://simnet-unbind").unwrap();
        net.bind(b, "tcp://*:6666").unwrap();
        net.unbind(a, "tcp://*:5555").unwrap();

        // The port is free again, and nothing answers there until it is bound anew.
        let push = net.socket(SocketType::Push, Options::default()).unwrap();
        net.connect(push, "tcp://127.0.0.1:5555").unwrap();
        assert_eq!(net.connection_count(), 0);
        let c = pull(&mut net);
        net.bind(c, "tcp://*:5555").unwrap();

        // The unbinding socket's other endpoint and the other socket's are still there.
        for (n, ep) in ["ipc://simnet-unbind", "tcp://127.0.0.1:6666"]
            .into_iter()
            .enumerate()
        {
            let push = net.socket(SocketType::Push, Options::default()).unwrap();
            net.connect(push, ep).unwrap();
            assert_eq!(net.connection_count(), n + 1, "{ep}");
        }
    }
}
