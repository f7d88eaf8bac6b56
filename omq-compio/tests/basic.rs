//! omq-compio end to end over real tcp and ipc sockets, on compio's single-threaded runtime.
//! Timing is only bounded from above, with wide slack.

use bytes::{Bytes, BytesMut};
use omq_compio::Compio;
use omq_driver::{Endpoint, ReadHalf, Runtime, WriteHalf};

mod common;
use common::Driver;

on_both_drivers!(
    reports_the_driver_in_use,
    reads_append_after_unconsumed_bytes_and_writes_are_vectored,
);

async fn reports_the_driver_in_use(driver: Driver) {
    // io_uring where the kernel (and any seccomp filter) allows it, `polling` otherwise: so an
    // "io_uring" suite cannot quietly run on epoll.
    let used = compio::runtime::Runtime::with_current(|r| r.driver_type());
    let kernel_has_io_uring = io_uring::IoUring::new(2).is_ok();
    eprintln!("compio driver ({driver:?}): {used:?}; io_uring available: {kernel_has_io_uring}");
    let expected = match driver {
        Driver::Auto if kernel_has_io_uring => compio::driver::DriverType::IoUring,
        _ => compio::driver::DriverType::Poll,
    };
    assert_eq!(used, expected);
}

async fn reads_append_after_unconsumed_bytes_and_writes_are_vectored(_: Driver) {
    let ep: Endpoint = "tcp://127.0.0.1:0".parse().unwrap();
    let (listener, bound) = Compio::bind(&ep, &Default::default()).await.unwrap();
    let accept = compio::runtime::spawn(omq_driver::Listener::<Compio>::accept(listener));
    let (_r, w) = Compio::connect(&bound.parse().unwrap(), &Default::default())
        .await
        .unwrap();
    let (_listener, accepted) = accept.await.unwrap();
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
