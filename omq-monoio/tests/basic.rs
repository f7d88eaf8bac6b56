//! omq-monoio end to end over real tcp and ipc sockets, on monoio's thread-per-core runtime
//! (io_uring and the forced legacy driver).
//! Timing is only bounded from above, with wide slack.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use omq_driver::{Endpoint, ReadHalf, Runtime, WriteHalf};
use omq_monoio::{Error, EventKind, Message, Monoio, Options, Socket, SocketType};

mod common;
use common::{within, Driver, T};

on_both_drivers!(
    reports_the_driver_in_use,
    reads_append_after_unconsumed_bytes_and_writes_are_vectored,
    a_partial_write_reports_its_count_and_resends_nothing,
    accepted_tcp_shows_the_peer_address,
    spawned_tasks_run_after_their_join_handle_is_dropped,
    push_pull_over_tcp_and_ipc,
    host_names_resolve_off_the_io_thread,
    many_messages_from_spawned_tasks,
    req_rep_and_state_errors,
    pub_sub_with_prefixes,
    timeouts_and_try_ops,
    bad_endpoints_and_options_are_clear_errors,
    monitor_stream_reports_connection_events,
    stale_ipc_file_is_replaced_and_ours_removed_on_unbind,
    a_connecting_push_delivers_after_the_peer_binds_late,
);

async fn reports_the_driver_in_use(driver: Driver) {
    // io_uring where the kernel (and any seccomp filter) allows it, legacy (epoll) otherwise.
    let legacy = monoio::utils::is_legacy();
    eprintln!("monoio driver ({driver:?}): legacy = {legacy}");
    match driver {
        Driver::Auto => assert_eq!(legacy, !monoio::utils::detect_uring()),
        Driver::Legacy => assert!(legacy),
    }
}

async fn tcp_pair() -> (
    (omq_monoio::Reader, omq_monoio::Writer),
    (omq_monoio::Reader, omq_monoio::Writer),
) {
    let ep: Endpoint = "tcp://127.0.0.1:0".parse().unwrap();
    let (listener, bound) = Monoio::bind(&ep).await.unwrap();
    let accept = monoio::spawn(omq_driver::Listener::<Monoio>::accept(listener));
    let dialed = Monoio::connect(&bound.parse().unwrap()).await.unwrap();
    let (_listener, accepted) = accept.await;
    (dialed, accepted.unwrap())
}

async fn a_partial_write_reports_its_count_and_resends_nothing(_: Driver) {
    // 16 MiB in 64 chunks is more than the socket buffers take at once: the writes are
    // partial, and the bytes that arrive are exactly the stream, in order, once.
    let ((_r, mut w), (r, _w)) = tcp_pair().await;
    let chunks: Vec<Bytes> = (0..64u32)
        .map(|i| {
            let v: Vec<u8> = (0..256 * 1024u32)
                .map(|j| (i * 7 + j % 251) as u8)
                .collect();
            Bytes::from(v)
        })
        .collect();
    let expected: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    let total = expected.len();
    let reader = monoio::spawn(async move {
        let mut r = r;
        let mut got = BytesMut::with_capacity(total);
        while got.len() < total {
            let (r2, b, n) = r.read(got).await;
            assert!(n.unwrap() > 0, "early end of stream");
            r = r2;
            got = b;
        }
        got
    });
    let mut pending = chunks;
    let mut writes = 0;
    let mut partial = false;
    while !pending.is_empty() {
        let (w2, back, n) = w.write(pending).await;
        w = w2;
        writes += 1;
        let mut n = n.unwrap();
        assert!(n > 0);
        let sent: usize = back.iter().map(Bytes::len).sum();
        assert!(n <= sent);
        partial |= n < sent;
        pending = Vec::new();
        for mut c in back {
            if n >= c.len() {
                n -= c.len();
            } else {
                let _ = c.split_to(n);
                n = 0;
                pending.push(c);
            }
        }
    }
    let got = within(reader).await;
    assert_eq!(got.len(), total);
    assert!(got[..] == expected[..], "the stream arrives once, in order");
    eprintln!("{writes} writes, partial: {partial}");
}

async fn accepted_tcp_shows_the_peer_address(driver: Driver) {
    // (Writers kept: dropping both shuts the connection down, and a closed socket has no peer.)
    let ((dialed, _w1), (accepted, _w2)) = tcp_pair().await;
    assert_eq!(dialed.peer_address().as_deref(), Some("127.0.0.1"));
    assert_eq!(accepted.peer_address().as_deref(), Some("127.0.0.1"));
    let ep: Endpoint = format!("ipc://@omq-monoio-basic-peer-{}", driver.tag())
        .parse()
        .unwrap();
    let (_l, bound) = Monoio::bind(&ep).await.unwrap();
    let (r, _w) = Monoio::connect(&bound.parse().unwrap()).await.unwrap();
    assert_eq!(r.peer_address(), None);
}

