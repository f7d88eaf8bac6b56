//! Frame headers and the incremental frame decoder (spec 23, "Framing").
//!
//! A frame is a flags byte, a size (one byte, or eight big-endian bytes when the LONG flag is
//! set), and a body. Flags: bit 0 MORE, bit 1 LONG, bit 2 COMMAND; the other bits are reserved
//! and ignored on receipt, as libzmq does.
//!
//! Decoding is a pure function of the buffered bytes: a frame is taken off the buffer only when
//! it is complete, so any split of the byte stream yields the same frames. Nothing is reserved
//! from a frame's announced size: memory grows only with bytes actually received, and an
//! announced size above the maximum is refused as soon as the header is in.

use bytes::{Buf, BufMut, BytesMut};

use crate::error::{LimitError, ProtocolError, SessionError};
use crate::message::Part;

/// MORE flag: another part of the same message follows.
pub const FLAG_MORE: u8 = 0x01;
/// LONG flag: the size field is 8 bytes.
pub const FLAG_LONG: u8 = 0x02;
/// COMMAND flag: the frame is a command, not a message part.
pub const FLAG_COMMAND: u8 = 0x04;
/// The flags a decoded frame keeps (LONG only says how its size was written). A sum of the
/// two disjoint bits, so no operator here can be swapped for an equivalent one unnoticed.
const KEPT_FLAGS: u8 = FLAG_MORE + FLAG_COMMAND;

/// Largest header: flags plus an 8-byte size.
pub const MAX_HEADER_LEN: usize = 9;

/// A decoded frame: its flags (MORE/COMMAND only) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// [`FLAG_MORE`] and/or [`FLAG_COMMAND`].
    pub flags: u8,
    /// The body.
    pub body: Part,
}

impl Frame {
    /// A message part frame.
    pub fn message(body: Part, more: bool) -> Self {
        Frame {
            flags: if more { FLAG_MORE } else { 0 },
            body,
        }
    }
    /// A command frame.
    pub fn command(body: Part) -> Self {
        Frame {
            flags: FLAG_COMMAND,
            body,
        }
    }
    /// True when the MORE flag is set.
    pub fn more(&self) -> bool {
        self.flags & FLAG_MORE != 0
    }
    /// True when this is a command.
    pub fn is_command(&self) -> bool {
        self.flags & FLAG_COMMAND != 0
    }
}

/// Writes a frame header for a body of `len` bytes (short form up to 255 bytes).
pub fn encode_header(out: &mut BytesMut, more: bool, command: bool, len: usize) {
    let mut flags = 0u8;
    if more {
        flags |= FLAG_MORE;
    }
    if command {
        flags |= FLAG_COMMAND;
    }
    if len <= 255 {
        out.put_u8(flags);
        out.put_u8(len as u8);
    } else {
        out.put_u8(flags | FLAG_LONG);
        out.put_u64(len as u64);
    }
}

/// Length of the header for a body of `len` bytes.
pub fn header_len(len: usize) -> usize {
    if len <= 255 {
        2
    } else {
        MAX_HEADER_LEN
    }
}

/// Parses the header at the front of `buf`, if it is complete: `(flags, header_len, body_len)`.
fn peek_header(buf: &[u8]) -> Option<(u8, usize, u64)> {
    let flags = *buf.first()?;
    if flags & FLAG_LONG != 0 {
        if buf.len() < MAX_HEADER_LEN {
            return None;
        }
        let mut size = [0u8; 8];
        size.copy_from_slice(&buf[1..9]);
        Some((flags, MAX_HEADER_LEN, u64::from_be_bytes(size)))
    } else {
        Some((flags, 2, *buf.get(1)? as u64))
    }
}

/// Decodes frames from a read buffer, enforcing the maximum frame size.
#[derive(Debug, Clone, Default)]
pub struct FrameDecoder {
    max_frame: Option<u64>,
}

