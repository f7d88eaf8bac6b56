//! ZMTP spoken byte by byte on a blocking `std::net::TcpStream`, for the attacker.
//!
//! Everything here is built by hand from spec 23 (greeting, frames, commands, metadata), not
//! with omq-core's encoders, so a bug in omq's codec cannot hide itself by being on both ends.
//! The attacker is deliberately minimal: it sends what it is told, reads only what a case
//! needs, and never trusts the victim either (every read has a deadline and a size cap).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// MORE: another part follows.
pub const MORE: u8 = 0x01;
/// LONG: an 8-byte size follows the flags.
pub const LONG: u8 = 0x02;
/// COMMAND: the frame is a command.
pub const COMMAND: u8 = 0x04;

/// How long any single read or write of the attacker may block.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest frame the attacker accepts from a victim (it only ever expects small ones).
const MAX_FRAME_READ: u64 = 16 << 20;

/// A 64-byte greeting: signature `FF 00*8 7F` (libzmq puts 1 in the last padding byte; any
/// value with bit 0 set says "ZMTP 2 or later"), version, mechanism, as-server, filler.
pub fn greeting(mechanism: &str, as_server: bool, major: u8, minor: u8) -> [u8; 64] {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[8] = 0x01;
    g[9] = 0x7F;
    g[10] = major;
    g[11] = minor;
    g[12..12 + mechanism.len()].copy_from_slice(mechanism.as_bytes());
    g[32] = as_server as u8;
    g
}

/// A NULL greeting of ZMTP 3.1 from a connecting peer.
pub fn null_greeting() -> [u8; 64] {
    greeting("NULL", false, 3, 1)
}

/// A 9-byte long-form header announcing `size` bytes, whatever is really sent after it.
pub fn long_header(flags: u8, size: u64) -> [u8; 9] {
    let mut h = [0u8; 9];
    h[0] = flags | LONG;
    h[1..].copy_from_slice(&size.to_be_bytes());
    h
}

/// A whole frame: short form up to 255 bytes, long form above.
pub fn frame(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 9);
    if body.len() <= 255 {
        out.push(flags);
        out.push(body.len() as u8);
    } else {
        out.extend_from_slice(&long_header(flags, body.len() as u64));
    }
    out.extend_from_slice(body);
    out
}

/// A command frame: name length, name, data.
pub fn command(name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(1 + name.len() + data.len());
    body.push(name.len() as u8);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    frame(COMMAND, &body)
}

/// Properties in wire form: name length (1 byte), name, value length (4 bytes BE), value.
pub fn properties<'a>(props: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in props {
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.extend_from_slice(&(value.len() as u32).to_be_bytes());
        out.extend_from_slice(value);
    }
    out
}

/// A READY command announcing `socket_type` and nothing else.
pub fn ready(socket_type: &str) -> Vec<u8> {
    command(
        "READY",
        &properties([(&b"Socket-Type"[..], socket_type.as_bytes())]),
    )
}

/// A ZMTP 3.1 SUBSCRIBE command.
pub fn subscribe(topic: &[u8]) -> Vec<u8> {
    command("SUBSCRIBE", topic)
}

/// A ZMTP 3.1 CANCEL command.
pub fn cancel(topic: &[u8]) -> Vec<u8> {
    command("CANCEL", topic)
}

/// A JOIN command (spec 48: a DISH joins a RADIO's group).
pub fn join(group: &[u8]) -> Vec<u8> {
    command("JOIN", group)
}

/// A LEAVE command.
pub fn leave(group: &[u8]) -> Vec<u8> {
    command("LEAVE", group)
}

/// A ZMTP 3.0 subscription: a message frame `\x01topic` (`\x00topic` cancels).
pub fn subscribe_zmtp30(topic: &[u8], on: bool) -> Vec<u8> {
    let mut body = Vec::with_capacity(topic.len() + 1);
    body.push(on as u8);
    body.extend_from_slice(topic);
    frame(0, &body)
}

/// A PING command: TTL (deciseconds, 2 bytes) and a context the PONG echoes.
pub fn ping(ttl: u16, context: &[u8]) -> Vec<u8> {
    let mut data = ttl.to_be_bytes().to_vec();
    data.extend_from_slice(context);
    command("PING", &data)
}

/// A frame read from the victim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// MORE / COMMAND (LONG cleared).
    pub flags: u8,
    /// The body.
    pub body: Vec<u8>,
}

impl Frame {
    /// The command name, when the frame is a command.
    pub fn command_name(&self) -> Option<&[u8]> {
        if self.flags & COMMAND == 0 {
            return None;
        }
        let n = *self.body.first()? as usize;
        self.body.get(1..1 + n)
    }
}

/// A tiny deterministic generator (xorshift64*) for garbage and topics: the same bytes every
/// run, so a failure can be replayed.
#[derive(Debug, Clone)]
pub struct Prng(u64);

