//! Small parts allocate nothing at steady state: the sender's copies of 64-byte messages and
//! the bodies a session decodes cycle through their thread's arena buffers (see
//! `omq_core::message::ARENA_KEPT`) instead of one allocation each.
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

#[test]
fn small_parts_allocate_nothing_at_steady_state() {
    // The sending side: copies of 64-byte bodies, dropped in order once IN_FLIGHT newer ones
    // exist (as a connection drops each once written). Warm-up first: the thread's buffers.
    let mut in_flight = VecDeque::with_capacity(IN_FLIGHT + 1);
    let mut send = |n: usize| {
        for i in 0..n {
            in_flight.push_back(Part::copy_from_slice(&[i as u8; 64]));
            if in_flight.len() > IN_FLIGHT {
                in_flight.pop_front();
            }
        }
    };
    send(N);
    let region = Region::new(GLOBAL);
    send(N);
    let sent = region.change();
    assert!(
        sent.allocations < 10,
        "{} allocations for {N} copies of 64 bytes",
        sent.allocations
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
