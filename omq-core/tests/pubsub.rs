//! PUB, SUB, XPUB, XSUB (spec 29) on the simulated network: the behaviours of libzmq's
//! test_hwm_pubsub, test_xpub_verbose, test_xpub_manual, test_xpub_welcome_msg,
//! test_xpub_nodrop, test_xsub_verbose, test_xpub_topic, test_pub_invert_matching and
//! test_sub_forward.

use std::time::Duration;

use bytes::Bytes;
use omq_core::simnet::{Net, SockId};
use omq_core::{Message, Options, RecvError, SendError, SocketType};

const MS10: Duration = Duration::from_millis(10);

fn subscriber(net: &mut Net, t: SocketType, o: Options, ep: &str, topics: &[&[u8]]) -> SockId {
    let s = net.socket(t, o).unwrap();
    for topic in topics {
        net.get(s).subscribe(topic).unwrap();
    }
    net.connect(s, ep).unwrap();
    s
}

fn drain(net: &mut Net, s: SockId) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Ok(m) = net.recv(s) {
        out.push(m.parts()[0].to_vec());
    }
    out
}

#[test]
fn pub_delivers_by_prefix_to_every_matching_subscriber() {
    let mut net = Net::new(1);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let all = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b""]);
    let a = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"A"]);
    let ab = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default(),
        &ep,
        &[b"AB", b"A"],
    );
    net.run_for(MS10);
    for topic in ["AB1", "A2", "B3"] {
        net.send(publ, Message::multipart([topic, "body"])).unwrap();
    }
    net.run_for(MS10);
    assert_eq!(
        drain(&mut net, all),
        [b"AB1".to_vec(), b"A2".to_vec(), b"B3".to_vec()]
    );
    assert_eq!(drain(&mut net, a), [b"AB1".to_vec(), b"A2".to_vec()]);
    // Two matching subscriptions, one copy.
    assert_eq!(drain(&mut net, ab), [b"AB1".to_vec(), b"A2".to_vec()]);
}

#[test]
fn unsubscribe_needs_as_many_as_subscribe() {
    let mut net = Net::new(2);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default(),
        &ep,
        &[b"x", b"x"],
    );
    net.run_for(MS10);
    net.get(sub).unsubscribe(b"x").unwrap();
    net.run_for(MS10);
    net.send(publ, Message::from("x1")).unwrap();
    net.run_for(MS10);
    assert_eq!(drain(&mut net, sub).len(), 1);
    net.get(sub).unsubscribe(b"x").unwrap();
    net.run_for(MS10);
    net.send(publ, Message::from("x2")).unwrap();
    net.run_for(MS10);
    assert!(drain(&mut net, sub).is_empty());
}

#[test]
fn slow_subscriber_loses_messages_without_stalling_others() {
    // test_hwm_pubsub: a PUB with SNDHWM drops for a subscriber that does not read, and the
    // other subscriber gets everything.
    let mut net = Net::new(3);
    let publ = net
        .socket(SocketType::Pub, Options::default().send_hwm(100))
        .unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let fast = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b""]);
    let slow = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default().recv_hwm(100),
        &ep,
        &[b""],
    );
    net.run_for(MS10);
    let body = vec![1u8; 1000];
    let mut fast_got = 0;
    for i in 0..5000u32 {
        let mut m = Message::from(body.clone());
        m.push(i.to_be_bytes().to_vec());
        net.send(publ, m).unwrap();
        fast_got += drain(&mut net, fast).len();
    }
    net.run_for(MS10);
    fast_got += drain(&mut net, fast).len();
    assert_eq!(fast_got, 5000);
    let slow_got = drain(&mut net, slow).len();
    assert!(slow_got < 5000, "the slow one must have lost some");
    assert!(
        slow_got >= 200,
        "it holds at least SNDHWM + RCVHWM: {slow_got}"
    );
    // Memory stayed bounded: the publisher never queued more than SNDHWM per pipe.
    assert!(net.get(publ).pipes().iter().all(|p| p.queued_out() <= 100));
}

#[test]
fn xpub_passes_subscriptions_up_once_unless_verbose() {
    for (verbose, verboser, subs_seen, unsubs_seen) in [
        (false, false, 1, 1),
        (true, false, 2, 1),
        (false, true, 2, 2),
    ] {
        let mut net = Net::new(4);
        let xpub = net
            .socket(
                SocketType::XPub,
                Options::default()
                    .xpub_verbose(verbose)
                    .xpub_verboser(verboser),
            )
            .unwrap();
        let ep = net.bind(xpub, "tcp://*:0").unwrap();
        let s1 = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"A"]);
        let s2 = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"A"]);
        net.run_for(MS10);
        net.get(s1).unsubscribe(b"A").unwrap();
        net.get(s2).unsubscribe(b"A").unwrap();
        net.run_for(MS10);
        let got = drain(&mut net, xpub);
        let subs = got.iter().filter(|m| m == &&b"\x01A".to_vec()).count();
        let unsubs = got.iter().filter(|m| m == &&b"\x00A".to_vec()).count();
        assert_eq!(
            (subs, unsubs),
            (subs_seen, unsubs_seen),
            "verbose {verbose} verboser {verboser}: {got:?}"
        );
    }
}

