//! The user API, the same on every backend: what each backend's own tests used to repeat,
//! written once here (push/pull with large and multipart messages over tcp, ipc and abstract
//! ipc, host names, many senders, req/rep state errors, pub/sub prefixes, timeouts and
//! non-waiting calls, clear errors for bad endpoints and options, monitor events, stale ipc
//! files, connect before bind).

use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use omq_driver::{Error, EventKind, Message, Options, Runtime, Socket, SocketOption, SocketType};

use crate::backend::Backend;

const T: Duration = Duration::from_secs(10);

static UNIQUE: AtomicU64 = AtomicU64::new(0);

pub(crate) fn unique(tag: &str) -> String {
    format!(
        "{tag}-{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// `f`, or a panic after `d` (on the runtime's own timer).
pub(crate) async fn within_for<R: Runtime, F: std::future::Future>(
    d: Duration,
    f: F,
) -> Option<F::Output> {
    let f = Box::pin(f);
    let t = Box::pin(R::sleep_until(R::now() + d));
    match select(f, t).await {
        Either::Left((v, _)) => Some(v),
        Either::Right(_) => None,
    }
}

pub(crate) async fn within<R: Runtime, F: std::future::Future>(f: F) -> F::Output {
    within_for::<R, F>(T, f).await.expect("took too long")
}

/// The API cases.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Case {
    /// PUSH/PULL over tcp, ipc and abstract ipc with multipart and a 200 KB message.
    PushPull,
    /// A listener takes connections already waiting in the kernel's queue without waiting for
    /// a turn of the runtime (a completion-based backend once took one per turn, and a busy
    /// PUB then accepted a burst of subscribers at a few a second).
    AcceptWaitingAtOnce,
    /// A listener with many connections waiting accepts them in bursts and lets the runtime's
    /// other tasks run between (a thread-per-core runtime has no other thread to run them).
    AcceptBurstYields,
    /// A write the socket has room for completes on its first poll, over tcp and ipc (a
    /// completion-based backend must not wait for the runtime to collect it).
    WriteWithRoomAtOnce,
    /// `tcp://localhost` resolves, for bind and connect.
    HostNames,
    /// Four senders, 5,000 messages each, order kept per sender.
    ManySenders,
    /// REQ/REP round trips and state errors.
    ReqRep,
    /// PUB/SUB prefix filtering.
    PubSub,
    /// SNDTIMEO, RCVTIMEO, try_send and try_recv.
    Timeouts,
    /// Bad endpoints, options on the wrong type, addresses in use.
    BadInput,
    /// LISTENING, ACCEPTED, HANDSHAKE_SUCCEEDED in order; the last monitor dropped stops it.
    Monitor,
    /// A stale ipc file is replaced, ours removed on unbind and when the socket is dropped.
    StaleIpc,
    /// Messages queued before the peer binds are delivered.
    LateBind,
    /// `close()` with the default infinite LINGER waits for a late peer without polling.
    CloseWaitsForALatePeer,
    /// SUB, XSUB and DISH linger zero unless set (libzmq's default): an XSUB holding a
    /// subscription and a message for a publisher that never comes closes at once, where the
    /// infinite LINGER of the other types would wait for ever; with LINGER set, it waits.
    SubscribersDoNotLinger,
    /// PUB filters on its own side: a raw ZMTP subscriber (3.1 and 3.0 forms) never sees a
    /// topic it did not subscribe to on the wire.
    PublisherFilters,
    /// A socket closed (or dropped) while it is still trying to connect never connects later.
    NoDialAfterClose,
    /// Once `unbind` or `close` returns, the address can be bound again at once, and an old
    /// ipc listener never removes the new one's file.
    RebindAtOnce,
    /// STREAM against plain TCP, both ways: raw bytes behind a generated id, connection and
    /// end as `[id][""]`, an empty message closes after what was written before.
    StreamRawTcp,
    /// RADIO and DISH over `udp://` (RADIO connects, DISH binds): groups filtered by the
    /// DISH, order kept on loopback, malformed and oversized datagrams dropped without harm,
    /// the port free again after unbind, other pairings refused.
    RadioDishUdp,
    /// A REP dropped right after sending its last reply (default LINGER) still delivers it.
    LastReplyThenDrop,
}

/// Reads `[id][bytes]` messages from a STREAM until `want` bytes came from `id`.
async fn stream_read<R: Runtime>(s: &Socket<R>, id: &[u8], want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < want {
        let m = within::<R, _>(s.recv()).await.unwrap();
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(&m.parts()[0][..], id);
        got.extend_from_slice(&m.parts()[1]);
    }
    got
}

async fn stream_raw_tcp<R: Runtime>() {
    use std::io::{Read, Write};
    let o = Options::default();
    // A plain TCP client against a bound STREAM.
    let server = Socket::<R>::new(SocketType::Stream, o.clone()).unwrap();
    let ep = server.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let addr = ep.trim_start_matches("tcp://").to_string();
    let client = std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(T)).unwrap();
        c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        let mut reply = Vec::new();
        c.read_to_end(&mut reply).unwrap();
        reply
    });
    let hello = within::<R, _>(server.recv()).await.unwrap();
    assert_eq!(hello.len(), 2);
    assert!(
        hello.parts()[1].is_empty(),
        "a connection is announced as [id][\"\"]"
    );
    let id = hello.parts()[0].to_vec();
    let request = stream_read(&server, &id, 18).await;
    assert_eq!(request, b"GET / HTTP/1.0\r\n\r\n");
    let body = vec![b'x'; 300_000];
    server
        .send(Message::multipart([id.clone(), body.clone()]))
        .await
        .unwrap();
    server
        .send(Message::multipart([id.clone(), Vec::new()]))
        .await
        .unwrap();
    // Everything written before the close arrives, then the end of the stream.
    assert_eq!(joined::<R, _>(client).await, body);
    let end = within::<R, _>(server.recv()).await.unwrap();
    assert_eq!(
        (end.parts()[0].to_vec(), end.parts()[1].is_empty()),
        (id, true)
    );

    // A STREAM that connects to a plain TCP server.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        s.write_all(b"banner").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        buf
    });
    let dialer = Socket::<R>::new(SocketType::Stream, o).unwrap();
    dialer
        .connect(&format!("tcp://127.0.0.1:{port}"))
        .await
        .unwrap();
    let hello = within::<R, _>(dialer.recv()).await.unwrap();
    let id = hello.parts()[0].to_vec();
    assert!(hello.parts()[1].is_empty());
    assert_eq!(stream_read(&dialer, &id, 6).await, b"banner");
    dialer
        .send(Message::multipart([id, b"ping".to_vec()]))
        .await
        .unwrap();
    assert_eq!(&joined::<R, _>(peer).await, b"ping");
}

