//! omq-core embedded in a plain event loop: no async runtime, TCP sockets and a readiness loop
//! of our own (`mio`: epoll on Linux, edge-triggered, so every read and write goes on until the
//! kernel says "would block"). Whole omq-core sockets run here,
//! with bind and accept, connect and reconnection, HWM and timers, not just one session.
//!
//! ```text
//! cargo run -p conformance --example embedded -- rep tcp://127.0.0.1:5555        # serves
//! cargo run -p conformance --example embedded -- req tcp://127.0.0.1:5555 3      # asks 3
//! ```
//! The REP echoes each request; the REQ sends `request N` and prints each reply. Either side
//! can be libzmq (the conformance suite runs both against it). docs/ARCHITECTURE.md,
//! "Embedding the core", walks through this file.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use omq_core::connection::Connection;
use omq_core::endpoint::{Endpoint, Host};
use omq_core::pipe::PipeId;
use omq_core::{Action, CloseReason, Message, Options, Socket, SocketType};

/// Token of the listener; connections use their pipe's raw id + 1.
const LISTENER: Token = Token(0);

/// One live connection: its stream, the core's connection, and bytes not yet written.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    conn: Connection,
    rx: BytesMut,
    tx: Vec<Bytes>,
}

/// A socket of omq-core driven by a `mio` loop.
#[derive(Debug)]
pub struct Embedded {
    socket: Socket,
    poll: Poll,
    listener: Option<(TcpListener, String)>,
    conns: HashMap<Token, Conn>,
}

fn key(pipe: PipeId) -> Token {
    Token(pipe.raw() as usize + 1)
}

fn tcp_addr(ep: &Endpoint) -> io::Result<std::net::SocketAddr> {
    match ep {
        Endpoint::Tcp { host, port, .. } => {
            let host = match host {
                Host::Any => "0.0.0.0".to_string(),
                Host::Ip(ip) => ip.to_string(),
                Host::Name(h) => h.clone(),
            };
            (host, *port)
                .to_socket_addrs()?
                .next()
                .ok_or(io::ErrorKind::NotFound.into())
        }
        _ => Err(io::Error::other("this example speaks tcp only")),
    }
}

impl Embedded {
    /// A socket of type `t` (the seed picks its generated routing ids).
    pub fn new(t: SocketType) -> io::Result<Embedded> {
        let socket = Socket::new(t, Options::default(), 7).map_err(io::Error::other)?;
        Ok(Embedded {
            socket,
            poll: Poll::new()?,
            listener: None,
            conns: HashMap::new(),
        })
    }

    /// Binds a tcp endpoint and returns it resolved (port 0 becomes the real port).
    pub fn bind(&mut self, endpoint: &str) -> io::Result<String> {
        let ep = self.socket.bind(endpoint).map_err(io::Error::other)?;
        let mut listener = TcpListener::bind(tcp_addr(&ep)?)?;
        let resolved = format!("tcp://{}", listener.local_addr()?);
        self.socket.handle_bound(endpoint, &resolved);
        self.poll
            .registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        self.listener = Some((listener, resolved.clone()));
        Ok(resolved)
    }

    /// Connects (now, and again after every loss, as the socket's options say).
    pub fn connect(&mut self, endpoint: &str) -> io::Result<()> {
        self.socket
            .connect(endpoint, Instant::now())
            .map_err(io::Error::other)?;
        self.actions()
    }

    /// The socket, for `send`, `recv` and options.
    pub fn socket(&mut self) -> &mut Socket {
        &mut self.socket
    }

