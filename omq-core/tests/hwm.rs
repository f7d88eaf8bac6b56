//! High-water marks, conflation and linger: exact counts at the socket (libzmq's test_hwm,
//! test_sockopt_hwm, test_conflate), and end to end on the simulated network.

use std::time::{Duration, Instant};

use omq_core::pipe::PipeId;
use omq_core::simnet::Net;
use omq_core::{
    Action, Message, Options, PeerInfo, RecvError, SendError, Socket, SocketOption, SocketType,
};

/// A socket with `n` connected, ready peers of type `peer_type`; returns their pipes.
fn ready_socket(
    t: SocketType,
    o: Options,
    peer_type: SocketType,
    n: usize,
) -> (Socket, Vec<PipeId>) {
    let now = Instant::now();
    let mut s = Socket::new(t, o, 7).unwrap();
    for i in 0..n {
        s.connect(&format!("tcp://127.0.0.1:{}", 1000 + i), now)
            .unwrap();
    }
    let mut pipes = Vec::new();
    while let Some(a) = s.poll_action() {
        if let Action::Dial { pipe, .. } = a {
            s.handle_connected(pipe, now).unwrap();
            s.handle_ready(pipe, PeerInfo::new(peer_type), now);
            pipes.push(pipe);
        }
    }
    (s, pipes)
}

fn fill(s: &mut Socket) -> usize {
    let mut n = 0;
    while s.send(Message::from("x")).is_ok() {
        n += 1;
        assert!(n < 1_000_000);
    }
    n
}

#[test]
fn sndhwm_is_exact_per_pipe() {
    for (hwm, peers) in [(1, 1), (5, 1), (1000, 1), (3, 4)] {
        let (mut s, _) = ready_socket(
            SocketType::Push,
            Options::default().send_hwm(hwm),
            SocketType::Pull,
            peers,
        );
        assert_eq!(fill(&mut s), hwm * peers);
        assert!(!s.can_send());
    }
}

#[test]
fn connect_before_bind_with_sndhwm_1_holds_exactly_one() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Push, Options::default().send_hwm(1), 1).unwrap();
    s.connect("inproc://nobody-yet", now).unwrap();
    assert_eq!(fill(&mut s), 1);
}

#[test]
fn immediate_queues_nothing_for_pending_connections() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Push, Options::default().immediate(true), 1).unwrap();
    s.connect("tcp://127.0.0.1:9", now).unwrap();
    assert_eq!(fill(&mut s), 0);
}

#[test]
fn rcvhwm_is_exact_and_reading_resumes() {
    let (mut s, pipes) = ready_socket(
        SocketType::Pull,
        Options::default().recv_hwm(4),
        SocketType::Push,
        1,
    );
    let p = pipes[0];
    for i in 0..4 {
        assert!(s.handle_message(p, Message::from(format!("{i}"))).is_ok());
    }
    let refused = s.handle_message(p, Message::from("4")).unwrap_err();
    assert_eq!(refused, Message::from("4"));
    // Reading resumes at the low-water mark (half the HWM), not after every message.
    assert_eq!(s.recv().unwrap(), Message::from("0"));
    assert_eq!(s.poll_action(), None);
    assert_eq!(s.recv().unwrap(), Message::from("1"));
    assert_eq!(s.poll_action(), Some(Action::ResumeRead { pipe: p }));
    assert!(s.handle_message(p, refused).is_ok());
    for i in 2..5 {
        assert_eq!(s.recv().unwrap(), Message::from(format!("{i}")));
    }
    assert_eq!(s.recv(), Err(RecvError::WouldBlock));
}