async fn radio_dish_udp<R: Runtime>() {
    let o = Options::default;
    let dish = Socket::<R>::new(SocketType::Dish, o().recv_timeout(Some(T))).unwrap();
    let bound = dish.bind("udp://127.0.0.1:0").await.unwrap().to_string();
    assert!(bound.starts_with("udp://127.0.0.1:"), "{bound}");
    assert!(!bound.ends_with(":0"), "{bound}");
    dish.join("news").unwrap();
    let radio = Socket::<R>::new(SocketType::Radio, o()).unwrap();
    radio.connect(&bound).await.unwrap();
    // Lock-step, so that nothing is lost to a full kernel buffer: what arrives is exactly
    // the group joined, in order.
    for i in 0..100 {
        for group in ["weather", "news", "newsy"] {
            radio
                .send(Message::from(format!("{group}-{i}")).with_group(group))
                .await
                .unwrap();
        }
        let m = within::<R, _>(dish.recv()).await.unwrap();
        assert_eq!(m.group(), Some(&b"news"[..]));
        assert_eq!(m, Message::from(format!("news-{i}")));
    }
    // Hostile datagrams from a plain udp socket: empty, shorter than the group they announce,
    // the largest udp carries. None is delivered, and the DISH goes on.
    let port: u16 = bound.rsplit(':').next().unwrap().parse().unwrap();
    let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut huge = vec![4u8];
    huge.extend_from_slice(b"news");
    huge.resize(65_507, 0x5a);
    for d in [&b""[..], b"\x09news", b"\xffnews", &huge] {
        raw.send_to(d, ("127.0.0.1", port)).unwrap();
    }
    raw.send_to(b"\x04newsfrom raw", ("127.0.0.1", port))
        .unwrap();
    let m = within::<R, _>(dish.recv()).await.unwrap();
    assert!(
        m == Message::from("from raw") || m.parts()[0].len() == 65_502,
        "the largest datagram arrives whole or not at all: {} bytes",
        m.parts()[0].len()
    );
    if m != Message::from("from raw") {
        assert_eq!(
            within::<R, _>(dish.recv()).await.unwrap(),
            Message::from("from raw")
        );
    }
    // A message too large for a datagram libzmq can read is not sent; the next one is.
    radio
        .send(Message::from(vec![0u8; 9000]).with_group("news"))
        .await
        .unwrap();
    radio
        .send(Message::from("after").with_group("news"))
        .await
        .unwrap();
    assert_eq!(
        within::<R, _>(dish.recv()).await.unwrap(),
        Message::from("after")
    );
    // Host names resolve (off the runtime's thread) for both sides.
    let named = Socket::<R>::new(SocketType::Dish, o().recv_timeout(Some(T))).unwrap();
    let at = named.bind("udp://localhost:0").await.unwrap().to_string();
    let port = at.rsplit(':').next().unwrap().to_string();
    named.join("n").unwrap();
    let by_name = Socket::<R>::new(SocketType::Radio, o()).unwrap();
    by_name
        .connect(&format!("udp://localhost:{port}"))
        .await
        .unwrap();
    by_name
        .send(Message::from("by name").with_group("n"))
        .await
        .unwrap();
    assert_eq!(
        within::<R, _>(named.recv()).await.unwrap(),
        Message::from("by name")
    );
    // Unbinding frees the port at once.
    dish.unbind(&bound).await.unwrap();
    let again = Socket::<R>::new(SocketType::Dish, o()).unwrap();
    assert_eq!(again.bind(&bound).await.unwrap().to_string(), bound);
    // udp is for a DISH binding and a RADIO connecting only.
    for (t, bind) in [
        (SocketType::Pub, true),
        (SocketType::Radio, true),
        (SocketType::Dish, false),
        (SocketType::Pull, false),
    ] {
        let s = Socket::<R>::new(t, o()).unwrap();
        let r = if bind {
            s.bind("udp://127.0.0.1:0").await.map(|_| ())
        } else {
            s.connect("udp://127.0.0.1:5555").await
        };
        assert!(r.is_err(), "{t:?} bind={bind}");
    }
    radio.close().await.unwrap();
}

