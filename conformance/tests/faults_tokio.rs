//! Faults on real sockets, with a real libzmq on the other side (omq-tokio): a peer process
//! killed and restarted, a peer frozen mid-connection, a client that never finishes its
//! handshake. Time bounds are wide upper bounds.

use std::io::Write;
use std::time::Duration;

use conformance::libzmq_peer::LibzmqPeer;
use futures_util::StreamExt;
use omq_tokio::{EventKind, Message, Options, Socket, SocketType};
use tokio::task::block_in_place;

const T: Duration = Duration::from_secs(20);

fn spawn_peer() -> LibzmqPeer {
    LibzmqPeer::spawn().unwrap_or_else(|e| panic!("{e}"))
}

/// Publishes from libzmq until the omq subscriber receives one.
async fn publish_until_received(peer: &mut LibzmqPeer, sub: &Socket) -> Message {
    for _ in 0..1000 {
        block_in_place(|| peer.send(1, &[b"t-data"]).unwrap());
        if let Ok(Ok(m)) = tokio::time::timeout(Duration::from_millis(10), sub.recv()).await {
            return m;
        }
    }
    panic!("nothing arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriber_reconnects_and_resubscribes_after_the_publisher_restarts() {
    let mut peer = spawn_peer();
    peer.socket(1, "PUB").unwrap();
    let ep = peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    let sub = Socket::new(
        SocketType::Sub,
        Options::default()
            .reconnect_ivl(Some(Duration::from_millis(50)))
            .reconnect_ivl_max(Duration::from_millis(400)),
    )
    .unwrap();
    let mut events = sub.monitor();
    sub.subscribe("t").unwrap();
    sub.connect(&ep).await.unwrap();
    assert_eq!(
        publish_until_received(&mut peer, &sub).await,
        Message::from("t-data")
    );

    peer.kill().unwrap();
    drop(peer);
    // Wait until omq has noticed, then bring up a new publisher on the same port.
    tokio::time::timeout(T, async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::Disconnected {
                break;
            }
        }
    })
    .await
    .expect("disconnect noticed");
    let mut peer = spawn_peer();
    peer.socket(1, "PUB").unwrap();
    let mut bound = None;
    for _ in 0..100 {
        if let Ok(e) = peer.bind(1, &ep) {
            bound = Some(e);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(bound.as_deref(), Some(ep.as_str()));
    // The subscription is replayed on the new connection without the application asking.
    assert_eq!(
        publish_until_received(&mut peer, &sub).await,
        Message::from("t-data")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pusher_survives_a_puller_restart_losing_only_what_was_in_flight() {
    let mut peer = spawn_peer();
    peer.socket(1, "PULL").unwrap();
    let ep = peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    let push = Socket::new(
        SocketType::Push,
        Options::default().reconnect_ivl(Some(Duration::from_millis(50))),
    )
    .unwrap();
    let mut events = push.monitor();
    push.connect(&ep).await.unwrap();
    for i in 0..100u32 {
        push.send(Message::from(i.to_be_bytes())).await.unwrap();
    }
    for i in 0..100u32 {
        let m = block_in_place(|| peer.recv(1, T)).unwrap();
        assert_eq!(m[0], i.to_be_bytes());
    }
    peer.kill().unwrap();
    drop(peer);
    // Once omq has seen the connection end, what is sent queues in the pipe (up to SNDHWM)
    // for the next connection instead of going into the dead one.
    tokio::time::timeout(T, async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::Disconnected {
                break;
            }
        }
    })
    .await
    .expect("disconnect noticed");
    for i in 100..200u32 {
        push.send(Message::from(i.to_be_bytes())).await.unwrap();
    }
    let mut peer = spawn_peer();
    peer.socket(1, "PULL").unwrap();
    let mut bound = false;
    for _ in 0..100 {
        if peer.bind(1, &ep).is_ok() {
            bound = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(bound, "could not rebind {ep}");
    let mut got = Vec::new();
    while let Ok(m) = block_in_place(|| peer.recv(1, Duration::from_secs(3))) {
        got.push(u32::from_be_bytes(m[0][..].try_into().unwrap()));
        if got.last() == Some(&199) {
            break;
        }
    }
    // Everything sent after the loss was noticed arrives, in order, once.
    assert_eq!(got, (100..200).collect::<Vec<u32>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_peer_is_detected_by_heartbeats() {
    let mut peer = spawn_peer();
    peer.socket(1, "DEALER").unwrap();
    let ep = peer.bind(1, "tcp://127.0.0.1:*").unwrap();
    let dealer = Socket::new(
        SocketType::Dealer,
        Options::default()
            .heartbeat_ivl(Some(Duration::from_millis(100)))
            .heartbeat_timeout(Some(Duration::from_millis(400))),
    )
    .unwrap();
    let mut events = dealer.monitor();
    dealer.connect(&ep).await.unwrap();
    dealer.send(Message::from("hi")).await.unwrap();
    assert_eq!(
        block_in_place(|| peer.recv(1, T)).unwrap(),
        vec![b"hi".to_vec()]
    );
    // Freeze the libzmq process: its TCP connection stays open but nothing answers.
    let pid = peer.pid().to_string();
    std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap();
    let seen = tokio::time::timeout(T, async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::Disconnected {
                return true;
            }
        }
        false
    })
    .await;
    std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap();
    assert_eq!(
        seen,
        Ok(true),
        "heartbeat timeout must drop the frozen peer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_client_is_cut_off_at_handshake_ivl_without_delaying_others() {
    let pull = Socket::new(
        SocketType::Pull,
        Options::default().handshake_ivl(Some(Duration::from_millis(300))),
    )
    .unwrap();
    let mut events = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let addr = ep.trim_start_matches("tcp://").to_string();
    // A client that connects and says nothing at all.
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    // A real peer meanwhile gets through at once.
    let mut peer = spawn_peer();
    peer.socket(1, "PUSH").unwrap();
    peer.connect(1, &ep).unwrap();
    peer.send(1, &[b"not delayed"]).unwrap();
    let m = tokio::time::timeout(Duration::from_secs(5), pull.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m, Message::from("not delayed"));
    let failed = tokio::time::timeout(T, async {
        while let Some(e) = events.next().await {
            if e.kind == EventKind::HandshakeFailedNoDetail {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(failed, Ok(true));
    // The silent client's connection was closed by omq.
    silent.set_read_timeout(Some(T)).unwrap();
    let mut buf = [0u8; 64];
    let mut total = 0;
    loop {
        match std::io::Read::read(&mut silent, &mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("expected a close, got {e}"),
        }
    }
    assert!(total >= 10, "it got our greeting signature first");
    let _ = silent.write_all(b"too late");
}

/// A connection task that panics (here: inside a user's authenticator, which runs in it) costs
/// only that connection: tokio catches the panic, the task's guard reports the connection
/// closed so its pipe is released, and the socket serves its other peers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_connection_task_costs_only_its_connection() {
    use omq_tokio::{AuthReply, AuthRequest, Credentials};
    let auth = |req: &AuthRequest| match &req.credentials {
        Credentials::Plain { username, .. } if &username[..] == b"boom" => {
            panic!("the authenticator fails for this peer")
        }
        _ => AuthReply::allow(),
    };
    let server = Socket::new(
        SocketType::Pull,
        Options::default().plain_server(true).authenticator(auth),
    )
    .unwrap();
    let ep = server.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let client = |user: &'static str| {
        Socket::new(
            SocketType::Push,
            Options::default()
                .plain_username(user)
                .plain_password("pw")
                .reconnect_ivl(None),
        )
        .unwrap()
    };
    let bad = client("boom");
    bad.connect(&ep).await.unwrap();
    // Wait until the panicking connection has come and gone: no pipe left on the server.
    let gone = async {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let dump = server.debug_dump();
            if dump.contains("conns=0") && dump.lines().count() == 1 {
                break;
            }
        }
    };
    tokio::time::timeout(T, gone)
        .await
        .unwrap_or_else(|_| panic!("pipe leaked: {}", server.debug_dump()));
    let good = client("ok");
    good.connect(&ep).await.unwrap();
    good.send(Message::from("still served")).await.unwrap();
    let got = tokio::time::timeout(T, server.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, Message::from("still served"));
}
