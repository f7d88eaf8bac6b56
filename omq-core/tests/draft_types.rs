//! The draft socket types on the simulated network, with exact counts: CLIENT/SERVER (spec 41),
//! SCATTER/GATHER (spec 49), PEER (spec 51) and CHANNEL (spec 52).

use std::time::{Duration, Instant};

use bytes::Bytes;
use omq_core::simnet::{Net, SockId};
use omq_core::{Action, Message, Options, PeerInfo, RecvError, SendError, Socket, SocketType};

const MS10: Duration = Duration::from_millis(10);

fn text(m: &Message) -> String {
    assert_eq!(m.len(), 1, "single-part types deliver single parts");
    String::from_utf8_lossy(&m.parts()[0]).into_owned()
}

fn bound(net: &mut Net, t: SocketType, o: Options) -> (SockId, String) {
    let s = net.socket(t, o).unwrap();
    let ep = net.bind(s, "tcp://*:0").unwrap();
    (s, ep)
}

fn connected(net: &mut Net, t: SocketType, o: Options, ep: &str) -> SockId {
    let s = net.socket(t, o).unwrap();
    net.connect(s, ep).unwrap();
    s
}

#[test]
fn a_server_replies_to_each_client_by_the_routing_id_its_request_came_with() {
    let mut net = Net::new(1);
    let (server, ep) = bound(&mut net, SocketType::Server, Options::default());
    let clients: Vec<SockId> = (0..3)
        .map(|_| connected(&mut net, SocketType::Client, Options::default(), &ep))
        .collect();
    net.run_for(MS10);
    for (i, &c) in clients.iter().enumerate() {
        net.send(c, Message::from(format!("ask {i}"))).unwrap();
    }
    net.run_for(MS10);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let m = net.recv(server).unwrap();
        let id = m
            .routing_id()
            .expect("a SERVER message carries its peer's id");
        let who = text(&m);
        ids.push(id);
        net.send(
            server,
            Message::from(format!("re: {who}")).with_routing_id(id),
        )
        .unwrap();
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "one id per client");
    net.run_for(MS10);
    for (i, &c) in clients.iter().enumerate() {
        let m = net.recv(c).unwrap();
        assert_eq!(text(&m), format!("re: ask {i}"));
        assert_eq!(m.routing_id(), None, "a CLIENT message has no routing id");
        assert_eq!(net.recv(c), Err(RecvError::WouldBlock));
    }
    // Wrong sends are refused, not lost silently.
    assert!(matches!(
        net.send(server, Message::from("x").with_routing_id(ids[0] ^ 0x5555)),
        Err(SendError::HostUnreachable(_))
    ));
    assert!(matches!(
        net.send(clients[0], Message::multipart(["a", "b"])),
        Err(SendError::InvalidMessage(..))
    ));
}

#[test]
fn a_server_at_a_clients_sndhwm_says_would_block_and_loses_nothing() {
    let now = Instant::now();
    let mut s = Socket::new(SocketType::Server, Options::default().send_hwm(3), 9).unwrap();
    s.connect("tcp://127.0.0.1:1000", now).unwrap();
    let mut pipe = None;
    while let Some(a) = s.poll_action() {
        if let Action::Dial { pipe: p, .. } = a {
            s.handle_connected(p, now).unwrap();
            s.handle_ready(p, PeerInfo::new(SocketType::Client), now);
            pipe = Some(p);
        }
    }
    let pipe = pipe.unwrap();
    s.handle_message(pipe, Message::from("hello")).unwrap();
    let id = s.recv().unwrap().routing_id().unwrap();
    let mut sent = 0;
    while s
        .send(Message::from(format!("{sent}")).with_routing_id(id))
        .is_ok()
    {
        sent += 1;
        assert!(sent < 100);
    }
    assert_eq!(sent, 3, "SNDHWM, exactly");
    assert!(matches!(
        s.send(Message::from("more").with_routing_id(id)),
        Err(SendError::WouldBlock(m)) if text(&m) == "more"
    ));
}