/// Eight clients connect over tcp and over ipc before the listener accepts anything; once the
/// first is accepted (a readiness backend learns the listener is readable in a turn of its
/// loop), each of the other seven is taken on the first poll of its accept.
async fn accept_waiting_at_once<R: Runtime>() {
    use omq_driver::Listener;
    use std::pin::pin;
    let transport = omq_core::options::TransportOptions::default();
    for ep in [
        "tcp://127.0.0.1:0".to_string(),
        format!("ipc:///tmp/omq-api-{}.sock", unique("accept")),
    ] {
        let endpoint: omq_core::Endpoint = ep.parse().unwrap();
        let (listener, bound) = R::bind(&endpoint, &transport).await.unwrap();
        let addr = bound.split_once("://").unwrap().1.to_string();
        // Connected (queued by the kernel) before any accept: blocking connects return once the
        // handshake is done, with the listener's backlog to hold them.
        let _clients: Vec<Box<dyn std::any::Any>> = (0..8)
            .map(|_| -> Box<dyn std::any::Any> {
                if bound.starts_with("tcp") {
                    Box::new(std::net::TcpStream::connect(&addr).unwrap())
                } else {
                    Box::new(std::os::unix::net::UnixStream::connect(&addr).unwrap())
                }
            })
            .collect();
        let (mut listener, first) = within::<R, _>(listener.accept()).await;
        first.unwrap();
        for i in 1..8 {
            let mut accept = pin!(listener.accept());
            match futures_util::poll!(accept.as_mut()) {
                std::task::Poll::Ready((l, r)) => {
                    r.unwrap();
                    listener = l;
                }
                std::task::Poll::Pending => {
                    panic!("{bound}: connection {i} was waiting, yet its accept waited too")
                }
            }
        }
    }
}

async fn write_with_room_at_once<R: Runtime>() {
    use omq_driver::WriteHalf;
    use std::io::Read;
    use std::pin::pin;
    let transport = omq_core::options::TransportOptions::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (_r, tcp) = within::<R, _>(R::connect_tcp(addr, &transport))
        .await
        .unwrap();
    let (mut tcp_peer, _) = listener.accept().unwrap();
    let (ours, mut ipc_peer) = std::os::unix::net::UnixStream::pair().unwrap();
    let (_r2, ipc) = R::ipc_stream(ours).unwrap();
    // A readiness runtime learns that a stream it has just registered is writable from its
    // reactor's next poll (tokio's multi-threaded one on another worker): give it that poll,
    // as the tcp stream had while connecting, so the writes below meet a socket known to have
    // room (1 run in 20 on tokio failed its first ipc write without this).
    R::sleep_until(R::now() + Duration::from_millis(20)).await;
    for (name, writer, peer) in [
        ("tcp", tcp, &mut tcp_peer as &mut dyn Read),
        ("ipc", ipc, &mut ipc_peer as &mut dyn Read),
    ] {
        let mut writer = writer;
        for round in 0..3 {
            let chunks = vec![
                bytes::Bytes::from_static(b"head"),
                bytes::Bytes::from_static(b"body"),
            ];
            let mut write = pin!(writer.write(chunks));
            match futures_util::poll!(write.as_mut()) {
                std::task::Poll::Ready((w, _, r)) => {
                    assert_eq!(r.unwrap(), 8, "{name}");
                    writer = w;
                }
                std::task::Poll::Pending => {
                    panic!("{name}: write {round} had room, yet it waited")
                }
            }
            let mut got = [0u8; 8];
            peer.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"headbody", "{name}");
        }
    }
}

/// A helper thread's result, waited for without blocking the runtime (on a single-threaded
/// one, `join` would stop the very sockets the thread talks to).
async fn joined<R: Runtime, T>(t: std::thread::JoinHandle<T>) -> T {
    let deadline = R::now() + T_JOIN;
    while !t.is_finished() {
        assert!(R::now() < deadline, "the helper thread never finished");
        R::sleep_until(R::now() + Duration::from_millis(5)).await;
    }
    t.join().expect("the helper thread panicked")
}