#[test]
fn xpub_reports_unsubscriptions_when_a_subscriber_goes() {
    let mut net = Net::new(5);
    let xpub = net.socket(SocketType::XPub, Options::default()).unwrap();
    let ep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"T"]);
    net.run_for(MS10);
    assert_eq!(drain(&mut net, xpub), [b"\x01T".to_vec()]);
    net.close(sub);
    net.run_for(MS10);
    assert_eq!(drain(&mut net, xpub), [b"\x00T".to_vec()]);
}

#[test]
fn xpub_manual_lets_the_application_decide() {
    let mut net = Net::new(6);
    let xpub = net
        .socket(SocketType::XPub, Options::default().xpub_manual(true))
        .unwrap();
    let ep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"A"]);
    net.run_for(MS10);
    assert_eq!(drain(&mut net, xpub), [b"\x01A".to_vec()]);
    // Nothing is subscribed until the application says so — and it says "B" instead.
    net.send(xpub, Message::from("A-msg")).unwrap();
    net.get(xpub).subscribe(b"B").unwrap();
    net.send(xpub, Message::from("B-msg")).unwrap();
    net.run_for(MS10);
    // The SUB filters by its own subscriptions too: it wants A, so B is dropped there.
    assert!(drain(&mut net, sub).is_empty());
    net.get(xpub).subscribe(b"A").unwrap();
    net.send(xpub, Message::from("A-msg2")).unwrap();
    net.run_for(MS10);
    assert_eq!(drain(&mut net, sub), [b"A-msg2".to_vec()]);
}

#[test]
fn xpub_welcome_message_reaches_each_new_subscriber() {
    let mut net = Net::new(7);
    let xpub = net
        .socket(
            SocketType::XPub,
            Options::default().xpub_welcome_msg(Some(Bytes::from_static(b"W"))),
        )
        .unwrap();
    let ep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(&mut net, SocketType::Sub, Options::default(), &ep, &[b"W"]);
    net.run_for(MS10);
    assert_eq!(drain(&mut net, xpub), [b"\x01W".to_vec()]);
    assert_eq!(drain(&mut net, sub), [b"W".to_vec()]);
}

#[test]
fn xpub_nodrop_makes_send_would_block() {
    let mut net = Net::new(8);
    let xpub = net
        .socket(
            SocketType::XPub,
            Options::default().xpub_nodrop(true).send_hwm(10),
        )
        .unwrap();
    let ep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default().recv_hwm(10),
        &ep,
        &[b""],
    );
    net.run_for(MS10);
    drain(&mut net, xpub);
    let mut sent = 0;
    loop {
        match net.send(xpub, Message::from(vec![0u8; 20_000])) {
            Ok(()) => sent += 1,
            Err(SendError::WouldBlock(_)) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(sent < 10_000);
    }
    assert!(!net.get(xpub).can_send());
    // Nothing was dropped: the subscriber gets every one.
    net.run_for(MS10);
    let mut got = 0;
    loop {
        let n = drain(&mut net, sub).len();
        if n == 0 {
            break;
        }
        got += n;
        net.run_for(MS10);
    }
    assert_eq!(got, sent);
}

#[test]
fn xsub_forwards_only_the_last_unsubscribe_unless_verbose() {
    for (verbose, expected) in [(false, 1), (true, 2)] {
        let mut net = Net::new(9);
        let xpub = net
            .socket(SocketType::XPub, Options::default().xpub_verboser(true))
            .unwrap();
        let ep = net.bind(xpub, "tcp://*:0").unwrap();
        let xsub = net
            .socket(
                SocketType::XSub,
                Options::default().xsub_verbose_unsubscribe(verbose),
            )
            .unwrap();
        net.connect(xsub, &ep).unwrap();
        net.run_for(MS10);
        for m in ["\x01A", "\x01A", "\x00A", "\x00A"] {
            net.send(xsub, Message::from(m)).unwrap();
        }
        net.run_for(MS10);
        let got = drain(&mut net, xpub);
        let unsubs = got.iter().filter(|m| m[0] == 0).count();
        assert_eq!(unsubs, expected, "verbose {verbose}: {got:?}");
        assert_eq!(got.iter().filter(|m| m[0] == 1).count(), 2);
    }
}

#[test]
fn topics_across_the_short_long_frame_boundary() {
    // "SUBSCRIBE" plus a 246-byte topic needs a long command frame; 245 fits a short one.
    for len in [245usize, 246] {
        let mut net = Net::new(10);
        let xpub = net.socket(SocketType::XPub, Options::default()).unwrap();
        let ep = net.bind(xpub, "tcp://*:0").unwrap();
        let topic = vec![b'T'; len];
        let sub = subscriber(
            &mut net,
            SocketType::Sub,
            Options::default(),
            &ep,
            &[&topic],
        );
        net.run_for(MS10);
        let mut want = vec![1u8];
        want.extend_from_slice(&topic);
        assert_eq!(drain(&mut net, xpub), [want]);
        let mut body = topic.clone();
        body.extend_from_slice(b"-payload");
        net.send(xpub, Message::from(body.clone())).unwrap();
        net.run_for(MS10);
        assert_eq!(drain(&mut net, sub), [body]);
    }
}