#[test]
fn hwm_changes_apply_to_live_pipes_and_drop_nothing() {
    let (mut s, _) = ready_socket(
        SocketType::Push,
        Options::default().send_hwm(4),
        SocketType::Pull,
        1,
    );
    assert_eq!(fill(&mut s), 4);
    s.set_option(SocketOption::SndHwm(8)).unwrap();
    assert_eq!(fill(&mut s), 4);
    // Lowering it keeps all eight queued messages.
    s.set_option(SocketOption::SndHwm(2)).unwrap();
    assert_eq!(fill(&mut s), 0);
    let queued: usize = s.pipes().iter().map(|p| p.queued_out()).sum();
    assert_eq!(queued, 8);
    // Zero is unlimited.
    s.set_option(SocketOption::SndHwm(0)).unwrap();
    for _ in 0..10_000 {
        s.send(Message::from("y")).unwrap();
    }
}

#[test]
fn end_to_end_hwm_blocks_the_sender_with_bounded_memory() {
    let mut net = Net::new(3);
    let pull = net
        .socket(SocketType::Pull, Options::default().recv_hwm(10))
        .unwrap();
    let push = net
        .socket(SocketType::Push, Options::default().send_hwm(10))
        .unwrap();
    let ep = net.bind(pull, "tcp://*:0").unwrap();
    net.connect(push, &ep).unwrap();
    net.run_for(Duration::from_millis(10));
    let body = vec![7u8; 10_000];
    let mut sent = 0usize;
    while net.send(push, Message::from(body.clone())).is_ok() {
        sent += 1;
        assert!(sent < 10_000, "the sender never felt the receiver's HWM");
    }
    // SNDHWM + RCVHWM, plus what the connection holds in flight (bounded by buffer sizes).
    let in_flight_max =
        (omq_core::connection::MAX_QUEUED_TRANSMIT + 2 * net.buffer) / body.len() + 2;
    assert!(sent >= 20 && sent <= 20 + in_flight_max, "sent {sent}");
    let mut got = 0;
    while net.recv(pull).is_ok() {
        got += 1;
    }
    assert_eq!(got, sent, "everything sent arrives once the reader reads");
}

#[test]
fn conflate_keeps_only_the_newest() {
    let mut net = Net::new(4);
    let pull = net
        .socket(SocketType::Pull, Options::default().conflate(true))
        .unwrap();
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    let ep = net.bind(pull, "tcp://*:0").unwrap();
    net.connect(push, &ep).unwrap();
    net.run_for(Duration::from_millis(10));
    for i in 0..20 {
        net.send(push, Message::from(format!("{i}"))).unwrap();
    }
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.recv(pull).unwrap(), Message::from("19"));
    assert_eq!(net.recv(pull), Err(RecvError::WouldBlock));

    // On the sending side: a PUSH that conflates never blocks and keeps one message.
    let (mut s, _) = ready_socket(
        SocketType::Push,
        Options::default().conflate(true),
        SocketType::Pull,
        1,
    );
    for i in 0..100 {
        s.send(Message::from(format!("{i}"))).unwrap();
    }
    let queued: Vec<&Message> = s.pipes().iter().flat_map(|p| p.outgoing()).collect();
    assert_eq!(queued, vec![&Message::from("99")]);
}

#[test]
fn linger_bounds_how_long_close_waits() {
    // Messages take 50 ms to cross. Zero linger drops what is on the way; a long or infinite
    // linger (the default) waits until everything has crossed.
    for (linger, delivered) in [
        (Some(Duration::ZERO), 0),
        (None, 3),
        (Some(Duration::from_secs(5)), 3),
        (Some(Duration::from_millis(20)), 0),
    ] {
        let mut net = Net::new(5);
        net.link.latency = Duration::from_millis(50);
        let push = net
            .socket(SocketType::Push, Options::default().linger(linger))
            .unwrap();
        let pull = net.socket(SocketType::Pull, Options::default()).unwrap();
        let ep = net.bind(pull, "tcp://*:0").unwrap();
        net.connect(push, &ep).unwrap();
        net.run_for(Duration::from_millis(500));
        for i in 0..3 {
            net.send(push, Message::from(format!("{i}"))).unwrap();
        }
        net.close(push);
        net.run_for(Duration::from_millis(500));
        let mut got = 0;
        while net.recv(pull).is_ok() {
            got += 1;
        }
        assert_eq!(got, delivered, "linger {linger:?}");
    }
}

