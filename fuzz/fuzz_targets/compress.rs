//! The `lz4+tcp://` / `zstd+tcp://` part codec (`omq_core::compress::Codec`): hostile wire
//! parts from a peer, and round trips of whatever the application sends.
//!
//! Input: a control byte (bit 0: zstd, else LZ4; bit 1: round trip, else hostile parts; bit 2:
//! with a dictionary), two bytes of MAXMSGSIZE in KiB (0 to 64 MiB; the hostile mode caps it at
//! 1 MiB), then
//! - hostile: parts, each a flag byte (bit 0: MORE), a two-byte length and that many bytes
//!   (the peer's dictionary, if any, is just such a part);
//! - round trip: parts, each a flag byte (bit 0: MORE), a two-byte length and its bytes, sent
//!   by one codec and received by another.
//!
//! Invariants: no panic. Hostile: a decoded message (its parts summed) never exceeds MAXMSGSIZE,
//! and memory stays within a budget of a few times MAXMSGSIZE plus a small multiple of the input,
//! whatever the parts claim; after an error the connection would close, so decoding stops.
//! Round trip: every part comes out as it went in, and a dictionary is shipped at most once
//! and first.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use omq_core::compress::train::Trainer;
use omq_core::compress::{Codec, Compression, CompressionConfig, Decoded, TrainingParams};
use omq_core::Part;
use omq_fuzz::reader::Reader;

/// A ZDICT dictionary for the zstd round trips (training takes a while: once per process).
fn zstd_dict() -> Bytes {
    static DICT: OnceLock<Bytes> = OnceLock::new();
    DICT.get_or_init(|| {
        let mut t = Trainer::new(TrainingParams::for_kind(Compression::Zstd));
        for i in 0..1000 {
            let record = format!(
                "{{\"id\":{i},\"sensor\":\"temperature-{}\",\"unit\":\"C\",\"value\":{}.{}}}",
                i % 7,
                20 + i % 10,
                i % 100
            );
            t.sample(record.repeat(4).as_bytes());
        }
        t.train(Compression::Zstd, 7).expect("a dictionary trains")
    })
    .clone()
}

fn part<'a>(r: &mut Reader<'a>) -> (bool, &'a [u8]) {
    let more = r.u8() & 1 != 0;
    let len = r.u16() as usize;
    (more, r.take(len))
}

fn hostile(kind: Compression, max: u64, r: &mut Reader<'_>) {
    let mut codec = Codec::new(&CompressionConfig::new(kind)).expect("codec");
    let mut message = 0u64;
    while !r.is_empty() {
        let (more, wire) = part(r);
        match codec.decode_part(Part::copy_from_slice(wire), more, Some(max)) {
            Ok(Decoded::Part(p)) => {
                message += p.len() as u64;
                assert!(message <= max, "a message of {message} bytes passed MAXMSGSIZE {max}");
                if !more {
                    message = 0;
                }
            }
            Ok(Decoded::Dictionary) => {}
            Err(_) => return,
        }
    }
}

fn round_trip(kind: Compression, dict: Option<Bytes>, max: u64, r: &mut Reader<'_>) {
    let mut config = CompressionConfig::new(kind);
    config.dict = dict;
    let mut sender = Codec::new(&config).expect("sender");
    let mut receiver = Codec::new(&CompressionConfig::new(kind)).expect("receiver");
    let mut first = true;
    let mut shipped = 0;
    while !r.is_empty() {
        // One message: parts until one without MORE (or the input ends).
        let mut parts = Vec::new();
        loop {
            let (more, body) = part(r);
            parts.push(body);
            if !more || r.is_empty() {
                break;
            }
        }
        if let Some(shipment) = sender.start_message(parts.iter().copied()) {
            assert!(first, "a dictionary shipped after the first message");
            shipped += 1;
            let got = receiver.decode_part(Part::from(shipment), false, Some(max));
            assert_eq!(got, Ok(Decoded::Dictionary));
        }
        first = false;
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        for (i, body) in parts.iter().enumerate() {
            let more = i + 1 < parts.len();
            let wire = sender.encode_part(body);
            match receiver.decode_part(Part::from(wire), more, Some(max)) {
                Ok(Decoded::Part(p)) => assert_eq!(p.as_slice(), *body, "a part changed"),
                Ok(Decoded::Dictionary) => panic!("a part decoded as a dictionary"),
                // Only a message over MAXMSGSIZE may be refused.
                Err(e) => {
                    assert!(total > max, "refused a {total}-byte message under {max}: {e}");
                    return;
                }
            }
        }
    }
    assert!(shipped <= 1);
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let c = r.u8();
    let kind = if c & 1 != 0 {
        Compression::Zstd
    } else {
        Compression::Lz4
    };
    let max = u64::from(r.u16()) * 1024;
    if c & 2 == 0 {
        let max = max.min(1 << 20);
        // Decompression into at most MAXMSGSIZE per part, a dictionary of 8 KiB, the parts
        // themselves and the decoders' own state.
        let _budget = omq_fuzz::alloc::budget(4 * max as usize + 8 * data.len() + (2 << 20));
        hostile(kind, max, &mut r);
    } else {
        let dict = (c & 4 != 0).then(|| {
            if kind == Compression::Zstd {
                zstd_dict()
            } else {
                Bytes::copy_from_slice(r.bytes8())
            }
        });
        let dict = dict.filter(|d| !d.is_empty());
        round_trip(kind, dict, max, &mut r);
    }
});
