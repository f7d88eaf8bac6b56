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
    encode_in_blocks(part, dict, BLOCK_SIZE as usize)
}

/// [`encode`] with blocks of `block_size` bytes: a part larger than one block goes as LZ4M
/// (see [`encode_multi`]).
fn encode_in_blocks(part: &[u8], dict: Option<&Bytes>, block_size: usize) -> Option<Bytes> {
    let min = if dict.is_some() {
        MIN_SIZE_DICT
    } else {
        MIN_SIZE
    };
    if part.len() < min {
        return None;
    }
    if part.len() > block_size {
        return Some(encode_multi(part, dict, block_size));
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

/// An `LZ4M` part in blocks of `block_size` (the format's is [`BLOCK_SIZE`]; tests walk
/// several blocks with small ones).
fn encode_multi(part: &[u8], dict: Option<&Bytes>, block_size: usize) -> Bytes {
    let mut out = Vec::with_capacity(HEADER + part.len() / 2);
    out.extend_from_slice(&MULTI_SENTINEL);
    out.extend_from_slice(&(part.len() as u64).to_le_bytes());
    let mut block = Vec::new();
    for chunk in part.chunks(block_size) {
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
    decode_in_blocks(wire, dict, left, BLOCK_SIZE)
}

/// [`decode`] with blocks of `block_size` bytes (see [`encode_multi`]).
fn decode_in_blocks(
    wire: &[u8],
    dict: Option<&[u8]>,
    left: u64,
    block_size: u64,
) -> Result<Vec<u8>, CompressionError> {
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
    if sentinel == SINGLE_SENTINEL && claimed > block_size {
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
        let size = (claimed - done).min(block_size as usize);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"abcdefgh"[i % 8] ^ (i / 97) as u8)
            .collect()
    }

    /// The LZ4M walk over several blocks, with 1 KiB blocks standing in for 1 GiB ones: a
    /// part of 2.5 blocks round-trips, with and without a dictionary, and each block is
    /// decoded into its own stretch of the output.
    #[test]
    fn multi_block_parts_round_trip() {
        let part = text(2560);
        let dict = Bytes::from(text(300));
        for d in [None, Some(&dict)] {
            let wire = encode_multi(&part, d, 1024);
            assert_eq!(&wire[..4], b"LZ4M");
            let back = decode_in_blocks(&wire, d.map(|d| &d[..]), u64::MAX, 1024).unwrap();
            assert_eq!(back, part);
        }
    }

    /// A part of one block goes as LZ4B, one byte more as LZ4M.
    #[test]
    fn parts_over_one_block_go_in_several() {
        let one = encode_in_blocks(&text(1024), None, 1024).unwrap();
        assert_eq!(&one[..4], b"LZ4B");
        let more = encode_in_blocks(&text(1025), None, 1024).unwrap();
        assert_eq!(&more[..4], b"LZ4M");
        assert_eq!(
            decode_in_blocks(&more, None, u64::MAX, 1024).unwrap(),
            text(1025)
        );
    }

    /// A block length past the end of the part is refused, not followed.
    #[test]
    fn a_block_longer_than_the_part_is_refused() {
        let part = text(2560);
        let mut wire = encode_multi(&part, None, 1024).to_vec();
        wire[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let r = decode_in_blocks(&wire, None, u64::MAX, 1024);
        assert!(matches!(r, Err(CompressionError::Malformed(_))), "{r:?}");
    }

    /// A single block may not claim more than one block's size.
    #[test]
    fn a_single_block_claims_at_most_the_block_size() {
        let wire = encode(&text(2048), None).unwrap();
        assert!(decode_in_blocks(&wire, None, u64::MAX, 2048).is_ok());
        let r = decode_in_blocks(&wire, None, u64::MAX, 2047);
        assert!(
            matches!(r, Err(CompressionError::BlockTooLarge(2048))),
            "{r:?}"
        );
    }

    /// A header and nothing else is a part of length zero, not a short part.
    #[test]
    fn a_bare_header_is_not_short() {
        let mut wire = b"LZ4B".to_vec();
        wire.extend_from_slice(&0u64.to_le_bytes());
        let r = decode(&wire, None, u64::MAX);
        assert!(
            !matches!(r, Err(CompressionError::ShortPart { .. })),
            "{r:?}"
        );
        let r = decode(&wire[..11], None, u64::MAX);
        assert!(
            matches!(r, Err(CompressionError::ShortPart { len: 11, need: 12 })),
            "{r:?}"
        );
    }
}