#[test]
fn send_timeout_zero_is_would_block_at_once() {
    let mut net = Net::new(6);
    let push = net
        .socket(
            SocketType::Push,
            Options::default().send_timeout(Some(Duration::ZERO)),
        )
        .unwrap();
    let t0 = net.elapsed();
    assert!(matches!(
        net.send_wait(push, Message::from("x"), Some(Duration::ZERO)),
        Err(SendError::WouldBlock(_))
    ));
    assert_eq!(net.elapsed(), t0);
    let pull = net
        .socket(
            SocketType::Pull,
            Options::default().recv_timeout(Some(Duration::from_millis(70))),
        )
        .unwrap();
    let t0 = net.elapsed();
    assert_eq!(
        net.recv_wait(pull, Some(Duration::from_millis(70))),
        Err(RecvError::WouldBlock)
    );
    assert_eq!(net.elapsed() - t0, Duration::from_millis(70));
}

/// The in-process transports move as many messages as `inbound_room` says: RCVHWM less what
/// is queued, nothing before the handshake, no limit at RCVHWM 0 or with CONFLATE. At zero
/// room the pipe counts as paused, so reading it down to half resumes it; with room left it
/// does not.
#[test]
fn inbound_room_is_what_rcvhwm_leaves() {
    let now = Instant::now();
    let resumed = |s: &mut Socket| {
        std::iter::from_fn(|| s.poll_action()).any(|a| matches!(a, Action::ResumeRead { .. }))
    };
    let mut s = Socket::new(SocketType::Pull, Options::default().recv_hwm(4), 7).unwrap();
    let (pipe, _) = s.handle_accepted("tcp://127.0.0.1:5555", now);
    assert_eq!(s.inbound_room(pipe), 0, "not before the handshake");
    s.handle_ready(pipe, PeerInfo::new(SocketType::Push), now);
    assert_eq!(s.inbound_room(pipe), 4);
    s.handle_message(pipe, Message::from("x")).unwrap();
    s.recv().unwrap();
    assert!(
        !resumed(&mut s),
        "room left: not paused, so nothing to resume"
    );
    for left in (0..4).rev() {
        s.handle_message(pipe, Message::from("x")).unwrap();
        assert_eq!(s.inbound_room(pipe), left);
    }
    s.recv().unwrap();
    assert!(!resumed(&mut s), "3 queued: above half the HWM");
    s.recv().unwrap();
    assert!(resumed(&mut s), "2 queued: half the HWM, reading resumes");

    for o in [
        Options::default().recv_hwm(0),
        Options::default().recv_hwm(4).conflate(true),
    ] {
        let mut s = Socket::new(SocketType::Pull, o, 7).unwrap();
        let (pipe, _) = s.handle_accepted("tcp://127.0.0.1:5555", now);
        s.handle_ready(pipe, PeerInfo::new(SocketType::Push), now);
        assert_eq!(s.inbound_room(pipe), usize::MAX);
    }
}

/// The load-balanced types, each with a peer type it can talk to.
const BALANCED: [(SocketType, SocketType); 6] = [
    (SocketType::Push, SocketType::Pull),
    (SocketType::Dealer, SocketType::Router),
    (SocketType::Pair, SocketType::Pair),
    (SocketType::Scatter, SocketType::Gather),
    (SocketType::Client, SocketType::Server),
    (SocketType::Channel, SocketType::Channel),
];

