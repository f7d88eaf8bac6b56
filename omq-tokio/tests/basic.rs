//! omq-tokio end to end over real tcp and ipc sockets. Timing is only bounded from above,
//! with wide slack.

use std::time::Duration;

use omq_tokio::{Error, Message, Options, Socket, SocketType};

const T: Duration = Duration::from_secs(10);

fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

#[test]
fn socket_is_send_sync_clone() {
    assert_send_sync_clone::<Socket>();
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(T, f).await.expect("took too long")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_messages_from_spawned_tasks() {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut tasks = Vec::new();
    for t in 0..4u32 {
        let ep = ep.clone();
        tasks.push(tokio::spawn(async move {
            let push = Socket::new(SocketType::Push, Options::default()).unwrap();
            push.connect(&ep).await.unwrap();
            for i in 0..5000u32 {
                push.send(Message::multipart([t.to_be_bytes(), i.to_be_bytes()]))
                    .await
                    .unwrap();
            }
            push.close().await.unwrap();
        }));
    }
    let mut next = [0u32; 4];
    for _ in 0..20_000 {
        let m = within(pull.recv()).await.unwrap();
        let t = u32::from_be_bytes(m.parts()[0][..].try_into().unwrap()) as usize;
        let i = u32::from_be_bytes(m.parts()[1][..].try_into().unwrap());
        assert_eq!(i, next[t], "per-sender order");
        next[t] += 1;
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_holds_the_sender_to_bounded_memory() {
    let pull = Socket::new(SocketType::Pull, Options::default().recv_hwm(10)).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let push = Socket::new(SocketType::Push, Options::default().send_hwm(10)).unwrap();
    push.connect(&ep).await.unwrap();
    let body = vec![3u8; 100_000];
    let mut sent = 0usize;
    // Keep offering until the sender has been refused for a while: everything in between is
    // in the pipes, the connection's 256 KiB batch, and the kernel's socket buffers.
    let mut refused_since = None;
    loop {
        match push.try_send(Message::from(body.clone())) {
            Ok(()) => {
                sent += 1;
                refused_since = None;
            }
            Err(_) => {
                let since = *refused_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > Duration::from_millis(300) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        assert!(sent < 2_000, "the sender never felt the consumer's HWM");
    }
    assert!(sent >= 20, "{sent}");
    // Then everything offered arrives, in order, once the consumer reads.
    for _ in 0..sent {
        within(pull.recv()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_flushes_within_linger_and_drop_lingers_in_the_background() {
    for explicit_close in [true, false] {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        let push = Socket::new(SocketType::Push, Options::default()).unwrap();
        push.connect(&ep).await.unwrap();
        for i in 0..1000u32 {
            push.send(Message::from(i.to_be_bytes())).await.unwrap();
        }
        if explicit_close {
            within(push.close()).await.unwrap();
        } else {
            drop(push);
        }
        for i in 0..1000u32 {
            let m = within(pull.recv()).await.unwrap();
            assert_eq!(m.parts()[0][..], i.to_be_bytes());
        }
    }
}

#[tokio::test]
async fn close_with_a_short_linger_reports_what_it_could_not_send() {
    for linger in [Duration::ZERO, Duration::from_millis(100)] {
        let push = Socket::new(SocketType::Push, Options::default().linger(Some(linger))).unwrap();
        push.connect("tcp://127.0.0.1:9").await.unwrap();
        push.send(Message::from("never delivered")).await.unwrap();
        let start = std::time::Instant::now();
        assert!(matches!(
            within(push.close()).await,
            Err(Error::LingerExpired)
        ));
        assert!(start.elapsed() >= linger && start.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_a_peer_that_is_not_up_yet() {
    // connect, send, close before the peer exists: with the default (infinite) linger the
    // message still goes out once the peer binds, as with libzmq.
    let path = format!("ipc:///tmp/omq-tokio-late-peer-{}.sock", std::process::id());
    let push = Socket::new(
        SocketType::Push,
        Options::default().reconnect_ivl(Some(Duration::from_millis(20))),
    )
    .unwrap();
    push.connect(&path).await.unwrap();
    push.send(Message::from("for later")).await.unwrap();
    let closing = tokio::spawn(push.close());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!closing.is_finished(), "close must wait for the peer");
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind(&path).await.unwrap();
    assert_eq!(
        within(pull.recv()).await.unwrap(),
        Message::from("for later")
    );
    within(closing).await.unwrap().unwrap();
}

#[tokio::test]
async fn operations_after_close_say_closed() {
    let s = Socket::new(
        SocketType::Dealer,
        Options::default().linger(Some(Duration::ZERO)),
    )
    .unwrap();
    let other = s.clone();
    s.close().await.unwrap();
    assert!(matches!(
        other.send(Message::from("x")).await,
        Err(Error::Closed)
    ));
    assert!(matches!(other.recv().await, Err(Error::Closed)));
    assert!(matches!(
        other.connect("tcp://127.0.0.1:5").await,
        Err(Error::Closed)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_socket_still_delivers_to_a_peer_that_binds_soon_after() {
    let path = format!("ipc:///tmp/omq-tokio-drop-late-{}.sock", std::process::id());
    {
        let push = Socket::new(
            SocketType::Push,
            Options::default().reconnect_ivl(Some(Duration::from_millis(20))),
        )
        .unwrap();
        push.connect(&path).await.unwrap();
        push.send(Message::from("sent, then dropped"))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind(&path).await.unwrap();
    assert_eq!(
        within(pull.recv()).await.unwrap(),
        Message::from("sent, then dropped")
    );
}

/// The authenticator is asked outside the socket's lock: while it waits (as one waiting for a
/// ZAP handler in another thread does), the server socket stays usable. Here it waits until
/// another thread has used the socket, which could not happen under the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticator_may_wait_while_the_socket_is_used() {
    use omq_tokio::{AuthReply, AuthRequest};
    use std::sync::{mpsc, Mutex};
    let (asked_tx, asked_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (asked_tx, go_rx) = (Mutex::new(asked_tx), Mutex::new(go_rx));
    let auth = move |_: &AuthRequest| {
        let _ = asked_tx.lock().unwrap().send(());
        match go_rx.lock().unwrap().recv_timeout(T) {
            Ok(()) => AuthReply::allow(),
            Err(_) => AuthReply::deny("the socket was not usable meanwhile"),
        }
    };
    let server = Socket::new(
        SocketType::Pull,
        Options::default().plain_server(true).authenticator(auth),
    )
    .unwrap();
    let ep = server.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let user = server.clone();
    let other = std::thread::spawn(move || {
        asked_rx
            .recv_timeout(T)
            .expect("the authenticator was never asked");
        assert!(matches!(user.try_recv(), Err(Error::WouldBlock)));
        go_tx.send(()).unwrap();
    });
    let client = Socket::new(
        SocketType::Push,
        Options::default().plain_username("u").plain_password("p"),
    )
    .unwrap();
    client.connect(&ep).await.unwrap();
    within(client.send(Message::multipart(["through"])))
        .await
        .unwrap();
    let m = within(server.recv()).await.unwrap();
    assert_eq!(m.parts()[0].as_slice(), b"through");
    other.join().unwrap();
}

/// Connection tasks yield after each read on the multi-threaded scheduler with two workers or
/// more only, where a parked worker may then take them (docs/PERFORMANCE.md, "The tasks layout: one worker or
/// two"); a current-thread runtime has no other worker and pays nothing.
#[test]
fn connection_tasks_yield_after_input_only_where_another_worker_can_take_them() {
    use omq_driver::Runtime;
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    assert!(multi.block_on(async { omq_tokio::Tokio::yields_after_input() }));
    let one_worker = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    assert!(!one_worker.block_on(async { omq_tokio::Tokio::yields_after_input() }));
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert!(!current.block_on(async { omq_tokio::Tokio::yields_after_input() }));
    assert!(
        !omq_tokio::Tokio::yields_after_input(),
        "outside any runtime"
    );
}

/// A caller stores (and moves into place) the whole future of every `send` and `recv`, so
/// their first attempt must not carry the waiting machinery: a listener, the guard that
/// counts waiters, and a timer (tokio's `Sleep` alone is 112 bytes). Before the waiting
/// part was split off and boxed, a send future was 432 bytes and a receive 240, and a
/// 64 B PUSH/PULL message cost 61 more instructions (callgrind). A send future holds the
/// message it will send (64 bytes) and little else.
#[test]
fn send_and_recv_futures_stay_small() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = Socket::new(SocketType::Pair, Options::default()).unwrap();
        let send = s.send(Message::from(vec![1u8; 64]));
        let recv = s.recv();
        let (send_size, recv_size) = (std::mem::size_of_val(&send), std::mem::size_of_val(&recv));
        assert!(send_size <= 64 + 48, "send future: {send_size} bytes");
        assert!(recv_size <= 48, "recv future: {recv_size} bytes");
    });
}

/// What a multi-threaded runtime gets from a tcp peer, and from an in-process one: a tcp
/// message carries the peer's properties (attached as it is read there, see
/// `reads_elsewhere`), an inproc message none (as libzmq's).
async fn properties_of_received_messages(tag: &str) {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let inproc = format!("inproc://properties-{tag}");
    pull.bind(&inproc).await.unwrap();
    let push = Socket::new(
        SocketType::Push,
        Options::default().metadata("X-Tag", tag.as_bytes().to_vec()),
    )
    .unwrap();
    push.connect(&ep).await.unwrap();
    for i in 0..300u32 {
        push.send(Message::from(i.to_be_bytes().to_vec()))
            .await
            .unwrap();
    }
    for _ in 0..300 {
        let m = within(pull.recv()).await.unwrap();
        assert_eq!(m.property("Socket-Type"), Some(&b"PUSH"[..]));
        assert_eq!(m.property("X-Tag"), Some(tag.as_bytes()));
        assert!(m.property("Peer-Address").is_some());
    }
    let local = Socket::new(SocketType::Push, Options::default()).unwrap();
    local.connect(&inproc).await.unwrap();
    local.send(Message::from("in")).await.unwrap();
    let m = within(pull.recv()).await.unwrap();
    assert_eq!(m, Message::from("in"));
    assert!(
        m.metadata().is_none(),
        "an in-process message has no properties"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_messages_carry_properties_on_the_multi_threaded_runtime() {
    assert!(<omq_tokio::Tokio as omq_driver::Runtime>::reads_elsewhere());
    properties_of_received_messages("mt").await;
}

#[tokio::test]
async fn received_messages_carry_properties_on_the_current_thread_runtime() {
    assert!(!<omq_tokio::Tokio as omq_driver::Runtime>::reads_elsewhere());
    properties_of_received_messages("ct").await;
}
