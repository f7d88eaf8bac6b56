//! The `lz4+tcp://` part envelope.
//!
//! ```text
//! 00 00 00 00 | part                                        as it is
//! "LZ4B" | size u64 LE | LZ4 block                          one block (size <= 1 GiB)
//! "LZ4M" | size u64 LE | (len u32 LE | LZ4 block)...        1 GiB blocks, for larger parts
//! "LZ4D" | dictionary (1..=8192 bytes)                      once per direction, alone
//! ```
//!
//! Blocks are raw LZ4 block format (no frame, no checksum); with a dictionary each block is
//! compressed against it as an external dictionary, independently of the others.

use bytes::Bytes;

use super::check_claim;
use crate::error::CompressionError;

/// `LZ4B`: one compressed block.
pub const SINGLE_SENTINEL: [u8; 4] = *b"LZ4B";
/// `LZ4M`: several 1 GiB blocks.
pub const MULTI_SENTINEL: [u8; 4] = *b"LZ4M";
/// `LZ4D`: the sender's dictionary.
pub const DICT_SENTINEL: [u8; 4] = *b"LZ4D";
/// Size of every block of an LZ4M part but the last.
pub const BLOCK_SIZE: u64 = 1 << 30;
/// Sentinel and decompressed size.
const HEADER: usize = 12;
/// The most an LZ4 block expands: one byte of a match length's extension says 255 more bytes
/// (anything beyond is a lie, refused before a buffer is sized by it).
const MAX_RATIO: u64 = 256;

/// Parts smaller than this go as they are (the drafts' recommendation; compressing them
/// rarely pays for the envelope).
pub const MIN_SIZE: usize = 512;
/// The same with a dictionary, which makes small parts worth compressing.
pub const MIN_SIZE_DICT: usize = 128;

/// The envelope for `part`, or None when it is to go as it is (too small, or compression
/// would not save anything).
pub fn encode(part: &[u8], dict: Option<&Bytes>) -> Option<Bytes> {
    let min = if dict.is_some() {
        MIN_SIZE_DICT
    } else {
        MIN_SIZE
    };
    if part.len() < min {
        return None;
    }
    if part.len() as u64 > BLOCK_SIZE {
        return Some(encode_multi(part, dict));
    }
    let mut out = vec![0u8; HEADER + lz4_flex::block::get_maximum_output_size(part.len())];
    let n = compress_block(part, &mut out[HEADER..], dict)?;
    // Not worth it unless it saves at least one byte over the 4-byte plain envelope.
    if n + HEADER >= part.len() + 4 {
        return None;
    }
    out[..4].copy_from_slice(&SINGLE_SENTINEL);
    out[4..HEADER].copy_from_slice(&(part.len() as u64).to_le_bytes());
    out.truncate(HEADER + n);
    Some(Bytes::from(out))
}

fn compress_block(input: &[u8], out: &mut [u8], dict: Option<&Bytes>) -> Option<usize> {
    match dict {
        Some(d) => lz4_flex::block::compress_into_with_dict(input, out, d).ok(),
        None => lz4_flex::block::compress_into(input, out).ok(),
    }
}

fn encode_multi(part: &[u8], dict: Option<&Bytes>) -> Bytes {
    let mut out = Vec::with_capacity(HEADER + part.len() / 2);
    out.extend_from_slice(&MULTI_SENTINEL);
    out.extend_from_slice(&(part.len() as u64).to_le_bytes());
    let mut block = Vec::new();
    for chunk in part.chunks(BLOCK_SIZE as usize) {
        block.resize(lz4_flex::block::get_maximum_output_size(chunk.len()), 0);
        let n = compress_block(chunk, &mut block, dict).expect("room for the worst case");
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&block[..n]);
    }
    Bytes::from(out)
}

/// Decodes an `LZ4B` or `LZ4M` part (`wire` starts with its sentinel); `left` is what remains
/// of the message's MAXMSGSIZE budget.
pub fn decode(wire: &[u8], dict: Option<&[u8]>, left: u64) -> Result<Vec<u8>, CompressionError> {
    let sentinel: [u8; 4] = wire[..4].try_into().expect("caller checked");
    if sentinel != SINGLE_SENTINEL && sentinel != MULTI_SENTINEL {
        return Err(CompressionError::UnknownSentinel(sentinel));
    }
    if wire.len() < HEADER {
        return Err(CompressionError::ShortPart {
            len: wire.len(),
            need: HEADER,
        });
    }
    let claimed = u64::from_le_bytes(wire[4..HEADER].try_into().expect("8 bytes"));
    let body = &wire[HEADER..];
    if sentinel == SINGLE_SENTINEL && claimed > BLOCK_SIZE {
        return Err(CompressionError::BlockTooLarge(claimed));
    }
    check_claim(claimed, left, body.len(), MAX_RATIO)?;
    let claimed = usize::try_from(claimed).map_err(|_| CompressionError::OverBudget {
        claimed,
        left: usize::MAX as u64,
    })?;
    let mut out = vec![0u8; claimed];
    if sentinel == SINGLE_SENTINEL {
        decode_block(body, &mut out, dict)?;
        return Ok(out);
    }
    let mut rest = body;
    let mut done = 0usize;
    while done < claimed {
        let Some((len, after)) = rest.split_first_chunk::<4>() else {
            return Err(CompressionError::Malformed(
                "LZ4M block length cut short".into(),
            ));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > after.len() {
            return Err(CompressionError::Malformed(
                "LZ4M block runs past the part".into(),
            ));
        }
        let (block, after) = after.split_at(len);
        let size = (claimed - done).min(BLOCK_SIZE as usize);
        decode_block(block, &mut out[done..done + size], dict)?;
        done += size;
        rest = after;
    }
    if !rest.is_empty() {
        return Err(CompressionError::Malformed(
            "bytes after the last LZ4M block".into(),
        ));
    }
    Ok(out)
}

/// Decodes one block that must fill `out` exactly.
fn decode_block(block: &[u8], out: &mut [u8], dict: Option<&[u8]>) -> Result<(), CompressionError> {
    let n = match dict {
        Some(d) => lz4_flex::block::decompress_into_with_dict(block, out, d),
        None => lz4_flex::block::decompress_into(block, out),
    }
    .map_err(|e| CompressionError::Malformed(format!("LZ4 block: {e}")))?;
    if n != out.len() {
        return Err(CompressionError::SizeMismatch {
            declared: out.len() as u64,
            got: n as u64,
        });
    }
    Ok(())
}
