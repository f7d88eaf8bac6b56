//! omq-tokio sockets with PLAIN and CURVE against libzmq, with ZAP on the libzmq side and
//! omq's authenticator on the omq side.

use std::time::Duration;

use conformance::libzmq_peer::LibzmqPeer;
use futures_util::StreamExt;
use omq_core::mechanism::generate_keypair;
use omq_core::{CurveAllowList, MechanismConfig};
use omq_tokio::{EventKind, Message, Options, Socket, SocketType};
use tokio::task::block_in_place;

const T: Duration = Duration::from_secs(10);

fn peer() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

/// A Z85 key as libzmq's setsockopt takes it: the 40 characters themselves.
fn z85(text: &str) -> String {
    text.to_string()
}

async fn wait_event(mon: &mut omq_tokio::Monitor, kind: EventKind) -> bool {
    tokio::time::timeout(T, async {
        while let Some(e) = mon.next().await {
            if e.kind == kind {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_client_against_libzmq_plain_server_with_zap() {
    for (password, accepted) in [("secret", true), ("guess", false)] {
        let mut z = peer();
        z.cmd("zap_start plain admin secret").unwrap();
        z.socket(1, "PULL").unwrap();
        z.setsockopt(1, "PLAIN_SERVER", 1).unwrap();
        z.monitor(1).unwrap();
        let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
        let push = Socket::new(
            SocketType::Push,
            Options::default()
                .mechanism(MechanismConfig::plain_client("admin", password).unwrap())
                .reconnect_ivl(None),
        )
        .unwrap();
        let mut mon = push.monitor();
        push.connect(&ep).await.unwrap();
        if accepted {
            push.send(Message::from("over plain")).await.unwrap();
            let (user, parts) = block_in_place(|| z.recv_meta(1, T, "User-Id")).unwrap();
            assert_eq!(parts, vec![b"over plain".to_vec()]);
            assert_eq!(user.as_deref(), Some("zap-user"));
        } else {
            // libzmq refuses with ERROR; omq reports the handshake failure.
            let mut saw_auth = false;
            for _ in 0..20 {
                match block_in_place(|| z.event(1, Duration::from_millis(500))) {
                    Ok((name, _, _)) if name == "HANDSHAKE_FAILED_AUTH" => {
                        saw_auth = true;
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            assert!(saw_auth, "libzmq's ZAP refused the password");
            assert!(wait_event(&mut mon, EventKind::Disconnected).await);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curve_client_against_libzmq_curve_server_with_zap_allow_list() {
    let mut rng = rand_chacha::rand_core::OsRng;
    let server = generate_keypair(&mut rng);
    let client = generate_keypair(&mut rng);
    let mut z = peer();
    z.cmd(&format!("zap_start curve {}", client.public().to_z85()))
        .unwrap();
    z.socket(1, "REP").unwrap();
    z.setsockopt(1, "CURVE_SERVER", 1).unwrap();
    z.setsockopt(
        1,
        "CURVE_SECRETKEY",
        z85(&server.secret().to_z85()).as_str(),
    )
    .unwrap();
    let ep = z.bind(1, "tcp://127.0.0.1:*").unwrap();
    let req = Socket::new(
        SocketType::Req,
        Options::default().mechanism(MechanismConfig::curve_client(*server.public(), client)),
    )
    .unwrap();
    req.connect(&ep).await.unwrap();
    req.send(Message::multipart(["sealed", "request"]))
        .await
        .unwrap();
    let (user, parts) = block_in_place(|| z.recv_meta(1, T, "User-Id")).unwrap();
    assert_eq!(parts, vec![b"sealed".to_vec(), b"request".to_vec()]);
    assert_eq!(user.as_deref(), Some("zap-user"));
    z.send(1, &[b"sealed reply"]).unwrap();
    let got = tokio::time::timeout(T, req.recv()).await.unwrap().unwrap();
    assert_eq!(got, Message::from("sealed reply"));

    // A key the allow list does not name is refused: libzmq's ZAP says no, the client hears
    // of it, and nothing it sends reaches the server.
    let stranger = generate_keypair(&mut rng);
    let intruder = Socket::new(
        SocketType::Req,
        Options::default().mechanism(MechanismConfig::curve_client(*server.public(), stranger)),
    )
    .unwrap();
    let mut events = intruder.monitor();
    intruder.connect(&ep).await.unwrap();
    let _ = intruder.try_send(Message::from("let me in"));
    let refused = tokio::time::timeout(T, async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::HandshakeFailedAuth {
                return true;
            }
        }
        false
    })
    .await
    .expect("the refusal is reported");
    assert!(refused);
    let nothing = block_in_place(|| z.recv(1, Duration::from_millis(300)));
    assert!(
        nothing.is_err(),
        "the stranger's request got through: {nothing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_curve_clients_against_an_omq_allow_list() {
    let mut rng = rand_chacha::rand_core::OsRng;
    let server = generate_keypair(&mut rng);
    let allowed = generate_keypair(&mut rng);
    let refused = generate_keypair(&mut rng);
    let server_public = server.public().to_z85();
    let pull = Socket::new(
        SocketType::Pull,
        Options::default()
            .mechanism(MechanismConfig::curve_server(server))
            .authenticator(CurveAllowList::new([*allowed.public().as_bytes()])),
    )
    .unwrap();
    let mut mon = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut z = peer();
    for (id, keys) in [(1u32, &allowed), (2, &refused)] {
        z.socket(id, "PUSH").unwrap();
        z.setsockopt(id, "CURVE_SERVERKEY", z85(&server_public).as_str())
            .unwrap();
        z.setsockopt(id, "CURVE_PUBLICKEY", z85(&keys.public().to_z85()).as_str())
            .unwrap();
        z.setsockopt(id, "CURVE_SECRETKEY", z85(&keys.secret().to_z85()).as_str())
            .unwrap();
        z.connect(id, &ep).unwrap();
        z.send(id, &[format!("from {id}").as_bytes()]).unwrap();
    }
    let m = tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
    assert_eq!(m, Message::from("from 1"));
    assert!(wait_event(&mut mon, EventKind::HandshakeFailedAuth).await);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), pull.recv())
            .await
            .is_err(),
        "nothing from the refused key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticator_sees_the_peer_and_messages_carry_user_id_and_peer_address() {
    use omq_core::mechanism::Credentials;
    use omq_core::AuthReply;
    let auth = |req: &omq_core::AuthRequest| match &req.credentials {
        Credentials::Plain { username, .. } if req.peer_address == "127.0.0.1" => {
            AuthReply::allow().user_id(username.clone())
        }
        _ => AuthReply::deny("unknown peer"),
    };
    let pull = Socket::new(
        SocketType::Pull,
        Options::default().plain_server(true).authenticator(auth),
    )
    .unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut z = peer();
    z.socket(1, "PUSH").unwrap();
    z.setsockopt(1, "PLAIN_USERNAME", "alice").unwrap();
    z.setsockopt(1, "PLAIN_PASSWORD", "pw").unwrap();
    z.connect(1, &ep).unwrap();
    z.send(1, &[b"hello"]).unwrap();
    let m = tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
    assert_eq!(m, Message::from("hello"));
    assert_eq!(m.property("User-Id"), Some(&b"alice"[..]));
    assert_eq!(m.property("Peer-Address"), Some(&b"127.0.0.1"[..]));
    assert_eq!(m.property("Socket-Type"), Some(&b"PUSH"[..]));
}
