//! PLAIN (spec 24) and the authentication hook on the simulated network: handshakes both ways,
//! an authenticator letting peers in (with a User-Id) or keeping them out, role and mechanism
//! mismatches, malformed commands, and NULL's ZAP-domain rule.

mod security_support;

use std::time::Duration;

use bytes::Bytes;
use omq_core::error::{ProtocolError, SessionError};
use omq_core::mechanism::{Credentials, MechanismConfig};
use omq_core::sim::{Direction, LinkConfig, Pair};
use omq_core::wire::greeting::MechanismName;
use omq_core::{AuthReply, AuthRequest, Message, SessionConfig, SessionEvent, SocketType};
use security_support::*;

fn plain_client(t: SocketType, user: &str, pass: &str) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::plain_client(user, pass).unwrap();
    c
}

fn plain_server(t: SocketType, authenticate: bool) -> SessionConfig {
    let mut c = SessionConfig::new(t);
    c.mechanism = MechanismConfig::plain_server();
    c.authenticate = authenticate;
    c
}

fn auth_requests(events: &[SessionEvent]) -> Vec<AuthRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::AuthRequest(r) => Some((**r).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn plain_handshake_both_ways_without_an_authenticator() {
    // The client connects, then the server connects: roles come from the mechanism, not from
    // who dialled.
    for client_dials in [true, false] {
        let client = plain_client(SocketType::Dealer, "anyone", "anything");
        let server = plain_server(SocketType::Router, false);
        let mut p = if client_dials {
            Pair::new(client, server)
        } else {
            Pair::new(server, client)
        };
        p.drive();
        assert!(
            p.a.session.is_ready() && p.b.session.is_ready(),
            "{client_dials}"
        );
        assert!(others(&p.a.events).is_empty() && others(&p.b.events).is_empty());
        let m = Message::multipart(["one", "", "three"]);
        p.a.session.send_message(&m).unwrap();
        p.b.session.send_message(&m).unwrap();
        p.drive();
        assert_eq!(p.a.messages(), vec![m.clone()]);
        assert_eq!(p.b.messages(), vec![m]);
        assert_eq!(p.a.messages()[0].property("User-Id"), None);
    }
}

#[test]
fn hello_bytes_follow_the_spec() {
    let mut p = Pair::new(
        plain_client(SocketType::Dealer, "admin", "password"),
        plain_server(SocketType::Router, false),
    );
    let mut tap = Tap::new(&mut p, Direction::AToB);
    tap.pass(&mut p);
    assert!(p.b.session.is_ready());
    let hello = &tap.log[0];
    assert!(hello.is_command());
    assert_eq!(&hello.body[..], b"\x05HELLO\x05admin\x08password");
    assert!(tap.log[1].body.starts_with(b"\x08INITIATE\x0bSocket-Type"));
}

#[test]
fn an_authenticator_sees_the_credentials_and_its_user_id_reaches_every_message() {
    let mut p = Pair::new(
        plain_client(SocketType::Dealer, "admin", "secret"),
        plain_server(SocketType::Router, true),
    );
    p.drive();
    let requests = auth_requests(&p.b.events);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].mechanism, MechanismName::PLAIN);
    match &requests[0].credentials {
        Credentials::Plain { username, password } => {
            assert_eq!(&username[..], b"admin");
            assert_eq!(&password[..], b"secret");
        }
        other => panic!("{other:?}"),
    }
    // The handshake waits, however long the owner takes (within HANDSHAKE_IVL).
    p.run_until(Duration::from_secs(5));
    assert!(!p.a.session.is_ready() && !p.b.session.is_ready());
    assert!(p.a.error.is_none() && p.b.error.is_none());

    let reply = AuthReply::allow()
        .user_id("admin-user")
        .property("X-Role", "operator");
    p.b.session.handle_auth_reply(reply, p.now).unwrap();
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    for i in 0..3 {
        p.a.session
            .send_message(&Message::from(format!("m{i}")))
            .unwrap();
    }
    p.drive();
    let got = p.b.messages();
    assert_eq!(got.len(), 3);
    for m in &got {
        assert_eq!(m.property("User-Id"), Some(&b"admin-user"[..]));
        assert_eq!(m.property("X-Role"), Some(&b"operator"[..]));
        assert_eq!(m.property("Socket-Type"), Some(&b"DEALER"[..]));
    }
    // A reply nobody asked for changes nothing.
    p.b.session
        .handle_auth_reply(AuthReply::deny("late"), p.now)
        .unwrap();
    assert!(p.b.session.is_ready());
}

