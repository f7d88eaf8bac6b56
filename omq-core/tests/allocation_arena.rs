//! Small parts allocate nothing at steady state: the sender's copies of 64-byte messages (and
//! of 512-byte ones queued a full inproc pipe deep) and the bodies a session decodes cycle
//! through their thread's arena buffers (see `omq_core::message::ARENA_KEPT` and
//! `SEND_ARENA_KEPT`) instead of one allocation each.
//!
//! One test per binary: the allocation counters are process-wide.

mod peer;

use std::alloc::System;
use std::collections::VecDeque;
use std::time::Instant;

use bytes::BytesMut;
use omq_core::wire::frame::encode_header;
use omq_core::{Part, Session, SessionConfig, SessionEvent, SocketType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const N: usize = 100_000;
/// Messages alive at once: about four arena buffers' worth of 64-byte parts.
const IN_FLIGHT: usize = 500;
/// Sent messages alive at once in the deep case: SNDHWM + RCVHWM of an inproc pipe.
const DEEP: usize = 2000;

/// Allocations made by N copies of `size`-byte bodies, each dropped once `depth` newer ones
/// exist, after a warm-up of N more (which fills the thread's sending buffers). `size` <= 512.
fn sent_allocations(size: usize, depth: usize) -> usize {
    let mut in_flight = VecDeque::with_capacity(depth + 1);
    let mut send = |n: usize| {
        for i in 0..n {
            // A body on the stack: the copy is the only allocation there could be.
            in_flight.push_back(Part::copy_from_slice(&[i as u8; 512][..size]));
            if in_flight.len() > depth {
                in_flight.pop_front();
            }
        }
    };
    send(N);
    let region = Region::new(GLOBAL);
    send(N);
    region.change().allocations
}

#[test]
fn small_parts_allocate_nothing_at_steady_state() {
    // The sending side: copies of 64-byte bodies, dropped in order once IN_FLIGHT newer ones
    // exist (as a connection drops each once written).
    let sent = sent_allocations(64, IN_FLIGHT);
    assert!(sent < 10, "{sent} allocations for {N} copies of 64 bytes");

    // A deep queue of larger copies: 512-byte bodies, 2,000 alive at once (a full inproc pipe
    // at the default HWMs, 1,000 KiB), still fit the sending arena's remembered buffers.
    let sent = sent_allocations(512, DEEP);
    assert!(
        sent < 10,
        "{sent} allocations for {N} copies of 512 bytes, {DEEP} in flight"
    );

    // The receiving side: a session decoding 64-byte frames from its input, the messages
    // kept IN_FLIGHT deep (a pipe the application is behind on).
    let now = Instant::now();
    let mut s = Session::new(SessionConfig::new(SocketType::Pull), now);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    buf.extend_from_slice(&peer::null_handshake(b"PUSH"));
    s.handle_input(&mut buf, now).unwrap();
    while s.poll_transmit().is_some() {}
    while s.poll_event().is_some() {}
    let mut frame = BytesMut::new();
    encode_header(&mut frame, false, false, 64);
    frame.extend_from_slice(&[7; 64]);
    let mut received = VecDeque::with_capacity(IN_FLIGHT + 1);
    let mut receive = |n: usize, buf: &mut BytesMut| {
        let mut got = 0;
        while got < n {
            // One read's worth of frames at a time, as a driver hands them in.
            buf.reserve(1000 * frame.len());
            for _ in 0..1000 {
                buf.extend_from_slice(&frame);
            }
            s.handle_input(buf, now).unwrap();
            while let Some(ev) = s.poll_event() {
                if let SessionEvent::Message(m) = ev {
                    assert_eq!(m.parts()[0].len(), 64);
                    received.push_back(m);
                    got += 1;
                    if received.len() > IN_FLIGHT {
                        received.pop_front();
                    }
                }
            }
        }
    };
    receive(N, &mut buf);
    let region = Region::new(GLOBAL);
    receive(N, &mut buf);
    let got = region.change();
    assert!(
        got.allocations < 20,
        "{} allocations for {N} received 64-byte messages",
        got.allocations
    );
}
