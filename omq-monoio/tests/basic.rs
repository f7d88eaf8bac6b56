//! omq-monoio end to end over real tcp and ipc sockets, on monoio's thread-per-core runtime
//! (io_uring and the forced legacy driver).
//! Timing is only bounded from above, with wide slack.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use omq_driver::{Endpoint, ReadHalf, Runtime, WriteHalf};
use omq_monoio::Monoio;

mod common;
use common::{within, Driver};

on_both_drivers!(
    reports_the_driver_in_use,
    reads_append_after_unconsumed_bytes_and_writes_are_vectored,
    a_partial_write_reports_its_count_and_resends_nothing,
    accepted_tcp_shows_the_peer_address,
    spawned_tasks_run_after_their_join_handle_is_dropped,
);

async fn reports_the_driver_in_use(driver: Driver) {
    // io_uring where the kernel (and any seccomp filter) allows it, legacy (epoll) otherwise.
    let legacy = monoio::utils::is_legacy();
    eprintln!("monoio driver ({driver:?}): legacy = {legacy}");
    match driver {
        // Checked against the kernel itself, not against monoio's own detection (which would
        // only show monoio agrees with itself).
        Driver::Auto => assert_eq!(legacy, io_uring::IoUring::new(2).is_err()),
        Driver::Legacy => assert!(legacy),
    }
}

async fn tcp_pair() -> (
    (omq_monoio::Reader, omq_monoio::Writer),
    (omq_monoio::Reader, omq_monoio::Writer),
) {
    let ep: Endpoint = "tcp://127.0.0.1:0".parse().unwrap();
    let (listener, bound) = Monoio::bind(&ep, &Default::default()).await.unwrap();
    let accept = monoio::spawn(omq_driver::Listener::<Monoio>::accept(listener));
    let dialed = Monoio::connect(&bound.parse().unwrap(), &Default::default())
        .await
        .unwrap();
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
    let (_l, bound) = Monoio::bind(&ep, &Default::default()).await.unwrap();
    let (r, _w) = Monoio::connect(&bound.parse().unwrap(), &Default::default())
        .await
        .unwrap();
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