const T_JOIN: Duration = Duration::from_secs(30);

/// Runs one case on backend `B`.
pub fn run_api<B: Backend>(case: Case) {
    if let Case::AcceptBurstYields = case {
        return B::block_on_one_thread(accept_burst_yields::<B>());
    }
    B::block_on(run_case::<B::R>(case));
}

/// 300 connections wait at once; a probe task on the same thread counts the ACCEPTED events
/// it finds each time it runs. A listener that took every waiting connection in one go would
/// show them all in one count (tokio's own budget cuts its accepts at 128 a poll; the
/// thread-per-core runtimes have none). On one thread: a multi-threaded runtime accepts on a
/// worker while this thread connects, before the probe ever runs.
async fn accept_burst_yields<B: Backend>() {
    const N: usize = 300;
    let router = Socket::<B::R>::new(SocketType::Router, Options::default()).unwrap();
    router.set_option(SocketOption::Backlog(1024)).unwrap();
    let mut monitor = router.monitor();
    let bound = router.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let addr = bound.trim_start_matches("tcp://").to_string();
    // Connected before the listener runs again: the kernel completes each handshake and
    // queues it (within the backlog), so all N wait for an accept at once.
    let clients: Vec<std::net::TcpStream> = (0..N)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let (tx, largest) = futures_channel::oneshot::channel();
    B::spawn(async move {
        let (mut accepted, mut largest) = (0usize, 0usize);
        let deadline = B::R::now() + T_JOIN;
        while accepted < N {
            assert!(B::R::now() < deadline, "{accepted} of {N} accepted");
            let mut step = 0;
            while let Poll::Ready(Some(e)) = futures_util::poll!(monitor.next()) {
                if e.kind == EventKind::Accepted {
                    step += 1;
                }
            }
            accepted += step;
            largest = largest.max(step);
            B::R::yield_now().await;
        }
        let _ = tx.send(largest);
    });
    let largest = largest.await.expect("the probe task ended without a count");
    assert!(
        largest <= N / 4,
        "{largest} of {N} connections were accepted while no other task ran"
    );
    drop(clients);
}

