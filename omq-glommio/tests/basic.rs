//! omq-glommio end to end over real tcp and ipc sockets, on a glommio executor.
//! Timing is only bounded from above, with wide slack.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use omq_driver::{Endpoint, ReadHalf, Runtime, WriteHalf};
use omq_glommio::{
    Error, EventKind, Glommio, Message, Options, Reader, Socket, SocketType, Writer,
};

/// Upper bound for anything a test waits on.
const T: Duration = Duration::from_secs(10);

/// `f` or a panic after [`T`].
async fn within<F: std::future::Future>(f: F) -> F::Output {
    timeout(T, f).await.expect("took too long")
}

async fn timeout<F: std::future::Future>(d: Duration, f: F) -> Option<F::Output> {
    match select(std::pin::pin!(f), std::pin::pin!(glommio::timer::sleep(d))).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

/// Declares each `async fn name(tag: &str)` as a test `glommio_executor::name`, run on a
/// fresh glommio executor (the tag keeps ipc paths apart).
macro_rules! on_glommio {
    ($($name:ident),* $(,)?) => {
        mod glommio_executor {
            $(#[test] fn $name() {
                omq_glommio::block_on(super::$name(stringify!($name))).expect("glommio executor")
            })*
        }
    };
}

on_glommio!(
    io_uring_is_checked_before_the_executor_starts,
    spawned_tasks_outlive_their_dropped_handles,
    reads_append_after_unconsumed_bytes_and_writes_are_vectored,
    a_read_and_a_blocked_write_pend_at_once_on_one_stream,
    a_refused_connect_says_so,
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

async fn io_uring_is_checked_before_the_executor_starts(_: &str) {
    // We are running, so the check passed; it is cheap enough to repeat.
    omq_glommio::check_io_uring().unwrap();
}

async fn spawned_tasks_outlive_their_dropped_handles(_: &str) {
    // `Runtime::spawn` detaches (a glommio `Task` dropped undetached would cancel it): a
    // dropped socket's connection and background close keep running until what it queued is
    // out.
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let push = Socket::new(SocketType::Push, Options::default().send_hwm(100_000)).unwrap();
    push.connect(&ep).await.unwrap();
    push.send(Message::from("first")).await.unwrap();
    assert_eq!(within(pull.recv()).await.unwrap(), Message::from("first"));
    for i in 0..20_000u32 {
        push.send(Message::from(i.to_be_bytes().to_vec()))
            .await
            .unwrap();
    }
    drop(push);
    for i in 0..20_000u32 {
        let m = within(pull.recv()).await.unwrap();
        assert_eq!(m, Message::from(i.to_be_bytes().to_vec()));
    }
}

async fn reads_append_after_unconsumed_bytes_and_writes_are_vectored(_: &str) {
    let ep: Endpoint = "tcp://127.0.0.1:0".parse().unwrap();
    let (listener, bound) = Glommio::bind(&ep).await.unwrap();
    let accept = glommio::spawn_local(omq_driver::Listener::<Glommio>::accept(listener));
    let (_r, w) = Glommio::connect(&bound.parse().unwrap()).await.unwrap();
    let (_listener, accepted) = accept.await;
    let (r, _w) = accepted.unwrap();

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

/// A connected pair of raw streams over `ep`: (client reader, client writer, server reader,
/// server writer).
async fn raw_pair(ep: &str) -> (Reader, Writer, Reader, Writer) {
    let (listener, bound) = Glommio::bind(&ep.parse().unwrap()).await.unwrap();
    let accept = glommio::spawn_local(omq_driver::Listener::<Glommio>::accept(listener));
    let (cr, cw) = Glommio::connect(&bound.parse().unwrap()).await.unwrap();
    let (_listener, accepted) = accept.await;
    let (sr, sw) = accepted.unwrap();
    (cr, cw, sr, sw)
}

async fn a_read_and_a_blocked_write_pend_at_once_on_one_stream(tag: &str) {
    // The driver keeps a read in flight while a write waits for room, on the one stream both
    // halves share. Here the client's write outgrows the socket buffers while its read waits;
    // the server drains (checking every byte arrives once, in order, across partial writes
    // and the wait for writability), then answers, and both client operations complete.
    const TOTAL: usize = 16 << 20;
    for ep in [
        "tcp://127.0.0.1:0".to_string(),
        format!("ipc://@omq-glommio-basic-pend-{tag}"),
    ] {
        let (cr, cw, mut sr, sw) = raw_pair(&ep).await;
        let pattern: Bytes = (0..TOTAL).map(|i| (i % 251) as u8).collect();
        let expected = pattern.clone();
        let chunk = move |from: usize, len: usize| pattern.slice(from..from + len);
        let writes = async move {
            let (mut w, mut sent, mut calls) = (cw, 0usize, 0u32);
            while sent < TOTAL {
                // Two chunks per call: a write that takes both proves the vectored path.
                // Exactly TOTAL bytes in all, so the server reads them all.
                let a = (TOTAL - sent).min(1 << 20);
                let b = (TOTAL - sent - a).min(1 << 20);
                let chunks = vec![chunk(sent, a), chunk(sent + a, b)];
                let (w2, _, n) = w.write(chunks).await;
                w = w2;
                sent += n.unwrap();
                calls += 1;
            }
            (w, calls)
        };
        let read = cr.read(BytesMut::with_capacity(64));
        let server = async move {
            glommio::timer::sleep(Duration::from_millis(50)).await;
            let mut buf = BytesMut::with_capacity(1 << 16);
            let mut seen = 0usize;
            while seen < TOTAL {
                let (r2, b2, n) = sr.read(buf).await;
                assert!(n.unwrap() > 0, "early end of stream");
                sr = r2;
                buf = b2;
                assert!(
                    buf[..] == expected[seen..seen + buf.len()],
                    "at byte {seen}"
                );
                seen += buf.len();
                buf.clear();
            }
            let (_, _, n) = sw.write(vec![Bytes::from_static(b"done")]).await;
            n.unwrap();
            seen
        };
        let ((_w, calls), (_r, got, n), seen) =
            within(async { futures_util::join!(writes, read, server) }).await;
        assert_eq!(seen, TOTAL);
        assert_eq!(&got[..n.unwrap()], b"done");
        eprintln!("{ep}: {seen} bytes in {calls} write calls");
    }
}

async fn a_refused_connect_says_so(_: &str) {
    // The driver redials after a refusal and gives up on anything else: the kind must
    // survive glommio's error type.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let e = Glommio::connect(&format!("tcp://127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    let e = Glommio::connect(&"ipc:///tmp/omq-glommio-basic-nobody.sock".parse().unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

async fn push_pull_over_tcp_and_ipc(tag: &str) {
    for ep in [
        "tcp://127.0.0.1:0".to_string(),
        format!("ipc:///tmp/omq-glommio-basic-pushpull-{tag}.sock"),
        format!("ipc://@omq-glommio-basic-abstract-{tag}"),
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

async fn host_names_resolve_off_the_io_thread(_: &str) {
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

async fn many_messages_from_spawned_tasks(_: &str) {
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut tasks = Vec::new();
    for t in 0..4u32 {
        let ep = ep.clone();
        tasks.push(glommio::spawn_local(async move {
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

async fn req_rep_and_state_errors(_: &str) {
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

async fn pub_sub_with_prefixes(_: &str) {
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
            if let Some(m) = timeout(Duration::from_millis(20), sub.recv()).await {
                break m.unwrap();
            }
        }
    })
    .await;
    assert_eq!(got, Message::from("news: hi"));
}

async fn timeouts_and_try_ops(_: &str) {
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

async fn bad_endpoints_and_options_are_clear_errors(tag: &str) {
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
    let ipc = format!("ipc:///tmp/omq-glommio-basic-inuse-{}.sock", tag);
    a.bind(&ipc).await.unwrap();
    assert!(matches!(b.bind(&ipc).await, Err(Error::Io(_))));
    assert!(matches!(
        s.unbind("tcp://127.0.0.1:1").await,
        Err(Error::NotInUse(_))
    ));
}

async fn monitor_stream_reports_connection_events(_: &str) {
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

async fn stale_ipc_file_is_replaced_and_ours_removed_on_unbind(tag: &str) {
    let path = &format!("/tmp/omq-glommio-basic-stale-{}.sock", tag);
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
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

async fn a_connecting_push_delivers_after_the_peer_binds_late(tag: &str) {
    let path = format!("/tmp/omq-glommio-basic-late-{}.sock", tag);
    let _ = std::fs::remove_file(&path);
    let ep = &format!("ipc://{path}");
    let push = Socket::new(SocketType::Push, Options::default()).unwrap();
    push.connect(ep).await.unwrap();
    push.send(Message::from("queued before bind"))
        .await
        .unwrap();
    glommio::timer::sleep(Duration::from_millis(50)).await;
    let pull = Socket::new(SocketType::Pull, Options::default()).unwrap();
    pull.bind(ep).await.unwrap();
    assert_eq!(
        within(pull.recv()).await.unwrap(),
        Message::from("queued before bind")
    );
}
