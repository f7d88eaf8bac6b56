//! omq-glommio end to end over real tcp and ipc sockets, on a glommio executor.
//! Timing is only bounded from above, with wide slack.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::future::{select, Either};
use omq_driver::{Endpoint, ReadHalf, Runtime, WriteHalf};
use omq_glommio::{Glommio, Message, Options, Reader, Socket, SocketType, Writer};

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
    let (listener, bound) = Glommio::bind(&ep, &Default::default()).await.unwrap();
    let accept = glommio::spawn_local(omq_driver::Listener::<Glommio>::accept(listener));
    let (_r, w) = Glommio::connect(&bound.parse().unwrap(), &Default::default())
        .await
        .unwrap();
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
    let (listener, bound) = Glommio::bind(&ep.parse().unwrap(), &Default::default())
        .await
        .unwrap();
    let accept = glommio::spawn_local(omq_driver::Listener::<Glommio>::accept(listener));
    let (cr, cw) = Glommio::connect(&bound.parse().unwrap(), &Default::default())
        .await
        .unwrap();
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
    // A port held bound but not listening: dials are refused, and no other process can take
    // it meanwhile (as a port picked, closed and reused could be).
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = held.local_addr().unwrap().as_socket().unwrap().port();
    let e = Glommio::connect(
        &format!("tcp://127.0.0.1:{port}").parse().unwrap(),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    let e = Glommio::connect(
        &"ipc:///tmp/omq-glommio-basic-nobody.sock".parse().unwrap(),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}
