//! ZMTP commands (specs 23 and 37): READY, ERROR, SUBSCRIBE, CANCEL, PING, PONG, JOIN, LEAVE,
//! and the mechanism commands (HELLO, WELCOME, INITIATE, MESSAGE) kept as raw bodies for the
//! mechanism that owns them.
//!
//! A command body is a one-byte name length, the name, and command-specific data.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;
use crate::wire::metadata::Metadata;

/// The longest PING context a peer may send, and what a PONG echoes at most (libzmq truncates
/// longer contexts to this length).
pub const MAX_PING_CONTEXT: usize = 16;

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// Handshake end, with the sender's properties.
    Ready(Metadata),
    /// A fatal error, with a reason of at most 255 bytes.
    Error {
        /// The reason text.
        reason: Bytes,
    },
    /// Subscribe to a topic prefix (ZMTP 3.1).
    Subscribe(Bytes),
    /// Cancel a subscription (ZMTP 3.1).
    Cancel(Bytes),
    /// Heartbeat request: time-to-live in deciseconds, and a context to echo.
    Ping {
        /// TTL in tenths of a second (0: none).
        ttl_deciseconds: u16,
        /// Context the PONG echoes (only the first 16 bytes are echoed).
        context: Bytes,
    },
    /// Heartbeat reply.
    Pong {
        /// The echoed context.
        context: Bytes,
    },
    /// RADIO/DISH: join a group.
    Join(Bytes),
    /// RADIO/DISH: leave a group.
    Leave(Bytes),
    /// Any other command (mechanism commands, or ones we do not know), name and data.
    Other {
        /// Command name.
        name: Bytes,
        /// Command data.
        data: Bytes,
    },
}

impl Command {
    /// Splits a command body into name and data.
    pub fn split(body: &Bytes) -> Result<(Bytes, Bytes), ProtocolError> {
        let Some(&nlen) = body.first() else {
            return Err(ProtocolError::MalformedCommandFrame);
        };
        let nlen = nlen as usize;
        if nlen == 0 || body.len() < 1 + nlen {
            return Err(ProtocolError::MalformedCommandFrame);
        }
        Ok((body.slice(1..1 + nlen), body.slice(1 + nlen..)))
    }

    /// Parses a command body.
    pub fn decode(body: &Bytes) -> Result<Command, ProtocolError> {
        let (name, data) = Command::split(body)?;
        Ok(match &name[..] {
            b"READY" => Command::Ready(Metadata::decode(&data)?),
            b"ERROR" => {
                let Some(&rlen) = data.first() else {
                    return Err(ProtocolError::MalformedCommand { name: "ERROR" });
                };
                if data.len() != 1 + rlen as usize {
                    return Err(ProtocolError::MalformedCommand { name: "ERROR" });
                }
                Command::Error {
                    reason: data.slice(1..),
                }
            }
            b"SUBSCRIBE" => Command::Subscribe(data),
            b"CANCEL" => Command::Cancel(data),
            b"PING" => {
                if data.len() < 2 {
                    return Err(ProtocolError::MalformedCommand { name: "PING" });
                }
                Command::Ping {
                    ttl_deciseconds: u16::from_be_bytes([data[0], data[1]]),
                    context: data.slice(2..),
                }
            }
            b"PONG" => Command::Pong { context: data },
            b"JOIN" => Command::Join(data),
            b"LEAVE" => Command::Leave(data),
            _ => Command::Other { name, data },
        })
    }

    /// The command's name.
    pub fn name(&self) -> &[u8] {
        match self {
            Command::Ready(_) => b"READY",
            Command::Error { .. } => b"ERROR",
            Command::Subscribe(_) => b"SUBSCRIBE",
            Command::Cancel(_) => b"CANCEL",
            Command::Ping { .. } => b"PING",
            Command::Pong { .. } => b"PONG",
            Command::Join(_) => b"JOIN",
            Command::Leave(_) => b"LEAVE",
            Command::Other { name, .. } => name,
        }
    }

