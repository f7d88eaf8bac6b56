//! ROUTER_NOTIFY, HELLO_MSG, DISCONNECT_MSG and HICCUP_MSG on the simulated network, with the
//! exact messages libzmq's test_router_notify, test_hello_msg, test_disconnect_msg and
//! test_hiccup_msg expect.

use std::time::Duration;

use bytes::Bytes;
use omq_core::options::{OptionName, RouterNotify};
use omq_core::simnet::{Net, SockId};
use omq_core::{Message, Options, RecvError, SocketOption, SocketType};

const MS10: Duration = Duration::from_millis(10);

fn text(msg: &Message) -> Vec<String> {
    msg.parts()
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

fn drain(net: &mut Net, s: SockId) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    while let Ok(m) = net.recv(s) {
        out.push(text(&m));
    }
    out
}

fn dealer(id: &'static [u8], o: Options) -> Options {
    o.routing_id(Bytes::from_static(id))
}

fn notify(connect: bool, disconnect: bool) -> RouterNotify {
    RouterNotify {
        connect,
        disconnect,
    }
}

#[test]
fn router_notify_reports_each_peer_arriving_and_leaving_as_an_empty_message() {
    for (connect, disconnect) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut net = Net::new(1);
        let router = net
            .socket(
                SocketType::Router,
                Options::default().router_notify(notify(connect, disconnect)),
            )
            .unwrap();
        let ep = net.bind(router, "tcp://*:0").unwrap();
        let d = net
            .socket(SocketType::Dealer, dealer(b"D", Options::default()))
            .unwrap();
        net.connect(d, &ep).unwrap();
        net.run_for(MS10);
        let mut want: Vec<Vec<String>> = Vec::new();
        if connect {
            want.push(vec!["D".into(), "".into()]);
        }
        assert_eq!(
            drain(&mut net, router),
            want,
            "{connect} {disconnect} on connect"
        );
        // What the peer sent before it left comes before the notice of its leaving.
        net.send(d, Message::from("last words")).unwrap();
        net.run_for(MS10);
        net.close(d);
        net.run_for(MS10);
        let mut want = vec![vec!["D".to_string(), "last words".into()]];
        if disconnect {
            want.push(vec!["D".into(), "".into()]);
        }
        assert_eq!(
            drain(&mut net, router),
            want,
            "{connect} {disconnect} on leaving"
        );
    }
}

#[test]
fn router_notify_ignores_inproc_peers() {
    let mut net = Net::new(2);
    let router = net
        .socket(
            SocketType::Router,
            Options::default().router_notify(notify(true, true)),
        )
        .unwrap();
    net.bind(router, "inproc://notify").unwrap();
    let d = net
        .socket(SocketType::Dealer, dealer(b"D", Options::default()))
        .unwrap();
    net.connect(d, "inproc://notify").unwrap();
    net.run_for(MS10);
    net.close(d);
    net.run_for(MS10);
    assert_eq!(net.recv(router), Err(RecvError::WouldBlock));
}

#[test]
fn router_notify_is_libzmqs_bit_set_and_only_for_a_router() {
    assert_eq!(RouterNotify::from_bits(3), Some(notify(true, true)));
    assert_eq!(RouterNotify::from_bits(2), Some(notify(false, true)));
    assert_eq!(RouterNotify::from_bits(4), None);
    assert_eq!(notify(true, false).bits(), 1);
    for (name, value, ok_for) in [
        (
            OptionName::RouterNotify,
            SocketOption::RouterNotify(notify(true, true)),
            &[SocketType::Router][..],
        ),
        (
            OptionName::HelloMsg,
            SocketOption::HelloMsg(Some(Bytes::from_static(b"hi"))),
            &[SocketType::Router, SocketType::Dealer][..],
        ),
        (
            OptionName::DisconnectMsg,
            SocketOption::DisconnectMsg(Some(Bytes::from_static(b"bye"))),
            &[SocketType::Router][..],
        ),
        (
            OptionName::HiccupMsg,
            SocketOption::HiccupMsg(Some(Bytes::from_static(b"hic"))),
            &[SocketType::Dealer][..],
        ),
    ] {
        for t in [
            SocketType::Router,
            SocketType::Dealer,
            SocketType::Push,
            SocketType::Sub,
            SocketType::Req,
        ] {
            let mut net = Net::new(3);
            let s = net.socket(t, Options::default()).unwrap();
            let r = net.get(s).set_option(value.clone());
            assert_eq!(r.is_ok(), ok_for.contains(&t), "{name} on {t}: {r:?}");
            assert_eq!(name.applies_to(t), ok_for.contains(&t));
        }
    }
}