impl Prng {
    /// A generator from a nonzero seed.
    pub fn new(seed: u64) -> Prng {
        Prng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Fills `out` with random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// One raw connection to (or from) the victim.
#[derive(Debug)]
pub struct RawPeer {
    /// The stream (blocking, with [`IO_TIMEOUT`] on reads and writes).
    pub stream: TcpStream,
    rx: Vec<u8>,
    /// True once we greeted as ZMTP 3.0, so subscriptions go as `\x01topic` messages.
    pub zmtp30: bool,
}

impl RawPeer {
    /// Connects to the victim.
    pub fn connect(addr: SocketAddr) -> io::Result<RawPeer> {
        RawPeer::wrap(TcpStream::connect_timeout(&addr, IO_TIMEOUT)?)
    }

    /// Wraps a stream (an accepted one, for a hostile server).
    pub fn wrap(stream: TcpStream) -> io::Result<RawPeer> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(RawPeer {
            stream,
            rx: Vec::new(),
            zmtp30: false,
        })
    }

    /// Writes all of `bytes`.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    fn fill(&mut self, want: usize) -> io::Result<()> {
        let mut tmp = [0u8; 16 * 1024];
        while self.rx.len() < want {
            match self.stream.read(&mut tmp)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => self.rx.extend_from_slice(&tmp[..n]),
            }
        }
        Ok(())
    }

    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        self.fill(n)?;
        Ok(self.rx.drain(..n).collect())
    }

    /// Reads the victim's 64-byte greeting.
    pub fn read_greeting(&mut self) -> io::Result<Vec<u8>> {
        let g = self.take(64)?;
        if g[0] != 0xFF || g[9] != 0x7F {
            return Err(io::Error::other(format!(
                "not a greeting: {:02x?}",
                &g[..12]
            )));
        }
        Ok(g)
    }

    /// Reads one frame.
    pub fn read_frame(&mut self) -> io::Result<Frame> {
        self.fill(2)?;
        let flags = self.rx[0];
        let size = if flags & LONG != 0 {
            self.fill(9)?;
            let mut s = [0u8; 8];
            s.copy_from_slice(&self.rx[1..9]);
            self.rx.drain(..9);
            u64::from_be_bytes(s)
        } else {
            let s = self.rx[1] as u64;
            self.rx.drain(..2);
            s
        };
        if size > MAX_FRAME_READ {
            return Err(io::Error::other(format!(
                "victim announced a {size}-byte frame"
            )));
        }
        let body = self.take(size as usize)?;
        Ok(Frame {
            flags: flags & (MORE | COMMAND),
            body,
        })
    }

    /// Reads frames until a command named `name` arrives.
    pub fn read_command(&mut self, name: &str) -> io::Result<Frame> {
        loop {
            let f = self.read_frame()?;
            if f.command_name() == Some(name.as_bytes()) {
                return Ok(f);
            }
        }
    }

    /// The NULL handshake as a connecting peer of `socket_type`: our greeting (ZMTP 3.1, or
    /// 3.0 when `zmtp30`), the victim's greeting, our READY with `extra` properties, the
    /// victim's READY.
    pub fn handshake(
        &mut self,
        socket_type: &str,
        extra: &[(&[u8], &[u8])],
        zmtp30: bool,
    ) -> io::Result<()> {
        self.zmtp30 = zmtp30;
        self.send(&greeting("NULL", false, 3, if zmtp30 { 0 } else { 1 }))?;
        self.read_greeting()?;
        let mut props = vec![(&b"Socket-Type"[..], socket_type.as_bytes())];
        props.extend_from_slice(extra);
        self.send(&command("READY", &properties(props)))?;
        self.read_command("READY")?;
        Ok(())
    }

    /// Connects and completes a NULL handshake as `socket_type` (ZMTP 3.1).
    pub fn connect_ready(addr: SocketAddr, socket_type: &str) -> io::Result<RawPeer> {
        let mut p = RawPeer::connect(addr)?;
        p.handshake(socket_type, &[], false)?;
        Ok(p)
    }

    /// Subscribes in the form our greeting announced (3.1 command or 3.0 message).
    pub fn subscribe(&mut self, topic: &[u8]) -> io::Result<()> {
        let f = if self.zmtp30 {
            subscribe_zmtp30(topic, true)
        } else {
            subscribe(topic)
        };
        self.send(&f)
    }

    /// Cancels in the form our greeting announced.
    pub fn cancel(&mut self, topic: &[u8]) -> io::Result<()> {
        let f = if self.zmtp30 {
            subscribe_zmtp30(topic, false)
        } else {
            cancel(topic)
        };
        self.send(&f)
    }

    /// Subscribes to `probe` and reads until a message starting with it arrives: the victim
    /// (a publisher publishing `probe` meanwhile) has then processed every command we sent
    /// before, because a connection's commands are handled in order.
    pub fn probe(&mut self, probe: &[u8], within: Duration) -> io::Result<()> {
        self.subscribe(probe)?;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let f = self.read_frame()?;
            if f.flags & COMMAND == 0 && f.body.starts_with(probe) {
                return Ok(());
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the probe never came back",
        ))
    }

    /// As [`RawPeer::probe`], for a RADIO: joins `group` and reads until a message of that
    /// group (its first frame is the group) arrives.
    pub fn probe_group(&mut self, group: &[u8], within: Duration) -> io::Result<()> {
        self.send(&join(group))?;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let f = self.read_frame()?;
            if f.flags & COMMAND == 0 && f.body == group {
                return Ok(());
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the group's message never came",
        ))
    }

    /// Reads and discards until the victim closes the connection; false when it is still open
    /// after `within`.
    pub fn closed_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut tmp = [0u8; 16 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut tmp) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Reset or aborted: closed, if not politely.
                Err(_) => return true,
            }
        }
    }
}
