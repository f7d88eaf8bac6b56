//! A REQ/REP round trip allocates nothing at steady state, in the core: the request and the
//! reply each cross as one part inline behind the delimiter flag (with the delimiter as a part
//! of its own, each took an allocation on each side since the 64-byte `Message`).
//!
//! One test per binary: the allocation counters are process-wide.

use std::alloc::System;
use std::time::Instant;

use bytes::Bytes;
use omq_core::pipe::{Outbound, PipeId};
use omq_core::{Message, Options, PeerInfo, Socket, SocketType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn socket(t: SocketType, peer: SocketType) -> (Socket, PipeId) {
    let now = Instant::now();
    let mut s = Socket::new(t, Options::default(), 1).unwrap();
    let (pipe, _) = s.handle_accepted("inproc://allocation-reqrep", now);
    s.handle_ready(pipe, PeerInfo::new(peer), now);
    while s.poll_action().is_some() {}
    (s, pipe)
}

/// Moves what `from` queued for its peer into `to`, as an in-process transport does.
fn hand_over(from: &mut Socket, from_pipe: PipeId, to: &mut Socket, to_pipe: PipeId) {
    while let Some(o) = from.poll_transmit(from_pipe) {
        if let Outbound::Message(m) = o {
            to.handle_message(to_pipe, m).unwrap();
        }
    }
    while from.poll_action().is_some() {}
    while to.poll_action().is_some() {}
}

fn round_trip(req: &mut (Socket, PipeId), rep: &mut (Socket, PipeId), body: &Bytes) {
    req.0.send(Message::from(body.clone())).unwrap();
    hand_over(&mut req.0, req.1, &mut rep.0, rep.1);
    let request = rep.0.recv().unwrap();
    rep.0.send(request).unwrap();
    hand_over(&mut rep.0, rep.1, &mut req.0, req.1);
    let reply = req.0.recv().unwrap();
    assert_eq!(reply.len(), 1);
}

#[test]
fn a_round_trip_allocates_nothing_at_steady_state() {
    let mut req = socket(SocketType::Req, SocketType::Rep);
    let mut rep = socket(SocketType::Rep, SocketType::Req);
    let body = Bytes::from_static(&[7; 64]);
    // Warm up: the pipes' queues and the actions' queue reach their size.
    for _ in 0..16 {
        round_trip(&mut req, &mut rep, &body);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..1_000 {
        round_trip(&mut req, &mut rep, &body);
    }
    let stats = region.change();
    assert_eq!(
        stats.allocations + stats.reallocations,
        0,
        "allocations in 1,000 round trips: {stats:?}"
    );
}
