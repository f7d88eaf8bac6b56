//! Security at the socket level, on the simulated network: CURVE and PLAIN sockets with and
//! without an authenticator, monitor events for refused peers, and User-Id on messages.

use std::time::Duration;

use bytes::Bytes;
use omq_core::mechanism::{generate_keypair, Credentials};
use omq_core::simnet::Net;
use omq_core::{
    AuthReply, CurveAllowList, EventKind, MechanismConfig, Message, Options, RecvError, SocketType,
};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

const MS10: Duration = Duration::from_millis(10);

#[test]
fn curve_sockets_with_an_allow_list() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let server_keys = generate_keypair(&mut rng);
    let good = generate_keypair(&mut rng);
    let bad = generate_keypair(&mut rng);
    let server_public = *server_keys.public();
    let mut net = Net::new(1);
    let server = net
        .socket(
            SocketType::Pull,
            Options::default()
                .mechanism(MechanismConfig::curve_server(server_keys))
                .authenticator(CurveAllowList::new([*good.public().as_bytes()])),
        )
        .unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let ok_client = net
        .socket(
            SocketType::Push,
            Options::default().mechanism(MechanismConfig::curve_client(server_public, good)),
        )
        .unwrap();
    let bad_client = net
        .socket(
            SocketType::Push,
            Options::default().mechanism(MechanismConfig::curve_client(server_public, bad)),
        )
        .unwrap();
    net.connect(ok_client, &ep).unwrap();
    net.connect(bad_client, &ep).unwrap();
    net.run_for(MS10);
    net.send(ok_client, Message::multipart(["secret", "stuff"]))
        .unwrap();
    net.send(bad_client, Message::from("intruder")).unwrap();
    net.run_for(MS10);
    assert_eq!(
        net.recv(server).unwrap(),
        Message::multipart(["secret", "stuff"])
    );
    assert_eq!(net.recv(server), Err(RecvError::WouldBlock));
    let kinds: Vec<EventKind> = net.events(server).iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&EventKind::HandshakeFailedAuth), "{kinds:?}");
}

#[test]
fn plain_with_an_authenticator_sets_user_id() {
    let mut net = Net::new(2);
    let auth = |req: &omq_core::AuthRequest| match &req.credentials {
        Credentials::Plain { username, password }
            if username[..] == b"admin"[..] && password[..] == b"secret"[..] =>
        {
            AuthReply::allow().user_id(Bytes::from_static(b"admin"))
        }
        _ => AuthReply::deny("bad credentials"),
    };
    let server = net
        .socket(
            SocketType::Rep,
            Options::default()
                .mechanism(MechanismConfig::plain_server())
                .authenticator(auth),
        )
        .unwrap();
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let good = net
        .socket(
            SocketType::Req,
            Options::default().mechanism(MechanismConfig::plain_client("admin", "secret").unwrap()),
        )
        .unwrap();
    let bad = net
        .socket(
            SocketType::Req,
            Options::default().mechanism(MechanismConfig::plain_client("admin", "guess").unwrap()),
        )
        .unwrap();
    net.connect(good, &ep).unwrap();
    net.connect(bad, &ep).unwrap();
    net.run_for(MS10);
    net.send(good, Message::from("hi")).unwrap();
    net.send(bad, Message::from("let me in")).unwrap();
    net.run_for(MS10);
    let got = net.recv(server).unwrap();
    assert_eq!(got, Message::from("hi"));
    assert_eq!(got.property("User-Id"), Some(&b"admin"[..]));
    net.send(server, Message::from("welcome")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(good).unwrap(), Message::from("welcome"));
    assert_eq!(net.recv(server), Err(RecvError::WouldBlock));
}