#[test]
fn scatter_round_robins_and_gather_fair_queues() {
    let mut net = Net::new(3);
    let (gather_a, ep_a) = bound(&mut net, SocketType::Gather, Options::default());
    let (gather_b, ep_b) = bound(&mut net, SocketType::Gather, Options::default());
    let scatter = net.socket(SocketType::Scatter, Options::default()).unwrap();
    net.connect(scatter, &ep_a).unwrap();
    net.connect(scatter, &ep_b).unwrap();
    net.run_for(MS10);
    for i in 0..10 {
        net.send(scatter, Message::from(format!("{i}"))).unwrap();
    }
    net.run_for(MS10);
    let drain = |net: &mut Net, s| {
        std::iter::from_fn(|| net.recv(s).ok())
            .map(|m| text(&m))
            .collect::<Vec<_>>()
    };
    assert_eq!(drain(&mut net, gather_a), ["0", "2", "4", "6", "8"]);
    assert_eq!(drain(&mut net, gather_b), ["1", "3", "5", "7", "9"]);
    assert!(matches!(
        net.send(scatter, Message::multipart(["a", "b"])),
        Err(SendError::InvalidMessage(..))
    ));

    // Fair queueing: two scatterers, one message each in turn.
    let (gather, ep) = bound(&mut net, SocketType::Gather, Options::default());
    let s1 = connected(&mut net, SocketType::Scatter, Options::default(), &ep);
    let s2 = connected(&mut net, SocketType::Scatter, Options::default(), &ep);
    net.run_for(MS10);
    for i in 0..3 {
        net.send(s1, Message::from(format!("one-{i}"))).unwrap();
        net.send(s2, Message::from(format!("two-{i}"))).unwrap();
    }
    net.run_for(MS10);
    let got = drain(&mut net, gather);
    assert_eq!(got.len(), 6);
    for pair in got.chunks(2) {
        assert_ne!(pair[0][..3], pair[1][..3], "alternating: {got:?}");
    }
}

#[test]
fn a_channel_has_one_peer() {
    let mut net = Net::new(4);
    let (a, ep) = bound(&mut net, SocketType::Channel, Options::default());
    let b = connected(&mut net, SocketType::Channel, Options::default(), &ep);
    net.run_for(MS10);
    let c = connected(&mut net, SocketType::Channel, Options::default(), &ep);
    net.run_for(MS10);
    net.send(a, Message::from("to the one")).unwrap();
    net.run_for(MS10);
    assert_eq!(text(&net.recv(b).unwrap()), "to the one");
    assert_eq!(net.recv(c), Err(RecvError::WouldBlock));
    net.send(b, Message::from("back")).unwrap();
    net.run_for(MS10);
    assert_eq!(text(&net.recv(a).unwrap()), "back");
    assert!(matches!(
        net.send(a, Message::multipart(["a", "b"])),
        Err(SendError::InvalidMessage(..))
    ));
}

#[test]
fn peers_address_each_other_by_the_id_connect_peer_gave_and_keep_it_across_reconnects() {
    let mut net = Net::new(5);
    let (b, ep) = bound(&mut net, SocketType::Peer, Options::default());
    let a = net.socket(SocketType::Peer, Options::default()).unwrap();
    let to_b = net.get(a).connect_peer(&ep, net_now()).unwrap();
    // The pipe exists at once: a message may be sent before the connection is up.
    net.send(a, Message::from("early").with_routing_id(to_b))
        .unwrap();
    net.run_for(MS10);
    let m = net.recv(b).unwrap();
    assert_eq!(text(&m), "early");
    let to_a = m.routing_id().unwrap();
    net.send(b, Message::from("reply").with_routing_id(to_a))
        .unwrap();
    net.run_for(MS10);
    let m = net.recv(a).unwrap();
    assert_eq!((text(&m), m.routing_id()), ("reply".into(), Some(to_b)));
    // The connection drops and comes back: the connecting side's id for b is unchanged.
    net.kill_connections(b);
    net.run_for(Duration::from_millis(500));
    net.send(a, Message::from("again").with_routing_id(to_b))
        .unwrap();
    net.run_for(MS10);
    assert_eq!(text(&net.recv(b).unwrap()), "again");
    // connect_peer is PEER's alone.
    let (srv, _) = bound(&mut net, SocketType::Server, Options::default());
    assert!(net.get(srv).connect_peer(&ep, net_now()).is_err());
    let _ = Bytes::new();
}