/// `send_room` is exactly what `send` takes before it blocks for the load-balanced types
/// (a buffering sink relies on it never to hold more than SNDHWM allows), one or none for the
/// others, and none once closed.
#[test]
fn send_room_is_what_send_takes_before_it_blocks() {
    for (t, peer) in BALANCED.into_iter().take(5) {
        let peers = if t == SocketType::Pair { 1 } else { 3 };
        for hwm in [1, 4, 1000] {
            let (mut s, _) = ready_socket(t, Options::default().send_hwm(hwm), peer, peers);
            assert_eq!(s.send_room(usize::MAX), hwm * peers, "{t:?} hwm {hwm}");
            s.send(Message::from("x")).unwrap();
            assert_eq!(
                s.send_room(usize::MAX),
                hwm * peers - 1,
                "{t:?} hwm {hwm}, one queued"
            );
            let room = s.send_room(usize::MAX);
            assert_eq!(fill(&mut s), room, "{t:?} hwm {hwm}");
            assert_eq!(s.send_room(usize::MAX), 0);
        }
        let (s, _) = ready_socket(t, Options::default().send_hwm(0), peer, peers);
        assert_eq!(
            s.send_room(usize::MAX),
            usize::MAX,
            "{t:?}: SNDHWM 0 has no bound"
        );
        // Asked for no more than `enough`, the count stops at the first peer that reaches it.
        let (s, _) = ready_socket(t, Options::default().send_hwm(4), peer, peers);
        let at_most = 4 * peers;
        for (enough, counted) in [(0, 0), (1, 4), (4, 4), (5, 8), (8, 8), (9, 12)] {
            assert_eq!(
                s.send_room(enough),
                counted.min(at_most),
                "{t:?} enough {enough}"
            );
        }
    }
    // No peer at all: nothing to balance over.
    let s = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
    assert_eq!(s.send_room(usize::MAX), 0);
    // The others: one when a send would go through now.
    let (mut req, _) = ready_socket(SocketType::Req, Options::default(), SocketType::Rep, 1);
    assert_eq!(req.send_room(usize::MAX), 1);
    req.send(Message::from("q")).unwrap();
    assert_eq!(req.send_room(usize::MAX), 0, "a REQ waits for its reply");
    let (publ, _) = ready_socket(SocketType::Pub, Options::default(), SocketType::Sub, 1);
    assert_eq!(publ.send_room(usize::MAX), 1);
    let (mut push, _) = ready_socket(SocketType::Push, Options::default(), SocketType::Pull, 1);
    push.close();
    assert_eq!(push.send_room(usize::MAX), 0, "closed");
}

/// `send_only_waits` says which sends can fail only for want of room: for those, a send to a
/// socket with room succeeds and one without room gives `WouldBlock` back, whatever the
/// message; every type and shape it refuses has a send that fails otherwise or keeps state.
#[test]
fn send_only_waits_names_the_sends_that_fail_only_for_room() {
    let one = Message::from("x");
    let two = Message::multipart(["a", "b"]);
    let empty = Message::multipart(Vec::<Vec<u8>>::new());
    for (t, peer) in BALANCED {
        for msg in [&one, &two] {
            if !t.send_only_waits(msg) {
                // Only the single-part types refuse a message, and only a multipart one.
                assert!(matches!(
                    t,
                    SocketType::Scatter | SocketType::Client | SocketType::Channel
                ));
                assert_eq!(msg.len(), 2, "{t:?}");
                let (mut s, _) = ready_socket(t, Options::default(), peer, 1);
                assert!(
                    matches!(s.send(msg.clone()), Err(SendError::InvalidMessage(..))),
                    "{t:?}"
                );
                continue;
            }
            let (mut s, _) = ready_socket(t, Options::default().send_hwm(1), peer, 1);
            assert!(s.send(msg.clone()).is_ok(), "{t:?}");
            assert!(
                matches!(s.send(msg.clone()), Err(SendError::WouldBlock(_))),
                "{t:?}: full"
            );
            let mut alone = Socket::new(t, Options::default(), 1).unwrap();
            assert!(
                matches!(alone.send(msg.clone()), Err(SendError::WouldBlock(_))),
                "{t:?}: no peer"
            );
        }
        assert!(
            !t.send_only_waits(&empty),
            "{t:?}: an empty message is refused"
        );
    }
    for t in [
        SocketType::Req,
        SocketType::Rep,
        SocketType::Router,
        SocketType::Pub,
        SocketType::XPub,
        SocketType::Server,
        SocketType::Radio,
        SocketType::Peer,
        SocketType::Stream,
    ] {
        assert!(
            !t.send_only_waits(&one),
            "{t:?} keeps state or routes by the message"
        );
    }
}
