//! A received message carries its peer's properties (libzmq's `zmq_msg_gets`), whether the
//! session stamps them as it decodes or the socket as the message is read (what a
//! multi-threaded driver asks for: `Connection::leave_properties_to_reader`).

use std::time::Duration;

use bytes::Bytes;
use omq_core::simnet::Net;
use omq_core::{Message, Options, SessionConfig, SocketType};

/// A ROUTER, a DEALER (routing id "d1", property X-App) and a REP/REQ pair over simulated tcp,
/// with properties stamped where `at_read` says; returns what each receiver got.
fn received(at_read: bool) -> (Message, Message, Message) {
    let mut net = Net::new(7);
    net.properties_at_read = at_read;
    let router = net.socket(SocketType::Router, Options::default()).unwrap();
    let ep = net.bind(router, "tcp://*:0").unwrap();
    let o = Options::default()
        .routing_id(Bytes::from_static(b"d1"))
        .metadata("X-App", Bytes::from_static(b"demo"));
    let dealer = net.socket(SocketType::Dealer, o).unwrap();
    net.connect(dealer, &ep).unwrap();
    let rep = net.socket(SocketType::Rep, Options::default()).unwrap();
    let ep2 = net.bind(rep, "tcp://*:0").unwrap();
    let req = net.socket(SocketType::Req, Options::default()).unwrap();
    net.connect(req, &ep2).unwrap();
    net.run_for(Duration::from_millis(10));

    net.send(dealer, Message::multipart(["a", "b"])).unwrap();
    net.send(req, Message::from("q")).unwrap();
    net.run_for(Duration::from_millis(10));
    let at_router = net.recv(router).unwrap();
    let at_rep = net.recv(rep).unwrap();
    net.send(router, Message::multipart(["d1", "back"]))
        .unwrap();
    net.send(rep, Message::from("r")).unwrap();
    net.run_for(Duration::from_millis(10));
    let at_dealer = net.recv(dealer).unwrap();
    assert_eq!(net.recv(req).unwrap(), Message::from("r"));
    (at_router, at_rep, at_dealer)
}

#[test]
fn received_messages_carry_the_peers_properties_wherever_they_are_stamped() {
    for at_read in [false, true] {
        let (at_router, at_rep, at_dealer) = received(at_read);
        assert_eq!(at_router, Message::multipart(["d1", "a", "b"]), "{at_read}");
        assert_eq!(
            at_router.property("Socket-Type"),
            Some(&b"DEALER"[..]),
            "{at_read}"
        );
        assert_eq!(
            at_router.property("Identity"),
            Some(&b"d1"[..]),
            "{at_read}"
        );
        assert_eq!(at_router.property("X-App"), Some(&b"demo"[..]), "{at_read}");
        // REP hands over the body without its envelope, properties kept.
        assert_eq!(at_rep, Message::from("q"), "{at_read}");
        assert_eq!(
            at_rep.property("Socket-Type"),
            Some(&b"REQ"[..]),
            "{at_read}"
        );
        assert_eq!(
            at_dealer.property("Socket-Type"),
            Some(&b"ROUTER"[..]),
            "{at_read}"
        );
    }
}

#[test]
fn a_session_left_to_its_reader_decodes_messages_without_properties() {
    let mut p = omq_core::sim::Pair::new(
        SessionConfig::new(SocketType::Dealer),
        SessionConfig::new(SocketType::Router),
    );
    p.drive();
    p.b.session.leave_properties_to_reader();
    p.a.session.send_message(&Message::from("x")).unwrap();
    p.drive();
    let got = p.b.messages();
    assert_eq!(got, vec![Message::from("x")]);
    assert!(got[0].metadata().is_none());
}

/// Where the socket attaches the properties, an in-process link gets none (its messages never
/// crossed a connection; libzmq's carry none either).
#[test]
fn messages_over_an_in_process_link_get_no_properties_from_the_socket() {
    let mut net = Net::new(8);
    net.properties_at_read = true;
    let pull = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.bind(pull, "inproc://properties").unwrap();
    let push = net.socket(SocketType::Push, Options::default()).unwrap();
    net.connect(push, "inproc://properties").unwrap();
    net.run_for(Duration::from_millis(10));
    net.send(push, Message::from("in")).unwrap();
    net.run_for(Duration::from_millis(10));
    let m = net.recv(pull).unwrap();
    assert_eq!(m, Message::from("in"));
    assert!(m.metadata().is_none());
}

/// ROUTER_NOTIFY's and DISCONNECT_MSG's notices are the socket's own messages: they carry no
/// properties (libzmq's engine pushes them bare), wherever the peer's are attached, while what
/// the peer sent between them carries its own.
#[test]
fn a_routers_notices_carry_no_properties_wherever_they_are_stamped() {
    use omq_core::options::RouterNotify;
    for at_read in [false, true] {
        let mut net = Net::new(9);
        net.properties_at_read = at_read;
        let o = Options::default()
            .router_notify(RouterNotify {
                connect: true,
                disconnect: true,
            })
            .disconnect_msg(Some(Bytes::from_static(b"gone")));
        let router = net.socket(SocketType::Router, o).unwrap();
        let ep = net.bind(router, "tcp://*:0").unwrap();
        let o = Options::default().routing_id(Bytes::from_static(b"d"));
        let dealer = net.socket(SocketType::Dealer, o).unwrap();
        net.connect(dealer, &ep).unwrap();
        net.run_for(Duration::from_millis(10));
        net.send(dealer, Message::from("hi")).unwrap();
        net.run_for(Duration::from_millis(10));
        net.close(dealer);
        net.run_for(Duration::from_millis(10));
        let mut got = Vec::new();
        while let Ok(m) = net.recv(router) {
            got.push(m);
        }
        let bodies: Vec<_> = got.iter().map(|m| m.get(1).unwrap().to_vec()).collect();
        assert_eq!(bodies, [&b""[..], b"hi", b"", b"gone"], "{at_read}");
        for (m, body) in got.iter().zip(&bodies) {
            let want = (body == b"hi").then_some(&b"DEALER"[..]);
            assert_eq!(m.property("Socket-Type"), want, "{at_read} {body:?}");
        }
    }
}