    /// Length of the encoded body.
    pub fn encoded_len(&self) -> usize {
        let data = match self {
            Command::Ready(m) => m.encoded_len(),
            Command::Error { reason } => 1 + reason.len().min(255),
            Command::Subscribe(t) | Command::Cancel(t) | Command::Join(t) | Command::Leave(t) => {
                t.len()
            }
            Command::Ping { context, .. } => 2 + context.len(),
            Command::Pong { context } => context.len(),
            Command::Other { data, .. } => data.len(),
        };
        1 + self.name().len() + data
    }

    /// Writes the command body (without the frame header). An ERROR reason is cut to 255
    /// bytes, the most its one-byte length can say.
    pub fn encode(&self, out: &mut BytesMut) {
        out.reserve(self.encoded_len());
        let name = self.name();
        out.put_u8(name.len() as u8);
        out.put_slice(name);
        match self {
            Command::Ready(m) => m.encode(out),
            Command::Error { reason } => {
                let r = &reason[..reason.len().min(255)];
                out.put_u8(r.len() as u8);
                out.put_slice(r);
            }
            Command::Subscribe(t) | Command::Cancel(t) | Command::Join(t) | Command::Leave(t) => {
                out.put_slice(t)
            }
            Command::Ping {
                ttl_deciseconds,
                context,
            } => {
                out.put_u16(*ttl_deciseconds);
                out.put_slice(context);
            }
            Command::Pong { context } => out.put_slice(context),
            Command::Other { data, .. } => out.put_slice(data),
        }
    }

    /// The encoded body as `Bytes`.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.encoded_len());
        self.encode(&mut out);
        out.freeze()
    }
}

/// A printable form of a command name, for errors.
pub fn printable_name(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribe_bytes() {
        let c = Command::Subscribe(Bytes::from_static(b"A"));
        assert_eq!(&c.to_bytes()[..], b"\x09SUBSCRIBEA");
        assert_eq!(Command::decode(&c.to_bytes()).unwrap(), c);
    }

    #[test]
    fn every_traffic_command_reads_back_as_itself() {
        let b = Bytes::from_static;
        for (c, wire) in [
            (Command::Cancel(b(b"t")), &b"\x06CANCELt"[..]),
            (Command::Pong { context: b(b"c") }, b"\x04PONGc"),
            (Command::Join(b(b"g")), b"\x04JOINg"),
            (Command::Leave(b(b"g")), b"\x05LEAVEg"),
        ] {
            assert_eq!(&c.to_bytes()[..], wire);
            assert_eq!(Command::decode(&c.to_bytes()).unwrap(), c);
        }
    }

    #[test]
    fn printable_names_keep_what_is_text() {
        assert_eq!(printable_name(b"HELLO"), "HELLO");
        assert_eq!(printable_name(b"A\xffB"), "A\u{fffd}B");
    }

    #[test]
    fn ping_and_error() {
        let p = Command::Ping {
            ttl_deciseconds: 0x0102,
            context: Bytes::from_static(b"ctx"),
        };
        assert_eq!(&p.to_bytes()[..], b"\x04PING\x01\x02ctx");
        assert_eq!(Command::decode(&p.to_bytes()).unwrap(), p);
        assert!(Command::decode(&Bytes::from_static(b"\x04PING\x01")).is_err());
        let e = Command::Error {
            reason: Bytes::from_static(b"no"),
        };
        assert_eq!(&e.to_bytes()[..], b"\x05ERROR\x02no");
        assert!(Command::decode(&Bytes::from_static(b"\x05ERROR\x03no")).is_err());
    }

    #[test]
    fn malformed_names() {
        assert!(Command::decode(&Bytes::new()).is_err());
        assert!(Command::decode(&Bytes::from_static(b"\x00")).is_err());
        assert!(Command::decode(&Bytes::from_static(b"\x05READ")).is_err());
        assert!(matches!(
            Command::decode(&Bytes::from_static(b"\x03FOOxyz")).unwrap(),
            Command::Other { .. }
        ));
    }
}