/// The simulated network's clock is virtual; connect_peer only uses the time to schedule
/// redials, which the network drives itself.
fn net_now() -> std::time::Instant {
    std::time::Instant::now()
}

#[test]
fn incompatible_peers_never_exchange_a_message() {
    let mut net = Net::new(6);
    let (server, ep) = bound(&mut net, SocketType::Server, Options::default());
    let dealer = connected(&mut net, SocketType::Dealer, Options::default(), &ep);
    net.run_for(MS10);
    net.send(dealer, Message::from("hi")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(server), Err(RecvError::WouldBlock));
}

#[test]
fn server_disconnect_and_hello_messages_carry_the_peers_id() {
    let mut net = Net::new(7);
    let (server, ep) = bound(
        &mut net,
        SocketType::Server,
        Options::default()
            .disconnect_msg(Some(Bytes::from_static(b"gone")))
            .hello_msg(Some(Bytes::from_static(b"welcome"))),
    );
    let client = connected(
        &mut net,
        SocketType::Client,
        Options::default().hello_msg(Some(Bytes::from_static(b"hi"))),
        &ep,
    );
    net.run_for(MS10);
    assert_eq!(text(&net.recv(client).unwrap()), "welcome");
    let hello = net.recv(server).unwrap();
    assert_eq!(text(&hello), "hi");
    net.close(client);
    net.run_for(MS10);
    let gone = net.recv(server).unwrap();
    assert_eq!(
        (text(&gone), gone.routing_id()),
        ("gone".into(), hello.routing_id())
    );
}

