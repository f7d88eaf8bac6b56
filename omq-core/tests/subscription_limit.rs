//! MAX_SUBSCRIPTIONS on the simulated network: a PUB, XPUB or RADIO disconnects a peer that
//! holds more topics (groups) than allowed, counts what the peer holds (not what it sent:
//! duplicates and cancels are followed), and frees the peer's subscriptions with it.

use std::time::Duration;

use omq_core::monitor::EventKind;
use omq_core::options::OptionName;
use omq_core::simnet::{Net, SockId};
use omq_core::socket::CloseReason;
use omq_core::{LimitError, Message, Options, SessionError, SocketType};

const MS10: Duration = Duration::from_millis(10);

/// The causes of the DISCONNECTED events seen on `s` so far.
fn disconnects(net: &mut Net, s: SockId) -> Vec<Option<CloseReason>> {
    net.events(s)
        .into_iter()
        .filter(|e| e.kind == EventKind::Disconnected)
        .map(|e| e.cause)
        .collect()
}

fn is_over_limit(cause: &Option<CloseReason>, max: usize) -> bool {
    matches!(
        cause,
        Some(CloseReason::Session(SessionError::Limit(
            LimitError::TooManySubscriptions { max: m }
        ))) if *m == max
    )
}

fn publisher(net: &mut Net, t: SocketType, max: usize) -> (SockId, String) {
    let s = net
        .socket(t, Options::default().max_subscriptions(max))
        .unwrap();
    net.monitor(s);
    let ep = net.bind(s, "tcp://*:0").unwrap();
    (s, ep)
}

#[test]
fn a_subscriber_within_the_limit_is_served_and_one_past_it_is_disconnected() {
    for t in [SocketType::Pub, SocketType::XPub] {
        let mut net = Net::new(7);
        let (publ, ep) = publisher(&mut net, t, 3);
        let sub = net.socket(SocketType::Sub, Options::default()).unwrap();
        net.connect(sub, &ep).unwrap();
        for topic in ["a", "b", "c"] {
            net.get(sub).subscribe(topic.as_bytes()).unwrap();
        }
        net.run_for(MS10);
        // A cancel gives the room back: three held again after "d".
        net.get(sub).unsubscribe(b"c").unwrap();
        net.get(sub).subscribe(b"d").unwrap();
        net.run_for(MS10);
        net.send(publ, Message::from("d1")).unwrap();
        net.run_for(MS10);
        assert_eq!(net.recv(sub).unwrap(), Message::from("d1"), "{t:?}");
        assert!(disconnects(&mut net, publ).is_empty(), "{t:?}");

        net.get(sub).subscribe(b"e").unwrap();
        net.run_for(MS10);
        let seen = disconnects(&mut net, publ);
        assert_eq!(seen.len(), 1, "{t:?}: {seen:?}");
        assert!(is_over_limit(&seen[0], 3), "{t:?}: {seen:?}");
        // The peer's topics left with it: nothing goes out until a subscriber is back.
        net.send(publ, Message::from("d2")).unwrap();
        net.run_for(Duration::from_millis(1));
        assert!(net.recv(sub).is_err(), "{t:?}");
    }
}

#[test]
fn duplicates_from_one_peer_count_once() {
    let mut net = Net::new(8);
    let (publ, ep) = publisher(&mut net, SocketType::XPub, 2);
    let sub = net.socket(SocketType::XSub, Options::default()).unwrap();
    net.connect(sub, &ep).unwrap();
    net.run_for(MS10);
    // XSUB sends every subscription as written, so the PUB sees "a" three times.
    for topic in ["a", "a", "a", "b"] {
        let mut body = vec![1u8];
        body.extend_from_slice(topic.as_bytes());
        net.send(sub, Message::from(body)).unwrap();
    }
    net.run_for(MS10);
    assert!(disconnects(&mut net, publ).is_empty());
    net.send(sub, Message::from(&b"\x01c"[..])).unwrap();
    net.run_for(MS10);
    let seen = disconnects(&mut net, publ);
    assert!(is_over_limit(&seen[0], 2), "{seen:?}");
}

#[test]
fn each_peer_has_its_own_count_and_the_default_is_no_limit() {
    let mut net = Net::new(9);
    let (publ, ep) = publisher(&mut net, SocketType::Pub, 2);
    let subs: Vec<SockId> = (0..3)
        .map(|_| net.socket(SocketType::Sub, Options::default()).unwrap())
        .collect();
    for (i, &s) in subs.iter().enumerate() {
        net.connect(s, &ep).unwrap();
        // Six distinct topics among the three, two each: within every peer's limit.
        for j in 0..2 {
            net.get(s).subscribe(format!("t{i}{j}").as_bytes()).unwrap();
        }
    }
    net.run_for(MS10);
    assert!(disconnects(&mut net, publ).is_empty());

    let (unlimited, ep) = publisher(&mut net, SocketType::Pub, 0);
    let sub = net.socket(SocketType::Sub, Options::default()).unwrap();
    net.connect(sub, &ep).unwrap();
    for i in 0..2_000 {
        net.get(sub).subscribe(format!("{i}").as_bytes()).unwrap();
    }
    net.run_for(Duration::from_millis(100));
    net.send(unlimited, Message::from("1999!")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(sub).unwrap(), Message::from("1999!"));
    assert!(disconnects(&mut net, unlimited).is_empty());
}

#[test]
fn a_dish_joining_past_the_limit_is_disconnected() {
    let mut net = Net::new(10);
    let (radio, ep) = publisher(&mut net, SocketType::Radio, 2);
    let dish = net.socket(SocketType::Dish, Options::default()).unwrap();
    net.connect(dish, &ep).unwrap();
    net.get(dish).join(b"g1").unwrap();
    net.get(dish).join(b"g2").unwrap();
    net.run_for(MS10);
    net.get(dish).leave(b"g2").unwrap();
    net.get(dish).join(b"g3").unwrap();
    net.run_for(MS10);
    net.send(radio, Message::from("hi").with_group("g3"))
        .unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(dish).unwrap(), Message::from("hi"));
    assert!(disconnects(&mut net, radio).is_empty());

    net.get(dish).join(b"g4").unwrap();
    net.run_for(MS10);
    let seen = disconnects(&mut net, radio);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(is_over_limit(&seen[0], 2), "{seen:?}");
}

#[test]
fn the_option_belongs_to_the_sending_side_of_subscriptions() {
    let mut net = Net::new(11);
    for t in [SocketType::Pub, SocketType::XPub, SocketType::Radio] {
        assert!(OptionName::MaxSubscriptions.applies_to(t), "{t:?}");
        net.socket(t, Options::default().max_subscriptions(5))
            .unwrap();
    }
    for t in [
        SocketType::Sub,
        SocketType::XSub,
        SocketType::Dish,
        SocketType::Router,
    ] {
        assert!(!OptionName::MaxSubscriptions.applies_to(t), "{t:?}");
        assert!(
            net.socket(t, Options::default().max_subscriptions(5))
                .is_err(),
            "{t:?}"
        );
    }
}