async fn run_case<R: Runtime>(case: Case) {
    let new = |t: SocketType, o: Options| Socket::<R>::new(t, o).unwrap();
    let d = Options::default;
    match case {
        Case::StreamRawTcp => stream_raw_tcp::<R>().await,
        Case::AcceptWaitingAtOnce => accept_waiting_at_once::<R>().await,
        Case::AcceptBurstYields => unreachable!("run_api runs it on its backend"),
        Case::WriteWithRoomAtOnce => write_with_room_at_once::<R>().await,
        Case::RadioDishUdp => radio_dish_udp::<R>().await,
        Case::PushPull => {
            for ep in [
                "tcp://127.0.0.1:0".to_string(),
                format!("ipc:///tmp/omq-api-{}.sock", unique("pp")),
                format!("ipc://@omq-api-{}", unique("abstract")),
            ] {
                let pull = new(SocketType::Pull, d());
                let bound = pull.bind(&ep).await.unwrap();
                let push = new(SocketType::Push, d().send_hwm(10_000));
                push.connect(&bound).await.unwrap(); // an Endpoint, as bind returned it
                let big = vec![9u8; 200_000];
                for m in [
                    Message::from("hello"),
                    Message::multipart(["a", "", "c"]),
                    Message::from(big),
                ] {
                    within::<R, _>(push.send(m.clone())).await.unwrap();
                    assert_eq!(within::<R, _>(pull.recv()).await.unwrap(), m);
                }
            }
        }
        Case::HostNames => {
            let pull = new(SocketType::Pull, d());
            let bound = pull.bind("tcp://localhost:0").await.unwrap().to_string();
            let port = bound.rsplit(':').next().unwrap().to_string();
            let push = new(SocketType::Push, d());
            push.connect(&format!("tcp://localhost:{port}"))
                .await
                .unwrap();
            within::<R, _>(push.send(Message::from("by name")))
                .await
                .unwrap();
            assert_eq!(
                within::<R, _>(pull.recv()).await.unwrap(),
                Message::from("by name")
            );
            // An interface's name binds its address (libzmq's `tcp://eth0:5555`).
            let by_nic = new(SocketType::Pull, d());
            let bound = by_nic.bind("tcp://lo:0").await.unwrap().to_string();
            assert!(bound.starts_with("tcp://127.0.0.1:"), "{bound}");
            let push = new(SocketType::Push, d());
            push.connect(&bound).await.unwrap();
            within::<R, _>(push.send(Message::from("by interface")))
                .await
                .unwrap();
            assert_eq!(
                within::<R, _>(by_nic.recv()).await.unwrap(),
                Message::from("by interface")
            );
        }
        Case::ManySenders => {
            let pull = new(SocketType::Pull, d());
            let ep = pull.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let senders = (0..4u32).map(|t| {
                let ep = ep.clone();
                async move {
                    let push = Socket::<R>::new(SocketType::Push, Options::default()).unwrap();
                    push.connect(&ep).await.unwrap();
                    for i in 0..5000u32 {
                        push.send(Message::multipart([t.to_be_bytes(), i.to_be_bytes()]))
                            .await
                            .unwrap();
                    }
                    push.close().await.unwrap();
                }
            });
            let receiver = async {
                let mut next = [0u32; 4];
                for _ in 0..20_000 {
                    let m = within::<R, _>(pull.recv()).await.unwrap();
                    let t = u32::from_be_bytes(m.parts()[0][..].try_into().unwrap()) as usize;
                    let i = u32::from_be_bytes(m.parts()[1][..].try_into().unwrap());
                    assert_eq!(i, next[t], "per-sender order");
                    next[t] += 1;
                }
            };
            futures_util::future::join(futures_util::future::join_all(senders), receiver).await;
        }
        Case::ReqRep => {
            let rep = new(SocketType::Rep, d());
            let ep = rep.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let req = new(SocketType::Req, d());
            req.connect(&ep).await.unwrap();
            assert!(matches!(req.recv().await, Err(Error::InvalidState)));
            for i in 0..100 {
                req.send(Message::from(format!("q{i}"))).await.unwrap();
                let q = within::<R, _>(rep.recv()).await.unwrap();
                rep.send(q).await.unwrap();
                let a = within::<R, _>(req.recv()).await.unwrap();
                assert_eq!(a, Message::from(format!("q{i}")));
            }
        }
        Case::PubSub => {
            let publ = new(SocketType::Pub, d());
            let ep = publ.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let sub = new(SocketType::Sub, d());
            sub.subscribe("news").unwrap();
            sub.connect(&ep).await.unwrap();
            // Subscriptions take a moment to arrive; publish until one gets through.
            let got = within::<R, _>(async {
                loop {
                    publ.send(Message::from("weather")).await.unwrap();
                    publ.send(Message::from("news: hi")).await.unwrap();
                    if let Some(m) = within_for::<R, _>(Duration::from_millis(20), sub.recv()).await
                    {
                        break m.unwrap();
                    }
                }
            })
            .await;
            assert_eq!(got, Message::from("news: hi"));
        }
        Case::Timeouts => {
            let push = new(
                SocketType::Push,
                d().send_timeout(Some(Duration::from_millis(50))),
            );
            let start = Instant::now();
            assert!(matches!(
                push.send(Message::from("x")).await,
                Err(Error::WouldBlock)
            ));
            assert!(start.elapsed() >= Duration::from_millis(50) && start.elapsed() < T);
            let e = push.try_send(Message::from("y")).unwrap_err();
            assert!(matches!(e.error, Error::WouldBlock));
            assert_eq!(e.message, Message::from("y"));
            let pull = new(
                SocketType::Pull,
                d().recv_timeout(Some(Duration::from_millis(50))),
            );
            assert!(matches!(pull.recv().await, Err(Error::WouldBlock)));
            assert!(matches!(pull.try_recv(), Err(Error::WouldBlock)));
        }
        Case::BadInput => {
            let s = new(SocketType::Push, d());
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
                Socket::<R>::new(SocketType::Push, d().router_mandatory(true)),
                Err(Error::Option(_))
            ));
            let a = new(SocketType::Pull, d());
            let ep = a.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let b = new(SocketType::Pull, d());
            // The OS's error arrives whole: its code survives, into io::Error too.
            match b.bind(&ep).await {
                Err(Error::Io(e)) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EADDRINUSE), "{e}");
                    let back = std::io::Error::from(Error::Io(e));
                    assert_eq!(back.raw_os_error(), Some(libc::EADDRINUSE));
                }
                other => panic!("tcp port in use: {other:?}"),
            }
            let ipc = format!("ipc:///tmp/omq-api-{}.sock", unique("inuse"));
            a.bind(&ipc).await.unwrap();
            assert!(
                matches!(b.bind(&ipc).await, Err(Error::Io(_))),
                "ipc path in use"
            );
            assert!(matches!(
                s.unbind("tcp://127.0.0.1:1").await,
                Err(Error::NotInUse(_))
            ));
            // Not an endpoint at all is told apart from one not bound or not connected.
            assert!(matches!(
                s.unbind("nonsense").await,
                Err(Error::Endpoint(_))
            ));
            assert!(matches!(
                s.disconnect("nonsense").await,
                Err(Error::Endpoint(_))
            ));
            // `*` and port 0 are for binding: nothing can be dialled there.
            for ep in ["tcp://127.0.0.1:*", "tcp://*:5555", "tcp://localhost:0"] {
                assert!(
                    matches!(s.connect(ep).await, Err(Error::Endpoint(_))),
                    "{ep}"
                );
            }
            // An ipc path longer than a Unix socket address holds, both ways.
            let long = format!("ipc:///tmp/{}", "x".repeat(200));
            assert!(matches!(s.bind(&long).await, Err(Error::Endpoint(_))));
            assert!(matches!(s.connect(&long).await, Err(Error::Endpoint(_))));
        }
        Case::Monitor => {
            let server = new(SocketType::Pull, d());
            let mut events = server.monitor();
            let ep = server.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let client = new(SocketType::Push, d());
            client.connect(&ep).await.unwrap();
            let mut seen = Vec::new();
            while seen.len() < 3 {
                seen.push(within::<R, _>(events.next()).await.unwrap());
            }
            let kinds: Vec<EventKind> = seen.iter().map(|e| e.kind).collect();
            assert_eq!(
                kinds,
                [
                    EventKind::Listening,
                    EventKind::Accepted,
                    EventKind::HandshakeSucceeded
                ]
            );
            // The events about a connection say who the peer is, and why it left.
            let peer = seen[2]
                .peer
                .as_ref()
                .expect("HANDSHAKE_SUCCEEDED names the peer");
            assert_eq!(peer.socket_type, SocketType::Push);
            assert_eq!(peer.address.as_deref(), Some("127.0.0.1"));
            drop(client);
            let gone = within::<R, _>(events.next()).await.unwrap();
            assert_eq!(gone.kind, EventKind::Disconnected);
            assert_eq!(
                gone.peer.as_ref().map(|p| p.socket_type),
                Some(SocketType::Push)
            );
            assert_eq!(gone.cause, Some(omq_driver::CloseReason::Eof));
            // Dropping the last monitor stops monitoring: no queue grows for a reader that is
            // gone (a second stream keeps it on until it goes too).
            let second = server.monitor();
            drop(events);
            assert!(!server.debug_dump().contains("monitor=off"));
            drop(second);
            assert!(server.debug_dump().contains("monitor=off"));
            let again = new(SocketType::Push, d());
            again.connect(&ep).await.unwrap();
            again.send(Message::from("x")).await.unwrap();
            within::<R, _>(server.recv()).await.unwrap();
            assert!(server.debug_dump().contains("monitor=off"));
        }
        Case::StaleIpc => {
            let path = format!("/tmp/omq-api-{}.sock", unique("stale"));
            // A socket file left by a dead process: bound, then leaked without unlink.
            drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
            assert!(std::path::Path::new(&path).exists());
            let s = new(SocketType::Pull, d());
            let ep = format!("ipc://{path}");
            let gone = || async {
                while std::path::Path::new(&path).exists() {
                    R::sleep_until(R::now() + Duration::from_millis(5)).await;
                }
            };
            s.bind(&ep).await.unwrap();
            s.unbind(&ep).await.unwrap();
            // The listener task removes the file as it stops.
            within::<R, _>(gone()).await;
            // Closing the socket removes it too (libzmq 4.3 leaves it in place on close).
            s.bind(&ep).await.unwrap();
            assert!(std::path::Path::new(&path).exists());
            drop(s);
            within::<R, _>(gone()).await;
        }
        Case::LateBind => {
            let ep = format!("ipc:///tmp/omq-api-{}.sock", unique("late"));
            let push = new(
                SocketType::Push,
                d().reconnect_ivl(Some(Duration::from_millis(20))),
            );
            push.connect(&ep).await.unwrap();
            push.send(Message::from("queued before bind"))
                .await
                .unwrap();
            R::sleep_until(R::now() + Duration::from_millis(50)).await;
            let pull = new(SocketType::Pull, d());
            pull.bind(&ep).await.unwrap();
            assert_eq!(
                within::<R, _>(pull.recv()).await.unwrap(),
                Message::from("queued before bind")
            );
        }
        Case::PublisherFilters => {
            let publ = new(SocketType::Pub, d());
            let ep = publ.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            let addr: std::net::SocketAddr = ep.trim_start_matches("tcp://").parse().unwrap();
            let subs = [
                raw_subscriber(addr, b"A", false, 5),
                raw_subscriber(addr, b"A", true, 5),
            ];
            within::<R, _>(async {
                while !subs.iter().all(|t| t.is_finished()) {
                    publ.send(Message::from("B not for you")).await.unwrap();
                    publ.send(Message::from("A for you")).await.unwrap();
                    R::sleep_until(R::now() + Duration::from_millis(2)).await;
                }
            })
            .await;
            for (i, t) in subs.into_iter().enumerate() {
                let seen = t.join().unwrap().unwrap();
                assert!(
                    seen.iter().all(|b| b.starts_with(b"A")),
                    "subscriber {i} got an unsubscribed topic on the wire: {seen:?}"
                );
            }
        }
        Case::RebindAtOnce => {
            let a = new(SocketType::Pull, d());
            let ep = a.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
            a.unbind(&ep).await.unwrap();
            a.bind(&ep).await.expect("rebind after unbind");
            a.close().await.unwrap();
            let b = new(SocketType::Pull, d());
            b.bind(&ep).await.expect("bind after close");
            let path = format!("/tmp/omq-api-{}.sock", unique("rebind"));
            let ipc = format!("ipc://{path}");
            let c = new(SocketType::Pull, d());
            c.bind(&ipc).await.unwrap();
            c.close().await.unwrap();
            let e = new(SocketType::Pull, d());
            e.bind(&ipc).await.expect("ipc bind after close");
            R::sleep_until(R::now() + Duration::from_millis(100)).await;
            assert!(
                std::path::Path::new(&path).exists(),
                "the old listener removed the new socket's file"
            );
            let push = new(SocketType::Push, d());
            push.connect(&ipc).await.unwrap();
            push.send(Message::from("to the new one")).await.unwrap();
            assert_eq!(
                within::<R, _>(e.recv()).await.unwrap(),
                Message::from("to the new one")
            );
            drop(e);
            let _ = std::fs::remove_file(&path);
        }
        Case::NoDialAfterClose => {
            // Held, refusing dials, until the ROUTER binds it.
            let port = crate::ports::reserve_tcp_port();
            let ep = port.endpoint();
            let o = || {
                d().linger(Some(Duration::ZERO))
                    .reconnect_ivl(Some(Duration::from_millis(20)))
                    .routing_id(bytes::Bytes::from_static(b"ghost"))
            };
            let closed = new(SocketType::Dealer, o());
            closed.connect(&ep).await.unwrap();
            let dropped = new(SocketType::Dealer, o());
            dropped.connect(&ep).await.unwrap();
            R::sleep_until(R::now() + Duration::from_millis(100)).await;
            closed.close().await.unwrap();
            drop(dropped);
            R::sleep_until(R::now() + Duration::from_millis(50)).await;
            let router = new(SocketType::Router, d());
            let mut events = router.monitor();
            router.bind(&ep).await.unwrap();
            let ghost = within_for::<R, _>(Duration::from_millis(600), async {
                while let Some(e) = events.next().await {
                    if e.kind == EventKind::Accepted {
                        return e;
                    }
                }
                unreachable!("the monitor ends only with the socket")
            })
            .await;
            assert!(
                ghost.is_none(),
                "a closed socket connected later: {ghost:?}"
            );
        }
        Case::LastReplyThenDrop => {
            for transport in ["tcp://127.0.0.1:0", "ipc"] {
                let rep = new(SocketType::Rep, d());
                let ep = if transport == "ipc" {
                    format!("ipc:///tmp/omq-api-{}.sock", unique("last-reply"))
                } else {
                    transport.to_string()
                };
                let ep = rep.bind(&ep).await.unwrap().to_string();
                let req = new(SocketType::Req, d());
                req.connect(&ep).await.unwrap();
                const N: usize = 100;
                let server = async move {
                    for _ in 0..N {
                        let m = within::<R, _>(rep.recv()).await.unwrap();
                        rep.send(m).await.unwrap();
                    }
                    // Dropped at once, its last reply perhaps not yet written.
                };
                let client = async {
                    for i in 0..N {
                        req.send(Message::from(format!("{i}"))).await.unwrap();
                        let r = within::<R, _>(req.recv()).await;
                        assert_eq!(
                            r.as_ref().ok(),
                            Some(&Message::from(format!("{i}"))),
                            "{ep}: reply {i}"
                        );
                    }
                };
                futures_util::future::join(server, client).await;
            }
        }
        Case::CloseWaitsForALatePeer => {
            let ep = format!("ipc:///tmp/omq-api-{}.sock", unique("linger"));
            let push = new(
                SocketType::Push,
                d().reconnect_ivl(Some(Duration::from_millis(100))),
            );
            push.connect(&ep).await.unwrap();
            push.send(Message::from("flushed by close")).await.unwrap();
            let watcher = push.clone();
            let closing = push.close();
            let late_peer = async {
                R::sleep_until(R::now() + Duration::from_millis(500)).await;
                // Waiting half a second: a handful of looks (woken by redials and the safety
                // net), where a 1 ms poll made hundreds.
                let checks = close_checks(&watcher.debug_dump());
                assert!(checks <= 40, "close looked {checks} times in 500 ms");
                let pull = new(SocketType::Pull, d());
                pull.bind(&ep).await.unwrap();
                within::<R, _>(pull.recv()).await.unwrap()
            };
            let (closed, got) =
                within::<R, _>(futures_util::future::join(closing, late_peer)).await;
            closed.unwrap();
            assert_eq!(got, Message::from("flushed by close"));
        }
        Case::SubscribersDoNotLinger => {
            let ep = format!("ipc:///tmp/omq-api-{}.sock", unique("nolinger"));
            for t in [SocketType::Sub, SocketType::XSub] {
                let s = new(t, d().reconnect_ivl(Some(Duration::from_millis(100))));
                assert_eq!(s.options().get_linger(), Some(Duration::ZERO), "{t:?}");
                s.connect(&ep).await.unwrap();
                if t == SocketType::Sub {
                    s.subscribe("topic").unwrap();
                } else {
                    s.send(Message::from(&b"\x01topic"[..])).await.unwrap();
                    s.send(Message::from("a message upstream")).await.unwrap();
                }
                // At once: LINGER zero drops the XSUB's message and says so.
                let r = within::<R, _>(s.close()).await;
                assert!(
                    matches!(r, Ok(()) | Err(Error::LingerExpired)),
                    "{t:?}: {r:?}"
                );
            }
            // Set, LINGER is kept: the XSUB's message waits for the publisher, then goes.
            let x = new(
                SocketType::XSub,
                d().linger(None)
                    .reconnect_ivl(Some(Duration::from_millis(100))),
            );
            x.connect(&ep).await.unwrap();
            x.send(Message::from("kept by LINGER")).await.unwrap();
            let closing = x.close();
            let late_publisher = async {
                R::sleep_until(R::now() + Duration::from_millis(300)).await;
                let xpub = new(SocketType::XPub, d());
                xpub.bind(&ep).await.unwrap();
                within::<R, _>(xpub.recv()).await.unwrap()
            };
            let (closed, got) =
                within::<R, _>(futures_util::future::join(closing, late_publisher)).await;
            closed.unwrap();
            assert_eq!(got, Message::from("kept by LINGER"));
        }
    }
}

