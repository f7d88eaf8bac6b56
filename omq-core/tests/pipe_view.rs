//! A socket's pipes seen from outside the core: read only, through accessors. The queues and
//! flags behind them are private (the `compile_fail` example on `Pipe` shows one), so this is
//! all a user or a driver gets, and each accessor must tell the truth.

use std::time::Instant;

use bytes::Bytes;
use omq_core::pipe::{Origin, PipeState};
use omq_core::{Message, Options, PeerInfo, Socket, SocketType};

#[test]
fn a_pipe_shows_its_peer_its_queues_and_its_state() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Router, Options::default(), 7).unwrap();
    let at = "tcp://127.0.0.1:5555";
    s.bind(at).unwrap();
    s.handle_bound(at, at);
    let (pipe, _) = s.handle_accepted(at, now);

    let p = s.pipes().get(pipe).unwrap();
    assert_eq!(p.id(), pipe);
    assert_eq!(p.origin(), &Origin::Accept(at.into()));
    assert_eq!(p.state(), PipeState::Handshaking);
    assert!(p.peer().is_none() && p.routing_id().is_none());

    s.handle_ready(
        pipe,
        PeerInfo::new(SocketType::Dealer).with_routing_id(Bytes::from_static(b"worker")),
        now,
    );
    // Two messages from the peer, not read yet; three to it, not taken by a driver yet.
    for body in ["a", "b"] {
        s.handle_message(pipe, Message::from(body)).unwrap();
    }
    for body in ["x", "y", "z"] {
        s.send(Message::multipart(["worker", body])).unwrap();
    }

    let p = s.pipes().get(pipe).unwrap();
    assert_eq!(p.state(), PipeState::Active);
    assert_eq!(p.routing_id().map(|id| &id[..]), Some(&b"worker"[..]));
    assert_eq!(
        p.peer().map(|peer| peer.socket_type),
        Some(SocketType::Dealer)
    );
    assert_eq!((p.queued_in(), p.queued_out()), (2, 3));
    // Oldest first, and from either end; the ROUTER's envelope is not sent to the peer.
    let out: Vec<&Message> = p.outgoing().collect();
    assert_eq!(out, [&Message::from("x"), &"y".into(), &"z".into()]);
    assert_eq!(p.outgoing().next_back(), Some(&Message::from("z")));
    assert_eq!(p.outgoing().len(), 3);

    // Reading and transmitting empty the queues the accessors count.
    s.recv().unwrap();
    s.recv().unwrap();
    while s.poll_transmit(pipe).is_some() {}
    let p = s.pipes().get(pipe).unwrap();
    assert_eq!((p.queued_in(), p.queued_out()), (0, 0));
    assert_eq!(p.outgoing().next(), None);
}

#[test]
fn parts_change_in_place_through_parts_mut() {
    // What `parts_mut` is for: rewrite a body or an envelope without rebuilding the message.
    let mut m = Message::multipart(["client", "", "request"]);
    let parts = m.parts_mut();
    assert_eq!(parts.len(), 3);
    parts[2] = "reply".into();
    parts[0] = "other".into();
    assert_eq!(m, Message::multipart(["other", "", "reply"]));
}

#[test]
fn pipe_ids_are_distinct_numbers_an_event_loop_can_use_as_tokens() {
    // The embedding example keys its readiness tokens by `PipeId::raw`.
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Router, Options::default(), 1).unwrap();
    assert!(s.pipes().is_empty());
    let mut raws: Vec<u64> = (0..3)
        .map(|i| {
            s.handle_accepted(&format!("tcp://127.0.0.1:{}", 1000 + i), now)
                .0
                .raw()
        })
        .collect();
    raws.sort_unstable();
    raws.dedup();
    assert_eq!(raws.len(), 3, "{raws:?}");
    assert!(!s.pipes().is_empty());
    assert_eq!(s.pipes().len(), 3);
}