#[test]
fn invert_matching_on_both_sides() {
    let mut net = Net::new(11);
    let publ = net
        .socket(SocketType::Pub, Options::default().invert_matching(true))
        .unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default().invert_matching(true),
        &ep,
        &[b"prefix"],
    );
    net.run_for(MS10);
    net.send(publ, Message::from("prefix-match")).unwrap();
    net.send(publ, Message::from("other")).unwrap();
    net.run_for(MS10);
    assert_eq!(drain(&mut net, sub), [b"other".to_vec()]);
}

#[test]
fn xpub_xsub_proxy_forwards_subscriptions_and_messages() {
    // test_sub_forward: PUB → XSUB | XPUB → SUB, with the proxy loop done by hand.
    let mut net = Net::new(12);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let pub_ep = net.bind(publ, "tcp://*:0").unwrap();
    let xsub = net.socket(SocketType::XSub, Options::default()).unwrap();
    net.connect(xsub, &pub_ep).unwrap();
    let xpub = net.socket(SocketType::XPub, Options::default()).unwrap();
    let xpub_ep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default(),
        &xpub_ep,
        &[b""],
    );
    net.run_for(MS10);
    let proxy = |net: &mut Net| {
        for _ in 0..3 {
            while let Ok(m) = net.recv(xpub) {
                net.send(xsub, m).unwrap();
            }
            while let Ok(m) = net.recv(xsub) {
                net.send(xpub, m).unwrap();
            }
            net.run_for(MS10);
        }
    };
    proxy(&mut net);
    net.send(publ, Message::multipart(["topic", "data"]))
        .unwrap();
    net.run_for(MS10);
    proxy(&mut net);
    let got = net.recv(sub).unwrap();
    assert_eq!(got, Message::multipart(["topic", "data"]));
}

#[test]
fn subscriptions_are_replayed_after_a_reconnect() {
    let mut net = Net::new(13);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default(),
        &ep,
        &[b"A", b"B"],
    );
    net.run_for(MS10);
    net.kill_connections(publ);
    // Reconnects after RECONNECT_IVL (100 ms + jitter below 100 ms).
    net.run_for(Duration::from_millis(300));
    for t in ["A1", "B1", "C1"] {
        net.send(publ, Message::from(t)).unwrap();
    }
    net.run_for(MS10);
    assert_eq!(drain(&mut net, sub), [b"A1".to_vec(), b"B1".to_vec()]);
}

#[test]
fn pub_cannot_receive_and_sub_cannot_send() {
    let mut net = Net::new(14);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let sub = net.socket(SocketType::Sub, Options::default()).unwrap();
    assert_eq!(net.recv(publ), Err(RecvError::NotSupported));
    assert!(matches!(
        net.send(sub, Message::from("x")),
        Err(SendError::NotSupported(_))
    ));
    assert!(net.get(publ).subscribe(b"x").is_err());
}

#[test]
fn conflate_on_sub_keeps_the_latest() {
    let mut net = Net::new(15);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default().conflate(true),
        &ep,
        &[b""],
    );
    net.run_for(MS10);
    for i in 0..20 {
        net.send(publ, Message::from(format!("{i}"))).unwrap();
    }
    net.run_for(MS10);
    assert_eq!(drain(&mut net, sub), [b"19".to_vec()]);
}

/// TOPICS_COUNT through the socket, for each type with topics: a subscriber counts its own
/// distinct topics, a publisher those its peers hold; a type without topics has none.
#[test]
fn topics_count_for_each_type() {
    let mut net = Net::new(40);
    let publ = net.socket(SocketType::Pub, Options::default()).unwrap();
    let ep = net.bind(publ, "tcp://*:0").unwrap();
    let xpub = net.socket(SocketType::XPub, Options::default()).unwrap();
    let xep = net.bind(xpub, "tcp://*:0").unwrap();
    let sub = subscriber(
        &mut net,
        SocketType::Sub,
        Options::default(),
        &ep,
        &[b"a", b"b", b"a"],
    );
    let xsub = net.socket(SocketType::XSub, Options::default()).unwrap();
    net.connect(xsub, &xep).unwrap();
    for m in ["\x01x", "\x01y", "\x01z", "\x00y"] {
        net.send(xsub, Message::from(m)).unwrap();
    }
    net.run_for(MS10);
    assert_eq!(net.get(sub).topics_count(), Some(2));
    assert_eq!(net.get(publ).topics_count(), Some(2));
    assert_eq!(net.get(xsub).topics_count(), Some(2));
    assert_eq!(net.get(xpub).topics_count(), Some(2));
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    assert_eq!(net.get(push).topics_count(), None);
}