/// A raw subscriber of `topic` (ZMTP 3.0 form when `zmtp30`) on `addr`: reads until it has
/// seen `want` messages and returns every message body it saw.
fn raw_subscriber(
    addr: std::net::SocketAddr,
    topic: &'static [u8],
    zmtp30: bool,
    want: usize,
) -> std::thread::JoinHandle<Result<Vec<Vec<u8>>, String>> {
    std::thread::spawn(move || {
        use crate::hostile::raw::{RawPeer, COMMAND};
        let mut p = RawPeer::connect(addr).map_err(|e| e.to_string())?;
        p.handshake("SUB", &[], zmtp30).map_err(|e| e.to_string())?;
        p.subscribe(topic).map_err(|e| e.to_string())?;
        let mut seen = Vec::new();
        while seen
            .iter()
            .filter(|b: &&Vec<u8>| b.starts_with(topic))
            .count()
            < want
        {
            let f = p.read_frame().map_err(|e| format!("after {seen:?}: {e}"))?;
            if f.flags & COMMAND == 0 {
                seen.push(f.body);
            }
        }
        Ok(seen)
    })
}

/// The `close_checks=N` figure of a socket's debug dump.
fn close_checks(dump: &str) -> usize {
    dump.split_whitespace()
        .find_map(|w| w.strip_prefix("close_checks="))
        .and_then(|n| n.parse().ok())
        .expect("debug_dump shows close_checks")
}