#[test]
fn hello_msg_goes_first_on_every_connection_of_both_sides() {
    let mut net = Net::new(4);
    let d = net
        .socket(
            SocketType::Dealer,
            dealer(
                b"D",
                Options::default().hello_msg(Some(Bytes::from_static(b"H-dealer"))),
            ),
        )
        .unwrap();
    // Queued before the peer is there: the hello still goes first.
    let ep = "tcp://127.0.0.1:7001";
    net.connect(d, ep).unwrap();
    net.send(d, Message::from("queued")).unwrap();
    net.run_for(MS10);
    let router = net
        .socket(
            SocketType::Router,
            Options::default().hello_msg(Some(Bytes::from_static(b"H-router"))),
        )
        .unwrap();
    net.bind(router, ep).unwrap();
    net.run_for(Duration::from_millis(500));
    assert_eq!(
        drain(&mut net, router),
        [vec!["D", "H-dealer"], vec!["D", "queued"]]
    );
    assert_eq!(drain(&mut net, d), [vec!["H-router"]]);
    // A new connection after the old one dropped says hello again, both ways.
    net.kill_connections(d);
    net.run_for(Duration::from_millis(500));
    assert_eq!(drain(&mut net, router), [vec!["D", "H-dealer"]]);
    assert_eq!(drain(&mut net, d), [vec!["H-router"]]);
}

#[test]
fn an_empty_hello_msg_turns_it_off() {
    let mut net = Net::new(5);
    let router = net.socket(SocketType::Router, Options::default()).unwrap();
    let ep = net.bind(router, "tcp://*:0").unwrap();
    let d = net
        .socket(
            SocketType::Dealer,
            dealer(
                b"D",
                Options::default()
                    .hello_msg(Some(Bytes::from_static(b"H")))
                    .hello_msg(Some(Bytes::new())),
            ),
        )
        .unwrap();
    net.connect(d, &ep).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(router), Err(RecvError::WouldBlock));
}

#[test]
fn disconnect_msg_arrives_from_the_peer_that_left_and_never_on_the_wire() {
    for endpoint in ["tcp://*:0", "inproc://disconnect-msg"] {
        let mut net = Net::new(6);
        let router = net
            .socket(
                SocketType::Router,
                Options::default().disconnect_msg(Some(Bytes::from_static(b"gone"))),
            )
            .unwrap();
        let ep = net.bind(router, endpoint).unwrap();
        let a = net
            .socket(SocketType::Dealer, dealer(b"A", Options::default()))
            .unwrap();
        let b = net
            .socket(SocketType::Dealer, dealer(b"B", Options::default()))
            .unwrap();
        net.connect(a, &ep).unwrap();
        net.connect(b, &ep).unwrap();
        net.run_for(MS10);
        net.send(router, Message::multipart(["B", "to b"])).unwrap();
        net.close(a);
        net.run_for(MS10);
        assert_eq!(drain(&mut net, router), [vec!["A", "gone"]], "{endpoint}");
        assert_eq!(drain(&mut net, b), [vec!["to b"]], "{endpoint}");
    }
}

#[test]
fn hiccup_msg_is_received_when_a_connection_drops_and_is_redialled() {
    let mut net = Net::new(7);
    let router = net.socket(SocketType::Router, Options::default()).unwrap();
    let ep = net.bind(router, "tcp://*:0").unwrap();
    let d = net
        .socket(
            SocketType::Dealer,
            dealer(
                b"D",
                Options::default().hiccup_msg(Some(Bytes::from_static(b"hiccup"))),
            ),
        )
        .unwrap();
    net.connect(d, &ep).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(d), Err(RecvError::WouldBlock));
    net.kill_connections(router);
    net.run_for(MS10);
    assert_eq!(drain(&mut net, d), [vec!["hiccup"]]);
    // It reconnects, and the router never saw the hiccup.
    net.run_for(Duration::from_millis(500));
    net.send(d, Message::from("back")).unwrap();
    net.run_for(MS10);
    assert_eq!(drain(&mut net, router), [vec!["D", "back"]]);
    // IMMEDIATE: the pipe dies with its connection, so there is no hiccup (libzmq has no pipe
    // left to put it in either).
    let d2 = net
        .socket(
            SocketType::Dealer,
            dealer(
                b"E",
                Options::default()
                    .immediate(true)
                    .hiccup_msg(Some(Bytes::from_static(b"hiccup"))),
            ),
        )
        .unwrap();
    net.connect(d2, &ep).unwrap();
    net.run_for(MS10);
    net.kill_connections(router);
    net.run_for(MS10);
    assert_eq!(net.recv(d2), Err(RecvError::WouldBlock));
}
