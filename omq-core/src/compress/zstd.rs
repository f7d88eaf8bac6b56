//! The `zstd+tcp://` part envelope.
//!
//! ```text
//! 00 00 00 00 | part                  as it is
//! 28 B5 2F FD ...                     a whole Zstandard frame, Frame_Content_Size required
//! 37 A4 30 EC ...                     the sender's ZDICT dictionary (<= 8 KiB), alone
//! ```
//!
//! The frame's own magic and the dictionary's own magic are the sentinels: nothing is added
//! to either.

use bytes::Bytes;

use super::check_claim;
use crate::error::CompressionError;

/// The Zstandard frame magic, little-endian on the wire.
pub const FRAME_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// The ZDICT dictionary magic.
pub const DICT_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];
/// The most a Zstandard frame expands: an RLE block of four bytes says 128 KiB.
const MAX_RATIO: u64 = 32 * 1024;

/// Parts smaller than this go as they are without a dictionary.
pub const MIN_SIZE: usize = 512;
/// With a dictionary even small parts compress well.
pub const MIN_SIZE_DICT: usize = 64;

/// Parses a ZDICT blob.
pub fn parse_dict(bytes: &[u8]) -> Result<zrip::Dictionary, zrip::DecompressError> {
    if bytes.get(..4) != Some(&DICT_MAGIC[..]) {
        return Err(zrip::DecompressError::InvalidDictionary);
    }
    zrip::Dictionary::from_bytes(bytes)
}

/// The frame for `part`, or None when it is to go as it is.
pub fn encode(part: &[u8], level: i32, dict: Option<&zrip::Dictionary>) -> Option<Bytes> {
    let min = if dict.is_some() {
        MIN_SIZE_DICT
    } else {
        MIN_SIZE
    };
    if part.len() < min {
        return None;
    }
    let frame = match dict {
        Some(d) => zrip::compress_with_dict(part, level, d),
        None => zrip::compress(part, level),
    }
    .ok()?;
    // Worth it only if it beats the plain envelope (the drafts' rule).
    if frame.len() + 4 >= part.len() {
        return None;
    }
    Some(Bytes::from(frame))
}

/// Decodes a part that starts with anything but the plain or dictionary sentinel; `left` is
/// what remains of the message's MAXMSGSIZE budget.
pub fn decode(
    wire: &[u8],
    dict: Option<&zrip::Dictionary>,
    left: u64,
) -> Result<Vec<u8>, CompressionError> {
    let sentinel: [u8; 4] = wire[..4].try_into().expect("caller checked");
    if sentinel != FRAME_MAGIC {
        return Err(CompressionError::UnknownSentinel(sentinel));
    }
    let header = zrip::frame::header::parse_frame_header(wire)
        .map_err(|e| CompressionError::Malformed(format!("zstd frame header: {e}")))?;
    let Some(claimed) = header.frame_content_size else {
        return Err(CompressionError::MissingContentSize);
    };
    check_claim(claimed, left, wire.len(), MAX_RATIO)?;
    let limit = usize::try_from(claimed).map_err(|_| CompressionError::OverBudget {
        claimed,
        left: usize::MAX as u64,
    })?;
    let out = match dict {
        Some(d) => zrip::decompress_with_dict_and_limit(wire, d, limit),
        None => zrip::decompress_with_limit(wire, limit),
    }
    .map_err(|e| CompressionError::Malformed(format!("zstd: {e}")))?;
    if out.len() as u64 != claimed {
        return Err(CompressionError::SizeMismatch {
            declared: claimed,
            got: out.len() as u64,
        });
    }
    Ok(out)
}