/// Instantiates every API case for a backend.
#[macro_export]
macro_rules! api_suite {
    ($backend:ty) => {
        $crate::streams_suite!($backend);
        $crate::sockopts_suite!($backend);
        mod api {
            use $crate::api::{run_api, Case};
            $crate::api_suite!(@cases $backend;
                push_pull_over_tcp_and_ipc: PushPull,
                waiting_connections_are_accepted_at_once: AcceptWaitingAtOnce,
                a_burst_of_accepts_lets_other_tasks_run: AcceptBurstYields,
                a_write_with_room_completes_at_once: WriteWithRoomAtOnce,
                host_names_resolve: HostNames,
                many_senders_keep_their_order: ManySenders,
                req_rep_and_state_errors: ReqRep,
                pub_sub_with_prefixes: PubSub,
                timeouts_and_try_ops: Timeouts,
                bad_endpoints_and_options_are_clear_errors: BadInput,
                monitor_stream_reports_connection_events: Monitor,
                stale_ipc_file_is_replaced_and_ours_removed_on_unbind_and_close: StaleIpc,
                a_connecting_push_delivers_after_the_peer_binds_late: LateBind,
                close_waits_for_a_late_peer_without_polling: CloseWaitsForALatePeer,
                subscribers_close_at_once_unless_linger_is_set: SubscribersDoNotLinger,
                a_pub_filters_on_the_wire: PublisherFilters,
                a_closed_socket_never_connects_later: NoDialAfterClose,
                an_address_can_be_bound_again_at_once: RebindAtOnce,
                stream_sockets_speak_raw_tcp: StreamRawTcp,
                radio_and_dish_over_udp: RadioDishUdp,
                a_dropped_rep_still_sends_its_last_reply: LastReplyThenDrop
            );
        }
    };
    (@cases $backend:ty; $($name:ident : $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_api::<$backend>(Case::$case);
            }
        )*
    };
}
