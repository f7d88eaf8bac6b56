//! A connection that never finishes its handshake must cost little: a thousand stalled
//! handshakes (slowloris) should hold a few hundred kilobytes, not 64 KiB each as the first
//! transmit buffer once did.
//!
//! One test per binary: the allocation counters are process-wide.

use std::alloc::System;
use std::time::Instant;

use bytes::BytesMut;
use omq_core::wire::greeting::{Greeting, MechanismName};
use omq_core::{Session, SessionConfig, SocketType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn a_stalled_handshake_holds_little_memory() {
    let now = Instant::now();
    let region = Region::new(GLOBAL);
    let mut sessions = Vec::new();
    for _ in 0..100 {
        let mut s = Session::new(SessionConfig::new(SocketType::Router), now);
        // Half a greeting, then silence.
        let mut buf = BytesMut::with_capacity(s.read_hint(&[]));
        buf.extend_from_slice(&Greeting::ours(MechanismName::NULL, false).encode()[..30]);
        s.handle_input(&mut buf, now).unwrap();
        while s.poll_transmit().is_some() {}
        sessions.push((s, buf));
    }
    let stats = region.change();
    let held = stats
        .bytes_allocated
        .saturating_sub(stats.bytes_deallocated);
    let per = held / 100;
    assert!(per < 4096, "{per} bytes held per stalled handshake");
}