#[test]
fn bad_credentials_are_refused_with_an_error_command() {
    let mut p = Pair::new(
        plain_client(SocketType::Req, "admin", "wrong"),
        plain_server(SocketType::Rep, true),
    );
    p.drive();
    let req = auth_requests(&p.b.events).remove(0);
    let Credentials::Plain { password, .. } = &req.credentials else {
        panic!("{req:?}")
    };
    assert_eq!(&password[..], b"wrong");
    let err =
        p.b.session
            .handle_auth_reply(AuthReply::deny("bad password"), p.now)
            .unwrap_err();
    assert!(
        matches!(&err, SessionError::AuthFailed { reason } if reason.contains("bad password")),
        "{err}"
    );
    p.drive();
    assert_eq!(
        p.a.error,
        Some(SessionError::PeerError {
            reason: "400".into()
        })
    );
    assert_eq!(p.b.session.error(), Some(&err));
    for end in [&p.a, &p.b] {
        assert!(!end.events.contains(&SessionEvent::HandshakeSucceeded));
        assert!(end.messages().is_empty());
    }
    assert!(p.a.session.send_message(&Message::from("x")).is_err());
}

#[test]
fn both_clients_or_both_servers_is_a_role_mismatch() {
    let both_clients = Pair::new(
        plain_client(SocketType::Dealer, "a", "b"),
        plain_client(SocketType::Dealer, "a", "b"),
    );
    let both_servers = Pair::new(
        plain_server(SocketType::Dealer, false),
        plain_server(SocketType::Dealer, false),
    );
    for mut p in [both_clients, both_servers] {
        p.drive();
        for end in [&p.a, &p.b] {
            assert_eq!(
                end.error,
                Some(SessionError::Protocol(ProtocolError::RoleMismatch))
            );
        }
    }
}

#[test]
fn plain_against_null_is_a_mechanism_mismatch_on_both_sides() {
    let mut p = Pair::new(
        plain_client(SocketType::Dealer, "a", "b"),
        SessionConfig::new(SocketType::Dealer),
    );
    p.drive();
    for end in [&p.a, &p.b] {
        assert!(matches!(
            end.error,
            Some(SessionError::Protocol(
                ProtocolError::MechanismMismatch { .. }
            ))
        ));
    }
}

#[test]
fn malformed_hello_and_early_commands_end_the_handshake() {
    // A HELLO whose password length runs past the end.
    let mut p = Pair::new(
        plain_client(SocketType::Dealer, "admin", "pw"),
        plain_server(SocketType::Dealer, false),
    );
    let mut tap = Tap::new(&mut p, Direction::AToB);
    tap.run(&mut p, |i, f| {
        if i == 0 {
            vec![edited(&f, |b| b.truncate(b.len() - 1))]
        } else {
            vec![f]
        }
    });
    assert_eq!(
        p.b.error,
        Some(SessionError::Protocol(ProtocolError::MalformedCommand {
            name: "HELLO"
        }))
    );

    // A client that skips HELLO and sends INITIATE at once.
    let mut p = Pair::new(
        plain_client(SocketType::Dealer, "admin", "pw"),
        plain_server(SocketType::Dealer, false),
    );
    let mut tap = Tap::new(&mut p, Direction::AToB);
    tap.run(&mut p, |i, f| {
        if i == 0 {
            vec![edited(&f, |b| {
                *b = b"\x08INITIATE\x0bSocket-Type\x00\x00\x00\x06DEALER".to_vec()
            })]
        } else {
            vec![f]
        }
    });
    assert!(matches!(
        p.b.error,
        Some(SessionError::Protocol(ProtocolError::UnexpectedCommand { ref name })) if name == "INITIATE"
    ));
    assert!(p.b.messages().is_empty());
}

#[test]
fn a_peer_cannot_claim_a_user_id_itself() {
    let mut client = plain_client(SocketType::Dealer, "mallory", "x");
    client
        .metadata
        .insert("User-Id", Bytes::from_static(b"root"));
    let mut p = Pair::new(client, plain_server(SocketType::Dealer, false));
    p.drive();
    p.a.session.send_message(&Message::from("hi")).unwrap();
    p.drive();
    assert_eq!(p.b.messages()[0].property("User-Id"), None);
}

#[test]
fn a_second_ready_while_the_authenticator_decides_is_refused() {
    // NULL keeps the peer's READY while the ZAP answer is awaited; a second one then is a
    // protocol error, not a replacement of the first (whose properties the answer is about).
    use omq_core::wire::command::Command;
    use omq_core::wire::metadata::Metadata;
    let mut server = SessionConfig::new(SocketType::Pull);
    server.authenticate = true;
    server.zap_domain = Bytes::from_static(b"global");
    let mut p = Pair::new(SessionConfig::new(SocketType::Push), server);
    p.drive();
    assert_eq!(auth_requests(&p.b.events).len(), 1);
    let ready = Command::Ready(Metadata::new()).to_bytes();
    let mut raw = vec![0x04, ready.len() as u8];
    raw.extend_from_slice(&ready);
    p.inject(Direction::AToB, Bytes::from(raw));
    p.drive();
    assert!(
        matches!(p.b.error, Some(SessionError::Protocol(_))),
        "{:?}",
        p.b.error
    );
}

