//! PUSH/PULL (spec 30) and PAIR (spec 31) on the simulated network: libzmq's test_spec_pushpull
//! and test_pair behaviours.

use std::time::Duration;

use omq_core::simnet::Net;
use omq_core::{Message, Options, RecvError, SendError, SocketType};

fn msg(s: &str) -> Message {
    Message::from(s)
}

#[test]
fn push_round_robins_over_pulls_and_connect_before_bind_queues() {
    let mut net = Net::new(1);
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    let pulls: Vec<_> = (0..3)
        .map(|_| net.socket(SocketType::Pull, Options::default()).unwrap())
        .collect();
    // Connect before bind: the pipes exist and take messages at once.
    for p in &pulls {
        let _ = p;
    }
    for (i, _) in pulls.iter().enumerate() {
        net.connect(push, &format!("inproc://pull{i}")).unwrap();
    }
    for i in 0..6 {
        net.send(push, msg(&format!("m{i}"))).unwrap();
    }
    for (i, p) in pulls.iter().enumerate() {
        net.bind(*p, &format!("inproc://pull{i}")).unwrap();
    }
    // The connect side redials after RECONNECT_IVL (100 ms + jitter).
    net.run_for(Duration::from_millis(500));
    for (i, p) in pulls.iter().enumerate() {
        let a = net.recv(*p).unwrap();
        let b = net.recv(*p).unwrap();
        assert_eq!(a, msg(&format!("m{i}")));
        assert_eq!(b, msg(&format!("m{}", i + 3)));
        assert_eq!(net.recv(*p), Err(RecvError::WouldBlock));
    }
}

#[test]
fn pull_fair_queues_from_pushers() {
    let mut net = Net::new(2);
    let pull = net.socket(SocketType::Pull, Options::default()).unwrap();
    let ep = net.bind(pull, "tcp://*:0").unwrap();
    let pushes: Vec<_> = (0..3)
        .map(|_| {
            let s = net.socket(SocketType::Push, Options::default()).unwrap();
            net.connect(s, &ep).unwrap();
            s
        })
        .collect();
    net.run_for(Duration::from_millis(10));
    for (i, s) in pushes.iter().enumerate() {
        for j in 0..4 {
            net.send(*s, msg(&format!("{i}-{j}"))).unwrap();
        }
    }
    net.run_for(Duration::from_millis(10));
    let got: Vec<String> = (0..12)
        .map(|_| String::from_utf8(net.recv(pull).unwrap().parts()[0].to_vec()).unwrap())
        .collect();
    // Each round takes one message from each pusher.
    for round in 0..4 {
        let mut senders: Vec<char> = got[round * 3..round * 3 + 3]
            .iter()
            .map(|s| s.chars().next().unwrap())
            .collect();
        senders.sort_unstable();
        assert_eq!(senders, vec!['0', '1', '2'], "round {round}: {got:?}");
    }
}

#[test]
fn push_without_peers_blocks_until_sndtimeo() {
    let mut net = Net::new(3);
    let push = net
        .socket(
            SocketType::Push,
            Options::default().send_timeout(Some(Duration::from_millis(250))),
        )
        .unwrap();
    let start = net.elapsed();
    let timeout = net.get(push).options().get_send_timeout();
    let r = net.send_wait(push, msg("x"), timeout);
    assert!(matches!(r, Err(SendError::WouldBlock(_))));
    assert_eq!(net.elapsed() - start, Duration::from_millis(250));
    // Same for PUSH with IMMEDIATE and a connect that has no listener.
    let push = net
        .socket(SocketType::Push, Options::default().immediate(true))
        .unwrap();
    net.connect(push, "tcp://127.0.0.1:1").unwrap();
    assert!(!net.get(push).can_send());
}

#[test]
fn multipart_is_delivered_whole_to_one_peer() {
    let mut net = Net::new(4);
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    let ep = net.bind(push, "tcp://*:0").unwrap();
    let a = net.socket(SocketType::Pull, Options::default()).unwrap();
    let b = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.connect(a, &ep).unwrap();
    net.connect(b, &ep).unwrap();
    net.run_for(Duration::from_millis(10));
    for i in 0..10u8 {
        net.send(push, Message::multipart([vec![i], vec![i; 300], vec![]]))
            .unwrap();
    }
    net.run_for(Duration::from_millis(10));
    let mut seen = Vec::new();
    for s in [a, b] {
        while let Ok(m) = net.recv(s) {
            assert_eq!(m.len(), 3);
            let i = m.parts()[0][0];
            assert_eq!(m.parts()[1].len(), 300);
            assert!(m.parts()[1].iter().all(|&x| x == i));
            seen.push(i);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
}

#[test]
fn pair_talks_both_ways_and_refuses_a_second_peer() {
    let mut net = Net::new(5);
    let a = net.socket(SocketType::Pair, Options::default()).unwrap();
    let b = net.socket(SocketType::Pair, Options::default()).unwrap();
    let c = net.socket(SocketType::Pair, Options::default()).unwrap();
    let ep = net.bind(a, "ipc://pair").unwrap();
    net.connect(b, &ep).unwrap();
    net.run_for(Duration::from_millis(10));
    net.connect(c, &ep).unwrap();
    net.run_for(Duration::from_millis(10));
    net.send(b, msg("hi")).unwrap();
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.recv(a).unwrap(), msg("hi"));
    // Were c kept as a second peer, these would be shared out between b and c.
    for m in ["back 1", "back 2", "back 3"] {
        net.send(a, msg(m)).unwrap();
    }
    net.run_for(Duration::from_millis(10));
    for m in ["back 1", "back 2", "back 3"] {
        assert_eq!(net.recv(b).unwrap(), msg(m));
    }
    assert_eq!(net.recv(c), Err(RecvError::WouldBlock));
}

#[test]
fn wrong_direction_is_not_supported() {
    let mut net = Net::new(6);
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    let pull = net.socket(SocketType::Pull, Options::default()).unwrap();
    assert_eq!(net.recv(push), Err(RecvError::NotSupported));
    assert!(matches!(
        net.send(pull, msg("x")),
        Err(SendError::NotSupported(_))
    ));
}