#[test]
fn a_dish_gets_its_groups_only_and_rejoins_after_a_reconnection() {
    let mut net = Net::new(8);
    let (radio, ep) = bound(&mut net, SocketType::Radio, Options::default());
    let dish = connected(&mut net, SocketType::Dish, Options::default(), &ep);
    let other = connected(&mut net, SocketType::Dish, Options::default(), &ep);
    net.get(dish).join(b"news").unwrap();
    net.get(other).join(b"weather").unwrap();
    assert!(net.get(dish).join(b"news").is_err(), "joined twice");
    assert!(net.get(dish).leave(b"sports").is_err(), "never joined");
    assert!(net.get(dish).join(&[b'g'; 256]).is_err(), "too long");
    assert!(net.get(radio).join(b"news").is_err(), "RADIO does not join");
    net.run_for(MS10);
    for (g, body) in [
        ("news", "1"),
        ("weather", "2"),
        ("newsy", "3"),
        ("news", "4"),
    ] {
        net.send(radio, Message::from(body).with_group(g)).unwrap();
    }
    net.run_for(MS10);
    let got = |net: &mut Net, s| {
        std::iter::from_fn(|| net.recv(s).ok())
            .map(|m| {
                (
                    String::from_utf8_lossy(m.group().unwrap()).into_owned(),
                    text(&m),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        got(&mut net, dish),
        [
            ("news".to_string(), "1".to_string()),
            ("news".into(), "4".into())
        ]
    );
    assert_eq!(
        got(&mut net, other),
        [("weather".to_string(), "2".to_string())]
    );
    // The connection drops; the dish's groups follow it to the new one.
    net.kill_connections(radio);
    net.run_for(Duration::from_millis(500));
    net.send(radio, Message::from("5").with_group("news"))
        .unwrap();
    net.run_for(MS10);
    assert_eq!(got(&mut net, dish), [("news".to_string(), "5".to_string())]);
    // Left: nothing more.
    net.get(dish).leave(b"news").unwrap();
    net.run_for(MS10);
    net.send(radio, Message::from("6").with_group("news"))
        .unwrap();
    net.run_for(MS10);
    assert!(got(&mut net, dish).is_empty());
    assert!(matches!(
        net.send(radio, Message::from("no group")),
        Err(SendError::InvalidMessage(..))
    ));
}

#[test]
fn stream_sockets_carry_raw_bytes_behind_generated_ids_and_close_on_an_empty_message() {
    let mut net = Net::new(9);
    let (server, ep) = bound(&mut net, SocketType::Stream, Options::default());
    let client = connected(&mut net, SocketType::Stream, Options::default(), &ep);
    net.run_for(MS10);
    let parts = |m: Message| -> (Bytes, Vec<u8>) {
        assert_eq!(m.len(), 2);
        (m.parts()[0].to_bytes(), m.parts()[1].to_vec())
    };
    // Each side hears of the connection as [id][""].
    let (to_client, hello) = parts(net.recv(server).unwrap());
    assert!(hello.is_empty());
    let (to_server, hello) = parts(net.recv(client).unwrap());
    assert!(hello.is_empty());
    assert_eq!((to_client[0], to_client.len()), (0, 5));
    net.send(
        client,
        Message::multipart([to_server.clone(), Bytes::from("GET / HTTP/1.0\r\n\r\n")]),
    )
    .unwrap();
    net.run_for(MS10);
    let mut got = Vec::new();
    while let Ok(m) = net.recv(server) {
        let (id, data) = parts(m);
        assert_eq!(id, to_client);
        got.extend(data);
    }
    assert_eq!(got, b"GET / HTTP/1.0\r\n\r\n");
    // The server answers and closes: the bytes arrive first, then the end.
    net.send(
        server,
        Message::multipart([to_client.clone(), Bytes::from("HTTP/1.0 200 OK\r\n")]),
    )
    .unwrap();
    net.send(
        server,
        Message::multipart([to_client.clone(), Bytes::new()]),
    )
    .unwrap();
    net.run_for(MS10);
    let (id, data) = parts(net.recv(client).unwrap());
    assert_eq!(
        (id.clone(), data),
        (to_server.clone(), b"HTTP/1.0 200 OK\r\n".to_vec())
    );
    let (id2, end) = parts(net.recv(client).unwrap());
    assert_eq!(
        (id2, end.is_empty()),
        (to_server, true),
        "the end, as [id][\"\"]"
    );
    let (id, end) = parts(net.recv(server).unwrap());
    assert_eq!((id, end.is_empty()), (to_client.clone(), true));
    assert!(matches!(
        net.send(server, Message::multipart([to_client, Bytes::from("late")])),
        Err(SendError::HostUnreachable(_))
    ));
}

#[test]
fn udp_pipes_are_ready_without_a_handshake_on_both_sides() {
    // A RADIO's udp connect and a DISH's udp bind carry datagrams from the start: there is no
    // handshake, so the driver's word that the socket is open makes the pipe ready.
    use omq_core::pipe::Outbound;
    let now = Instant::now();
    let mut radio = Socket::new(SocketType::Radio, Options::default(), 1).unwrap();
    radio.connect("udp://127.0.0.1:5556", now).unwrap();
    let pipe = std::iter::from_fn(|| radio.poll_action())
        .find_map(|a| match a {
            Action::Dial { pipe, .. } => Some(pipe),
            _ => None,
        })
        .expect("a dial for the udp endpoint");
    assert!(radio.handle_datagram_connected(pipe, now));
    radio.send(Message::from("x").with_group("g")).unwrap();
    let out: Vec<Outbound> = std::iter::from_fn(|| radio.poll_transmit(pipe)).collect();
    // The wire form: [group][body].
    assert!(
        matches!(&out[..], [Outbound::Message(m)] if *m == Message::multipart(["g", "x"])),
        "a RADIO sends every group to a datagram pipe at once: {out:?}"
    );

    let mut dish = Socket::new(SocketType::Dish, Options::default(), 1).unwrap();
    dish.join(b"g").unwrap();
    let pipe = dish.handle_datagram_bound("udp://127.0.0.1:5556", now);
    let datagram = omq_core::wire::datagram::encode(&Message::multipart(["g", "y"])).unwrap();
    dish.handle_message(pipe, omq_core::wire::datagram::decode(datagram).unwrap())
        .unwrap();
    let m = dish.recv().expect("the datagram's message");
    assert_eq!((m.group(), text(&m)), (Some(&b"g"[..]), "y".to_string()));
}