async fn spawned_tasks_run_after_their_join_handle_is_dropped(_: Driver) {
    // `Runtime::spawn` drops monoio's JoinHandle: that must detach, not cancel.
    let (tx, rx) = futures_channel::oneshot::channel();
    drop(monoio::spawn(async move {
        monoio::time::sleep(Duration::from_millis(10)).await;
        tx.send(()).unwrap();
    }));
    within(rx).await.unwrap();
}

async fn reads_append_after_unconsumed_bytes_and_writes_are_vectored(_: Driver) {
    let ((_r, w), (r, _w)) = tcp_pair().await;

    let chunks = vec![Bytes::from_static(b"hel"), Bytes::from_static(b"lo")];
    let (_w, chunks, n) = w.write(chunks).await;
    assert_eq!(n.unwrap(), 5);
    assert_eq!(chunks.len(), 2, "the chunks come back");

    // Bytes the driver has not consumed yet stay in front; new ones land after them.
    let mut buf = BytesMut::with_capacity(64);
    buf.extend_from_slice(b"abc");
    let mut got = 0;
    let mut r = r;
    while buf.len() < 8 {
        let (r2, b2, n) = r.read(buf).await;
        got += n.unwrap();
        r = r2;
        buf = b2;
    }
    assert_eq!(got, 5);
    assert_eq!(&buf[..], b"abchello");

    // A buffer with no spare capacity is grown rather than read as end of stream.
    let (_w, _, n) = _w.write(vec![Bytes::from_static(b"!")]).await;
    n.unwrap();
    let full = BytesMut::from(&b"xy"[..]);
    assert_eq!(full.len(), full.capacity());
    let (_r, buf, n) = r.read(full).await;
    assert_eq!(n.unwrap(), 1);
    assert_eq!(&buf[..], b"xy!");
}

async fn push_pull_over_tcp_and_ipc(driver: Driver) {
    let tag = driver.tag();
    for ep in [
        "tcp://127.0.0.1:0".to_string(),
        format!("ipc:///tmp/omq-monoio-basic-pushpull-{tag}.sock"),
        format!("ipc://@omq-monoio-basic-abstract-{tag}"),
    ] {
        let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
        let bound = pull.bind(&ep).await.unwrap();
        let push = Socket::new(SocketType::Push, Options::default().send_hwm(10_000)).unwrap();
        push.connect(&bound.to_string()).await.unwrap();
        within(push.send(Message::from("hello"))).await.unwrap();
        within(push.send(Message::multipart(["a", "", "c"])))
            .await
            .unwrap();
        let big = vec![9u8; 200_000];
        within(push.send(Message::from(big.clone()))).await.unwrap();
        assert_eq!(within(pull.recv()).await.unwrap(), Message::from("hello"));
        assert_eq!(
            within(pull.recv()).await.unwrap(),
            Message::multipart(["a", "", "c"])
        );
        assert_eq!(within(pull.recv()).await.unwrap(), Message::from(big));
    }
}

async fn host_names_resolve_off_the_io_thread(_: Driver) {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let bound = pull.bind("tcp://localhost:0").await.unwrap().to_string();
    let port = bound.rsplit(':').next().unwrap();
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect(&format!("tcp://localhost:{port}"))
        .await
        .unwrap();
    within(push.send(Message::from("by name"))).await.unwrap();
    assert_eq!(within(pull.recv()).await.unwrap(), Message::from("by name"));
}

