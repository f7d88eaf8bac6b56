//! A compressed part's claimed size reserves nothing when it is refused: a part claiming 1 GiB
//! (or 2^40 bytes) in a few bytes costs the receiver what it received, with or without
//! MAXMSGSIZE. One test per binary: the allocation counters are process-wide.

use std::alloc::System;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use omq_core::compress::{Compression, CompressionConfig};
use omq_core::wire::command::Command;
use omq_core::wire::frame::encode_header;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::wire::metadata::Metadata;
use omq_core::{Session, SessionConfig, SocketType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn refused_claims_reserve_nothing() {
    let now = Instant::now();
    let mut lz4_claims = Vec::new();
    for claim in [1u64 << 30, 1 << 40, u64::MAX] {
        let mut p = b"LZ4B".to_vec();
        p.extend_from_slice(&claim.to_le_bytes());
        p.extend_from_slice(&[0x1f; 16]);
        lz4_claims.push((Compression::Lz4, p));
    }
    let mut z = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0];
    z.extend_from_slice(&(1u64 << 40).to_le_bytes());
    z.extend_from_slice(&[1, 0, 0, 0]);
    lz4_claims.push((Compression::Zstd, z));
    for (kind, part) in lz4_claims {
        for max in [None, Some(1u64 << 20)] {
            let mut cfg = SessionConfig::new(SocketType::Pull);
            cfg.max_msg_size = max;
            cfg.compression = Some(CompressionConfig::new(kind));
            let mut s = Session::new(cfg, now);
            let mut buf = BytesMut::with_capacity(4096);
            buf.extend_from_slice(&Greeting::ours(MechanismName::NULL, false).encode());
            let mut m = Metadata::new();
            m.insert("Socket-Type", Bytes::from_static(b"PUSH"));
            let ready = Command::Ready(m).to_bytes();
            encode_header(&mut buf, false, true, ready.len());
            buf.extend_from_slice(&ready);
            s.handle_input(&mut buf, now).unwrap();
            while s.poll_transmit().is_some() {}
            while s.poll_event().is_some() {}

            let region = Region::new(GLOBAL);
            encode_header(&mut buf, false, false, part.len());
            buf.extend_from_slice(&part);
            let r = s.handle_input(&mut buf, now);
            let stats = region.change();
            assert!(r.is_err(), "{kind:?} {max:?}: accepted");
            assert!(
                stats.bytes_allocated < 4096,
                "{kind:?} max {max:?}: allocated {} bytes for a {}-byte part",
                stats.bytes_allocated,
                part.len()
            );
        }
    }
}