    /// Runs the loop until `done` says so or `limit` passes; `done` sees the socket after
    /// every round (send and receive there).
    pub fn run(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Socket) -> bool,
    ) -> io::Result<()> {
        let end = Instant::now() + limit;
        let mut events = Events::with_capacity(64);
        loop {
            self.actions()?;
            if done(&mut self.socket) {
                return Ok(());
            }
            self.actions()?;
            let now = Instant::now();
            if now >= end {
                return Err(io::ErrorKind::TimedOut.into());
            }
            // Sleep until the earliest deadline of the socket or of any connection.
            let deadline = self
                .conns
                .values()
                .filter_map(|c| c.conn.poll_timeout())
                .chain(self.socket.poll_timeout())
                .chain([end])
                .min()
                .unwrap_or(end);
            self.poll
                .poll(&mut events, Some(deadline.saturating_duration_since(now)))?;
            let now = Instant::now();
            for ev in events.iter() {
                if ev.token() == LISTENER {
                    self.accept(now)?;
                } else {
                    self.service(ev.token(), ev.is_readable() || ev.is_read_closed(), now);
                }
            }
            self.socket.handle_timeout(now);
            let due: Vec<Token> = self
                .conns
                .iter()
                .filter(|(_, c)| c.conn.poll_timeout().is_some_and(|t| t <= now))
                .map(|(&k, _)| k)
                .collect();
            for k in due {
                let r = {
                    let c = self.conns.get_mut(&k).expect("listed above");
                    c.conn.handle_timeout(&mut self.socket, now)
                };
                if let Err(e) = r {
                    self.close_conn(k, CloseReason::Session(e), now);
                }
            }
        }
    }

    fn accept(&mut self, now: Instant) -> io::Result<()> {
        loop {
            let Some((listener, resolved)) = &self.listener else {
                return Ok(());
            };
            match listener.accept() {
                Ok((stream, _)) => {
                    let (pipe, config) = self.socket.handle_accepted(resolved, now);
                    self.add_conn(pipe, stream, Connection::new(pipe, config, now))?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn add_conn(
        &mut self,
        pipe: PipeId,
        mut stream: TcpStream,
        conn: Connection,
    ) -> io::Result<()> {
        stream.set_nodelay(true)?;
        let both = Interest::READABLE | Interest::WRITABLE;
        self.poll
            .registry()
            .register(&mut stream, key(pipe), both)?;
        let c = Conn {
            stream,
            conn,
            rx: BytesMut::with_capacity(4096),
            tx: Vec::new(),
        };
        self.conns.insert(key(pipe), c);
        self.service(key(pipe), false, Instant::now());
        Ok(())
    }

    /// Reads what arrived (when `readable`), then writes what the socket has for the peer.
    fn service(&mut self, k: Token, readable: bool, now: Instant) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let mut outcome = Ok(());
        if readable && c.conn.wants_read() {
            loop {
                let room = c.conn.read_hint(&c.rx);
                c.rx.reserve(room);
                let mut chunk = vec![0u8; room.max(1)];
                match c.stream.read(&mut chunk) {
                    Ok(0) => {
                        outcome = Err(CloseReason::Eof);
                        break;
                    }
                    Ok(n) => {
                        c.rx.extend_from_slice(&chunk[..n]);
                        if let Err(e) = c.conn.handle_input(&mut self.socket, &mut c.rx, now) {
                            outcome = Err(CloseReason::Session(e));
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        outcome = Err(CloseReason::Io(e.kind()));
                        break;
                    }
                }
            }
        }
        // Take what waits in the pipe, then write as much as the kernel takes.
        let _ = c.conn.pull(&mut self.socket);
        while let Some(chunk) = c.conn.poll_transmit() {
            c.tx.push(chunk);
        }
        while let Some(first) = c.tx.first_mut() {
            match c.stream.write(first) {
                Ok(n) if n == first.len() => {
                    c.tx.remove(0);
                }
                Ok(n) => {
                    let _ = first.split_to(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    outcome = Err(CloseReason::Io(e.kind()));
                    break;
                }
            }
        }
        if let Err(reason) = outcome {
            self.close_conn(k, reason, now);
        }
    }

    fn close_conn(&mut self, k: Token, reason: CloseReason, now: Instant) {
        if let Some(mut c) = self.conns.remove(&k) {
            let _ = self.poll.registry().deregister(&mut c.stream);
            self.socket.handle_closed(c.conn.pipe(), &reason, now);
        }
    }

    /// Carries out what the socket asks: dial, close, flush, resume reading.
    fn actions(&mut self) -> io::Result<()> {
        let now = Instant::now();
        while let Some(action) = self.socket.poll_action() {
            match action {
                Action::Dial { pipe, endpoint } => {
                    self.socket.handle_dialing(pipe);
                    let addr = tcp_addr(&endpoint)?;
                    // A blocking connect keeps the example short; loopback answers at once.
                    match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                        Ok(stream) => match self.socket.handle_connected(pipe, now) {
                            Some(config) => {
                                stream.set_nonblocking(true)?;
                                let stream = TcpStream::from_std(stream);
                                self.add_conn(pipe, stream, Connection::new(pipe, config, now))?
                            }
                            None => drop(stream),
                        },
                        Err(e) => {
                            let refused = e.kind() == io::ErrorKind::ConnectionRefused;
                            self.socket.handle_connect_failed(pipe, refused, now);
                        }
                    }
                }
                Action::Close { pipe } => {
                    if let Some(mut c) = self.conns.remove(&key(pipe)) {
                        let _ = self.poll.registry().deregister(&mut c.stream);
                    }
                }
                Action::Flush { pipe } => self.service(key(pipe), false, now),
                Action::ResumeRead { pipe } => {
                    let k = key(pipe);
                    let r = match self.conns.get_mut(&k) {
                        Some(c) => c.conn.handle_resume(&mut self.socket, &mut c.rx, now),
                        None => Ok(()),
                    };
                    match r {
                        Ok(()) => self.service(k, true, now),
                        Err(e) => self.close_conn(k, CloseReason::Session(e), now),
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// REQ: sends `count` requests to `endpoint` and returns the replies.
pub fn ask(endpoint: &str, count: usize) -> io::Result<Vec<Message>> {
    let mut e = Embedded::new(SocketType::Req)?;
    e.connect(endpoint)?;
    let mut replies = Vec::new();
    let mut sent = 0;
    e.run(Duration::from_secs(30), |s| {
        if let Ok(m) = s.recv() {
            replies.push(m);
        }
        if sent == replies.len()
            && sent < count
            && s.send(Message::from(format!("request {sent}"))).is_ok()
        {
            sent += 1;
        }
        replies.len() == count
    })?;
    Ok(replies)
}

/// REP: answers `count` requests on `endpoint` with the request itself; `bound` hears the
/// resolved endpoint first.
pub fn serve(endpoint: &str, count: usize, bound: impl FnOnce(&str)) -> io::Result<()> {
    let mut e = Embedded::new(SocketType::Rep)?;
    bound(&e.bind(endpoint)?);
    let mut answered = 0;
    e.run(Duration::from_secs(30), |s| {
        if let Ok(m) = s.recv() {
            if s.send(m).is_ok() {
                answered += 1;
            }
        }
        answered == count
    })?;
    // Let the last reply leave before the socket goes.
    e.run(Duration::from_millis(200), |s| !s.has_pending_output())
        .or(Ok(()))
}

#[allow(dead_code)]
fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["req", ep, n] => {
            for m in ask(ep, n.parse().map_err(io::Error::other)?)? {
                println!("{}", String::from_utf8_lossy(&m.parts()[0]));
            }
            Ok(())
        }
        ["rep", ep] => serve(ep, usize::MAX, |b| eprintln!("bound to {b}")),
        _ => Err(io::Error::other(
            "usage: embedded (req ENDPOINT COUNT | rep ENDPOINT)",
        )),
    }
}