async fn many_messages_from_spawned_tasks(_: Driver) {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut tasks = Vec::new();
    for t in 0..4u32 {
        let ep = ep.clone();
        tasks.push(monoio::spawn(async move {
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
        within(t).await;
    }
}

async fn req_rep_and_state_errors(_: Driver) {
    let rep = Socket::new(SocketType::Rep, Options::default()).unwrap();
    let ep = rep.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let req = Socket::new(SocketType::Req, Options::default()).unwrap();
    req.connect(&ep).await.unwrap();
    assert!(matches!(req.recv().await, Err(Error::InvalidState)));
    for i in 0..100 {
        req.send(Message::from(format!("q{i}"))).await.unwrap();
        let q = within(rep.recv()).await.unwrap();
        rep.send(q).await.unwrap();
        assert_eq!(
            within(req.recv()).await.unwrap(),
            Message::from(format!("q{i}"))
        );
    }
}

async fn pub_sub_with_prefixes(_: Driver) {
    let publ = Socket::new(SocketType::Pub, Options::default()).unwrap();
    let ep = publ.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let sub = Socket::new(SocketType::Sub, Options::default()).unwrap();
    sub.subscribe("news").unwrap();
    sub.connect(&ep).await.unwrap();
    // Subscriptions take a moment to arrive; publish until one gets through.
    let got = within(async {
        loop {
            publ.send(Message::from("weather")).await.unwrap();
            publ.send(Message::from("news: hi")).await.unwrap();
            if let Ok(m) = monoio::time::timeout(Duration::from_millis(20), sub.recv()).await {
                break m.unwrap();
            }
        }
    })
    .await;
    assert_eq!(got, Message::from("news: hi"));
}

async fn timeouts_and_try_ops(_: Driver) {
    let push = Socket::new(
        SocketType::Push,
        Options::default().send_timeout(Some(Duration::from_millis(50))),
    )
    .unwrap();
    let start = std::time::Instant::now();
    assert!(matches!(
        push.send(Message::from("x")).await,
        Err(Error::WouldBlock)
    ));
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(start.elapsed() < T);
    let e = push.try_send(Message::from("y")).unwrap_err();
    assert!(matches!(e.error, Error::WouldBlock));
    assert_eq!(e.message, Message::from("y"));
    let pull = Socket::new(
        SocketType::Pull,
        Options::default().recv_timeout(Some(Duration::from_millis(50))),
    )
    .unwrap();
    assert!(matches!(pull.recv().await, Err(Error::WouldBlock)));
    assert!(matches!(pull.try_recv(), Err(Error::WouldBlock)));
}

async fn bad_endpoints_and_options_are_clear_errors(driver: Driver) {
    let s = Socket::new(SocketType::Push, Options::default()).unwrap();
    assert!(matches!(s.bind("nonsense").await, Err(Error::Endpoint(_))));
    assert!(matches!(
        s.connect("pgm://eth0;239.1.1.1:5555").await,
        Err(Error::Endpoint(_))
    ));
    assert!(matches!(
        s.bind("tcp://127.0.0.1:99999").await,
        Err(Error::Endpoint(_))
    ));
    assert!(matches!(
        Socket::new(SocketType::Push, Options::default().router_mandatory(true)),
        Err(Error::Option(_))
    ));
    // A port in use.
    let a = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = a.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let b = Socket::new(SocketType::Pull, Options::default()).unwrap();
    assert!(matches!(b.bind(&ep).await, Err(Error::Io(_))));
    // An ipc path in use.
    let ipc = format!("ipc:///tmp/omq-monoio-basic-inuse-{}.sock", driver.tag());
    a.bind(&ipc).await.unwrap();
    assert!(matches!(b.bind(&ipc).await, Err(Error::Io(_))));
    assert!(matches!(
        s.unbind("tcp://127.0.0.1:1").await,
        Err(Error::NotInUse(_))
    ));
}

async fn monitor_stream_reports_connection_events(_: Driver) {
    let server = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let mut events = server.monitor();
    let ep = server.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let client = Socket::new(SocketType::Push, Options::default()).unwrap();
    client.connect(&ep).await.unwrap();
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let e = within(events.next()).await.unwrap();
        kinds.push(e.kind);
    }
    assert_eq!(
        kinds,
        [
            EventKind::Listening,
            EventKind::Accepted,
            EventKind::HandshakeSucceeded
        ]
    );
}

async fn stale_ipc_file_is_replaced_and_ours_removed_on_unbind(driver: Driver) {
    let path = &format!("/tmp/omq-monoio-basic-stale-{}.sock", driver.tag());
    let _ = std::fs::remove_file(path);
    // A socket file left by a dead process: bound, then the listener leaked without unlink.
    drop(std::os::unix::net::UnixListener::bind(path).unwrap());
    assert!(std::path::Path::new(path).exists());
    let s = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = format!("ipc://{path}");
    s.bind(&ep).await.unwrap();
    s.unbind(&ep).await.unwrap();
    // The listener task removes the file as it stops.
    within(async {
        while std::path::Path::new(path).exists() {
            monoio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

async fn a_connecting_push_delivers_after_the_peer_binds_late(driver: Driver) {
    let path = format!("/tmp/omq-monoio-basic-late-{}.sock", driver.tag());
    let _ = std::fs::remove_file(&path);
    let ep = &format!("ipc://{path}");
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect(ep).await.unwrap();
    push.send(Message::from("queued before bind"))
        .await
        .unwrap();
    monoio::time::sleep(Duration::from_millis(50)).await;
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind(ep).await.unwrap();
    assert_eq!(
        within(pull.recv()).await.unwrap(),
        Message::from("queued before bind")
    );
}
