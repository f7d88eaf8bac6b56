//! `FrameDecoder` over arbitrary bytes cut at arbitrary points.
//!
//! Input: a control byte (bit 7: a maximum frame size follows as 2 bytes; bits 0-3: how many
//! cut points follow, 2 bytes each), then the byte stream.
//!
//! Invariants: no panic; the same frames and the same outcome (error, or leftover bytes)
//! whatever the cuts, and byte by byte; whenever `decode` says "need more", `bytes_wanted`
//! is at least 1, at most what the header plus its announced body still lack, and a true lower
//! bound (that many bytes less one never complete a frame); memory stays within a small
//! multiple of the input.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use omq_core::error::SessionError;
use omq_core::wire::frame::{Frame, FrameDecoder, FLAG_LONG, MAX_HEADER_LEN};
use omq_fuzz::reader::Reader;

#[derive(Debug, PartialEq)]
enum End {
    /// Bytes left over that are not a whole frame.
    Leftover(Vec<u8>),
    /// The decoder refused the stream after this many bytes.
    Error(SessionError),
}

/// The header at the front of `buf`, if complete: (header length, announced body length).
fn header(buf: &[u8]) -> Option<(usize, u64)> {
    let flags = *buf.first()?;
    if flags & FLAG_LONG != 0 {
        let size = buf.get(1..MAX_HEADER_LEN)?;
        Some((
            MAX_HEADER_LEN,
            u64::from_be_bytes(size.try_into().expect("8 bytes")),
        ))
    } else {
        Some((2, u64::from(*buf.get(1)?)))
    }
}

fn check_wanted(dec: &FrameDecoder, buf: &BytesMut, following: &[u8]) {
    let w = dec.bytes_wanted(buf);
    assert!(w >= 1, "bytes_wanted is 0 with no complete frame buffered");
    match header(buf) {
        Some((hlen, size)) => {
            let missing = (hlen as u64 + size).saturating_sub(buf.len() as u64);
            // Exactly what the frame still lacks: the decoder's count is the truth a driver
            // builds on (the read room itself is capped in Session::read_hint, not here).
            assert_eq!(
                w as u64,
                missing.min(usize::MAX as u64),
                "bytes_wanted is not what the frame still lacks"
            );
        }
        None => {
            // Only the header is known to be missing.
            let hlen = match buf.first() {
                Some(&f) if f & FLAG_LONG != 0 => MAX_HEADER_LEN,
                _ => 2,
            };
            assert!(w <= hlen - buf.len(), "bytes_wanted {w} beyond the header");
        }
    }
    // A lower bound: w - 1 more bytes never complete a frame.
    if w > 1 && following.len() >= w - 1 {
        let mut d = dec.clone();
        let mut b = buf.clone();
        b.extend_from_slice(&following[..w - 1]);
        assert!(
            !matches!(d.decode(&mut b), Ok(Some(_))),
            "a frame completed with fewer bytes than bytes_wanted said"
        );
    }
}

/// Decodes `stream` delivered in `pieces` (their lengths add up to the stream's).
fn decode_all(max: Option<u64>, stream: &[u8], cuts: &[usize]) -> (Vec<Frame>, End) {
    let mut dec = FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut last = 0;
    for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
        buf.extend_from_slice(&stream[last..cut]);
        last = cut;
        loop {
            let before = buf.len();
            match dec.decode(&mut buf) {
                Ok(Some(f)) => {
                    let (hlen, size) = header(&stream[cut - before..]).expect("complete");
                    assert_eq!(f.body.len() as u64, size);
                    assert_eq!(buf.len(), before - hlen - f.body.len());
                    assert!(!(f.is_command() && f.more()));
                    frames.push(f);
                }
                Ok(None) => {
                    assert_eq!(buf.len(), before, "need-more consumes nothing");
                    check_wanted(&dec, &buf, &stream[cut..]);
                    break;
                }
                Err(e) => return (frames, End::Error(e)),
            }
        }
    }
    (frames, End::Leftover(buf.to_vec()))
}

fuzz_target!(|data: &[u8]| {
    // Each decoded frame costs a `Frame` (40 bytes) in a growing vector, for as little as 2
    // input bytes, and up to two decodings' frames are alive at once: 128 bytes per input byte
    // covers that; a claimed size would be far beyond.
    let _budget = omq_fuzz::alloc::budget(128 * data.len() + (64 << 10));
    let mut r = Reader::new(data);
    let c = r.u8();
    let max = (c & 0x80 != 0).then(|| u64::from(r.u16()));
    let n = (c & 0x0F) as usize;
    let raw: Vec<u16> = (0..n).map(|_| r.u16()).collect();
    let stream = r.rest();
    let mut cuts: Vec<usize> = raw
        .iter()
        .map(|&c| c as usize % (stream.len() + 1))
        .collect();
    cuts.sort_unstable();

    let whole = decode_all(max, stream, &[]);
    let split = decode_all(max, stream, &cuts);
    assert_eq!(whole, split, "frames depend on how the stream was cut");
    if stream.len() <= 512 {
        let every: Vec<usize> = (0..stream.len()).collect();
        assert_eq!(whole, decode_all(max, stream, &every), "byte by byte");
    }
});