#[test]
fn mechanism_mismatch_fails_cleanly_on_both_sides() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let server_keys = generate_keypair(&mut rng);
    let mut net = Net::new(3);
    let server = net.socket(SocketType::Pull, Options::default()).unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let client = net
        .socket(
            SocketType::Push,
            Options::default().mechanism(MechanismConfig::curve_client(
                *server_keys.public(),
                generate_keypair(&mut rng),
            )),
        )
        .unwrap();
    net.monitor(client);
    net.connect(client, &ep).unwrap();
    net.run_for(MS10);
    for s in [server, client] {
        let kinds: Vec<EventKind> = net.events(s).iter().map(|e| e.kind).collect();
        assert!(
            kinds.contains(&EventKind::HandshakeFailedProtocol),
            "{kinds:?}"
        );
        assert!(!kinds.contains(&EventKind::HandshakeSucceeded));
    }
}

#[test]
fn a_tampered_message_ends_the_connection_with_a_protocol_event() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let server_keys = generate_keypair(&mut rng);
    let public = *server_keys.public();
    let mut net = Net::new(4);
    let server = net
        .socket(
            SocketType::Pull,
            Options::default().mechanism(MechanismConfig::curve_server(server_keys)),
        )
        .unwrap();
    net.monitor(server);
    let ep = net.bind(server, "tcp://*:0").unwrap();
    let client = net
        .socket(
            SocketType::Push,
            Options::default()
                .mechanism(MechanismConfig::curve_client(
                    public,
                    generate_keypair(&mut rng),
                ))
                .reconnect_ivl(None),
        )
        .unwrap();
    net.connect(client, &ep).unwrap();
    net.run_for(MS10);
    net.send(client, Message::from("fine")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(server).unwrap(), Message::from("fine"));
    net.tamper = Some(client);
    net.send(client, Message::from("altered")).unwrap();
    net.run_for(MS10);
    assert_eq!(
        net.recv(server),
        Err(RecvError::WouldBlock),
        "nothing from a tampered box"
    );
    let events = net.events(server);
    let failed = events
        .iter()
        .find(|e| e.kind == EventKind::HandshakeFailedProtocol)
        .expect("a protocol failure event");
    assert_eq!(
        failed.value,
        omq_core::monitor::protocol_error::ZMTP_CRYPTOGRAPHIC
    );
    assert_eq!(events.last().unwrap().kind, EventKind::Disconnected);
}

#[test]
fn libzmq_named_options_configure_the_mechanism() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let server = generate_keypair(&mut rng);
    let client = generate_keypair(&mut rng);
    let mut net = Net::new(5);
    let pull = net
        .socket(
            SocketType::Pull,
            Options::default()
                .curve_server(true)
                .curve_secretkey(server.secret().to_z85().as_bytes()),
        )
        .unwrap();
    let ep = net.bind(pull, "tcp://*:0").unwrap();
    let push = net
        .socket(
            SocketType::Push,
            Options::default()
                .curve_serverkey(server.public().to_z85())
                .curve_publickey(client.public().as_bytes())
                .curve_secretkey(client.secret().expose_bytes()),
        )
        .unwrap();
    net.connect(push, &ep).unwrap();
    net.run_for(MS10);
    net.send(push, Message::from("curve via options")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(pull).unwrap(), Message::from("curve via options"));

    let rep = net
        .socket(SocketType::Rep, Options::default().plain_server(true))
        .unwrap();
    let ep = net.bind(rep, "tcp://*:0").unwrap();
    let req = net
        .socket(
            SocketType::Req,
            Options::default().plain_username("u").plain_password("p"),
        )
        .unwrap();
    net.connect(req, &ep).unwrap();
    net.run_for(MS10);
    net.send(req, Message::from("plain via options")).unwrap();
    net.run_for(MS10);
    assert_eq!(net.recv(rep).unwrap(), Message::from("plain via options"));

    // Incomplete or inconsistent settings are clear errors.
    for bad in [
        Options::default().curve_serverkey(server.public().to_z85()),
        Options::default().curve_server(true),
        Options::default()
            .curve_server(true)
            .curve_publickey(client.public().as_bytes())
            .curve_secretkey(server.secret().expose_bytes()),
        Options::default().curve_serverkey(b"too short"),
    ] {
        assert!(net.socket(SocketType::Push, bad).is_err());
    }
}
