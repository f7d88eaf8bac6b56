//! A hostile length header must not make the session reserve memory: allocations while
//! feeding input stay proportional to the bytes actually received, whatever size is announced.
//!
//! One test per binary: the allocation counters are process-wide.

mod peer;

use std::alloc::System;
use std::time::Instant;

use bytes::BytesMut;
use omq_core::{Session, SessionConfig, SocketType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn announced_sizes_reserve_nothing() {
    let now = Instant::now();
    for max in [None, Some(1 << 20)] {
        let mut cfg = SessionConfig::new(SocketType::Pull);
        cfg.max_msg_size = max;
        let mut s = Session::new(cfg, now);
        let mut buf = BytesMut::with_capacity(4096);
        buf.extend_from_slice(&peer::null_handshake(b"PUSH"));
        s.handle_input(&mut buf, now).unwrap();
        while s.poll_transmit().is_some() {}
        while s.poll_event().is_some() {}

        // A 2^63-1 byte frame announced, followed by a little of its body.
        let region = Region::new(GLOBAL);
        buf.extend_from_slice(&[0x02, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        buf.extend_from_slice(&[0u8; 100]);
        let r = s.handle_input(&mut buf, now);
        let _ = s.read_hint(&buf);
        let stats = region.change();
        assert_eq!(r.is_err(), max.is_some(), "max {max:?}");
        assert!(
            stats.bytes_allocated < 4096,
            "allocated {} bytes for a hostile header (max {max:?})",
            stats.bytes_allocated
        );
    }
}