impl FrameDecoder {
    /// A decoder that refuses frames larger than `max_frame` bytes (None: no limit).
    pub fn new(max_frame: Option<u64>) -> Self {
        FrameDecoder { max_frame }
    }

    /// Takes the next complete frame off the front of `buf`. `Ok(None)` means more bytes are
    /// needed ([`FrameDecoder::bytes_wanted`] says how many at least).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, SessionError> {
        let Some((flags, size)) = self.take_header(buf)? else {
            return Ok(None);
        };
        let body = Part::take_from(buf, size);
        Ok(Some(Frame { flags, body }))
    }

    /// Takes the next complete frame off the front of `buf` as the read buffer's own bytes
    /// (a range split off it, which nothing else can write), for a mechanism that opens it
    /// where it lies or copies it once to where it will live; under the same limits as
    /// [`FrameDecoder::decode`], which would first copy a short body itself.
    pub fn decode_owned(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<(u8, BytesMut)>, SessionError> {
        let Some((flags, size)) = self.take_header(buf)? else {
            return Ok(None);
        };
        Ok(Some((flags, buf.split_to(size))))
    }

    /// When `buf` holds a whole frame within the limits: takes its header off and gives its
    /// flags (MORE and COMMAND only) and body length; the body is then at the front of `buf`.
    fn take_header(&self, buf: &mut BytesMut) -> Result<Option<(u8, usize)>, SessionError> {
        let Some((flags, hlen, size)) = peek_header(buf) else {
            return Ok(None);
        };
        self.check_size(flags, size)?;
        // `check_size` bounds `size` to what fits in memory, so the cast cannot truncate on
        // 64-bit targets; `try_from` keeps 32-bit targets honest.
        let size = usize::try_from(size).map_err(|_| LimitError::MessageTooLarge {
            size,
            max: usize::MAX as u64,
        })?;
        if buf.len() - hlen < size {
            return Ok(None);
        }
        buf.advance(hlen);
        Ok(Some((flags & KEPT_FLAGS, size)))
    }

    fn check_size(&self, flags: u8, size: u64) -> Result<(), SessionError> {
        if flags & FLAG_COMMAND != 0 && flags & FLAG_MORE != 0 {
            return Err(ProtocolError::CommandWithMore.into());
        }
        // Commands are bounded by the maximum too except the handful libzmq always accepts;
        // a command carries at most a subscription topic or a property list, so the same
        // limit applies.
        if let Some(max) = self.max_frame {
            if size > max {
                return Err(LimitError::MessageTooLarge { size, max }.into());
            }
        }
        if size > isize::MAX as u64 {
            return Err(LimitError::MessageTooLarge {
                size,
                max: isize::MAX as u64,
            }
            .into());
        }
        Ok(())
    }

    /// At least how many more bytes the next frame needs (1 when unknown), for sizing reads.
    pub fn bytes_wanted(&self, buf: &[u8]) -> usize {
        match peek_header(buf) {
            None => {
                if buf.is_empty() {
                    2
                } else if buf[0] & FLAG_LONG != 0 {
                    MAX_HEADER_LEN - buf.len()
                } else {
                    1
                }
            }
            Some((_, hlen, size)) => {
                let total = (hlen as u64).saturating_add(size);
                total
                    .saturating_sub(buf.len() as u64)
                    .min(usize::MAX as u64) as usize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decode_owned` keeps MORE and COMMAND and drops LONG, as `decode` does; gives nothing (and leaves the buffer) until the frame is whole; and
    /// refuses what `decode` refuses.
    #[test]
    fn owned_frames_keep_the_flags_and_limits_of_decoded_ones() {
        for flags in [0u8, FLAG_MORE, FLAG_COMMAND] {
            let mut wire = BytesMut::new();
            let body = vec![9u8; 300];
            // 300 bytes: a long header, so LONG is set on the wire.
            encode_header(
                &mut wire,
                flags & FLAG_MORE != 0,
                flags & FLAG_COMMAND != 0,
                300,
            );
            assert_ne!(wire[0] & FLAG_LONG, 0);
            wire.extend_from_slice(&body);
            let mut copy = wire.clone();
            let whole = wire.len();
            let mut d = FrameDecoder::new(None);
            let mut short = wire.split_to(whole - 1);
            assert!(d.decode_owned(&mut short).unwrap().is_none());
            assert_eq!(
                short.len(),
                whole - 1,
                "an incomplete frame is left where it was"
            );
            short.unsplit(wire);
            let (got, owned) = d.decode_owned(&mut short).unwrap().unwrap();
            let decoded = d.decode(&mut copy).unwrap().unwrap();
            assert_eq!(got, decoded.flags, "flags {flags:#x}");
            assert_eq!(got, flags, "flags {flags:#x}");
            assert_eq!(&owned[..], &body[..]);
            assert!(short.is_empty());
        }
        let mut wire = BytesMut::new();
        encode_header(&mut wire, false, false, 1000);
        wire.extend_from_slice(&[0u8; 1000]);
        assert!(FrameDecoder::new(Some(999))
            .decode_owned(&mut wire)
            .is_err());
    }

    #[test]
    fn short_and_long_headers() {
        let mut out = BytesMut::new();
        encode_header(&mut out, true, false, 255);
        assert_eq!(&out[..], &[FLAG_MORE, 255]);
        out.clear();
        encode_header(&mut out, false, true, 256);
        assert_eq!(
            &out[..],
            &[FLAG_COMMAND | FLAG_LONG, 0, 0, 0, 0, 0, 0, 1, 0]
        );
    }

    #[test]
    fn huge_announced_size_reserves_nothing() {
        let mut d = FrameDecoder::new(None);
        let mut buf =
            BytesMut::from(&[FLAG_LONG, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..]);
        assert!(d.decode(&mut buf).unwrap().is_none());
        assert_eq!(buf.capacity(), 9);
        let mut buf = BytesMut::from(&[FLAG_LONG, 0xff, 0, 0, 0, 0, 0, 0, 0][..]);
        assert!(d.decode(&mut buf).is_err());
        let mut limited = FrameDecoder::new(Some(10));
        let mut buf = BytesMut::from(&[0u8, 11][..]);
        assert!(matches!(
            limited.decode(&mut buf),
            Err(SessionError::Limit(LimitError::MessageTooLarge {
                size: 11,
                max: 10
            }))
        ));
    }

    #[test]
    fn bytes_wanted_counts_what_the_next_frame_still_needs() {
        let d = FrameDecoder::new(None);
        assert_eq!(d.bytes_wanted(&[]), 2, "nothing yet: a short header");
        // One byte of a header: a short one needs its size byte, a long one eight more.
        assert_eq!(d.bytes_wanted(&[FLAG_MORE]), 1);
        assert_eq!(d.bytes_wanted(&[FLAG_COMMAND]), 1);
        assert_eq!(d.bytes_wanted(&[FLAG_LONG]), 8);
        assert_eq!(d.bytes_wanted(&[FLAG_LONG | FLAG_MORE, 0, 0]), 6);
        // A whole header: the rest of the body, and 0 once the frame is complete.
        assert_eq!(d.bytes_wanted(&[0, 5, b'a']), 4);
        assert_eq!(d.bytes_wanted(&[0, 0]), 0);
        assert_eq!(d.bytes_wanted(&[FLAG_LONG, 0, 0, 0, 0, 0, 0, 1, 0]), 256);
        // A claim past what memory can hold saturates instead of wrapping.
        let huge = [FLAG_LONG, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(d.bytes_wanted(&huge), usize::MAX - 9);
    }

    #[test]
    fn long_form_of_a_short_frame_is_accepted() {
        let mut d = FrameDecoder::new(None);
        let mut buf = BytesMut::from(&[FLAG_LONG, 0, 0, 0, 0, 0, 0, 0, 2, b'h', b'i'][..]);
        let f = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&f.body[..], b"hi");
        assert!(buf.is_empty());
    }
}
