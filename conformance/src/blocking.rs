//! A minimal blocking driver for one [`Session`] over a `std::net::TcpStream`, for interop
//! tests of the core before (and independently of) the async backends. It follows the run loop
//! of docs/ARCHITECTURE.md: after every input, drain every output.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use omq_core::{Message, Session, SessionConfig, SessionError, SessionEvent};

/// Why a blocking exchange stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum DriveError {
    /// The socket failed.
    Io(io::Error),
    /// The session failed.
    Session(SessionError),
    /// The peer closed the connection.
    Closed,
    /// The deadline passed first.
    TimedOut,
}

impl std::fmt::Display for DriveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriveError::Io(e) => write!(f, "i/o: {e}"),
            DriveError::Session(e) => write!(f, "session: {e}"),
            DriveError::Closed => f.write_str("peer closed the connection"),
            DriveError::TimedOut => f.write_str("timed out"),
        }
    }
}

impl std::error::Error for DriveError {}

/// A session on a blocking TCP stream.
#[derive(Debug)]
pub struct BlockingSession {
    /// The stream.
    pub stream: TcpStream,
    /// The session.
    pub session: Session,
    rx: BytesMut,
    /// Events not yet taken by the caller.
    pub events: Vec<SessionEvent>,
}

impl BlockingSession {
    /// Starts a session on a connected stream.
    pub fn new(stream: TcpStream, config: SessionConfig) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(BlockingSession {
            stream,
            session: Session::new(config, Instant::now()),
            rx: BytesMut::with_capacity(64 * 1024),
            events: Vec::new(),
        })
    }

    /// Writes everything the session has queued.
    pub fn flush(&mut self) -> io::Result<()> {
        while let Some(chunk) = self.session.poll_transmit() {
            self.stream.write_all(&chunk)?;
        }
        Ok(())
    }

    /// One round: flush, read what arrives within `wait`, feed it, fire timers, drain events.
    pub fn turn(&mut self, wait: Duration) -> Result<(), DriveError> {
        self.flush().map_err(DriveError::Io)?;
        let now = Instant::now();
        let timer_wait = self
            .session
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now))
            .unwrap_or(wait);
        let wait = wait.min(timer_wait).max(Duration::from_millis(1));
        self.stream
            .set_read_timeout(Some(wait))
            .map_err(DriveError::Io)?;
        let want = self.session.read_hint(&self.rx).max(16 * 1024);
        self.rx.reserve(want);
        let mut tmp = vec![0u8; want.min(1 << 20)];
        match self.stream.read(&mut tmp) {
            Ok(0) => return Err(DriveError::Closed),
            Ok(n) => {
                self.rx.extend_from_slice(&tmp[..n]);
                self.session
                    .handle_input(&mut self.rx, Instant::now())
                    .map_err(DriveError::Session)?;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(DriveError::Io(e)),
        }
        self.session
            .handle_timeout(Instant::now())
            .map_err(DriveError::Session)?;
        while let Some(e) = self.session.poll_event() {
            self.events.push(e);
        }
        self.flush().map_err(DriveError::Io)
    }

    /// Runs until `done` says so or `timeout` passes.
    pub fn run_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> Result<(), DriveError> {
        let deadline = Instant::now() + timeout;
        loop {
            if done(self) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(DriveError::TimedOut);
            }
            self.turn((deadline - now).min(Duration::from_millis(50)))?;
        }
    }

    /// Completes the handshake.
    pub fn handshake(&mut self, timeout: Duration) -> Result<(), DriveError> {
        self.run_until(timeout, |s| s.session.is_ready())
    }

    /// Waits for the next message.
    pub fn recv(&mut self, timeout: Duration) -> Result<Message, DriveError> {
        let mut out = None;
        self.run_until(timeout, |s| {
            if let Some(i) = s
                .events
                .iter()
                .position(|e| matches!(e, SessionEvent::Message(_)))
            {
                if let SessionEvent::Message(m) = s.events.remove(i) {
                    out = Some(m);
                }
                true
            } else {
                false
            }
        })?;
        Ok(out.expect("set when done"))
    }

    /// Sends a message and flushes it.
    pub fn send(&mut self, msg: &Message) -> Result<(), DriveError> {
        self.session
            .send_message(msg)
            .map_err(|_| DriveError::Closed)?;
        self.flush().map_err(DriveError::Io)
    }
}