#[test]
fn null_asks_only_when_a_zap_domain_is_set() {
    // Authenticator attached but no domain: NULL asks nobody, as libzmq.
    let mut server = SessionConfig::new(SocketType::Pull);
    server.authenticate = true;
    let mut p = Pair::new(SessionConfig::new(SocketType::Push), server.clone());
    p.drive();
    assert!(p.b.session.is_ready());
    assert!(auth_requests(&p.b.events).is_empty());

    // With a domain: READY waits for the owner, even though the peer's READY is already in.
    server.zap_domain = Bytes::from_static(b"global");
    let link = LinkConfig {
        max_piece: 3,
        ..LinkConfig::default()
    };
    let mut p = Pair::with_links(
        SessionConfig::new(SocketType::Push),
        server.clone(),
        link.clone(),
        link,
        7,
    );
    p.drive();
    let req = auth_requests(&p.b.events).remove(0);
    assert_eq!(req.mechanism, MechanismName::NULL);
    assert_eq!(&req.zap_domain[..], b"global");
    assert_eq!(req.credentials, Credentials::Null);
    assert!(!p.a.session.is_ready() && !p.b.session.is_ready());
    p.b.session
        .handle_auth_reply(AuthReply::allow().user_id("anon"), p.now)
        .unwrap();
    p.drive();
    assert!(p.a.session.is_ready() && p.b.session.is_ready());
    p.a.session.send_message(&Message::from("x")).unwrap();
    p.drive();
    assert_eq!(p.b.messages()[0].property("User-Id"), Some(&b"anon"[..]));

    // Refused: the NULL peer gets ERROR 400.
    let mut p = Pair::new(SessionConfig::new(SocketType::Push), server);
    p.drive();
    assert!(p
        .b
        .session
        .handle_auth_reply(AuthReply::deny("no"), p.now)
        .is_err());
    p.drive();
    assert_eq!(
        p.a.error,
        Some(SessionError::PeerError {
            reason: "400".into()
        })
    );
}

/// A driver may take a connection's authentication request and answer it outside the socket
/// (a ZAP handler that waits must not hold the socket up): the answer given there is the one
/// that counts, whatever the socket's own authenticator would have said, and a refusal given
/// there ends the connection.
#[test]
fn a_driver_answers_the_authenticator_outside_the_socket() {
    use bytes::BytesMut;
    use omq_core::connection::Connection;
    use omq_core::{Options, Socket};
    use std::time::Instant;

    for allow in [true, false] {
        let now = Instant::now();
        // The socket's own authenticator would refuse everyone.
        let options = Options::default()
            .plain_server(true)
            .authenticator(|_: &AuthRequest| AuthReply::deny("the socket's own answer"));
        let mut server = Socket::new(SocketType::Pull, options, 1).unwrap();
        let (pipe, cfg) = server.handle_accepted("tcp://127.0.0.1:1", now);
        let mut conn = Connection::new(pipe, cfg, now);
        let mut client = omq_core::Session::new(plain_client(SocketType::Push, "alice", "pw"), now);
        let (mut to_server, mut to_client) = (BytesMut::new(), BytesMut::new());
        let mut asked = 0;
        let mut outcome = Ok(());
        for _ in 0..20 {
            while let Some(b) = client.poll_transmit() {
                to_server.extend_from_slice(&b);
            }
            let decoded = conn.handle_bytes(&mut to_server, now);
            if let Some(request) = conn.take_auth_request() {
                asked += 1;
                match &request.credentials {
                    Credentials::Plain { username, .. } => assert_eq!(&username[..], b"alice"),
                    other => panic!("{other:?}"),
                }
                let reply = if allow {
                    AuthReply::allow()
                } else {
                    AuthReply::deny("refused outside")
                };
                conn.handle_auth_reply(reply, now);
            }
            outcome = conn.finish_input(&mut server, decoded, now);
            if outcome.is_err() {
                break;
            }
            conn.pull(&mut server).unwrap();
            while let Some(b) = conn.poll_transmit() {
                to_client.extend_from_slice(&b);
            }
            let _ = client.handle_input(&mut to_client, now);
            while client.poll_event().is_some() {}
        }
        assert_eq!(asked, 1, "the request was taken once");
        if allow {
            assert_eq!(outcome, Ok(()));
            assert!(client.is_ready(), "admitted by the answer given outside");
        } else {
            assert!(
                matches!(outcome, Err(SessionError::AuthFailed { .. })),
                "{outcome:?}"
            );
            assert!(!client.is_ready());
        }
    }
}
